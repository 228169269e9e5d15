package billing_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
)

// invoiceText renders an invoice's lines and totals for comparisons:
// "title qty×rate=net+tax; ... = net/tax/gross".
func invoiceText(inv billing.Invoice, lines []billing.InvoiceLineItem) string {
	var b strings.Builder
	for _, l := range lines {
		fmt.Fprintf(&b, "%s %s×%s=%s+%s; ", l.Title, l.Quantity, l.Rate, l.NetTotal, l.TotalTax)
	}
	fmt.Fprintf(&b, "= %s/%s/%s", inv.NetTotal, inv.TotalTax, inv.GrossTotal)
	return b.String()
}

// progressiveFixture is a schedule of API calls at 0.25 USD (taxed 20%)
// with progressive billing at threshold from 2024-01-01.
func progressiveFixture(t *testing.T, threshold string, opts ...billingtest.Option) (*sched, *billing.BillingSchedule) {
	f := newSched(t, opts...)
	f.clock.Set(time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC))
	usage := f.apiCalls("0.25")
	tr, err := f.svc.CreateTaxRate(f.ctx, f.account, billing.CreateTaxRateParams{Name: "VAT", Amount: dp("0.2")})
	f.must(err)
	sc := f.schedule(f.customer, "2024-01-01", func(p *billing.BillingScheduleParams) {
		p.ThresholdAmount = dp(threshold)
		p.TaxRates = []billing.ScheduleTaxRate{{PriceID: usage, TaxRateID: tr.ID}}
	}, phase("2024-01-01", usage))
	return f, sc
}

// TestProgressiveBillingInterimAndFinalInvoices walks one period: below
// the threshold nothing is invoiced; at it an interim invoice bills the
// usage so far; a second interim deducts the first; a voided interim is
// billed again by the final invoice, which also bills a late event and
// deducts every live interim invoice, so the live invoices add up to the
// period's usage exactly.
func TestProgressiveBillingInterimAndFinalInvoices(t *testing.T) {
	t.Parallel()
	f, sc := progressiveFixture(t, "10.00", billingtest.WithBolt())
	f.events(f.customer, "api_call", ts("2024-01-05T00:00:00Z"), 30) // 7.50 + 1.50 tax: below
	if r := f.run("2024-01-06T00:00:00Z"); r.InvoicesCreated != 0 {
		t.Fatalf("below the threshold: %+v", r)
	}
	f.events(f.customer, "api_call", ts("2024-01-10T00:00:00Z"), 10) // 40 calls: 12.00 gross
	if r := f.run("2024-01-11T00:00:00Z"); r.InvoicesCreated != 1 {
		t.Fatalf("at the threshold: %+v", r)
	}
	if r := f.run("2024-01-12T00:00:00Z"); r.InvoicesCreated != 0 {
		t.Fatalf("nothing new accrued, yet: %+v", r)
	}
	f.events(f.customer, "api_call", ts("2024-01-20T00:00:00Z"), 50) // 90 calls
	if r := f.run("2024-01-21T00:00:00Z"); r.InvoicesCreated != 1 {
		t.Fatalf("second interim: %+v", r)
	}
	invs, lines := f.invoices(sc.ID)
	want := []string{
		"API calls 40×0.25=10.00+2.00; = 10.00/2.00/12.00",
		"API calls 90×0.25=22.50+4.50; Previously invoiced: API calls -40×0.25=-10.00+-2.00; = 12.50/2.50/15.00",
	}
	for i, w := range want {
		if got := invoiceText(invs[i], lines[i]); got != w {
			t.Errorf("interim %d:\n got %s\nwant %s", i, got, w)
		}
	}
	if _, err := f.svc.VoidInvoice(f.ctx, f.account, invs[0].ID); err != nil {
		t.Fatal(err)
	}
	f.events(f.customer, "api_call", ts("2024-01-31T23:00:00Z"), 4) // late in the period: 94 calls
	up := f.upcoming(sc.ID, "2024-01-31T23:30:00Z")
	r := f.run("2024-02-01T02:00:00Z")
	if r.InvoicesCreated != 1 {
		t.Fatalf("final: %+v", r)
	}
	invs, lines = f.invoices(sc.ID)
	final := invoiceText(invs[2], lines[2])
	wantFinal := "API calls 94×0.25=23.50+4.70; Previously invoiced: API calls -90×0.25=-22.50+-4.50; API calls 40×0.25=10.00+2.00; = 11.00/2.20/13.20"
	if final != wantFinal {
		t.Errorf("final:\n got %s\nwant %s", final, wantFinal)
	}
	if got := invoiceText(*up.Invoice, up.LineItems); got != final {
		t.Errorf("the upcoming invoice was\n%s\nthe final invoice is\n%s", got, final)
	}
	gross := invs[1].GrossTotal.Add(invs[2].GrossTotal)
	if gross.String() != "28.20" { // 94 × 0.25 × 1.2
		t.Errorf("the live invoices add up to %s, want 28.20", gross)
	}
}

