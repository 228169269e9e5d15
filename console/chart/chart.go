// Package chart draws the console's charts as server-rendered SVG: a bar
// or line chart of labelled decimal values, with a title, a description,
// labelled axes, each value in a <title> (shown on hover) and the same
// numbers in a table beside the chart for screen readers and for reading
// without the picture. Nothing needs JavaScript, and nothing uses a style
// attribute, so the console's Content-Security-Policy can forbid inline
// styles: the look comes from presentation attributes and the console's
// stylesheet (the classes chart-*).
//
// Values are billing.Decimal and stay exact: the geometry is computed in
// decimals as well (value × plot height ÷ axis range, rounded to a tenth of
// a pixel only when written), so no float64 ever touches an amount.
package chart

import (
	"bytes"
	"html/template"
	"strconv"
	"strings"

	"github.com/billingd/billing"
	"github.com/billingd/billing/render"
)

// Style is how a chart draws its values.
type Style int

const (
	// Bars draws one bar per point, from the zero line to its value.
	Bars Style = iota
	// Line joins the points with a line and marks each with a dot.
	Line
)

// Point is one value of a chart: its label on the x axis and its value.
type Point struct {
	// Label names the point in its hover title and in the table
	// ("November 2026").
	Label string
	// Short is the point's text on the x axis, where a slot is narrow
	// ("Nov"); empty means Label.
	Short string
	// Value is the exact value drawn.
	Value billing.Decimal
	// Text is the value as people read it ("£1,234.50"), in the hover
	// title and the table; empty means the chart's Format of Value.
	Text string
}

// Chart describes one chart. ID must be unique within the page: the SVG's
// title and description are referenced by id (aria-labelledby).
type Chart struct {
	// ID is the chart's id on the page, a prefix of its elements' ids.
	ID string
	// Title is the chart's title: the SVG's <title>, the figure's caption and
	// the table's caption.
	Title string
	// Description says what the chart shows, for assistive technology (the
	// SVG's <desc>).
	Description string
	// XLabel and YLabel name the axes ("Month", "Invoiced (GBP)"); they are
	// also the table's column headings.
	XLabel, YLabel string
	// Style is Bars (the default) or Line.
	Style Style
	// Points are the values, drawn left to right in this order.
	Points []Point
	// Format writes an axis tick or a Point without Text; nil means the
	// decimal with thousands separators (render.Number).
	Format func(billing.Decimal) string
}

// The drawing's fixed geometry in SVG user units: the viewBox is
// width × height; the plot area leaves room for the tick labels on the
// left and the point labels below.
const (
	width       = 640
	height      = 280
	marginTop   = 16
	marginRight = 16
	marginBot   = 44
	plotHeight  = height - marginTop - marginBot
	// charWidth is the width reserved per character of a tick label: the
	// labels are small (12px) system-font digits.
	charWidth = 7
)

// Render returns the chart as HTML: a <figure> holding the SVG and, in its
// caption, the table of its values.
func Render(c Chart) (template.HTML, error) {
	d, err := layout(c)
	if err != nil {
		return "", err
	}
	var b bytes.Buffer
	if err := figure.Execute(&b, d); err != nil {
		return "", err
	}
	return template.HTML(b.String()), nil
}

// drawing is a chart laid out: every coordinate already a string of
// SVG user units.
type drawing struct {
	Chart
	Left, Right, Top, Bottom string // the plot area's edges
	LabelY                   string // baseline of the x axis labels
	XTitleX, XTitleY         string // the x axis title's position
	YTitleY                  string // the y axis title's position (rotated)
	Ticks                    []tick
	Marks                    []mark
	Path                     string // the line's points, for Style Line
}

// tick is one horizontal grid line of the y axis and its label.
type tick struct {
	Y, Text string
}

// mark is one point drawn: a bar (X, Y, W, H) or a dot (CX, CY), its
// axis label's centre (LX) and its texts.
type mark struct {
	Label, Short  string
	Text          string
	X, Y, W, H    string
	CX, CY, LX    string
	Negative, Dot bool
}

