package billing_test

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
)

// TestUpcomingInvoiceIsTheInvoiceTheRunCreates is a property test over
// random schedules (phases with CONTINUE and RESET, discounts folded and
// separate, nominal discounts, minimums, seats with ties, usage, proration,
// schedule ends, tax rates, both rounding modes, 0- and 2-digit
// currencies): for every schedule, the upcoming invoice at any moment is
// exactly the invoice the next run creates (lines and totals), and every
// invoice adds up (gross = net + tax per line and document; the document's
// totals are the sums of its lines). BILLING_PROPERTY_SEED replays a seed;
// BILLING_PROPERTY_CASES sets the number of schedules.
func TestUpcomingInvoiceIsTheInvoiceTheRunCreates(t *testing.T) {
	t.Parallel()
	seed := billingtest.Seed(t, "BILLING_PROPERTY_SEED")
	cases := billingtest.EnvCount(t, "BILLING_PROPERTY_CASES", 24, 1)
	compared := 0
	for i := range cases {
		r := rand.New(rand.NewPCG(seed, uint64(i)))
		mode := billing.RoundHalfUp
		if i%2 == 1 {
			mode = billing.RoundHalfEven
		}
		f := newSched(t, billingtest.WithConfig(billing.Config{Rounding: mode}))
		desc := randomSchedule(f, r)
		compared += checkUpcomingMatchesRun(t, f, desc, fmt.Sprintf("seed %d case %d (%s, %s)", seed, i, mode, desc.cur))
	}
	t.Logf("%d upcoming invoices compared with the invoices the runs created", compared)
	if compared < cases {
		t.Errorf("only %d invoices compared over %d schedules: the generator no longer makes billable schedules", compared, cases)
	}
}

// randomCase is a generated schedule.
type randomCase struct {
	id    string
	cur   billing.Currency
	start time.Time
}

// randomAmount returns an amount with up to 3 integer digits and up to
// fraction fraction digits.
func randomAmount(r *rand.Rand, fraction int) string {
	s := strconv.Itoa(r.IntN(1000))
	if n := r.IntN(fraction + 1); n > 0 {
		s += "." + fmt.Sprintf("%0*d", n, r.IntN(tenTo(n)))
	}
	return s
}

// positiveAmount is randomAmount above zero, for fields that refuse zero
// (a minimum's amount).
func positiveAmount(r *rand.Rand, fraction int) string {
	for {
		if a := randomAmount(r, fraction); strings.Trim(a, "0.") != "" {
			return a
		}
	}
}

func tenTo(n int) int {
	p := 1
	for range n {
		p *= 10
	}
	return p
}

