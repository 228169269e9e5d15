package billing_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
	"github.com/google/go-cmp/cmp"
)

// docEnv is a Service with an account and a customer with an address and a
// billing contact, for document tests.
type docEnv struct {
	t     testing.TB
	ctx   context.Context
	svc   *billing.Service
	clock *billingtest.Clock
	acct  string
	cust  *billing.Customer
}

func newDocEnv(t testing.TB, opts ...billingtest.Option) *docEnv {
	t.Helper()
	svc, clock := billingtest.NewService(t, opts...)
	acct := billingtest.Account(t, svc, "acme")
	cust, err := svc.CreateCustomer(context.Background(), acct, billing.CustomerParams{
		LegalName: "Globex Ltd",
		Address:   &billing.Address{Line1: "1 High St", Town: "London", Postcode: "N1 1AA", Country: "GB"},
		Contacts:  []billing.Contact{{Name: "Ann", Email: "ann@globex.test", BillingPreference: billing.BillingPreferencePrimary}},
	})
	if err != nil {
		t.Fatalf("CreateCustomer: %v", err)
	}
	return &docEnv{t: t, ctx: context.Background(), svc: svc, clock: clock, acct: acct, cust: cust}
}

func invLine(title, q, r, tax string) billing.InvoiceLineItemParams {
	return billing.InvoiceLineItemParams{Title: title, Quantity: dec(q), Rate: dec(r), TaxRate: dec(tax), ExternalIDs: []billing.KeyValue{}}
}

func cnLine(cnID, title, q, r, tax string) billing.CreateCreditNoteLineItemParams {
	return billing.CreateCreditNoteLineItemParams{CreditNoteID: cnID, CreditNoteLineItemParams: billing.CreditNoteLineItemParams{
		Title: title, Quantity: dec(q), Rate: dec(r), TaxRate: dec(tax), ExternalIDs: []billing.KeyValue{},
	}}
}

func (e *docEnv) invoice(cur billing.Currency, status billing.DocumentStatus) *billing.Invoice {
	e.t.Helper()
	return must(e.svc.CreateInvoice(e.ctx, e.acct, billing.InvoiceParams{Currency: cur, CustomerID: e.cust.ID, Status: status})).of(e.t, "CreateInvoice")
}

func (e *docEnv) line(invID string, p billing.InvoiceLineItemParams) *billing.InvoiceLineItem {
	e.t.Helper()
	return must(e.svc.CreateInvoiceLineItem(e.ctx, e.acct, invID, p)).of(e.t, "CreateInvoiceLineItem")
}

func (e *docEnv) getInvoice(id string) *billing.Invoice {
	e.t.Helper()
	return must(e.svc.GetInvoice(e.ctx, e.acct, id)).of(e.t, "GetInvoice")
}

// finalInvoice returns a FINAL invoice of one line: quantity × rate at taxRate.
func (e *docEnv) finalInvoice(q, r, tax string) *billing.Invoice {
	e.t.Helper()
	inv := e.invoice(billing.CurrencyGBP, "")
	e.line(inv.ID, invLine("Service", q, r, tax))
	return must(e.svc.FinalizeInvoice(e.ctx, e.acct, inv.ID)).of(e.t, "FinalizeInvoice")
}

// crediting creates a credit note of inv (its currency and customer).
func (e *docEnv) crediting(inv *billing.Invoice) (*billing.CreditNote, error) {
	return e.svc.CreateCreditNote(e.ctx, e.acct, billing.CreditNoteParams{Currency: inv.Currency, CustomerID: inv.CustomerID, InvoiceID: inv.ID})
}

// creditNote creates a DRAFT credit note of inv with one line.
func (e *docEnv) creditNote(inv *billing.Invoice, q, r, tax string) *billing.CreditNote {
	e.t.Helper()
	cn, err := e.crediting(inv)
	if err != nil {
		e.t.Fatalf("CreateCreditNote: %v", err)
	}
	if q != "" {
		if _, err := e.svc.CreateCreditNoteLineItem(e.ctx, e.acct, cn.ID, cnLine(cn.ID, "Refund", q, r, tax)); err != nil {
			e.t.Fatalf("CreateCreditNoteLineItem: %v", err)
		}
	}
	return cn
}

