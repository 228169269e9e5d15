package einvoice_test

import (
	"context"
	"encoding/xml"
	"fmt"
	"time"

	"github.com/billingd/billing"
	"github.com/billingd/billing/einvoice"
	"github.com/billingd/billing/storage/memstore"
)

// An invoice finalized and written as an EN 16931 e-invoice (UBL, Peppol
// BIS Billing 3.0): the merchant details and the customer carry what the
// norm requires (names, addresses with their countries, the seller's VAT
// id), then the file is read back.
func Example() {
	ctx := context.Background()
	store := memstore.New()
	defer store.Close()
	svc, err := billing.New(store, &billing.Config{Now: func() time.Time { return time.Date(2024, 7, 30, 12, 0, 0, 0, time.UTC) }})
	if err != nil {
		panic(err)
	}
	account, _ := svc.CreateAccount(ctx, billing.CreateAccountParams{Name: "Acme"})
	_, err = svc.PutMerchantDetails(ctx, account.ID, billing.MerchantDetails{
		LegalCompanyName: "Acme Widgets Ltd", TaxID: "GB123456789", IBAN: "GB33BUKB20201555555555",
		Address: &billing.Address{Line1: "1 Market Street", Town: "Leeds", Postcode: "LS1 1AA", Country: "GB"},
	})
	if err != nil {
		panic(err)
	}
	customer, err := svc.CreateCustomer(ctx, account.ID, billing.CustomerParams{
		LegalName: "Beispiel GmbH", TaxID: "DE811907980", TaxStatus: billing.TaxStatusReverseCharged,
		Address:            &billing.Address{Line1: "Hauptstraße 5", Town: "München", Postcode: "80331", Country: "DE"},
		CustomerEInvoicing: billing.CustomerEInvoicing{BuyerReference: "PO-BOX-7"},
	})
	if err != nil {
		panic(err)
	}
	inv, _ := svc.CreateInvoice(ctx, account.ID, billing.InvoiceParams{Currency: billing.CurrencyEUR, CustomerID: customer.ID})
	q, rate, tax := billing.MustDecimal("3"), billing.MustDecimal("400"), billing.MustDecimal("0")
	_, err = svc.CreateInvoiceLineItem(ctx, account.ID, inv.ID, billing.InvoiceLineItemParams{
		Title: "Consulting", Quantity: &q, Rate: &rate, TaxRate: &tax, UnitCode: "DAY", ExternalIDs: []billing.KeyValue{},
	})
	if err != nil {
		panic(err)
	}
	if _, err := svc.FinalizeInvoice(ctx, account.ID, inv.ID); err != nil {
		panic(err)
	}

	doc, err := svc.PrintableInvoice(ctx, account.ID, inv.ID)
	if err != nil {
		panic(err)
	}
	data, contentType, err := einvoice.Write(doc, einvoice.UBL)
	if err != nil {
		panic(err)
	}
	fmt.Println(einvoice.Filename(doc, einvoice.UBL), contentType)

	var back struct {
		ID, BuyerReference string
		Category           string `xml:"TaxTotal>TaxSubtotal>TaxCategory>ID"`
		Reason             string `xml:"TaxTotal>TaxSubtotal>TaxCategory>TaxExemptionReason"`
		Payable            string `xml:"LegalMonetaryTotal>PayableAmount"`
	}
	if err := xml.Unmarshal(data, &back); err != nil {
		panic(err)
	}
	fmt.Println(back.ID, back.BuyerReference, back.Category, back.Reason, back.Payable)
	// Output:
	// INV00001-ubl.xml application/xml
	// INV00001 PO-BOX-7 AE Reverse charge 1200.00
}
