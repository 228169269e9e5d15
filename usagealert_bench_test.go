package billing_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
)

// BenchmarkIngestAlerts is ingestion on bbolt (single events from 64
// goroutines, and batches of 1,000) for an account without alerts and for
// one with an alert for every customer, whose transactions then also write
// alert marks (nothing evaluates them during the benchmark): what an alert
// costs ingestion (BENCHMARKS.md, "Alerts").
//
//	go test -run '^$' -bench IngestAlerts -count 3 .
func BenchmarkIngestAlerts(b *testing.B) {
	for _, alert := range []bool{false, true} {
		name := "no-alert"
		if alert {
			name = "alert"
		}
		b.Run("single/"+name, func(b *testing.B) {
			svc, acct := alertBenchService(b, alert)
			var i atomic.Int64
			b.SetParallelism(64)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					ev := referenceEvent("customer-alias-00001", "api_calls0", int(i.Add(1)), billingtest.Start)
					if _, err := svc.CreateUsageEvent(context.Background(), acct, ev); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
		})
		b.Run("batch/"+name, func(b *testing.B) {
			svc, acct := alertBenchService(b, alert)
			batch := make([]billing.UsageEventParams, billing.MaxUsageEventBatch)
			for i := range batch {
				batch[i] = referenceEvent("customer-alias-00001", "api_calls0", i, billingtest.Start)
			}
			b.ResetTimer()
			for b.Loop() {
				if _, err := svc.CreateUsageEventBatch(context.Background(), acct, billing.UsageEventBatchParams{Events: batch}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*len(batch))/b.Elapsed().Seconds(), "events/s")
		})
	}
}

// alertBenchService is a Service on a synced bbolt file with an account
// that has, when alert, a USAGE alert for every customer.
func alertBenchService(b *testing.B, alert bool) (*billing.Service, string) {
	svc, _ := billingtest.NewService(b, billingtest.WithStore(benchStore(b, false)))
	acct := billingtest.Account(b, svc, "bench")
	if alert {
		ctx := context.Background()
		m := must(svc.CreateUsageMetric(ctx, acct, billing.CreateUsageMetricParams{UsageMetricParams: billing.UsageMetricParams{
			Name: "calls", MetricType: billing.MetricTypeSimple, EventType: "api_calls0", AggregationType: billing.AggregationCount,
		}})).of(b, "CreateUsageMetric")
		must(svc.CreateUsageAlert(ctx, acct, billing.CreateUsageAlertParams{
			Kind: billing.UsageAlertUsage, UsageMetricID: m.ID, Threshold: dec("1000000"),
		})).of(b, "CreateUsageAlert")
	}
	return svc, acct
}
