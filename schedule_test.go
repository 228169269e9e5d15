package billing_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
)

// sched is a test fixture: a Service with one account and one customer.
type sched struct {
	tb       testing.TB
	ctx      context.Context
	svc      *billing.Service
	clock    *billingtest.Clock
	account  string
	customer string
	product  string
	metrics  map[string]string // event type → COUNT metric id
}

func newSched(tb testing.TB, opts ...billingtest.Option) *sched {
	tb.Helper()
	svc, clock := billingtest.NewService(tb, opts...)
	f := &sched{tb: tb, ctx: context.Background(), svc: svc, clock: clock}
	f.account = billingtest.Account(tb, svc, "acme")
	f.customer = f.newCustomer(billing.TaxStatusTaxed)
	p, err := svc.CreateProduct(f.ctx, f.account, billing.CreateProductParams{Name: "Platform"})
	f.must(err)
	f.product = p.ID
	return f
}

func (f *sched) must(err error) {
	f.tb.Helper()
	if err != nil {
		f.tb.Fatal(err)
	}
}

func (f *sched) newCustomer(status billing.TaxStatus) string {
	f.tb.Helper()
	c, err := f.svc.CreateCustomer(f.ctx, f.account, billing.CustomerParams{LegalName: "Customer " + string(status), TaxStatus: status,
		Contacts: []billing.Contact{{Name: "Ann", Email: "ann@example.com", BillingPreference: billing.BillingPreferencePrimary}}})
	f.must(err)
	return c.ID
}

func dp(s string) *billing.Decimal { d := billing.MustDecimal(s); return &d }

func date(s string) *billing.Date {
	d, err := billing.ParseDate(s)
	if err != nil {
		panic(err)
	}
	return &d
}

func ts(s string) time.Time {
	t, err := billing.ParseTimestamp(s)
	if err != nil {
		panic(err)
	}
	return t
}

// price creates a price of the fixture's product.
func (f *sched) price(name string, cur billing.Currency, freq billing.BillingFrequency, typ billing.BillingType, st billing.PriceStructure) string {
	f.tb.Helper()
	p, err := f.svc.CreatePrice(f.ctx, f.account, billing.CreatePriceParams{
		ProductID: f.product, Name: name, Currency: cur, Structure: st, BillingFrequency: freq, BillingType: typ,
	})
	f.must(err)
	return p.ID
}

// seatMetric creates a seat metric for seat type typ and returns its id.
func (f *sched) seatMetric(typ string) string {
	f.tb.Helper()
	sm, err := f.svc.CreateSeatMetric(f.ctx, f.account, billing.CreateSeatMetricParams{SeatType: typ, Label: typ + "s"})
	f.must(err)
	return sm.ID
}

// seatPrice is a monthly USD price of 10.00 a seat of the seat metric sm,
// billed as typ.
func (f *sched) seatPrice(name, sm string, typ billing.BillingType) string {
	f.tb.Helper()
	return f.price(name, billing.CurrencyUSD, billing.FrequencyMonthly, typ,
		billing.PriceStructure{PricingType: billing.PricingSeatBased, SeatMetricID: sm, PricePerSeat: dp("10.00")})
}

// runOnce runs billing at the clock's time and returns the one invoice the
// run created or changed, failing tb when there is not exactly one.
func (f *sched) runOnce(tb testing.TB) string {
	tb.Helper()
	run, err := f.svc.RunBilling(f.ctx, f.clock.Now())
	if err != nil || len(run.InvoiceIDs) != 1 {
		tb.Fatalf("run %+v: %v", run, err)
	}
	return run.InvoiceIDs[0]
}

func (f *sched) fixed(name, amount string, cur billing.Currency) string {
	return f.price(name, cur, billing.FrequencyMonthly, billing.BillingTypeInAdvance,
		billing.PriceStructure{PricingType: billing.PricingFixed, Price: dp(amount)})
}

