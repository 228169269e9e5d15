package render_test

import (
	"bytes"
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
	*billingtest.Documents
	cust *billing.Customer
}

// merchant is the merchant of the tests: the kit's merchant with every
// other kind of payment detail, a colour and a custom field.
var merchant = func() billing.MerchantDetails {
	m := billingtest.Merchant()
	m.USAchDetails = &billing.USAchDetails{AccountNumber: "000123456789", AccountName: "Acme Widgets", BankName: "First Bank", BankRoutingNumber: "110000000"}
	m.SwedishBankgiroDestination = &billing.SwedishBankgiroDestination{BankgiroNumber: "5050-1055", AccountName: "Acme AB"}
	m.PrimaryColour = "#7a1f5c"
	m.CustomFields = []billing.KeyValue{{Key: "Company number", Value: "01234567"}}
	return m
}()

func newEnv(t testing.TB, customer string) *env {
	t.Helper()
	svc, _ := billingtest.NewService(t)
	e := &env{Documents: billingtest.NewDocuments(t, svc, merchant)}
	e.cust = e.Customer(billing.CustomerParams{
		LegalName: customer, TaxID: "DE811907980",
		Address:  &billing.Address{Line1: "Hauptstraße 5", Town: "München", Postcode: "80331", Country: "DE"},
		Contacts: []billing.Contact{{Name: "Jo", Email: "ap@customer.test", BillingPreference: billing.BillingPreferencePrimary}},
	})
	return e
}

func dec(s string) *billing.Decimal {
	d := billing.MustDecimal(s)
	return &d
}

// invoice creates a draft invoice for the env's customer.
func (e *env) invoice(cur billing.Currency, p billing.InvoiceUpdateParams) string {
	e.TB.Helper()
	return e.Invoice(cur, e.cust.ID, p)
}

// line adds a line of quantity q at rate r with the tax rate tax.
func (e *env) line(invID, group, title, q, r, tax string) {
	e.TB.Helper()
	e.Line(invID, billing.InvoiceLineItemParams{Title: title, Quantity: dec(q), Rate: dec(r), TaxRate: dec(tax), GroupID: group})
}

func (e *env) invoicePDF(id string) []byte {
	e.TB.Helper()
	b, err := render.PDF(e.Printable(id))
	if err != nil {
		e.TB.Fatalf("render.PDF: %v", err)
	}
	return b
}

// gbpInvoice is a GBP invoice with ungrouped lines, two groups and two tax
// rates, finalized, with a payment.
func gbpInvoice(e *env) string {
	e.TB.Helper()
	period := &billing.DateRange{Start: billing.Date{Year: 2024, Month: 7, Day: 1}, EndInclusive: billing.Date{Year: 2024, Month: 7, Day: 31}}
	inv := e.invoice(billing.CurrencyGBP, billing.InvoiceUpdateParams{
		PurchaseOrderNumber: "PO-4711", Reference: "REF-99", Memo: "Thank you for your business.", BillingPeriod: period,
	})
	e.line(inv, "", "Platform fee", "1", "49.00", "0.2")
	usage := e.Group(inv, "Usage")
	e.line(inv, usage, "API calls", "3", "0.335", "0.2")
	e.line(inv, usage, "Storage", "12.5", "2", "0.05")
	support := e.Group(inv, "Support")
	e.line(inv, support, "Premium support", "1", "1250", "0.05")
	e.Finalize(inv)
	paid := billing.Date{Year: 2024, Month: 7, Day: 30}
	if _, err := e.Svc.RecordPayment(e.Ctx, e.Account, inv, billing.PaymentParams{Amount: dec("100.00"), PaidAt: &paid}); err != nil {
		e.TB.Fatalf("RecordPayment: %v", err)
	}
	return inv
}

