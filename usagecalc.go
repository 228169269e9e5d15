package billing

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"hash"
	"hash/fnv"
	"iter"
	"slices"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/billingd/billing/internal/eventcodec"
	"github.com/cockroachdb/apd/v3"
)

// CustomAggregation computes the value of a CUSTOM usage metric from the
// events it counts (those of the customer, event type, period and property
// filters; for a GROUPED metric, those of one group) and the metric's
// parameter values (defaults, overridden by the calculation's custom
// parameters; a parameter with neither is absent). The events are ordered by
// customer alias, then timestamp; the sequence is valid only during the call.
// A returned *Error reaches the caller as it is; any other error is internal.
type CustomAggregation func(events iter.Seq[UsageEvent], params map[string]Decimal) (Decimal, error)

// MaxCalculationCustomers bounds the customerAliases of one calculation.
const MaxCalculationCustomers = 100

// CalculateUsageParams selects what CalculateUsage measures.
type CalculateUsageParams struct {
	// UsageMetricID is the metric to calculate.
	UsageMetricID string
	// CustomerAliases are customer ids or aliases; each stands for its
	// customer (all its aliases and its id), or for itself when no customer
	// has it. Required, at most MaxCalculationCustomers.
	CustomerAliases []string
	// PeriodStart and PeriodEnd are both dates (YYYY-MM-DD, both
	// inclusive) or both RFC 3339 timestamps (end exclusive). Required.
	PeriodStart, PeriodEnd string
	// CustomParameters override the metric's parameter defaults by name.
	CustomParameters map[string]string
}

// UsageCalculation is the value of a usage metric for some customers and a
// period.
type UsageCalculation struct {
	// UsageMetricID is the metric calculated.
	UsageMetricID string `json:"usageMetricId"`
	Name          string `json:"name"`
	// MetricType is SIMPLE or GROUPED (then Groups is set).
	MetricType MetricType `json:"metricType"`
	// EventType is the metric's event type, the events counted.
	EventType string `json:"eventType"`
	// AggregationType is how the events made Value (COUNT, SUM, ...).
	AggregationType AggregationType `json:"aggregationType"`
	// Unit is the metric's unit, for people; empty when it has none.
	Unit string `json:"unit,omitempty"`
	// PeriodStart and PeriodEnd are the period as the caller wrote it.
	PeriodStart string `json:"periodStart"`
	// PeriodEnd: see PeriodStart.
	PeriodEnd string `json:"periodEnd"`
	// EventCount counts the matching events in the period, invalid ones
	// included.
	EventCount int64 `json:"eventCount"`
	// InvalidEventCount counts those left out of Value: without the
	// aggregation property, or with a value it cannot aggregate.
	InvalidEventCount int64 `json:"invalidEventCount"`
	// Value is the metric's value over the period, exact.
	Value Decimal `json:"value"`
	// Groups holds the value of each group of a GROUPED metric, sorted by
	// group; nil for SIMPLE metrics.
	Groups []UsageGroup `json:"groups,omitempty"`
}

// MarshalJSON writes the calculation; groups is present (possibly empty)
// exactly for GROUPED metrics.
func (c UsageCalculation) MarshalJSON() ([]byte, error) {
	type plain UsageCalculation
	var groups *[]UsageGroup
	if c.MetricType == MetricTypeGrouped {
		g := c.Groups
		if g == nil {
			g = []UsageGroup{}
		}
		groups = &g
	}
	return json.Marshal(struct {
		plain
		Groups *[]UsageGroup `json:"groups,omitempty"`
	}{plain(c), groups})
}

// UsageGroup is the value of one group of a GROUPED metric.
type UsageGroup struct {
	// Group is the value of the grouping property the events share.
	Group string `json:"group"`
	// EventCount counts the group's matching events.
	EventCount int64 `json:"eventCount"`
	// Value is the group's value.
	Value Decimal `json:"value"`
}

