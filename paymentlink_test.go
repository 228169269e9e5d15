package billing_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
)

// linkEnv is a payEnv whose invoices get payment links that expire after
// a day, and whose customers have no saved payment method.
func linkEnv(t *testing.T) *payEnv {
	t.Helper()
	e := newPayEnv(t)
	e.fake.PaymentMethod, e.fake.LinkTTL, e.fake.Now = "", 24*time.Hour, e.clock.Now
	_, err := e.svc.UpdateInvoiceRenderSettings(e.ctx, e.account, e.account, billing.InvoiceRenderSettingsParams{PaymentLinkDisplay: billing.ShowPaymentLink})
	e.must(err)
	return e
}

func (e *payEnv) pay(invoiceID, amount string) {
	e.tb.Helper()
	a, d := billing.MustDecimal(amount), billing.DateOf(e.clock.Now())
	_, err := e.svc.RecordPayment(e.ctx, e.account, invoiceID, billing.PaymentParams{Amount: &a, PaidAt: &d, Method: "bank transfer"})
	e.must(err)
}

func linkOf(fake *billingtest.FakeProvider, invoiceID string, n int) string {
	return fmt.Sprintf("https://pay.example/%s/%d", invoiceID, n)
}

// TestPaymentLinkKeptTrue: the link made after issue is made anew when it
// expires (the expired page closed first), and when a payment by hand
// changes the amount due (a page for the new amount); when a payment by
// hand pays the rest, dunning is COMPLETED at once and the next run closes
// the page and takes the link off the invoice. No page is made after.
func TestPaymentLinkKeptTrue(t *testing.T) {
	t.Parallel()
	e := linkEnv(t)
	inv := e.autoChargedInvoice("40.00", billing.CurrencyUSD, false)
	e.collect()
	if got := e.invoice(inv.ID); got.PaymentLink != linkOf(e.fake, inv.ID, 1) {
		t.Fatalf("link after issue %q", got.PaymentLink)
	}
	c, err := e.svc.GetInvoiceCollection(e.ctx, e.account, inv.ID)
	e.must(err)
	if c.NextStep != "PAYMENT_LINK" || !c.NextAt.Equal(e.clock.Now().Add(24*time.Hour).UTC().Truncate(time.Second)) {
		t.Fatalf("the link's refresh is not planned at its expiry: %+v", c)
	}
	e.clock.Advance(24*time.Hour - time.Minute)
	e.collect()
	if pages, _, _ := e.fake.Snapshot(); len(pages) != 1 {
		t.Fatalf("a page made before the first expired: %d", len(pages))
	}
	e.clock.Advance(time.Minute)
	e.collect()
	pages, closed, _ := e.fake.Snapshot()
	if got := e.invoice(inv.ID); got.PaymentLink != linkOf(e.fake, inv.ID, 2) || len(pages) != 2 || !slices.Equal(closed, []string{"cs_" + inv.ID + "_1"}) {
		t.Fatalf("after expiry: link %q, %d pages, closed %v", got.PaymentLink, len(pages), closed)
	}

	e.pay(inv.ID, "10.00")
	e.collect()
	pages, closed, _ = e.fake.Snapshot()
	if len(pages) != 3 || pages[2].Amount.String() != "30.00" || closed[len(closed)-1] != "cs_"+inv.ID+"_2" {
		t.Fatalf("after a partial payment: pages %+v, closed %v", pages, closed)
	}

	e.pay(inv.ID, "30.00")
	if got := e.invoice(inv.ID); got.DunningStatus != billing.DunningCompleted {
		t.Errorf("dunning right after the payment by hand: %s", got.DunningStatus)
	}
	e.collect()
	e.clock.Advance(48 * time.Hour)
	e.collect()
	pages, closed, _ = e.fake.Snapshot()
	got := e.invoice(inv.ID)
	c, err = e.svc.GetInvoiceCollection(e.ctx, e.account, inv.ID)
	e.must(err)
	if len(pages) != 3 || closed[len(closed)-1] != "cs_"+inv.ID+"_3" || got.PaymentLink != "" || c.PaymentLink != "" || c.NextStep != "" ||
		got.DunningStatus != billing.DunningCompleted {
		t.Errorf("after payment in full: %d pages, closed %v, link %q/%q, next %q, dunning %s", len(pages), closed, got.PaymentLink, c.PaymentLink, c.NextStep, got.DunningStatus)
	}
}

// TestPaymentLinkClosedWhenCreditedOrVoided: an invoice credited in full
// and one voided have their pages closed by the next run; dunning says
// COMPLETED (nothing due: paid by the credit note) and NOT_REQUIRED.
func TestPaymentLinkClosedWhenCreditedOrVoided(t *testing.T) {
	t.Parallel()
	e := linkEnv(t)
	credited := e.autoChargedInvoice("25.00", billing.CurrencyUSD, false)
	voided := e.autoChargedInvoice("15.00", billing.CurrencyUSD, false)
	e.collect()
	e.creditNote(credited.ID, "25.00")
	_, err := e.svc.VoidInvoice(e.ctx, e.account, voided.ID)
	e.must(err)
	e.collect()
	_, closed, _ := e.fake.Snapshot()
	slices.Sort(closed)
	want := []string{"cs_" + credited.ID + "_1", "cs_" + voided.ID + "_1"}
	slices.Sort(want)
	if !slices.Equal(closed, want) {
		t.Errorf("closed %v, want %v", closed, want)
	}
	for id, dunning := range map[string]string{credited.ID: billing.DunningCompleted, voided.ID: billing.DunningNotRequired} {
		if got := e.invoice(id); got.PaymentLink != "" || got.DunningStatus != dunning {
			t.Errorf("invoice %s: link %q, dunning %s, want %s", id, got.PaymentLink, got.DunningStatus, dunning)
		}
	}
}
