package render_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/billingd/billing"
	"github.com/billingd/billing/render"
)

// wordBox matches the word boxes pdftotext -bbox finds: page, x and y extents.
var wordBox = regexp.MustCompile(`<word xMin="([0-9.]+)" yMin="([0-9.]+)" xMax="([0-9.]+)" yMax="([0-9.]+)">([^<]*)</word>`)

// longText is n characters of words of varied length.
func longText(n int) string {
	words := []string{"invoice", "Ωmega", "Ромашка", "straße", "a", "consolidated", "usage-based", "2,000.00"}
	var out []rune
	for i := 0; len(out) < n; i++ {
		out = append(append(out, []rune(words[i%len(words)])...), ' ')
	}
	return strings.TrimSpace(string(out[:n]))
}

// TestLongTextStaysOnThePage: fields at the Service's default length
// limit (1,000 characters), a word longer than any column, and pages of
// custom fields wrap inside their columns and run on to the next pages:
// every word pdftotext finds lies within the page's margins.
func TestLongTextStaysOnThePage(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("pdftotext"); err != nil {
		t.Skip("pdftotext is not installed")
	}
	d := printable(30)
	unbroken := strings.Repeat("X", 300)
	d.Invoice.CustomerLegalCompanyName = longText(1000)
	d.Invoice.Memo = longText(1000)
	d.Invoice.PurchaseOrderNumber = unbroken
	d.InvoiceLines[0].Title = unbroken + " " + longText(600)
	d.InvoiceLines[0].Description = longText(1000)
	d.InvoiceGroups[0].Title = longText(1000)
	d.Merchant.LegalCompanyName = longText(300)
	d.Merchant.CustomFields = nil
	for i := range 40 { // several pages of custom fields: they run on
		d.Merchant.CustomFields = append(d.Merchant.CustomFields, billing.KeyValue{Key: strconv.Itoa(i), Value: longText(1000)})
	}
	pdf, err := render.PDF(d)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "long.pdf")
	if err := os.WriteFile(path, pdf, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("pdftotext", "-bbox", path, "-").Output()
	if err != nil {
		t.Fatal(err)
	}
	const pageW, pageH, margin = 595.28, 841.89, 41.5
	var text strings.Builder
	for _, m := range wordBox.FindAllStringSubmatch(string(out), -1) {
		var box [4]float64
		for i := range box {
			box[i], _ = strconv.ParseFloat(m[i+1], 64)
		}
		if box[3]-box[1] > 40 { // the DRAFT or VOID mark across the page
			continue
		}
		if box[0] < margin || box[2] > pageW-margin || box[1] < 30 || box[3] > pageH-20 {
			t.Errorf("word %.30q at x %.1f-%.1f y %.1f-%.1f leaves the page's margins", m[5], box[0], box[2], box[1], box[3])
		}
		text.WriteString(m[5])
	}
	if strings.Count(text.String(), unbroken) < 2 {
		t.Errorf("the 300-character word is not printed whole in the PO number and the line title")
	}
}
