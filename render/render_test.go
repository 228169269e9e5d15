package render_test

import (
	"bytes"
	"context"
	"image"
	"image/color"
	"image/png"
	"strings"
	"testing"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
	"github.com/billingd/billing/internal/pdftext"
	"github.com/billingd/billing/render"
)

// env is a Service with an account, merchant details and a customer.
type env struct {
	t    testing.TB
	ctx  context.Context
	svc  *billing.Service
	acct string
	cust *billing.Customer
}

// merchant is the merchant of the tests: every kind of payment detail.
var merchant = billing.MerchantDetails{
	LegalCompanyName: "Acme Widgets Ltd",
	Address:          &billing.Address{Line1: "1 Market Street", Town: "Leeds", Postcode: "LS1 1AA", Country: "GB"},
	TaxID:            "GB123456789", Email: "billing@acme.test", PhoneNumber: "+44 113 000 0000",
	IBAN:                       "GB33BUKB20201555555555",
	UKAccountDetails:           &billing.UKAccountDetails{SortCode: "20-20-15", AccountNumber: "55555555"},
	USAchDetails:               &billing.USAchDetails{AccountNumber: "000123456789", AccountName: "Acme Widgets", BankName: "First Bank", BankRoutingNumber: "110000000"},
	SwedishBankgiroDestination: &billing.SwedishBankgiroDestination{BankgiroNumber: "5050-1055", AccountName: "Acme AB"},
	PrimaryColour:              "#7a1f5c",
	CustomFields:               []billing.KeyValue{{Key: "Company number", Value: "01234567"}},
}

func newEnv(t testing.TB, customer string) *env {
	t.Helper()
	svc, _ := billingtest.NewService(t)
	e := &env{t: t, ctx: context.Background(), svc: svc, acct: billingtest.Account(t, svc, "acme")}
	if _, err := svc.PutMerchantDetails(e.ctx, e.acct, merchant); err != nil {
		t.Fatalf("PutMerchantDetails: %v", err)
	}
	c, err := svc.CreateCustomer(e.ctx, e.acct, billing.CustomerParams{
		LegalName: customer, TaxID: "DE811907980",
		Address:  &billing.Address{Line1: "Hauptstraße 5", Town: "München", Postcode: "80331", Country: "DE"},
		Contacts: []billing.Contact{{Name: "Jo", Email: "ap@customer.test", BillingPreference: billing.BillingPreferencePrimary}},
	})
	if err != nil {
		t.Fatalf("CreateCustomer: %v", err)
	}
	e.cust = c
	return e
}

func dec(s string) *billing.Decimal {
	d := billing.MustDecimal(s)
	return &d
}

func (e *env) invoice(cur billing.Currency, p billing.InvoiceUpdateParams) *billing.Invoice {
	e.t.Helper()
	inv, err := e.svc.CreateInvoice(e.ctx, e.acct, billing.InvoiceParams{Currency: cur, CustomerID: e.cust.ID, InvoiceUpdateParams: p})
	if err != nil {
		e.t.Fatalf("CreateInvoice: %v", err)
	}
	return inv
}

func (e *env) group(invID, title string) string {
	e.t.Helper()
	g, err := e.svc.CreateInvoiceLineItemGroup(e.ctx, e.acct, invID, billing.InvoiceLineItemGroupParams{Title: title})
	if err != nil {
		e.t.Fatalf("CreateInvoiceLineItemGroup: %v", err)
	}
	return g.ID
}

func (e *env) line(invID, group, title, q, r, tax string) {
	e.t.Helper()
	_, err := e.svc.CreateInvoiceLineItem(e.ctx, e.acct, invID, billing.InvoiceLineItemParams{
		Title: title, Quantity: dec(q), Rate: dec(r), TaxRate: dec(tax), GroupID: group, ExternalIDs: []billing.KeyValue{},
	})
	if err != nil {
		e.t.Fatalf("CreateInvoiceLineItem %s: %v", title, err)
	}
}

func (e *env) finalize(invID string) {
	e.t.Helper()
	if _, err := e.svc.FinalizeInvoice(e.ctx, e.acct, invID); err != nil {
		e.t.Fatalf("FinalizeInvoice: %v", err)
	}
}

func (e *env) invoicePDF(id string) []byte {
	e.t.Helper()
	d, err := e.svc.PrintableInvoice(e.ctx, e.acct, id)
	if err != nil {
		e.t.Fatalf("PrintableInvoice: %v", err)
	}
	b, err := render.PDF(d)
	if err != nil {
		e.t.Fatalf("render.PDF: %v", err)
	}
	return b
}

