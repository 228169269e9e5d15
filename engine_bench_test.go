package billing_test

import (
	"context"
	"testing"
	"time"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
)

// BenchmarkRunBilling measures one engine run over N active schedules
// (BENCHMARKS.md, P6: 10,000), each with a monthly FIXED price in advance and
// a LINEAR usage price in arrears with 100 events in the billed period, on
// bbolt. Each run bills two invoice dates per schedule (January's fee, then
// February's fee with January's usage). The fixture is built outside the
// timer; run it with
//
//	go test -run '^$' -bench RunBilling -benchtime 1x .
//
// BILLING_BENCH_SCHEDULES overrides N.
func BenchmarkRunBilling(b *testing.B) {
	n := billingtest.EnvCount(b, "BILLING_BENCH_SCHEDULES", 10_000, 1)
	for b.Loop() {
		b.StopTimer()
		f := newSched(b, billingtest.WithBolt())
		fixed := f.fixed("Plan", "100.00", billing.CurrencyUSD)
		usage := f.apiCalls("0.25")
		var batch billing.UsageEventBatchParams
		for i := range n {
			c := f.newCustomer(billing.TaxStatusTaxed)
			for j := range 100 {
				at := ts("2024-01-10T00:00:00Z").Add(time.Duration(j) * time.Minute)
				batch.Events = append(batch.Events, billing.UsageEventParams{CustomerAlias: c, EventType: "api_call", EventTimestamp: &at})
			}
			if len(batch.Events) == 1000 || i == n-1 {
				_, err := f.svc.CreateUsageEventBatch(f.ctx, f.account, batch)
				f.must(err)
				batch.Events = batch.Events[:0]
			}
			f.schedule(c, "2024-01-01", nil, phase("2024-01-01", fixed, usage))
		}
		b.StartTimer()
		start := time.Now()
		r, err := f.svc.RunBilling(context.Background(), ts("2024-02-01T02:00:00Z"))
		if err != nil || r.InvoicesCreated != 2*n || len(r.Failures) != 0 {
			b.Fatalf("run: created %d, failures %d, %v", r.InvoicesCreated, len(r.Failures), err)
		}
		b.ReportMetric(float64(time.Since(start).Milliseconds()), "ms/run")
		b.ReportMetric(float64(n), "schedules")
	}
}
