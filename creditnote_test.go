package billing_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/billingd/billing"
	"github.com/google/go-cmp/cmp"
)

// creditNoteInState returns a credit note of a FINAL invoice (gross
// 120.00) in st, with one line (gross 12.00) and one empty group.
func creditNoteInState(t *testing.T, e *docEnv, st billing.DocumentStatus) (cn *billing.CreditNote, inv *billing.Invoice, lineID, groupID string) {
	t.Helper()
	inv = e.finalInvoice("1", "100", "0.2")
	cn, err := e.svc.CreateCreditNote(e.ctx, e.acct, billing.CreditNoteParams{Currency: inv.Currency, CustomerID: inv.CustomerID, InvoiceID: inv.ID, Status: createStatus(st)})
	if err != nil {
		t.Fatal(err)
	}
	l, err := e.svc.CreateCreditNoteLineItem(e.ctx, e.acct, cn.ID, cnLine(cn.ID, "Refund", "1", "10", "0.2"))
	if err != nil {
		t.Fatal(err)
	}
	g, err := e.svc.CreateCreditNoteLineItemGroup(e.ctx, e.acct, cn.ID, billing.CreditNoteLineItemGroupParams{Title: "empty"})
	if err != nil {
		t.Fatal(err)
	}
	moveTo(t, e, cn.ID, st, e.svc.FinalizeCreditNote, e.svc.SendCreditNote, e.svc.VoidCreditNote)
	cn, err = e.svc.GetCreditNote(e.ctx, e.acct, cn.ID)
	if err != nil {
		t.Fatal(err)
	}
	return cn, e.getInvoice(inv.ID), l.ID, g.ID
}

