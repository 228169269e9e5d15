package billing_test

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
	"github.com/billingd/billing/dispatch"
	"github.com/billingd/billing/einvoice"
)

// TestEmailAttachmentsFollowTheSettings sends invoices through a real
// SMTP server with einvoice.Renderer: the account's emailAttachments choose
// what a customer's e-mail carries, a customer's own choice overrides it,
// and the message names every file attached.
//
// Long on purpose: one SMTP server, two customers sent to, each message
// read in turn.
func TestEmailAttachmentsFollowTheSettings(t *testing.T) {
	t.Parallel()
	e, srv, mailer := newMailEnv(t)
	ctx := context.Background()
	if _, err := e.svc.PutMerchantDetails(ctx, e.account, billing.MerchantDetails{LegalCompanyName: "Acme Widgets Ltd", TaxID: "GB123456789",
		Address: &billing.Address{Line1: "1 Market Street", Town: "Leeds", Postcode: "LS1 1AA", Country: "GB"}}); err != nil {
		t.Fatal(err)
	}
	settings, err := e.svc.PutAccountSettings(ctx, e.account, billing.AccountSettings{
		EmailAttachments: []billing.AttachmentFormat{billing.AttachmentPDF, billing.AttachmentUBL}})
	if err != nil || !slices.Equal(settings.EmailAttachments, []billing.AttachmentFormat{"PDF", "UBL"}) {
		t.Fatalf("PutAccountSettings: %v %+v", err, settings)
	}
	if _, err := e.svc.PutAccountSettings(ctx, e.account, billing.AccountSettings{EmailAttachments: []billing.AttachmentFormat{"PDF", "PDF"}}); billing.CodeOf(err) != billing.CodeValidationFailed {
		t.Fatalf("a format named twice: %v, want validation_failed", err)
	}
	send := func(name, email string, override []billing.AttachmentFormat) {
		t.Helper()
		cust, err := e.svc.CreateCustomer(ctx, e.account, billing.CustomerParams{LegalName: name,
			Address:            &billing.Address{Line1: "22 Harbour Road", Town: "Bristol", Postcode: "BS1 5TY", Country: "GB"},
			Contacts:           []billing.Contact{{Name: "Ann", Email: email, BillingPreference: billing.BillingPreferencePrimary}},
			CustomerEInvoicing: billing.CustomerEInvoicing{EmailAttachments: override}})
		if err != nil {
			t.Fatal(err)
		}
		inv, err := e.svc.CreateInvoice(ctx, e.account, billing.InvoiceParams{Currency: billing.CurrencyGBP, CustomerID: cust.ID})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.svc.CreateInvoiceLineItem(ctx, e.account, inv.ID, invLine("Platform fee", "1", "10", "0.2")); err != nil {
			t.Fatal(err)
		}
		if _, err := e.svc.SendInvoice(ctx, e.account, inv.ID); err != nil {
			t.Fatal(err)
		}
	}
	send("Northwind Traders Ltd", "ap@northwind.test", nil)
	send("Bezirksamt Mitte", "rechnung@berlin.test", []billing.AttachmentFormat{billing.AttachmentFacturX, billing.AttachmentCII})
	e.runOnce(dispatch.New(e.svc, dispatch.Config{Mailer: mailer, Documents: einvoice.Renderer{}}))

	msgs := srv.Messages()
	if len(msgs) != 2 {
		t.Fatalf("%d messages, want 2", len(msgs))
	}
	want := map[string][]string{
		"ap@northwind.test":    {"INV00001.pdf", "INV00001-ubl.xml"},
		"rechnung@berlin.test": {"INV00002-facturx.pdf", "INV00002-cii.xml"},
	}
	for _, m := range msgs {
		to := strings.Join(m.To, ",")
		pm := billingtest.ParseMail(t, m.Data)
		files := keys(pm.Files)
		slices.Sort(files)
		names := slices.Clone(want[to])
		slices.Sort(names)
		if !slices.Equal(files, names) {
			t.Fatalf("%s got attachments %v, want %v", to, files, names)
		}
		for _, name := range want[to] {
			if !strings.Contains(pm.Text, name) {
				t.Errorf("the message to %s does not name %s:\n%s", to, name, pm.Text)
			}
		}
	}
	for _, m := range msgs {
		pm := billingtest.ParseMail(t, m.Data)
		if x := pm.Files["INV00001-ubl.xml"]; x != nil && !bytes.Contains(x, []byte("<cbc:ID>INV00001</cbc:ID>")) {
			t.Errorf("the UBL attachment is not invoice INV00001")
		}
		if x := pm.Files["INV00002-facturx.pdf"]; x != nil && !bytes.Contains(x, []byte("factur-x.xml")) {
			t.Errorf("the Factur-X attachment embeds no factur-x.xml")
		}
	}
}
