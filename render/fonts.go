package render

import (
	_ "embed" // the fallback font
	"slices"
	"strings"
	"sync"
	"unicode"

	"golang.org/x/image/font/gofont/goregular"
	"golang.org/x/image/font/sfnt"
	"golang.org/x/text/unicode/bidi"
)

// fallback is the font family of the characters the Go fonts lack
// (fonts/README.md).
const fallback = "DejaVuSans"

//go:embed fonts/DejaVuSans.ttf
var dejaVuSans []byte

// coverage answers which font draws a rune: the Go fonts, the fallback, or
// neither. The fonts are parsed once per process.
var coverage = sync.OnceValue(func() *fontCoverage {
	c := &fontCoverage{}
	c.goFont, _ = sfnt.Parse(goregular.TTF)
	c.fallback, _ = sfnt.Parse(dejaVuSans)
	return c
})

type fontCoverage struct {
	mu               sync.Mutex
	buf              sfnt.Buffer
	goFont, fallback *sfnt.Font
}

// has reports whether f has a glyph for r.
func (c *fontCoverage) has(f *sfnt.Font, r rune) bool {
	if f == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	i, err := f.GlyphIndex(&c.buf, r)
	return err == nil && i != 0
}

// inGoFont reports whether the Go fonts draw r; ASCII and Latin-1 always.
func inGoFont(r rune) bool {
	return r < 0x250 || coverage().has(coverage().goFont, r)
}

// clean makes text printable: a tab is a space, other control characters
// (C0, DEL, C1; a newline is kept for wrap), characters no font has and
// characters outside the Basic Multilingual Plane (most emoji: the PDF
// writer's text map cannot name them, so they would extract as other
// characters) become U+FFFD, the replacement character, so that the
// reader sees where something unprintable was.
func clean(text string) string {
	ok := true
	for _, r := range text {
		if !printable(r) {
			ok = false
			break
		}
	}
	if ok {
		return text
	}
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\t':
			return ' '
		case r == '\n':
			return r
		case !printable(r):
			return unicode.ReplacementChar
		}
		return r
	}, text)
}

// printable reports whether r is drawn as itself.
func printable(r rune) bool {
	switch {
	case r == '\n':
		return true
	case unicode.IsControl(r), r > 0xFFFF:
		return false
	}
	return inGoFont(r) || coverage().has(coverage().fallback, r)
}

// run is a piece of a line set in one font.
type run struct {
	fallback bool
	text     string
}

// runs splits text into runs of the Go fonts and of the fallback; one run
// when the Go fonts draw all of it.
func runs(text string) []run {
	var out []run
	start, fb := 0, false
	for i, r := range text {
		f := fb // a space stays in the run it is in
		if r != ' ' {
			f = !inGoFont(r)
		}
		if i > start && f != fb {
			out = append(out, run{fb, text[start:i]})
			start = i
		}
		if i == start {
			fb = f
		}
	}
	if start < len(text) {
		out = append(out, run{fb, text[start:]})
	}
	return out
}

// visual returns a line of text in the order its characters are drawn,
// left to right: right-to-left runs (Hebrew, Arabic) reversed, and placed
// by the Unicode bidirectional algorithm's runs (golang.org/x/text's
// unicode/bidi). The paragraph's direction is its first strong
// character's. A line without right-to-left characters is returned as is.
// Arabic letters are drawn in their isolated forms: the PDF writer does
// not shape them.
//
// Long on purpose: the paragraph's direction, the runs, and their visual
// order are one algorithm (UAX #9's reordering of resolved runs).
func visual(text string) string {
	rtlFirst, hasRTL := false, false
	strong := false
	for _, r := range text {
		p, _ := bidi.LookupRune(r)
		switch p.Class() {
		case bidi.R, bidi.AL:
			hasRTL = true
			if !strong {
				rtlFirst, strong = true, true
			}
		case bidi.L:
			strong = true
		}
	}
	if !hasRTL {
		return text
	}
	dir := bidi.LeftToRight
	if rtlFirst {
		dir = bidi.RightToLeft
	}
	var p bidi.Paragraph
	if _, err := p.SetString(text, bidi.DefaultDirection(dir)); err != nil {
		return text
	}
	o, err := p.Order()
	if err != nil {
		return text
	}
	type piece struct {
		text string
		rtl  bool
	}
	pieces := make([]piece, o.NumRuns())
	for i := range pieces {
		r := o.Run(i)
		pieces[i] = piece{r.String(), r.Direction() == bidi.RightToLeft}
	}
	weak := func(s string) bool { // no strong left-to-right character
		for _, r := range s {
			if p, _ := bidi.LookupRune(r); p.Class() == bidi.L {
				return false
			}
		}
		return true
	}
	flip := func(ps []piece) {
		slices.Reverse(ps)
		for i := range ps {
			if ps[i].rtl {
				ps[i].text = bidi.ReverseString(ps[i].text)
			}
		}
	}
	if rtlFirst {
		flip(pieces)
	} else {
		for i := 0; i < len(pieces); i++ {
			if !pieces[i].rtl {
				continue
			}
			j := i // the last right-to-left run of the sequence from i
			for k := i + 1; k < len(pieces) && (pieces[k].rtl || weak(pieces[k].text)); k++ {
				if pieces[k].rtl {
					j = k
				}
			}
			flip(pieces[i : j+1])
			i = j
		}
	}
	var b strings.Builder
	for _, pc := range pieces {
		b.WriteString(pc.text)
	}
	return b.String()
}
