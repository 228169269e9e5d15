package billing_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
	"github.com/google/go-cmp/cmp"
)

// Long on purpose: a table of cases, one line each; its length is the cases, not logic.
func TestCreateUsageMetricValidation(t *testing.T) {
	t.Parallel()
	svc, _ := billingtest.NewService(t)
	acct := billingtest.Account(t, svc, "a")
	valid := func() billing.UsageMetricParams {
		return billing.UsageMetricParams{
			Name: "Storage", MetricType: billing.MetricTypeSimple, EventType: "storage",
			AggregationType: billing.AggregationSum, AggregationProperty: "bytes",
		}
	}
	refuseFields(t, valid, func(p billing.UsageMetricParams) error {
		return errOf(svc.CreateUsageMetric(context.Background(), acct, billing.CreateUsageMetricParams{UsageMetricParams: p}))
	}, []fieldCase[billing.UsageMetricParams]{
		{"ErrEverythingMissing", func(p *billing.UsageMetricParams) { *p = billing.UsageMetricParams{} },
			[]string{"name", "eventType", "metricType", "aggregationType"}},
		{"ErrUnknownMetricType", func(p *billing.UsageMetricParams) { p.MetricType = "OTHER" }, []string{"metricType"}},
		{"ErrUnknownAggregation", func(p *billing.UsageMetricParams) { p.AggregationType = "AVG" }, []string{"aggregationType"}},
		{"ErrSumWithoutProperty", func(p *billing.UsageMetricParams) { p.AggregationProperty = "" }, []string{"aggregationProperty"}},
		{"ErrUniqueWithoutProperty", func(p *billing.UsageMetricParams) {
			p.AggregationType, p.AggregationProperty = billing.AggregationUnique, ""
		}, []string{"aggregationProperty"}},
		{"ErrCountWithProperty", func(p *billing.UsageMetricParams) { p.AggregationType = billing.AggregationCount }, []string{"aggregationProperty"}},
		{"ErrGroupedWithoutGrouping", func(p *billing.UsageMetricParams) { p.MetricType = billing.MetricTypeGrouped }, []string{"groupingProperty"}},
		{"ErrSimpleWithGrouping", func(p *billing.UsageMetricParams) { p.GroupingProperty = "region" }, []string{"groupingProperty"}},
		{"ErrEmptyFilter", func(p *billing.UsageMetricParams) { p.PropertyFilters = map[string][]string{"region": {}} }, []string{"propertyFilters.region"}},
		{"ErrNegateNotAFilter", func(p *billing.UsageMetricParams) {
			p.PropertyFilters = map[string][]string{"region": {"eu"}}
			p.PropertiesToNegate = []string{"region", "tier"}
		}, []string{"propertiesToNegate[1]"}},
		{"ErrParameters", func(p *billing.UsageMetricParams) {
			p.Parameters = []billing.UsageMetricParameterParam{
				{Name: "free", Type: billing.ParameterPositiveInteger, DefaultValue: "0"},
				{Name: "rate", Type: billing.ParameterNumber, DefaultValue: "1e3"},
				{Name: "n", Type: billing.ParameterInteger, DefaultValue: "1.5"},
				{Name: "n", Type: "BIG"},
			}
		}, []string{"parameters[0].defaultValue", "parameters[1].defaultValue", "parameters[2].defaultValue", "parameters[3].name", "parameters[3].type"}},
		{"ErrMaxWithoutProperty", func(p *billing.UsageMetricParams) {
			p.AggregationType, p.AggregationProperty = billing.AggregationMax, ""
		}, []string{"aggregationProperty"}},
		{"ErrPercentileMissing", func(p *billing.UsageMetricParams) { p.AggregationType = billing.AggregationPercentile }, []string{"percentile"}},
		{"ErrPercentileZero", func(p *billing.UsageMetricParams) {
			p.AggregationType, p.Percentile = billing.AggregationPercentile, dp("0")
		}, []string{"percentile"}},
		{"ErrPercentileHundred", func(p *billing.UsageMetricParams) {
			p.AggregationType, p.Percentile = billing.AggregationPercentile, dp("100")
		}, []string{"percentile"}},
		{"ErrPercentileNegative", func(p *billing.UsageMetricParams) {
			p.AggregationType, p.Percentile = billing.AggregationPercentile, dp("-5")
		}, []string{"percentile"}},
		{"ErrPercentileOnSum", func(p *billing.UsageMetricParams) { p.Percentile = dp("95") }, []string{"percentile"}},
		{"ErrTimeUnitOnSum", func(p *billing.UsageMetricParams) { p.TimeUnit = billing.TimeUnitHour }, []string{"timeUnit"}},
		{"ErrUnknownTimeUnit", func(p *billing.UsageMetricParams) {
			p.AggregationType, p.TimeUnit = billing.AggregationTimeWeightedSum, "WEEK"
		}, []string{"timeUnit"}},
		{"ErrLongName", func(p *billing.UsageMetricParams) { p.Name = strings.Repeat("n", 1001) }, []string{"name"}},
		{"ErrControlCharacters", func(p *billing.UsageMetricParams) { p.Name = "a\x00b" }, []string{"name"}},
		{"ErrLongEventType", func(p *billing.UsageMetricParams) { p.EventType = strings.Repeat("e", 256) }, []string{"eventType"}},
	})
	listsNothing(t, svc.ListUsageMetrics, acct, "invalid creates stored metrics")
}

