package billing

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"slices"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/billingd/billing/internal/eventcodec"
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
	owners, err := s.aliasOwners(ctx, tx, account, customers)
	if err != nil {
		return nil, err
	}
	return s.calculateOwned(ctx, tx, account, m, owners, period, overrides)
}

// calculateOwned is calculateUsage over the aliases of owners (alias →
// customer id, as aliasOwners returns them).
func (s *Service) calculateOwned(ctx context.Context, tx Tx, account string, m *UsageMetric, owners map[string]string, period UsagePeriod, overrides map[string]string) (*UsageCalculation, error) {
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
		var err error
		no, ok := s.nums.Series(src.account, src.eventType, a) // committed numbers never change
		if !ok {
			no, err = seriesNo(src.ctx, src.tx, src.account, src.eventType, a, false)
			if errors.Is(err, ErrNotFound) {
				continue
			}
			if err != nil {
				return nil, err
			}
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
		if done, err := src.eachRolledUp(c, &s); done || err != nil {
			if err != nil {
				return err
			}
			continue
		}
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
