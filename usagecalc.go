package billing

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"slices"
	"strings"
	"time"

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
	UsageMetricID     string          `json:"usageMetricId"`
	Name              string          `json:"name"`
	MetricType        MetricType      `json:"metricType"`
	EventType         string          `json:"eventType"`
	AggregationType   AggregationType `json:"aggregationType"`
	Unit              string          `json:"unit,omitempty"`
	PeriodStart       string          `json:"periodStart"`
	PeriodEnd         string          `json:"periodEnd"`
	EventCount        int64           `json:"eventCount"`
	InvalidEventCount int64           `json:"invalidEventCount"`
	Value             Decimal         `json:"value"`
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
	Group      string  `json:"group"`
	EventCount int64   `json:"eventCount"`
	Value      Decimal `json:"value"`
}

// UsagePeriod is a half-open period of event timestamps [Start, End), as
// the billing engine passes it to a calculation.
type UsagePeriod struct {
	Start, End time.Time
	// StartText and EndText are the period as the caller wrote it.
	StartText, EndText string
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
		ds, err1 := ParseDate(start)
		de, err2 := ParseDate(end)
		v.addParse("periodStart", err1)
		v.addParse("periodEnd", err2)
		if err := v.err(); err != nil {
			return UsagePeriod{}, err
		}
		if de.Before(ds) {
			return UsagePeriod{}, FieldError("periodEnd", "periodEnd must not be before periodStart")
		}
		return UsagePeriod{Start: ds.Time(), End: de.AddDays(1).Time(), StartText: ds.String(), EndText: de.String()}, nil
	}
	ts, err1 := ParseTimestamp(start)
	te, err2 := ParseTimestamp(end)
	v.addParse("periodStart", err1)
	v.addParse("periodEnd", err2)
	if err := v.err(); err != nil {
		return UsagePeriod{}, err
	}
	if te.Before(ts) {
		return UsagePeriod{}, FieldError("periodEnd", "periodEnd must not be before periodStart")
	}
	return UsagePeriod{Start: ts, End: te, StartText: FormatTimestamp(ts), EndText: FormatTimestamp(te)}, nil
}

// ParseCustomParameters parses the customParameters query parameter:
// name=value pairs separated by commas.
func ParseCustomParameters(s string) (map[string]string, error) {
	out := map[string]string{}
	if s == "" {
		return out, nil
	}
	for pair := range strings.SplitSeq(s, ",") {
		name, value, ok := strings.Cut(pair, "=")
		if !ok || name == "" {
			return nil, FieldError("customParameters", "customParameters must be name=value pairs separated by commas")
		}
		out[name] = value
	}
	return out, nil
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
	aliases, err := s.resolveAliases(ctx, tx, account, customers)
	if err != nil {
		return nil, err
	}
	src := &usageSource{ctx: ctx, tx: tx, account: account, eventType: m.EventType, period: period}
	if src.series, err = src.seriesOf(aliases); err != nil {
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
	period    UsagePeriod
	series    []usageSeries
}

type usageSeries struct {
	no    []byte
	alias string
}

func (src *usageSource) seriesOf(aliases []string) ([]usageSeries, error) {
	var out []usageSeries
	for _, a := range aliases {
		no, err := seriesNo(src.ctx, src.tx, src.account, src.eventType, a, false)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, usageSeries{no: no, alias: a})
	}
	return out, nil
}

// rangeOf returns the keys of series s in the source's period. Start and
// End share the series prefix, so every key between them has it: the range
// needs no Prefix, which saves a comparison per event.
func (src *usageSource) rangeOf(s usageSeries) Range {
	return Range{
		Start: eventcodec.AppendTime(slices.Clone(s.no), src.period.Start),
		End:   eventcodec.AppendTime(slices.Clone(s.no), src.period.End),
	}
}

// each adds every stored event of the source's series and period to c. It
// is the innermost loop of a calculation: it calls c.add directly rather
// than through scan's callback, and gives the store only the start of the
// range, ending the scan itself with two integer comparisons (series
// number, timestamp) instead of the store comparing every key with End.
func (src *usageSource) each(c *usageCalc) error {
	end := eventcodec.TimeBound(src.period.End)
	// A plain SUM, the metric of most usage prices, is inlined here.
	sum, prop, total := c.plain && c.m.AggregationType == AggregationSum, c.m.AggregationProperty, &c.total
	for _, s := range src.series {
		no := eventcodec.No(s.no)
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
			c.add(eventcodec.View(v))
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