// randomSchedule creates prices, usage, seats and an active schedule with
// random phases, discounts and minimums for a new customer of f.
//
// Long on purpose: the generator draws every part of a schedule in the
// order they depend on each other; a reader checks its ranges in one place.
func randomSchedule(f *sched, r *rand.Rand) randomCase {
	f.tb.Helper()
	cur := billing.CurrencyUSD
	if r.IntN(2) == 0 {
		cur = billing.CurrencyJPY
	}
	f.clock.Set(time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)) // usage events may not lie in the future
	customer := f.newCustomer(billing.TaxStatusTaxed)
	sm, err := f.svc.CreateSeatMetric(f.ctx, f.account, billing.CreateSeatMetricParams{SeatType: "seat", Label: "Seats"})
	f.must(err)
	freqs := []billing.BillingFrequency{billing.FrequencyMonthly, billing.FrequencyMonthly, billing.FrequencyQuarterly, billing.FrequencyOneTime}
	types := []billing.BillingType{billing.BillingTypeInAdvance, billing.BillingTypeInArrears}
	var pool []string
	for k := range 5 {
		name := fmt.Sprintf("P%d", k)
		switch r.IntN(5) {
		case 0, 1:
			pool = append(pool, f.price(name, cur, freqs[r.IntN(len(freqs))], types[r.IntN(2)],
				billing.PriceStructure{PricingType: billing.PricingFixed, Price: dp(randomAmount(r, 12))}))
		case 2:
			pool = append(pool, f.price(name, cur, billing.FrequencyMonthly, billing.BillingTypeInArrears,
				billing.PriceStructure{PricingType: billing.PricingLinear, PricePerUnit: dp(randomAmount(r, 4)), UsageMetricID: f.metric("call")}))
		case 3:
			pool = append(pool, f.price(name, cur, billing.FrequencyMonthly, billing.BillingTypeInArrears,
				billing.PriceStructure{PricingType: billing.PricingGraduated, UsageMetricID: f.metric("call"), Tiers: []billing.Tier{
					{UpperBound: dp("5"), Price: billing.MustDecimal(randomAmount(r, 3)), Fee: billing.MustDecimal(randomAmount(r, 2))},
					{Price: billing.MustDecimal(randomAmount(r, 3)), Fee: billing.MustDecimal("0")},
				}}))
		default:
			minSeats := int64(r.IntN(3))
			pool = append(pool, f.price(name, cur, billing.FrequencyMonthly, types[r.IntN(2)],
				billing.PriceStructure{PricingType: billing.PricingSeatBased, SeatMetricID: sm.ID, PricePerSeat: dp(randomAmount(r, 2)), ContractedMinimumSeats: &minSeats}))
		}
	}
	start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, r.IntN(40))
	// Usage and seats over the year, seats with ties (same timestamp).
	for range 1 + r.IntN(6) {
		f.events(customer, "call", start.Add(time.Duration(r.IntN(300*24))*time.Hour), 1+r.IntN(12))
	}
	for range r.IntN(6) {
		at := start.Add(time.Duration(r.IntN(200*24)-10*24) * time.Hour).Format(time.RFC3339)
		for range 1 + r.IntN(3) {
			f.seats(customer, "seat", at, int64(r.IntN(8)))
		}
	}
	pick := func() []string {
		var ids []string
		for _, id := range pool {
			if r.IntN(2) == 0 {
				ids = append(ids, id)
			}
		}
		if len(ids) == 0 {
			ids = pool[:1]
		}
		return ids
	}
	day := func(t time.Time) *billing.Date { return date(t.Format(time.DateOnly)) }
	ph1 := billing.PhaseParams{StartDate: day(start), PriceIDs: pick()}
	phases := []billing.PhaseParams{ph1}
	if r.IntN(2) == 0 {
		second := start.AddDate(0, 0, 45+r.IntN(60))
		phases[0].EndDate = day(second.AddDate(0, 0, -1))
		ph2 := billing.PhaseParams{StartDate: day(second), PriceIDs: pick()}
		if r.IntN(2) == 0 {
			ph2.RecurrencePreference = billing.RecurrenceReset
		}
		phases = append(phases, ph2)
	}
	for i := range phases {
		ph := &phases[i]
		for range r.IntN(3) {
			d := billing.DiscountParams{Type: billing.DiscountPercentage, Amount: num(randomAmount(r, 2)), SeparateLineItem: r.IntN(2) == 0, Message: "Discount"}
			if d.Amount.Cmp(billing.DecimalFromInt(100)) > 0 {
				d.Amount = num("12.5")
			}
			if r.IntN(3) == 0 {
				d = billing.DiscountParams{Type: billing.DiscountNominal, Amount: num(randomAmount(r, 2)), Message: "Credit"}
			}
			if r.IntN(2) == 0 {
				d.RestrictToPrices = ph.PriceIDs[:1]
			}
			ph.Discounts = append(ph.Discounts, d)
		}
		if r.IntN(3) == 0 {
			ph.Minimums = []billing.MinimumParams{{Amount: num(positiveAmount(r, 2))}}
		}
	}
	tr, err := f.svc.CreateTaxRate(f.ctx, f.account, billing.CreateTaxRateParams{Name: "VAT", Amount: dp([]string{"0.2", "0.075", "0.19"}[r.IntN(3)])})
	f.must(err)
	sc := f.schedule(customer, start.Format(time.DateOnly), func(p *billing.BillingScheduleParams) {
		if r.IntN(2) == 0 {
			p.EndDate = day(start.AddDate(0, 0, 120+r.IntN(150)))
		}
		if r.IntN(2) == 0 {
			anchor := 1 + r.IntN(31)
			p.RecurrenceDayOfMonth = &anchor
		}
		used := map[string]bool{}
		for _, ph := range phases {
			for _, id := range ph.PriceIDs {
				used[id] = true
			}
		}
		for _, id := range pool {
			if used[id] && r.IntN(2) == 0 {
				p.TaxRates = append(p.TaxRates, billing.ScheduleTaxRate{PriceID: id, TaxRateID: tr.ID})
			}
		}
	}, phases...)
	return randomCase{id: sc.ID, cur: cur, start: start}
}

