package render_test

import (
	"fmt"
	"testing"

	"github.com/billingd/billing"
	"github.com/billingd/billing/render"
)

// printable is a finalized GBP invoice of n lines (1 × 1.00 at 20% each)
// in two groups, as the store would return it.
func printable(n int) *billing.PrintableDocument {
	d := &billing.PrintableDocument{Kind: billing.DocumentInvoice, Merchant: merchant, TemplateVersion: 1}
	inv := &billing.Invoice{DocumentHeader: billing.DocumentHeader{ID: "inv", Status: billing.StatusFinal, Currency: billing.CurrencyGBP,
		CustomerLegalCompanyName: "Müller GmbH", CustomerEmails: []string{"ap@customer.test"},
		CustomerBillingAddress: billing.Address{Line1: "Hauptstraße 5", Town: "München", Postcode: "80331", Country: "DE"}},
		InvoiceNumber: "INV00042", IssueDate: billing.Date{Year: 2026, Month: 11, Day: 24}, DueDate: billing.Date{Year: 2026, Month: 12, Day: 24}}
	one, tax, zero := billing.MustDecimal("1.00"), billing.MustDecimal("0.20"), billing.MustDecimal("0.00")
	d.InvoiceGroups = []billing.InvoiceLineItemGroup{
		{LineItemGroup: billing.LineItemGroup{ID: "g1", Title: "Platform", Index: 0}},
		{LineItemGroup: billing.LineItemGroup{ID: "g2", Title: "Usage", Index: 1}},
	}
	netTotal, taxTotal := zero, zero
	for i := range n {
		g := &d.InvoiceGroups[i%2].LineItemGroup
		l := billing.InvoiceLineItem{LineItem: billing.LineItem{ID: fmt.Sprint(i), GroupID: g.ID, Index: i,
			Title: fmt.Sprintf("Line %04d", i+1), Description: "Metered API calls in the period, billed per call",
			Quantity: billing.MustDecimal("1"), Rate: one, TaxRate: billing.MustDecimal("0.2"),
			Totals: billing.Totals{NetTotal: one, TotalTax: tax, GrossTotal: one.Add(tax)}, RateDisplay: billing.RateDisplayAbsolute}}
		g.NetTotal, g.TotalTax = g.NetTotal.Add(one), g.TotalTax.Add(tax)
		netTotal, taxTotal = netTotal.Add(one), taxTotal.Add(tax)
		d.InvoiceLines = append(d.InvoiceLines, l)
	}
	inv.Totals = billing.Totals{NetTotal: netTotal, TotalTax: taxTotal, GrossTotal: netTotal.Add(taxTotal)}
	inv.AmountPaid, inv.AmountCredited, inv.AmountDue = zero, zero, inv.GrossTotal
	d.Invoice = inv
	return d
}

// BenchmarkRenderPDF renders invoices of 20 and 1,000 lines (targets: 20 ms
// and 1 s).
func BenchmarkRenderPDF(b *testing.B) {
	for _, n := range []int{20, 1000} {
		d := printable(n)
		b.Run(fmt.Sprintf("lines=%d", n), func(b *testing.B) {
			size := 0
			for b.Loop() {
				pdf, err := render.PDF(d)
				if err != nil {
					b.Fatal(err)
				}
				size = len(pdf)
			}
			b.ReportMetric(float64(size), "bytes/pdf")
		})
	}
}

// BenchmarkRenderHTML renders the same invoices as HTML.
func BenchmarkRenderHTML(b *testing.B) {
	for _, n := range []int{20, 1000} {
		d := printable(n)
		b.Run(fmt.Sprintf("lines=%d", n), func(b *testing.B) {
			for b.Loop() {
				if _, err := render.HTML(d); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
