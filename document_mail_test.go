package billing_test

import (
	"context"
	"mime"
	"strings"
	"testing"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
	"github.com/billingd/billing/dispatch"
	"github.com/billingd/billing/internal/pdftext"
	docrender "github.com/billingd/billing/render"
	"github.com/billingd/billing/smtp"
)

// TestDocumentEmailOverSMTP: sending an invoice and a credit note e-mails
// the customer a short message (text and HTML) with the PDF attached under
// the document's number, through a real SMTP server on loopback; no JSON
// goes to the customer.
//
// Long on purpose: one real SMTP server, both documents sent through it and
// each message read in order.
func TestDocumentEmailOverSMTP(t *testing.T) {
	t.Parallel()
	e, srv, mailer := newMailEnv(t)
	ctx := context.Background()
	if _, err := e.svc.PutMerchantDetails(ctx, e.account, billing.MerchantDetails{LegalCompanyName: "Acme Widgets Ltd"}); err != nil {
		t.Fatal(err)
	}
	inv, cust := sendInvoiceTo(t, e, "Ωmega ΑΕ", "ap@omega.test", invLine("Platform fee", "3", "0.335", "0.2"))
	documents := dispatch.Config{Mailer: mailer, Documents: docrender.Renderer{}}
	e.runOnce(dispatch.New(e.svc, documents))

	msgs := srv.Messages()
	if len(msgs) != 1 || strings.Join(msgs[0].To, ",") != "ap@omega.test" {
		t.Fatalf("messages %+v, want one to ap@omega.test", msgs)
	}
	pm := billingtest.ParseMail(t, msgs[0].Data)
	subject, _ := new(mime.WordDecoder).DecodeHeader(pm.Header.Get("Subject"))
	due := "Due date: " + inv.DueDate.Time().Format("2 Jan 2006")
	if !strings.Contains(subject, "INV00001") || !strings.Contains(subject, "£1.21") {
		t.Errorf("Subject %q lacks the number or the amount due", subject)
	}
	for _, want := range []string{"Hello Ωmega ΑΕ", "INV00001", "Amount due: £1.21", due, "INV00001.pdf"} {
		if !strings.Contains(pm.Text, want) {
			t.Errorf("the text lacks %q:\n%s", want, pm.Text)
		}
	}
	if !strings.Contains(pm.HTML, "INV00001") || !strings.Contains(pm.HTML, "£1.21") {
		t.Errorf("the HTML body lacks the number or the amount due:\n%s", pm.HTML)
	}
	if len(pm.Files) != 1 || pm.Files["INV00001.pdf"] == nil {
		t.Fatalf("attachments %v, want exactly INV00001.pdf", keys(pm.Files))
	}
	text := pdftext.Text(t, pm.Files["INV00001.pdf"])
	pdftext.Contains(t, text, "INV00001", "Ωmega ΑΕ", "Platform fee")
	if !pdftext.Row(text, "Amount due", "£1.21") {
		t.Errorf("the attached PDF does not read Amount due £1.21:\n%s", text)
	}

	// A credit note of that invoice: its own PDF, the invoice it credits.
	cn, err := e.svc.CreateCreditNote(ctx, e.account, billing.CreditNoteParams{Currency: billing.CurrencyGBP, CustomerID: cust.ID, InvoiceID: inv.ID})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.CreateCreditNoteLineItem(ctx, e.account, cn.ID, cnLine(cn.ID, "Refund", "1", "0.50", "0.2")); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.SendCreditNote(ctx, e.account, cn.ID); err != nil {
		t.Fatal(err)
	}
	e.runOnce(dispatch.New(e.svc, documents))
	if msgs = srv.Messages(); len(msgs) != 2 {
		t.Fatalf("%d messages, want 2", len(msgs))
	}
	pm = billingtest.ParseMail(t, msgs[1].Data)
	if len(pm.Files) != 1 || pm.Files["CN00001.pdf"] == nil || !strings.Contains(pm.Text, "Total credited: £0.60") ||
		!strings.Contains(pm.Text, "Credits invoice: INV00001") {
		t.Fatalf("credit note e-mail: attachments %v, text:\n%s", keys(pm.Files), pm.Text)
	}
	pdftext.Contains(t, pdftext.Text(t, pm.Files["CN00001.pdf"]), "CN00001", "INV00001", "Refund", "£0.60")
	for _, dl := range e.deliveries(billing.DeliveryFilter{}) {
		if dl.Status != billing.DeliverySucceeded {
			t.Errorf("delivery %+v", dl)
		}
	}
}

// TestDocumentEmailWithoutRenderer: a Dispatcher without a
// DocumentRenderer sends the queued plain-text summary, still without JSON.
func TestDocumentEmailWithoutRenderer(t *testing.T) {
	t.Parallel()
	e, srv, mailer := newMailEnv(t)
	sendInvoiceTo(t, e, "Globex", "ap@globex.test", invLine("Fee", "1", "10", "0"))
	e.runOnce(dispatch.New(e.svc, dispatch.Config{Mailer: mailer}))
	msgs := srv.Messages()
	if len(msgs) != 1 {
		t.Fatalf("%d messages, want 1", len(msgs))
	}
	pm := billingtest.ParseMail(t, msgs[0].Data)
	if len(pm.Files) != 0 || !strings.Contains(pm.Text, "INV00001") {
		t.Errorf("attachments %v, text %q; want the summary alone", keys(pm.Files), pm.Text)
	}
}

// newMailEnv is a notification env with a real SMTP server on loopback
// and a mailer to it.
func newMailEnv(t *testing.T) (*notifyEnv, *billingtest.SMTPServer, *smtp.Mailer) {
	t.Helper()
	srv, mailer := loopbackMailer(t, smtp.Config{})
	return newNotifyEnv(t, false), srv, mailer
}

// sendInvoiceTo sends a GBP invoice of one line to a new customer whose
// billing contact is email.
func sendInvoiceTo(t *testing.T, e *notifyEnv, name, email string, line billing.InvoiceLineItemParams) (*billing.Invoice, *billing.Customer) {
	t.Helper()
	ctx := context.Background()
	cust, err := e.svc.CreateCustomer(ctx, e.account, billing.CustomerParams{LegalName: name,
		Contacts: []billing.Contact{{Name: "Ann", Email: email, BillingPreference: billing.BillingPreferencePrimary}}})
	if err != nil {
		t.Fatal(err)
	}
	inv, err := e.svc.CreateInvoice(ctx, e.account, billing.InvoiceParams{Currency: billing.CurrencyGBP, CustomerID: cust.ID})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.CreateInvoiceLineItem(ctx, e.account, inv.ID, line); err != nil {
		t.Fatal(err)
	}
	if inv, err = e.svc.SendInvoice(ctx, e.account, inv.ID); err != nil {
		t.Fatal(err)
	}
	return inv, cust
}

func keys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