// checkUpcomingMatchesRun walks a year: at each step it takes the upcoming
// invoice, runs the engine once its billing date is due, and compares it
// with the first invoice that run created.
func checkUpcomingMatchesRun(t *testing.T, f *sched, c randomCase, name string) int {
	t.Helper()
	asOf := c.start.Add(-48 * time.Hour)
	end := c.start.AddDate(1, 0, 0)
	seen := 0
	for asOf.Before(end) {
		up, err := f.svc.PreviewInvoice(f.ctx, f.account, c.id, asOf)
		if billing.CodeOf(err) == billing.CodeNotFound {
			return seen
		}
		if err != nil {
			t.Fatalf("%s: preview at %s: %v", name, asOf, err)
		}
		checkAddsUp(t, name+" preview", up.Invoice, up.LineItems)
		due := up.BillingDate.Time().Add(2 * time.Hour)
		if due.After(asOf) {
			asOf = due
		}
		run, err := f.svc.RunBilling(f.ctx, asOf)
		if err != nil || len(run.Failures) > 0 {
			t.Fatalf("%s: run at %s: %v %+v", name, asOf, err, run)
		}
		if len(run.InvoiceIDs) == 0 {
			t.Fatalf("%s: upcoming invoice of %s, but the run at %s created none", name, up.BillingDate, asOf)
		}
		inv, err := f.svc.GetInvoice(f.ctx, f.account, run.InvoiceIDs[0])
		f.must(err)
		lines, err := f.svc.ListInvoiceLineItems(f.ctx, f.account, inv.ID, billing.LineItemFilter{}, billing.ListParams{Limit: 100})
		f.must(err)
		checkAddsUp(t, name+" invoice", inv, lines.Items)
		if got, want := renderInvoice(inv, lines.Items), renderInvoice(up.Invoice, up.LineItems); got != want {
			t.Fatalf("%s: billing date %s: the run created\n%s\nthe upcoming invoice was\n%s", name, up.BillingDate, got, want)
		}
		seen++
		asOf = asOf.Add(time.Duration(1+int(asOf.Unix()%5)) * 24 * time.Hour)
	}
	return seen
}

// renderInvoice renders what the preview and the run must agree on.
func renderInvoice(inv *billing.Invoice, lines []billing.InvoiceLineItem) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s net %s tax %s gross %s period %v\n", inv.Currency, inv.CustomerID, inv.NetTotal, inv.TotalTax, inv.GrossTotal, inv.BillingPeriod)
	for _, l := range lines {
		fmt.Fprintf(&b, "  %d %s|%s|%s|%s|%s|%s|%s|%s|%s|%v|%s\n", l.Index, l.Title, l.Description, l.Quantity, l.Rate, l.TaxRate,
			l.NetTotal, l.TotalTax, l.GrossTotal, l.PriceID, l.ServicePeriod, l.RateDisplay)
	}
	return b.String()
}

// checkAddsUp checks gross = net + tax per line and for the document, and
// that the document's totals are the sums of its lines.
func checkAddsUp(t *testing.T, name string, inv *billing.Invoice, lines []billing.InvoiceLineItem) {
	t.Helper()
	net, tax, gross := inv.Currency.Zero(), inv.Currency.Zero(), inv.Currency.Zero()
	for _, l := range lines {
		if l.NetTotal.Add(l.TotalTax).Cmp(l.GrossTotal) != 0 {
			t.Errorf("%s: line %s: %s + %s != %s", name, l.Title, l.NetTotal, l.TotalTax, l.GrossTotal)
		}
		net, tax, gross = net.Add(l.NetTotal), tax.Add(l.TotalTax), gross.Add(l.GrossTotal)
	}
	if net.Cmp(inv.NetTotal) != 0 || tax.Cmp(inv.TotalTax) != 0 || gross.Cmp(inv.GrossTotal) != 0 ||
		inv.NetTotal.Add(inv.TotalTax).Cmp(inv.GrossTotal) != 0 {
		t.Errorf("%s: totals %s/%s/%s, lines sum to %s/%s/%s", name, inv.NetTotal, inv.TotalTax, inv.GrossTotal, net, tax, gross)
	}
}
