package billing_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
)

// TestProgressiveInvoicesAddUpToTheSingleInvoice is the oracle of
// progressive billing: two customers with the same usage have the same
// random schedule (LINEAR, GRADUATED, VOLUME and PACKAGE prices on usage,
// tax rates, discounts folded, separate and nominal, minimums, both
// rounding modes, a 2- and a 0-digit currency), one with a random
// thresholdAmount. Usage arrives over three months, late events included,
// the engine runs every few days, and some interim invoices are voided
// before their period ends. For every period, the live invoices of the
// progressive schedule (interim and final) add up to the one invoice of
// the other schedule, net, tax and gross, to the last digit. It runs on
// the store billingtest picks (PostgreSQL with BILLINGD_TEST_POSTGRES) and
// on bbolt. BILLING_PROPERTY_SEED replays a seed; BILLING_PROPERTY_CASES
// sets the number of schedules.
func TestProgressiveInvoicesAddUpToTheSingleInvoice(t *testing.T) {
	t.Parallel()
	seed := billingtest.Seed(t, "BILLING_PROPERTY_SEED")
	cases := billingtest.EnvCount(t, "BILLING_PROPERTY_CASES", 8, 1)
	interims := 0
	for i := range cases {
		r := rand.New(rand.NewPCG(seed, uint64(i)))
		opts := []billingtest.Option{billingtest.WithConfig(billing.Config{Rounding: []billing.Rounding{billing.RoundHalfUp, billing.RoundHalfEven}[i%2]})}
		if i%3 == 2 {
			opts = append(opts, billingtest.WithBolt())
		}
		f := newSched(t, opts...)
		interims += checkProgressiveAddsUp(t, f, r, fmt.Sprintf("seed %d case %d", seed, i))
	}
	t.Logf("%d interim invoices over %d schedules", interims, cases)
	if interims < cases {
		t.Errorf("only %d interim invoices over %d schedules: the generator no longer crosses thresholds", interims, cases)
	}
}

// randomUsagePrices creates 1-3 monthly in-arrears prices on the usage of
// metric in cur, with random structures.
func randomUsagePrices(f *sched, r *rand.Rand, cur billing.Currency, metric string) []string {
	var ids []string
	for k := range 1 + r.IntN(3) {
		st := billing.PriceStructure{UsageMetricID: metric}
		switch r.IntN(4) {
		case 0:
			st.PricingType, st.PricePerUnit = billing.PricingLinear, dp(positiveAmount(r, 4))
		case 1, 2:
			st.PricingType = billing.PricingGraduated
			st.Tiers = []billing.Tier{
				{UpperBound: dp(fmt.Sprint(5 + r.IntN(30))), Price: billing.MustDecimal(randomAmount(r, 3)), Fee: billing.MustDecimal(randomAmount(r, 2))},
				{Price: billing.MustDecimal(randomAmount(r, 3)), Fee: billing.MustDecimal("0")},
			}
		default:
			st.PricingType, st.PackageSize, st.PricePerPackage = billing.PricingPackage, dp(fmt.Sprint(1+r.IntN(10))), dp(positiveAmount(r, 2))
		}
		ids = append(ids, f.price(fmt.Sprintf("U%d", k), cur, billing.FrequencyMonthly, billing.BillingTypeInArrears, st))
	}
	return ids
}

// randomAdjustments returns random discounts and minimums of a phase of
// prices ids.
func randomAdjustments(r *rand.Rand, ids []string) ([]billing.DiscountParams, []billing.MinimumParams) {
	var ds []billing.DiscountParams
	for range r.IntN(3) {
		d := billing.DiscountParams{Type: billing.DiscountPercentage, Amount: num(fmt.Sprint(r.IntN(60))), SeparateLineItem: r.IntN(2) == 0, Message: "Discount"}
		if r.IntN(3) == 0 {
			d = billing.DiscountParams{Type: billing.DiscountNominal, Amount: num(randomAmount(r, 2)), Message: "Credit"}
		}
		if r.IntN(2) == 0 {
			d.RestrictToPrices = ids[:1]
		}
		ds = append(ds, d)
	}
	var ms []billing.MinimumParams
	if r.IntN(3) == 0 {
		ms = []billing.MinimumParams{{Amount: num(positiveAmount(r, 2))}}
	}
	return ds, ms
}