// gbpInvoice is a GBP invoice with ungrouped lines, two groups and two tax
// rates, finalized, with a payment.
func gbpInvoice(e *env) *billing.Invoice {
	e.t.Helper()
	period := &billing.DateRange{Start: billing.Date{Year: 2024, Month: 7, Day: 1}, EndInclusive: billing.Date{Year: 2024, Month: 7, Day: 31}}
	inv := e.invoice(billing.CurrencyGBP, billing.InvoiceUpdateParams{
		PurchaseOrderNumber: "PO-4711", Reference: "REF-99", Memo: "Thank you for your business.", BillingPeriod: period,
	})
	e.line(inv.ID, "", "Platform fee", "1", "49.00", "0.2")
	usage := e.group(inv.ID, "Usage")
	e.line(inv.ID, usage, "API calls", "3", "0.335", "0.2")
	e.line(inv.ID, usage, "Storage", "12.5", "2", "0.05")
	support := e.group(inv.ID, "Support")
	e.line(inv.ID, support, "Premium support", "1", "1250", "0.05")
	e.finalize(inv.ID)
	paid := billing.Date{Year: 2024, Month: 7, Day: 30}
	if _, err := e.svc.RecordPayment(e.ctx, e.acct, inv.ID, billing.PaymentParams{Amount: dec("100.00"), PaidAt: &paid}); err != nil {
		e.t.Fatalf("RecordPayment: %v", err)
	}
	return inv
}

func TestInvoicePDFGBPWithGroupsAndTwoTaxRates(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "Müller GmbH")
	inv := gbpInvoice(e)
	text := pdftext.Text(t, e.invoicePDF(inv.ID))
	pdftext.Contains(t, text,
		"Invoice", "INV00001", "30 Jul 2024", "29 Aug 2024", "1 Jul 2024 – 31 Jul 2024", "PO-4711", "REF-99",
		"Acme Widgets Ltd", "GB123456789", "Müller GmbH", "Hauptstraße 5", "DE811907980", "ap@customer.test",
		"Thank you for your business.", "GB33BUKB20201555555555", "20-20-15", "55555555", "Company number: 01234567",
		"Usage", "Support", "Page 1 of 1")
	for _, r := range [][]string{
		{"Platform fee", "1", "£49.00", "20%", "£49.00"},
		{"API calls", "3", "£0.335", "20%", "£1.01"},
		{"Storage", "12.5", "£2", "5%", "£25.00"},
		{"Premium support", "1", "£1,250", "5%", "£1,250.00"},
		{"Subtotal Usage", "£26.01"},
		{"Subtotal Support", "£1,250.00"},
		{"20%", "£50.01", "£10.00"},
		{"5%", "£1,275.00", "£63.75"},
		{"Net total", "£1,325.01"},
		{"Tax", "£73.75"},
		{"Total", "£1,398.76"},
		{"Amount paid", "£100.00"},
		{"Amount due", "£1,298.76"},
	} {
		if !pdftext.Row(text, r...) {
			t.Errorf("no line of the PDF reads %q", r)
		}
	}
	// A GBP invoice prints the UK details, not the US or Swedish ones.
	for _, absent := range []string{"DRAFT", "110000000", "5050-1055"} {
		if strings.Contains(text, absent) {
			t.Errorf("the finalized GBP invoice shows %q", absent)
		}
	}
	if t.Failed() {
		t.Logf("extracted text:\n%s", text)
	}
}

func TestInvoicePDFJPY(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "Ωmega ΑΕ")
	inv := e.invoice(billing.CurrencyJPY, billing.InvoiceUpdateParams{})
	e.line(inv.ID, "", "Consulting", "1", "1000.5", "0.1")
	e.line(inv.ID, "", "Licences", "3", "250", "0.1")
	e.finalize(inv.ID)
	text := pdftext.Text(t, e.invoicePDF(inv.ID))
	pdftext.Contains(t, text, "INV00001", "Ωmega ΑΕ", "30 Jul 2024", "29 Aug 2024")
	for _, r := range [][]string{
		{"Consulting", "1", "¥1,000.5", "10%", "¥1,001"},
		{"Licences", "3", "¥250", "10%", "¥750"},
		{"10%", "¥1,751", "¥175"},
		{"Net total", "¥1,751"},
		{"Total", "¥1,926"},
		{"Amount due", "¥1,926"},
	} {
		if !pdftext.Row(text, r...) {
			t.Errorf("no line of the PDF reads %q", r)
		}
	}
	if strings.Contains(text, "¥1,926.") || strings.Contains(text, "¥1,001.") {
		t.Errorf("a JPY amount is printed with decimals")
	}
	if t.Failed() {
		t.Logf("extracted text:\n%s", text)
	}
}

