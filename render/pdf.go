package render

import (
	"bytes"
	"fmt"
	"image/png"
	"strings"

	"github.com/signintech/gopdf"
	"golang.org/x/image/font/gofont/gobold"
	"golang.org/x/image/font/gofont/goregular"
)

// The page (A4, in points) and the layout's fixed measures.
const (
	pageW, pageH = 595.28, 841.89
	marginX      = 42.0
	marginTop    = 42.0
	contentW     = pageW - 2*marginX
	contentEnd   = pageH - 62 // the footer lives below
	gap          = 16.0
)

// The line table's columns: description, quantity, unit price, tax rate,
// amount.
var (
	colW     = [5]float64{contentW - 280, 60, 85, 50, 85}
	colTitle = [5]string{"Description", "Quantity", "Unit price", "Tax", "Amount"}
)

// The font families registered in every PDF.
const (
	regular = "GoRegular"
	bold    = "GoBold"
)

// style is how a run of text is set.
type style struct {
	font       string
	size, lead float64 // font size and line height
	rgb        [3]uint8
}

var (
	ink       = [3]uint8{0x1f, 0x29, 0x37}
	grey      = [3]uint8{0x6b, 0x72, 0x80}
	ruleGrey  = [3]uint8{0xe5, 0xe7, 0xeb}
	stBody    = style{regular, 9, 12, ink}
	stBold    = style{bold, 9, 12, ink}
	stSmall   = style{regular, 7.5, 10, grey}
	stFooter  = style{regular, 7.5, 10, grey}
	stName    = style{bold, 14, 18, ink}
	stTitle   = style{bold, 22, 28, ink}
	stEmph    = style{bold, 11, 15, ink}
	stMarkBig = style{bold, 110, 110, [3]uint8{0xe8, 0xe8, 0xe8}}
)

// textLine is one line of set text.
type textLine struct {
	st   style
	text string
}

// height is the height of lines set one under the other.
func height(lines []textLine) float64 {
	h := 0.0
	for _, l := range lines {
		h += l.st.lead
	}
	return h
}

// block is a piece of the page flow: its height, and how to draw it at a
// given top. Table rows repeat the table header on a new page. A block
// that can be split (a line item's row) says how: split returns the part
// that fits in room and the rest, or nil when not even its first line fits.
type block struct {
	h        float64
	tableRow bool
	draw     func(y float64)
	split    func(room float64) (head, rest *block)
	cells    [5][]textLine // a table row's cells (the tests read them)
}

// pdfWriter lays a view out on pages.
type pdfWriter struct {
	pdf    *gopdf.GoPdf
	v      *view
	accent style // label style in the merchant's colour
	err    error
	font   string
	size   float64

	hasFallback bool // the fallback font is added to the PDF
}

