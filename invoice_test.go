package billing_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
	"github.com/google/go-cmp/cmp"
)

// invoiceInState returns an invoice in st with one line and one empty
// group (added while it was editable).
func invoiceInState(t *testing.T, e *docEnv, st billing.DocumentStatus) (inv *billing.Invoice, lineID, groupID string) {
	t.Helper()
	inv = e.invoice(billing.CurrencyGBP, createStatus(st))
	lineID = e.line(inv.ID, invLine("Service", "2", "50", "0.2")).ID
	g, err := e.svc.CreateInvoiceLineItemGroup(e.ctx, e.acct, inv.ID, billing.InvoiceLineItemGroupParams{Title: "empty"})
	if err != nil {
		t.Fatal(err)
	}
	moveTo(t, e, inv.ID, st, e.svc.FinalizeInvoice, e.svc.SendInvoice, e.svc.VoidInvoice)
	return e.getInvoice(inv.ID), lineID, g.ID
}

// invoiceSnapshot is everything an operation could change, as JSON.
func invoiceSnapshot(t *testing.T, e *docEnv, id string) string {
	t.Helper()
	inv, err := e.svc.GetInvoice(e.ctx, e.acct, id)
	if err != nil {
		return "not found"
	}
	lines, err := e.svc.ListInvoiceLineItems(e.ctx, e.acct, id, billing.LineItemFilter{}, billing.ListParams{})
	if err != nil {
		t.Fatal(err)
	}
	groups, err := e.svc.ListInvoiceLineItemGroups(e.ctx, e.acct, id, billing.LineItemFilter{}, billing.ListParams{})
	if err != nil {
		t.Fatal(err)
	}
	journal, err := e.svc.ListJournalEntries(e.ctx, e.acct, billing.JournalFilter{SourceID: id}, billing.ListParams{})
	if err != nil {
		t.Fatal(err)
	}
	return jsonOf(t, []any{inv, lines, groups, journal})
}

// invoiceLines are the invoice's line and group operations of the state
// table.
var invoiceLines = docLines{
	createLine: func(e *docEnv, id string) error {
		return errOf(e.svc.CreateInvoiceLineItem(e.ctx, e.acct, id, invLine("more", "1", "10", "0")))
	},
	updateLine: func(e *docEnv, id, lineID string) error {
		return errOf(e.svc.UpdateInvoiceLineItem(e.ctx, e.acct, id, lineID, invLine("changed", "1", "10", "0")))
	},
	deleteLine: func(e *docEnv, id, lineID string) error {
		return e.svc.DeleteInvoiceLineItem(e.ctx, e.acct, id, lineID)
	},
	createGroup: func(e *docEnv, id string) error {
		return errOf(e.svc.CreateInvoiceLineItemGroup(e.ctx, e.acct, id, billing.InvoiceLineItemGroupParams{Title: "g"}))
	},
	updateGroup: func(e *docEnv, id, groupID string) error {
		return errOf(e.svc.UpdateInvoiceLineItemGroup(e.ctx, e.acct, id, groupID, billing.InvoiceLineItemGroupParams{Title: "h"}))
	},
	deleteGroup: func(e *docEnv, id, groupID string) error {
		return e.svc.DeleteInvoiceLineItemGroup(e.ctx, e.acct, id, groupID)
	},
}