// checkProgressiveAddsUp runs one random case and returns how many interim
// invoices it made.
//
// Long on purpose: the case is generated, played and checked in one
// place, so a failure's seed reads as one story.
func checkProgressiveAddsUp(t *testing.T, f *sched, r *rand.Rand, name string) int {
	t.Helper()
	cur := []billing.Currency{billing.CurrencyUSD, billing.CurrencyJPY}[r.IntN(2)]
	f.clock.Set(time.Date(2024, 6, 1, 0, 0, 0, 0, time.UTC))
	metric := f.metric("call")
	ids := randomUsagePrices(f, r, cur, metric)
	ds, ms := randomAdjustments(r, ids)
	var taxRates []billing.ScheduleTaxRate
	for _, id := range ids {
		if r.IntN(3) > 0 {
			tr, err := f.svc.CreateTaxRate(f.ctx, f.account, billing.CreateTaxRateParams{Name: "VAT", Amount: dp([]string{"0.2", "0.075", "0.19", "0.155"}[r.IntN(4)])})
			f.must(err)
			taxRates = append(taxRates, billing.ScheduleTaxRate{PriceID: id, TaxRateID: tr.ID})
		}
	}
	threshold := positiveAmount(r, int(cur.MinorUnits()))
	if cur == billing.CurrencyJPY {
		threshold = fmt.Sprint(1 + r.IntN(3000))
	}
	autoIssue := r.IntN(3) == 0
	customers := []string{f.newCustomer(billing.TaxStatusTaxed), f.newCustomer(billing.TaxStatusTaxed)}
	var schedules []string
	for k, c := range customers {
		ph := billing.PhaseParams{StartDate: date("2024-01-01"), PriceIDs: ids, Discounts: ds, Minimums: ms}
		sc := f.schedule(c, "2024-01-01", func(p *billing.BillingScheduleParams) {
			p.EndDate, p.TaxRates, p.AutoIssueInvoices = date("2024-03-31"), taxRates, &autoIssue
			if k == 0 {
				p.ThresholdAmount = dp(threshold)
			}
		}, ph)
		schedules = append(schedules, sc.ID)
	}
	start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	// Events over the three months, sent in random batches by time; some
	// arrive late (a timestamp days before the moment they are sent).
	type event struct{ at, sent time.Time }
	var events []event
	for range 10 + r.IntN(30) {
		at := start.Add(time.Duration(r.IntN(90*24)) * time.Hour)
		sent := at
		if r.IntN(4) == 0 {
			sent = at.Add(time.Duration(r.IntN(5*24)) * time.Hour)
		}
		events = append(events, event{at, sent})
	}
	slices.SortFunc(events, func(a, b event) int { return a.sent.Compare(b.sent) })
	interims := map[string]bool{}
	for asOf := start.Add(time.Duration(r.IntN(72)) * time.Hour); asOf.Before(start.AddDate(0, 3, 3)); asOf = asOf.Add(time.Duration(12+r.IntN(5*24)) * time.Hour) {
		for len(events) > 0 && !events[0].sent.After(asOf) {
			n := 1 + r.IntN(20)
			for _, c := range customers {
				f.events(c, "call", events[0].at, n)
			}
			events = events[1:]
		}
		run, err := f.svc.RunBilling(f.ctx, asOf)
		if err != nil || len(run.Failures) > 0 {
			t.Fatalf("%s: run at %s: %v %+v", name, asOf, err, run.Failures)
		}
		invs, _ := f.invoices(schedules[0])
		for _, inv := range invs {
			periodEnd := inv.BillingPeriod.EndInclusive.AddDays(1).Time()
			if inv.Status == billing.StatusVoided || interims[inv.ID] || !asOf.Before(periodEnd) {
				continue
			}
			interims[inv.ID] = true // issued before its period ended: an interim invoice
			if r.IntN(4) == 0 {
				_, err := f.svc.VoidInvoice(f.ctx, f.account, inv.ID)
				f.must(err)
			}
		}
	}
	if run, err := f.svc.RunBilling(f.ctx, start.AddDate(0, 3, 5)); err != nil || len(run.Failures) > 0 {
		t.Fatalf("%s: last run: %v %+v", name, err, run.Failures)
	}
	sums := make([]map[string]string, 2)
	for k, id := range schedules {
		invs, _ := f.invoices(id)
		totals := map[string][3]billing.Decimal{}
		for _, inv := range invs {
			if inv.Status == billing.StatusVoided {
				continue
			}
			p := inv.BillingPeriod.Start.String()
			s, ok := totals[p]
			if !ok {
				s = [3]billing.Decimal{cur.Zero(), cur.Zero(), cur.Zero()}
			}
			totals[p] = [3]billing.Decimal{s[0].Add(inv.NetTotal), s[1].Add(inv.TotalTax), s[2].Add(inv.GrossTotal)}
		}
		sums[k] = map[string]string{}
		for p, s := range totals {
			sums[k][p] = fmt.Sprintf("net %s tax %s gross %s", s[0], s[1], s[2])
		}
	}
	for p, want := range sums[1] {
		if got := sums[0][p]; got != want {
			t.Errorf("%s (%s, threshold %s): period %s: the progressive invoices add up to %q, the single invoice is %q", name, cur, threshold, p, got, want)
		}
	}
	for p, got := range sums[0] {
		if _, ok := sums[1][p]; !ok {
			t.Errorf("%s: period %s: the progressive invoices add up to %q, and there is no single invoice", name, p, got)
		}
	}
	// A month without usage may have no invoice (10 events over three
	// months leave one empty about once in 70 cases).
	if len(sums[1]) < 2 {
		t.Errorf("%s: %d periods invoiced, want at least 2", name, len(sums[1]))
	}
	return len(interims)
}
