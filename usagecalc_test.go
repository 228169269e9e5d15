package billing_test

import (
	"context"
	"errors"
	"iter"
	"slices"
	"testing"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
)

func createMetric(tb testing.TB, svc *billing.Service, acct string, p billing.UsageMetricParams) *billing.UsageMetric {
	tb.Helper()
	return must(svc.CreateUsageMetric(context.Background(), acct, billing.CreateUsageMetricParams{UsageMetricParams: p})).of(tb, "CreateUsageMetric")
}

// checkCalc calculates m and checks the counts, and the value when want is
// not "" (compared by value).
func checkCalc(tb testing.TB, svc *billing.Service, acct string, m *billing.UsageMetric, aliases []string, start, end string, count, invalid int64, want string) *billing.UsageCalculation {
	tb.Helper()
	c, err := svc.CalculateUsage(context.Background(), acct, billing.CalculateUsageParams{
		UsageMetricID: m.ID, CustomerAliases: aliases, PeriodStart: start, PeriodEnd: end,
	})
	if err != nil {
		tb.Fatalf("CalculateUsage: %v", err)
	}
	if c.EventCount != count || c.InvalidEventCount != invalid || want != "" && c.Value.Cmp(billing.MustDecimal(want)) != 0 {
		tb.Errorf("%s: eventCount %d, invalid %d, value %s; want %d, %d, %s", m.Name, c.EventCount, c.InvalidEventCount, c.Value, count, invalid, want)
	}
	return c
}

// countTimesFactor is a CUSTOM aggregation: the number of events times the
// parameter "factor".
func countTimesFactor(events iter.Seq[billing.UsageEvent], params map[string]billing.Decimal) (billing.Decimal, error) {
	n := int64(0)
	for range events {
		n++
	}
	return billing.DecimalFromInt(n).Mul(params["factor"]), nil
}

// The events of the aggregation tables: region filters, bytes sums, user is
// unique.
const (
	evEU      = `{"region":"EU","bytes":10,"user":"Ann"}`
	evEuLower = `{"region":"eu","bytes":"2.5","user":"ann"}`
	evUS      = `{"region":"US","bytes":true,"user":"Bob"}`
	evNoReg   = `{"bytes":1.50,"user":"ANN"}`
	evEuMixed = `{"region":"Eu","user":"bob"}`
)

// Long on purpose: a table of cases, one line each; its length is the cases, not logic.
func TestCalculateUsageAggregations(t *testing.T) {
	t.Parallel()
	type want struct {
		count, invalid int64
		value          string
	}
	filters := []struct {
		name          string
		filter        bool
		negate, cs    bool
		count, sumInv int64
		sum           string
		unique        int64
	}{
		{"NoFilter", false, false, false, 5, 2, "14", 2},
		{"NoFilterCaseSensitive", false, false, true, 5, 2, "14", 5},
		{"Filter", true, false, false, 3, 1, "12.5", 2},
		{"FilterNegated", true, true, false, 2, 1, "1.5", 2},
		{"FilterCaseSensitive", true, false, true, 1, 0, "2.5", 1},
		{"FilterCaseSensitiveNegated", true, true, true, 4, 2, "11.5", 4},
	}
	for _, f := range filters {
		cases := map[billing.AggregationType]want{
			billing.AggregationCount:  {f.count, 0, ""},
			billing.AggregationSum:    {f.count, f.sumInv, f.sum},
			billing.AggregationUnique: {f.count, 0, ""},
			billing.AggregationCustom: {f.count, 0, ""},
		}
		for agg, w := range cases {
			switch agg {
			case billing.AggregationCount:
				w.value = billing.DecimalFromInt(f.count).String()
			case billing.AggregationUnique:
				w.value = billing.DecimalFromInt(f.unique).String()
			case billing.AggregationCustom:
				w.value = billing.DecimalFromInt(2 * f.count).String()
			}
			t.Run(string(agg)+"/"+f.name, func(t *testing.T) {
				t.Parallel()
				svc, _ := billingtest.NewService(t, billingtest.WithConfig(billing.Config{
					CustomAggregations: map[string]billing.CustomAggregation{"custom": countTimesFactor},
				}))
				acct := billingtest.Account(t, svc, "a")
				ingest(t, svc, acct, event(t, "c1", "api", evEU), event(t, "c1", "api", evEuLower),
					event(t, "c1", "api", evUS), event(t, "c1", "api", evNoReg), event(t, "c1", "api", evEuMixed),
					event(t, "c2", "api", evEU), event(t, "c1", "other", evEU))
				p := billing.UsageMetricParams{Name: "custom", MetricType: billing.MetricTypeSimple, EventType: "api",
					AggregationType: agg, CaseSensitive: f.cs,
					Parameters: []billing.UsageMetricParameterParam{{Name: "factor", Type: billing.ParameterNumber, DefaultValue: "2"}}}
				switch agg {
				case billing.AggregationSum:
					p.AggregationProperty = "bytes"
				case billing.AggregationUnique:
					p.AggregationProperty = "user"
				}
				if f.filter {
					p.PropertyFilters = map[string][]string{"region": {"eu"}}
					if f.negate {
						p.PropertiesToNegate = []string{"region"}
					}
				}
				m := createMetric(t, svc, acct, p)
				checkCalc(t, svc, acct, m, []string{"c1"}, "2024-07-01", "2024-07-31", w.count, w.invalid, w.value)
			})
		}
	}
}

