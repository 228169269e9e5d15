// Package pdftext reads rendered PDFs back as text for tests, with
// pdftotext (Debian's poppler-utils, which .ci/run installs): what a
// reader's tools extract is what the tests assert.
package pdftext

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Text is the text pdftotext extracts from pdf in layout mode, pages
// separated by form feeds. Without pdftotext the test is skipped, or fails
// under CI.
func Text(tb testing.TB, pdf []byte) string {
	tb.Helper()
	bin, err := exec.LookPath("pdftotext")
	if err != nil {
		if os.Getenv("CI") != "" {
			tb.Fatalf("pdftotext is not installed (Debian: poppler-utils); .ci/run installs it")
		}
		tb.Skip("pdftotext is not installed (Debian: poppler-utils)")
	}
	path := filepath.Join(tb.TempDir(), "doc.pdf")
	if err := os.WriteFile(path, pdf, 0o600); err != nil {
		tb.Fatal(err)
	}
	out, err := exec.Command(bin, "-layout", "-enc", "UTF-8", path, "-").Output()
	if err != nil {
		tb.Fatalf("pdftotext: %v", err)
	}
	return string(out)
}

// Pages splits extracted text into its pages.
func Pages(text string) []string {
	return strings.Split(strings.TrimRight(text, "\f"), "\f")
}

// Row reports whether some line of text holds every field, in order.
func Row(text string, fields ...string) bool {
	for _, l := range strings.Split(text, "\n") {
		rest, ok := l, true
		for _, f := range fields {
			i := strings.Index(rest, f)
			if i < 0 {
				ok = false
				break
			}
			rest = rest[i+len(f):]
		}
		if ok {
			return true
		}
	}
	return false
}

// Contains fails tb for every string of want missing from text, and logs
// the text when something is missing.
func Contains(tb testing.TB, text string, want ...string) {
	tb.Helper()
	missing := false
	for _, w := range want {
		if !strings.Contains(text, w) {
			tb.Errorf("the extracted text lacks %q", w)
			missing = true
		}
	}
	if missing {
		tb.Logf("extracted text:\n%s", text)
	}
}
