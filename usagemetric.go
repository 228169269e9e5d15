package billing

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// MetricType says whether a usage metric is one value (SIMPLE) or one value
// per distinct value of a grouping property (GROUPED).
type MetricType string

// The metric types.
const (
	MetricTypeSimple  MetricType = "SIMPLE"
	MetricTypeGrouped MetricType = "GROUPED"
)

// AggregationType is how a usage metric aggregates the events it counts.
type AggregationType string

// The aggregation types.
const (
	AggregationCount  AggregationType = "COUNT"
	AggregationUnique AggregationType = "UNIQUE"
	AggregationSum    AggregationType = "SUM"
	AggregationCustom AggregationType = "CUSTOM"
	// AggregationMax is the largest value of aggregationProperty among the
	// counted events (a gauge's peak: peak instances).
	AggregationMax AggregationType = "MAX"
	// AggregationMin is the smallest value of aggregationProperty among the
	// counted events.
	AggregationMin AggregationType = "MIN"
	// AggregationLatest is the value of aggregationProperty of the counted
	// event with the latest eventTimestamp in the period; of events with
	// the same timestamp, the one created last.
	AggregationLatest AggregationType = "LATEST"
	// AggregationTimeWeightedSum is the sum, over the period, of each value
	// of aggregationProperty times the time it was held: from its event's
	// timestamp until the next event of the same customer (and group), or
	// the period's end; the customer's last value before the period counts
	// from the period's start. In value × TimeUnit (HOUR unless the metric
	// says otherwise): GB-hours.
	AggregationTimeWeightedSum AggregationType = "TIME_WEIGHTED_SUM"
	// AggregationPercentile is the exact nearest-rank percentile
	// (UsageMetric.Percentile) of the values of aggregationProperty of the
	// counted events: of the n values in ascending order, the one at rank
	// ceil(percentile / 100 × n).
	AggregationPercentile AggregationType = "PERCENTILE"
)

// aggregationTypes are the aggregation types, in the order messages list
// them.
var aggregationTypes = []AggregationType{
	AggregationCount, AggregationUnique, AggregationSum, AggregationCustom,
	AggregationMax, AggregationMin, AggregationLatest, AggregationTimeWeightedSum, AggregationPercentile,
}

// aggregationTypeList is aggregationTypes for messages: "COUNT, UNIQUE, ...".
func aggregationTypeList() string {
	names := make([]string, len(aggregationTypes))
	for i, a := range aggregationTypes {
		names[i] = string(a)
	}
	return strings.Join(names, ", ")
}

// needsProperty reports whether aggregation a aggregates the values of
// aggregationProperty (which is then required).
func (a AggregationType) needsProperty() bool {
	switch a {
	case AggregationSum, AggregationUnique, AggregationMax, AggregationMin, AggregationLatest,
		AggregationTimeWeightedSum, AggregationPercentile:
		return true
	}
	return false
}

// TimeUnit is the unit of time of a TIME_WEIGHTED_SUM metric: its value is
// in value × TimeUnit.
type TimeUnit string

// The time units.
const (
	TimeUnitSecond TimeUnit = "SECOND"
	TimeUnitMinute TimeUnit = "MINUTE"
	TimeUnitHour   TimeUnit = "HOUR"
	TimeUnitDay    TimeUnit = "DAY"
)

// seconds returns the length of the unit in seconds (HOUR when empty).
func (u TimeUnit) seconds() int64 {
	switch u {
	case TimeUnitSecond:
		return 1
	case TimeUnitMinute:
		return 60
	case TimeUnitDay:
		return 86400
	}
	return 3600
}

// ParameterType is the type of a usage metric parameter's values.
type ParameterType string

// The parameter types.
const (
	ParameterInteger         ParameterType = "INTEGER"
	ParameterPositiveInteger ParameterType = "POSITIVE_INTEGER"
	ParameterNumber          ParameterType = "NUMBER"
	ParameterPositiveNumber  ParameterType = "POSITIVE_NUMBER"
)