func TestCalculateUsageGrouped(t *testing.T) {
	t.Parallel()
	svc, _ := billingtest.NewService(t, billingtest.WithConfig(billing.Config{
		CustomAggregations: map[string]billing.CustomAggregation{"custom": countTimesFactor},
	}))
	acct := billingtest.Account(t, svc, "a")
	ingest(t, svc, acct, event(t, "c1", "api", evEU), event(t, "c1", "api", evEuLower),
		event(t, "c1", "api", evUS), event(t, "c1", "api", evNoReg), event(t, "c1", "api", evEuMixed))
	type group = billing.UsageGroup
	g := func(label string, n int64, v string) group {
		return group{Group: label, EventCount: n, Value: billing.MustDecimal(v)}
	}
	tests := []struct {
		name   string
		agg    billing.AggregationType
		prop   string
		cs     bool
		value  string
		groups []group
	}{
		{"count", billing.AggregationCount, "", false, "5", []group{g("", 1, "1"), g("eu", 3, "3"), g("us", 1, "1")}},
		{"sum", billing.AggregationSum, "bytes", false, "14", []group{g("", 1, "1.5"), g("eu", 3, "12.5"), g("us", 1, "0")}},
		{"unique", billing.AggregationUnique, "user", false, "2", []group{g("", 1, "1"), g("eu", 3, "2"), g("us", 1, "1")}},
		{"custom", billing.AggregationCustom, "", false, "10", []group{g("", 1, "2"), g("eu", 3, "6"), g("us", 1, "2")}},
		{"count cs", billing.AggregationCount, "", true, "5",
			[]group{g("", 1, "1"), g("EU", 1, "1"), g("Eu", 1, "1"), g("US", 1, "1"), g("eu", 1, "1")}},
	}
	for _, tc := range tests {
		m := createMetric(t, svc, acct, billing.UsageMetricParams{Name: tc.name, MetricType: billing.MetricTypeGrouped,
			EventType: "api", AggregationType: tc.agg, AggregationProperty: tc.prop, GroupingProperty: "region", CaseSensitive: tc.cs,
			Parameters: []billing.UsageMetricParameterParam{{Name: "factor", Type: billing.ParameterNumber, DefaultValue: "2"}}})
		invalid := int64(0)
		if tc.agg == billing.AggregationSum {
			invalid = 2 // bytes true, bytes missing
		}
		c := checkCalc(t, svc, acct, m, []string{"c1"}, "2024-07-01", "2024-07-31", 5, invalid, tc.value)
		if !slices.EqualFunc(c.Groups, tc.groups, func(a, b group) bool {
			return a.Group == b.Group && a.EventCount == b.EventCount && a.Value.Cmp(b.Value) == 0
		}) {
			t.Errorf("%s: groups %v, want %v", tc.name, c.Groups, tc.groups)
		}
	}
}