// Long on purpose: a state table: one row per operation, read as one table against every state.
func TestInvoiceStateTable(t *testing.T) {
	t.Parallel()
	status := func(i *billing.Invoice) billing.DocumentStatus { return i.Status }
	sameStatus := sameStatusOf(status)
	journalLen := func(t *testing.T, e *docEnv, id string) int {
		p, err := e.svc.ListJournalEntries(e.ctx, e.acct, billing.JournalFilter{SourceID: id}, billing.ListParams{})
		if err != nil {
			t.Fatal(err)
		}
		return len(p.Items)
	}
	ops := []stateOp[*billing.Invoice]{
		{"Update", editable, func(e *docEnv, id, _, _ string) error {
			_, err := e.svc.UpdateInvoice(e.ctx, e.acct, id, billing.InvoiceUpdateParams{Memo: "new memo"})
			return err
		}, func(t *testing.T, e *docEnv, b, a *billing.Invoice) {
			sameStatus(t, e, b, a)
			if a.Memo != "new memo" {
				t.Errorf("memo %q", a.Memo)
			}
		}},
		{"Delete", editable, func(e *docEnv, id, _, _ string) error { return e.svc.DeleteInvoice(e.ctx, e.acct, id) },
			func(t *testing.T, e *docEnv, b, a *billing.Invoice) {
				if a != nil {
					t.Errorf("invoice still there: %s", a.Status)
				}
			}},
		{"Draft", []billing.DocumentStatus{ip}, transition((*billing.Service).DraftInvoice), func(t *testing.T, _ *docEnv, _, a *billing.Invoice) {
			if a.Status != dr {
				t.Errorf("status %s", a.Status)
			}
		}},
		{"Finalize", editable, transition((*billing.Service).FinalizeInvoice), func(t *testing.T, e *docEnv, _, a *billing.Invoice) {
			if a.Status != fi || a.InvoiceNumber != "INV00001" || a.MerchantDetails == nil || a.IssueDate.String() != "2024-07-30" ||
				a.DueDate.String() != "2024-08-29" || journalLen(t, e, a.ID) != 3 {
				t.Errorf("finalized: %s", jsonOf(t, a))
			}
		}},
		{"Send", []billing.DocumentStatus{ip, dr, fi}, transition((*billing.Service).SendInvoice), func(t *testing.T, e *docEnv, _, a *billing.Invoice) {
			if a.Status != se || a.InvoiceNumber != "INV00001" || journalLen(t, e, a.ID) != 3 {
				t.Errorf("sent: %s", jsonOf(t, a))
			}
		}},
		{"ApplyCredits", []billing.DocumentStatus{ip, dr, fi, se}, func(e *docEnv, id, _, _ string) error {
			e.grant(billing.CreditGrantParams{Name: "Promo", Currency: billing.CurrencyGBP, Amount: dec("20.00")})
			_, err := e.svc.ApplyCredits(e.ctx, e.acct, id)
			return err
		}, func(t *testing.T, e *docEnv, b, a *billing.Invoice) {
			// A draft stays a draft, its free credit a discount before tax
			// (100.00 at 20% less 20.00); an issued invoice's lines never
			// change, so free credit is not applied to it.
			sameStatus(t, e, b, a)
			lines, applied := e.burndown(a.ID)
			want := [...]string{"[Credit applied: Promo:-24.00]", "24.00", "96.00"}
			if b.Status == fi || b.Status == se {
				want = [...]string{"[]", "0", b.GrossTotal.String()}
			}
			if fmt.Sprint(lines) != want[0] || applied.String() != want[1] || a.GrossTotal.String() != want[2] ||
				a.AmountDue.String() != want[2] || a.InvoiceNumber != b.InvoiceNumber || journalLen(t, e, a.ID) != journalLen(t, e, b.ID) {
				t.Errorf("applied: %v %s", lines, jsonOf(t, a))
			}
		}},
		{"PatchSent", []billing.DocumentStatus{se}, func(e *docEnv, id, _, _ string) error {
			_, err := e.svc.PatchSentInvoice(e.ctx, e.acct, id, billing.PatchSentInvoiceParams{
				PurchaseOrderNumber: billing.Some("PO-9"), DueDate: billing.Some(billing.Date{Year: 2024, Month: 9, Day: 30}),
			})
			return err
		}, func(t *testing.T, e *docEnv, b, a *billing.Invoice) {
			sameStatus(t, e, b, a)
			if a.PurchaseOrderNumber != "PO-9" || a.DueDate.String() != "2024-09-30" || a.InvoiceNumber != b.InvoiceNumber {
				t.Errorf("patched: %s", jsonOf(t, a))
			}
		}},
		{"Void", []billing.DocumentStatus{ip, dr, fi, se}, transition((*billing.Service).VoidInvoice), func(t *testing.T, e *docEnv, b, a *billing.Invoice) {
			want := 0
			if b.Status == fi || b.Status == se {
				want = 6
			}
			if a.Status != vo || journalLen(t, e, a.ID) != want {
				t.Errorf("voided from %s: %s, %d journal entries, want %d", b.Status, a.Status, journalLen(t, e, a.ID), want)
			}
		}},
		{"RecordPayment", []billing.DocumentStatus{fi, se}, func(e *docEnv, id, _, _ string) error {
			_, err := e.svc.RecordPayment(e.ctx, e.acct, id, billing.PaymentParams{Amount: dec("20"), PaidAt: &billing.Date{Year: 2024, Month: 7, Day: 30}})
			return err
		}, func(t *testing.T, e *docEnv, b, a *billing.Invoice) {
			sameStatus(t, e, b, a)
			if a.AmountDue.String() != "100.00" || a.PaymentStatus != billing.PaymentStatusPartiallyPaid {
				t.Errorf("after payment: due %s, %s", a.AmountDue, a.PaymentStatus)
			}
		}},
		{"SetPaymentStatus", []billing.DocumentStatus{fi, se}, func(e *docEnv, id, _, _ string) error {
			_, err := e.svc.SetPaymentStatus(e.ctx, e.acct, id, billing.PaymentStatusUncollectible)
			return err
		}, func(t *testing.T, e *docEnv, b, a *billing.Invoice) {
			sameStatus(t, e, b, a)
			if a.PaymentStatus != billing.PaymentStatusUncollectible {
				t.Errorf("paymentStatus %s", a.PaymentStatus)
			}
		}},
	}
	ops = append(ops, lineOps(invoiceLines, status, func(i *billing.Invoice) billing.Decimal { return i.GrossTotal }, "130.00", "10.00")...)
	stateTable[*billing.Invoice]{
		ops: ops,
		inState: func(t *testing.T, e *docEnv, st billing.DocumentStatus) docFixture[*billing.Invoice] {
			inv, lineID, groupID := invoiceInState(t, e, st)
			return docFixture[*billing.Invoice]{inv, inv.ID, lineID, groupID}
		},
		snapshot: func(t *testing.T, e *docEnv, inv *billing.Invoice) string { return invoiceSnapshot(t, e, inv.ID) },
		reload: func(_ *testing.T, e *docEnv, inv *billing.Invoice) *billing.Invoice {
			after, _ := e.svc.GetInvoice(e.ctx, e.acct, inv.ID) // nil once deleted
			return after
		},
	}.run(t)
}