func TestCreditNotePDF(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "ООО Ромашка")
	inv := gbpInvoice(e)
	cn, err := e.svc.CreateCreditNote(e.ctx, e.acct, billing.CreditNoteParams{Currency: billing.CurrencyGBP, CustomerID: e.cust.ID,
		InvoiceID: inv.ID, Memo: "Refund of overcharged API calls."})
	if err != nil {
		t.Fatalf("CreateCreditNote: %v", err)
	}
	_, err = e.svc.CreateCreditNoteLineItem(e.ctx, e.acct, cn.ID, billing.CreateCreditNoteLineItemParams{CreditNoteID: cn.ID,
		CreditNoteLineItemParams: billing.CreditNoteLineItemParams{Title: "Refund: API calls", Quantity: dec("3"), Rate: dec("0.335"),
			TaxRate: dec("0.2"), ExternalIDs: []billing.KeyValue{}}})
	if err != nil {
		t.Fatalf("CreateCreditNoteLineItem: %v", err)
	}
	if _, err := e.svc.FinalizeCreditNote(e.ctx, e.acct, cn.ID); err != nil {
		t.Fatalf("FinalizeCreditNote: %v", err)
	}
	d, err := e.svc.PrintableCreditNote(e.ctx, e.acct, cn.ID)
	if err != nil {
		t.Fatalf("PrintableCreditNote: %v", err)
	}
	pdf, err := render.PDF(d)
	if err != nil {
		t.Fatalf("render.PDF: %v", err)
	}
	text := pdftext.Text(t, pdf)
	pdftext.Contains(t, text, "Credit note", "CN00001", "INV00001", "30 Jul 2024", "ООО Ромашка", "Refund of overcharged API calls.",
		"1 Jul 2024 – 31 Jul 2024")
	for _, r := range [][]string{
		{"Refund: API calls", "3", "£0.335", "20%", "£1.01"},
		{"Net total", "£1.01"},
		{"Tax", "£0.20"},
		{"Total credited", "£1.21"},
	} {
		if !pdftext.Row(text, r...) {
			t.Errorf("no line of the PDF reads %q", r)
		}
	}
	if render.Filename(d) != "CN00001.pdf" {
		t.Errorf("Filename = %q, want CN00001.pdf", render.Filename(d))
	}
	// The credited invoice now shows the credit.
	text = pdftext.Text(t, e.invoicePDF(inv.ID))
	if !pdftext.Row(text, "Amount credited", "£1.21") || !pdftext.Row(text, "Amount due", "£1,297.55") {
		t.Errorf("the credited invoice does not show the credit:\n%s", text)
	}
}

// logoPNG is a small two-colour PNG.
func logoPNG(t testing.TB, c color.RGBA) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 40, 20))
	for y := range 20 {
		for x := range 40 {
			img.Set(x, y, c)
			if x < 20 {
				img.Set(x, y, color.RGBA{255, 255, 255, 255})
			}
		}
	}
	return encodePNG(t, img)
}

// encodePNG encodes img as PNG.
func encodePNG(t testing.TB, img image.Image) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestFinalizedRenderingIsFrozen(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "Müller GmbH")
	if _, err := e.svc.PutMerchantLogo(e.ctx, e.acct, logoPNG(t, color.RGBA{200, 0, 0, 255})); err != nil {
		t.Fatalf("PutMerchantLogo: %v", err)
	}
	inv := gbpInvoice(e)
	before := e.invoicePDF(inv.ID)
	if again := e.invoicePDF(inv.ID); !bytes.Equal(before, again) {
		t.Fatal("the same document rendered to different bytes twice")
	}
	changed := merchant
	changed.LegalCompanyName, changed.IBAN, changed.PrimaryColour = "Renamed Holdings plc", "DE89370400440532013000", "#000000"
	if _, err := e.svc.PutMerchantDetails(e.ctx, e.acct, changed); err != nil {
		t.Fatalf("PutMerchantDetails: %v", err)
	}
	if _, err := e.svc.PutMerchantLogo(e.ctx, e.acct, logoPNG(t, color.RGBA{0, 0, 200, 255})); err != nil {
		t.Fatalf("PutMerchantLogo: %v", err)
	}
	if _, err := e.svc.UpdateCustomer(e.ctx, e.acct, e.cust.ID, billing.CustomerParams{LegalName: "Someone Else AG", TaxStatus: billing.TaxStatusReverseCharged}); err != nil {
		t.Fatalf("UpdateCustomer: %v", err)
	}
	if after := e.invoicePDF(inv.ID); !bytes.Equal(before, after) {
		t.Errorf("the finalized invoice's PDF changed with the merchant details, logo or customer (%d bytes before, %d after)", len(before), len(after))
	}
	// A draft shows the current merchant, and the DRAFT mark.
	draft := e.invoice(billing.CurrencyGBP, billing.InvoiceUpdateParams{})
	e.line(draft.ID, "", "Setup", "1", "10", "0") // the customer is REVERSE_CHARGED now
	text := pdftext.Text(t, e.invoicePDF(draft.ID))
	pdftext.Contains(t, text, "DRAFT", "Renamed Holdings plc", "DE89370400440532013000")
	if strings.Contains(pdftext.Text(t, before), "DRAFT") {
		t.Error("the finalized invoice carries the DRAFT mark")
	}
}