func TestCalculateUsageRendering(t *testing.T) {
	t.Parallel()
	svc, _ := billingtest.NewService(t)
	acct := billingtest.Account(t, svc, "a")
	ingest(t, svc, acct, event(t, "c", "api", `{"tier":1.50,"flag":true,"name":"STRASSE"}`),
		event(t, "c", "api", `{"tier":"1.50","flag":"TRUE","name":"straße"}`),
		event(t, "c", "api", `{"tier":15e-1,"flag":false,"name":"\u212Aelvin"}`),
		event(t, "c", "api", `{"name":"kelvin"}`))
	count := func(name string, filters map[string][]string) *billing.UsageMetric {
		return createMetric(t, svc, acct, billing.UsageMetricParams{Name: name, MetricType: billing.MetricTypeSimple,
			EventType: "api", AggregationType: billing.AggregationCount, PropertyFilters: filters})
	}
	// Numbers compare in canonical form; the string "1.50" stays as it is.
	checkCalc(t, svc, acct, count("canonical", map[string][]string{"tier": {"1.5"}}), []string{"c"}, "2024-07-30", "2024-07-30", 2, 0, "2")
	checkCalc(t, svc, acct, count("literal", map[string][]string{"tier": {"1.50"}}), []string{"c"}, "2024-07-30", "2024-07-30", 1, 0, "1")
	// Booleans render as true/false; case-insensitively "TRUE" matches.
	checkCalc(t, svc, acct, count("bool", map[string][]string{"flag": {"true"}}), []string{"c"}, "2024-07-30", "2024-07-30", 2, 0, "2")
	// Simple case folding: the Kelvin sign folds to k; ß does not fold to ss.
	checkCalc(t, svc, acct, count("kelvin", map[string][]string{"name": {"KELVIN"}}), []string{"c"}, "2024-07-30", "2024-07-30", 2, 0, "2")
	checkCalc(t, svc, acct, count("strasse", map[string][]string{"name": {"strasse"}}), []string{"c"}, "2024-07-30", "2024-07-30", 1, 0, "1")
	u := createMetric(t, svc, acct, billing.UsageMetricParams{Name: "u", MetricType: billing.MetricTypeSimple,
		EventType: "api", AggregationType: billing.AggregationUnique, AggregationProperty: "tier"})
	// 1.50 and 15e-1 are the number 1.5; the string "1.50" is another value.
	checkCalc(t, svc, acct, u, []string{"c"}, "2024-07-30", "2024-07-30", 4, 1, "2")
}

func TestCalculateUsagePeriods(t *testing.T) {
	t.Parallel()
	stores(t, func(t *testing.T, svc *billing.Service, clock *billingtest.Clock) {
		clock.Set(billingtest.Start.AddDate(0, 2, 0))
		acct := billingtest.Account(t, svc, "a")
		ingest(t, svc, acct, eventsAt(t, "c", "api", "2024-06-30T23:59:59Z", "2024-07-01T00:00:00Z", "2024-07-31T23:59:59Z", "2024-08-01T00:00:00Z")...)
		m := createMetric(t, svc, acct, billing.UsageMetricParams{Name: "n", MetricType: billing.MetricTypeSimple,
			EventType: "api", AggregationType: billing.AggregationCount})
		checkCalc(t, svc, acct, m, []string{"c"}, "2024-07-01", "2024-07-31", 2, 0, "2")
		checkCalc(t, svc, acct, m, []string{"c"}, "2024-07-01", "2024-07-01", 1, 0, "1")
		checkCalc(t, svc, acct, m, []string{"c"}, "2024-07-01T00:00:00Z", "2024-08-01T00:00:00Z", 2, 0, "2")
		checkCalc(t, svc, acct, m, []string{"c"}, "2024-07-01T00:00:01+00:00", "2024-07-31T23:59:59Z", 0, 0, "0")
		checkCalc(t, svc, acct, m, []string{"c"}, "2024-06-30T23:59:59Z", "2024-08-01T00:00:01Z", 4, 0, "4")
		c := checkCalc(t, svc, acct, m, []string{"c", "c", "nobody"}, "2024-07-01T02:00:00+02:00", "2024-08-01T00:00:00Z", 2, 0, "2")
		if c.PeriodStart != "2024-07-01T00:00:00Z" || c.PeriodEnd != "2024-08-01T00:00:00Z" {
			t.Errorf("period echoed as %s - %s", c.PeriodStart, c.PeriodEnd)
		}
	})
}