// layout computes the drawing of c: the y axis spans the values and zero,
// widened to round tick steps (1, 2 or 5 × 10^n).
func layout(c Chart) (*drawing, error) {
	if c.Format == nil {
		c.Format = render.Number
	}
	lo, hi := billing.Decimal{}, billing.Decimal{}
	for _, p := range c.Points {
		if p.Value.Cmp(lo) < 0 {
			lo = p.Value
		}
		if p.Value.Cmp(hi) > 0 {
			hi = p.Value
		}
	}
	ticks, err := axis(lo, hi)
	if err != nil {
		return nil, err
	}
	lo, hi = ticks[0], ticks[len(ticks)-1]
	d := &drawing{Chart: c}
	left := marginLeft(ticks, c.Format)
	y := func(v billing.Decimal) (billing.Decimal, error) {
		return scale(hi.Sub(v), hi.Sub(lo), plotHeight, marginTop)
	}
	for _, t := range ticks {
		ty, err := y(t)
		if err != nil {
			return nil, err
		}
		d.Ticks = append(d.Ticks, tick{Y: px(ty), Text: c.Format(t)})
	}
	zero, err := y(billing.Decimal{})
	if err != nil {
		return nil, err
	}
	d.Left, d.Right = strconv.Itoa(left), strconv.Itoa(width-marginRight)
	d.Top, d.Bottom = strconv.Itoa(marginTop), strconv.Itoa(marginTop+plotHeight)
	d.LabelY = strconv.Itoa(marginTop + plotHeight + 16)
	d.XTitleX, d.XTitleY = strconv.Itoa((left+width-marginRight)/2), strconv.Itoa(height-6)
	d.YTitleY = strconv.Itoa(marginTop + plotHeight/2)
	if err := d.place(left, zero, y); err != nil {
		return nil, err
	}
	return d, nil
}

// place lays the points out in equal slots across the plot: a bar takes
// 70% of its slot, centred; a dot sits at the slot's centre.
func (d *drawing) place(left int, zero billing.Decimal, y func(billing.Decimal) (billing.Decimal, error)) error {
	n := len(d.Points)
	if n == 0 {
		return nil
	}
	slot, err := billing.DecimalFromInt(int64(width - marginRight - left)).Quo(billing.DecimalFromInt(int64(n)))
	if err != nil {
		return err
	}
	barW := slot.Mul(billing.MustDecimal("0.7"))
	var path []string
	for i, p := range d.Points {
		x0 := billing.DecimalFromInt(int64(left)).Add(slot.Mul(billing.DecimalFromInt(int64(i))))
		centre := x0.Add(slot.Mul(billing.MustDecimal("0.5")))
		vy, err := y(p.Value)
		if err != nil {
			return err
		}
		m := mark{Label: p.Label, Short: p.Short, Text: p.Text, LX: px(centre), Negative: p.Value.Sign() < 0, Dot: d.Style == Line}
		if m.Short == "" {
			m.Short = p.Label
		}
		if m.Text == "" {
			m.Text = d.Format(p.Value)
		}
		top, bottom := vy, zero
		if m.Negative {
			top, bottom = zero, vy
		}
		m.X, m.W = px(centre.Sub(barW.Mul(billing.MustDecimal("0.5")))), px(barW)
		m.Y, m.H = px(top), px(bottom.Sub(top))
		m.CX, m.CY = px(centre), px(vy)
		path = append(path, m.CX+","+m.CY)
		d.Marks = append(d.Marks, m)
	}
	d.Path = strings.Join(path, " ")
	return nil
}

// marginLeft leaves room for the widest tick label and the y axis title.
func marginLeft(ticks []billing.Decimal, format func(billing.Decimal) string) int {
	widest := 0
	for _, t := range ticks {
		widest = max(widest, len([]rune(format(t))))
	}
	return 28 + widest*charWidth
}

// scale maps part of whole onto size units from offset: offset +
// part × size ÷ whole, exact until px rounds it.
func scale(part, whole billing.Decimal, size, offset int64) (billing.Decimal, error) {
	q, err := part.Mul(billing.DecimalFromInt(size)).Quo(whole)
	if err != nil {
		return billing.Decimal{}, err
	}
	return q.Add(billing.DecimalFromInt(offset)), nil
}

// px writes a coordinate rounded to a tenth of a unit: finer than any
// screen shows, and short in the markup.
func px(d billing.Decimal) string {
	return d.Round(1, billing.RoundHalfUp).Canonical()
}

// axis returns the y axis ticks: steps of 1, 2 or 5 × 10^n, about four of
// them, from a multiple of the step at or below lo to one at or above hi.
// All-zero values get the axis 0 to 1.
func axis(lo, hi billing.Decimal) ([]billing.Decimal, error) {
	if lo.IsZero() && hi.IsZero() {
		hi = billing.DecimalFromInt(1)
	}
	raw, err := hi.Sub(lo).Quo(billing.DecimalFromInt(4))
	if err != nil {
		return nil, err
	}
	step := niceStep(raw)
	first, err := lo.Quo(step)
	if err != nil {
		return nil, err
	}
	last, err := hi.Quo(step)
	if err != nil {
		return nil, err
	}
	var ticks []billing.Decimal
	for t := first.Floor().Mul(step); ; t = t.Add(step) {
		ticks = append(ticks, reduced(t))
		if t.Cmp(last.RoundUp().Mul(step)) >= 0 {
			return ticks, nil
		}
	}
}

