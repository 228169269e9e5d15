package console

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/billingd/billing"
)

// TestCollectionInABrowser walks an automatically charged invoice's
// collection in headless chromium: the failed charge shows its attempt,
// its failure and the next retry; "Send a reminder…" and "Retry now…" go
// through their confirmation pages; after each, the REST API shows what
// changed (a reminder counted; the retry due now, then charged by the
// collection run: two attempts, the invoice PAID), and the page shows it.
//
// Long on purpose: one person's session on one invoice, step after step.
func TestCollectionInABrowser(t *testing.T) {
	f, fake := payFixture(t)
	fake.Outcomes = []billing.ChargeStatus{billing.ChargeFailed, billing.ChargeSucceeded}
	ctx := context.Background()
	product := must(f.svc.CreateProduct(ctx, f.account, billing.CreateProductParams{Name: "Platform"}))
	price := must(f.svc.CreatePrice(ctx, f.account, billing.CreatePriceParams{ProductID: product.ID, Name: "Pro", Currency: billing.CurrencyGBP,
		Structure:        billing.PriceStructure{PricingType: billing.PricingFixed, Price: new(billing.MustDecimal("49.00"))},
		BillingFrequency: billing.FrequencyMonthly, BillingType: billing.BillingTypeInAdvance}))
	start, no, yes := must(billing.ParseDate("2024-07-01")), false, true
	sc := must(f.svc.CreateBillingSchedule(ctx, f.account, billing.BillingScheduleParams{CustomerID: f.customer.ID, StartDate: &start,
		AutoIssueInvoices: &no, IsDraft: &no, Phases: []billing.PhaseParams{{StartDate: &start, PriceIDs: []string{price.ID}}}}))
	must(f.svc.CreatePaymentSettings(ctx, f.account, "billing_schedule", billing.PaymentSettingsParams{
		BillingScheduleID: sc.ID, PaymentProvider: billing.PaymentProviderStripe, AutoCharge: &yes}))
	inv := must(f.svc.CreateInvoice(ctx, f.account, billing.InvoiceParams{Currency: billing.CurrencyGBP, CustomerID: f.customer.ID, BillingScheduleID: sc.ID}))
	must(f.svc.CreateInvoiceLineItem(ctx, f.account, inv.ID, billing.InvoiceLineItemParams{Title: "Plan", Quantity: new(billing.MustDecimal("1")),
		Rate: new(billing.MustDecimal("49.00")), TaxRate: new(billing.MustDecimal("0")), ExternalIDs: []billing.KeyValue{}}))
	must(f.svc.FinalizeInvoice(ctx, f.account, inv.ID))
	must(f.svc.RunCollection(ctx, f.clock.Now())) // the charge at issue fails
	var col billing.InvoiceCollection
	f.apiJSON(t, "/invoices/"+inv.ID+"/collection", &col)
	if len(col.Attempts) != 1 || col.NextAt == nil {
		t.Fatalf("collection after the failed charge %+v", col)
	}

	b := f.signedInTab(t)
	page := "/console/invoices/" + inv.ID
	b.open(page)
	b.see("Collection", "charged automatically (STRIPE)", "SCHEDULED", "card declined", "FAILED", "Retry now…", "Send a reminder…",
		"CHARGE at "+col.NextAt.UTC().Format("2 Jan 2006 15:04 UTC"))
	b.shot("collection")

	b.click(`.toolbar a[href$="/send-reminder"]`)
	b.see("Send a payment reminder")
	b.click("main form button[type=submit]")
	b.see("The payment reminder was queued")
	f.apiJSON(t, "/invoices/"+inv.ID+"/collection", &col)
	if col.RemindersSent != 1 {
		t.Fatalf("after the reminder: %+v", col)
	}

	f.clock.Advance(time.Hour)
	b.click(`.toolbar a[href$="/retry-collection"]`)
	b.see("Retry the collection now")
	b.click("main form button[type=submit]")
	b.see("The collection's next step is due now")
	f.apiJSON(t, "/invoices/"+inv.ID+"/collection", &col)
	if col.NextStep != "CHARGE" || col.NextAt == nil || !col.NextAt.Equal(f.clock.Now()) {
		t.Fatalf("after retry now: %+v", col)
	}
	must(f.svc.RunCollection(ctx, f.clock.Now())) // the retry succeeds
	f.apiJSON(t, "/invoices/"+inv.ID+"/collection", &col)
	if len(col.Attempts) != 2 || col.Attempts[1].Status != billing.ChargeSucceeded || col.DunningStatus != billing.DunningCompleted {
		t.Fatalf("after the collection run: %+v", col)
	}
	if got := f.apiStatus(t, inv.ID); got != "FINAL PAID" {
		t.Errorf("invoice over the API: %s", got)
	}
	b.open(page)
	b.see("COMPLETED", "SUCCEEDED", "none planned")
	text := b.text()
	for _, gone := range []string{"Retry now…", "Send a reminder…"} {
		if strings.Contains(text, gone) {
			t.Errorf("a paid invoice still offers %q", gone)
		}
	}
}
