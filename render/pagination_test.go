package render

import (
	"fmt"
	"strings"
	"testing"

	"github.com/billingd/billing"
	"github.com/billingd/billing/internal/pdftext"
)

// hostileDocument is a draft invoice whose lines have the shapes that
// break layouts: one 900-character word, a description of 1,000 short
// lines, right-to-left text, emoji and control characters.
func hostileDocument() *billing.PrintableDocument {
	var many strings.Builder
	for i := range 1000 {
		fmt.Fprintf(&many, "entry %04d of the usage report\n", i+1)
	}
	word := ""
	for i := 0; len(word) < 900; i++ {
		word += fmt.Sprintf("w%03d", i)
	}
	shapes := []struct{ title, desc string }{
		{"Long word", word},
		{"Many lines", many.String()},
		{"Right to left", "שלום עולם, חשבונית מספר 7\nمرحبا بالعالم، فاتورة رقم ٧"},
		{"Emoji 😀", "usage ✓ 😀 done ☺"},
		{"Control\x07 characters", "tab\there\x00nul\x1besc\x7fdel\u0085nel end"},
	}
	one, tax := billing.MustDecimal("1.00"), billing.MustDecimal("0.20")
	d := &billing.PrintableDocument{Kind: billing.DocumentInvoice, TemplateVersion: 1,
		Merchant: billing.MerchantDetails{LegalCompanyName: "Acme Widgets Ltd"}}
	inv := &billing.Invoice{DocumentHeader: billing.DocumentHeader{ID: "inv", Status: billing.StatusDraft, Currency: billing.CurrencyGBP, CustomerLegalCompanyName: "Müller GmbH"}}
	for i, s := range shapes {
		d.InvoiceLines = append(d.InvoiceLines, billing.InvoiceLineItem{LineItem: billing.LineItem{ID: fmt.Sprint(i), Index: i,
			Title: s.title, Description: s.desc, Quantity: billing.MustDecimal("1"), Rate: one, TaxRate: billing.MustDecimal("0.2"),
			Totals: billing.Totals{NetTotal: one, TotalTax: tax, GrossTotal: one.Add(tax)}, RateDisplay: billing.RateDisplayAbsolute}})
	}
	inv.Totals = billing.Totals{NetTotal: one, TotalTax: tax, GrossTotal: one.Add(tax)}
	inv.AmountPaid, inv.AmountCredited, inv.AmountDue = billing.MustDecimal("0"), billing.MustDecimal("0"), inv.GrossTotal
	d.Invoice = inv
	return d
}

// TestEveryWrappedLineIsPrinted: every line the layout wraps a line
// item's title and description into is in the text pdftotext extracts,
// however tall the item (a block taller than a page continues on the next
// pages, under the repeated table header) and whatever its script.
func TestEveryWrappedLineIsPrinted(t *testing.T) {
	t.Parallel()
	d := hostileDocument()
	pdf, err := PDF(d)
	if err != nil {
		t.Fatal(err)
	}
	text := pdftext.Text(t, pdf)
	pages := pdftext.Pages(text)
	if len(pages) < 10 {
		t.Errorf("%d pages for 1,000 description lines, want them spread over many", len(pages))
	}
	for i, p := range pages[1:] {
		if strings.Contains(p, "entry ") && !strings.Contains(p, "DESCRIPTION") {
			t.Errorf("page %d does not repeat the table header", i+2)
		}
	}
	// The lines as the layout wraps them, drawn by the same writer.
	v, err := build(d)
	if err != nil {
		t.Fatal(err)
	}
	w := newPDFWriter(v)
	if err := w.start(); err != nil {
		t.Fatal(err)
	}
	missing := 0
	for _, s := range v.Sections {
		for _, l := range s.Lines {
			row := w.lineBlock(&l)
			for _, tl := range row.cells[0] {
				if want := strings.TrimSpace(tl.text); want != "" && !extracted(text, want) {
					if missing++; missing <= 10 {
						t.Errorf("the wrapped line %q is not in the PDF's text", want)
					}
				}
			}
		}
	}
	if missing > 10 {
		t.Errorf("... %d wrapped lines are missing in all", missing)
	}
}

// extracted reports whether want, a wrapped line, is in text, what
// pdftotext extracted. A line with right-to-left text is drawn in visual
// order and pdftotext puts its runs back in an order of its own, with
// direction marks: each of its words must be there.
func extracted(text, want string) bool {
	text = strings.Map(func(r rune) rune {
		if r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069 || r == 0x200e || r == 0x200f {
			return -1
		}
		return r
	}, text)
	if strings.Contains(text, want) {
		return true
	}
	if visual(want) == want {
		return false // no right-to-left text
	}
	for _, word := range strings.Fields(want) {
		if !strings.Contains(text, strings.Trim(word, ",،")) {
			return false
		}
	}
	return true
}
