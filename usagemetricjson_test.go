package billing

import (
	"encoding/json"
	"testing"
	"time"
)

// TestUsageMetricAppendJSON checks the hand-written encoder of usage
// metrics and of pages against encoding/json, byte for byte, on values that
// exercise every escape, omitempty field and nil-versus-empty case.
func TestUsageMetricAppendJSON(t *testing.T) {
	t.Parallel()
	deleted := time.Date(2026, 3, 1, 12, 30, 0, 123456000, time.FixedZone("X", 5*3600+1800))
	weird := "a<b>&c\"d\\e\n\t\x01\x7f é \u2028\u2029 \xff end"
	metrics := []UsageMetric{
		{},
		{
			ID: "m1", ServiceAccountID: "acc", Name: "Metric", MetricType: MetricTypeSimple,
			EventType: "api_call", AggregationType: AggregationCount,
			CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), PropertyFilters: map[string][]string{},
			Parameters: []UsageMetricParameter{},
		},
		{
			ID: weird, ServiceAccountID: weird, Name: weird, Description: weird,
			MetricType: MetricTypeGrouped, EventType: weird, AggregationType: AggregationCustom,
			AggregationProperty: weird, GroupingProperty: weird, Unit: weird,
			CreatedAt: time.Date(2026, 11, 22, 8, 0, 0, 1, time.UTC), DeletedAt: &deleted,
			PropertyFilters:    map[string][]string{"z": {"1", weird}, weird: nil, "a": {}, "<k>": {"v"}},
			CaseSensitive:      true,
			PropertiesToNegate: []string{weird, "b"},
			Parameters: []UsageMetricParameter{
				{ID: "p1", UsageMetricID: "m", Name: "n", Type: ParameterInteger},
				{ID: weird, UsageMetricID: weird, Name: weird, Type: ParameterNumber, Description: weird, DefaultValue: "1.50"},
			},
		},
		{ID: "x", PropertiesToNegate: []string{}, CreatedAt: time.Date(1, 1, 1, 0, 0, 0, 0, time.Local)},
	}
	for i := range metrics {
		want, err := json.Marshal(metrics[i])
		if err != nil {
			t.Fatal(err)
		}
		got, err := metrics[i].appendJSON(nil)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("metric %d:\n got %s\nwant %s", i, got, want)
		}
	}
	bad := UsageMetric{CreatedAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}
	if _, err := bad.appendJSON(nil); err == nil {
		t.Error("a year past 9999 encoded; json.Marshal refuses it")
	}

	for _, p := range []Page[UsageMetric]{
		{},
		{Items: metrics, After: "abc_-9", Before: weird, TotalResultSize: 41},
		{Items: metrics[1:2], TotalResultSize: 1},
	} {
		want, err := json.Marshal(struct {
			Items      []UsageMetric `json:"items"`
			Pagination Pagination    `json:"pagination"`
		}{append([]UsageMetric{}, p.Items...), Pagination{After: p.After, Before: p.Before, TotalResultSize: p.TotalResultSize}})
		if err != nil {
			t.Fatal(err)
		}
		got, err := p.AppendJSON(nil)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("page:\n got %s\nwant %s", got, want)
		}
		viaMarshal, err := json.Marshal(p)
		if err != nil || string(viaMarshal) != string(want) {
			t.Errorf("json.Marshal(page) = %s, %v; want %s", viaMarshal, err, want)
		}
	}
}