func TestInvoicePDFGBPWithGroupsAndTwoTaxRates(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "Müller GmbH")
	inv := gbpInvoice(e)
	text := pdftext.Text(t, e.invoicePDF(inv))
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
	e.line(inv, "", "Consulting", "1", "1000.5", "0.1")
	e.line(inv, "", "Licences", "3", "250", "0.1")
	e.Finalize(inv)
	text := pdftext.Text(t, e.invoicePDF(inv))
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
	cn, err := e.Svc.CreateCreditNote(e.Ctx, e.Account, billing.CreditNoteParams{Currency: billing.CurrencyGBP, CustomerID: e.cust.ID,
		InvoiceID: inv, Memo: "Refund of overcharged API calls."})
	if err != nil {
		t.Fatalf("CreateCreditNote: %v", err)
	}
	_, err = e.Svc.CreateCreditNoteLineItem(e.Ctx, e.Account, cn.ID, billing.CreateCreditNoteLineItemParams{CreditNoteID: cn.ID,
		CreditNoteLineItemParams: billing.CreditNoteLineItemParams{Title: "Refund: API calls", Quantity: dec("3"), Rate: dec("0.335"),
			TaxRate: dec("0.2"), ExternalIDs: []billing.KeyValue{}}})
	if err != nil {
		t.Fatalf("CreateCreditNoteLineItem: %v", err)
	}
	if _, err := e.Svc.FinalizeCreditNote(e.Ctx, e.Account, cn.ID); err != nil {
		t.Fatalf("FinalizeCreditNote: %v", err)
	}
	d, err := e.Svc.PrintableCreditNote(e.Ctx, e.Account, cn.ID)
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
	text = pdftext.Text(t, e.invoicePDF(inv))
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
	if _, err := e.Svc.PutMerchantLogo(e.Ctx, e.Account, logoPNG(t, color.RGBA{200, 0, 0, 255})); err != nil {
		t.Fatalf("PutMerchantLogo: %v", err)
	}
	inv := gbpInvoice(e)
	before := e.invoicePDF(inv)
	if again := e.invoicePDF(inv); !bytes.Equal(before, again) {
		t.Fatal("the same document rendered to different bytes twice")
	}
	changed := merchant
	changed.LegalCompanyName, changed.IBAN, changed.PrimaryColour = "Renamed Holdings plc", "DE89370400440532013000", "#000000"
	if _, err := e.Svc.PutMerchantDetails(e.Ctx, e.Account, changed); err != nil {
		t.Fatalf("PutMerchantDetails: %v", err)
	}
	if _, err := e.Svc.PutMerchantLogo(e.Ctx, e.Account, logoPNG(t, color.RGBA{0, 0, 200, 255})); err != nil {
		t.Fatalf("PutMerchantLogo: %v", err)
	}
	if _, err := e.Svc.UpdateCustomer(e.Ctx, e.Account, e.cust.ID, billing.CustomerParams{LegalName: "Someone Else AG", TaxStatus: billing.TaxStatusReverseCharged}); err != nil {
		t.Fatalf("UpdateCustomer: %v", err)
	}
	if after := e.invoicePDF(inv); !bytes.Equal(before, after) {
		t.Errorf("the finalized invoice's PDF changed with the merchant details, logo or customer (%d bytes before, %d after)", len(before), len(after))
	}
	// A draft shows the current merchant, and the DRAFT mark.
	draft := e.invoice(billing.CurrencyGBP, billing.InvoiceUpdateParams{})
	e.line(draft, "", "Setup", "1", "10", "0") // the customer is REVERSE_CHARGED now
	text := pdftext.Text(t, e.invoicePDF(draft))
	pdftext.Contains(t, text, "DRAFT", "Renamed Holdings plc", "DE89370400440532013000")
	if strings.Contains(pdftext.Text(t, before), "DRAFT") {
		t.Error("the finalized invoice carries the DRAFT mark")
	}
}

func TestDraftFilenameAndHTML(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "Ωmega ΑΕ")
	if _, err := e.Svc.PutMerchantLogo(e.Ctx, e.Account, logoPNG(t, color.RGBA{0, 120, 0, 255})); err != nil {
		t.Fatalf("PutMerchantLogo: %v", err)
	}
	inv := e.invoice(billing.CurrencyEUR, billing.InvoiceUpdateParams{Memo: "<script>alert(1)</script>",
		CustomerShippingAddress: &billing.Address{Line1: "Lagerweg 1", Town: "Hamburg", Postcode: "20095", Country: "DE"}})
	e.line(inv, "", "Beratung & Design", "2", "150", "0.19")
	d, err := e.Svc.PrintableInvoice(e.Ctx, e.Account, inv)
	if err != nil {
		t.Fatalf("PrintableInvoice: %v", err)
	}
	if got := render.Filename(d); got != inv+".pdf" {
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
	c, err := e.Svc.CreateCustomer(e.Ctx, e.Account, billing.CustomerParams{LegalName: "Line Islands", TimeZone: "Pacific/Kiritimati"})
	if err != nil {
		t.Fatal(err)
	}
	e.cust = c
	period := &billing.DateRange{Start: billing.Date{Year: 2024, Month: 7, Day: 1}, EndInclusive: billing.Date{Year: 2024, Month: 7, Day: 31}}
	inv := e.invoice(billing.CurrencyGBP, billing.InvoiceUpdateParams{BillingPeriod: period})
	e.line(inv, "", "Platform fee", "1", "49.00", "0")
	e.Finalize(inv)
	cn, err := e.Svc.CreateCreditNote(e.Ctx, e.Account, billing.CreditNoteParams{Currency: billing.CurrencyGBP, CustomerID: c.ID, InvoiceID: inv})
	if err != nil {
		t.Fatal(err)
	}
	if got := billing.FormatTimestamp(*cn.BillingPeriodStart); got != "2024-06-30T10:00:00Z" {
		t.Errorf("billingPeriodStart %s, want Kiritimati's midnight 2024-06-30T10:00:00Z", got)
	}
	d, err := e.Svc.PrintableCreditNote(e.Ctx, e.Account, cn.ID)
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
