package billing_test

import (
	"context"
	"testing"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
)

// TestEInvoiceFieldsAreChecked: the e-invoice fields of customers, merchant
// details and lines refuse what is not a code of their list, naming the
// field.
func TestEInvoiceFieldsAreChecked(t *testing.T) {
	t.Parallel()
	e := newDocEnv(t)
	_, err := e.svc.CreateCustomer(e.ctx, e.acct, billing.CustomerParams{LegalName: "X", CustomerEInvoicing: billing.CustomerEInvoicing{
		ElectronicAddress: &billing.ElectronicAddress{Scheme: "PEPPOL", ID: "x"},
		EmailAttachments:  []billing.AttachmentFormat{"PDF", "DOCX"},
	}})
	wantFields(t, err, "electronicAddress.scheme", "emailAttachments[1]")
	_, err = e.svc.PutMerchantDetails(e.ctx, e.acct, billing.MerchantDetails{ElectronicAddress: &billing.ElectronicAddress{Scheme: "12", ID: "x"}})
	wantFields(t, err, "electronicAddress.scheme")
	inv := e.invoice(billing.CurrencyGBP, "")
	p := invLine("x", "1", "1", "0.2")
	p.UnitCode, p.TaxCategory = "gigabyte", "VAT"
	_, err = e.svc.CreateInvoiceLineItem(e.ctx, e.acct, inv.ID, p)
	wantFields(t, err, "unitCode", "taxCategory")
}

// TestEInvoiceDetailsAreFrozen: a document copies the customer's buyer
// reference when created, and is frozen at finalization with the
// customer's e-invoice details; later edits of the customer change
// neither. A line of a LINEAR price takes the unit of the price's metric.
func TestEInvoiceDetailsAreFrozen(t *testing.T) {
	t.Parallel()
	svc, _ := billingtest.NewService(t)
	ctx := context.Background()
	c := newCatalog(t, svc, "acme")
	metric, err := svc.CreateUsageMetric(ctx, c.account, billing.CreateUsageMetricParams{UsageMetricParams: billing.UsageMetricParams{
		Name: "storage", MetricType: billing.MetricTypeSimple, EventType: "stored", AggregationType: billing.AggregationCount, Unit: "GB"}})
	if err != nil {
		t.Fatal(err)
	}
	lp := c.linear("Storage")
	lp.Structure.UsageMetricID = metric.ID
	price, err := svc.CreatePrice(ctx, c.account, lp)
	if err != nil {
		t.Fatal(err)
	}
	params := billing.CustomerParams{LegalName: "Bezirksamt", CustomerEInvoicing: billing.CustomerEInvoicing{
		BuyerReference: "04011000-1", LegalRegistrationID: "HRB 1", TaxExemptionReason: "Exempt",
		ElectronicAddress: &billing.ElectronicAddress{Scheme: "0204", ID: "04011000-1"}}}
	cust, err := svc.CreateCustomer(ctx, c.account, params)
	if err != nil {
		t.Fatal(err)
	}
	inv, err := svc.CreateInvoice(ctx, c.account, billing.InvoiceParams{Currency: billing.CurrencyUSD, CustomerID: cust.ID})
	if err != nil || inv.BuyerReference != "04011000-1" {
		t.Fatalf("CreateInvoice: %v, buyerReference %q", err, inv.BuyerReference)
	}
	l := invLine("Storage", "12.5", "0.01", "0")
	l.PriceID = price.ID
	line, err := svc.CreateInvoiceLineItem(ctx, c.account, inv.ID, l)
	if err != nil || line.UnitCode != "E34" {
		t.Fatalf("CreateInvoiceLineItem: %v, unitCode %q, want E34 (a gigabyte)", err, line.UnitCode)
	}
	if _, err := svc.FinalizeInvoice(ctx, c.account, inv.ID); err != nil {
		t.Fatal(err)
	}
	params.BuyerReference, params.LegalRegistrationID, params.ElectronicAddress = "changed", "changed", nil
	if _, err := svc.UpdateCustomer(ctx, c.account, cust.ID, params); err != nil {
		t.Fatal(err)
	}
	d, err := svc.PrintableInvoice(ctx, c.account, inv.ID)
	if err != nil {
		t.Fatal(err)
	}
	if d.Invoice.BuyerReference != "04011000-1" || d.Buyer.LegalRegistrationID != "HRB 1" || d.Buyer.ElectronicAddress == nil ||
		d.Buyer.ElectronicAddress.ID != "04011000-1" || d.Buyer.TaxExemptionReason != "Exempt" {
		t.Fatalf("the finalized invoice prints buyer reference %q and buyer %+v, want what it was finalized with", d.Invoice.BuyerReference, d.Buyer)
	}
}

func TestUnitCode(t *testing.T) {
	t.Parallel()
	for unit, want := range map[string]string{"GB": "E34", "gigabytes": "E34", "hours": "HUR", "Hour": "HUR", "requests": "C62",
		"": "C62", "widgets": "C62", "kWh": "KWH", "months": "MON"} {
		if got := billing.UnitCode(unit); got != want {
			t.Errorf("UnitCode(%q) = %q, want %q", unit, got, want)
		}
	}
}
