package billing_test

import (
	"testing"
	"time"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
)

// Regression tests of the money faults found by an independent check of the
// engine: each reproduces a fault through the library's public API.

// upcoming returns the upcoming invoice of a schedule at asOf, failing the
// test on an error.
func (f *sched) upcoming(id, asOf string) *billing.UpcomingInvoice {
	f.tb.Helper()
	up, err := f.svc.PreviewInvoice(f.ctx, f.account, id, ts(asOf))
	f.must(err)
	return up
}

// Fault 1: two seat events at the same eventTimestamp, totals 5 then 1: the
// balance is the later one (by creation), for op 8 and the engine alike.
func TestSeatEventsWithTheSameTimestampCountTheLatest(t *testing.T) {
	t.Parallel()
	f := newSched(t)
	pr := f.seatPrice("Seats", f.seatMetric("editor"), billing.BillingTypeInArrears)
	f.seats(f.customer, "editor", "2023-08-10T00:00:00Z", 5)
	f.seats(f.customer, "editor", "2023-08-10T00:00:00Z", 1)
	asOf := ts("2023-08-11T00:00:00Z")
	bal, err := f.svc.ListSeatBalances(f.ctx, f.account, billing.SeatBalanceFilter{AsOf: &asOf}, billing.ListParams{Limit: 10})
	f.must(err)
	if len(bal.Items) != 1 || bal.Items[0].Total != 1 {
		t.Fatalf("seat balances %+v, want a total of 1", bal.Items)
	}
	sc := f.schedule(f.customer, "2023-08-01", nil, phase("2023-08-01", pr))
	if up := f.upcoming(sc.ID, "2023-09-01T02:00:00Z"); up.NetTotal.String() != "10.00" {
		t.Errorf("upcoming invoice net %s, want 10.00 (1 seat)", up.NetTotal)
	}
	f.run("2023-09-01T02:00:00Z")
	invs, _ := f.invoices(sc.ID)
	if len(invs) != 1 || invs[0].NetTotal.String() != "10.00" {
		t.Fatalf("invoices %+v, want one of 10.00 (1 seat)", invs)
	}
}

// Fault 2: a folded PERCENTAGE discount on a price with 12 decimals gives an
// exact rate with 13 decimals, which the run stores and reads back.
func TestFoldedDiscountRateIsExactAndBillable(t *testing.T) {
	t.Parallel()
	f := newSched(t)
	pr := f.fixed("Plan", "0.123456789012", billing.CurrencyUSD)
	ph := phase("2024-01-01", pr)
	ph.Discounts = []billing.DiscountParams{{Type: billing.DiscountPercentage, Amount: num("50"), Message: "Half"}}
	sc := f.schedule(f.customer, "2024-01-01", nil, ph)
	up := f.upcoming(sc.ID, "2024-01-01T00:00:00Z")
	r := f.run("2024-01-01T00:00:00Z")
	if len(r.Failures) != 0 || r.InvoicesCreated != 1 {
		t.Fatalf("run %+v, want one invoice and no failure", r)
	}
	_, lines := f.invoices(sc.ID)
	if got := lines[0][0].Rate.String(); got != "0.0617283945060" || up.LineItems[0].Rate.String() != got {
		t.Errorf("rate: run %s, preview %s, want 0.0617283945060 for both", got, up.LineItems[0].Rate)
	}
	got, err := f.svc.GetBillingSchedule(f.ctx, f.account, sc.ID)
	f.must(err)
	if got.LastBillingError != "" {
		t.Errorf("lastBillingError %q", got.LastBillingError)
	}
}

// Fault 3: a change that would make a total too large to store is refused
// naming the field, and the invoice stays usable.
func TestOversizedTotalIsRefusedAndInvoiceStaysUsable(t *testing.T) {
	t.Parallel()
	f := newSched(t)
	inv, err := f.svc.CreateInvoice(f.ctx, f.account, billing.InvoiceParams{Currency: billing.CurrencyUSD, CustomerID: f.customer})
	f.must(err)
	line := func(q string) (*billing.InvoiceLineItem, error) {
		return f.svc.CreateInvoiceLineItem(f.ctx, f.account, inv.ID, billing.InvoiceLineItemParams{
			Title: "x", Quantity: dp(q), Rate: dp("1"), TaxRate: dp("0"), ExternalIDs: []billing.KeyValue{}})
	}
	first, err := line("99999999999999999999")
	f.must(err)
	_, err = line("1")
	es := billing.Errors(err)
	if billing.CodeOf(err) != billing.CodeValidationFailed || len(es) == 0 || es[0].Field != "quantity" {
		t.Fatalf("second line: %v (%+v), want validation_failed on quantity", err, es)
	}
	// A line whose own total is too large is refused too.
	if _, err := f.svc.CreateInvoiceLineItem(f.ctx, f.account, inv.ID, billing.InvoiceLineItemParams{
		Title: "x", Quantity: dp("99999999999999999999"), Rate: dp("99999999999999999999"), TaxRate: dp("0"), ExternalIDs: []billing.KeyValue{}}); billing.CodeOf(err) != billing.CodeValidationFailed {
		t.Fatalf("huge line: %v, want validation_failed", err)
	}
	got, err := f.svc.GetInvoice(f.ctx, f.account, inv.ID)
	f.must(err)
	if got.GrossTotal.String() != "99999999999999999999.00" {
		t.Errorf("gross %s", got.GrossTotal)
	}
	_, err = f.svc.ListInvoices(f.ctx, f.account, billing.InvoiceFilter{}, billing.ListParams{Limit: 10})
	f.must(err)
	f.must(f.svc.DeleteInvoiceLineItem(f.ctx, f.account, inv.ID, first.ID))
	f.must(f.svc.DeleteInvoice(f.ctx, f.account, inv.ID))
}

