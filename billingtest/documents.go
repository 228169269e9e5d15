package billingtest

import (
	"context"
	"testing"

	"github.com/billingd/billing"
)

// Documents makes invoices in one account of a Service, for the tests of
// what reads finished documents (the renderers, the e-invoice writers).
// Each method fails TB on an error.
type Documents struct {
	// TB is the test the documents are made for.
	TB testing.TB
	// Ctx is the context of every call.
	Ctx context.Context
	// Svc is the Service the documents are made in.
	Svc *billing.Service
	// Account is the id of the account that holds them.
	Account string
}

// Merchant returns the merchant details the document tests start from: a
// British company with its address, VAT id, contacts and a UK bank account.
func Merchant() billing.MerchantDetails {
	return billing.MerchantDetails{
		LegalCompanyName: "Acme Widgets Ltd",
		Address:          &billing.Address{Line1: "1 Market Street", Town: "Leeds", Postcode: "LS1 1AA", Country: "GB"},
		TaxID:            "GB123456789", Email: "billing@acme.test", PhoneNumber: "+44 113 000 0000",
		IBAN:             "GB33BUKB20201555555555",
		UKAccountDetails: &billing.UKAccountDetails{SortCode: "20-20-15", AccountNumber: "55555555"},
		CustomFields:     []billing.KeyValue{},
	}
}

// NewDocuments creates an account named "acme" in svc with the merchant
// details md and returns Documents for it.
func NewDocuments(tb testing.TB, svc *billing.Service, md billing.MerchantDetails) *Documents {
	tb.Helper()
	d := &Documents{TB: tb, Ctx: context.Background(), Svc: svc, Account: Account(tb, svc, "acme")}
	if _, err := svc.PutMerchantDetails(d.Ctx, d.Account, md); err != nil {
		tb.Fatalf("PutMerchantDetails: %v", err)
	}
	return d
}

// Customer creates a customer.
func (d *Documents) Customer(p billing.CustomerParams) *billing.Customer {
	d.TB.Helper()
	c, err := d.Svc.CreateCustomer(d.Ctx, d.Account, p)
	if err != nil {
		d.TB.Fatalf("CreateCustomer: %v", err)
	}
	return c
}

// Invoice creates a draft invoice in cur for the customer and returns its
// id.
func (d *Documents) Invoice(cur billing.Currency, customerID string, p billing.InvoiceUpdateParams) string {
	d.TB.Helper()
	inv, err := d.Svc.CreateInvoice(d.Ctx, d.Account, billing.InvoiceParams{Currency: cur, CustomerID: customerID, InvoiceUpdateParams: p})
	if err != nil {
		d.TB.Fatalf("CreateInvoice: %v", err)
	}
	return inv.ID
}

// Group adds a line item group titled title to the invoice and returns its
// id.
func (d *Documents) Group(invoiceID, title string) string {
	d.TB.Helper()
	g, err := d.Svc.CreateInvoiceLineItemGroup(d.Ctx, d.Account, invoiceID, billing.InvoiceLineItemGroupParams{Title: title})
	if err != nil {
		d.TB.Fatalf("CreateInvoiceLineItemGroup: %v", err)
	}
	return g.ID
}

// Line adds a line item to the invoice; nil ExternalIDs become none.
func (d *Documents) Line(invoiceID string, p billing.InvoiceLineItemParams) {
	d.TB.Helper()
	if p.ExternalIDs == nil {
		p.ExternalIDs = []billing.KeyValue{}
	}
	if _, err := d.Svc.CreateInvoiceLineItem(d.Ctx, d.Account, invoiceID, p); err != nil {
		d.TB.Fatalf("CreateInvoiceLineItem %q: %v", p.Title, err)
	}
}

// Finalize finalizes the invoice and returns its printable document.
func (d *Documents) Finalize(invoiceID string) *billing.PrintableDocument {
	d.TB.Helper()
	if _, err := d.Svc.FinalizeInvoice(d.Ctx, d.Account, invoiceID); err != nil {
		d.TB.Fatalf("FinalizeInvoice: %v", err)
	}
	return d.Printable(invoiceID)
}

// Printable returns the invoice's printable document.
func (d *Documents) Printable(invoiceID string) *billing.PrintableDocument {
	d.TB.Helper()
	p, err := d.Svc.PrintableInvoice(d.Ctx, d.Account, invoiceID)
	if err != nil {
		d.TB.Fatalf("PrintableInvoice: %v", err)
	}
	return p
}
