package render_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/billingd/billing"
	"github.com/billingd/billing/render"
)

// TestSummaryEmails: the plain-text summaries of a sent invoice and credit
// note, word for word, and the document each names.
func TestSummaryEmails(t *testing.T) {
	t.Parallel()
	inv := &billing.Invoice{DocumentHeader: billing.DocumentHeader{ID: "inv-1", Currency: billing.CurrencyGBP, CustomerLegalCompanyName: "Globex"},
		InvoiceNumber: "INV00007", MerchantDetails: &billing.MerchantDetails{LegalCompanyName: "Acme Ltd"}}
	inv.NetTotal, inv.TotalTax, inv.AmountDue = billing.MustDecimal("10.00"), billing.MustDecimal("2.00"), billing.MustDecimal("12.00")
	inv.IssueDate, inv.DueDate = date(t, "2024-08-01"), date(t, "2024-08-31")
	e := render.SummaryEmail(&billing.PrintableDocument{Kind: billing.DocumentInvoice, Invoice: inv})
	if want := "Invoice INV00007: 12.00 GBP due 2024-08-31"; e.Subject != want {
		t.Errorf("subject %q, want %q", e.Subject, want)
	}
	if want := "Dear Globex,\n\nplease find invoice INV00007 of 2024-08-01.\n\nNet total: 10.00 GBP\nTax: 2.00 GBP\nTotal due: 12.00 GBP\nDue date: 2024-08-31\n\nAcme Ltd\n"; e.Text != want {
		t.Errorf("text %q, want %q", e.Text, want)
	}
	if e.Document == nil || *e.Document != (billing.DocumentRef{Kind: billing.DocumentInvoice, ID: "inv-1"}) || e.JSON != nil {
		t.Errorf("document %+v, JSON %q", e.Document, e.JSON)
	}

	cn := &billing.CreditNote{DocumentHeader: billing.DocumentHeader{ID: "cn-1", Currency: billing.CurrencyGBP}, CreditNoteNumber: "CN00002", InvoiceNumber: "INV00007"}
	cn.NetTotal, cn.TotalTax, cn.GrossTotal = billing.MustDecimal("1.00"), billing.MustDecimal("0.20"), billing.MustDecimal("1.20")
	cn.IssueDate = date(t, "2024-09-02")
	e = render.SummaryEmail(&billing.PrintableDocument{Kind: billing.DocumentCreditNote, CreditNote: cn})
	if want := "Credit note CN00002: 1.20 GBP"; e.Subject != want {
		t.Errorf("subject %q, want %q", e.Subject, want)
	}
	if want := "Credit note CN00002 of 2024-09-02\n\nNet total: 1.00 GBP\nTax: 0.20 GBP\nTotal credited: 1.20 GBP\nCredits invoice INV00007\n"; e.Text != want {
		t.Errorf("text %q, want %q", e.Text, want)
	}
	if e.Document == nil || e.Document.Kind != billing.DocumentCreditNote || e.Document.ID != "cn-1" {
		t.Errorf("document %+v", e.Document)
	}
}

// TestNotificationEmail: a notification's e-mail names it and lists the
// key facts its resource has, in their order, skipping the absent ones.
func TestNotificationEmail(t *testing.T) {
	t.Parallel()
	n := &billing.Notification{ID: "n-1", Type: billing.NotificationInvoiceCreated, ServiceAccountID: "acc-1",
		CreatedAt: time.Date(2024, 8, 1, 9, 30, 0, 0, time.UTC),
		Data:      json.RawMessage(`{"status":"DRAFT","id":"inv-1","currency":"EUR","grossTotal":"12.00","memo":"","dueDate":7}`)}
	e := render.NotificationEmail(n)
	if e.Subject != "billingd: INVOICE_CREATED" {
		t.Errorf("subject %q", e.Subject)
	}
	want := "Notification INVOICE_CREATED\n\nNotification id: n-1\nAccount: acc-1\nCreated at: " + billing.FormatTimestamp(n.CreatedAt) +
		"\nResource id: inv-1\nStatus: DRAFT\nCurrency: EUR\nGross total: 12.00\n\nThe notification is attached as JSON.\n"
	if e.Text != want {
		t.Errorf("text %q, want %q", e.Text, want)
	}
}

func date(t *testing.T, s string) billing.Date {
	t.Helper()
	d, err := billing.ParseDate(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestThresholdEmail: the e-mail of a threshold notification says who
// reached what in which period.
func TestThresholdEmail(t *testing.T) {
	t.Parallel()
	c := billing.AlertCrossing{AlertID: "al-1", Kind: billing.UsageAlertSpend, CustomerID: "cu-1", Currency: "EUR",
		Threshold: billing.MustDecimal("100.00"), Value: billing.MustDecimal("100.01"),
		PeriodStart: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), PeriodEnd: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC),
		ReachedAt: time.Date(2026, 11, 20, 8, 0, 0, 0, time.UTC)}
	data, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	e := render.NotificationEmail(&billing.Notification{ID: "n-1", Type: billing.NotificationSpendThresholdReached, ServiceAccountID: "acc-1", Data: data})
	want := "The amount due in EUR by customer cu-1 reached 100.00: it is 100.01.\n\nAlert: al-1\n" +
		"Period: 2026-11-01T00:00:00Z to 2026-12-01T00:00:00Z\nReached at: 2026-11-20T08:00:00Z\nNotification id: n-1\nAccount: acc-1\n" +
		"\nThe alert notifies once per customer and period. The notification is attached as JSON.\n"
	if e.Subject != "billingd: spend threshold reached" || e.Text != want {
		t.Errorf("subject %q, text %q", e.Subject, e.Text)
	}
}
