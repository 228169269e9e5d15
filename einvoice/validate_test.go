package einvoice_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/billingd/billing/einvoice"
)

// The EN 16931 validator is an external kit (the official CEN/TC 434
// Schematron compiled to XSLT, the CII D16B schema, run with Saxon-HE,
// xmllint and poppler): BILLINGD_EINVOICE_VALIDATOR names its script,
// which takes files and exits 0 when all are valid, 1 when some are not
// and 2 when its tools are missing. docs/e-invoicing.md says how to get
// it. Without it the validation tests skip; with CI=true they fail.

// validatorScript returns the validator's script, or skips (fails in CI).
func validatorScript(t testing.TB) string {
	t.Helper()
	script := os.Getenv("BILLINGD_EINVOICE_VALIDATOR")
	if script == "" {
		missing(t, "BILLINGD_EINVOICE_VALIDATOR is not set (the EN 16931 validation kit's validate.sh; docs/e-invoicing.md)")
	}
	if _, err := os.Stat(script); err != nil {
		missing(t, "BILLINGD_EINVOICE_VALIDATOR names no file: "+err.Error())
	}
	return script
}

// missing skips the test, or fails it under CI, where a skipped
// validation must not pass unnoticed.
func missing(t testing.TB, why string) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf("e-invoice validation cannot run: %s", why)
	}
	t.Skipf("e-invoice validation skipped: %s", why)
}

// validate runs the validator on files and returns its output; it fails
// t when a file is invalid.
func validate(t testing.TB, files ...string) string {
	t.Helper()
	script := validatorScript(t)
	cmd := exec.Command("bash", append([]string{script}, files...)...)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return string(out)
	case errors.As(err, &exit) && exit.ExitCode() == 2:
		missing(t, "the validator's tools are missing:\n"+string(out))
	case errors.As(err, &exit) && exit.ExitCode() == 1:
		t.Fatalf("EN 16931 validation failed:\n%s", out)
	default:
		t.Fatalf("running the validator: %v\n%s", err, out)
	}
	return ""
}

var (
	corpusOnce sync.Once
	corpusDocs []sample
)

// sharedCorpus builds the corpus once for the package's tests (it is
// read-only: the documents are in memory once read). The test that builds
// it reports its failure; later tests find it missing.
func sharedCorpus(t *testing.T) []sample {
	t.Helper()
	corpusOnce.Do(func() { corpusDocs = corpus(t) })
	if corpusDocs == nil {
		t.Fatal("the corpus could not be built (see the first test that needed it)")
	}
	return corpusDocs
}

// writeAll writes every sample in every format to dir and returns the
// files.
func writeAll(t *testing.T, dir string, docs []sample) []string {
	t.Helper()
	var files []string
	for _, s := range docs {
		for _, f := range []einvoice.Format{einvoice.UBL, einvoice.CII, einvoice.FacturX} {
			data, _, err := einvoice.Write(s.doc, f)
			if err != nil {
				t.Fatalf("%s as %s: %v", s.name, f, err)
			}
			ext := ".xml"
			if f == einvoice.FacturX {
				ext = ".pdf"
			}
			path := filepath.Join(dir, s.name+"-"+string(f)+ext)
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
			files = append(files, path)
		}
	}
	return files
}

// TestCorpusValidates writes every document of the corpus as UBL, CII and
// Factur-X and runs the EN 16931 validator on all of them: every file
// valid, no fatal rule.
func TestCorpusValidates(t *testing.T) {
	validatorScript(t)
	docs := sharedCorpus(t)
	files := writeAll(t, t.TempDir(), docs)
	out := validate(t, files...)
	want := "validate: " + strconv.Itoa(len(files)) + " files, " + strconv.Itoa(len(files)) + " valid, 0 invalid"
	if !strings.Contains(out, want) {
		t.Fatalf("validator output lacks %q:\n%s", want, out)
	}
	t.Logf("%d files validated", len(files))
}

// TestValidatorCatchesABrokenFile proves the test above can fail: a UBL
// invoice whose payable amount was changed is refused.
func TestValidatorCatchesABrokenFile(t *testing.T) {
	validatorScript(t)
	docs := sharedCorpus(t)
	data, _, err := einvoice.Write(docs[0].doc, einvoice.UBL)
	if err != nil {
		t.Fatal(err)
	}
	broken := bytes.Replace(data, []byte("<cbc:PayableAmount currencyID=\"GBP\">"), []byte("<cbc:PayableAmount currencyID=\"GBP\">1"), 1)
	if bytes.Equal(broken, data) {
		t.Fatal("the payable amount was not found")
	}
	path := filepath.Join(t.TempDir(), "broken.xml")
	if err := os.WriteFile(path, broken, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("bash", validatorScript(t), path).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "BR-CO-16") {
		t.Fatalf("the validator accepted a wrong payable amount (err %v):\n%s", err, out)
	}
}
