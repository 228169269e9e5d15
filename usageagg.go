package billing

import (
	"encoding/binary"
	"errors"
	"hash"
	"hash/fnv"
	"slices"
	"strconv"
	"unicode"
	"unicode/utf8"

	"github.com/cockroachdb/apd/v3"
)

// eventView is an encoded event value, read in place: a calculation looks
// up only the properties its metric names, without decoding the event.
type eventView []byte

// find returns the property named name. It is the innermost loop of a
// calculation, so it walks the encoding (see eventReader) by index with an
// inlined fast path for one-byte lengths; events hold few properties, so a
// linear walk comparing lengths first beats anything cleverer.
func (v eventView) find(name string) (rawProperty, bool) {
	b := []byte(v)
	if len(b) < 3 || b[0] != eventEncodingV1 {
		return rawProperty{}, false
	}
	// The customerEventId's length and the property count, each one byte
	// unless large (fastLen by hand: it is too big for the inliner).
	n, i := int(b[1]), 2
	if n >= 0x80 {
		n, i = readLen(b, 1)
	}
	count, i := 0, i+n
	if uint(i) < uint(len(b)) && b[i] < 0x80 {
		count, i = int(b[i]), i+1
	} else {
		count, i = readLen(b, i)
	}
	for ; count > 0 && uint(i) < uint(len(b)); count-- {
		kl, j := int(b[i]), i+1 // property names are at most 128 bytes
		if kl >= 0x80 {
			kl, j = readLen(b, i)
		}
		if j < 0 || j+kl >= len(b) {
			break
		}
		k, tag := b[j:j+kl], b[j+kl]
		i = j + kl + 1
		var payload []byte
		if tag != tagTrue && tag != tagFalse && i < len(b) {
			pl, j := int(b[i]), i+1
			if pl >= 0x80 {
				pl, j = readLen(b, i)
			}
			if j < 0 || j+pl > len(b) {
				break
			}
			payload, i = b[j:j+pl], j+pl
		}
		if len(k) == len(name) && string(k) == name {
			return rawProperty{tag: tag, payload: payload}, true
		}
	}
	return rawProperty{}, false
}

// readLen reads the uvarint length at b[i:] and returns it with the index
// after it; the index is -1 when the encoding is malformed.
func readLen(b []byte, i int) (n, next int) {
	if uint(i) >= uint(len(b)) {
		return 0, -1
	}
	u, w := binary.Uvarint(b[i:])
	if w <= 0 || u > uint64(len(b)) {
		return 0, -1
	}
	return int(u), i + w
}

// appendText appends the value's rendering for comparison: strings as they
// are, numbers in canonical form, booleans true/false.
func (p rawProperty) appendText(b []byte) []byte {
	switch p.tag {
	case tagString:
		return append(b, p.payload...)
	case tagTrue:
		return append(b, "true"...)
	case tagFalse:
		return append(b, "false"...)
	case tagSmall:
		c, e := smallNumber(p.payload)
		return appendCanonical(b, c, e)
	}
	d, err := ParseDecimalNumber(string(p.payload))
	if err != nil {
		return append(b, p.payload...) // unreachable: validated on ingest
	}
	return append(b, d.Canonical()...)
}

// appendCanonical appends c×10^e in the canonical decimal rendering of
// Decimal.Canonical, without going through apd.
func appendCanonical(b []byte, c, e int64) []byte {
	if c == 0 {
		return append(b, '0')
	}
	for c%10 == 0 {
		c, e = c/10, e+1
	}
	if c < 0 {
		b, c = append(b, '-'), -c
	}
	var tmp [20]byte
	digits := strconv.AppendUint(tmp[:0], uint64(c), 10)
	if e >= 0 {
		b = append(b, digits...)
		for range e {
			b = append(b, '0')
		}
		return b
	}
	pos := len(digits) + int(e)
	if pos > 0 {
		return append(append(append(b, digits[:pos]...), '.'), digits[pos:]...)
	}
	b = append(b, "0."...)
	for range -pos {
		b = append(b, '0')
	}
	return append(b, digits...)
}

// appendFold appends s under Unicode simple case folding, each rune mapped
// to the lower case of the smallest rune it folds with, so that strings
// equal under strings.EqualFold fold to the same bytes (and ASCII folds to
// lower case).
func appendFold(b, s []byte) []byte {
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			b, i = append(b, c), i+1
			continue
		}
		r, w := utf8.DecodeRune(s[i:])
		b, i = utf8.AppendRune(b, foldRune(r)), i+w
	}
	return b
}

