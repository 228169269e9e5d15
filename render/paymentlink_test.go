package render_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/billingd/billing"
	"github.com/billingd/billing/internal/pdftext"
	"github.com/billingd/billing/render"
)

// TestPaymentLinkPrinted: an invoice's payment link is printed in its HTML
// and PDF when its render settings show it, and not when they hide it; it
// is a link (an anchor in the HTML, a URI link annotation in the PDF).
func TestPaymentLinkPrinted(t *testing.T) {
	t.Parallel()
	const link = "https://checkout.stripe.com/c/pay/cs_test_123"
	for _, display := range []string{billing.ShowPaymentLink, billing.HidePaymentLink} {
		d := printable(3)
		d.Invoice.PaymentLink, d.Invoice.RenderSettings.PaymentLinkDisplay = link, display
		html, err := render.HTML(d)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(string(html), link); got != (display == billing.ShowPaymentLink) {
			t.Errorf("%s: link in the HTML %v", display, got)
		}
		if got := strings.Contains(string(html), `<a href="`+link+`">`); got != (display == billing.ShowPaymentLink) {
			t.Errorf("%s: an anchor to the link in the HTML %v", display, got)
		}
		pdf, err := render.PDF(d)
		if err != nil {
			t.Fatal(err)
		}
		if got := bytes.Contains(pdf, []byte("/S /URI /URI ("+link+")")); got != (display == billing.ShowPaymentLink) {
			t.Errorf("%s: a link annotation to the link in the PDF %v", display, got)
		}
		text := pdftext.Text(t, pdf)
		if got := strings.Contains(strings.Join(strings.Fields(text), ""), link); got != (display == billing.ShowPaymentLink) {
			t.Errorf("%s: link in the PDF %v", display, got)
		}
	}
}