// Long on purpose: one scenario walked in order; each step starts from the state the previous steps
// left, so pieces would repeat the set-up.
func TestUsageMetricLifecycle(t *testing.T) {
	t.Parallel()
	stores(t, func(t *testing.T, svc *billing.Service, clock *billingtest.Clock) {
		ctx := context.Background()
		acct := billingtest.Account(t, svc, "a")
		p := billing.CreateUsageMetricParams{UsageMetricParams: billing.UsageMetricParams{
			Name: "Requests", MetricType: billing.MetricTypeGrouped, EventType: "request",
			AggregationType: billing.AggregationCustom, GroupingProperty: "region",
			PropertyFilters:    map[string][]string{"method": {"GET", "POST"}},
			PropertiesToNegate: []string{"method"},
			Parameters:         []billing.UsageMetricParameterParam{{Name: "free", Type: billing.ParameterInteger, DefaultValue: "10"}},
		}}
		m, err := svc.CreateUsageMetric(ctx, acct, p)
		if err != nil {
			t.Fatal(err)
		}
		if m.ServiceAccountID != acct || !m.CreatedAt.Equal(billingtest.Start) || len(m.Parameters) != 1 || m.Parameters[0].UsageMetricID != m.ID {
			t.Fatalf("created metric = %+v", m)
		}
		got, err := svc.GetUsageMetric(ctx, acct, m.ID)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(m, got); diff != "" {
			t.Fatalf("read back differs (-created +read):\n%s", diff)
		}

		t.Run("ConflictOnDuplicateName", func(t *testing.T) {
			_, err := svc.CreateUsageMetric(ctx, acct, metricParams("REQUESTS"))
			if billing.CodeOf(err) != billing.CodeConflict {
				t.Fatalf("duplicate name: %v, want conflict", err)
			}
		})

		// Update keeps parameter ids by name and frees the old name.
		up := p.UsageMetricParams
		up.Name = "Calls"
		up.Parameters = append(up.Parameters, billing.UsageMetricParameterParam{Name: "cap", Type: billing.ParameterNumber})
		updated, err := svc.UpdateUsageMetric(ctx, acct, m.ID, up)
		if err != nil {
			t.Fatal(err)
		}
		if updated.Name != "Calls" || updated.Parameters[0].ID != m.Parameters[0].ID || updated.Parameters[1].ID == m.Parameters[0].ID {
			t.Fatalf("updated = %+v", updated)
		}
		if _, err := svc.CreateUsageMetric(ctx, acct, metricParams("Requests")); err != nil {
			t.Fatalf("the old name is still taken after a rename: %v", err)
		}

		clock.Advance(time.Hour)
		deleted, err := svc.DeleteUsageMetric(ctx, acct, m.ID)
		if err != nil || deleted.DeletedAt == nil || !deleted.DeletedAt.Equal(clock.Now()) {
			t.Fatalf("DeleteUsageMetric = %+v, %v", deleted, err)
		}
		clock.Advance(time.Hour)
		again, err := svc.DeleteUsageMetric(ctx, acct, m.ID)
		if err != nil || !again.DeletedAt.Equal(*deleted.DeletedAt) {
			t.Fatalf("deleting twice changed the metric: %+v, %v", again, err)
		}
		if got, err := svc.GetUsageMetric(ctx, acct, m.ID); err != nil || got.DeletedAt == nil {
			t.Fatalf("a deleted metric reads as %+v, %v", got, err)
		}
		if _, err := svc.UpdateUsageMetric(ctx, acct, m.ID, up); billing.CodeOf(err) != billing.CodeInvalidState {
			t.Fatalf("updating a deleted metric: %v, want invalid_state", err)
		}
		page, err := svc.ListUsageMetrics(ctx, acct, billing.UsageMetricFilter{}, billing.ListParams{})
		if err != nil || page.TotalResultSize != 1 || page.Items[0].Name != "Requests" {
			t.Fatalf("list after delete = %+v, %v", page, err)
		}
		if _, err := svc.CreateUsageMetric(ctx, acct, metricParams("Calls")); err != nil {
			t.Fatalf("a deleted metric's name is still taken: %v", err)
		}
	})
}

