package billing_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
	"github.com/billingd/billing/storage/pgstore"
	"github.com/billingd/billing/storage/pgstore/pgtest"
	"github.com/jackc/pgx/v5"
)

// reportingEnv is an account on PostgreSQL with invoices in every state
// that matters to the reporting views: draft, issued, paid in part, credited,
// voided, in two currencies and three tax rates, with products.
func reportingEnv(t *testing.T) (*docEnv, *pgstore.Store) {
	t.Helper()
	store := pgtest.Open(t, nil)
	e := newDocEnv(t, billingtest.WithStore(store))
	product := must(e.svc.CreateProduct(e.ctx, e.acct, billing.CreateProductParams{Name: "Hosting"})).of(t, "CreateProduct")
	withProduct := func(p billing.InvoiceLineItemParams) billing.InvoiceLineItemParams {
		p.ProductID = product.ID
		return p
	}
	issued := func(cur billing.Currency, lines ...billing.InvoiceLineItemParams) *billing.Invoice {
		inv := e.invoice(cur, "")
		for _, l := range lines {
			e.line(inv.ID, l)
		}
		return e.finalize(inv.ID)
	}
	issued(billing.CurrencyGBP, withProduct(invLine("Hosting", "3", "33.333", "0.2")), invLine("Setup", "1", "99.99", "0"))
	paid := issued(billing.CurrencyGBP, withProduct(invLine("Hosting", "1", "120.00", "0.2")))
	must(e.svc.RecordPayment(e.ctx, e.acct, paid.ID, billing.PaymentParams{Amount: dec("50.00"), PaidAt: &paid.IssueDate, Method: "bank"})).of(t, "RecordPayment")
	credited := issued(billing.CurrencyEUR, invLine("Seats", "12.5", "8.004", "0.19"))
	cn := e.creditNote(credited, "1", "10", "0.19")
	must(e.svc.FinalizeCreditNote(e.ctx, e.acct, cn.ID)).of(t, "FinalizeCreditNote")
	voided := issued(billing.CurrencyGBP, invLine("Mistake", "1", "500.00", "0.2"))
	must(e.svc.VoidInvoice(e.ctx, e.acct, voided.ID)).of(t, "VoidInvoice")
	draft := e.invoice(billing.CurrencyGBP, "")
	e.line(draft.ID, invLine("Not yet", "2", "7.50", "0.2"))
	// Another account's invoice, which no query of e.acct may count.
	other := billingtest.Account(t, e.svc, "other")
	cust := must(e.svc.CreateCustomer(e.ctx, other, billing.CustomerParams{LegalName: "Initech"})).of(t, "CreateCustomer")
	inv := must(e.svc.CreateInvoice(e.ctx, other, billing.InvoiceParams{Currency: billing.CurrencyGBP, CustomerID: cust.ID})).of(t, "CreateInvoice")
	must(e.svc.CreateInvoiceLineItem(e.ctx, other, inv.ID, invLine("Other", "1", "1000.00", "0"))).of(t, "CreateInvoiceLineItem")
	return e, store
}

