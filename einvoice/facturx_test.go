package einvoice_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/billingd/billing"
	"github.com/billingd/billing/einvoice"
	"github.com/billingd/billing/internal/pdftext"
	"github.com/billingd/billing/render"
)

// TestFacturXKeepsThePages checks that the Factur-X PDF of every corpus
// document shows exactly the text of the plain PDF (pdftotext), carries
// exactly one attachment, factur-x.xml (pdfdetach -list), and that the
// attachment is the CII invoice, byte for byte.
func TestFacturXKeepsThePages(t *testing.T) {
	detach, err := exec.LookPath("pdfdetach")
	if err != nil {
		missing(t, "pdfdetach is not installed (Debian: poppler-utils)")
	}
	for _, s := range sharedCorpus(t) {
		t.Run(s.name, func(t *testing.T) {
			plain, err := render.PDF(s.doc)
			if err != nil {
				t.Fatal(err)
			}
			fx, _, err := einvoice.Write(s.doc, einvoice.FacturX)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := pdftext.Text(t, fx), pdftext.Text(t, plain); got != want {
				t.Fatalf("pdftotext of the Factur-X PDF differs from the plain PDF's:\n%s\n---\n%s", got, want)
			}
			dir := t.TempDir()
			path := filepath.Join(dir, "doc.pdf")
			if err := os.WriteFile(path, fx, 0o600); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(detach, "-list", path).CombinedOutput()
			if err != nil {
				t.Fatalf("pdfdetach -list: %v\n%s", err, out)
			}
			if lines := strings.Split(strings.TrimSpace(string(out)), "\n"); len(lines) != 2 || lines[0] != "1 embedded files" ||
				lines[1] != "1: factur-x.xml" {
				t.Fatalf("pdfdetach -list says:\n%s\nwant exactly one attachment, factur-x.xml", out)
			}
			saved := filepath.Join(dir, "out.xml")
			if out, err := exec.Command(detach, "-save", "1", "-o", saved, path).CombinedOutput(); err != nil {
				t.Fatalf("pdfdetach -save: %v\n%s", err, out)
			}
			got, err := os.ReadFile(saved)
			if err != nil {
				t.Fatal(err)
			}
			inv, err := einvoice.Build(s.doc)
			if err != nil {
				t.Fatal(err)
			}
			cii, err := einvoice.WriteCII(inv)
			if err != nil {
				t.Fatal(err)
			}
			if !einvoice.XRechnung(inv) && !bytes.Equal(got, cii) {
				t.Fatal("the embedded factur-x.xml is not the document's CII")
			}
			for _, want := range []string{"<pdfaid:part>3</pdfaid:part>", "<fx:ConformanceLevel>EN 16931</fx:ConformanceLevel>",
				"/AFRelationship /Alternative", "/OutputIntents", "/Subtype /text#2Fxml"} {
				if !bytes.Contains(fx, []byte(want)) {
					t.Errorf("the Factur-X PDF lacks %s", want)
				}
			}
		})
	}
}

// TestFacturXPaymentLinkIsPrinted: an invoice's payment link is a link
// annotation in its PDF, and PDF/A requires every annotation to be printed:
// the Factur-X PDF carries the link with the print flag (/F 4), which
// gopdf does not write.
func TestFacturXPaymentLinkIsPrinted(t *testing.T) {
	for _, s := range sharedCorpus(t) {
		if s.name != "payment-link" {
			continue
		}
		d := *s.doc
		inv := *d.Invoice
		inv.PaymentLink, inv.RenderSettings.PaymentLinkDisplay = "https://pay.example.com/i/1", billing.ShowPaymentLink
		d.Invoice = &inv
		fx, _, err := einvoice.Write(&d, einvoice.FacturX)
		if err != nil {
			t.Fatal(err)
		}
		annots := bytes.Count(fx, []byte("/Type /Annot "))
		if annots == 0 || !bytes.Contains(fx, []byte("/URI (https://pay.example.com/i/1)")) {
			t.Fatalf("no link annotation to the payment link in the Factur-X PDF (%d annotations)", annots)
		}
		if flagged := bytes.Count(fx, []byte("/Type /Annot /F 4 ")); flagged != annots {
			t.Errorf("%d of %d annotations carry the print flag /F 4", flagged, annots)
		}
		return
	}
	t.Fatal("the corpus has no payment-link document")
}
