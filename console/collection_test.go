package console

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
)

// TestInvoiceCollectionShownRetriedAndReminded: on an account with a
// payment provider, an issued invoice's page shows its collection (method,
// dunning, next step, reminders, payment link) and offers "Retry now" and
// "Send a reminder"; each goes through the Service, as the API's state
// after it shows.
func TestInvoiceCollectionShownRetriedAndReminded(t *testing.T) {
	f, _ := payFixture(t)
	ctx := context.Background()
	f.finalInvoice("1", "10.00") // another unpaid invoice of the customer
	b := f.signedIn()
	page := "/console/invoices/" + f.invoice.ID
	_, body := b.get(page)
	if strings.Contains(body, `id="h-collection"`) {
		t.Fatal("a draft shows a collection")
	}

	must(f.svc.FinalizeInvoice(ctx, f.account, f.invoice.ID))
	_, body = b.get(page)
	contains(t, body, `id="h-collection"`, "sent to the customer to pay (STRIPE)", "REMINDER at", "No charge attempted.",
		page+`/retry-collection"`, page+`/send-reminder"`)

	// Retry now makes the next step (the first reminder) due now; the
	// collection run takes it.
	f.clock.Advance(time.Hour)
	path := page + "/retry-collection"
	resp, _ := b.post(path, b.form(path, url.Values{}))
	col := must(f.svc.GetInvoiceCollection(ctx, f.account, f.invoice.ID))
	if resp.StatusCode != http.StatusSeeOther || col.NextAt == nil || !col.NextAt.Equal(f.clock.Now()) {
		t.Fatalf("retry now: %d, collection %+v", resp.StatusCode, col)
	}
	must(f.svc.RunCollection(ctx, f.clock.Now()))
	if col = must(f.svc.GetInvoiceCollection(ctx, f.account, f.invoice.ID)); col.RemindersSent != 1 {
		t.Fatalf("the collection run after retry now: %+v", col)
	}
	_, body = b.get(page + "?done=collection-retried")
	contains(t, body, "The collection&#39;s next step is due now", "<dt>Reminders sent</dt><dd>1</dd>")

	// A reminder sent by hand is counted too.
	path = page + "/send-reminder"
	resp, _ = b.post(path, b.form(path, url.Values{}))
	col = must(f.svc.GetInvoiceCollection(ctx, f.account, f.invoice.ID))
	if resp.StatusCode != http.StatusSeeOther || col.RemindersSent != 2 {
		t.Fatalf("send a reminder: %d, collection %+v", resp.StatusCode, col)
	}
	_, body = b.get(page + "?done=reminder-sent")
	contains(t, body, "The payment reminder was queued", "<dt>Reminders sent</dt><dd>2</dd>")

	// Paid, nothing is collected any more: the actions are gone.
	inv := must(f.svc.GetInvoice(ctx, f.account, f.invoice.ID))
	now := f.clock.Now()
	must(f.svc.RecordPayment(ctx, f.account, inv.ID, billing.PaymentParams{Amount: &inv.AmountDue,
		PaidAt: &billing.Date{Year: now.Year(), Month: now.Month(), Day: now.Day()}}))
	_, body = b.get(page)
	for _, action := range []string{"/retry-collection\"", "/send-reminder\""} {
		if strings.Contains(body, page+action) {
			t.Errorf("a paid invoice offers %s", action)
		}
	}
}

// TestInvoiceDisputeShown: a lost dispute shows on the invoice page: in
// the collection's disputes and beside the payment it took back.
func TestInvoiceDisputeShown(t *testing.T) {
	f, _ := payFixture(t)
	ctx := context.Background()
	must(f.svc.FinalizeInvoice(ctx, f.account, f.invoice.ID))
	inv := must(f.svc.GetInvoice(ctx, f.account, f.invoice.ID))
	for i, ev := range []billing.ProviderEvent{
		{ID: "evt_paid", Type: billing.ProviderEventPaymentSucceeded, InvoiceID: inv.ID, PaymentRef: "pi_9", Amount: inv.AmountDue, Currency: inv.Currency},
		{ID: "evt_lost", Type: billing.ProviderEventDisputeClosed, PaymentRef: "pi_9", DisputeRef: "dp_9", DisputeStatus: "LOST", Amount: inv.AmountDue, Currency: inv.Currency},
	} {
		body := must(json.Marshal(ev))
		if _, err := f.svc.HandleProviderWebhook(ctx, f.account, body, http.Header{"Fake-Signature": {"whsec_console5678"}}); err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
	}
	_, body := f.signedIn().get("/console/invoices/" + inv.ID)
	contains(t, body, "<caption>Disputes</caption>", "dp_9", "LOST", "taken back by a dispute: £433.80")
}

// payFixture is a fixture whose Service has the recording fake payment
// provider, its account configured with it (webhook secret
// whsec_console5678).
func payFixture(t *testing.T) (*fixture, *billingtest.FakeProvider) {
	t.Helper()
	fake := billingtest.NewFakeProvider()
	f := newFixture(t, billingtest.WithConfig(billing.Config{PaymentProviders: []billing.PaymentProvider{fake},
		MasterKey: []byte("0123456789abcdef0123456789abcdef")}))
	must(f.svc.ConfigurePaymentProvider(context.Background(), f.account, billing.ConfigurePaymentProviderParams{
		Provider: billing.PaymentProviderStripe, SecretKey: "sk_test_console1234", WebhookSecret: "whsec_console5678"}))
	return f, fake
}
