package einvoice_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
)

// The corpus: real documents of a real Service (bbolt under t.TempDir()),
// finalized and read back as PrintableDocuments, covering what the issue
// lists: GBP with groups and two tax rates, EUR reverse charge, JPY, a
// credit note, discounts and credit applied, 1,000 lines, non-Latin names,
// plus an XRechnung and a tax-exempt customer.

// sample is one finalized document of the corpus.
type sample struct {
	name string
	doc  *billing.PrintableDocument
}

// env is a Service with an account and its merchant, and the Service's
// clock.
type env struct {
	*billingtest.Documents
	clk *billingtest.Clock
}

// merchant is the seller of the corpus: the kit's merchant with a BIC and
// a registration id.
var merchant = func() billing.MerchantDetails {
	m := billingtest.Merchant()
	m.BIC, m.LegalRegistrationID = "BUKBGB22", "01234567"
	return m
}()

func newEnv(t testing.TB) *env {
	t.Helper()
	svc, clk := billingtest.NewService(t, billingtest.WithBolt())
	return &env{Documents: billingtest.NewDocuments(t, svc, merchant), clk: clk}
}

func dec(s string) *billing.Decimal {
	d := billing.MustDecimal(s)
	return &d
}

func day(s string) billing.Date {
	d, err := billing.ParseDate(s)
	if err != nil {
		panic(err)
	}
	return d
}

func at(s string) *time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return &t
}

// gbCustomer is a taxed British business.
var gbCustomer = billing.CustomerParams{
	LegalName: "Northwind Traders Ltd", TaxID: "GB987654321",
	Address:  &billing.Address{Line1: "22 Harbour Road", Line2: "Unit 4", Town: "Bristol", Postcode: "BS1 5TY", Country: "GB"},
	Contacts: []billing.Contact{{Name: "Accounts", Email: "ap@northwind.test", BillingPreference: billing.BillingPreferencePrimary}},
}

