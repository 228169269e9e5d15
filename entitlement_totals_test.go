package billing_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
	"github.com/billingd/billing/storage/memstore"
)

// rollupCounter is a store that counts the scans of the usage rollups in
// read transactions, to show that entitlements read them; its Tx offers
// RollupTx (and MultiGetTx) exactly when the wrapped store's does.
type rollupCounter struct {
	billing.Store
	reads atomic.Int64
}

// countingTx is a Tx of rollupCounter.
type countingTx struct {
	billing.Tx
	s    *rollupCounter
	read bool // a View: ingestion's own reads of the totals do not count
}

func (t countingTx) Scan(ctx context.Context, table billing.Table, r billing.Range, fn func(k, v []byte) error) error {
	if table == "usage_rollups" && t.read {
		t.s.reads.Add(1)
	}
	return t.Tx.Scan(ctx, table, r, fn)
}

// countingRollupTx is a countingTx of a store whose Tx is a RollupTx.
type countingRollupTx struct{ countingTx }

func (t countingRollupTx) KeepsUsageRollups() bool {
	return t.Tx.(billing.RollupTx).KeepsUsageRollups()
}

// countingMultiTx is a countingRollupTx of a store whose Tx is a
// MultiGetTx too (PostgreSQL), so that entitlements read ahead through it.
type countingMultiTx struct{ countingRollupTx }

func (t countingMultiTx) GetMany(ctx context.Context, table billing.Table, keys [][]byte) ([][]byte, error) {
	return t.Tx.(billing.MultiGetTx).GetMany(ctx, table, keys)
}

func (t countingMultiTx) Prefetch(ctx context.Context, keys []billing.TableKey) error {
	return t.Tx.(billing.MultiGetTx).Prefetch(ctx, keys)
}

func (s *rollupCounter) wrap(fn func(billing.Tx) error, read bool) func(billing.Tx) error {
	return func(tx billing.Tx) error {
		if _, ok := tx.(billing.MultiGetTx); ok {
			return fn(countingMultiTx{countingRollupTx{countingTx{tx, s, read}}})
		}
		if _, ok := tx.(billing.RollupTx); ok {
			return fn(countingRollupTx{countingTx{tx, s, read}})
		}
		return fn(countingTx{tx, s, read})
	}
}

func (s *rollupCounter) View(ctx context.Context, fn func(billing.Tx) error) error {
	return s.Store.View(ctx, s.wrap(fn, true))
}

func (s *rollupCounter) Update(ctx context.Context, fn func(billing.Tx) error) error {
	return s.Store.Update(ctx, s.wrap(fn, false))
}

func (s *rollupCounter) Batch(ctx context.Context, fn func(billing.Tx) error) error {
	return s.Store.Batch(ctx, s.wrap(fn, false))
}

// TestEntitlementTotalsAgreeWithTheEvents stores random usage events of a
// customer in Asia/Kolkata (UTC+05:30: its months start at half past an
// hour, so the partial hours at both ends are read from events) over three
// months, sent out of order (late events), many superseding earlier ones
// by customerEventId (a new value and a new time, perhaps in another
// month), some before the price granting the features exists (so its
// creation builds the running totals). After every batch it asks for the
// entitlements at random moments and checks each metered feature's usage
// against a brute-force sum over the events the test knows are live: a
// plain SUM, a plain COUNT and a MAX (read from the hourly totals) and a
// SUM with a property filter (calculated from the events). On memstore,
// bbolt and (with BILLINGD_TEST_POSTGRES) PostgreSQL. BILLING_ENTITLEMENT_SEED
// replays a seed.
func TestEntitlementTotalsAgreeWithTheEvents(t *testing.T) {
	t.Parallel()
	seed := billingtest.Seed(t, "BILLING_ENTITLEMENT_SEED")
	stores := realStores()
	for name, open := range stores {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			rc := &rollupCounter{Store: open(t)}
			compared := checkEntitlementWorld(t, rc, rand.New(rand.NewPCG(seed, 36)))
			if rc.reads.Load() == 0 {
				t.Fatal("no entitlement read the running totals")
			}
			t.Logf("seed %d: %d usages compared, %d reads of the totals", seed, compared, rc.reads.Load())
		})
	}
}

// realStores opens, by name, a fresh memstore, bbolt store and (with
// BILLINGD_TEST_POSTGRES) PostgreSQL schema, each closed when its test ends:
// the stores of the brute-force comparisons.
func realStores() map[string]func(testing.TB) billing.Store {
	stores := map[string]func(testing.TB) billing.Store{
		"memstore": func(tb testing.TB) billing.Store {
			s := memstore.New()
			tb.Cleanup(func() { _ = s.Close() })
			return s
		},
		"bbolt": func(tb testing.TB) billing.Store { return billingtest.Bolt(tb) },
	}
	if billingtest.Postgres() {
		stores["postgres"] = billingtest.Store
	}
	return stores
}

// liveEvent is what the test knows of a stored event.
type liveEvent struct {
	at     time.Time
	v      billing.Decimal
	region string
}