// Long on purpose: short subtests of one rule group that share the group's set-up.
func TestInvoiceRules(t *testing.T) {
	t.Parallel()
	parallelOn(t, "ErrEngineInvoiceNotDeletable", newDocEnv, func(t *testing.T, e *docEnv) {
		// An engine-created invoice (calculatedAt set) through the export
		// of the engine entry point.
		inv := billing.CreateEngineInvoiceForTest(t, e.svc, e.acct, billing.InvoiceParams{Currency: billing.CurrencyGBP, CustomerID: e.cust.ID},
			[]billing.InvoiceLineItemParams{invLine("Fee", "1", "10", "0.2")})
		if inv.CalculatedAt == nil || inv.GrossTotal.String() != "12.00" {
			t.Fatalf("engine invoice %s", jsonOf(t, inv))
		}
		if err := e.svc.DeleteInvoice(e.ctx, e.acct, inv.ID); billing.CodeOf(err) != billing.CodeInvalidState {
			t.Fatalf("delete: %v, want invalid_state", err)
		}
		if _, err := e.svc.VoidInvoice(e.ctx, e.acct, inv.ID); err != nil {
			t.Fatalf("void: %v", err)
		}
	})
	parallelOn(t, "ErrArchivedCustomer", newDocEnv, func(t *testing.T, e *docEnv) {
		inv := e.finalInvoice("1", "10", "0")
		if _, err := e.svc.ArchiveCustomer(e.ctx, e.acct, e.cust.ID); err != nil {
			t.Fatal(err)
		}
		_, err := e.svc.CreateInvoice(e.ctx, e.acct, billing.InvoiceParams{Currency: billing.CurrencyGBP, CustomerID: e.cust.ID})
		if billing.CodeOf(err) != billing.CodeInvalidState {
			t.Errorf("invoice for an archived customer: %v", err)
		}
		// A customer who has left may still be owed a refund.
		if _, err := e.svc.CreateCreditNote(e.ctx, e.acct, billing.CreditNoteParams{Currency: billing.CurrencyGBP, CustomerID: e.cust.ID, InvoiceID: inv.ID}); err != nil {
			t.Errorf("credit note for an archived customer: %v", err)
		}
		got, err := e.svc.GetInvoice(e.ctx, e.acct, inv.ID)
		if err != nil || !got.IsCustomerArchived {
			t.Errorf("invoice after archiving its customer: isCustomerArchived %v, err %v; want true", got != nil && got.IsCustomerArchived, err)
		}
	})
	parallelOn(t, "ErrPatchSentNullDueDate", newDocEnv, func(t *testing.T, e *docEnv) {
		inv, _, _ := invoiceInState(t, e, billing.StatusSent)
		_, err := e.svc.PatchSentInvoice(e.ctx, e.acct, inv.ID, billing.PatchSentInvoiceParams{DueDate: billing.Null[billing.Date](), Memo: billing.Null[string]()})
		if diff := cmp.Diff([]string{"dueDate"}, errFields(t, err, billing.CodeValidationFailed)); diff != "" {
			t.Error(diff)
		}
	})
	parallelOn(t, "ErrLineValidationAllFields", newDocEnv, func(t *testing.T, e *docEnv) {
		inv := e.invoice(billing.CurrencyGBP, "")
		_, err := e.svc.CreateInvoiceLineItem(e.ctx, e.acct, inv.ID, billing.InvoiceLineItemParams{
			TaxRate: dec("1.5"), GroupID: "nope", PriceID: "nope", RateDisplay: "X",
		})
		want := []string{"title", "quantity", "rate", "taxRate", "externalIds", "rateDisplay", "groupId", "priceId"}
		if diff := cmp.Diff(want, errFields(t, err, billing.CodeValidationFailed)); diff != "" {
			t.Error(diff)
		}
	})
	parallelOn(t, "ErrGroupWithLinesNotDeletable", newDocEnv, func(t *testing.T, e *docEnv) {
		inv := e.invoice(billing.CurrencyGBP, "")
		g, err := e.svc.CreateInvoiceLineItemGroup(e.ctx, e.acct, inv.ID, billing.InvoiceLineItemGroupParams{Title: "g"})
		if err != nil {
			t.Fatal(err)
		}
		p := invLine("x", "1", "1", "0")
		p.GroupID = g.ID
		e.line(inv.ID, p)
		if err := e.svc.DeleteInvoiceLineItemGroup(e.ctx, e.acct, inv.ID, g.ID); billing.CodeOf(err) != billing.CodeInvalidState {
			t.Fatalf("delete group: %v, want invalid_state", err)
		}
	})
	parallelOn(t, "ErrPaymentAboveDue", newDocEnv, func(t *testing.T, e *docEnv) {
		inv := e.finalInvoice("1", "100", "0")
		_, err := e.svc.RecordPayment(e.ctx, e.acct, inv.ID, billing.PaymentParams{Amount: dec("100.01"), PaidAt: &billing.Date{Year: 2024, Month: 7, Day: 30}})
		if billing.CodeOf(err) != billing.CodeInvalidState {
			t.Fatalf("payment: %v", err)
		}
		if _, err := e.svc.RecordPayment(e.ctx, e.acct, inv.ID, billing.PaymentParams{Amount: dec("100"), PaidAt: &billing.Date{Year: 2024, Month: 7, Day: 30}}); err != nil {
			t.Fatal(err)
		}
		if got := e.getInvoice(inv.ID); got.PaymentStatus != billing.PaymentStatusPaid || got.AmountDue.String() != "0.00" {
			t.Errorf("after full payment: %s %s", got.PaymentStatus, got.AmountDue)
		}
		if _, err := e.svc.VoidInvoice(e.ctx, e.acct, inv.ID); billing.CodeOf(err) != billing.CodeInvalidState {
			t.Errorf("void of a PAID invoice: %v", err)
		}
	})
}

