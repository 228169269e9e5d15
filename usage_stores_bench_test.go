package billing_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
	"github.com/billingd/billing/storage/pgstore/pgtest"
)

// BenchmarkCalculateUsageStores calculates over BILLING_BENCH_EVENTS events
// of one customer (the July of BenchmarkCalculateUsage) on bbolt and, with
// BILLINGD_TEST_POSTGRES, on PostgreSQL in the same run: COUNT, SUM and MAX,
// on PostgreSQL both from the hourly rollups and by the scan it did before
// them (the same stored events, rollups not read):
//
//	BILLINGD_TEST_POSTGRES=postgres://... go test -run '^$' -bench CalculateUsageStores -benchtime 20x .
func BenchmarkCalculateUsageStores(b *testing.B) {
	n := benchEvents(b)
	stores := []string{"bbolt"}
	if pgtest.Enabled() {
		stores = append(stores, "postgres")
	}
	for _, name := range stores {
		b.Run(fmt.Sprintf("%s/events=%d", name, n), func(b *testing.B) {
			var store billing.Store = benchStore(b, true)
			if name == "postgres" {
				store = pgtest.Open(b, nil)
			}
			sw := &rollupSwitch{Store: store}
			svc, clock := billingtest.NewService(b, billingtest.WithStore(sw))
			clock.Set(time.Date(2024, 8, 15, 0, 0, 0, 0, time.UTC))
			acct := billingtest.Account(b, svc, "bench")
			start := time.Now()
			fillUsage(b, svc, acct, "customer-alias-00001", "api_calls0", n)
			b.Logf("%s: stored %d events in %v", name, n, time.Since(start).Round(time.Millisecond))
			paths := []bool{false}
			if name == "postgres" {
				paths = []bool{true, false}
			}
			for _, agg := range []billing.AggregationType{billing.AggregationCount, billing.AggregationSum, billing.AggregationMax} {
				mp := billing.UsageMetricParams{Name: string(agg), MetricType: billing.MetricTypeSimple, EventType: "api_calls0", AggregationType: agg}
				if agg != billing.AggregationCount {
					mp.AggregationProperty = "amount"
				}
				p := billing.CalculateUsageParams{UsageMetricID: createMetric(b, svc, acct, mp).ID, CustomerAliases: []string{"customer-alias-00001"},
					PeriodStart: "2024-07-01", PeriodEnd: "2024-07-31"}
				for _, rollups := range paths {
					label := "calculate-" + strings.ToLower(string(agg))
					if name == "postgres" && rollups {
						label += "/rollups"
					} else if name == "postgres" {
						label += "/scan"
					}
					b.Run(label, func(b *testing.B) {
						sw.read.Store(rollups)
						for b.Loop() {
							c, err := svc.CalculateUsage(context.Background(), acct, p)
							if err != nil || c.EventCount != int64(n) {
								b.Fatalf("calculation: %+v, %v", c, err)
							}
						}
					})
				}
			}
		})
	}
}
