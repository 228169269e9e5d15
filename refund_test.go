package billing_test

import (
	"testing"

	"github.com/billingd/billing"
)

// TestCreditAndRefundFullyPaidInvoice: an invoice paid in full by its
// automatic charge is credited in full and the credit note refunded
// through the provider: the invoice stays PAID with nothing due, and the
// receivables of the invoice, its payment, credit note and refund come to
// zero in the journal. A credit note of a partly paid invoice lowers what
// is due instead and has nothing to refund; an invoice paid in full by
// hand still cannot be credited (nothing of it can be refunded through
// the provider).
func TestCreditAndRefundFullyPaidInvoice(t *testing.T) {
	t.Parallel()
	e := newPayEnv(t)
	inv := e.autoChargedInvoice("50.00", billing.CurrencyUSD, true)
	e.collect()
	cn := e.creditNote(inv.ID, "50.00")
	r, err := e.svc.RefundCreditNote(e.ctx, e.account, cn.ID)
	e.must(err)
	if r.Amount.String() != "50.00" || r.PaymentReference != "pi_"+e.fake.Charges[0].IdempotencyKey {
		t.Errorf("refund %+v", r)
	}
	got := e.invoice(inv.ID)
	if got.PaymentStatus != billing.PaymentStatusPaid || !got.AmountDue.IsZero() {
		t.Errorf("invoice after credit and refund: %s due %s", got.PaymentStatus, got.AmountDue)
	}
	j, err := e.svc.ListJournalEntries(e.ctx, e.account, billing.JournalFilter{}, billing.ListParams{Limit: 100})
	e.must(err)
	ar := billing.MustDecimal("0")
	for _, x := range j.Items {
		if x.Account == billing.LedgerAccountsReceivable {
			ar = ar.Add(x.Debit).Sub(x.Credit)
		}
	}
	if !ar.IsZero() {
		t.Errorf("accounts receivable after credit and refund: %s", ar)
	}

	partly := e.autoChargedInvoice("30.00", billing.CurrencyUSD, false)
	e.webhook(billing.ProviderEvent{ID: "evt_part", Type: billing.ProviderEventPaymentSucceeded, InvoiceID: partly.ID,
		PaymentRef: "pi_part", Amount: billing.MustDecimal("10.00"), Currency: billing.CurrencyUSD})
	small := e.creditNote(partly.ID, "5.00")
	if _, err := e.svc.RefundCreditNote(e.ctx, e.account, small.ID); billing.CodeOf(err) != billing.CodeInvalidState {
		t.Errorf("refund of a credit note of a partly paid invoice: %v", err)
	}
	if got := e.invoice(partly.ID); got.AmountDue.String() != "15.00" {
		t.Errorf("partly paid invoice's amount due %s, want 15.00", got.AmountDue)
	}

	byHand := e.autoChargedInvoice("20.00", billing.CurrencyUSD, false)
	e.pay(byHand.ID, "20.00")
	if _, err := e.finalizeCreditNote(byHand.ID, "5.00"); billing.CodeOf(err) != billing.CodeInvalidState {
		t.Errorf("credit of an invoice paid in full by hand: %v", err)
	}
}