// corpus builds every sample in one account.
//
// Long on purpose: the documents are made one after the other, each in a
// few lines, so the set reads as the list the issue asks for.
func corpus(t testing.TB) []sample {
	e := newEnv(t)
	var out []sample
	add := func(name string, d *billing.PrintableDocument) { out = append(out, sample{name, d}) }

	gb := e.Customer(gbCustomer)
	inv := e.Invoice("GBP", gb.ID, billing.InvoiceUpdateParams{PurchaseOrderNumber: "PO-4471", Memo: "Thank you for your business.",
		BillingPeriod: &billing.DateRange{Start: day("2024-07-01"), EndInclusive: day("2024-07-31")}})
	hosting, support := e.Group(inv, "Hosting"), e.Group(inv, "Support")
	e.Line(inv, billing.InvoiceLineItemParams{Title: "Compute", Description: "vCPU hours", GroupID: hosting, Quantity: dec("720"), Rate: dec("0.0415"),
		TaxRate: dec("0.2"), UnitCode: "HUR", ServicePeriod: &billing.ServicePeriod{StartDate: day("2024-07-01"), EndDate: day("2024-07-31")}})
	e.Line(inv, billing.InvoiceLineItemParams{Title: "Storage", GroupID: hosting, Quantity: dec("1.5"), Rate: dec("23"), TaxRate: dec("0.2"), UnitCode: "E34",
		ServicePeriodStart: at("2024-07-01T00:00:00Z"), ServicePeriodEnd: at("2024-08-01T00:00:00Z")})
	e.Line(inv, billing.InvoiceLineItemParams{Title: "Printed manuals", GroupID: support, Quantity: dec("3"), Rate: dec("0.335"), TaxRate: dec("0.05")})
	e.Line(inv, billing.InvoiceLineItemParams{Title: "Support plan", GroupID: support, Quantity: dec("1"), Rate: dec("99.99"), TaxRate: dec("0.2")})
	gbp := e.Finalize(inv)
	add("gbp-groups-two-rates", gbp)

	cn, err := e.Svc.CreateCreditNote(e.Ctx, e.Account, billing.CreditNoteParams{Currency: "GBP", CustomerID: gb.ID, InvoiceID: inv, Memo: "Outage credit"})
	if err != nil {
		t.Fatalf("CreateCreditNote: %v", err)
	}
	for _, l := range []billing.CreditNoteLineItemParams{
		{Title: "Compute (outage)", Quantity: dec("48"), Rate: dec("0.0415"), TaxRate: dec("0.2"), UnitCode: "HUR",
			ServicePeriod: &billing.DateRange{Start: day("2024-07-10"), EndInclusive: day("2024-07-11")}},
		{Title: "Printed manuals returned", Quantity: dec("1"), Rate: dec("0.335"), TaxRate: dec("0.05")},
	} {
		l.ExternalIDs = []billing.KeyValue{}
		if _, err := e.Svc.CreateCreditNoteLineItem(e.Ctx, e.Account, cn.ID, billing.CreateCreditNoteLineItemParams{CreditNoteID: cn.ID, CreditNoteLineItemParams: l}); err != nil {
			t.Fatalf("CreateCreditNoteLineItem: %v", err)
		}
	}
	if _, err := e.Svc.FinalizeCreditNote(e.Ctx, e.Account, cn.ID); err != nil {
		t.Fatalf("FinalizeCreditNote: %v", err)
	}
	cnd, err := e.Svc.PrintableCreditNote(e.Ctx, e.Account, cn.ID)
	if err != nil {
		t.Fatal(err)
	}
	add("credit-note", cnd)

	de := e.Customer(billing.CustomerParams{LegalName: "Beispiel Maschinenbau GmbH", TaxID: "DE811907980", TaxStatus: billing.TaxStatusReverseCharged,
		Address:  &billing.Address{Line1: "Hauptstraße 5", Town: "München", Postcode: "80331", Country: "DE"},
		Contacts: []billing.Contact{{Name: "Buchhaltung", Email: "rechnung@beispiel.test", BillingPreference: billing.BillingPreferencePrimary}}})
	inv = e.Invoice("EUR", de.ID, billing.InvoiceUpdateParams{})
	e.Line(inv, billing.InvoiceLineItemParams{Title: "Platform subscription", Quantity: dec("1"), Rate: dec("1200"), TaxRate: dec("0")})
	e.Line(inv, billing.InvoiceLineItemParams{Title: "API calls", Quantity: dec("1250000"), Rate: dec("0.00012"), TaxRate: dec("0")})
	add("eur-reverse-charge", e.Finalize(inv))

	jp := e.Customer(billing.CustomerParams{LegalName: "Tanaka Shoji KK", TaxID: "JP1234567890123",
		Address: &billing.Address{Line1: "1-1 Marunouchi", Town: "Chiyoda-ku, Tokyo", Postcode: "100-0005", Country: "JP"}})
	inv = e.Invoice("JPY", jp.ID, billing.InvoiceUpdateParams{})
	e.Line(inv, billing.InvoiceLineItemParams{Title: "Consulting", Quantity: dec("3"), Rate: dec("1000.5"), TaxRate: dec("0.1"), UnitCode: "HUR"})
	e.Line(inv, billing.InvoiceLineItemParams{Title: "Licence", Quantity: dec("1"), Rate: dec("50000"), TaxRate: dec("0.1")})
	add("jpy", e.Finalize(inv))

	// Discounts and credit: a negative discount line at 20%, free CASH
	// credit (a discount before tax: a BURNDOWN line at 20%) and paid CASH
	// credit (money on account after tax: BT-113, prepaid).
	eu := e.Customer(billing.CustomerParams{LegalName: "Société Exemple SARL", TaxID: "FR40303265045",
		Address:  &billing.Address{Line1: "12 rue de la Paix", Town: "Paris", Postcode: "75002", Country: "FR"},
		Contacts: []billing.Contact{{Name: "Compta", Email: "compta@exemple.test", BillingPreference: billing.BillingPreferencePrimary}}})
	if _, err := e.Svc.CreateCreditGrant(e.Ctx, e.Account, billing.CreditGrantParams{CustomerID: eu.ID, Name: "Welcome credit",
		CreditUnitType: billing.CreditUnitCurrency, Currency: "EUR", Amount: dec("15")}); err != nil {
		t.Fatalf("CreateCreditGrant: %v", err)
	}
	if _, err := e.Svc.CreateCreditGrant(e.Ctx, e.Account, billing.CreditGrantParams{CustomerID: eu.ID, Name: "Prepaid balance",
		CreditUnitType: billing.CreditUnitCurrency, Currency: "EUR", Amount: dec("40"), CostOfCredit: dec("40")}); err != nil {
		t.Fatalf("CreateCreditGrant: %v", err)
	}
	inv = e.Invoice("EUR", eu.ID, billing.InvoiceUpdateParams{PurchaseOrderNumber: "BC-2024-118"})
	e.Line(inv, billing.InvoiceLineItemParams{Title: "Seats", Quantity: dec("12"), Rate: dec("25"), TaxRate: dec("0.2"), UnitCode: "C62"})
	e.Line(inv, billing.InvoiceLineItemParams{Title: "Onboarding", Quantity: dec("1"), Rate: dec("150"), TaxRate: dec("0.2")})
	e.Line(inv, billing.InvoiceLineItemParams{Title: "Loyalty discount 10%", Quantity: dec("1"), Rate: dec("-45"), TaxRate: dec("0.2")})
	if _, err := e.Svc.ApplyCredits(e.Ctx, e.Account, inv); err != nil {
		t.Fatalf("ApplyCredits: %v", err)
	}
	add("discounts-and-credits", e.Finalize(inv))

	gr := e.Customer(billing.CustomerParams{LegalName: "Ωμέγα Ανώνυμη Εταιρεία", TaxID: "EL094259216",
		Address:  &billing.Address{Line1: "Οδός Ερμού 10", Town: "Αθήνα", Postcode: "105 63", Country: "GR"},
		Contacts: []billing.Contact{{Name: "Λογιστήριο", Email: "logistirio@omega.test", BillingPreference: billing.BillingPreferencePrimary}}})
	inv = e.Invoice("EUR", gr.ID, billing.InvoiceUpdateParams{Memo: "Ευχαριστούμε! Спасибо!"})
	e.Line(inv, billing.InvoiceLineItemParams{Title: "Συνδρομή", Description: "Μηνιαία συνδρομή", Quantity: dec("1"), Rate: dec("80"), TaxRate: dec("0.24")})
	e.Line(inv, billing.InvoiceLineItemParams{Title: "Подписка «Про»", Quantity: dec("2"), Rate: dec("19.90"), TaxRate: dec("0.24")})
	add("non-latin-names", e.Finalize(inv))

	gov := e.Customer(billing.CustomerParams{LegalName: "Bezirksamt Mitte von Berlin",
		CustomerEInvoicing: billing.CustomerEInvoicing{BuyerReference: "04011000-12345-34",
			ElectronicAddress: &billing.ElectronicAddress{Scheme: "0204", ID: "04011000-12345-34"}},
		Address: &billing.Address{Line1: "Karl-Marx-Allee 31", Town: "Berlin", Postcode: "10178", Country: "DE"}})
	inv = e.Invoice("EUR", gov.ID, billing.InvoiceUpdateParams{})
	e.Line(inv, billing.InvoiceLineItemParams{Title: "Fachverfahren Lizenz", Quantity: dec("1"), Rate: dec("5000"), TaxRate: dec("0.19")})
	add("xrechnung", e.Finalize(inv))

	charity := e.Customer(billing.CustomerParams{LegalName: "Riverside Education Trust", TaxStatus: billing.TaxStatusTaxExempt,
		CustomerEInvoicing: billing.CustomerEInvoicing{TaxExemptionReason: "Exempt: education (VAT Act 1994, Schedule 9, Group 6)"},
		Address:            &billing.Address{Line1: "3 School Lane", Town: "York", Postcode: "YO1 7HH", Country: "GB"}})
	inv = e.Invoice("GBP", charity.ID, billing.InvoiceUpdateParams{})
	e.Line(inv, billing.InvoiceLineItemParams{Title: "Learning platform", Quantity: dec("300"), Rate: dec("1.25"), TaxRate: dec("0")})
	add("tax-exempt", e.Finalize(inv))

	// The categories a line sets itself: an intra-community supply (K),
	// an export (G), a supply outside the scope of VAT (O).
	fr := e.Customer(billing.CustomerParams{LegalName: "Société Exemple SARL", TaxID: "FR40303265045",
		Address: &billing.Address{Line1: "12 rue de la Paix", Town: "Paris", Postcode: "75002", Country: "FR"}})
	inv = e.Invoice("EUR", fr.ID, billing.InvoiceUpdateParams{
		BillingPeriod:           &billing.DateRange{Start: day("2024-07-01"), EndInclusive: day("2024-07-31")},
		CustomerShippingAddress: &billing.Address{Line1: "5 quai Perrache", Town: "Lyon", Postcode: "69002", Country: "FR"}})
	e.Line(inv, billing.InvoiceLineItemParams{Title: "Sensor kits", Quantity: dec("40"), Rate: dec("35.50"), TaxRate: dec("0"), TaxCategory: "K", UnitCode: "H87"})
	add("intra-community", e.Finalize(inv))
	us := e.Customer(billing.CustomerParams{LegalName: "Contoso Inc.",
		Address: &billing.Address{Line1: "1 Microsoft Way", Town: "Redmond", State: "WA", Postcode: "98052", Country: "US"}})
	inv = e.Invoice("USD", us.ID, billing.InvoiceUpdateParams{})
	e.Line(inv, billing.InvoiceLineItemParams{Title: "Spare parts", Quantity: dec("3"), Rate: dec("120"), TaxRate: dec("0"), TaxCategory: "G"})
	add("export", e.Finalize(inv))
	inv = e.Invoice("GBP", gb.ID, billing.InvoiceUpdateParams{})
	e.Line(inv, billing.InvoiceLineItemParams{Title: "Statutory fee passed on at cost", Quantity: dec("1"), Rate: dec("12"), TaxRate: dec("0"), TaxCategory: "O"})
	add("outside-scope", e.Finalize(inv))

	// A merchant without bank details, an invoice paid through a link.
	noBank := merchant
	noBank.IBAN, noBank.UKAccountDetails = "", nil
	if _, err := e.Svc.PutMerchantDetails(e.Ctx, e.Account, noBank); err != nil {
		t.Fatal(err)
	}
	inv = e.Invoice("GBP", gb.ID, billing.InvoiceUpdateParams{PaymentOptions: []billing.PaymentOption{billing.PaymentOptionLink}})
	e.Line(inv, billing.InvoiceLineItemParams{Title: "Workshop ticket", Quantity: dec("2"), Rate: dec("49"), TaxRate: dec("0.2")})
	add("payment-link", e.Finalize(inv))
	if _, err := e.Svc.PutMerchantDetails(e.Ctx, e.Account, merchant); err != nil {
		t.Fatal(err)
	}

	add("lines-20", manyLines(e, gb.ID, 20))
	add(fmt.Sprintf("lines-%d", bigLines), manyLines(e, gb.ID, bigLines))
	return out
}

// manyLines finalizes a GBP invoice of n lines in four groups at 20% and
// 5%. The nets are multiples of 0.05, so no line's tax is rounded: EN 16931
// checks each rate's tax against its taxable amount within one unit, and
// the sum of a thousand rounded lines could stray further (see
// docs/e-invoicing.md).
func manyLines(e *env, customer string, n int) *billing.PrintableDocument {
	inv := e.Invoice("GBP", customer, billing.InvoiceUpdateParams{PurchaseOrderNumber: fmt.Sprintf("PO-%d", n)})
	groups := []string{e.Group(inv, "North"), e.Group(inv, "South"), e.Group(inv, "East"), e.Group(inv, "West")}
	for i := range n {
		rate, tax := fmt.Sprintf("%d.%02d", 1+i%37, 5*(i%20)), "0.2"
		if i%3 == 0 {
			tax = "0.05"
			rate = fmt.Sprintf("%d.00", 2+i%11)
		}
		e.Line(inv, billing.InvoiceLineItemParams{Title: fmt.Sprintf("Site %04d metered usage", i), GroupID: groups[i%4],
			Quantity: dec(fmt.Sprint(1 + i%5)), Rate: dec(rate), TaxRate: dec(tax)})
	}
	return e.Finalize(inv)
}