// Fault 4: net = round(quantity × rate) of the exact product, not of a
// product rounded to 34 digits first.
func TestLineNetRoundsTheExactProduct(t *testing.T) {
	t.Parallel()
	f := newSched(t)
	inv, err := f.svc.CreateInvoice(f.ctx, f.account, billing.InvoiceParams{Currency: billing.CurrencyGBP, CustomerID: f.customer})
	f.must(err)
	l, err := f.svc.CreateInvoiceLineItem(f.ctx, f.account, inv.ID, billing.InvoiceLineItemParams{
		Title: "x", Quantity: dp("37.257608996191"), Rate: dp("211875942128.515827829089"), TaxRate: dp("0"), ExternalIDs: []billing.KeyValue{}})
	f.must(err)
	if l.NetTotal.String() != "7893991007523.83" {
		t.Errorf("netTotal %s, want 7893991007523.83", l.NetTotal)
	}
}

// Fault 5: billing dates whose invoice would have no lines are skipped by
// the preview as by the run: the upcoming invoice is the one the run
// creates.
func TestUpcomingInvoiceSkipsDatesTheRunDoesNotInvoice(t *testing.T) {
	t.Parallel()
	f := newSched(t, billingtest.WithBolt())
	usage := f.apiCalls("0.25")
	fixed := f.price("Quarter", billing.CurrencyUSD, billing.FrequencyQuarterly, billing.BillingTypeInArrears,
		billing.PriceStructure{PricingType: billing.PricingFixed, Price: dp("30.00")})
	sc := f.schedule(f.customer, "2023-01-01", func(p *billing.BillingScheduleParams) { p.EndDate = date("2023-03-31") },
		phase("2023-01-01", usage, fixed))
	up := f.upcoming(sc.ID, "2023-04-05T00:00:00Z")
	f.clock.Set(ts("2023-04-05T00:00:00Z"))
	r := f.run("2023-04-05T00:00:00Z")
	invs, _ := f.invoices(sc.ID)
	if r.InvoicesCreated != 1 || len(invs) != 1 {
		t.Fatalf("run created %d invoices", r.InvoicesCreated)
	}
	if up.BillingDate.String() != "2023-04-01" || up.NetTotal.String() != invs[0].NetTotal.String() || up.NetTotal.String() != "30.00" {
		t.Errorf("upcoming %s %s, run created %s", up.BillingDate, up.NetTotal, invs[0].NetTotal)
	}
	_ = time.Second
}

// Fault 3, the other half: an oversized total already stored (by a version
// without the bound) never makes a read, a finalization or a delete fail.
func TestStoredOversizedTotalNeverBreaksReads(t *testing.T) {
	t.Parallel()
	f := newSched(t, billingtest.WithBolt())
	newInvoice := func() (string, string) {
		inv, err := f.svc.CreateInvoice(f.ctx, f.account, billing.InvoiceParams{Currency: billing.CurrencyUSD, CustomerID: f.customer})
		f.must(err)
		l, err := f.svc.CreateInvoiceLineItem(f.ctx, f.account, inv.ID, billing.InvoiceLineItemParams{
			Title: "x", Quantity: dp("1"), Rate: dp("1"), TaxRate: dp("0"), ExternalIDs: []billing.KeyValue{}})
		f.must(err)
		billing.SetStoredInvoiceTotalsForTest(t, f.svc, f.account, inv.ID, "1000000000000000000000.00")
		return inv.ID, l.ID
	}
	a, _ := newInvoice()
	b, line := newInvoice()
	got, err := f.svc.GetInvoice(f.ctx, f.account, a)
	f.must(err)
	if got.GrossTotal.String() != "1000000000000000000000.00" {
		t.Errorf("gross %s", got.GrossTotal)
	}
	for _, st := range []billing.DocumentStatus{"", billing.StatusDraft} {
		_, err = f.svc.ListInvoices(f.ctx, f.account, billing.InvoiceFilter{Status: st}, billing.ListParams{Limit: 10})
		f.must(err)
	}
	_, err = f.svc.ListInvoiceLineItems(f.ctx, f.account, a, billing.LineItemFilter{}, billing.ListParams{Limit: 10})
	f.must(err)
	_, err = f.svc.FinalizeInvoice(f.ctx, f.account, a)
	f.must(err)
	f.must(f.svc.DeleteInvoiceLineItem(f.ctx, f.account, b, line))
	f.must(f.svc.DeleteInvoice(f.ctx, f.account, b))
}