// entitlementFeatures are the metered features of the world, by metric:
// the aggregation, the property and the filter.
var entitlementFeatures = []struct {
	key    string
	params billing.UsageMetricParams
}{
	{"sum", billing.UsageMetricParams{AggregationType: billing.AggregationSum, AggregationProperty: "v"}},
	{"count", billing.UsageMetricParams{AggregationType: billing.AggregationCount}},
	{"max", billing.UsageMetricParams{AggregationType: billing.AggregationMax, AggregationProperty: "v"}},
	{"eu", billing.UsageMetricParams{AggregationType: billing.AggregationSum, AggregationProperty: "v", PropertyFilters: map[string][]string{"region": {"eu"}}}},
}

// expectedUsage is the brute-force usage of feature k over [from, to).
func expectedUsage(k string, live map[string]liveEvent, from, to time.Time) string {
	sum, n := billing.DecimalFromInt(0), 0
	var maxV *billing.Decimal
	for _, e := range live {
		if e.at.Before(from) || !e.at.Before(to) || (k == "eu" && e.region != "eu") {
			continue
		}
		n++
		sum = sum.Add(e.v)
		if maxV == nil || e.v.Cmp(*maxV) > 0 {
			v := e.v
			maxV = &v
		}
	}
	switch k {
	case "count":
		return fmt.Sprint(n)
	case "max":
		if maxV == nil {
			return "0"
		}
		return maxV.Canonical()
	}
	return sum.Canonical()
}

// checkEntitlementWorld runs the world on store and returns the number of
// usages compared.
//
// Long on purpose: the world, its batches and the comparison are one loop.
func checkEntitlementWorld(t *testing.T, store billing.Store, r *rand.Rand) int {
	t.Helper()
	f := newSched(t, billingtest.WithStore(store))
	f.clock.Set(ts("2024-04-15T00:00:00Z"))
	customer := f.zonedCustomer("Asia/Kolkata")
	kolkata, _ := time.LoadLocation("Asia/Kolkata")
	start := time.Date(2024, 1, 1, 0, 0, 0, 0, kolkata)
	span := time.Date(2024, 4, 1, 0, 0, 0, 0, kolkata).Sub(start)
	live := map[string]liveEvent{}
	ingest := func(n int) {
		var b billing.UsageEventBatchParams
		for range n {
			id := fmt.Sprintf("e%d", r.IntN(400)) // about one in three supersedes
			at := start.Add(time.Duration(r.Int64N(int64(span/time.Second))) * time.Second)
			if r.IntN(4) == 0 { // near a month's boundary in Kolkata
				m := time.Date(2024, time.Month(2+r.IntN(3)), 1, 0, 0, 0, 0, kolkata)
				at = m.Add(time.Duration(r.IntN(7200)-3600) * time.Second)
			}
			v := billing.MustDecimal(fmt.Sprintf("%d.%012d", r.IntN(2000)-500, r.Int64N(1e12)))
			region := []string{"eu", "us"}[r.IntN(2)]
			b.Events = append(b.Events, billing.UsageEventParams{CustomerAlias: customer, EventType: "call", CustomerEventID: id,
				EventTimestamp: &at, EventProperties: billing.EventProperties{"v": billing.NumberProperty(v), "region": billing.StringProperty(region)}})
			live[id] = liveEvent{at: at.UTC(), v: v, region: region}
		}
		_, err := f.svc.CreateUsageEventBatch(f.ctx, f.account, b)
		f.must(err)
	}
	ingest(150) // before the features: the price's creation builds the totals
	var features []billing.Feature
	for _, ef := range entitlementFeatures {
		p := ef.params
		p.Name, p.MetricType, p.EventType = ef.key, billing.MetricTypeSimple, "call"
		m := createMetric(t, f.svc, f.account, p)
		features = append(features, billing.Feature{FeatureKey: ef.key, UsageMetricID: m.ID})
	}
	pr, err := f.svc.CreatePrice(f.ctx, f.account, billing.CreatePriceParams{ProductID: f.product, Name: "Plan", Currency: billing.CurrencyUSD,
		BillingFrequency: billing.FrequencyMonthly, BillingType: billing.BillingTypeInAdvance,
		Structure: billing.PriceStructure{PricingType: billing.PricingFixed, Price: dp("10.00")}, Features: features})
	f.must(err)
	f.schedule(customer, "2024-01-01", nil, phase("2024-01-01", pr.ID))
	compared := 0
	for batch := range 15 {
		ingest(1 + r.IntN(60))
		for range 4 {
			at := start.Add(time.Duration(r.Int64N(int64(span/time.Second))) * time.Second)
			from := time.Date(at.In(kolkata).Year(), at.In(kolkata).Month(), 1, 0, 0, 0, 0, kolkata)
			to := from.AddDate(0, 1, 0)
			all, err := f.svc.Entitlements(f.ctx, f.account, customer, at)
			f.must(err)
			if len(all) != len(entitlementFeatures) {
				t.Fatalf("batch %d at %s: %d entitlements, want %d", batch, at, len(all), len(entitlementFeatures))
			}
			for _, e := range all {
				want := expectedUsage(e.FeatureKey, live, from, to)
				if e.Usage == nil || e.Usage.Canonical() != want || e.ResetsAt == nil || !e.ResetsAt.Equal(to) {
					t.Errorf("batch %d, %s at %s: usage %v resets %v, want %s resets %s", batch, e.FeatureKey, at, e.Usage, e.ResetsAt, want, to.UTC())
				}
				compared++
			}
		}
	}
	return compared
}