func foldRune(r rune) rune {
	low := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		low = min(low, f)
	}
	return unicode.ToLower(low)
}

// propertyFilter is one compiled entry of a metric's propertyFilters.
type propertyFilter struct {
	name   string
	values map[string]struct{} // folded unless the metric is case sensitive
	negate bool
}

// usageCalc aggregates the events of one calculation.
type usageCalc struct {
	m       *UsageMetric
	filters []propertyFilter
	total   usageAgg
	groups  map[string]*usageAgg
	// plain is set when every event counts in the total only (no property
	// filters, no groups): the fast path of add.
	plain  bool
	text   []byte // scratch: a rendered value
	folded []byte // scratch: a folded value
	hash   hash.Hash
}

// usageAgg is the aggregate of all counted events or of one group.
type usageAgg struct {
	count, invalid int64
	sum            decimalSum
	uniq           map[[16]byte]struct{}
	custom         Decimal
}

func newUsageCalc(m *UsageMetric) *usageCalc {
	c := &usageCalc{m: m, groups: map[string]*usageAgg{}, hash: fnv.New128a()}
	for _, name := range sortedKeys(m.PropertyFilters) {
		f := propertyFilter{name: name, values: map[string]struct{}{}, negate: slices.Contains(m.PropertiesToNegate, name)}
		for _, v := range m.PropertyFilters[name] {
			f.values[string(c.fold([]byte(v)))] = struct{}{}
		}
		c.filters = append(c.filters, f)
	}
	c.plain = len(c.filters) == 0 && m.MetricType != MetricTypeGrouped
	return c
}

// fold returns s folded when the metric compares case-insensitively.
func (c *usageCalc) fold(s []byte) []byte {
	if c.m.CaseSensitive {
		return s
	}
	c.folded = appendFold(c.folded[:0], s)
	return c.folded
}

// render returns the comparable text of p, valid until the next call.
func (c *usageCalc) render(p rawProperty) []byte {
	c.text = p.appendText(c.text[:0])
	return c.fold(c.text)
}

// passes applies the property filters: an event passes a plain filter when
// its property is one of the values, and a negated one when it is not (a
// missing property fails a plain filter and passes a negated one).
func (c *usageCalc) passes(ev eventView) bool {
	for i := range c.filters {
		f := &c.filters[i]
		in := false
		if p, ok := ev.find(f.name); ok {
			_, in = f.values[string(c.render(p))]
		}
		if in == f.negate {
			return false
		}
	}
	return true
}

// groupOf returns the group label of ev ("" without the grouping property).
func (c *usageCalc) groupOf(ev eventView) string {
	p, ok := ev.find(c.m.GroupingProperty)
	if !ok {
		return ""
	}
	return string(c.render(p))
}

// add counts one stored event of the series and period.
func (c *usageCalc) add(ev eventView) {
	if c.plain {
		c.addTo(&c.total, ev)
		return
	}
	if !c.passes(ev) {
		return
	}
	c.addTo(&c.total, ev)
	if c.m.MetricType == MetricTypeGrouped {
		label := c.groupOf(ev)
		g := c.groups[label]
		if g == nil {
			g = &usageAgg{}
			c.groups[label] = g
		}
		c.addTo(g, ev)
	}
}

func (c *usageCalc) addTo(a *usageAgg, ev eventView) {
	a.count++
	switch c.m.AggregationType {
	case AggregationSum:
		p, ok := ev.find(c.m.AggregationProperty)
		if !ok || !a.sum.addProperty(p) {
			a.invalid++
		}
	case AggregationUnique:
		p, ok := ev.find(c.m.AggregationProperty)
		if !ok {
			a.invalid++
			return
		}
		var k [16]byte
		c.hash.Reset()
		c.hash.Write(c.render(p))
		c.hash.Sum(k[:0])
		if a.uniq == nil {
			a.uniq = map[[16]byte]struct{}{}
		}
		a.uniq[k] = struct{}{}
	}
}

// value returns the aggregate's value for the metric's aggregation.
func (a *usageAgg) value(t AggregationType) Decimal {
	switch t {
	case AggregationSum:
		return a.sum.total()
	case AggregationUnique:
		return DecimalFromInt(int64(len(a.uniq)))
	case AggregationCustom:
		return a.custom
	}
	return DecimalFromInt(a.count)
}