// UsageMetric is an aggregation over usage events of one event type.
type UsageMetric struct {
	ID string `json:"id"`
	// ServiceAccountID is the account that owns the metric.
	ServiceAccountID string `json:"serviceAccountId"`
	// Name is unique, ignoring case, among the account's metrics that are not
	// deleted.
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// MetricType is SIMPLE, GROUPED or CUSTOM.
	MetricType MetricType `json:"metricType"`
	// EventType selects the usage events the metric counts.
	EventType string `json:"eventType"`
	// AggregationType is how the selected events become one number (COUNT, SUM,
	// MAX, UNIQUE, ...).
	AggregationType AggregationType `json:"aggregationType"`
	// AggregationProperty is the event property aggregated (summed, counted
	// distinct, its maximum, ...); empty for COUNT.
	AggregationProperty string `json:"aggregationProperty,omitempty"`
	// GroupingProperty is the event property a GROUPED metric groups by; empty for
	// the other types.
	GroupingProperty string `json:"groupingProperty,omitempty"`
	// Unit is free text for people ("requests", "GB"); empty when not given.
	Unit      string    `json:"unit,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
	// DeletedAt is when the metric was deleted; nil while it is live. Deleted
	// metrics can still be calculated, so old invoices stay explainable.
	DeletedAt *time.Time `json:"deletedAt,omitempty"`
	// PropertyFilters keep only events whose property (the key) has one of the
	// values; always present, {} when none.
	PropertyFilters map[string][]string `json:"propertyFilters"`
	// CaseSensitive makes filter values compare with case; false folds case.
	CaseSensitive bool `json:"caseSensitive"`
	// PropertiesToNegate are the PropertyFilters keys whose values exclude rather
	// than keep events.
	PropertiesToNegate []string `json:"propertiesToNegate,omitempty"`
	// Parameters are the named inputs of a CUSTOM metric's function; always
	// present.
	Parameters []UsageMetricParameter `json:"parameters"`
	// Percentile is the percentile of a PERCENTILE metric, above 0 and
	// below 100 (95 for p95); nil for the other aggregations.
	Percentile *Decimal `json:"percentile,omitempty"`
	// TimeUnit is the unit of time of a TIME_WEIGHTED_SUM metric (HOUR:
	// the value is in value × hours); empty for the other aggregations.
	TimeUnit TimeUnit `json:"timeUnit,omitempty"`
}

// UsageMetricParameter is a named parameter of a usage metric, passed to a
// CUSTOM aggregation; prices may override its default value.
type UsageMetricParameter struct {
	ID string `json:"id"`
	// UsageMetricID is the metric the parameter belongs to.
	UsageMetricID string `json:"usageMetricId"`
	Name          string `json:"name"`
	// Type is the parameter's value type.
	Type        ParameterType `json:"type"`
	Description string        `json:"description,omitempty"`
	// DefaultValue is used unless a price overrides it.
	DefaultValue string `json:"defaultValue,omitempty"`
}

// UsageMetricParams are the fields of a usage metric, for create and for
// update (a full replace).
type UsageMetricParams struct {
	// Name is required; unique, ignoring case, among the account's live metrics
	// (409 conflict otherwise).
	Name        string `json:"name"`
	Description string `json:"description"`
	// MetricType is required.
	MetricType MetricType `json:"metricType"`
	// EventType is required.
	EventType string `json:"eventType"`
	// AggregationType is required.
	AggregationType AggregationType `json:"aggregationType"`
	// AggregationProperty is required for every aggregation but COUNT (which
	// refuses it) and CUSTOM (which may name one).
	AggregationProperty string `json:"aggregationProperty"`
	// GroupingProperty is required for GROUPED metrics.
	GroupingProperty string `json:"groupingProperty"`
	// Unit is free text for people ("requests", "GB"); optional.
	Unit string `json:"unit"`
	// PropertyFilters: see UsageMetric.PropertyFilters.
	PropertyFilters map[string][]string `json:"propertyFilters"`
	// CaseSensitive: see UsageMetric.CaseSensitive.
	CaseSensitive bool `json:"caseSensitive"`
	// PropertiesToNegate must be keys of PropertyFilters.
	PropertiesToNegate []string `json:"propertiesToNegate"`
	// Parameters of a CUSTOM metric.
	Parameters []UsageMetricParameterParam `json:"parameters"`
	// Percentile is required for PERCENTILE metrics (above 0, below 100)
	// and refused for the others.
	Percentile *Decimal `json:"percentile"`
	// TimeUnit is the unit of a TIME_WEIGHTED_SUM metric's value (SECOND,
	// MINUTE, HOUR or DAY; HOUR when empty); refused for the others.
	TimeUnit TimeUnit `json:"timeUnit"`
}

// CreateUsageMetricParams are the fields of a new usage metric. DeletedAt
// creates an already deleted metric (for imports).
type CreateUsageMetricParams struct {
	UsageMetricParams
	// DeletedAt, when set, creates the metric already deleted at that time.
	DeletedAt *time.Time `json:"deletedAt"`
}

// UsageMetricParameterParam is a parameter given on create or update.
type UsageMetricParameterParam struct {
	Name string `json:"name"`
	// Type is the parameter's value type; required.
	Type        ParameterType `json:"type"`
	Description string        `json:"description"`
	// DefaultValue is used unless a price overrides it.
	DefaultValue string `json:"defaultValue"`
}

// UsageMetricFilter selects usage metrics in ListUsageMetrics. Empty fields
// do not filter.
type UsageMetricFilter struct {
	// Name matches metrics whose name contains it, ignoring case.
	Name string
	// EventTypes matches metrics of any of these event types.
	EventTypes []string
	// AggregationTypes matches metrics of any of these aggregation types.
	AggregationTypes []AggregationType
	// SortOrder orders by creation: DESC (newest first, the default) or ASC.
	SortOrder SortOrder
}

func (s *Service) validateUsageMetric(p *UsageMetricParams) error {
	var v validator
	s.checkString(&v, "name", p.Name, true)
	s.checkString(&v, "description", p.Description, false)
	s.checkString(&v, "unit", p.Unit, false)
	checkKey(&v, "eventType", p.EventType, true)
	switch p.MetricType {
	case "":
		v.add("metricType", "metricType is required")
	case MetricTypeSimple:
		v.check(p.GroupingProperty == "", "groupingProperty", "groupingProperty is only allowed on GROUPED metrics")
	case MetricTypeGrouped:
		v.check(p.GroupingProperty != "", "groupingProperty", "groupingProperty is required for GROUPED metrics")
	default:
		v.add("metricType", "metricType must be SIMPLE or GROUPED")
	}
	checkKey(&v, "groupingProperty", p.GroupingProperty, false)
	checkKey(&v, "aggregationProperty", p.AggregationProperty, false)
	switch p.AggregationType {
	case "":
		v.add("aggregationType", "aggregationType is required")
	case AggregationCount:
		v.check(p.AggregationProperty == "", "aggregationProperty", "aggregationProperty is not allowed for COUNT metrics")
	case AggregationCustom:
	default:
		if !slices.Contains(aggregationTypes, p.AggregationType) {
			v.add("aggregationType", "aggregationType must be one of %s", aggregationTypeList())
		} else if p.AggregationType.needsProperty() {
			v.check(p.AggregationProperty != "", "aggregationProperty", "aggregationProperty is required for %s metrics", p.AggregationType)
		}
	}
	validateGaugeSettings(&v, p)
	s.validatePropertyFilters(&v, p)
	s.validateParameters(&v, p.Parameters)
	return v.err()
}

// validateGaugeSettings checks percentile (PERCENTILE only, above 0 and
// below 100) and timeUnit (TIME_WEIGHTED_SUM only).
func validateGaugeSettings(v *validator, p *UsageMetricParams) {
	if p.AggregationType == AggregationPercentile {
		switch {
		case p.Percentile == nil:
			v.add("percentile", "percentile is required for PERCENTILE metrics")
		case p.Percentile.Sign() <= 0 || p.Percentile.Cmp(DecimalFromInt(100)) >= 0:
			v.add("percentile", "percentile must be greater than 0 and less than 100")
		}
	} else if p.Percentile != nil {
		v.add("percentile", "percentile is only allowed on PERCENTILE metrics")
	}
	switch p.TimeUnit {
	case "":
	case TimeUnitSecond, TimeUnitMinute, TimeUnitHour, TimeUnitDay:
		v.check(p.AggregationType == AggregationTimeWeightedSum, "timeUnit", "timeUnit is only allowed on TIME_WEIGHTED_SUM metrics")
	default:
		v.add("timeUnit", "timeUnit must be SECOND, MINUTE, HOUR or DAY")
	}
}

func (s *Service) validatePropertyFilters(v *validator, p *UsageMetricParams) {
	if len(p.PropertyFilters) > s.limits.MaxEntries {
		v.add("propertyFilters", "propertyFilters must have at most %d properties", s.limits.MaxEntries)
	}
	for _, k := range sortedKeys(p.PropertyFilters) {
		field := "propertyFilters." + k
		checkKey(v, field, k, true)
		values := p.PropertyFilters[k]
		switch {
		case len(values) == 0:
			v.add(field, "each property filter needs at least one value")
		case len(values) > 100:
			v.add(field, "a property filter has at most 100 values")
		}
		for i, val := range values {
			s.checkString(v, fmt.Sprintf("%s[%d]", field, i), val, false)
		}
	}
	for i, k := range p.PropertiesToNegate {
		if _, ok := p.PropertyFilters[k]; !ok {
			v.add(fmt.Sprintf("propertiesToNegate[%d]", i), "%q is not a key of propertyFilters", k)
		}
	}
}

func (s *Service) validateParameters(v *validator, params []UsageMetricParameterParam) {
	if len(params) > s.limits.MaxEntries {
		v.add("parameters", "a metric has at most %d parameters", s.limits.MaxEntries)
	}
	seen := map[string]bool{}
	for i, p := range params {
		field := fmt.Sprintf("parameters[%d]", i)
		checkKey(v, field+".name", p.Name, true)
		if seen[p.Name] {
			v.add(field+".name", "parameter names must be unique")
		}
		seen[p.Name] = true
		s.checkString(v, field+".description", p.Description, false)
		switch p.Type {
		case ParameterInteger, ParameterPositiveInteger, ParameterNumber, ParameterPositiveNumber:
			if p.DefaultValue != "" {
				if err := checkParameterValue(p.Type, p.DefaultValue); err != nil {
					v.add(field+".defaultValue", "defaultValue %s", err.Error())
				}
			}
		case "":
			v.add(field+".type", "type is required")
		default:
			v.add(field+".type", "type must be INTEGER, POSITIVE_INTEGER, NUMBER or POSITIVE_NUMBER")
		}
	}
}

// checkParameterValue checks that value is a valid value of type t.
func checkParameterValue(t ParameterType, value string) error {
	d, err := ParseDecimal(value)
	if err != nil {
		return errors.New("must be a number written as a decimal string")
	}
	if (t == ParameterInteger || t == ParameterPositiveInteger) && !d.IsInteger() {
		return errors.New("must be an integer")
	}
	if (t == ParameterPositiveInteger || t == ParameterPositiveNumber) && d.Sign() <= 0 {
		return errors.New("must be greater than zero")
	}
	return nil
}

// CreateUsageMetric creates a usage metric. Returns validation_failed for
// invalid fields (all of them at once) and conflict when a live metric of
// the account already has the name (names compare case-insensitively).
func (s *Service) CreateUsageMetric(ctx context.Context, account string, p CreateUsageMetricParams) (*UsageMetric, error) {
	if err := s.validateUsageMetric(&p.UsageMetricParams); err != nil {
		return nil, err
	}
	now := s.clock()
	m := &UsageMetric{ID: s.newID(), ServiceAccountID: account, CreatedAt: now}
	s.applyUsageMetric(m, &p.UsageMetricParams)
	if p.DeletedAt != nil {
		d := NormalizeTime(*p.DeletedAt)
		m.DeletedAt = &d
	}
	return mutate(ctx, s, account, func(tx Tx) (*UsageMetric, error) {
		if m.DeletedAt == nil {
			if err := s.claimMetricName(ctx, tx, m); err != nil {
				return nil, err
			}
		}
		return m, putRecord(ctx, tx, tableUsageMetrics, key(account, m.ID), m)
	})
}

// applyUsageMetric copies the fields of p onto m; parameters keep their ids
// when their name is unchanged.
func (s *Service) applyUsageMetric(m *UsageMetric, p *UsageMetricParams) {
	old := map[string]string{}
	for _, prm := range m.Parameters {
		old[prm.Name] = prm.ID
	}
	m.Name, m.Description, m.Unit = p.Name, p.Description, p.Unit
	m.MetricType, m.EventType, m.AggregationType = p.MetricType, p.EventType, p.AggregationType
	m.AggregationProperty, m.GroupingProperty = p.AggregationProperty, p.GroupingProperty
	m.CaseSensitive = p.CaseSensitive
	m.Percentile, m.TimeUnit = nil, p.TimeUnit
	if p.Percentile != nil {
		pct := *p.Percentile
		m.Percentile = &pct
	}
	if m.AggregationType == AggregationTimeWeightedSum && m.TimeUnit == "" {
		m.TimeUnit = TimeUnitHour
	}
	m.PropertyFilters = map[string][]string{}
	for k, vals := range p.PropertyFilters {
		m.PropertyFilters[k] = slices.Clone(vals)
	}
	m.PropertiesToNegate = slices.Clone(p.PropertiesToNegate)
	m.Parameters = make([]UsageMetricParameter, 0, len(p.Parameters))
	for _, prm := range p.Parameters {
		id := old[prm.Name]
		if id == "" {
			id = s.newID()
		}
		m.Parameters = append(m.Parameters, UsageMetricParameter{
			ID: id, UsageMetricID: m.ID, Name: prm.Name, Type: prm.Type,
			Description: prm.Description, DefaultValue: prm.DefaultValue,
		})
	}
}

// claimMetricName reserves m's name among the account's live metrics.
func (s *Service) claimMetricName(ctx context.Context, tx Tx, m *UsageMetric) error {
	return claimKey(ctx, tx, tableUsageMetricNames, key(m.ServiceAccountID, strings.ToLower(m.Name)), m.ID,
		"name", fmt.Sprintf("a usage metric named %q already exists", m.Name))
}

// releaseMetricName frees m's name.
func (s *Service) releaseMetricName(ctx context.Context, tx Tx, m *UsageMetric) error {
	return deleteIfPresent(ctx, tx, tableUsageMetricNames, key(m.ServiceAccountID, strings.ToLower(m.Name)))
}

// GetUsageMetric returns a usage metric, deleted ones included. Returns
// not_found if the account has no such metric.
func (s *Service) GetUsageMetric(ctx context.Context, account, id string) (*UsageMetric, error) {
	return read(ctx, s, func(tx Tx) (*UsageMetric, error) { return s.getUsageMetric(ctx, tx, account, id) })
}

func (s *Service) getUsageMetric(ctx context.Context, tx Tx, account, id string) (*UsageMetric, error) {
	return getOwned[UsageMetric](ctx, tx, tableUsageMetrics, account, id, "usage metric")
}

// UpdateUsageMetric replaces the fields of a usage metric. Returns not_found
// if there is no such metric, invalid_state if it is deleted or if an ACTIVE
// price uses it and a field other than description and unit changes,
// validation_failed and conflict as CreateUsageMetric.
func (s *Service) UpdateUsageMetric(ctx context.Context, account, id string, p UsageMetricParams) (*UsageMetric, error) {
	if err := s.validateUsageMetric(&p); err != nil {
		return nil, err
	}
	return updateOwned(ctx, s, tableUsageMetrics, account, id, "usage metric", func(tx Tx, m *UsageMetric) error {
		if m.DeletedAt != nil {
			return Errorf(CodeInvalidState, "a deleted usage metric cannot be updated")
		}
		before := *m
		s.applyUsageMetric(m, &p)
		if !sameDefinition(&before, m) {
			used, err := s.metricUsedByActivePrice(ctx, tx, account, id)
			if err != nil {
				return err
			}
			if used {
				return Errorf(CodeInvalidState, "an ACTIVE price uses this usage metric: only description and unit can change")
			}
		}
		if strings.EqualFold(before.Name, m.Name) {
			return nil
		}
		if err := s.releaseMetricName(ctx, tx, &before); err != nil {
			return err
		}
		return s.claimMetricName(ctx, tx, m)
	})
}

// sameDefinition reports whether a and b count and aggregate the same way
// (everything but name, description and unit is equal).
func sameDefinition(a, b *UsageMetric) bool {
	if a.MetricType != b.MetricType || a.EventType != b.EventType || a.AggregationType != b.AggregationType ||
		a.AggregationProperty != b.AggregationProperty || a.GroupingProperty != b.GroupingProperty ||
		a.CaseSensitive != b.CaseSensitive || a.Name != b.Name || a.TimeUnit != b.TimeUnit ||
		(a.Percentile == nil) != (b.Percentile == nil) || a.Percentile != nil && a.Percentile.Cmp(*b.Percentile) != 0 ||
		!slices.Equal(a.PropertiesToNegate, b.PropertiesToNegate) || len(a.PropertyFilters) != len(b.PropertyFilters) ||
		len(a.Parameters) != len(b.Parameters) {
		return false
	}
	for k, v := range a.PropertyFilters {
		if w, ok := b.PropertyFilters[k]; !ok || !slices.Equal(v, w) {
			return false
		}
	}
	for i := range a.Parameters {
		if a.Parameters[i] != b.Parameters[i] {
			return false
		}
	}
	return true
}

// DeleteUsageMetric soft-deletes a usage metric: it keeps answering
// GetUsageMetric with DeletedAt set, leaves the list, and frees its name.
// Deleting a deleted metric returns it unchanged. Returns not_found if there
// is no such metric and invalid_state if an ACTIVE price uses it.
func (s *Service) DeleteUsageMetric(ctx context.Context, account, id string) (*UsageMetric, error) {
	now := s.clock()
	return mutate(ctx, s, account, func(tx Tx) (*UsageMetric, error) {
		m, err := s.getUsageMetric(ctx, tx, account, id)
		if err != nil || m.DeletedAt != nil {
			return m, err
		}
		used, err := s.metricUsedByActivePrice(ctx, tx, account, id)
		if err != nil {
			return nil, err
		}
		if used {
			return nil, Errorf(CodeInvalidState, "an ACTIVE price uses this usage metric")
		}
		m.DeletedAt = &now
		if err := s.releaseMetricName(ctx, tx, m); err != nil {
			return nil, err
		}
		return m, putRecord(ctx, tx, tableUsageMetrics, key(account, id), m)
	})
}

// ListUsageMetrics lists the account's live (not deleted) usage metrics,
// newest first unless f.SortOrder says ASC. Returns validation_failed for
// bad filters, limits or cursors.
func (s *Service) ListUsageMetrics(ctx context.Context, account string, f UsageMetricFilter, p ListParams) (Page[UsageMetric], error) {
	q, _, err := s.usageMetricsQuery(account, f)
	if err != nil {
		return Page[UsageMetric]{}, err
	}
	return read(ctx, s, func(tx Tx) (Page[UsageMetric], error) { return list(ctx, s, tx, q, p) })
}

// ListUsageMetricsRendered is ListUsageMetrics with each item of the page
// given as r's rendering of it: the same items, cursors, totals and
// errors. A record's rendering is made once per stored version and kept
// with it (see Rendering), so it renders only records that changed.
func ListUsageMetricsRendered[R any](ctx context.Context, s *Service, account string, f UsageMetricFilter, p ListParams, r *Rendering[UsageMetric, R]) (Page[R], error) {
	q, keep, err := s.usageMetricsQuery(account, f)
	if err != nil {
		return Page[R]{}, err
	}
	return read(ctx, s, func(tx Tx) (Page[R], error) { return listRendered(ctx, s, tx, q, keep, p, r) })
}

// usageMetricsQuery is the list of ListUsageMetrics and its filter.
func (s *Service) usageMetricsQuery(account string, f UsageMetricFilter) (listQuery[UsageMetric], func(*UsageMetric) bool, error) {
	var v validator
	for i, a := range f.AggregationTypes {
		if !slices.Contains(aggregationTypes, a) {
			v.add("aggregationType", "aggregationType value %d must be one of %s", i+1, aggregationTypeList())
		}
	}
	order, err := ParseSortOrder(string(f.SortOrder), SortDesc)
	if err != nil {
		v.merge("", err)
	}
	if err := v.err(); err != nil {
		return listQuery[UsageMetric]{}, nil, err
	}
	name := strings.ToLower(f.Name)
	keep := func(m *UsageMetric) bool {
		return m.DeletedAt == nil &&
			(name == "" || strings.Contains(strings.ToLower(m.Name), name)) &&
			(len(f.EventTypes) == 0 || slices.Contains(f.EventTypes, m.EventType)) &&
			(len(f.AggregationTypes) == 0 || slices.Contains(f.AggregationTypes, m.AggregationType))
	}
	return listQuery[UsageMetric]{
		name:   "usage_metrics",
		filter: fmt.Sprintf("%q|%q|%q", f.Name, f.EventTypes, f.AggregationTypes),
		table:  tableUsageMetrics,
		prefix: prefix(account),
		desc:   order == SortDesc,
		decode: memoized(s, tableUsageMetrics, keep),
		clone:  UsageMetric.clone,
	}, keep, nil
}

// metricUsedByActivePrice reports whether an ACTIVE price of the account
// uses the metric.
func (s *Service) metricUsedByActivePrice(ctx context.Context, tx Tx, account, id string) (bool, error) {
	return s.activePriceUses(ctx, tx, account, func(p *PriceStructure) bool { return p.UsageMetricID == id })
}

// clone returns a deep copy of m: it shares no map, slice or pointer with m.
func (m UsageMetric) clone() UsageMetric {
	if m.DeletedAt != nil {
		t := *m.DeletedAt
		m.DeletedAt = &t
	}
	if m.PropertyFilters != nil {
		filters := make(map[string][]string, len(m.PropertyFilters))
		for k, vs := range m.PropertyFilters {
			filters[k] = slices.Clone(vs)
		}
		m.PropertyFilters = filters
	}
	m.PropertiesToNegate = slices.Clone(m.PropertiesToNegate)
	m.Parameters = slices.Clone(m.Parameters)
	if m.Percentile != nil {
		p := *m.Percentile
		m.Percentile = &p
	}
	return m
}