func jsonOf(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func totalsOf(t billing.Totals) [3]string {
	return [3]string{t.NetTotal.String(), t.TotalTax.String(), t.GrossTotal.String()}
}

func TestLineTotals(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		cur      billing.Currency
		rounding billing.Rounding
		q, r, tx string
		want     [3]string
	}{
		{"DesignGBP", billing.CurrencyGBP, billing.RoundHalfUp, "3", "0.335", "0.2", [3]string{"1.01", "0.20", "1.21"}},
		{"DesignJPY", billing.CurrencyJPY, billing.RoundHalfUp, "1", "1000.5", "0.1", [3]string{"1001", "100", "1101"}},
		{"TieHalfUp", billing.CurrencyUSD, billing.RoundHalfUp, "1", "0.005", "0", [3]string{"0.01", "0.00", "0.01"}},
		{"TieHalfUpNegative", billing.CurrencyUSD, billing.RoundHalfUp, "-1", "0.005", "0.5", [3]string{"-0.01", "-0.01", "-0.02"}},
		{"TieHalfEvenDown", billing.CurrencyUSD, billing.RoundHalfEven, "1", "0.005", "0", [3]string{"0.00", "0.00", "0.00"}},
		{"TieHalfEvenUp", billing.CurrencyUSD, billing.RoundHalfEven, "1", "0.015", "0", [3]string{"0.02", "0.00", "0.02"}},
		{"TaxRoundsOnRoundedNet", billing.CurrencyEUR, billing.RoundHalfUp, "1", "0.125", "0.2", [3]string{"0.13", "0.03", "0.16"}},
		{"JPYTax", billing.CurrencyJPY, billing.RoundHalfUp, "3", "333", "0.08", [3]string{"999", "80", "1079"}},
		{"Zero", billing.CurrencyGBP, billing.RoundHalfUp, "0", "12.5", "0.2", [3]string{"0.00", "0.00", "0.00"}},
		{"Percentage12Digits", billing.CurrencyGBP, billing.RoundHalfUp, "1234.5678", "0.000000000001", "1", [3]string{"0.00", "0.00", "0.00"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newDocEnv(t, billingtest.WithConfig(billing.Config{Rounding: tc.rounding}))
			inv := e.invoice(tc.cur, "")
			l := e.line(inv.ID, invLine("x", tc.q, tc.r, tc.tx))
			if diff := cmp.Diff(tc.want, totalsOf(l.Totals)); diff != "" {
				t.Errorf("line totals (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.want, totalsOf(e.getInvoice(inv.ID).Totals)); diff != "" {
				t.Errorf("invoice totals (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDocumentTotalsAreSumsOfLines(t *testing.T) {
	t.Parallel()
	parallelOn(t, "NoLines", newDocEnv, func(t *testing.T, e *docEnv) {
		for cur, want := range map[billing.Currency]string{billing.CurrencyGBP: "0.00", billing.CurrencyJPY: "0"} {
			inv := e.invoice(cur, "")
			if diff := cmp.Diff([3]string{want, want, want}, totalsOf(inv.Totals)); diff != "" {
				t.Errorf("%s: %s", cur, diff)
			}
		}
	})
	parallelOn(t, "ManyLinesSumExactly", newDocEnv, func(t *testing.T, e *docEnv) {
		inv := e.invoice(billing.CurrencyGBP, "")
		for i := range 100 {
			e.line(inv.ID, invLine(fmt.Sprint("line ", i), "1", "0.335", "0.2")) // 0.34 + 0.07
		}
		if diff := cmp.Diff([3]string{"34.00", "7.00", "41.00"}, totalsOf(e.getInvoice(inv.ID).Totals)); diff != "" {
			t.Error(diff)
		}
	})
	parallelOn(t, "NegativeLines", newDocEnv, func(t *testing.T, e *docEnv) {
		inv := e.invoice(billing.CurrencyGBP, "")
		e.line(inv.ID, invLine("fee", "1", "100", "0.2"))
		e.line(inv.ID, invLine("discount", "1", "-12.345", "0.2"))
		if diff := cmp.Diff([3]string{"87.65", "17.53", "105.18"}, totalsOf(e.getInvoice(inv.ID).Totals)); diff != "" {
			t.Error(diff)
		}
	})
}

// TestTotalsProperty adds many random lines in random groups, updates and
// deletes some, and checks every line, group and document total against an
// independent computation.
func TestTotalsProperty(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(20240730, 1))
	e := newDocEnv(t)
	for _, cur := range []billing.Currency{billing.CurrencyGBP, billing.CurrencyJPY} {
		inv := e.invoice(cur, "")
		var groups []string
		for i := range 3 {
			g, err := e.svc.CreateInvoiceLineItemGroup(e.ctx, e.acct, inv.ID, billing.InvoiceLineItemGroupParams{Title: fmt.Sprint("g", i)})
			if err != nil {
				t.Fatal(err)
			}
			groups = append(groups, g.ID)
		}
		randDec := func(maxInt, places int, neg bool) string {
			s := fmt.Sprintf("%d", rng.IntN(maxInt))
			if places > 0 {
				s += "." + fmt.Sprintf("%0*d", places, rng.IntN(pow10(places)))
			}
			if neg && rng.IntN(5) == 0 {
				s = "-" + s
			}
			return s
		}
		var ids []string
		for range 80 {
			p := invLine("x", randDec(1000, rng.IntN(4), false), randDec(10000, rng.IntN(6), true), "0."+fmt.Sprintf("%03d", rng.IntN(1000)))
			if k := rng.IntN(4); k < 3 {
				p.GroupID = groups[k]
			}
			ids = append(ids, e.line(inv.ID, p).ID)
		}
		for i := 0; i < 10; i++ {
			id := ids[rng.IntN(len(ids))]
			if _, err := e.svc.UpdateInvoiceLineItem(e.ctx, e.acct, inv.ID, id, invLine("y", randDec(50, 2, false), randDec(500, 3, true), "0.2")); err != nil {
				t.Fatal(err)
			}
		}
		if err := e.svc.DeleteInvoiceLineItem(e.ctx, e.acct, inv.ID, ids[0]); err != nil {
			t.Fatal(err)
		}
		checkDocumentTotals(t, e, inv.ID, cur)
	}
}

func pow10(n int) int {
	p := 1
	for range n {
		p *= 10
	}
	return p
}

func checkDocumentTotals(t *testing.T, e *docEnv, invID string, cur billing.Currency) {
	t.Helper()
	lines := allInvoiceLines(t, e, invID)
	zero := cur.Zero()
	sum := func(m map[string][3]billing.Decimal, k string, l billing.InvoiceLineItem) {
		s, ok := m[k]
		if !ok {
			s = [3]billing.Decimal{zero, zero, zero}
		}
		m[k] = [3]billing.Decimal{s[0].Add(l.NetTotal), s[1].Add(l.TotalTax), s[2].Add(l.GrossTotal)}
	}
	sums := map[string][3]billing.Decimal{}
	for _, l := range lines {
		net := cur.Round(l.Quantity.Mul(l.Rate), billing.RoundHalfUp)
		tax := cur.Round(net.Mul(l.TaxRate), billing.RoundHalfUp)
		if got, want := totalsOf(l.Totals), [3]string{net.String(), tax.String(), net.Add(tax).String()}; got != want {
			t.Errorf("line %d: totals %v, want %v", l.Index, got, want)
		}
		sum(sums, "", l)
		if l.GroupID != "" {
			sum(sums, l.GroupID, l)
		}
	}
	want := func(k string) [3]string {
		s, ok := sums[k]
		if !ok {
			return [3]string{zero.String(), zero.String(), zero.String()}
		}
		return [3]string{s[0].String(), s[1].String(), s[2].String()}
	}
	if diff := cmp.Diff(want(""), totalsOf(e.getInvoice(invID).Totals)); diff != "" {
		t.Errorf("document totals (-want +got):\n%s", diff)
	}
	groups, err := e.svc.ListInvoiceLineItemGroups(e.ctx, e.acct, invID, billing.LineItemFilter{}, billing.ListParams{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range groups.Items {
		if diff := cmp.Diff(want(g.ID), totalsOf(g.Totals)); diff != "" {
			t.Errorf("group %s totals (-want +got):\n%s", g.Title, diff)
		}
		if g.GrossTotal.Cmp(g.NetTotal.Add(g.TotalTax)) != 0 {
			t.Errorf("group %s: gross != net + tax", g.Title)
		}
	}
}

// allInvoiceLines pages through an invoice's lines, checking index order.
func allInvoiceLines(t *testing.T, e *docEnv, invID string) []billing.InvoiceLineItem {
	t.Helper()
	out := pages(t, func(p billing.ListParams) (billing.Page[billing.InvoiceLineItem], error) {
		p.Limit = 7
		return e.svc.ListInvoiceLineItems(e.ctx, e.acct, invID, billing.LineItemFilter{}, p)
	})
	for i := 1; i < len(out); i++ {
		if out[i].Index <= out[i-1].Index {
			t.Fatalf("lines out of index order: %d after %d", out[i].Index, out[i-1].Index)
		}
	}
	return out
}

func TestInvoiceAlwaysFields(t *testing.T) {
	t.Parallel()
	e := newDocEnv(t)
	inv := e.invoice(billing.CurrencyGBP, "")
	var m map[string]any
	if err := json.Unmarshal([]byte(jsonOf(t, inv)), &m); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"id", "serviceAccountId", "status", "currency", "customerEmails", "customerBillingAddress",
		"customerShippingAddress", "customerId", "totalTax", "netTotal", "grossTotal", "metadata", "paymentStatus", "createdAt",
		"updatedAt", "creditNoteIds", "linkedServices", "accountingDate", "renderSettings", "isCustomerArchived"} {
		if _, ok := m[f]; !ok {
			t.Errorf("field %s missing from %v", f, m)
		}
	}
	want := `{"paymentLinkDisplay":"HIDE_PAYMENT_LINK"}`
	if got := jsonOf(t, m["renderSettings"]); got != want {
		t.Errorf("renderSettings %s, want %s", got, want)
	}
	if got := jsonOf(t, m["customerEmails"]); got != `["ann@globex.test"]` {
		t.Errorf("customerEmails %s, copied from the customer's billing contacts", got)
	}
	if inv.AccountingDate.String() != "2024-07-30" || inv.PaymentStatus != billing.PaymentStatusUnpaid {
		t.Errorf("accountingDate %s paymentStatus %s", inv.AccountingDate, inv.PaymentStatus)
	}
	if jsonOf(t, m["metadata"]) != "[]" || jsonOf(t, m["creditNoteIds"]) != "[]" || jsonOf(t, m["linkedServices"]) != "[]" {
		t.Errorf("empty lists not []: %v", m)
	}
}

// TestJournalBalances runs documents and payments through their life and
// checks that, for every source, the debits equal the credits, and that a
// voided document's entries cancel out.
//
// Long on purpose: a table of cases, one line each; its length is the cases, not logic.
func TestJournalBalances(t *testing.T) {
	t.Parallel()
	e := newDocEnv(t)
	inv := e.finalInvoice("3", "33.335", "0.175")
	pay, err := e.svc.RecordPayment(e.ctx, e.acct, inv.ID, billing.PaymentParams{Amount: dec("10.01"), PaidAt: &billing.Date{Year: 2024, Month: 7, Day: 30}})
	if err != nil {
		t.Fatal(err)
	}
	cn := e.creditNote(inv, "1", "-0.5", "0.2") // a negative credit note line
	if _, err := e.svc.CreateCreditNoteLineItem(e.ctx, e.acct, cn.ID, cnLine(cn.ID, "Refund", "1", "1.5", "0.2")); err != nil {
		t.Fatal(err) // a document's gross total must not be negative to be finalized
	}
	e.line(e.invoice(billing.CurrencyGBP, "").ID, invLine("unused", "1", "1", "0"))
	cn2 := e.creditNote(inv, "2", "5.005", "0.2")
	for _, id := range []string{cn.ID, cn2.ID} {
		if _, err := e.svc.FinalizeCreditNote(e.ctx, e.acct, id); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.svc.VoidCreditNote(e.ctx, e.acct, cn2.ID); err != nil {
		t.Fatal(err)
	}
	neg := e.invoice(billing.CurrencyGBP, "") // a negative line on a positive invoice
	e.line(neg.ID, invLine("Service", "1", "30", "0.2"))
	e.line(neg.ID, invLine("Correction", "1", "-20", "0.2"))
	if _, err := e.svc.FinalizeInvoice(e.ctx, e.acct, neg.ID); err != nil {
		t.Fatal(err)
	}
	voided := e.finalInvoice("1", "20", "0.2")
	if _, err := e.svc.VoidInvoice(e.ctx, e.acct, voided.ID); err != nil {
		t.Fatal(err)
	}
	sources := map[string]int{inv.ID: 3, pay.ID: 2, cn.ID: 3, cn2.ID: 6, neg.ID: 3, voided.ID: 6}
	for src, n := range sources {
		page, err := e.svc.ListJournalEntries(e.ctx, e.acct, billing.JournalFilter{SourceID: src}, billing.ListParams{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Items) != n {
			t.Errorf("source %s: %d entries, want %d", src, len(page.Items), n)
		}
		debit, credit := billing.MustDecimal("0"), billing.MustDecimal("0")
		for _, je := range page.Items {
			if je.Debit.Sign() < 0 || je.Credit.Sign() < 0 || (je.Debit.IsZero() == je.Credit.IsZero()) {
				t.Errorf("entry %+v: want exactly one positive side", je)
			}
			debit, credit = debit.Add(je.Debit), credit.Add(je.Credit)
		}
		if debit.Cmp(credit) != 0 || debit.IsZero() {
			t.Errorf("source %s: debits %s, credits %s", src, debit, credit)
		}
	}
	all, err := e.svc.ListJournalEntries(e.ctx, e.acct, billing.JournalFilter{}, billing.ListParams{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if all.TotalResultSize != 23 {
		t.Errorf("%d entries in all, want 23", all.TotalResultSize)
	}
	// Receivables: the invoice's gross less the payment and the live credit
	// note, plus the invoice with a negative line (30 − 20, plus 20% tax).
	ar := billing.MustDecimal("0")
	for _, je := range all.Items {
		if je.Account == billing.LedgerAccountsReceivable {
			ar = ar.Add(je.Debit).Sub(je.Credit)
		}
	}
	got := e.getInvoice(inv.ID)
	if want := got.AmountDue.Add(billing.MustDecimal("12.00")); ar.Cmp(want) != 0 {
		t.Errorf("accounts receivable %s, want %s (amountDue %s + 12.00)", ar, want, got.AmountDue)
	}
}

func TestOptionalJSON(t *testing.T) {
	t.Parallel()
	var p billing.PatchSentInvoiceParams
	if err := json.Unmarshal([]byte(`{"dueDate":null,"memo":"m","purchaseOrderNumber":null}`), &p); err != nil {
		t.Fatal(err)
	}
	got := []bool{p.DueDate.Set, p.DueDate.Null, p.Memo.Set, p.Memo.Null, p.PurchaseOrderNumber.Null, p.Reference.Set, p.CustomerBillingAddress.Set}
	if diff := cmp.Diff([]bool{true, true, true, false, true, false, false}, got); diff != "" {
		t.Errorf("presence (-want +got):\n%s", diff)
	}
	if p.Memo.Value != "m" {
		t.Errorf("memo %q", p.Memo.Value)
	}
	for _, body := range []string{
		`{"customerBillingAddress":{"line1":"a","bogus":1}}`,
		`{"dueDate":"30/07/2024"}`,
		`{"memo":12}`,
	} {
		var p billing.PatchSentInvoiceParams
		err := json.Unmarshal([]byte(body), &p)
		if billing.CodeOf(err) != billing.CodeValidationFailed {
			t.Errorf("%s: %v, want validation_failed", body, err)
		}
	}
	if got := jsonOf(t, billing.PatchSentInvoiceParams{Memo: billing.Some("x"), Reference: billing.Null[string]()}); got != `{"memo":"x","reference":null}` {
		t.Errorf("marshal: %s", got)
	}
}

// TestDocumentLineLimit: a document holds at most 1,000 line items; the
// 1,001st is refused and changes nothing.
func TestDocumentLineLimit(t *testing.T) {
	t.Parallel()
	e := newDocEnv(t)
	inv := e.engineDraft(billing.CurrencyGBP, manyLines(1000, "0.01", func(int) string { return "x" }))
	if inv.NetTotal.String() != "10.00" {
		t.Fatalf("1,000 lines of 0.01: net %s, want 10.00", inv.NetTotal)
	}
	_, err := e.svc.CreateInvoiceLineItem(e.ctx, e.acct, inv.ID, invLine("one more", "1", "1", "0"))
	if billing.CodeOf(err) != billing.CodeValidationFailed {
		t.Fatalf("line 1,001: %v, want validation_failed", err)
	}
	got, err := e.svc.GetInvoice(e.ctx, e.acct, inv.ID)
	if err != nil || got.NetTotal.String() != "10.00" {
		t.Errorf("after the refused line: net %v, err %v; want 10.00", got.NetTotal, err)
	}
}
