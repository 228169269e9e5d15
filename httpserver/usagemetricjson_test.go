package httpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
)

// TestUsageMetricAppendJSON checks the hand-written encoder of usage
// metrics and of pages (and Page's MarshalJSON) against encoding/json, byte for byte, on values that
// exercise every escape, omitempty field and nil-versus-empty case.
//
// Long on purpose: a table of cases, one line each; its length is the cases, not logic.
func TestUsageMetricAppendJSON(t *testing.T) {
	t.Parallel()
	deleted := time.Date(2026, 3, 1, 12, 30, 0, 123456000, time.FixedZone("X", 5*3600+1800))
	p95 := billing.MustDecimal("95.50")
	weird := "a<b>&c\"d\\e\n\t\x01\x7f é \u2028\u2029 \xff end"
	metrics := []billing.UsageMetric{
		{},
		{
			ID: "m1", ServiceAccountID: "acc", Name: "Metric", MetricType: billing.MetricTypeSimple,
			EventType: "api_call", AggregationType: billing.AggregationCount,
			CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), PropertyFilters: map[string][]string{},
			Parameters: []billing.UsageMetricParameter{},
		},
		{
			ID: weird, ServiceAccountID: weird, Name: weird, Description: weird,
			MetricType: billing.MetricTypeGrouped, EventType: weird, AggregationType: billing.AggregationCustom,
			AggregationProperty: weird, GroupingProperty: weird, Unit: weird,
			CreatedAt: time.Date(2026, 11, 22, 8, 0, 0, 1, time.UTC), DeletedAt: &deleted,
			PropertyFilters:    map[string][]string{"z": {"1", weird}, weird: nil, "a": {}, "<k>": {"v"}},
			CaseSensitive:      true,
			PropertiesToNegate: []string{weird, "b"},
			Parameters: []billing.UsageMetricParameter{
				{ID: "p1", UsageMetricID: "m", Name: "n", Type: billing.ParameterInteger},
				{ID: weird, UsageMetricID: weird, Name: weird, Type: billing.ParameterNumber, Description: weird, DefaultValue: "1.50"},
			},
		},
		{ID: "x", PropertiesToNegate: []string{}, CreatedAt: time.Date(1, 1, 1, 0, 0, 0, 0, time.Local)},
		{ID: "p95", AggregationType: billing.AggregationPercentile, AggregationProperty: "mbps", Percentile: &p95},
		{ID: "gbh", AggregationType: billing.AggregationTimeWeightedSum, AggregationProperty: "gb", TimeUnit: billing.TimeUnitHour},
	}
	for i := range metrics {
		want, err := json.Marshal(metrics[i])
		if err != nil {
			t.Fatal(err)
		}
		got, err := appendUsageMetric(nil, &metrics[i])
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("metric %d:\n got %s\nwant %s", i, got, want)
		}
	}
	bad := billing.UsageMetric{CreatedAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}
	if _, err := appendUsageMetric(nil, &bad); err == nil {
		t.Error("a year past 9999 encoded; json.Marshal refuses it")
	}

	for _, p := range []billing.Page[billing.UsageMetric]{
		{},
		{Items: metrics, After: "abc_-9", Before: weird, TotalResultSize: 41},
		{Items: metrics[1:2], TotalResultSize: 1},
	} {
		want, err := json.Marshal(struct {
			Items      []billing.UsageMetric `json:"items"`
			Pagination billing.Pagination    `json:"pagination"`
		}{append([]billing.UsageMetric{}, p.Items...), billing.Pagination{After: p.After, Before: p.Before, TotalResultSize: p.TotalResultSize}})
		if err != nil {
			t.Fatal(err)
		}
		encoded := billing.Page[[]byte]{Items: [][]byte{}, After: p.After, Before: p.Before, TotalResultSize: p.TotalResultSize}
		for i := range p.Items {
			item, err := appendUsageMetric(nil, &p.Items[i])
			if err != nil {
				t.Fatal(err)
			}
			encoded.Items = append(encoded.Items, item)
		}
		got := appendEncodedPage(nil, encoded)
		if string(got) != string(want) {
			t.Errorf("page:\n got %s\nwant %s", got, want)
		}
		viaMarshal, err := json.Marshal(p)
		if err != nil || string(viaMarshal) != string(want) {
			t.Errorf("json.Marshal(page) = %s, %v; want %s", viaMarshal, err, want)
		}
	}
}