// TestSendInvoiceConcurrently sends one invoice from 50 goroutines: exactly
// one send wins, the others find it SENT.
func TestSendInvoiceConcurrently(t *testing.T) {
	t.Parallel()
	e := newDocEnv(t, billingtest.WithBolt())
	inv := e.invoice(billing.CurrencyGBP, "")
	e.line(inv.ID, invLine("x", "1", "10", "0.2"))
	var wg sync.WaitGroup
	errs := make([]error, 50)
	for i := range errs {
		wg.Go(func() { _, errs[i] = e.svc.SendInvoice(e.ctx, e.acct, inv.ID) })
	}
	wg.Wait()
	ok, refused := 0, 0
	for _, err := range errs {
		switch billing.CodeOf(err) {
		case "":
			ok++
		case billing.CodeInvalidState:
			refused++
		default:
			t.Errorf("unexpected error %v", err)
		}
	}
	if ok != 1 || refused != 49 {
		t.Errorf("%d sends succeeded and %d were refused, want 1 and 49", ok, refused)
	}
	if got := e.getInvoice(inv.ID); got.Status != billing.StatusSent || got.InvoiceNumber != "INV00001" {
		t.Errorf("invoice %s %s", got.Status, got.InvoiceNumber)
	}
}

// TestFinalizeNumbersConcurrently finalizes invoices and credit notes in
// parallel: their numbers are unique and gapless per kind.
//
// Long on purpose: the set-up, the concurrent run and the checks of its outcome belong together.
func TestFinalizeNumbersConcurrently(t *testing.T) {
	t.Parallel()
	e := newDocEnv(t, billingtest.WithBolt())
	const n = 20
	big := e.finalInvoice("1", "100000", "0") // INV00001
	var invIDs, cnIDs []string
	for range n {
		inv := e.invoice(billing.CurrencyGBP, "")
		e.line(inv.ID, invLine("x", "1", "1", "0"))
		invIDs = append(invIDs, inv.ID)
		cnIDs = append(cnIDs, e.creditNote(big, "1", "1", "0").ID)
	}
	// A credit note without lines: its finalization fails and burns nothing.
	empty := e.creditNote(big, "", "", "")
	var wg sync.WaitGroup
	var mu sync.Mutex
	numbers := map[string]bool{}
	// number runs one finalization in a goroutine and records the number it
	// gave.
	number := func(finalize func() (string, error)) {
		wg.Go(func() {
			num, err := finalize()
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			numbers[num] = true
			mu.Unlock()
		})
	}
	for i := range n {
		number(func() (string, error) {
			inv, err := e.svc.FinalizeInvoice(e.ctx, e.acct, invIDs[i])
			if err != nil {
				return "", err
			}
			return inv.InvoiceNumber, nil
		})
		number(func() (string, error) {
			cn, err := e.svc.MarkCreditNoteSent(e.ctx, e.acct, cnIDs[i])
			if err != nil {
				return "", err
			}
			return cn.CreditNoteNumber, nil
		})
		wg.Go(func() {
			if _, err := e.svc.FinalizeCreditNote(e.ctx, e.acct, empty.ID); billing.CodeOf(err) != billing.CodeInvalidState {
				t.Errorf("finalizing a credit note without lines: %v", err)
			}
		})
	}
	wg.Wait()
	for i := 2; i <= n+1; i++ {
		if !numbers[fmt.Sprintf("INV%05d", i)] {
			t.Errorf("INV%05d missing", i)
		}
	}
	for i := 1; i <= n; i++ {
		if !numbers[fmt.Sprintf("CN%05d", i)] {
			t.Errorf("CN%05d missing", i)
		}
	}
	if len(numbers) != 2*n {
		t.Errorf("%d numbers, want %d: %v", len(numbers), 2*n, numbers)
	}
	// The next credit note gets the next number: nothing was burned.
	next := e.creditNote(big, "1", "1", "0")
	cn, err := e.svc.FinalizeCreditNote(e.ctx, e.acct, next.ID)
	if err != nil || cn.CreditNoteNumber != fmt.Sprintf("CN%05d", n+1) {
		t.Errorf("next credit note: %v %v", cn, err)
	}
}
