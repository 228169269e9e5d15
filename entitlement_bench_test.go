package billing_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
	"github.com/billingd/billing/storage/pgstore"
	"github.com/billingd/billing/storage/pgstore/pgtest"
)

// BenchmarkEntitlement answers a metered entitlement (a plain SUM) of a
// customer with BILLING_BENCH_EVENTS events in the current billing period
// (July 2024), on bbolt and (with BILLINGD_TEST_POSTGRES) on PostgreSQL.
// The events are stored before the price that grants the feature, so the
// price's creation builds the rollups (logged). Besides the mean it
// reports the median, the 90th and the 99th percentile of the answers'
// times, and on PostgreSQL the requests an answer sends (requests/op):
//
//	go test -run '^$' -bench 'BenchmarkEntitlement$' -benchtime 2000x .
func BenchmarkEntitlement(b *testing.B) {
	b.Run("bbolt", func(b *testing.B) { benchEntitlement(b, benchStore(b, true), nil) })
	if pgtest.Enabled() {
		b.Run("postgres", func(b *testing.B) {
			var rt pgtest.RoundTrips
			benchEntitlement(b, pgtest.Open(b, &pgstore.Options{Tracer: &rt}), &rt)
		})
	}
}

// benchEntitlement is BenchmarkEntitlement on one store; with rt, it
// reports the requests an answer sends (requests/op).
func benchEntitlement(b *testing.B, store billing.Store, rt *pgtest.RoundTrips) {
	n := benchEvents(b)
	svc, clock := billingtest.NewService(b, billingtest.WithStore(store))
	clock.Set(time.Date(2024, 8, 15, 0, 0, 0, 0, time.UTC))
	ctx := context.Background()
	acct := billingtest.Account(b, svc, "bench")
	fillUsage(b, svc, acct, "customer-alias-00001", "api_calls0", n)
	c := must(svc.CreateCustomer(ctx, acct, billing.CustomerParams{LegalName: "Bench", CustomerAliases: []string{"customer-alias-00001"}})).of(b, "CreateCustomer")
	m := createMetric(b, svc, acct, billing.UsageMetricParams{Name: "amount", MetricType: billing.MetricTypeSimple,
		EventType: "api_calls0", AggregationType: billing.AggregationSum, AggregationProperty: "amount"})
	prod := must(svc.CreateProduct(ctx, acct, billing.CreateProductParams{Name: "P"})).of(b, "CreateProduct")
	limit := billing.MustDecimal("1000000000")
	t0 := time.Now()
	pr := must(svc.CreatePrice(ctx, acct, billing.CreatePriceParams{ProductID: prod.ID, Name: "Plan", Currency: billing.CurrencyUSD,
		BillingFrequency: billing.FrequencyMonthly, BillingType: billing.BillingTypeInAdvance,
		Structure: billing.PriceStructure{PricingType: billing.PricingFixed, Price: dp("10.00")},
		Features:  []billing.Feature{{FeatureKey: "api", UsageMetricID: m.ID, Limit: &limit}}})).of(b, "CreatePrice")
	b.Logf("%d events: CreatePrice (building the rollups) took %v", n, time.Since(t0))
	no := false
	must(svc.CreateBillingSchedule(ctx, acct, billing.BillingScheduleParams{CustomerID: c.ID, StartDate: date("2024-07-01"), AutoIssueInvoices: &no, IsDraft: &no,
		Phases: []billing.PhaseParams{phase("2024-07-01", pr.ID)}})).of(b, "CreateBillingSchedule")
	at := time.Date(2024, 7, 31, 12, 0, 0, 0, time.UTC)
	if rt != nil {
		rt.Reset()
	}
	var times []time.Duration
	for b.Loop() {
		t := time.Now()
		e, err := svc.Entitlement(ctx, acct, c.ID, "api", at)
		times = append(times, time.Since(t))
		if err != nil || e.Usage == nil || !e.HasAccess {
			b.Fatalf("entitlement: %+v, %v", e, err)
		}
	}
	if rt != nil {
		b.ReportMetric(float64(rt.Count())/float64(len(times)), "requests/op")
	}
	slices.Sort(times)
	ms := func(q float64) float64 { return float64(times[int(q*float64(len(times)-1))]) / 1e6 }
	b.ReportMetric(ms(0.5), "p50-ms")
	b.ReportMetric(ms(0.9), "p90-ms")
	b.ReportMetric(ms(0.99), "p99-ms")
}