func TestCalculateUsageErrors(t *testing.T) {
	t.Parallel()
	svc, _ := billingtest.NewService(t)
	acct := billingtest.Account(t, svc, "a")
	m := createMetric(t, svc, acct, billing.UsageMetricParams{Name: "c", MetricType: billing.MetricTypeSimple,
		EventType: "api", AggregationType: billing.AggregationCustom,
		Parameters: []billing.UsageMetricParameterParam{{Name: "k", Type: billing.ParameterPositiveInteger}}})
	ok := billing.CalculateUsageParams{UsageMetricID: m.ID, CustomerAliases: []string{"c"}, PeriodStart: "2024-07-01", PeriodEnd: "2024-07-31"}
	tests := []struct {
		name   string
		change func(p *billing.CalculateUsageParams)
		code   billing.Code
		field  string
	}{
		{"ErrMixedPeriod", func(p *billing.CalculateUsageParams) { p.PeriodEnd = "2024-08-01T00:00:00Z" }, billing.CodeValidationFailed, "periodEnd"},
		{"ErrEndBeforeStart", func(p *billing.CalculateUsageParams) { p.PeriodEnd = "2024-06-30" }, billing.CodeValidationFailed, "periodEnd"},
		{"ErrBadStart", func(p *billing.CalculateUsageParams) { p.PeriodStart = "2024-13-01" }, billing.CodeValidationFailed, "periodStart"},
		{"ErrNoCustomers", func(p *billing.CalculateUsageParams) { p.CustomerAliases = nil }, billing.CodeValidationFailed, "customerAliases"},
		{"ErrUnknownParameter", func(p *billing.CalculateUsageParams) { p.CustomParameters = map[string]string{"x": "1"} }, billing.CodeValidationFailed, "customParameters"},
		{"ErrBadParameter", func(p *billing.CalculateUsageParams) { p.CustomParameters = map[string]string{"k": "0"} }, billing.CodeValidationFailed, "customParameters"},
		{"ErrUnknownMetric", func(p *billing.CalculateUsageParams) { p.UsageMetricID = "nope" }, billing.CodeNotFound, ""},
		{"ErrNoCustomFunction", func(p *billing.CalculateUsageParams) {}, billing.CodeInvalidState, ""},
	}
	for _, tc := range tests {
		p := ok
		tc.change(&p)
		_, err := svc.CalculateUsage(context.Background(), acct, p)
		var e *billing.Error
		if !errors.As(err, &e) && billing.CodeOf(err) != billing.CodeValidationFailed || billing.CodeOf(err) != tc.code {
			t.Errorf("%s: %v, want %s", tc.name, err, tc.code)
			continue
		}
		if fields := fieldsOf(err); tc.field != "" && !slices.Contains(fields, tc.field) {
			t.Errorf("%s: fields %q, want %q", tc.name, fields, tc.field)
		}
	}
}

// TestCalculateUsageStaysInSeries checks that a calculation stops at the end
// of its customer's series: the events of the next series (another
// customer, another event type) in the same period are not counted.
func TestCalculateUsageStaysInSeries(t *testing.T) {
	t.Parallel()
	stores(t, func(t *testing.T, svc *billing.Service, clock *billingtest.Clock) {
		clock.Set(billingtest.Start.AddDate(0, 2, 0))
		acct := billingtest.Account(t, svc, "a")
		var events []billing.UsageEventParams
		for i, series := range [][2]string{{"c", "api"}, {"d", "api"}, {"c", "other"}} {
			for range i + 1 {
				events = append(events, eventsAt(t, series[0], series[1], "2024-07-01T00:00:00Z", "2024-07-15T00:00:00Z", "2024-07-31T23:59:59Z")...)
			}
		}
		ingest(t, svc, acct, events...)
		api := createMetric(t, svc, acct, billing.UsageMetricParams{Name: "api", MetricType: billing.MetricTypeSimple,
			EventType: "api", AggregationType: billing.AggregationCount})
		other := createMetric(t, svc, acct, billing.UsageMetricParams{Name: "other", MetricType: billing.MetricTypeSimple,
			EventType: "other", AggregationType: billing.AggregationCount})
		checkCalc(t, svc, acct, api, []string{"c"}, "2024-07-01", "2024-07-31", 3, 0, "3")
		checkCalc(t, svc, acct, api, []string{"d"}, "2024-07-01", "2024-07-31", 6, 0, "6")
		checkCalc(t, svc, acct, api, []string{"c", "d"}, "2024-06-01", "2024-08-31", 9, 0, "9")
		checkCalc(t, svc, acct, other, []string{"c"}, "2024-07-01", "2024-07-31", 9, 0, "9")
		checkCalc(t, svc, acct, other, []string{"d"}, "2024-07-01", "2024-07-31", 0, 0, "0")
	})
}