func TestUsageMetricsAreInvisibleToOtherAccounts(t *testing.T) {
	t.Parallel()
	svc, ctx, a, b := newTenants(t)
	ids := createMetrics(t, svc, a, 2)
	if _, err := svc.GetUsageMetric(ctx, b, ids[0]); billing.CodeOf(err) != billing.CodeNotFound {
		t.Fatalf("B reads A's metric: %v", err)
	}
	if _, err := svc.UpdateUsageMetric(ctx, b, ids[0], metricParams("x").UsageMetricParams); billing.CodeOf(err) != billing.CodeNotFound {
		t.Fatalf("B updates A's metric: %v", err)
	}
	if _, err := svc.DeleteUsageMetric(ctx, b, ids[0]); billing.CodeOf(err) != billing.CodeNotFound {
		t.Fatalf("B deletes A's metric: %v", err)
	}
	listsNothing(t, svc.ListUsageMetrics, b, "B's list")
	// Names are unique per account, not globally.
	if _, err := svc.CreateUsageMetric(ctx, b, metricParams("metric 000")); err != nil {
		t.Fatalf("B cannot reuse a name of A: %v", err)
	}
	if m, err := svc.GetUsageMetric(ctx, a, ids[0]); err != nil || m.DeletedAt != nil {
		t.Fatalf("A's metric changed: %+v, %v", m, err)
	}
}

func TestListUsageMetricsFilters(t *testing.T) {
	t.Parallel()
	svc, _ := billingtest.NewService(t)
	ctx := context.Background()
	acct := billingtest.Account(t, svc, "a")
	mk := func(name, eventType string, agg billing.AggregationType, prop string) string {
		m, err := svc.CreateUsageMetric(ctx, acct, billing.CreateUsageMetricParams{UsageMetricParams: billing.UsageMetricParams{
			Name: name, MetricType: billing.MetricTypeSimple, EventType: eventType, AggregationType: agg, AggregationProperty: prop,
		}})
		if err != nil {
			t.Fatal(err)
		}
		return m.ID
	}
	api := mk("API calls", "api", billing.AggregationCount, "")
	bytes := mk("Stored bytes", "storage", billing.AggregationSum, "bytes")
	users := mk("Active users", "login", billing.AggregationUnique, "user")
	filterTable(t, svc.ListUsageMetrics, acct, func(m billing.UsageMetric) string { return m.ID }, []filterCase[billing.UsageMetricFilter]{
		{"All", billing.UsageMetricFilter{}, []string{users, bytes, api}},
		{"NameSubstringIgnoringCase", billing.UsageMetricFilter{Name: "CALL"}, []string{api}},
		{"EventTypes", billing.UsageMetricFilter{EventTypes: []string{"storage", "login"}}, []string{users, bytes}},
		{"AggregationTypes", billing.UsageMetricFilter{AggregationTypes: []billing.AggregationType{"COUNT", "SUM"}}, []string{bytes, api}},
		{"Combined", billing.UsageMetricFilter{Name: "s", AggregationTypes: []billing.AggregationType{"UNIQUE"}}, []string{users}},
		{"NoMatch", billing.UsageMetricFilter{EventTypes: []string{"API"}}, nil},
	})
	if _, err := svc.ListUsageMetrics(ctx, acct, billing.UsageMetricFilter{AggregationTypes: []billing.AggregationType{"AVG"}}, billing.ListParams{}); billing.CodeOf(err) != billing.CodeValidationFailed {
		t.Fatalf("an unknown aggregationType filter: %v", err)
	}
}
