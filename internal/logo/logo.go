// Package logo checks and normalizes merchant logos: a PNG or JPEG image is
// decoded, scaled down to what a document prints, flattened onto white and
// re-encoded as PNG, so that what is stored and embedded in documents is
// always a small, plain image the library produced itself.
package logo

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
)

// The limits of an uploaded logo, and the box it is scaled down into.
const (
	MaxBytes  = 1 << 20 // 1 MiB
	MaxPixels = 2000    // per side
	BoxWidth  = 600     // pixels
	BoxHeight = 300     // pixels
)

// ErrInvalid is wrapped by every error about the image itself (as opposed
// to an encoder failure).
var ErrInvalid = errors.New("invalid logo")

// Normalize returns data, a PNG or JPEG image of at most MaxBytes and
// MaxPixels per side, as a PNG scaled down to fit BoxWidth × BoxHeight
// (never scaled up) with transparency flattened onto white.
func Normalize(data []byte) ([]byte, error) {
	if len(data) > MaxBytes {
		return nil, fmt.Errorf("%w: the logo is %d bytes, above the limit of %d", ErrInvalid, len(data), MaxBytes)
	}
	var decode func([]byte) (image.Image, error)
	var config func([]byte) (image.Config, error)
	switch {
	case bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n")):
		decode = func(b []byte) (image.Image, error) { return png.Decode(bytes.NewReader(b)) }
		config = func(b []byte) (image.Config, error) { return png.DecodeConfig(bytes.NewReader(b)) }
	case bytes.HasPrefix(data, []byte("\xff\xd8")):
		decode = func(b []byte) (image.Image, error) { return jpeg.Decode(bytes.NewReader(b)) }
		config = func(b []byte) (image.Config, error) { return jpeg.DecodeConfig(bytes.NewReader(b)) }
	default:
		return nil, fmt.Errorf("%w: the logo must be a PNG or JPEG image", ErrInvalid)
	}
	// The size is checked before the pixels are decoded, so a small file
	// claiming a huge image costs nothing.
	cfg, err := config(data)
	if err != nil {
		return nil, fmt.Errorf("%w: the image cannot be read: %v", ErrInvalid, err)
	}
	if cfg.Width < 1 || cfg.Height < 1 || cfg.Width > MaxPixels || cfg.Height > MaxPixels {
		return nil, fmt.Errorf("%w: the logo is %dx%d pixels; at most %dx%d are accepted", ErrInvalid, cfg.Width, cfg.Height, MaxPixels, MaxPixels)
	}
	img, err := decode(data)
	if err != nil {
		return nil, fmt.Errorf("%w: the image cannot be read: %v", ErrInvalid, err)
	}
	var out bytes.Buffer
	if err := png.Encode(&out, shrink(img)); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// shrink returns img scaled down to fit the box (each pixel the average of
// the source pixels it covers), over white.
func shrink(img image.Image) *image.RGBA {
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	if w > BoxWidth {
		h, w = max(1, h*BoxWidth/w), BoxWidth
	}
	if h > BoxHeight {
		w, h = max(1, w*BoxHeight/h), BoxHeight
	}
	dst := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		y0, y1 := b.Min.Y+y*b.Dy()/h, b.Min.Y+max((y+1)*b.Dy()/h, y*b.Dy()/h+1)
		for x := range w {
			x0, x1 := b.Min.X+x*b.Dx()/w, b.Min.X+max((x+1)*b.Dx()/w, x*b.Dx()/w+1)
			dst.SetRGBA(x, y, average(img, x0, y0, x1, y1))
		}
	}
	return dst
}

// average is the mean colour of the source rectangle, composed over white.
func average(img image.Image, x0, y0, x1, y1 int) color.RGBA {
	var r, g, bl, n uint64
	for y := y0; y < y1; y++ {
		for x := x0; x < x1; x++ {
			cr, cg, cb, ca := img.At(x, y).RGBA() // premultiplied, 16-bit
			white := 0xffff - uint64(ca)
			r += uint64(cr) + white
			g += uint64(cg) + white
			bl += uint64(cb) + white
			n++
		}
	}
	return color.RGBA{R: uint8(r / n >> 8), G: uint8(g / n >> 8), B: uint8(bl / n >> 8), A: 0xff}
}