// UsagePeriod is a half-open period of event timestamps [Start, End), as
// the billing engine passes it to a calculation.
type UsagePeriod struct {
	// Start and End bound the period: Start included, End excluded.
	Start, End time.Time
	// StartText and EndText are the period as the caller wrote it.
	StartText, EndText string
	// first and endExclusive are the days of a period given as dates; its
	// instants are then each customer's (calendarFor), and Start and End
	// those of UTC.
	first, endExclusive Date
}

// ParseUsagePeriod parses the periodStart and periodEnd of a calculation:
// two dates, the end inclusive, or two timestamps, the end exclusive.
// Returns validation_failed naming the bad parameter.
func ParseUsagePeriod(start, end string) (UsagePeriod, error) {
	var v validator
	v.check(start != "", "periodStart", "periodStart is required")
	v.check(end != "", "periodEnd", "periodEnd is required")
	if err := v.err(); err != nil {
		return UsagePeriod{}, err
	}
	isDate := func(s string) bool { return len(s) == len(time.DateOnly) }
	if isDate(start) != isDate(end) {
		return UsagePeriod{}, FieldError("periodEnd", "periodStart and periodEnd must both be dates or both be timestamps")
	}
	if isDate(start) {
		ds, de, err := parsePeriodBounds(start, end, ParseDate)
		if err != nil {
			return UsagePeriod{}, err
		}
		p := utcCalendar.Period(ds, de.AddDays(1))
		p.first, p.endExclusive = ds, de.AddDays(1)
		return p, nil
	}
	ts, te, err := parsePeriodBounds(start, end, ParseTimestamp)
	if err != nil {
		return UsagePeriod{}, err
	}
	return UsagePeriod{Start: ts, End: te, StartText: FormatTimestamp(ts), EndText: FormatTimestamp(te)}, nil
}

// parsePeriodBounds parses periodStart and periodEnd with parse (dates or
// timestamps) and refuses an end before the start, naming the bad parameter.
func parsePeriodBounds[T interface{ Before(T) bool }](start, end string, parse func(string) (T, error)) (T, T, error) {
	var v validator
	s, err1 := parse(start)
	e, err2 := parse(end)
	v.addParse("periodStart", err1)
	v.addParse("periodEnd", err2)
	if err := v.err(); err != nil {
		return s, e, err
	}
	if e.Before(s) {
		return s, e, FieldError("periodEnd", "periodEnd must not be before periodStart")
	}
	return s, e, nil
}

// CalculateUsage computes a usage metric over the events of some customers
// in a period, reading only those customers' events of the metric's event
// type and period. Returns not_found if there is no such metric,
// validation_failed for bad parameters, and invalid_state for a CUSTOM
// metric whose function is not registered in Config.CustomAggregations.
func (s *Service) CalculateUsage(ctx context.Context, account string, p CalculateUsageParams) (*UsageCalculation, error) {
	var v validator
	v.check(len(p.CustomerAliases) > 0, "customerAliases", "customerAliases is required")
	v.check(len(p.CustomerAliases) <= MaxCalculationCustomers, "customerAliases", "customerAliases takes at most %d values", MaxCalculationCustomers)
	for _, a := range p.CustomerAliases {
		checkKey(&v, "customerAliases", a, true)
	}
	period, err := ParseUsagePeriod(p.PeriodStart, p.PeriodEnd)
	v.merge("", err)
	if err := v.err(); err != nil {
		return nil, err
	}
	var out *UsageCalculation
	err = s.view(ctx, func(tx Tx) error {
		m, err := s.getUsageMetric(ctx, tx, account, p.UsageMetricID)
		if err != nil {
			return err
		}
		out, err = s.calculateUsage(ctx, tx, account, m, p.CustomerAliases, period, p.CustomParameters)
		return err
	})
	return out, err
}