// apiCalls is a monthly USD price "API calls", billed in arrears, of rate
// per api_call event.
func (f *sched) apiCalls(rate string) string {
	f.tb.Helper()
	return f.price("API calls", billing.CurrencyUSD, billing.FrequencyMonthly, billing.BillingTypeInArrears,
		billing.PriceStructure{PricingType: billing.PricingLinear, PricePerUnit: dp(rate), UsageMetricID: f.metric("api_call")})
}

// metric returns the COUNT metric of event type typ, created on first use.
func (f *sched) metric(typ string) string {
	f.tb.Helper()
	if id, ok := f.metrics[typ]; ok {
		return id
	}
	m, err := f.svc.CreateUsageMetric(f.ctx, f.account, billing.CreateUsageMetricParams{UsageMetricParams: billing.UsageMetricParams{
		Name: "metric " + typ, MetricType: billing.MetricTypeSimple, EventType: typ, AggregationType: billing.AggregationCount,
	}})
	f.must(err)
	if f.metrics == nil {
		f.metrics = map[string]string{}
	}
	f.metrics[typ] = m.ID
	return m.ID
}

// events records n events of typ for customer at at.
func (f *sched) events(customer, typ string, at time.Time, n int) {
	f.tb.Helper()
	for done := 0; done < n; {
		var batch billing.UsageEventBatchParams
		for ; done < n && len(batch.Events) < 1000; done++ {
			t := at.Add(time.Duration(done) * time.Second)
			batch.Events = append(batch.Events, billing.UsageEventParams{CustomerAlias: customer, EventType: typ, EventTimestamp: &t})
		}
		_, err := f.svc.CreateUsageEventBatch(f.ctx, f.account, batch)
		f.must(err)
	}
}

func (f *sched) seats(customer, seatType, at string, total int64) {
	f.tb.Helper()
	_, err := f.svc.CreateSeatEvent(f.ctx, f.account, billing.CreateSeatEventParams{
		CustomerAlias: customer, SeatType: seatType, EventTimestamp: ts(at), Total: &total})
	f.must(err)
}

// schedule creates an active schedule for customer from start with phases.
func (f *sched) schedule(customer, start string, mod func(*billing.BillingScheduleParams), phases ...billing.PhaseParams) *billing.BillingSchedule {
	f.tb.Helper()
	no := false
	p := billing.BillingScheduleParams{CustomerID: customer, StartDate: date(start), AutoIssueInvoices: &no, Phases: phases, IsDraft: &no}
	if mod != nil {
		mod(&p)
	}
	sc, err := f.svc.CreateBillingSchedule(f.ctx, f.account, p)
	f.must(err)
	return sc
}

func phase(start string, prices ...string) billing.PhaseParams {
	return billing.PhaseParams{StartDate: date(start), PriceIDs: prices}
}

// renderDue renders the invoices due at asOf, one per line:
// "date: title|quantity|rate|taxRate|net|servicePeriod; ...".
func (f *sched) renderDue(id, asOf string) string {
	f.tb.Helper()
	due, err := f.svc.DueInvoices(f.ctx, f.account, id, ts(asOf))
	f.must(err)
	var b strings.Builder
	for _, inv := range due {
		fmt.Fprintf(&b, "%s:", inv.BillingDate)
		for _, l := range inv.Lines {
			net := inv.Params.Currency.Round(l.Quantity.Mul(l.Rate), billing.RoundHalfUp)
			fmt.Fprintf(&b, " %s|%s|%s|%s|%s|%s..%s;", l.Title, l.Quantity, l.Rate, l.TaxRate, net,
				l.ServicePeriod.StartDate, l.ServicePeriod.EndDate)
		}
		b.WriteString("\n")
	}
	return b.String()
}

func wantLines(t *testing.T, got string, want ...string) {
	t.Helper()
	w := ""
	if len(want) > 0 {
		w = strings.Join(want, "\n") + "\n"
	}
	if got != w {
		t.Errorf("invoices\n got:\n%s\nwant:\n%s", got, w)
	}
}