// fill writes the results into out.
func (c *usageCalc) fill(out *UsageCalculation) {
	out.EventCount, out.InvalidEventCount = c.total.count, c.total.invalid
	out.Value = c.total.value(c.m.AggregationType)
	if c.m.MetricType != MetricTypeGrouped {
		return
	}
	out.Groups = make([]UsageGroup, 0, len(c.groups))
	for _, label := range sortedKeys(c.groups) {
		g := c.groups[label]
		out.Groups = append(out.Groups, UsageGroup{Group: label, EventCount: g.count, Value: g.value(c.m.AggregationType)})
	}
}

// runCustom calls the metric's function over the counted events, once per
// group for a GROUPED metric (whose value is then the sum of the groups').
func (c *usageCalc) runCustom(src *usageSource, fn CustomAggregation, params map[string]Decimal) error {
	var readErr error
	call := func(keep func(eventView) bool) (Decimal, error) {
		v, err := fn(src.events(keep, &readErr), params)
		var e *Error
		if err != nil && !errors.As(err, &e) {
			err = &Error{Code: CodeInternal, Message: "the custom aggregation failed", Err: err}
		}
		return v, errors.Join(readErr, err)
	}
	if c.m.MetricType != MetricTypeGrouped {
		v, err := call(c.passes)
		c.total.custom = v
		return err
	}
	for _, label := range sortedKeys(c.groups) {
		v, err := call(func(ev eventView) bool { return c.passes(ev) && c.groupOf(ev) == label })
		if err != nil {
			return err
		}
		c.groups[label].custom = v
		c.total.custom = c.total.custom.Add(v)
	}
	return nil
}

// decimalSum adds decimals exactly and fast: values with an int64
// coefficient are summed per exponent in int64, everything else (and a
// slot about to overflow) in apd.
type decimalSum struct {
	exps [4]int64
	sums [4]int64
	n    int
	big  apd.Decimal
}

// addProperty adds p when it is a number (a JSON number, or a string in the
// decimal grammar) and reports whether it was.
func (s *decimalSum) addProperty(p rawProperty) bool {
	if p.tag == tagSmall { // the common case, kept small enough to inline
		c, e := smallNumber(p.payload)
		s.addSmall(c, e)
		return true
	}
	return s.addOther(p)
}

// addOther is addProperty for every tag but tagSmall.
func (s *decimalSum) addOther(p rawProperty) bool {
	switch p.tag {
	case tagBig:
		d, err := ParseDecimalNumber(string(p.payload))
		if err != nil {
			return false
		}
		s.addBig(&d.d)
	case tagString:
		d, err := ParseDecimal(string(p.payload))
		if err != nil {
			return false
		}
		s.addBig(&d.d)
	default:
		return false
	}
	return true
}

// addSmall adds c×10^e; the first slot (usually the only one: a property
// keeps its scale) is tried inline.
func (s *decimalSum) addSmall(c, e int64) {
	if s.n > 0 && s.exps[0] == e {
		if r := s.sums[0] + c; (c >= 0) == (r >= s.sums[0]) {
			s.sums[0] = r
			return
		}
	}
	s.addSlot(c, e)
}

// addSlot adds c×10^e to the slot of exponent e, opening one if there is
// room, and spills a slot about to overflow into the apd total.
func (s *decimalSum) addSlot(c, e int64) {
	for i := range s.n {
		if s.exps[i] != e {
			continue
		}
		if r := s.sums[i] + c; (c >= 0) == (r >= s.sums[i]) {
			s.sums[i] = r
			return
		}
		s.addBig(apd.New(s.sums[i], int32(e)))
		s.sums[i] = c
		return
	}
	if s.n < len(s.exps) {
		s.exps[s.n], s.sums[s.n] = e, c
		s.n++
		return
	}
	s.addBig(apd.New(c, int32(e)))
}

func (s *decimalSum) addBig(d *apd.Decimal) {
	if _, err := decimalCtx.Add(&s.big, &s.big, d); err != nil {
		panic("billing: decimal sum failed: " + err.Error()) // only beyond ±100000 exponents
	}
}

func (s *decimalSum) total() Decimal {
	var t decimalSum
	t.big.Set(&s.big)
	for i := range s.n {
		t.addBig(apd.New(s.sums[i], int32(s.exps[i])))
	}
	return result(&t.big, nil)
}