// TestProgressiveBillingLeavesLinesAddedByHand: lines added by hand to an
// interim draft (one even titled like a deduction) are not usage the
// engine billed: the final invoice neither deducts them nor bills them.
func TestProgressiveBillingLeavesLinesAddedByHand(t *testing.T) {
	t.Parallel()
	f, sc := progressiveFixture(t, "10.00")
	f.events(f.customer, "api_call", ts("2024-01-10T00:00:00Z"), 40) // 12.00 gross
	if r := f.run("2024-01-11T00:00:00Z"); r.InvoicesCreated != 1 {
		t.Fatalf("at the threshold: %+v", r)
	}
	invs, _ := f.invoices(sc.ID)
	for _, title := range []string{"Setup", "Previously invoiced: API calls"} {
		if _, err := f.svc.CreateInvoiceLineItem(f.ctx, f.account, invs[0].ID, invLine(title, "1", "5", "0")); err != nil {
			t.Fatal(err)
		}
	}
	if r := f.run("2024-02-01T02:00:00Z"); r.InvoicesCreated != 1 {
		t.Fatalf("final: %+v", r)
	}
	invs, lines := f.invoices(sc.ID)
	want := "API calls 40×0.25=10.00+2.00; Previously invoiced: API calls -40×0.25=-10.00+-2.00; = 0.00/0.00/0.00"
	if got := invoiceText(invs[1], lines[1]); got != want {
		t.Errorf("final:\n got %s\nwant %s", got, want)
	}
}

// TestProgressiveBillingThresholdValidation: thresholdAmount must be
// positive, with the currency's digits at most.
func TestProgressiveBillingThresholdValidation(t *testing.T) {
	t.Parallel()
	f := newSched(t)
	usage := f.apiCalls("0.25")
	no := false
	for _, bad := range []string{"0", "-1", "1.001"} {
		_, err := f.svc.CreateBillingSchedule(f.ctx, f.account, billing.BillingScheduleParams{
			CustomerID: f.customer, StartDate: date("2024-01-01"), AutoIssueInvoices: &no,
			Phases: []billing.PhaseParams{phase("2024-01-01", usage)}, ThresholdAmount: dp(bad)})
		if es := billing.Errors(err); len(es) != 1 || es[0].Field != "thresholdAmount" {
			t.Errorf("thresholdAmount %s: %v", bad, err)
		}
	}
}

// TestProgressiveInterimOnceAcrossInstances: two Services on one store
// (PostgreSQL with BILLINGD_TEST_POSTGRES) run the engine at once, again
// and again, as of the same moment; the usage passed the threshold once,
// and one interim invoice is issued.
func TestProgressiveInterimOnceAcrossInstances(t *testing.T) {
	t.Parallel()
	store := billingtest.Store(t)
	cfg := billing.Config{ConcurrentBillingRuns: true, NewID: billingtest.IDs()}
	f, sc := progressiveFixture(t, "10.00", billingtest.WithStore(store), billingtest.WithConfig(cfg))
	cfg.Now = f.clock.Now
	other, err := billing.New(store, &cfg)
	f.must(err)
	f.events(f.customer, "api_call", ts("2024-01-05T00:00:00Z"), 50)
	billingtest.AtOnce(t, 6, func(i int) error {
		_, err := []*billing.Service{f.svc, other}[i%2].RunBilling(f.ctx, ts("2024-01-10T00:00:00Z"))
		return err
	})
	if invs, _ := f.invoices(sc.ID); len(invs) != 1 || invs[0].GrossTotal.String() != "15.00" {
		t.Fatalf("%d invoices, want one interim invoice of 15.00: %+v", len(invs), invs)
	}
}