// writePDF renders v as a PDF.
func writePDF(v *view) ([]byte, error) {
	w := newPDFWriter(v)
	if err := w.start(); err != nil {
		return nil, err
	}
	blocks := w.blocks()
	if w.err != nil {
		return nil, w.err
	}
	w.paginate(blocks)
	if w.err != nil {
		return nil, w.err
	}
	var out bytes.Buffer
	if err := w.pdf.Write(&out); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// newPDFWriter returns the writer of v's PDF.
func newPDFWriter(v *view) *pdfWriter {
	return &pdfWriter{pdf: &gopdf.GoPdf{}, v: v, accent: style{bold, 7.5, 11, v.Colour}}
}

// start begins the document: page size, metadata and fonts.
func (w *pdfWriter) start() error {
	v := w.v
	w.pdf.Start(gopdf.Config{PageSize: gopdf.Rect{W: pageW, H: pageH}, Unit: gopdf.UnitPT})
	w.pdf.SetInfo(gopdf.PdfInfo{
		Title: strings.TrimSpace(v.Title + " " + v.Number), Author: v.Merchant.Name, Creator: "billingd",
		Producer: "billingd", CreationDate: v.Date,
	})
	if err := w.pdf.AddTTFFontData(regular, goregular.TTF); err != nil {
		return err
	}
	return w.pdf.AddTTFFontData(bold, gobold.TTF)
}

// placed is a block on its page.
type placed struct {
	b    *block
	page int
	y    float64
}

// paginate places the blocks on pages (repeating the table header before
// table rows that start a page), then draws every page with its mark and
// its footer, now that the page count is known. A block taller than a
// whole page is split line by line across pages, so that no text is ever
// drawn past a page's bottom edge.
func (w *pdfWriter) paginate(blocks []*block) {
	header := w.tableHeader()
	var out []placed
	page, y := 1, marginTop
	top := y // where the current page's content starts
	newPage := func(tableRow bool) {
		page, y = page+1, marginTop
		if tableRow {
			out = append(out, placed{header, page, y})
			y += header.h
		}
		top = y
	}
	for _, b := range blocks {
		for b != nil {
			if y+b.h <= contentEnd {
				out = append(out, placed{b, page, y})
				y += b.h
				break
			}
			// A block taller than a fresh page is split where it stands
			// (or on a fresh page when not a line of it fits here).
			if b.split != nil && b.h > contentEnd-marginTop-header.h {
				if head, rest := b.split(contentEnd - y); head != nil {
					out = append(out, placed{head, page, y})
					b = rest
					newPage(b.tableRow)
					continue
				}
			}
			if y == top {
				// Nothing fits and it cannot be split further: it stays
				// (and is cut at the page's edge) rather than looping.
				out = append(out, placed{b, page, y})
				y += b.h
				break
			}
			newPage(b.tableRow)
		}
	}
	next := 0
	for p := 1; p <= page; p++ {
		w.pdf.AddPage()
		w.mark()
		for ; next < len(out) && out[next].page == p; next++ {
			out[next].b.draw(out[next].y)
		}
		w.footer(p, page)
	}
}

// blocks is the page flow of the document, top to bottom.
func (w *pdfWriter) blocks() []*block {
	v := w.v
	out := []*block{w.headerBlock(), w.partiesBlock()}
	if len(v.Refs) > 0 {
		out = append(out, w.factsBlock(v.Refs))
	}
	out = append(out, w.tableHeader())
	for i := range v.Sections {
		out = append(out, w.sectionBlocks(&v.Sections[i])...)
	}
	out = append(out, w.totalsBlock())
	for _, n := range v.Notes {
		out = append(out, w.textBlocks(nil, w.wrap(contentW, textLine{stBody, n}))...)
	}
	if v.Memo != "" {
		out = append(out, w.textBlocks(w.heading("Memo"), w.wrap(contentW, textLine{stBody, v.Memo}))...)
	}
	for _, p := range v.Payment {
		out = append(out, w.factList(p.Heading, p.Rows)...)
	}
	if len(v.Custom) > 0 {
		out = append(out, w.factList("Details", v.Custom)...)
	}
	return out
}

// headerBlock: logo and merchant name at the left; title, mark, number
// and dates at the right.
func (w *pdfWriter) headerBlock() *block {
	v := w.v
	leftW, rightW := contentW*0.55, contentW*0.45
	logoW, logoH := w.logoSize()
	name := w.wrap(leftW, textLine{stName, v.Merchant.Name})
	title := v.Title
	if v.Mark != "" {
		title += " · " + v.Mark
	}
	right := w.wrap(rightW, textLine{style{bold, 22, 28, v.Colour}, title})
	rows := w.factRows(rightW, v.Header)
	leftH := logoH + height(name)
	if logoH > 0 {
		leftH += 6
	}
	h := max(leftH, height(right)+4+rowsHeight(rows)) + 18
	return &block{h: h, draw: func(y float64) {
		if logoH > 0 {
			w.logo(marginX, y, logoW, logoH)
			w.lines(marginX, y+logoH+6, leftW, gopdf.Left, name)
		} else {
			w.lines(marginX, y, leftW, gopdf.Left, name)
		}
		x := marginX + leftW
		w.lines(x, y, rightW, gopdf.Right, right)
		w.drawFactRows(x, y+height(right)+4, rightW, rows)
	}}
}

// partiesBlock: From, Bill to and, when different, Ship to.
func (w *pdfWriter) partiesBlock() *block {
	v := w.v
	parties := []party{v.Merchant, v.BillTo}
	if v.ShipTo != nil {
		parties = append(parties, *v.ShipTo)
	}
	colWidth := (contentW - 2*gap) / 3
	cols := make([][]textLine, len(parties))
	h := 0.0
	for i, p := range parties {
		cols[i] = append([]textLine{{w.accent, strings.ToUpper(p.Heading)}}, w.wrap(colWidth, textLine{stBold, p.Name})...)
		for _, l := range p.Lines {
			cols[i] = append(cols[i], w.wrap(colWidth, textLine{stBody, l})...)
		}
		h = max(h, height(cols[i]))
	}
	return &block{h: h + 16, draw: func(y float64) {
		w.rule(marginX, y-8, contentW, ruleGrey, 0.5)
		for i, c := range cols {
			w.lines(marginX+float64(i)*(colWidth+gap), y, colWidth, gopdf.Left, c)
		}
	}}
}

// factsBlock sets facts side by side, four to a row.
func (w *pdfWriter) factsBlock(fs []fact) *block {
	colWidth := (contentW - 3*gap) / 4
	type cell struct {
		x     float64
		lines []textLine
	}
	var cells []cell
	var rowTops []float64
	h, rowH := 0.0, 0.0
	for i, f := range fs {
		if i%4 == 0 && i > 0 {
			h, rowH = h+rowH+6, 0
		}
		lines := append([]textLine{{w.accent, strings.ToUpper(f.Label)}}, w.wrap(colWidth, textLine{stBody, f.Value})...)
		cells = append(cells, cell{marginX + float64(i%4)*(colWidth+gap), lines})
		rowTops = append(rowTops, h)
		rowH = max(rowH, height(lines))
	}
	return &block{h: h + rowH + 16, draw: func(y float64) {
		for i, c := range cells {
			w.lines(c.x, y+rowTops[i], colWidth, gopdf.Left, c.lines)
		}
	}}
}

// tableHeader is the line table's column titles over a coloured rule.
func (w *pdfWriter) tableHeader() *block {
	return &block{h: 20, draw: func(y float64) {
		x := marginX
		for i, t := range colTitle {
			align := gopdf.Right
			if i == 0 {
				align = gopdf.Left
			}
			w.lines(x+pad(i), y+4, colW[i]-2*pad(i), align, []textLine{{w.accent, strings.ToUpper(t)}})
			x += colW[i]
		}
		w.rule(marginX, y+17, contentW, w.v.Colour, 1)
	}}
}

// pad is the inner padding of column i.
func pad(i int) float64 {
	if i == 0 {
		return 0
	}
	return 4
}

// sectionBlocks are a group's heading, its lines and its subtotal (or just
// the lines, for the ungrouped ones).
func (w *pdfWriter) sectionBlocks(s *section) []*block {
	var out []*block
	if s.Title != "" {
		head := w.wrap(contentW, textLine{style{bold, 10, 14, w.v.Colour}, s.Title})
		if s.Description != "" {
			head = append(head, w.wrap(contentW, textLine{stSmall, s.Description})...)
		}
		out = append(out, &block{h: height(head) + 8, tableRow: true, draw: func(y float64) {
			w.lines(marginX, y+6, contentW, gopdf.Left, head)
		}})
	}
	for i := range s.Lines {
		out = append(out, w.lineBlock(&s.Lines[i]))
	}
	if s.Subtotal != "" {
		label := []textLine{{stBold, "Subtotal " + s.Title}}
		amount := []textLine{{stBold, s.Subtotal}}
		labelW := contentW - colW[4]
		label = w.wrap(labelW-4, label...)
		out = append(out, &block{h: height(label) + 10, tableRow: true, draw: func(y float64) {
			w.lines(marginX, y+5, labelW-4, gopdf.Right, label)
			w.lines(marginX+labelW+4, y+5, colW[4]-4, gopdf.Right, amount)
		}})
	}
	return out
}

// lineBlock is one line item as a table row.
func (w *pdfWriter) lineBlock(l *line) *block {
	cells := [5][]textLine{w.wrap(colW[0], textLine{stBold, l.Title})}
	if l.Description != "" {
		cells[0] = append(cells[0], w.wrap(colW[0], textLine{stSmall, l.Description})...)
	}
	if l.Period != "" {
		cells[0] = append(cells[0], w.wrap(colW[0], textLine{stSmall, l.Period})...)
	}
	for i, t := range [4]string{l.Quantity, l.UnitPrice, l.TaxRate, l.Amount} {
		cells[i+1] = w.wrap(colW[i+1]-2*pad(i+1), textLine{stBody, t})
	}
	return w.rowBlock(cells)
}

// rowPad is the space a table row adds to its cells: 5 points above and 5
// below.
const rowPad = 10

// rowBlock is a table row of cells: split, it continues on the next page
// with the lines of each cell that did not fit.
func (w *pdfWriter) rowBlock(cells [5][]textLine) *block {
	h := 0.0
	for _, c := range cells {
		h = max(h, height(c))
	}
	b := &block{h: h + rowPad, tableRow: true, cells: cells, draw: func(y float64) {
		x := marginX
		for i, c := range cells {
			align := gopdf.Right
			if i == 0 {
				align = gopdf.Left
			}
			w.lines(x+pad(i), y+5, colW[i]-2*pad(i), align, c)
			x += colW[i]
		}
		w.rule(marginX, y+h+rowPad, contentW, ruleGrey, 0.5)
	}}
	b.split = func(room float64) (*block, *block) {
		var head, rest [5][]textLine
		fits := false
		for i, c := range cells {
			n, used := 0, 0.0
			for n < len(c) && used+c[n].st.lead <= room-rowPad {
				used += c[n].st.lead
				n++
			}
			head[i], rest[i] = c[:n], c[n:]
			fits = fits || n > 0
		}
		if !fits {
			return nil, nil
		}
		return w.rowBlock(head), w.rowBlock(rest)
	}
	return b
}

// totalsBlock: the tax summary at the left, the totals at the right.
func (w *pdfWriter) totalsBlock() *block {
	v := w.v
	half := (contentW - gap) / 2
	third := half / 3
	taxes := [][3]string{{"TAX RATE", "NET", "TAX"}}
	for _, r := range v.TaxRows {
		taxes = append(taxes, [3]string{r.Rate, r.Net, r.Tax})
	}
	taxH := float64(len(taxes)) * 13
	totals := w.factRows(half, v.Totals[:len(v.Totals)-1])
	last := v.Totals[len(v.Totals)-1]
	lastLines := w.wrap(half*0.6, textLine{stEmph, last.Value})
	totalsH := rowsHeight(totals) + 8 + height(lastLines)
	return &block{h: max(taxH, totalsH) + 24, draw: func(y float64) {
		y += 14
		if len(v.TaxRows) > 0 {
			for i, row := range taxes {
				st := stBody
				if i == 0 {
					st = w.accent
				}
				for j, t := range row {
					align := gopdf.Right
					if j == 0 {
						align = gopdf.Left
					}
					w.lines(marginX+float64(j)*third, y+float64(i)*13, third, align, []textLine{{st, t}})
				}
			}
		}
		x := marginX + half + gap
		w.drawFactRows(x, y, half, totals)
		ly := y + rowsHeight(totals) + 4
		w.rule(x, ly, half, v.Colour, 1)
		w.lines(x, ly+4, half*0.4, gopdf.Left, []textLine{{stEmph, last.Label}})
		w.lines(x+half*0.4, ly+4, half*0.6, gopdf.Right, lastLines)
	}}
}

// heading is a section heading in the merchant's colour.
func (w *pdfWriter) heading(text string) []textLine {
	return []textLine{{w.accent, strings.ToUpper(text)}}
}

// factList is a heading over "label: value" rows. A fact with a Link gets
// a link annotation over each of its lines, so the PDF's reader opens it.
func (w *pdfWriter) factList(heading string, fs []fact) []*block {
	var lines []textLine
	var links []string // by line
	for _, f := range fs {
		wrapped := w.wrap(contentW, textLine{stBody, f.Label + ": " + f.Value})
		lines = append(lines, wrapped...)
		for range wrapped {
			links = append(links, f.Link)
		}
	}
	head := w.heading(heading)
	blocks := w.textBlocks(head, lines)
	for i, b := range blocks { // one block per line (textBlocks)
		if links[i] == "" {
			continue
		}
		draw, link, top, h := b.draw, links[i], 0.0, height(lines[i:i+1])
		if i == 0 {
			top = height(head)
		}
		b.draw = func(y float64) {
			draw(y)
			w.pdf.AddExternalLink(link, marginX, y+top, contentW, h)
		}
	}
	return blocks
}

// textBlocks sets a heading and its text lines at full width, one block
// per line so that text of any length runs on to the next page; the
// heading stays with the first line, and the last line carries the space
// after the section.
func (w *pdfWriter) textBlocks(head, lines []textLine) []*block {
	var out []*block
	for i := range lines {
		set := lines[i : i+1]
		if i == 0 {
			set = append(append([]textLine{}, head...), set...)
		}
		h := height(set)
		if i == len(lines)-1 {
			h += 10
		}
		out = append(out, &block{h: h, draw: func(y float64) { w.lines(marginX, y, contentW, gopdf.Left, set) }})
	}
	return out
}

// factRow is a label and a value set side by side, each wrapped.
type factRow struct{ label, value []textLine }

// factRows sets facts as label/value rows within width.
func (w *pdfWriter) factRows(width float64, fs []fact) []factRow {
	rows := make([]factRow, len(fs))
	for i, f := range fs {
		rows[i] = factRow{w.wrap(width*0.45, textLine{stSmall, f.Label}), w.wrap(width*0.55, textLine{stBody, f.Value})}
	}
	return rows
}

// rowsHeight is the height of fact rows.
func rowsHeight(rows []factRow) float64 {
	h := 0.0
	for _, r := range rows {
		h += max(height(r.label), height(r.value)) + 2
	}
	return h
}

// drawFactRows draws fact rows: labels at the left, values right-aligned.
func (w *pdfWriter) drawFactRows(x, y, width float64, rows []factRow) {
	for _, r := range rows {
		w.lines(x, y+1.5, width*0.45, gopdf.Left, r.label)
		w.lines(x+width*0.45, y, width*0.55, gopdf.Right, r.value)
		y += max(height(r.label), height(r.value)) + 2
	}
}

// mark draws the DRAFT or VOID mark across the page, under the content.
func (w *pdfWriter) mark() {
	if w.v.Mark == "" {
		return
	}
	w.setFont(stMarkBig)
	w.pdf.SetTextColor(stMarkBig.rgb[0], stMarkBig.rgb[1], stMarkBig.rgb[2])
	tw := w.measure(w.v.Mark)
	w.pdf.Rotate(35, pageW/2, pageH/2)
	w.pdf.SetXY(pageW/2-tw/2, pageH/2-stMarkBig.size/2)
	w.check(w.pdf.Cell(nil, w.v.Mark))
	w.pdf.RotateReset()
}

// footer draws the merchant, the number and "Page n of m".
func (w *pdfWriter) footer(n, m int) {
	y := pageH - 44
	w.rule(marginX, y, contentW, w.v.Colour, 0.75)
	w.lines(marginX, y+6, contentW*0.7, gopdf.Left, []textLine{{stFooter, w.footerText(contentW * 0.7)}})
	w.lines(marginX+contentW*0.7, y+6, contentW*0.3, gopdf.Right, []textLine{{stFooter, fmt.Sprintf("Page %d of %d", n, m)}})
}

// footerText is the footer's merchant and document on one line of width:
// the merchant's name is shortened (with an ellipsis) to leave room for the
// document's title and number.
func (w *pdfWriter) footerText(width float64) string {
	w.setFont(stFooter)
	doc := w.v.Title + " " + numberOrDraft(w.v.Number)
	name := w.v.Merchant.Name
	if name == "" || w.measure(name+" · "+doc) <= width {
		return strings.TrimPrefix(name+" · "+doc, " · ")
	}
	room := width - w.measure("… · "+doc)
	r := []rune(name)
	for len(r) > 0 && w.measure(string(r)) > room {
		r = r[:len(r)-1]
	}
	return strings.TrimSpace(string(r)) + "… · " + doc
}

// logoSize is the printed size of the logo: at most 150×48 points, its
// aspect kept; 0×0 without a logo.
func (w *pdfWriter) logoSize() (float64, float64) {
	if len(w.v.Logo) == 0 {
		return 0, 0
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(w.v.Logo))
	if err != nil || cfg.Width == 0 || cfg.Height == 0 {
		return 0, 0
	}
	lw, lh := 150.0, 150.0*float64(cfg.Height)/float64(cfg.Width)
	if lh > 48 {
		lw, lh = 48*float64(cfg.Width)/float64(cfg.Height), 48
	}
	return lw, lh
}

// logo draws the logo.
func (w *pdfWriter) logo(x, y, width, h float64) {
	holder, err := gopdf.ImageHolderByBytes(w.v.Logo)
	if err != nil {
		w.check(err)
		return
	}
	w.check(w.pdf.ImageByHolder(holder, x, y, &gopdf.Rect{W: width, H: h}))
}

// rule draws a horizontal line.
func (w *pdfWriter) rule(x, y, width float64, rgb [3]uint8, thick float64) {
	w.pdf.SetStrokeColor(rgb[0], rgb[1], rgb[2])
	w.pdf.SetLineWidth(thick)
	w.pdf.Line(x, y, x+width, y)
}

// lines draws set lines from the top y, aligned within width.
func (w *pdfWriter) lines(x, y, width float64, align int, lines []textLine) {
	for _, l := range lines {
		w.setFont(l.st)
		w.pdf.SetTextColor(l.st.rgb[0], l.st.rgb[1], l.st.rgb[2])
		w.pdf.SetXY(x, y)
		text := visual(clean(l.text))
		switch rs := runs(text); {
		case text == "":
		case len(rs) == 1 && !rs[0].fallback:
			w.check(w.pdf.CellWithOption(&gopdf.Rect{W: width, H: l.st.lead}, text, gopdf.CellOption{Align: align | gopdf.Top}))
		default:
			w.drawRuns(x, y, width, align, l.st, rs)
		}
		y += l.st.lead
	}
}

// drawRuns draws a line of runs in the Go fonts and the fallback font one
// after the other, aligned within width as a whole.
func (w *pdfWriter) drawRuns(x, y, width float64, align int, st style, rs []run) {
	widths := make([]float64, len(rs))
	total := 0.0
	for i, r := range rs {
		widths[i] = w.measureRun(st, r)
		total += widths[i]
	}
	if align&gopdf.Right != 0 {
		x += width - total
	}
	for i, r := range rs {
		w.setRunFont(st, r)
		w.pdf.SetXY(x, y)
		w.check(w.pdf.CellWithOption(&gopdf.Rect{W: widths[i], H: st.lead}, r.text, gopdf.CellOption{Align: gopdf.Left | gopdf.Top}))
		x += widths[i]
	}
	w.setFont(st)
}

// setRunFont selects the font of a run set in style st.
func (w *pdfWriter) setRunFont(st style, r run) {
	if !r.fallback {
		w.setFont(st)
		return
	}
	if !w.hasFallback {
		w.hasFallback = true
		w.check(w.pdf.AddTTFFontData(fallback, dejaVuSans))
	}
	w.setFont(style{font: fallback, size: st.size})
}

// measureRun is the width of a run set in style st.
func (w *pdfWriter) measureRun(st style, r run) float64 {
	w.setRunFont(st, r)
	width, err := w.pdf.MeasureTextWidth(r.text)
	w.check(err)
	return width
}

// wrap breaks each run into lines that fit width: at spaces, inside words
// too long for a line, and at the text's own newlines.
func (w *pdfWriter) wrap(width float64, runs ...textLine) []textLine {
	var out []textLine
	for _, r := range runs {
		w.setFont(r.st)
		space := w.measure(" ")
		for _, para := range strings.Split(clean(r.text), "\n") {
			cur, curW := "", 0.0
			for _, word := range strings.Fields(para) {
				ww := w.measure(word)
				for ww > width { // a word longer than a line starts one and is cut
					if cur != "" {
						out = append(out, textLine{r.st, cur})
						cur, curW = "", 0
					}
					head := w.fit(word, width)
					out = append(out, textLine{r.st, head})
					word = word[len(head):]
					ww = w.measure(word)
				}
				if word == "" {
					continue
				}
				switch {
				case cur == "":
					cur, curW = word, ww
				case curW+space+ww <= width:
					cur, curW = cur+" "+word, curW+space+ww
				default:
					out = append(out, textLine{r.st, cur})
					cur, curW = word, ww
				}
			}
			out = append(out, textLine{r.st, cur})
		}
	}
	return out
}

// fit returns the longest prefix of word that fits width, at least one
// rune.
func (w *pdfWriter) fit(word string, width float64) string {
	end := 0
	for i, r := range word {
		next := i + len(string(r))
		if end > 0 && w.measure(word[:next]) > width {
			break
		}
		end = next
	}
	return word[:end]
}

// setFont selects the style's font, skipping redundant switches.
func (w *pdfWriter) setFont(st style) {
	if w.font == st.font && w.size == st.size {
		return
	}
	w.font, w.size = st.font, st.size
	w.check(w.pdf.SetFont(st.font, "", st.size))
}

// measure is the width of s in the current font (and the fallback font
// for the characters the Go fonts lack).
func (w *pdfWriter) measure(s string) float64 {
	rs := runs(s)
	if len(rs) <= 1 && (len(rs) == 0 || !rs[0].fallback) {
		width, err := w.pdf.MeasureTextWidth(s)
		w.check(err)
		return width
	}
	st := style{font: w.font, size: w.size}
	total := 0.0
	for _, r := range rs {
		total += w.measureRun(st, r)
	}
	w.setFont(st)
	return total
}

// check keeps the first error.
func (w *pdfWriter) check(err error) {
	if err != nil && w.err == nil {
		w.err = err
	}
}
