package render_test

import (
	"flag"
	"image"
	"image/color"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

var picture = flag.String("picture", "", "write a PNG of a rendered invoice's first page to this path (pdftoppm): the README's picture")

// TestPicture makes the README's picture of a rendered invoice:
//
//	go test ./render -run TestPicture -picture "$PWD/docs/invoice.png"
func TestPicture(t *testing.T) {
	if *picture == "" {
		t.Skip("no -picture path")
	}
	e := newEnv(t, "Müller GmbH")
	if _, err := e.Svc.PutMerchantLogo(e.Ctx, e.Account, showLogo(t)); err != nil {
		t.Fatal(err)
	}
	pdf := e.invoicePDF(gbpInvoice(e))
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "invoice.pdf"), pdf, 0o600); err != nil {
		t.Fatal(err)
	}
	out := strings.TrimSuffix(*picture, ".png")
	cmd := exec.Command("pdftoppm", "-r", "72", "-png", "-singlefile", "-f", "1", "-l", "1", filepath.Join(dir, "invoice.pdf"), out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("pdftoppm: %v %s", err, b)
	}
}

// showLogo is a small made-up logo: three bars in the merchant's colour.
func showLogo(t *testing.T) []byte {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, 120, 60))
	for i, h := range []int{30, 45, 60} {
		for x := i * 40; x < i*40+30; x++ {
			for y := 60 - h; y < 60; y++ {
				img.Set(x, y, color.NRGBA{0x7a, 0x1f, 0x5c, 0xff})
			}
		}
	}
	return encodePNG(t, img)
}
