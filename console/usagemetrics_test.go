package console

import (
	"context"
	"testing"

	"github.com/billingd/billing"
)

// TestUsageMetricsPageShowsGaugeSettings: the list of usage metrics shows
// a PERCENTILE metric's percentile and a TIME_WEIGHTED_SUM metric's unit.
func TestUsageMetricsPageShowsGaugeSettings(t *testing.T) {
	f := newFixture(t)
	p95 := billing.MustDecimal("95")
	for _, p := range []billing.UsageMetricParams{
		{Name: "Bandwidth", MetricType: billing.MetricTypeSimple, EventType: "bw", AggregationType: billing.AggregationPercentile, AggregationProperty: "mbps", Percentile: &p95},
		{Name: "Storage", MetricType: billing.MetricTypeSimple, EventType: "storage", AggregationType: billing.AggregationTimeWeightedSum, AggregationProperty: "gb"},
	} {
		must(f.svc.CreateUsageMetric(context.Background(), f.account, billing.CreateUsageMetricParams{UsageMetricParams: p}))
	}
	_, body := f.signedIn().get(Prefix + "usage-metrics")
	contains(t, body, "PERCENTILE 95 of <code>mbps</code>", "TIME_WEIGHTED_SUM of <code>gb</code> × HOUR")
}
