package billing

import (
	"bytes"
	"errors"
	"hash"
	"hash/fnv"
	"slices"

	"github.com/billingd/billing/internal/eventcodec"
	"github.com/cockroachdb/apd/v3"
)

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
	// key and series are those of the event being added (valid during
	// add only), for LATEST and TIME_WEIGHTED_SUM.
	key    []byte
	series *usageSeries
}

// usageAgg is the aggregate of all counted events or of one group.
type usageAgg struct {
	count, invalid int64
	sum            decimalSum
	uniq           map[[16]byte]struct{}
	custom         Decimal
	gauge          *gaugeAgg
}

// gaugeAgg is the state of the aggregations over the values of the events
// (MAX, MIN, LATEST, TIME_WEIGHTED_SUM, PERCENTILE).
type gaugeAgg struct {
	has     bool
	best    Decimal // MAX, MIN, LATEST: the value so far
	bestKey []byte  // LATEST: timestamp and id of best's event
	values  []Decimal
	lines   map[string]*twLine // TIME_WEIGHTED_SUM: by customer
}

// twLine is the values one customer's gauge took in the period, for
// TIME_WEIGHTED_SUM.
type twLine struct {
	start, end int64 // the period in Unix seconds
	points     []twPoint
	carry      *twPoint // the value at the start, from before the period
}

// twPoint is a value set at Unix second at; tie (the event's timestamp
// and id) orders points of one second by creation.
type twPoint struct {
	at  int64
	tie []byte
	v   Decimal
}

// line returns a's line of the customer of series s.
func (a *usageAgg) line(s *usageSeries) *twLine {
	if a.gauge == nil {
		a.gauge = &gaugeAgg{}
	}
	if a.gauge.lines == nil {
		a.gauge.lines = map[string]*twLine{}
	}
	l := a.gauge.lines[s.owner]
	if l == nil {
		l = &twLine{start: s.start.Unix(), end: s.end.Unix()}
		a.gauge.lines[s.owner] = l
	}
	return l
}

// propertyDecimal returns p's value when it is a number (a JSON number, or
// a string in the decimal grammar).
func propertyDecimal(p eventcodec.Raw) (Decimal, bool) {
	var d Decimal
	var err error
	switch p.Tag {
	case eventcodec.TagSmall:
		c, e := eventcodec.SmallNumber(p.Payload)
		d.d.SetFinite(c, int32(e))
	case eventcodec.TagBig:
		d, err = ParseDecimalNumber(string(p.Payload))
	case eventcodec.TagString:
		d, err = ParseDecimal(string(p.Payload))
	default:
		return d, false
	}
	return d, err == nil
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
		c.addTo(c.group(c.groupOf(ev)), ev)
	}
}

// group returns the aggregate of group label, made on first use.
func (c *usageCalc) group(label string) *usageAgg {
	g := c.groups[label]
	if g == nil {
		g = &usageAgg{}
		c.groups[label] = g
	}
	return g
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
	case AggregationMax, AggregationMin, AggregationLatest, AggregationTimeWeightedSum, AggregationPercentile:
		p, ok := ev.Find(c.m.AggregationProperty)
		var d Decimal
		if ok {
			d, ok = propertyDecimal(p)
		}
		if !ok {
			a.invalid++
			return
		}
		// A GROUPED metric's total is the sum of its groups' values
		// (fill): the total keeps counts only.
		if a != &c.total || c.m.MetricType != MetricTypeGrouped {
			c.addGauge(a, d)
		}
	}
}

// addGauge adds value d of the event being added (c.key, c.series) to a.
func (c *usageCalc) addGauge(a *usageAgg, d Decimal) {
	if a.gauge == nil {
		a.gauge = &gaugeAgg{}
	}
	g := a.gauge
	switch c.m.AggregationType {
	case AggregationMax:
		if !g.has || d.Cmp(g.best) > 0 {
			g.best = d
		}
	case AggregationMin:
		if !g.has || d.Cmp(g.best) < 0 {
			g.best = d
		}
	case AggregationLatest:
		// Keys order events by timestamp, then id (creation); across the
		// series of several aliases, their suffixes compare the same way.
		if !g.has || string(c.key[4:]) > string(g.bestKey) {
			g.best, g.bestKey = d, append(g.bestKey[:0], c.key[4:]...)
		}
	case AggregationPercentile:
		g.values = append(g.values, d)
	case AggregationTimeWeightedSum:
		l := a.line(c.series)
		l.points = append(l.points, twPoint{at: eventcodec.ReadTime(c.key[4:12]).Unix(), tie: slices.Clone(c.key[4:]), v: d})
	}
	g.has = true
}

