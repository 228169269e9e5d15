package einvoice_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/billingd/billing/einvoice"
)

var update = flag.Bool("update", false, "rewrite the samples under docs/einvoice/")

// samples are the files committed under docs/einvoice/: a sample of each
// format, written from the corpus.
var samples = []struct {
	file, doc string
	format    einvoice.Format
}{
	{"invoice-ubl.xml", "gbp-groups-two-rates", einvoice.UBL},
	{"credit-note-ubl.xml", "credit-note", einvoice.UBL},
	{"invoice-cii.xml", "discounts-and-credits", einvoice.CII},
	{"reverse-charge-cii.xml", "eur-reverse-charge", einvoice.CII},
	{"xrechnung-cii.xml", "xrechnung", einvoice.CII},
	{"invoice-facturx.pdf", "gbp-groups-two-rates", einvoice.FacturX},
}

// TestSamplesUpToDate keeps the samples in docs/einvoice/ what billingd
// writes today (go test ./einvoice -run TestSamplesUpToDate -update
// rewrites them); TestCorpusValidates validates the same documents.
func TestSamplesUpToDate(t *testing.T) {
	docs := map[string]sample{}
	for _, s := range sharedCorpus(t) {
		docs[s.name] = s
	}
	for _, s := range samples {
		data, _, err := einvoice.Write(docs[s.doc].doc, s.format)
		if err != nil {
			t.Fatalf("%s: %v", s.file, err)
		}
		path := filepath.Join("..", "docs", "einvoice", s.file)
		if *update {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		old, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%s: %v (go test ./einvoice -run TestSamplesUpToDate -update writes it)", s.file, err)
		}
		if !bytes.Equal(old, data) {
			t.Errorf("docs/einvoice/%s is not what billingd writes now: go test ./einvoice -run TestSamplesUpToDate -update", s.file)
		}
	}
}