// Long on purpose: short subtests of one rule group that share the group's set-up.
func TestScheduleLines(t *testing.T) {
	t.Parallel()
	parallelOn(t, "MonthlyFixedInAdvanceOverAYear", newSched, func(t *testing.T, f *sched) {
		sc := f.schedule(f.customer, "2024-01-01", nil, phase("2024-01-01", f.fixed("Plan", "100.00", billing.CurrencyUSD)))
		var want []string
		for m := 1; m <= 12; m++ {
			start := time.Date(2024, time.Month(m), 1, 0, 0, 0, 0, time.UTC)
			end := start.AddDate(0, 1, -1)
			want = append(want, fmt.Sprintf("%s: Plan|1|100.00|0|100.00|%s..%s;", start.Format(time.DateOnly), start.Format(time.DateOnly), end.Format(time.DateOnly)))
		}
		wantLines(t, f.renderDue(sc.ID, "2024-12-31T23:00:00Z"), want...)
		if sc.FirstBillingDate == nil || sc.FirstBillingDate.String() != "2024-01-01" {
			t.Errorf("firstBillingDate = %v", sc.FirstBillingDate)
		}
	})
	parallelOn(t, "MidMonthStartIsProrated", newSched, func(t *testing.T, f *sched) {
		one := 1
		sc := f.schedule(f.customer, "2024-01-15", func(p *billing.BillingScheduleParams) { p.RecurrenceDayOfMonth = &one },
			phase("2024-01-15", f.fixed("Plan", "100.00", billing.CurrencyUSD)))
		wantLines(t, f.renderDue(sc.ID, "2024-02-01T00:00:00Z"),
			"2024-01-15: Plan|0.548387096774|100.00|0|54.84|2024-01-15..2024-01-31;",
			"2024-02-01: Plan|1|100.00|0|100.00|2024-02-01..2024-02-29;")
	})
	parallelOn(t, "LinearUsageInArrearsAfterGrace", newSched, func(t *testing.T, f *sched) {
		pr := f.apiCalls("0.25")
		f.events(f.customer, "api_call", ts("2024-01-31T23:59:00Z"), 7)
		f.events(f.customer, "api_call", ts("2024-02-01T00:00:00Z"), 3) // February's
		sc := f.schedule(f.customer, "2024-01-01", nil, phase("2024-01-01", pr))
		wantLines(t, f.renderDue(sc.ID, "2024-02-01T00:59:59Z"))
		wantLines(t, f.renderDue(sc.ID, "2024-02-01T01:00:00Z"), "2024-02-01: API calls|7|0.25|0|1.75|2024-01-01..2024-01-31;")
	})
	parallelOn(t, "GraduatedWithFeesAcrossTiers", newSched, func(t *testing.T, f *sched) {
		pr := f.price("Calls", billing.CurrencyUSD, billing.FrequencyMonthly, billing.BillingTypeInArrears,
			billing.PriceStructure{PricingType: billing.PricingGraduated, UsageMetricID: f.metric("call"), Tiers: []billing.Tier{
				{UpperBound: dp("10"), Price: billing.MustDecimal("1.00"), Fee: billing.MustDecimal("5.00")},
				{UpperBound: dp("100"), Price: billing.MustDecimal("0.50"), Fee: billing.MustDecimal("0")},
				{Price: billing.MustDecimal("0.10"), Fee: billing.MustDecimal("2.00")},
			}})
		f.events(f.customer, "call", ts("2024-01-10T00:00:00Z"), 150)
		sc := f.schedule(f.customer, "2024-01-01", nil, phase("2024-01-01", pr))
		wantLines(t, f.renderDue(sc.ID, "2024-02-02T00:00:00Z"),
			"2024-02-01: Calls (tier 1)|10|1.00|0|10.00|2024-01-01..2024-01-31; Calls (tier 1 fee)|1|5.00|0|5.00|2024-01-01..2024-01-31;"+
				" Calls (tier 2)|90|0.50|0|45.00|2024-01-01..2024-01-31; Calls (tier 3)|50|0.10|0|5.00|2024-01-01..2024-01-31;"+
				" Calls (tier 3 fee)|1|2.00|0|2.00|2024-01-01..2024-01-31;")
	})
	parallelOn(t, "SeatBasedWithMidPeriodChanges", newSched, func(t *testing.T, f *sched) {
		sm := f.seatMetric("editor")
		arrears := f.seatPrice("Seats IN_ARREARS", sm, billing.BillingTypeInArrears)
		advance := f.seatPrice("Seats IN_ADVANCE", sm, billing.BillingTypeInAdvance)
		f.seats(f.customer, "editor", "2023-12-20T00:00:00Z", 3)
		f.seats(f.customer, "editor", "2024-01-15T00:00:00Z", 5)
		f.seats(f.customer, "editor", "2024-01-20T00:00:00Z", 2)
		one := 1
		sc := f.schedule(f.customer, "2024-01-15", func(p *billing.BillingScheduleParams) { p.RecurrenceDayOfMonth = &one },
			phase("2024-01-15", arrears, advance))
		wantLines(t, f.renderDue(sc.ID, "2024-02-01T01:00:00Z"),
			"2024-01-15: Seats IN_ADVANCE|2.741935483870|10.00|0|27.42|2024-01-15..2024-01-31;",
			"2024-02-01: Seats IN_ARREARS|2.741935483870|10.00|0|27.42|2024-01-15..2024-01-31; Seats IN_ADVANCE|2|10.00|0|20.00|2024-02-01..2024-02-29;")
	})
	// A second phase from 15 February either continues the periods of the
	// first (CONTINUE, the default) or starts its own on its start date (RESET).
	for _, tc := range []struct {
		name string
		pref billing.RecurrencePreference
		due  string
		want []string
	}{
		{"PhaseChangeContinue", "", "2024-03-01T00:00:00Z", []string{
			"2024-01-01: A|1|100.00|0|100.00|2024-01-01..2024-01-31;",
			"2024-02-01: A|0.48275862069|100.00|0|48.28|2024-02-01..2024-02-14;",
			"2024-02-15: B|0.51724137931|200.00|0|103.45|2024-02-15..2024-02-29;",
			"2024-03-01: B|1|200.00|0|200.00|2024-03-01..2024-03-31;"}},
		{"PhaseChangeReset", billing.RecurrenceReset, "2024-03-15T00:00:00Z", []string{
			"2024-01-01: A|1|100.00|0|100.00|2024-01-01..2024-01-31;",
			"2024-02-01: A|0.48275862069|100.00|0|48.28|2024-02-01..2024-02-14;",
			"2024-02-15: B|1|200.00|0|200.00|2024-02-15..2024-03-14;",
			"2024-03-15: B|1|200.00|0|200.00|2024-03-15..2024-04-14;"}},
	} {
		parallelOn(t, tc.name, newSched, func(t *testing.T, f *sched) {
			a, b := f.fixed("A", "100.00", billing.CurrencyUSD), f.fixed("B", "200.00", billing.CurrencyUSD)
			p1 := phase("2024-01-01", a)
			p1.EndDate = date("2024-02-14")
			p2 := phase("2024-02-15", b)
			p2.RecurrencePreference = tc.pref
			sc := f.schedule(f.customer, "2024-01-01", nil, p1, p2)
			wantLines(t, f.renderDue(sc.ID, tc.due), tc.want...)
		})
	}
	parallelOn(t, "PercentageDiscountSeparateAndFolded", newSched, func(t *testing.T, f *sched) {
		a, b := f.fixed("A", "200.00", billing.CurrencyUSD), f.fixed("B", "99.99", billing.CurrencyUSD)
		ph := phase("2024-01-01", a, b)
		ph.Discounts = []billing.DiscountParams{
			{Type: billing.DiscountPercentage, Amount: num("15"), Message: "Launch offer", SeparateLineItem: true, RestrictToPrices: []string{a}},
			{Type: billing.DiscountPercentage, Amount: num("10"), Message: "Folded", RestrictToPrices: []string{b}},
		}
		sc := f.schedule(f.customer, "2024-01-01", nil, ph)
		wantLines(t, f.renderDue(sc.ID, "2024-01-01T00:00:00Z"),
			"2024-01-01: A|1|200.00|0|200.00|2024-01-01..2024-01-31; B|1|89.991|0|89.99|2024-01-01..2024-01-31; Launch offer|1|-30.00|0|-30.00|2024-01-01..2024-01-31;")
	})
	parallelOn(t, "NominalDiscountAndMinimumTopUp", newSched, func(t *testing.T, f *sched) {
		usage := f.apiCalls("0.25")
		f.events(f.customer, "api_call", ts("2024-01-05T00:00:00Z"), 7)
		ph := phase("2024-01-01", usage)
		ph.Discounts = []billing.DiscountParams{{Type: billing.DiscountNominal, Amount: num("0.75"), Message: "Credit"}}
		ph.Minimums = []billing.MinimumParams{{Amount: num("10"), RestrictToPrices: []string{usage}}}
		sc := f.schedule(f.customer, "2024-01-01", nil, ph)
		wantLines(t, f.renderDue(sc.ID, "2024-02-01T01:00:00Z"),
			"2024-02-01: API calls|7|0.25|0|1.75|2024-01-01..2024-01-31; Credit|1|-0.75|0|-0.75|2024-01-01..2024-01-31;"+
				" Minimum commitment|1|9.00|0|9.00|2024-01-01..2024-01-31;")
	})
	parallelOn(t, "TaxMappingAndExemptCustomer", newSched, func(t *testing.T, f *sched) {
		a, b := f.fixed("A", "100.00", billing.CurrencyUSD), f.fixed("B", "50.00", billing.CurrencyUSD)
		tr, err := f.svc.CreateTaxRate(f.ctx, f.account, billing.CreateTaxRateParams{Name: "VAT", Amount: dp("0.2")})
		f.must(err)
		mapTax := func(p *billing.BillingScheduleParams) {
			p.TaxRates = []billing.ScheduleTaxRate{{PriceID: a, TaxRateID: tr.ID}}
		}
		taxed := f.schedule(f.customer, "2024-01-01", mapTax, phase("2024-01-01", a, b))
		wantLines(t, f.renderDue(taxed.ID, "2024-01-01T00:00:00Z"),
			"2024-01-01: A|1|100.00|0.2|100.00|2024-01-01..2024-01-31; B|1|50.00|0|50.00|2024-01-01..2024-01-31;")
		exempt := f.schedule(f.newCustomer(billing.TaxStatusTaxExempt), "2024-01-01", mapTax, phase("2024-01-01", a, b))
		wantLines(t, f.renderDue(exempt.ID, "2024-01-01T00:00:00Z"),
			"2024-01-01: A|1|100.00|0|100.00|2024-01-01..2024-01-31; B|1|50.00|0|50.00|2024-01-01..2024-01-31;")
	})
	parallelOn(t, "JPYProratedWithDiscount", newSched, func(t *testing.T, f *sched) {
		ph := phase("2024-01-15", f.fixed("Plan", "1000", billing.CurrencyJPY))
		ph.Discounts = []billing.DiscountParams{{Type: billing.DiscountPercentage, Amount: num("15"), Message: "Offer", SeparateLineItem: true}}
		one := 1
		sc := f.schedule(f.customer, "2024-01-15", func(p *billing.BillingScheduleParams) { p.RecurrenceDayOfMonth = &one }, ph)
		wantLines(t, f.renderDue(sc.ID, "2024-01-15T00:00:00Z"),
			"2024-01-15: Plan|0.548387096774|1000|0|548|2024-01-15..2024-01-31; Offer|1|-82|0|-82|2024-01-15..2024-01-31;")
	})
}

func num(s string) *billing.Number {
	n := billing.Number{Decimal: billing.MustDecimal(s)}
	return &n
}