// TestAppendUsageMetricsJSON: the rendered page is byte for byte
// json.Marshal of ListUsageMetrics' page, on every page of both orders,
// with filters, before and after changes, and the same errors.
//
// Long on purpose: one scenario walked in order; each step starts from the state the previous steps
// left, so pieces would repeat the set-up.
func TestAppendUsageMetricsJSON(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, clock := billingtest.NewService(t, billingtest.WithBolt())
	acct := billingtest.Account(t, svc, "a")
	srv := NewServer(svc, nil)
	var ids []string
	for i := range 7 {
		clock.Advance(time.Second)
		m, err := svc.CreateUsageMetric(ctx, acct, billing.CreateUsageMetricParams{UsageMetricParams: billing.UsageMetricParams{
			Name: fmt.Sprintf("Metric <%d> & \u00e9", i), Description: "d\n\"q\"", MetricType: billing.MetricTypeSimple,
			EventType: fmt.Sprintf("type_%d", i%3), AggregationType: billing.AggregationCount,
			PropertyFilters: map[string][]string{"b": {"2"}, "a": {"1", "x"}}, PropertiesToNegate: []string{"a"},
		}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, m.ID)
	}
	compare := func(step string, f billing.UsageMetricFilter, p billing.ListParams) billing.Page[billing.UsageMetric] {
		t.Helper()
		page, err := svc.ListUsageMetrics(ctx, acct, f, p)
		got, gotErr := srv.appendUsageMetricsPage(ctx, []byte("prefix"), acct, f, p)
		if err != nil || gotErr != nil {
			if fmt.Sprint(err) != fmt.Sprint(gotErr) {
				t.Fatalf("%s: errors %v and %v", step, err, gotErr)
			}
			return page
		}
		want, err := json.Marshal(page)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != "prefix"+string(want) {
			t.Fatalf("%s:\n got %s\nwant prefix%s", step, got, want)
		}
		return page
	}
	walk := func(step string, f billing.UsageMetricFilter) {
		t.Helper()
		p := billing.ListParams{Limit: 2}
		for n := 0; ; n++ {
			page := compare(fmt.Sprintf("%s page %d", step, n), f, p)
			if page.After == "" {
				break
			}
			if page.Before != "" {
				compare(fmt.Sprintf("%s page %d before", step, n), f, billing.ListParams{Limit: 2, Before: page.Before})
			}
			p.After = page.After
		}
	}
	for range 2 { // cold memo, then warm
		walk("desc", billing.UsageMetricFilter{})
		walk("asc", billing.UsageMetricFilter{SortOrder: billing.SortAsc})
		walk("eventType", billing.UsageMetricFilter{EventTypes: []string{"type_1"}})
		walk("name", billing.UsageMetricFilter{Name: "<3>"})
	}
	if _, err := svc.DeleteUsageMetric(ctx, acct, ids[3]); err != nil {
		t.Fatal(err)
	}
	walk("after a delete", billing.UsageMetricFilter{})
	compare("bad filter", billing.UsageMetricFilter{AggregationTypes: []billing.AggregationType{"AVG"}}, billing.ListParams{})
	compare("bad cursor", billing.UsageMetricFilter{}, billing.ListParams{After: "nope"})
	compare("other account", billing.UsageMetricFilter{}, billing.ListParams{})
	if b, err := srv.appendUsageMetricsPage(ctx, nil, "no-such-account", billing.UsageMetricFilter{}, billing.ListParams{}); err != nil ||
		string(b) != `{"items":[],"pagination":{"totalResultSize":0}}` {
		t.Fatalf("empty list: %s, %v", b, err)
	}
}
