package billing_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
	"github.com/billingd/billing/storage/boltstore"
)

// Usage benchmarks. Their setup runs only under -bench:
//
//	go test -run '^$' -bench 'UsageEvent|CalculateUsage' -benchtime 20x .
//
// BILLING_BENCH_EVENTS sets the events of the measured customer (default
// 1,000,000); the "others" variant stores ten times as many events of other
// customers and another event type beside them.

// benchEvents is the number of events of the measured customer.
func benchEvents(b *testing.B) int {
	return billingtest.EnvCount(b, "BILLING_BENCH_EVENTS", 1_000_000, 1000)
}

// referenceEvent is the reference event of BENCHMARKS.md, P7: an alias of
// 20 characters, an event type of 10, three properties (a 10-character
// string, an integer, a 2-digit decimal).
func referenceEvent(alias, eventType string, i int, ts time.Time) billing.UsageEventParams {
	return billing.UsageEventParams{
		CustomerAlias: alias, EventType: eventType, EventTimestamp: &ts,
		EventProperties: billing.EventProperties{
			"region":   billing.StringProperty(fmt.Sprintf("region-%03d", i%1000)),
			"requests": billing.NumberProperty(billing.DecimalFromInt(int64(i % 97))),
			"amount":   billing.NumberProperty(billing.MustDecimal(fmt.Sprintf("%d.%02d", i%50, i%100))),
		},
	}
}

// benchStore opens a bbolt store under a fresh directory; sync is off only
// for setup-heavy calculation benchmarks.
func benchStore(b *testing.B, noSync bool) *boltstore.Store {
	b.Helper()
	store, err := boltstore.Open(filepath.Join(b.TempDir(), "bench.db"), &boltstore.Options{NoSync: noSync})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { store.Close() })
	return store
}

