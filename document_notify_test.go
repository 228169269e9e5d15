package billing_test

import (
	"context"
	"testing"

	"github.com/billingd/billing"
	"github.com/google/go-cmp/cmp"
)

// recorder returns a function that reports the notification types and
// document e-mails recorded in account's outbox since its last call
// (oldest first; e-mails as "EMAIL to <first recipient>"). The account
// needs a policy covering every type for notifications to be recorded.
func recorder(t *testing.T, svc *billing.Service, account string) func() []string {
	seen := 0
	return func() []string {
		t.Helper()
		page, err := svc.ListDeliveries(context.Background(), account, billing.DeliveryFilter{}, billing.ListParams{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for i := len(page.Items) - 1 - seen; i >= 0; i-- { // newest first
			d := page.Items[i]
			if d.NotificationType == "" {
				out = append(out, "EMAIL to "+d.Recipients[0])
				continue
			}
			out = append(out, string(d.NotificationType))
		}
		seen = page.TotalResultSize
		return out
	}
}

// recordAll gives account an EMAIL policy covering every type and returns
// its recorder.
func recordAll(t *testing.T, svc *billing.Service, account string) func() []string {
	t.Helper()
	if _, err := svc.CreateNotificationPolicy(context.Background(), account, billing.CreateNotificationPolicyParams{
		Name: "ops", Channel: billing.ChannelEmail, Recipients: []string{"ops@acme.test"},
	}); err != nil {
		t.Fatal(err)
	}
	return recorder(t, svc, account)
}

// TestDocumentNotifications runs every document operation once and checks
// the notifications each one records (docs/concepts.md, "Notifications"): exactly one per operation, none for op 11 or
// a refused operation, and the send e-mails to customerEmails.
//
// Long on purpose: a table of cases, one line each; its length is the cases, not logic.
func TestDocumentNotifications(t *testing.T) {
	t.Parallel()
	e := newDocEnv(t)
	emitted := recordAll(t, e.svc, e.acct)
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	inv := e.invoice(billing.CurrencyGBP, "")
	steps := []struct {
		name string
		run  func()
		want []string
	}{
		{"CreateInvoice", func() {}, []string{"INVOICE_CREATED"}},
		{"CreateLine", func() { e.line(inv.ID, invLine("x", "1", "100", "0.2")) }, []string{"INVOICE_UPDATED"}},
		{"CreateGroup", func() {
			must(e.svc.CreateInvoiceLineItemGroup(e.ctx, e.acct, inv.ID, billing.InvoiceLineItemGroupParams{Title: "g"}))
		}, []string{"INVOICE_UPDATED"}},
		{"UpdateInvoice", func() {
			must(e.svc.UpdateInvoice(e.ctx, e.acct, inv.ID, billing.InvoiceUpdateParams{Memo: "m"}))
		}, []string{"INVOICE_UPDATED"}},
		{"Send", func() { must(e.svc.SendInvoice(e.ctx, e.acct, inv.ID)) }, []string{"EMAIL to ann@globex.test", "INVOICE_ISSUED"}},
		{"SendAgainRefused", func() {
			if _, err := e.svc.SendInvoice(e.ctx, e.acct, inv.ID); billing.CodeOf(err) != billing.CodeInvalidState {
				t.Fatal(err)
			}
		}, nil},
		{"PatchSent", func() {
			must(e.svc.PatchSentInvoice(e.ctx, e.acct, inv.ID, billing.PatchSentInvoiceParams{Reference: billing.Some("r")}))
		}, []string{"INVOICE_UPDATED"}},
		{"RecordPayment", func() {
			must(e.svc.RecordPayment(e.ctx, e.acct, inv.ID, billing.PaymentParams{Amount: dec("1"), PaidAt: &billing.Date{Year: 2024, Month: 8, Day: 1}}))
		}, []string{"INVOICE_UPDATED"}},
		{"SetPaymentStatus", func() {
			must(e.svc.SetPaymentStatus(e.ctx, e.acct, inv.ID, billing.PaymentStatusUncollectible))
		}, []string{"INVOICE_UPDATED"}},
	}
	var cn *billing.CreditNote
	steps = append(steps, []struct {
		name string
		run  func()
		want []string
	}{
		{"CreateCreditNote", func() {
			cn = e.creditNote(e.getInvoice(inv.ID), "", "", "")
		}, []string{"CREDIT_NOTE_CREATED"}},
		{"CreateCreditNoteLine", func() {
			must(e.svc.CreateCreditNoteLineItem(e.ctx, e.acct, cn.ID, cnLine(cn.ID, "r", "1", "1", "0")))
		}, []string{"CREDIT_NOTE_UPDATED"}},
		{"UpdateCreditNote", func() {
			must(e.svc.UpdateCreditNote(e.ctx, e.acct, cn.ID, billing.CreditNoteUpdateParams{Memo: billing.Some("m")}))
		}, []string{"CREDIT_NOTE_UPDATED"}},
		{"MarkAsSent", func() { must(e.svc.MarkCreditNoteSent(e.ctx, e.acct, cn.ID)) }, nil},
		{"MarkAsSentAgain", func() { must(e.svc.MarkCreditNoteSent(e.ctx, e.acct, cn.ID)) }, nil},
		{"VoidCreditNote", func() { must(e.svc.VoidCreditNote(e.ctx, e.acct, cn.ID)) }, []string{"CREDIT_NOTE_UPDATED"}},
		{"SendCreditNote", func() {
			cn2 := e.creditNote(e.getInvoice(inv.ID), "1", "2", "0")
			emitted() // created and line added
			must(e.svc.SendCreditNote(e.ctx, e.acct, cn2.ID))
		}, []string{"EMAIL to ann@globex.test", "CREDIT_NOTE_ISSUED"}},
	}...)
	for _, s := range steps {
		s.run()
		if diff := cmp.Diff(s.want, emitted()); diff != "" {
			t.Errorf("%s: notifications (-want +got):\n%s", s.name, diff)
		}
	}
}
