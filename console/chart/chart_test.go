package chart

import (
	"encoding/xml"
	"strings"
	"testing"

	"github.com/billingd/billing"
	"github.com/billingd/billing/render"
)

// parsed is the part of a rendered chart the tests read back with
// encoding/xml: the SVG's title and description, its bars, dots, tick
// labels and point labels, and the table.
type parsed struct {
	SVG struct {
		Role       string `xml:"role,attr"`
		LabelledBy string `xml:"aria-labelledby,attr"`
		Title      struct {
			ID   string `xml:"id,attr"`
			Text string `xml:",chardata"`
		} `xml:"title"`
		Desc struct {
			ID   string `xml:"id,attr"`
			Text string `xml:",chardata"`
		} `xml:"desc"`
		Groups []struct {
			Class string    `xml:"class,attr"`
			Texts []svgText `xml:"text"`
			Rects []struct {
				Class  string `xml:"class,attr"`
				Y      string `xml:"y,attr"`
				Height string `xml:"height,attr"`
				Title  string `xml:"title"`
			} `xml:"rect"`
			Circles []struct {
				CY    string `xml:"cy,attr"`
				Title string `xml:"title"`
			} `xml:"circle"`
		} `xml:"g"`
		AxisTitles []svgText `xml:"text"`
		Polyline   []struct {
			Points string `xml:"points,attr"`
		} `xml:"polyline"`
	} `xml:"svg"`
	Table struct {
		Caption string   `xml:"caption"`
		Heads   []string `xml:"thead>tr>th"`
		Rows    []struct {
			Label string `xml:"th"`
			Value string `xml:"td"`
		} `xml:"tbody>tr"`
	} `xml:"table"`
}

type svgText struct {
	Class string `xml:"class,attr"`
	Text  string `xml:",chardata"`
}

func (p *parsed) group(class string) int {
	for i, g := range p.SVG.Groups {
		if g.Class == class {
			return i
		}
	}
	return -1
}

func (p *parsed) texts(class string) []string {
	var out []string
	if i := p.group(class); i >= 0 {
		for _, t := range p.SVG.Groups[i].Texts {
			out = append(out, t.Text)
		}
	}
	return out
}

func renderParsed(t *testing.T, c Chart) *parsed {
	t.Helper()
	h, err := Render(c)
	if err != nil {
		t.Fatal(err)
	}
	var p parsed
	if err := xml.Unmarshal([]byte(h), &p); err != nil {
		t.Fatalf("the chart is not well-formed XML: %v\n%s", err, h)
	}
	return &p
}

func points(values ...string) []Point {
	var out []Point
	for i, v := range values {
		out = append(out, Point{Label: string(rune('A' + i)), Value: billing.MustDecimal(v)})
	}
	return out
}

func TestBarChartShowsEveryValueAsBarTitleAndTableRow(t *testing.T) {
	t.Parallel()
	gbp := func(d billing.Decimal) string { return "£" + render.Number(d) }
	c := Chart{
		ID: "revenue", Title: "Invoiced per month", Description: "Gross totals of issued invoices",
		XLabel: "Month", YLabel: "Invoiced (GBP)", Format: gbp,
		Points: []Point{
			{Label: "Sep 2026", Value: billing.MustDecimal("1000.00")},
			{Label: "Oct 2026", Value: billing.MustDecimal("2500.50"), Text: "£2,500.50"},
			{Label: "Nov 2026", Value: billing.MustDecimal("0")},
		},
	}
	p := renderParsed(t, c)
	if p.SVG.Role != "img" || p.SVG.LabelledBy != "revenue-title revenue-desc" ||
		p.SVG.Title.ID != "revenue-title" || p.SVG.Desc.ID != "revenue-desc" {
		t.Errorf("svg role %q labelledby %q title id %q desc id %q", p.SVG.Role, p.SVG.LabelledBy, p.SVG.Title.ID, p.SVG.Desc.ID)
	}
	if p.SVG.Title.Text != "Invoiced per month" || p.SVG.Desc.Text != "Gross totals of issued invoices" {
		t.Errorf("title %q desc %q", p.SVG.Title.Text, p.SVG.Desc.Text)
	}
	marks := p.SVG.Groups[p.group("chart-marks")]
	var titles []string
	for _, r := range marks.Rects {
		titles = append(titles, r.Title)
	}
	want := []string{"Sep 2026: £1,000.00", "Oct 2026: £2,500.50", "Nov 2026: £0"}
	if strings.Join(titles, "|") != strings.Join(want, "|") {
		t.Errorf("bar titles = %q, want %q", titles, want)
	}
	if got := p.texts("chart-labels"); strings.Join(got, "|") != "Sep 2026|Oct 2026|Nov 2026" {
		t.Errorf("x labels = %q", got)
	}
	// 2,500.50 over four intervals: a step of 1,000, the axis 0 to 3,000.
	if got := p.texts("chart-ticks"); strings.Join(got, "|") != "£0|£1,000|£2,000|£3,000" {
		t.Errorf("y ticks = %q", got)
	}
	var axisTitles []string
	for _, a := range p.SVG.AxisTitles {
		axisTitles = append(axisTitles, a.Text)
	}
	if strings.Join(axisTitles, "|") != "Month|Invoiced (GBP)" {
		t.Errorf("axis titles = %q", axisTitles)
	}
	if p.Table.Caption != "Invoiced per month" || strings.Join(p.Table.Heads, "|") != "Month|Invoiced (GBP)" {
		t.Errorf("table caption %q heads %q", p.Table.Caption, p.Table.Heads)
	}
	var rows []string
	for _, r := range p.Table.Rows {
		rows = append(rows, r.Label+"="+r.Value)
	}
	if strings.Join(rows, "|") != "Sep 2026=£1,000.00|Oct 2026=£2,500.50|Nov 2026=£0" {
		t.Errorf("table rows = %q", rows)
	}
}

