package logo_test

import (
	"bytes"
	"errors"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"testing"

	"github.com/billingd/billing/internal/logo"
)

func encodePNG(t *testing.T, img image.Image) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func decode(t *testing.T, b []byte) image.Image {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("the normalized logo is not a PNG: %v", err)
	}
	return img
}

func TestNormalizeFlattensAndShrinks(t *testing.T) {
	t.Parallel()
	src := image.NewNRGBA(image.Rect(0, 0, 1200, 200))
	for x := range 1200 {
		for y := range 200 {
			if x < 600 {
				src.Set(x, y, color.NRGBA{0, 0, 0, 0}) // transparent
			} else {
				src.Set(x, y, color.NRGBA{200, 10, 10, 255})
			}
		}
	}
	out, err := logo.Normalize(encodePNG(t, src))
	if err != nil {
		t.Fatalf("Normalize: %v", err)
	}
	img := decode(t, out)
	if b := img.Bounds(); b.Dx() != 600 || b.Dy() != 100 {
		t.Fatalf("normalized to %v, want 600x100 (the aspect kept, inside 600x300)", b)
	}
	if r, g, b, a := img.At(10, 50).RGBA(); r>>8 != 255 || g>>8 != 255 || b>>8 != 255 || a>>8 != 255 {
		t.Errorf("a transparent pixel became %d,%d,%d,%d; want opaque white", r>>8, g>>8, b>>8, a>>8)
	}
	if r, g, _, _ := img.At(500, 50).RGBA(); r>>8 != 200 || g>>8 != 10 {
		t.Errorf("a red pixel became %d,%d; want 200,10", r>>8, g>>8)
	}
}

func TestNormalizeJPEG(t *testing.T) {
	t.Parallel()
	src := image.NewRGBA(image.Rect(0, 0, 64, 32))
	var b bytes.Buffer
	if err := jpeg.Encode(&b, src, nil); err != nil {
		t.Fatal(err)
	}
	out, err := logo.Normalize(b.Bytes())
	if err != nil {
		t.Fatalf("Normalize: %v", err)
	}
	if got := decode(t, out).Bounds(); got.Dx() != 64 || got.Dy() != 32 {
		t.Errorf("a small logo was resized to %v", got)
	}
}

func TestNormalizeRefuses(t *testing.T) {
	t.Parallel()
	huge := encodePNG(t, image.NewGray(image.Rect(0, 0, 2001, 10)))
	truncated := encodePNG(t, image.NewGray(image.Rect(0, 0, 10, 10)))
	for name, data := range map[string][]byte{
		"NotAnImage":   []byte("%PDF-1.4 not an image"),
		"Empty":        nil,
		"GIF":          []byte("GIF89a\x01\x00\x01\x00"),
		"TooWide":      huge,
		"TooLarge":     append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, logo.MaxBytes)...),
		"TruncatedPNG": truncated[:len(truncated)-20],
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if _, err := logo.Normalize(data); !errors.Is(err, logo.ErrInvalid) {
				t.Errorf("Normalize: %v, want ErrInvalid", err)
			}
		})
	}
}
