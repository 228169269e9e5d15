package billing_test

import (
	"testing"

	"github.com/billingd/billing"
)

// disputed issues a CHARGE_AUTOMATICALLY invoice of 50.00 paid by its
// charge, and returns it with the charge's PaymentIntent.
func disputed(t *testing.T) (*payEnv, *billing.Invoice, string) {
	t.Helper()
	e := newPayEnv(t)
	_, err := e.svc.CreateNotificationPolicy(e.ctx, e.account, billing.CreateNotificationPolicyParams{Name: "disputes", Channel: billing.ChannelEmail,
		Recipients: []string{"finance@example.com"}, NotificationTypes: []billing.NotificationType{billing.NotificationPaymentDisputeOpened,
			billing.NotificationPaymentDisputeWon, billing.NotificationPaymentDisputeLost}})
	e.must(err)
	inv := e.autoChargedInvoice("50.00", billing.CurrencyUSD, true)
	e.collect()
	return e, e.invoice(inv.ID), e.fake.Charges[0].IdempotencyKey
}

func dispute(id, pi, status string, closed bool) billing.ProviderEvent {
	ev := billing.ProviderEvent{ID: "evt_" + id + status, Type: billing.ProviderEventDisputeOpened, DisputeRef: "dp_1",
		PaymentRef: pi, Amount: billing.MustDecimal("50.00"), Currency: billing.CurrencyUSD, DisputeStatus: status}
	if closed {
		ev.Type = billing.ProviderEventDisputeClosed
	}
	return ev
}

// TestDisputeLostReversesThePayment: a dispute (it names only the
// PaymentIntent) is noted on the invoice's collection and notified; lost,
// it takes the payment back: the invoice is UNPAID with 50.00 due again,
// dunning FAILED with nothing planned, the payment shows what was taken
// back, the journal moves cash back to receivables. Replays of both events
// and a late "opened" change nothing more; a refund finds nothing left.
func TestDisputeLostReversesThePayment(t *testing.T) {
	t.Parallel()
	e, inv, key := disputed(t)
	pi := "pi_" + key
	e.webhook(dispute("1", pi, "NEEDS_RESPONSE", false))
	c, err := e.svc.GetInvoiceCollection(e.ctx, e.account, inv.ID)
	e.must(err)
	if len(c.Disputes) != 1 || c.Disputes[0].Status != billing.DisputeOpen || c.Disputes[0].PaymentReference != pi {
		t.Fatalf("disputes after the open %+v", c.Disputes)
	}
	if got := e.invoice(inv.ID); got.PaymentStatus != billing.PaymentStatusPaid {
		t.Errorf("an open dispute changed the invoice: %s", got.PaymentStatus)
	}
	for range 2 {
		e.webhook(dispute("1", pi, "LOST", true))
	}
	e.webhook(dispute("2", pi, "LOST", true))          // the same close under another event id
	e.webhook(dispute("3", pi, "UNDER_REVIEW", false)) // a late open
	got := e.invoice(inv.ID)
	if got.PaymentStatus != billing.PaymentStatusUnpaid || got.AmountDue.String() != "50.00" || !got.AmountPaid.IsZero() || got.DunningStatus != billing.DunningFailed {
		t.Errorf("invoice after the lost dispute: %s due %s paid %s dunning %s", got.PaymentStatus, got.AmountDue, got.AmountPaid, got.DunningStatus)
	}
	c, err = e.svc.GetInvoiceCollection(e.ctx, e.account, inv.ID)
	e.must(err)
	d := c.Disputes
	if len(d) != 1 || d[0].Status != billing.DisputeLost || d[0].AmountReversed == nil || d[0].AmountReversed.String() != "50.00" || c.NextStep != "" {
		t.Fatalf("collection after the lost dispute %+v", c)
	}
	pays, err := e.svc.ListPayments(e.ctx, e.account, inv.ID, "", billing.ListParams{})
	e.must(err)
	if len(pays.Items) != 1 || pays.Items[0].AmountReversed == nil || pays.Items[0].AmountReversed.String() != "50.00" {
		t.Errorf("payments %+v", pays.Items)
	}
	j, err := e.svc.ListJournalEntries(e.ctx, e.account, billing.JournalFilter{SourceID: d[0].ReversalID}, billing.ListParams{})
	e.must(err)
	if len(j.Items) != 2 || j.Items[0].Account != billing.LedgerAccountsReceivable || j.Items[0].Debit.String() != "50.00" ||
		j.Items[1].Account != billing.LedgerCash || j.Items[1].Credit.String() != "50.00" {
		t.Errorf("journal of the reversal %+v", j.Items)
	}
	types := deliveryTypes(t, e)
	if types[billing.NotificationPaymentDisputeOpened] != 1 || types[billing.NotificationPaymentDisputeLost] != 1 {
		t.Errorf("notifications %v", types)
	}
	if run := e.collect(); run.Steps != 0 || len(e.fake.Charges) != 1 {
		t.Errorf("collection charged again after a lost dispute: %+v", run)
	}
}

// TestDisputeWonOutOfOrder: the close (won) arrives before the open: the
// dispute is recorded WON once and notified as won (no "opened" after the
// fact), the payment stands, the late open changes nothing.
func TestDisputeWonOutOfOrder(t *testing.T) {
	t.Parallel()
	e, inv, key := disputed(t)
	pi := "pi_" + key
	e.webhook(dispute("1", pi, "WON", true))
	e.webhook(dispute("1", pi, "NEEDS_RESPONSE", false))
	c, err := e.svc.GetInvoiceCollection(e.ctx, e.account, inv.ID)
	e.must(err)
	if len(c.Disputes) != 1 || c.Disputes[0].Status != billing.DisputeWon || c.Disputes[0].AmountReversed != nil {
		t.Errorf("disputes %+v", c.Disputes)
	}
	if got := e.invoice(inv.ID); got.PaymentStatus != billing.PaymentStatusPaid || got.DunningStatus != billing.DunningCompleted {
		t.Errorf("invoice %s %s", got.PaymentStatus, got.DunningStatus)
	}
	types := deliveryTypes(t, e)
	if types[billing.NotificationPaymentDisputeWon] != 1 || types[billing.NotificationPaymentDisputeOpened] != 0 || types[billing.NotificationPaymentDisputeLost] != 0 {
		t.Errorf("notifications %v", types)
	}
}