func TestBarHeightsAreProportionalToTheValues(t *testing.T) {
	t.Parallel()
	// The axis is 0 to 3,000 over plotHeight (220) units from y=16: 1,000 is
	// 73.3 high, 2,500.50 is 183.4 (220 × 2500.5 / 3000 = 183.37), zero is a
	// bar of no height on the zero line.
	p := renderParsed(t, Chart{ID: "c", Points: points("1000", "2500.50", "0")})
	rects := p.SVG.Groups[p.group("chart-marks")].Rects
	if len(rects) != 3 {
		t.Fatalf("%d bars, want 3", len(rects))
	}
	for i, want := range []struct{ y, h string }{{"162.7", "73.3"}, {"52.6", "183.4"}, {"236", "0"}} {
		if rects[i].Y != want.y || rects[i].Height != want.h {
			t.Errorf("bar %d: y %s height %s, want y %s height %s", i, rects[i].Y, rects[i].Height, want.y, want.h)
		}
	}
}

func TestNegativeValuesHangBelowTheZeroLine(t *testing.T) {
	t.Parallel()
	p := renderParsed(t, Chart{ID: "c", Points: points("-2", "6")})
	if got := p.texts("chart-ticks"); strings.Join(got, "|") != "-2|0|2|4|6" {
		t.Fatalf("ticks = %q", got)
	}
	rects := p.SVG.Groups[p.group("chart-marks")].Rects
	// The axis spans 8 over 220 units: zero is at 16 + 220 × 6/8 = 181.
	if rects[0].Class != "chart-bar chart-bar-negative" || rects[0].Y != "181" || rects[0].Height != "55" {
		t.Errorf("negative bar: %+v", rects[0])
	}
	if rects[1].Class != "chart-bar" || rects[1].Y != "16" || rects[1].Height != "165" {
		t.Errorf("positive bar: %+v", rects[1])
	}
}

func TestLineChartMarksEachPointWithItsValue(t *testing.T) {
	t.Parallel()
	p := renderParsed(t, Chart{ID: "usage", Title: "API calls", Style: Line, XLabel: "Period", YLabel: "Calls",
		Points: points("10", "0.5", "12345.678")})
	marks := p.SVG.Groups[p.group("chart-marks")]
	if len(marks.Rects) != 0 || len(marks.Circles) != 3 {
		t.Fatalf("%d bars and %d dots, want 0 and 3", len(marks.Rects), len(marks.Circles))
	}
	if marks.Circles[2].Title != "C: 12,345.678" || marks.Circles[1].Title != "B: 0.5" {
		t.Errorf("dot titles %q, %q", marks.Circles[1].Title, marks.Circles[2].Title)
	}
	if len(p.SVG.Polyline) != 1 || len(strings.Fields(p.SVG.Polyline[0].Points)) != 3 {
		t.Errorf("polyline = %+v", p.SVG.Polyline)
	}
	if p.Table.Rows[2].Value != "12,345.678" {
		t.Errorf("table row = %+v", p.Table.Rows[2])
	}
}

func TestAxisStepsAreRound(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ lo, hi, want string }{
		{"0", "0", "0|0.5|1"},
		{"0", "7", "0|2|4|6|8"},
		{"0", "0.003", "0|0.001|0.002|0.003"},
		{"0", "99999999999999999999.99", "0|50000000000000000000|100000000000000000000"},
		{"-5", "0", "-6|-4|-2|0"},
	} {
		ticks, err := axis(billing.MustDecimal(tc.lo), billing.MustDecimal(tc.hi))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, d := range ticks {
			got = append(got, d.String())
		}
		if strings.Join(got, "|") != tc.want {
			t.Errorf("axis(%s, %s) = %q, want %q", tc.lo, tc.hi, got, tc.want)
		}
	}
}

func TestTextIsEscaped(t *testing.T) {
	t.Parallel()
	h, err := Render(Chart{ID: "x", Title: `<script>alert(1)</script>`, Points: []Point{{Label: `"&<`, Value: billing.MustDecimal("1")}}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(h), "<script>") || strings.Contains(string(h), `"&<`) {
		t.Errorf("unescaped text in %s", h)
	}
}

func TestEmptyChartHasAxisAndEmptyTable(t *testing.T) {
	t.Parallel()
	p := renderParsed(t, Chart{ID: "e", Title: "Nothing yet"})
	if n := len(p.SVG.Groups[p.group("chart-marks")].Rects); n != 0 || len(p.Table.Rows) != 0 {
		t.Errorf("%d bars, %d rows", n, len(p.Table.Rows))
	}
	if got := p.texts("chart-ticks"); len(got) == 0 {
		t.Error("no axis")
	}
}