func TestDraftFilenameAndHTML(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "Ωmega ΑΕ")
	if _, err := e.svc.PutMerchantLogo(e.ctx, e.acct, logoPNG(t, color.RGBA{0, 120, 0, 255})); err != nil {
		t.Fatalf("PutMerchantLogo: %v", err)
	}
	inv := e.invoice(billing.CurrencyEUR, billing.InvoiceUpdateParams{Memo: "<script>alert(1)</script>",
		CustomerShippingAddress: &billing.Address{Line1: "Lagerweg 1", Town: "Hamburg", Postcode: "20095", Country: "DE"}})
	e.line(inv.ID, "", "Beratung & Design", "2", "150", "0.19")
	d, err := e.svc.PrintableInvoice(e.ctx, e.acct, inv.ID)
	if err != nil {
		t.Fatalf("PrintableInvoice: %v", err)
	}
	if got := render.Filename(d); got != inv.ID+".pdf" {
		t.Errorf("draft Filename = %q, want the id", got)
	}
	h, err := render.HTML(d)
	if err != nil {
		t.Fatalf("render.HTML: %v", err)
	}
	page := string(h)
	for _, want := range []string{"Ωmega ΑΕ", "DRAFT", "Beratung &amp; Design", "€300.00", "19%", "data:image/png;base64,", "&lt;script&gt;",
		"Ship to", "Lagerweg 1"} {
		if !strings.Contains(page, want) {
			t.Errorf("the HTML lacks %q", want)
		}
	}
	for _, bad := range []string{"<script>", "http://", "https://", "src=\"/", "url("} {
		if strings.Contains(page, bad) {
			t.Errorf("the HTML is not self-contained or not escaped: it has %q", bad)
		}
	}
}

// TestCreditNotePeriodInTheCustomersZone prints the billing period a
// credit note copies from its invoice (as timestamps: the midnights of
// Pacific/Kiritimati, UTC+14) as the customer's days, not UTC's.
func TestCreditNotePeriodInTheCustomersZone(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "Unused")
	c, err := e.svc.CreateCustomer(e.ctx, e.acct, billing.CustomerParams{LegalName: "Line Islands", TimeZone: "Pacific/Kiritimati"})
	if err != nil {
		t.Fatal(err)
	}
	e.cust = c
	period := &billing.DateRange{Start: billing.Date{Year: 2024, Month: 7, Day: 1}, EndInclusive: billing.Date{Year: 2024, Month: 7, Day: 31}}
	inv := e.invoice(billing.CurrencyGBP, billing.InvoiceUpdateParams{BillingPeriod: period})
	e.line(inv.ID, "", "Platform fee", "1", "49.00", "0")
	e.finalize(inv.ID)
	cn, err := e.svc.CreateCreditNote(e.ctx, e.acct, billing.CreditNoteParams{Currency: billing.CurrencyGBP, CustomerID: c.ID, InvoiceID: inv.ID})
	if err != nil {
		t.Fatal(err)
	}
	if got := billing.FormatTimestamp(*cn.BillingPeriodStart); got != "2024-06-30T10:00:00Z" {
		t.Errorf("billingPeriodStart %s, want Kiritimati's midnight 2024-06-30T10:00:00Z", got)
	}
	d, err := e.svc.PrintableCreditNote(e.ctx, e.acct, cn.ID)
	if err != nil {
		t.Fatal(err)
	}
	html, err := render.HTML(d)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(html), "1 Jul 2024 – 31 Jul 2024") {
		t.Errorf("the credit note does not print the period as 1 Jul 2024 – 31 Jul 2024:\n%s", html)
	}
}