func BenchmarkCreateUsageEvent(b *testing.B) {
	svc, _ := billingtest.NewService(b, billingtest.WithStore(benchStore(b, false)), billingtest.WithConfig(billing.Config{NewID: nil}))
	acct := billingtest.Account(b, svc, "bench")
	ctx := context.Background()
	b.SetParallelism(64)
	b.ResetTimer()
	var n sync.Mutex
	i := 0
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			n.Lock()
			i++
			k := i
			n.Unlock()
			if _, err := svc.CreateUsageEvent(ctx, acct, referenceEvent("customer-alias-00001", "api_calls0", k, billingtest.Start)); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

func BenchmarkCreateUsageEventBatch(b *testing.B) {
	svc, _ := billingtest.NewService(b, billingtest.WithStore(benchStore(b, false)))
	acct := billingtest.Account(b, svc, "bench")
	ctx := context.Background()
	batch := make([]billing.UsageEventParams, billing.MaxUsageEventBatch)
	for i := range batch {
		batch[i] = referenceEvent("customer-alias-00001", "api_calls0", i, billingtest.Start)
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := svc.CreateUsageEventBatch(ctx, acct, billing.UsageEventBatchParams{Events: batch}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*len(batch))/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkCheckBatch is the validation and record encoding of a batch of
// 1,000 reference events, ids included, without the store: the part of a
// batch's time between decoding and the transaction (BENCHMARKS.md, "One
// pass per event").
//
//	go test -run '^$' -bench CheckBatch -benchmem .
func BenchmarkCheckBatch(b *testing.B) {
	svc, _ := billingtest.NewService(b, billingtest.WithUUIDs())
	batch := make([]billing.UsageEventParams, billing.MaxUsageEventBatch)
	for i := range batch {
		batch[i] = referenceEvent("customer-alias-00001", "api_calls0", i, billingtest.Start.Add(time.Duration(i-len(batch))*time.Second))
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := svc.CheckBatch("account", batch); err != nil {
			b.Fatal(err)
		}
	}
}

// fillUsage stores n reference events of alias spread over July 2024.
func fillUsage(b *testing.B, svc *billing.Service, acct, alias, eventType string, n int) {
	b.Helper()
	ctx := context.Background()
	start := time.Date(2024, 7, 1, 0, 0, 0, 0, time.UTC)
	step := 31 * 24 * time.Hour / time.Duration(n)
	batch := make([]billing.UsageEventParams, 0, billing.MaxUsageEventBatch)
	for i := range n {
		batch = append(batch, referenceEvent(alias, eventType, i, start.Add(time.Duration(i)*step)))
		if len(batch) == cap(batch) || i == n-1 {
			if _, err := svc.CreateUsageEventBatch(ctx, acct, billing.UsageEventBatchParams{Events: batch}); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
}

func BenchmarkCalculateUsage(b *testing.B) {
	n := benchEvents(b)
	for _, others := range []int{0, 10} {
		b.Run(fmt.Sprintf("events=%d/others=%dx", n, others), func(b *testing.B) {
			store := benchStore(b, true)
			svc, clock := billingtest.NewService(b, billingtest.WithStore(store))
			clock.Set(time.Date(2024, 8, 15, 0, 0, 0, 0, time.UTC))
			acct := billingtest.Account(b, svc, "bench")
			fillUsage(b, svc, acct, "customer-alias-00001", "api_calls0", n)
			for i := range others {
				// Other customers of the same type, and the same customer's
				// events of another type.
				fillUsage(b, svc, acct, fmt.Sprintf("customer-alias-%05d", i+2), "api_calls0", n*9/10)
				fillUsage(b, svc, acct, "customer-alias-00001", fmt.Sprintf("other_typ%d", i), n/10)
			}
			if fi, err := os.Stat(store.Path()); err == nil {
				// A parent benchmark's metrics are not printed: log it.
				b.Logf("%d events in %d bytes: %.0f bytes/event on disk", n*(1+others), fi.Size(), float64(fi.Size())/float64(n*(1+others)))
			}
			m := createMetric(b, svc, acct, billing.UsageMetricParams{Name: "amount", MetricType: billing.MetricTypeSimple,
				EventType: "api_calls0", AggregationType: billing.AggregationSum, AggregationProperty: "amount"})
			p := billing.CalculateUsageParams{UsageMetricID: m.ID, CustomerAliases: []string{"customer-alias-00001"},
				PeriodStart: "2024-07-01", PeriodEnd: "2024-07-31"}
			b.Run("calculate-sum", func(b *testing.B) {
				for b.Loop() {
					c, err := svc.CalculateUsage(context.Background(), acct, p)
					if err != nil || c.EventCount != int64(n) {
						b.Fatalf("calculation: %+v, %v", c, err)
					}
				}
			})
			if others == 0 {
				b.Run("raw-scan", func(b *testing.B) { benchRawScan(b, store, n) })
				benchGaugeCalculations(b, svc, acct, p, n)
			}
		})
	}
}

// benchGaugeCalculations calculates the gauge aggregations over the events
// of p's customer and period, as calculate-sum does SUM.
func benchGaugeCalculations(b *testing.B, svc *billing.Service, acct string, p billing.CalculateUsageParams, n int) {
	for _, agg := range []billing.AggregationType{billing.AggregationMax, billing.AggregationLatest,
		billing.AggregationTimeWeightedSum, billing.AggregationPercentile} {
		mp := billing.UsageMetricParams{Name: "gauge " + string(agg), MetricType: billing.MetricTypeSimple,
			EventType: "api_calls0", AggregationType: agg, AggregationProperty: "amount"}
		if agg == billing.AggregationPercentile {
			pct := billing.MustDecimal("95")
			mp.Percentile = &pct
		}
		p.UsageMetricID = createMetric(b, svc, acct, mp).ID
		b.Run("calculate-"+strings.ToLower(string(agg)), func(b *testing.B) {
			for b.Loop() {
				c, err := svc.CalculateUsage(context.Background(), acct, p)
				if err != nil || c.EventCount != int64(n) {
					b.Fatalf("calculation: %+v, %v", c, err)
				}
			}
		})
	}
}

// benchRawScan is the ceiling of P4: a cursor scan over every stored event,
// touching each key and value and nothing else.
func benchRawScan(b *testing.B, store billing.Store, n int) {
	ctx := context.Background()
	for b.Loop() {
		count, size := 0, 0
		err := store.View(ctx, func(tx billing.Tx) error {
			return tx.Scan(ctx, billing.Table("usage_events"), billing.Range{}, func(k, v []byte) error {
				count, size = count+1, size+len(k)+len(v)
				return nil
			})
		})
		if err != nil || count != n {
			b.Fatalf("scanned %d events: %v", count, err)
		}
	}
}