// calculateUsage is the one usage computation, run in the caller's
// transaction: the billing engine calls it with a price's metric, the
// schedule's customer and the billing period.
func (s *Service) calculateUsage(ctx context.Context, tx Tx, account string, m *UsageMetric, customers []string, period UsagePeriod, overrides map[string]string) (*UsageCalculation, error) {
	params, err := metricParameters(m, overrides)
	if err != nil {
		return nil, err
	}
	var custom CustomAggregation
	if m.AggregationType == AggregationCustom {
		if custom = s.custom[m.Name]; custom == nil {
			return nil, Errorf(CodeInvalidState, "no custom aggregation function is registered under the name %q (Config.CustomAggregations)", m.Name)
		}
	}
	owners, err := s.aliasOwners(ctx, tx, account, customers)
	if err != nil {
		return nil, err
	}
	src := &usageSource{ctx: ctx, tx: tx, account: account, eventType: m.EventType}
	if src.series, err = s.seriesOf(src, owners, period); err != nil {
		return nil, err
	}
	c := newUsageCalc(m)
	if err := src.each(c); err != nil {
		return nil, err
	}
	out := &UsageCalculation{
		UsageMetricID: m.ID, Name: m.Name, MetricType: m.MetricType, EventType: m.EventType,
		AggregationType: m.AggregationType, Unit: m.Unit, PeriodStart: period.StartText, PeriodEnd: period.EndText,
	}
	if custom != nil {
		err = c.runCustom(src, custom, params)
	}
	c.fill(out)
	return out, err
}

// metricParameters returns the parameter values of a calculation: the
// metric's defaults overridden by overrides.
func metricParameters(m *UsageMetric, overrides map[string]string) (map[string]Decimal, error) {
	out := map[string]Decimal{}
	types := map[string]ParameterType{}
	for _, p := range m.Parameters {
		types[p.Name] = p.Type
		if p.DefaultValue != "" {
			out[p.Name] = MustDecimal(p.DefaultValue) // validated on create
		}
	}
	var v validator
	for _, name := range sortedKeys(overrides) {
		t, ok := types[name]
		if !ok {
			v.add("customParameters", "the metric has no parameter named %q", name)
			continue
		}
		if err := checkParameterValue(t, overrides[name]); err != nil {
			v.add("customParameters", "parameter %q %s", name, err.Error())
			continue
		}
		out[name] = MustDecimal(overrides[name])
	}
	return out, v.err()
}

// usageSource reads the events a calculation counts: for each series (one
// per alias of the metric's event type), the key range of the period.
type usageSource struct {
	ctx       context.Context
	tx        Tx
	account   string
	eventType string
	series    []usageSeries
}

// usageSeries is one alias's series and the instants [start, end) of the
// period in its customer's calendar.
type usageSeries struct {
	no         []byte
	alias      string
	owner      string // the customer the alias stands for (or the alias)
	start, end time.Time
}

// seriesOf returns the series of the aliases of owners (alias → customer
// id) in key order, each with the period's instants: a period given as dates
// runs from midnight to midnight of its customer's calendar, so a
// calculation and the billing engine count the same events.
func (s *Service) seriesOf(src *usageSource, owners map[string]string, period UsagePeriod) ([]usageSeries, error) {
	var out []usageSeries
	cals := map[string]Calendar{}
	for _, a := range sortedKeys(owners) {
		no, err := seriesNo(src.ctx, src.tx, src.account, src.eventType, a, false)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		sr := usageSeries{no: no, alias: a, owner: owners[a], start: period.Start, end: period.End}
		if !period.first.IsZero() {
			cal, ok := cals[owners[a]]
			if !ok {
				if cal, err = s.calendarFor(src.ctx, src.tx, src.account, owners[a]); err != nil {
					return nil, err
				}
				cals[owners[a]] = cal
			}
			sr.start, sr.end = cal.Start(period.first), cal.Start(period.endExclusive)
		}
		out = append(out, sr)
	}
	return out, nil
}

// rangeOf returns the keys of series s in the source's period. Start and
// End share the series prefix, so every key between them has it: the range
// needs no Prefix, which saves a comparison per event.
func (src *usageSource) rangeOf(s usageSeries) Range {
	return Range{
		Start: eventcodec.AppendTime(slices.Clone(s.no), s.start),
		End:   eventcodec.AppendTime(slices.Clone(s.no), s.end),
	}
}

