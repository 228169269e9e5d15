package billing

import (
	"errors"
	"hash"
	"hash/fnv"
	"slices"
	"unicode"
	"unicode/utf8"

	"github.com/cockroachdb/apd/v3"

	"github.com/billingd/billing/internal/eventcodec"
)

// appendRawText appends the value's rendering for comparison: strings as they
// are, numbers in canonical form, booleans true/false.
func appendRawText(b []byte, p eventcodec.Raw) []byte {
	switch p.Tag {
	case eventcodec.TagString:
		return append(b, p.Payload...)
	case eventcodec.TagTrue:
		return append(b, "true"...)
	case eventcodec.TagFalse:
		return append(b, "false"...)
	case eventcodec.TagSmall:
		c, e := eventcodec.SmallNumber(p.Payload)
		return eventcodec.AppendCanonical(b, c, e)
	}
	d, err := ParseDecimalNumber(string(p.Payload))
	if err != nil {
		return append(b, p.Payload...) // unreachable: validated on ingest
	}
	return append(b, d.Canonical()...)
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
func (c *usageCalc) render(p eventcodec.Raw) []byte {
	c.text = appendRawText(c.text[:0], p)
	return c.fold(c.text)
}

// passes applies the property filters: an event passes a plain filter when
// its property is one of the values, and a negated one when it is not (a
// missing property fails a plain filter and passes a negated one).
func (c *usageCalc) passes(ev eventcodec.View) bool {
	for i := range c.filters {
		f := &c.filters[i]
		in := false
		if p, ok := ev.Find(f.name); ok {
			_, in = f.values[string(c.render(p))]
		}
		if in == f.negate {
			return false
		}
	}
	return true
}

// groupOf returns the group label of ev ("" without the grouping property).
func (c *usageCalc) groupOf(ev eventcodec.View) string {
	p, ok := ev.Find(c.m.GroupingProperty)
	if !ok {
		return ""
	}
	return string(c.render(p))
}

// add counts one stored event of the series and period.
func (c *usageCalc) add(ev eventcodec.View) {
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

func (c *usageCalc) addTo(a *usageAgg, ev eventcodec.View) {
	a.count++
	switch c.m.AggregationType {
	case AggregationSum:
		p, ok := ev.Find(c.m.AggregationProperty)
		if !ok || !a.sum.addProperty(p) {
			a.invalid++
		}
	case AggregationUnique:
		p, ok := ev.Find(c.m.AggregationProperty)
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
	call := func(keep func(eventcodec.View) bool) (Decimal, error) {
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
		v, err := call(func(ev eventcodec.View) bool { return c.passes(ev) && c.groupOf(ev) == label })
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
func (s *decimalSum) addProperty(p eventcodec.Raw) bool {
	if p.Tag == eventcodec.TagSmall { // the common case, kept small enough to inline
		c, e := eventcodec.SmallNumber(p.Payload)
		s.addSmall(c, e)
		return true
	}
	return s.addOther(p)
}

// addOther is addProperty for every tag but eventcodec.TagSmall.
func (s *decimalSum) addOther(p eventcodec.Raw) bool {
	switch p.Tag {
	case eventcodec.TagBig:
		d, err := ParseDecimalNumber(string(p.Payload))
		if err != nil {
			return false
		}
		s.addBig(&d.d)
	case eventcodec.TagString:
		d, err := ParseDecimal(string(p.Payload))
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