func creditNoteSnapshot(t *testing.T, e *docEnv, cnID, invID string) string {
	t.Helper()
	cn, err := e.svc.GetCreditNote(e.ctx, e.acct, cnID)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := e.svc.ListCreditNoteLineItems(e.ctx, e.acct, cnID, billing.LineItemFilter{}, billing.ListParams{})
	if err != nil {
		t.Fatal(err)
	}
	groups, err := e.svc.ListCreditNoteLineItemGroups(e.ctx, e.acct, cnID, billing.LineItemFilter{}, billing.ListParams{})
	if err != nil {
		t.Fatal(err)
	}
	journal, err := e.svc.ListJournalEntries(e.ctx, e.acct, billing.JournalFilter{}, billing.ListParams{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	return jsonOf(t, []any{cn, lines, groups, journal, e.getInvoice(invID)})
}

// creditedDoc is a credit note with the invoice it credits, as the state
// table's checks see them.
type creditedDoc struct {
	cn  *billing.CreditNote
	inv *billing.Invoice
}

// creditNoteLines are the credit note's line and group operations of the
// state table.
var creditNoteLines = docLines{
	createLine: func(e *docEnv, id string) error {
		return errOf(e.svc.CreateCreditNoteLineItem(e.ctx, e.acct, id, cnLine(id, "more", "1", "5", "0")))
	},
	updateLine: func(e *docEnv, id, lineID string) error {
		return errOf(e.svc.UpdateCreditNoteLineItem(e.ctx, e.acct, id, lineID, cnLine(id, "x", "2", "5", "0").CreditNoteLineItemParams))
	},
	deleteLine: func(e *docEnv, id, lineID string) error {
		return e.svc.DeleteCreditNoteLineItem(e.ctx, e.acct, id, lineID)
	},
	createGroup: func(e *docEnv, id string) error {
		return errOf(e.svc.CreateCreditNoteLineItemGroup(e.ctx, e.acct, id, billing.CreditNoteLineItemGroupParams{Title: "g"}))
	},
	updateGroup: func(e *docEnv, id, groupID string) error {
		return errOf(e.svc.UpdateCreditNoteLineItemGroup(e.ctx, e.acct, id, groupID, billing.CreditNoteLineItemGroupParams{Title: "h"}))
	},
	deleteGroup: func(e *docEnv, id, groupID string) error {
		return e.svc.DeleteCreditNoteLineItemGroup(e.ctx, e.acct, id, groupID)
	},
}

// Long on purpose: a state table: one row per operation, read as one table against every state.
func TestCreditNoteStateTable(t *testing.T) {
	t.Parallel()
	type check = func(t *testing.T, e *docEnv, before, after creditedDoc)
	status := func(d creditedDoc) billing.DocumentStatus { return d.cn.Status }
	sameStatus := sameStatusOf(status)
	finalized := func(want billing.DocumentStatus) check {
		return func(t *testing.T, e *docEnv, b, a creditedDoc) {
			if a.cn.Status != want || a.cn.CreditNoteNumber != "CN00001" || a.cn.IssueDate.String() != "2024-07-30" || a.cn.MerchantDetails == nil {
				t.Errorf("from %s: %s", b.cn.Status, jsonOf(t, a.cn))
			}
			if a.inv.AmountCredited.String() != "12.00" || a.inv.AmountDue.String() != "108.00" {
				t.Errorf("invoice credited %s due %s", a.inv.AmountCredited, a.inv.AmountDue)
			}
		}
	}
	ops := []stateOp[creditedDoc]{
		{"Update", editable, func(e *docEnv, id, _, _ string) error {
			_, err := e.svc.UpdateCreditNote(e.ctx, e.acct, id, billing.CreditNoteUpdateParams{Memo: billing.Some("m"), CustomerTaxID: billing.Null[string]()})
			return err
		}, func(t *testing.T, e *docEnv, b, a creditedDoc) {
			sameStatus(t, e, b, a)
			if a.cn.Memo != "m" || a.cn.CustomerEmails == nil {
				t.Errorf("updated: %s", jsonOf(t, a.cn))
			}
		}},
		{"Draft", []billing.DocumentStatus{ip}, transition((*billing.Service).DraftCreditNote), func(t *testing.T, _ *docEnv, _, a creditedDoc) {
			if a.cn.Status != dr {
				t.Errorf("status %s", a.cn.Status)
			}
		}},
		{"Finalize", editable, transition((*billing.Service).FinalizeCreditNote), finalized(fi)},
		{"MarkAsSent", []billing.DocumentStatus{ip, dr, fi, se}, transition((*billing.Service).MarkCreditNoteSent), finalized(se)},
		{"Send", []billing.DocumentStatus{ip, dr, fi}, transition((*billing.Service).SendCreditNote), finalized(se)},
		{"Void", []billing.DocumentStatus{ip, dr, fi, se}, transition((*billing.Service).VoidCreditNote), func(t *testing.T, _ *docEnv, _, a creditedDoc) {
			if a.cn.Status != vo || a.inv.AmountCredited.String() != "0.00" || a.inv.AmountDue.String() != "120.00" {
				t.Errorf("voided: %s; invoice credited %s", a.cn.Status, a.inv.AmountCredited)
			}
		}},
	}
	ops = append(ops, lineOps(creditNoteLines, status, func(d creditedDoc) billing.Decimal { return d.cn.GrossTotal }, "17.00", "10.00")...)
	stateTable[creditedDoc]{
		ops: ops,
		inState: func(t *testing.T, e *docEnv, st billing.DocumentStatus) docFixture[creditedDoc] {
			cn, inv, lineID, groupID := creditNoteInState(t, e, st)
			return docFixture[creditedDoc]{creditedDoc{cn, inv}, cn.ID, lineID, groupID}
		},
		settle: func(e *docEnv) { e.clock.Advance(time.Hour) }, // a write would move updatedAt
		snapshot: func(t *testing.T, e *docEnv, d creditedDoc) string {
			return creditNoteSnapshot(t, e, d.cn.ID, d.inv.ID)
		},
		reload: func(t *testing.T, e *docEnv, d creditedDoc) creditedDoc {
			after, err := e.svc.GetCreditNote(e.ctx, e.acct, d.cn.ID)
			if err != nil {
				t.Fatal(err)
			}
			return creditedDoc{after, e.getInvoice(d.inv.ID)}
		},
		// Marking a SENT credit note as sent succeeds and changes nothing.
		noop: func(op string, st billing.DocumentStatus) bool { return op == "MarkAsSent" && st == se },
	}.run(t)
}

// Long on purpose: short subtests of one rule group that share the group's set-up.
func TestCreditingGuard(t *testing.T) {
	t.Parallel()
	parallelOn(t, "ErrOverCrediting", newDocEnv, func(t *testing.T, e *docEnv) {
		inv := e.finalInvoice("1", "100", "0.2") // gross 120.00
		if _, err := e.svc.RecordPayment(e.ctx, e.acct, inv.ID, billing.PaymentParams{Amount: dec("50"), PaidAt: &billing.Date{Year: 2024, Month: 7, Day: 30}}); err != nil {
			t.Fatal(err)
		}
		first := e.creditNote(inv, "1", "50", "0.2") // 60.00
		if _, err := e.svc.FinalizeCreditNote(e.ctx, e.acct, first.ID); err != nil {
			t.Fatal(err)
		}
		over := e.creditNote(inv, "1", "8.35", "0.2") // 10.02 > 120 − 50 − 60
		before := jsonOf(t, e.getInvoice(inv.ID))
		for _, op := range []func() error{
			func() error { _, err := e.svc.FinalizeCreditNote(e.ctx, e.acct, over.ID); return err },
			func() error { _, err := e.svc.MarkCreditNoteSent(e.ctx, e.acct, over.ID); return err },
			func() error { _, err := e.svc.SendCreditNote(e.ctx, e.acct, over.ID); return err },
		} {
			if err := op(); billing.CodeOf(err) != billing.CodeInvalidState {
				t.Fatalf("over-crediting: %v, want invalid_state", err)
			}
		}
		if after := jsonOf(t, e.getInvoice(inv.ID)); after != before {
			t.Errorf("a refused finalization changed the invoice:\n%s\n%s", before, after)
		}
		exact := e.creditNote(inv, "1", "8.33", "0.2") // 10.00: exactly what is left
		cn, err := e.svc.FinalizeCreditNote(e.ctx, e.acct, exact.ID)
		if err != nil || cn.CreditNoteNumber != "CN00002" {
			t.Fatalf("exact credit: %v %v (the refused ones must burn no number)", cn, err)
		}
		if got := e.getInvoice(inv.ID); got.AmountDue.String() != "0.00" || got.PaymentStatus != billing.PaymentStatusPaid {
			t.Errorf("fully settled invoice: due %s, %s", got.AmountDue, got.PaymentStatus)
		}
	})
	parallelOn(t, "ErrVoidedInvoiceNotCreditable", newDocEnv, func(t *testing.T, e *docEnv) {
		inv := e.finalInvoice("1", "100", "0")
		draft := e.creditNote(inv, "1", "10", "0") // a DRAFT credit note does not stop a void
		if _, err := e.svc.VoidInvoice(e.ctx, e.acct, inv.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := e.svc.FinalizeCreditNote(e.ctx, e.acct, draft.ID); billing.CodeOf(err) != billing.CodeInvalidState {
			t.Errorf("finalizing a credit note of a VOIDED invoice: %v", err)
		}
		if _, err := e.crediting(inv); billing.CodeOf(err) != billing.CodeInvalidState {
			t.Errorf("crediting a VOIDED invoice: %v", err)
		}
	})
	parallelOn(t, "ErrInvoiceWithLiveCreditNoteNotVoidable", newDocEnv, func(t *testing.T, e *docEnv) {
		inv := e.finalInvoice("1", "100", "0")
		cn := e.creditNote(inv, "1", "10", "0")
		if _, err := e.svc.MarkCreditNoteSent(e.ctx, e.acct, cn.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := e.svc.VoidInvoice(e.ctx, e.acct, inv.ID); billing.CodeOf(err) != billing.CodeInvalidState {
			t.Fatalf("voiding an invoice with a SENT credit note: %v", err)
		}
		if _, err := e.svc.VoidCreditNote(e.ctx, e.acct, cn.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := e.svc.VoidInvoice(e.ctx, e.acct, inv.ID); err != nil {
			t.Fatalf("voiding once its credit note is voided: %v", err)
		}
	})
	parallelOn(t, "ErrInvoiceNotFinal", newDocEnv, func(t *testing.T, e *docEnv) {
		inv := e.invoice(billing.CurrencyGBP, "")
		if _, err := e.crediting(inv); billing.CodeOf(err) != billing.CodeInvalidState {
			t.Errorf("crediting a DRAFT invoice: %v", err)
		}
	})
	parallelOn(t, "ErrOtherCurrencyOrCustomer", newDocEnv, func(t *testing.T, e *docEnv) {
		inv := e.finalInvoice("1", "100", "0")
		other := createCustomer(t, e.svc, e.acct, "Other")
		_, err := e.svc.CreateCreditNote(e.ctx, e.acct, billing.CreditNoteParams{Currency: billing.CurrencyEUR, CustomerID: other.ID, InvoiceID: inv.ID})
		if diff := cmp.Diff([]string{"invoiceId"}, errFields(t, err, billing.CodeValidationFailed)); diff != "" {
			t.Error(diff)
		}
	})
}

func TestCreateCreditNoteCopiesFromInvoice(t *testing.T) {
	t.Parallel()
	e := newDocEnv(t)
	inv := e.invoice(billing.CurrencyGBP, "")
	if _, err := e.svc.UpdateInvoice(e.ctx, e.acct, inv.ID, billing.InvoiceUpdateParams{
		BillingPeriod:  &billing.DateRange{Start: billing.Date{Year: 2024, Month: 7, Day: 1}, EndInclusive: billing.Date{Year: 2024, Month: 7, Day: 31}},
		CustomerEmails: []string{"billing@globex.test"},
	}); err != nil {
		t.Fatal(err)
	}
	e.line(inv.ID, invLine("x", "1", "10", "0"))
	inv, err := e.svc.SendInvoice(e.ctx, e.acct, inv.ID)
	if err != nil {
		t.Fatal(err)
	}
	cn := e.creditNote(inv, "", "", "")
	got := map[string]string{
		"invoiceNumber": cn.InvoiceNumber, "start": billing.FormatTimestamp(*cn.BillingPeriodStart),
		"end": billing.FormatTimestamp(*cn.BillingPeriodEnd), "emails": fmt.Sprint(cn.CustomerEmails),
		"settings": string(cn.Settings.GenerateCashCreditGrant), "total": cn.GrossTotal.String(),
	}
	want := map[string]string{
		"invoiceNumber": "INV00001", "start": "2024-07-01T00:00:00Z", "end": "2024-08-01T00:00:00Z",
		"emails": "[billing@globex.test]", "settings": "DISABLED", "total": "0.00",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Error(diff)
	}
	if got := e.getInvoice(inv.ID).CreditNoteIDs; len(got) != 1 || got[0] != cn.ID {
		t.Errorf("creditNoteIds %v", got)
	}
	_, err = e.svc.CreateCreditNoteLineItem(e.ctx, e.acct, cn.ID, cnLine("other", "x", "1", "1", "0"))
	if diff := cmp.Diff([]string{"creditNoteId"}, errFields(t, err, billing.CodeValidationFailed)); diff != "" {
		t.Error(diff)
	}
	p := cnLine(cn.ID, "x", "1", "1", "0")
	p.RevenueRecognitionMethod = billing.RevenueRecognitionUsage
	p.LineItemID = "nope"
	_, err = e.svc.CreateCreditNoteLineItem(e.ctx, e.acct, cn.ID, p)
	if diff := cmp.Diff([]string{"revenueRecognitionMethod", "lineItemId"}, errFields(t, err, billing.CodeValidationFailed)); diff != "" {
		t.Error(diff)
	}
}