// niceStep returns the smallest 1, 2 or 5 × 10^n that is at least raw (> 0).
func niceStep(raw billing.Decimal) billing.Decimal {
	a := raw.Apd()
	p := pow10(a.NumDigits() + int64(a.Exponent) - 1)
	for _, m := range []int64{1, 2, 5} {
		if s := p.Mul(billing.DecimalFromInt(m)); s.Cmp(raw) >= 0 {
			return s
		}
	}
	return p.Mul(billing.DecimalFromInt(10))
}

// pow10 returns 10^e exactly; e is an amount's magnitude, far inside the
// ±100 ParseDecimalNumber accepts.
func pow10(e int64) billing.Decimal {
	d, err := billing.ParseDecimalNumber("1e" + strconv.FormatInt(e, 10))
	if err != nil {
		return billing.DecimalFromInt(1)
	}
	return d
}

// reduced drops the trailing fractional zeros a tick inherits from its
// step (2 × 0.5 is "1.0"), so the axis reads "1".
func reduced(d billing.Decimal) billing.Decimal {
	if r, err := billing.ParseDecimalNumber(d.Canonical()); err == nil {
		return r
	}
	return d
}

// figure is the chart's markup. The SVG is an image named by its title
// and description; each mark carries its value in a <title>, which browsers
// show on hover; the table repeats every value as text.
var figure = template.Must(template.New("figure").Parse(`<figure class="chart" id="{{.ID}}">
<svg class="chart-svg" viewBox="0 0 640 280" width="640" height="280" role="img" aria-labelledby="{{.ID}}-title {{.ID}}-desc" xmlns="http://www.w3.org/2000/svg">
<title id="{{.ID}}-title">{{.Title}}</title>
<desc id="{{.ID}}-desc">{{.Description}}</desc>
<g class="chart-grid" stroke="#d0d5dd" stroke-width="1">
{{- range .Ticks}}
<line x1="{{$.Left}}" x2="{{$.Right}}" y1="{{.Y}}" y2="{{.Y}}"></line>
{{- end}}
</g>
<g class="chart-ticks" font-size="12" text-anchor="end" fill="#475467">
{{- range .Ticks}}
<text x="{{$.Left}}" y="{{.Y}}" dx="-6" dy="4">{{.Text}}</text>
{{- end}}
</g>
<g class="chart-labels" font-size="12" text-anchor="middle" fill="#475467">
{{- range .Marks}}
<text x="{{.LX}}" y="{{$.LabelY}}">{{.Short}}</text>
{{- end}}
</g>
<text class="chart-axis-title" x="{{.XTitleX}}" y="{{.XTitleY}}" font-size="12" text-anchor="middle" fill="#344054">{{.XLabel}}</text>
<text class="chart-axis-title" x="14" y="{{.YTitleY}}" font-size="12" text-anchor="middle" fill="#344054" transform="rotate(-90 14 {{.YTitleY}})">{{.YLabel}}</text>
{{- if eq .Style 1}}
<polyline class="chart-line" points="{{.Path}}" fill="none" stroke="#2563eb" stroke-width="2"></polyline>
{{- end}}
<g class="chart-marks" fill="#2563eb">
{{- range .Marks}}
{{- if .Dot}}
<circle class="chart-dot" cx="{{.CX}}" cy="{{.CY}}" r="4"><title>{{.Label}}: {{.Text}}</title></circle>
{{- else}}
<rect class="chart-bar{{if .Negative}} chart-bar-negative{{end}}" x="{{.X}}" y="{{.Y}}" width="{{.W}}" height="{{.H}}"><title>{{.Label}}: {{.Text}}</title></rect>
{{- end}}
{{- end}}
</g>
</svg>
<table class="chart-data">
<caption>{{.Title}}</caption>
<thead><tr><th scope="col">{{.XLabel}}</th><th scope="col" class="num">{{.YLabel}}</th></tr></thead>
<tbody>
{{- range .Marks}}
<tr><th scope="row">{{.Label}}</th><td class="num">{{.Text}}</td></tr>
{{- end}}
</tbody>
</table>
</figure>`))