// reportingConn connects to the test database.
func reportingConn(t *testing.T) *pgx.Conn {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgtest.ConnString())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// TestReportingViews checks the reporting views against the API on a real
// PostgreSQL: the count and gross total of the invoices the API lists (the
// docs' first query), each invoice's typed columns, the other views' sums,
// that nothing can be written through a view, and that every example query
// of docs/reporting.md runs.
//
// Long on purpose: one account's records, compared view by view.
func TestReportingViews(t *testing.T) {
	e, store := reportingEnv(t)
	conn := reportingConn(t)
	ctx := context.Background()
	schema := pgx.Identifier{store.ReportingSchema()}.Sanitize()
	if !strings.HasSuffix(store.ReportingSchema(), "_reporting") {
		t.Fatalf("ReportingSchema() = %q", store.ReportingSchema())
	}
	invoices := pages(t, func(p billing.ListParams) (billing.Page[billing.Invoice], error) {
		return e.svc.ListInvoices(e.ctx, e.acct, billing.InvoiceFilter{}, p)
	})
	count, gross := 0, billing.DecimalFromInt(0)
	for _, inv := range invoices {
		if inv.Status != billing.StatusVoided {
			count++
			gross = gross.Add(inv.GrossTotal)
		}
	}
	var gotCount int
	var gotGross string
	if err := conn.QueryRow(ctx, `select count(*), sum(gross_total)::text from `+schema+`.invoices where account_id = $1 and status <> 'VOIDED'`, e.acct).Scan(&gotCount, &gotGross); err != nil {
		t.Fatal(err)
	}
	if gotCount != count || gotGross != gross.String() {
		t.Errorf("view: %d invoices, gross %s; API: %d, %s", gotCount, gotGross, count, gross)
	}

	for _, inv := range invoices {
		var status, currency, net, tax, grossTotal, due, paid, credited string
		var number, issue, dueDate *string
		err := conn.QueryRow(ctx, `select status, currency, invoice_number, issue_date::text, due_date::text,
			net_total::text, total_tax::text, gross_total::text, amount_due::text, amount_paid::text, amount_credited::text
			from `+schema+`.invoices where account_id = $1 and id = $2`, e.acct, inv.ID).
			Scan(&status, &currency, &number, &issue, &dueDate, &net, &tax, &grossTotal, &due, &paid, &credited)
		if err != nil {
			t.Fatalf("invoice %s: %v", inv.ID, err)
		}
		want := []string{string(inv.Status), string(inv.Currency), inv.InvoiceNumber, inv.IssueDate.String(), inv.DueDate.String(),
			inv.NetTotal.String(), inv.TotalTax.String(), inv.GrossTotal.String(), amountDue(inv), inv.AmountPaid.String(), inv.AmountCredited.String()}
		got := []string{status, currency, deref(number), deref(issue), deref(dueDate), net, tax, grossTotal, due, paid, credited}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("invoice %s: view %v, API %v", inv.ID, got, want)
		}
	}
	checkReportingSums(t, e, conn, schema)

	if _, err := conn.Exec(ctx, `delete from `+schema+`.invoices where account_id = $1`, e.acct); err == nil || !strings.Contains(err.Error(), "cannot delete from view") {
		t.Errorf("delete through the view: %v, want cannot delete from view", err)
	}
	for i, q := range docQueries(t) {
		rows, err := conn.Query(ctx, strings.ReplaceAll(q, "billing_reporting.", schema+"."), e.acct)
		if err == nil {
			for rows.Next() {
			}
			rows.Close()
			err = rows.Err()
		}
		if err != nil {
			t.Errorf("docs/reporting.md query %d: %v\n%s", i+1, err, q)
		}
	}
}