// each adds every stored event of the source's series and period to c. It
// is the innermost loop of a calculation: it calls c.add directly rather
// than through scan's callback, and gives the store only the start of the
// range, ending the scan itself with two integer comparisons (series
// number, timestamp) instead of the store comparing every key with End.
func (src *usageSource) each(c *usageCalc) error {
	// A plain SUM, the metric of most usage prices, is inlined here.
	sum, prop, total := c.plain && c.m.AggregationType == AggregationSum, c.m.AggregationProperty, &c.total
	for _, s := range src.series {
		no, end := eventcodec.No(s.no), eventcodec.TimeBound(s.end)
		r := Range{Start: src.rangeOf(s).Start}
		err := src.tx.Scan(src.ctx, tableUsageEvents, r, func(k, v []byte) error {
			if len(k) < 12 || eventcodec.No(k) != no || eventcodec.KeyTime(k) >= end {
				return ErrStopScan
			}
			if sum {
				total.count++
				if p, ok := eventcodec.View(v).Find(prop); !ok || !total.sum.addProperty(p) {
					total.invalid++
				}
				return nil
			}
			c.key, c.series = k, &s
			c.add(eventcodec.View(v))
			return nil
		})
		if err != nil {
			return err
		}
	}
	if c.m.AggregationType == AggregationTimeWeightedSum {
		return src.carryOver(c)
	}
	return nil
}

// carryOver gives each customer (and group) of a TIME_WEIGHTED_SUM its
// value at the period's start: that of its latest counted event with a
// valid value before the start. It reads each series backwards from the
// period's start: up to that event for a SIMPLE metric, and over all the
// earlier events for a GROUPED one (any group may have one).
func (src *usageSource) carryOver(c *usageCalc) error {
	for i := range src.series {
		s := &src.series[i]
		seen := map[string]bool{}
		r := Range{Prefix: s.no, End: src.rangeOf(*s).Start, Reverse: true}
		err := src.tx.Scan(src.ctx, tableUsageEvents, r, func(k, v []byte) error {
			ev := eventcodec.View(v)
			if !c.passes(ev) {
				return nil
			}
			p, ok := ev.Find(c.m.AggregationProperty)
			if !ok {
				return nil
			}
			d, ok := propertyDecimal(p)
			if !ok {
				return nil
			}
			a := &c.total
			if c.m.MetricType == MetricTypeGrouped {
				label := c.groupOf(ev)
				if seen[label] {
					return nil
				}
				seen[label] = true
				a = c.group(label)
			}
			l := a.line(s)
			if l.carry == nil || string(k[4:]) > string(l.carry.tie) {
				l.carry = &twPoint{at: s.start.Unix(), tie: slices.Clone(k[4:]), v: d}
			}
			if c.m.MetricType != MetricTypeGrouped {
				return ErrStopScan
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// scan calls fn for every stored event of the source's series and period.
func (src *usageSource) scan(fn func(alias string, pk []byte, ev eventcodec.View) error) error {
	for _, s := range src.series {
		err := src.tx.Scan(src.ctx, tableUsageEvents, src.rangeOf(s), func(k, v []byte) error {
			return fn(s.alias, k, eventcodec.View(v))
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// events returns the counted events for which keep is true, decoded, as a
// sequence for a custom function. A read error ends the sequence and is
// stored in *errp.
func (src *usageSource) events(keep func(eventcodec.View) bool, errp *error) iter.Seq[UsageEvent] {
	return func(yield func(UsageEvent) bool) {
		stop := errors.New("stop")
		err := src.scan(func(alias string, pk []byte, ev eventcodec.View) error {
			if !keep(ev) {
				return nil
			}
			e, err := decodeUsageEvent(src.account, src.eventType, alias, pk, ev)
			if err != nil {
				return err
			}
			if !yield(e) {
				return stop
			}
			return nil
		})
		if err != nil && err != stop && *errp == nil {
			*errp = err
		}
	}
}

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