// value returns the aggregate's value for metric m's aggregation.
func (a *usageAgg) value(m *UsageMetric) Decimal {
	switch m.AggregationType {
	case AggregationMax, AggregationMin, AggregationLatest:
		if a.gauge == nil {
			return DecimalFromInt(0)
		}
		return a.gauge.best
	case AggregationPercentile:
		if a.gauge == nil || len(a.gauge.values) == 0 {
			return DecimalFromInt(0)
		}
		return nearestRank(a.gauge.values, *m.Percentile)
	case AggregationTimeWeightedSum:
		if a.gauge == nil {
			return DecimalFromInt(0)
		}
		return timeWeightedSum(a.gauge.lines, m.TimeUnit)
	case AggregationSum:
		return a.sum.total()
	case AggregationUnique:
		return DecimalFromInt(int64(len(a.uniq)))
	case AggregationCustom:
		return a.custom
	}
	return DecimalFromInt(a.count)
}

// nearestRank returns the pct percentile of values by the nearest-rank
// method: in ascending order, the value at rank ceil(pct / 100 × n)
// (1-based), for 0 < pct < 100 and n > 0. It sorts values.
func nearestRank(values []Decimal, pct Decimal) Decimal {
	slices.SortStableFunc(values, Decimal.Cmp)
	n := int64(len(values))
	rank, err := pct.Mul(DecimalFromInt(n)).ceilQuo(DecimalFromInt(100))
	r, ok := rank.Int64()
	if err != nil || !ok {
		r = n // unreachable: pct is validated to lie in (0, 100)
	}
	return values[min(max(r, 1), n)-1]
}

// timeWeightedSum returns the sum over the lines of each value times the
// seconds it was held, divided by the seconds of unit: exact when the
// quotient is, else to 34 significant digits. A line's value holds from
// its point's second until the next point's (points of one second in
// creation order, so the last created holds) or the period's end; the
// carried-over value holds from the start until the first point.
func timeWeightedSum(lines map[string]*twLine, unit TimeUnit) Decimal {
	total := DecimalFromInt(0)
	for _, owner := range sortedKeys(lines) {
		l := lines[owner]
		pts := l.points
		slices.SortStableFunc(pts, func(a, b twPoint) int { return bytes.Compare(a.tie, b.tie) })
		if l.carry != nil {
			pts = append([]twPoint{*l.carry}, pts...)
		}
		for i, p := range pts {
			until := l.end
			if i+1 < len(pts) {
				until = pts[i+1].at
			}
			if d := until - p.at; d > 0 {
				total = total.Add(p.v.Mul(DecimalFromInt(d)))
			}
		}
	}
	q, err := total.Quo(DecimalFromInt(unit.seconds()))
	if err != nil {
		return total // unreachable: a unit is never zero seconds
	}
	return q
}

// fill writes the results into out.
func (c *usageCalc) fill(out *UsageCalculation) {
	out.EventCount, out.InvalidEventCount = c.total.count, c.total.invalid
	out.Value = c.total.value(c.m)
	if c.m.MetricType != MetricTypeGrouped {
		return
	}
	// COUNT and SUM totals equal the sum of their groups already; the
	// gauges' total is the sum of their groups' values.
	sumGroups := c.m.AggregationType.needsProperty() && c.m.AggregationType != AggregationUnique && c.m.AggregationType != AggregationSum
	if sumGroups {
		out.Value = DecimalFromInt(0)
	}
	out.Groups = make([]UsageGroup, 0, len(c.groups))
	for _, label := range sortedKeys(c.groups) {
		g := c.groups[label]
		v := g.value(c.m)
		out.Groups = append(out.Groups, UsageGroup{Group: label, EventCount: g.count, Value: v})
		if sumGroups {
			out.Value = out.Value.Add(v)
		}
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