// amountDue is what the view must say an invoice owes: the API's amountDue
// (0 on a VOIDED invoice, which the API also says).
func amountDue(inv billing.Invoice) string {
	if inv.Status == billing.StatusVoided && !inv.AmountDue.IsZero() {
		return "API says a VOIDED invoice owes " + inv.AmountDue.String()
	}
	return inv.AmountDue.String()
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// checkReportingSums compares the sums of the lines, payments, credit notes
// and journal views with the API's lists.
func checkReportingSums(t *testing.T, e *docEnv, conn *pgx.Conn, schema string) {
	t.Helper()
	ctx := context.Background()
	sum := func(q string) string {
		t.Helper()
		var s *string
		if err := conn.QueryRow(ctx, q, e.acct).Scan(&s); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return deref(s)
	}
	lines, payments, debits := billing.DecimalFromInt(0), billing.DecimalFromInt(0), billing.DecimalFromInt(0)
	for _, inv := range pages(t, func(p billing.ListParams) (billing.Page[billing.Invoice], error) {
		return e.svc.ListInvoices(e.ctx, e.acct, billing.InvoiceFilter{}, p)
	}) {
		for _, l := range allInvoiceLines(t, e, inv.ID) {
			lines = lines.Add(l.TotalTax)
		}
		for _, p := range pages(t, func(p billing.ListParams) (billing.Page[billing.Payment], error) {
			return e.svc.ListPayments(e.ctx, e.acct, inv.ID, "", p)
		}) {
			payments = payments.Add(p.Amount)
		}
	}
	journal := pages(t, func(p billing.ListParams) (billing.Page[billing.JournalEntry], error) {
		return e.svc.ListJournalEntries(e.ctx, e.acct, billing.JournalFilter{}, p)
	})
	for _, j := range journal {
		debits = debits.Add(j.Debit)
	}
	cns := pages(t, func(p billing.ListParams) (billing.Page[billing.CreditNote], error) {
		return e.svc.ListCreditNotes(e.ctx, e.acct, billing.CreditNoteFilter{}, p)
	})
	if len(cns) != 1 || len(journal) == 0 || payments.IsZero() {
		t.Fatalf("set-up: %d credit notes, %d journal entries, payments %s", len(cns), len(journal), payments)
	}
	checks := []struct{ what, got, want string }{
		{"tax of the invoice lines", sum(`select sum(total_tax)::text from ` + schema + `.invoice_lines where account_id = $1`), lines.String()},
		{"payments", sum(`select sum(amount)::text from ` + schema + `.payments where account_id = $1`), payments.String()},
		{"journal debits", sum(`select sum(debit)::text from ` + schema + `.journal_entries where account_id = $1`), debits.String()},
		{"journal credits", sum(`select sum(credit)::text from ` + schema + `.journal_entries where account_id = $1`), debits.String()},
		{"credit note", sum(`select string_agg(gross_total::text || ' ' || status || ' ' || credit_note_number, ',') from ` + schema + `.credit_notes where account_id = $1`),
			cns[0].GrossTotal.String() + " " + string(cns[0].Status) + " " + cns[0].CreditNoteNumber},
		{"credit note lines", sum(`select sum(net_total)::text from ` + schema + `.credit_note_lines where account_id = $1`), cns[0].NetTotal.String()},
		{"customers", sum(`select string_agg(legal_name || ' ' || country, ',') from ` + schema + `.customers where account_id = $1`), e.cust.LegalName + " GB"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: view %q, API %q", c.what, c.got, c.want)
		}
	}
}

// docQueries returns the SQL blocks of docs/reporting.md that take the
// account id as $1.
func docQueries(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("docs/reporting.md")
	if err != nil {
		t.Fatal(err)
	}
	var qs []string
	for _, m := range regexp.MustCompile("(?s)```sql\n(.*?)```").FindAllStringSubmatch(string(b), -1) {
		if strings.Contains(m[1], "$1") {
			qs = append(qs, m[1])
		}
	}
	if len(qs) < 5 {
		t.Fatalf("docs/reporting.md has %d queries with $1, want at least 5", len(qs))
	}
	return qs
}

// TestReportingRole runs the read-only role recipe of docs/reporting.md
// and checks what the role may do: read every view, and neither read
// billingd's tables nor write through a view.
func TestReportingRole(t *testing.T) {
	e, store := reportingEnv(t)
	conn := reportingConn(t)
	ctx := context.Background()
	var b [6]byte
	_, _ = rand.Read(b[:])
	role := "billingtest_reader_" + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		ctx := context.Background()
		_, _ = conn.Exec(ctx, `reset role`)
		_, _ = conn.Exec(ctx, `drop owned by `+role)
		_, _ = conn.Exec(ctx, `drop role if exists `+role)
	})
	doc, err := os.ReadFile("docs/reporting.md")
	if err != nil {
		t.Fatal(err)
	}
	recipe := regexp.MustCompile("(?s)```sql\n(create role finance_reader.*?)```").FindSubmatch(doc)
	if recipe == nil {
		t.Fatal("docs/reporting.md has no role recipe")
	}
	sql := strings.NewReplacer("finance_reader", role, "billing_reporting", pgx.Identifier{store.ReportingSchema()}.Sanitize()).Replace(string(recipe[1]))
	if _, err := conn.Exec(ctx, sql); err != nil {
		t.Fatalf("the recipe: %v\n%s", err, sql)
	}
	if _, err := conn.Exec(ctx, `set role `+role); err != nil {
		t.Fatal(err)
	}
	schema := pgx.Identifier{store.ReportingSchema()}.Sanitize()
	for _, view := range []string{"invoices", "invoice_lines", "credit_notes", "credit_note_lines", "payments", "customers", "journal_entries", "credit_transactions"} {
		var n int
		if err := conn.QueryRow(ctx, `select count(*) from `+schema+`.`+view+` where account_id = $1`, e.acct).Scan(&n); err != nil {
			t.Errorf("the role reads %s: %v", view, err)
		}
	}
	var n int
	tables := pgx.Identifier{strings.TrimSuffix(store.ReportingSchema(), "_reporting"), "billing_kv"}.Sanitize()
	if err := conn.QueryRow(ctx, `select count(*) from `+tables).Scan(&n); err == nil || !strings.Contains(err.Error(), "permission denied") {
		t.Errorf("the role reads billing_kv: %v, want permission denied", err)
	}
	if _, err := conn.Exec(ctx, `update `+schema+`.invoices set status = 'PAID'`); err == nil {
		t.Error("the role updated through a view")
	}
}
