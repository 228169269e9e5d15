package billing_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
	"github.com/billingd/billing/storage/memstore"
	"github.com/billingd/billing/storage/pgstore/pgtest"
)

// rollupSwitch is a store whose writes keep usage rollups and whose reads
// use them or not (scan), so that one stored world answers by both paths.
// It counts the reads of the rollup tables, to show the rollups were used.
type rollupSwitch struct {
	billing.Store
	read        atomic.Bool // reads use the rollups
	rollupReads atomic.Int64
	dayReads    atomic.Int64 // of them, reads of the day totals
	// tracked: writes go to the store's own Tx, so that on bbolt and
	// memstore only tracked event types keep rollups (written in place);
	// else every write's Tx is a RollupTx (rollups of every series, in
	// deltas).
	tracked bool
}

// switchedTx is a Tx of rollupSwitch.
type switchedTx struct {
	billing.Tx
	s  *rollupSwitch
	on bool
}

func (t switchedTx) KeepsUsageRollups() bool { return t.on }

func (t switchedTx) Scan(ctx context.Context, table billing.Table, r billing.Range, fn func(k, v []byte) error) error {
	switch table {
	case "usage_rollup_days":
		t.s.dayReads.Add(1)
		fallthrough
	case "usage_rollups":
		t.s.rollupReads.Add(1)
	}
	return t.Tx.Scan(ctx, table, r, fn)
}

func (s *rollupSwitch) View(ctx context.Context, fn func(billing.Tx) error) error {
	return s.Store.View(ctx, func(tx billing.Tx) error { return fn(switchedTx{tx, s, s.read.Load()}) })
}

func (s *rollupSwitch) Update(ctx context.Context, fn func(billing.Tx) error) error {
	return s.Store.Update(ctx, s.write(fn))
}

func (s *rollupSwitch) Batch(ctx context.Context, fn func(billing.Tx) error) error {
	return s.Store.Batch(ctx, s.write(fn))
}

// write wraps fn, a write, as s keeps rollups (tracked).
func (s *rollupSwitch) write(fn func(billing.Tx) error) func(billing.Tx) error {
	if s.tracked {
		return fn
	}
	return func(tx billing.Tx) error { return fn(switchedTx{tx, s, true}) }
}

// TestUsageRollupsAgreeWithTheScan stores random usage events (values with
// 12 decimal places, numbers written with different scales, decimal
// strings, non-numbers, missing values; timestamps to the second over
// 16 hours, sent out of order, so many arrive late; supersede by
// customerEventId within and across batches; several aliases) and checks
// that every calculation answers the same, to the last digit of its JSON,
// from the hourly rollups as from a scan of the events: COUNT, SUM, MIN and
// MAX (read from rollups when plain), with filters and groups (scanned),
// and UNIQUE and LATEST, over periods aligned to hours or not, after every
// batch. On memstore with rollups switched on, and (with
// BILLINGD_TEST_POSTGRES) on PostgreSQL, whose Tx keeps them.
// BILLING_ROLLUP_SEED replays a seed.
//
// Long on purpose: the world, the metrics and the comparison belong together.
func TestUsageRollupsAgreeWithTheScan(t *testing.T) {
	t.Parallel()
	seed := billingtest.Seed(t, "BILLING_ROLLUP_SEED")
	stores := map[string]func(testing.TB) billing.Store{
		"memstore": func(tb testing.TB) billing.Store {
			s := memstore.New()
			tb.Cleanup(func() { _ = s.Close() })
			return s
		},
	}
	if pgtest.Enabled() {
		stores["postgres"] = func(tb testing.TB) billing.Store { return pgtest.Open(tb, nil) }
	}
	for name, open := range stores {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			sw := &rollupSwitch{Store: open(t)}
			r := rand.New(rand.NewPCG(seed, 7))
			compared := checkRollupWorld(t, sw, r)
			if sw.rollupReads.Load() == 0 {
				t.Fatal("no calculation read the rollups")
			}
			t.Logf("seed %d: %d calculations compared, %d rollup reads", seed, compared, sw.rollupReads.Load())
		})
	}
}

// tiePool are numbers equal to others written differently, the greatest
// and least of the world among them.
var tiePool = []string{"-1000", "-1000.0", "-1000.000000000000", "1000", "1000.0", "1000.00", "1", "1.0", "0.00000000001", "0.000000000010"}

// rollupMetrics creates the metrics the rollup world is calculated with:
// each aggregation plain, with a property filter, and grouped.
func rollupMetrics(t *testing.T, svc *billing.Service, acct string) []*billing.UsageMetric {
	t.Helper()
	var metrics []*billing.UsageMetric
	for _, agg := range []billing.AggregationType{billing.AggregationCount, billing.AggregationSum, billing.AggregationMin, billing.AggregationMax,
		billing.AggregationUnique, billing.AggregationLatest} {
		for variant := range 3 {
			p := billing.UsageMetricParams{Name: fmt.Sprintf("%s-%d", agg, variant), MetricType: billing.MetricTypeSimple, EventType: "gauge", AggregationType: agg}
			if agg != billing.AggregationCount {
				p.AggregationProperty = "v"
			}
			switch variant {
			case 1:
				p.PropertyFilters = map[string][]string{"region": {"eu"}}
			case 2:
				p.MetricType, p.GroupingProperty = billing.MetricTypeGrouped, "zone"
			}
			metrics = append(metrics, createMetric(t, svc, acct, p))
		}
	}
	return metrics
}

// rollupWorldStart is the first instant of the rollup worlds' events.
var rollupWorldStart = time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)

// newRollupWorld returns a Service on sw whose clock is days after
// rollupWorldStart, its account, a customer with aliases c-a and c-b, and
// the metrics the world is calculated with (rollupMetrics).
func newRollupWorld(t *testing.T, sw *rollupSwitch, days int) (*billing.Service, string, *billing.Customer, []*billing.UsageMetric) {
	t.Helper()
	svc, clock := billingtest.NewService(t, billingtest.WithStore(sw))
	acct := billingtest.Account(t, svc, "acme")
	clock.Set(rollupWorldStart.AddDate(0, 0, days))
	c := must(svc.CreateCustomer(context.Background(), acct, billing.CustomerParams{LegalName: "C", CustomerAliases: []string{"c-a", "c-b"}})).of(t, "CreateCustomer")
	return svc, acct, c, rollupMetrics(t, svc, acct)
}

// checkRollupWorld ingests random batches into sw and compares the two
// paths after each; it returns the number of calculations compared.
//
// Long on purpose: the batches and the calculations after each are one loop.
func checkRollupWorld(t *testing.T, sw *rollupSwitch, r *rand.Rand) int {
	t.Helper()
	ctx := context.Background()
	svc, acct, c, metrics := newRollupWorld(t, sw, 10)
	start := rollupWorldStart
	const span = 16 * 3600 // seconds of events: many in each hour
	compared := 0
	for batch := range 12 {
		var b billing.UsageEventBatchParams
		for range 1 + r.IntN(60) {
			e, p := randomGaugeEvent(r, 0, start, []string{"c-a", "c-b", c.ID})
			at := start.Add(time.Duration(r.Int64N(span)) * time.Second)
			p.EventTimestamp = &at
			if _, frac, dot := strings.Cut(deref(e.value), "."); e.valueIsNumeric && len(frac) < 12 && r.IntN(2) == 0 {
				// The same number with one more digit: equal, written
				// differently (MIN and MAX answer the first in key order).
				v := *e.value + ".0"
				if dot {
					v = *e.value + "0"
				}
				p.EventProperties["v"] = billing.NumberProperty(billing.MustDecimal(v))
			}
			if r.IntN(3) == 0 { // few distinct numbers, many ways to write them: ties
				p.EventProperties["v"] = billing.NumberProperty(billing.MustDecimal(tiePool[r.IntN(len(tiePool))]))
			}
			b.Events = append(b.Events, p)
		}
		if _, err := svc.CreateUsageEventBatch(ctx, acct, b); err != nil {
			t.Fatalf("CreateUsageEventBatch: %v", err)
		}
		for range 6 {
			from := start.Add(time.Duration(r.Int64N(span/3600)) * time.Hour)
			if r.IntN(2) == 0 {
				from = from.Add(time.Duration(r.Int64N(3600)) * time.Second)
			}
			to := from.Add(time.Duration(1+r.Int64N(span/3600)) * time.Hour)
			if r.IntN(2) == 0 {
				to = to.Add(time.Duration(r.Int64N(3600)) * time.Second)
			}
			compared += compareRollupPaths(t, sw, svc, acct, c.ID, metrics, from, to, fmt.Sprint("batch ", batch))
		}
	}
	return compared
}

// compareRollupPaths calculates each of metrics for customer over [from,
// to) from the rollups and from a scan of sw's events, and reports every
// answer that differs in its JSON (when names the moment); it returns the
// number of calculations compared.
func compareRollupPaths(t *testing.T, sw *rollupSwitch, svc *billing.Service, acct, customer string, metrics []*billing.UsageMetric, from, to time.Time, when string) int {
	t.Helper()
	ctx := context.Background()
	for _, m := range metrics {
		p := billing.CalculateUsageParams{UsageMetricID: m.ID, CustomerAliases: []string{customer},
			PeriodStart: billing.FormatTimestamp(from), PeriodEnd: billing.FormatTimestamp(to)}
		sw.read.Store(true)
		rolled := must(svc.CalculateUsage(ctx, acct, p)).of(t, "CalculateUsage")
		sw.read.Store(false)
		scanned := must(svc.CalculateUsage(ctx, acct, p)).of(t, "CalculateUsage")
		a, _ := json.Marshal(rolled)
		b, _ := json.Marshal(scanned)
		if string(a) != string(b) {
			t.Errorf("%s, %s over [%s, %s):\nrollups %s\nscan    %s", when, m.Name, p.PeriodStart, p.PeriodEnd, a, b)
		}
	}
	return len(metrics)
}

// newMemRollupService returns a rollupSwitch on a fresh memstore, a
// Service on it whose clock is at now, its account and a customer.
func newMemRollupService(t *testing.T, now time.Time) (*rollupSwitch, *billing.Service, string, *billing.Customer) {
	t.Helper()
	mem := memstore.New()
	t.Cleanup(func() { _ = mem.Close() })
	sw := &rollupSwitch{Store: mem}
	svc, clock := billingtest.NewService(t, billingtest.WithStore(sw))
	acct := billingtest.Account(t, svc, "acme")
	clock.Set(now)
	c := must(svc.CreateCustomer(context.Background(), acct, billing.CustomerParams{LegalName: "C"})).of(t, "CreateCustomer")
	return sw, svc, acct, c
}

// TestUsageRollupsBreakTiesAsTheScan: equal numbers written differently
// ("1000.00", "1000.0", "1000"), the later in time sent first: MIN and MAX
// answer the one a scan meets first (the earliest), from rollups too.
func TestUsageRollupsBreakTiesAsTheScan(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	hour := time.Date(2024, 3, 1, 10, 0, 0, 0, time.UTC)
	sw, svc, acct, c := newMemRollupService(t, hour.Add(48*time.Hour))
	for i, v := range []string{"1000.00", "1000.0", "1000", "-1000.00", "-1000.0", "-1000"} {
		at := hour.Add(time.Duration(50-i*5) * time.Minute) // each earlier than the one before
		must(svc.CreateUsageEvent(ctx, acct, billing.UsageEventParams{CustomerAlias: c.ID, EventType: "e", EventTimestamp: &at,
			EventProperties: billing.EventProperties{"v": billing.NumberProperty(billing.MustDecimal(v))}})).of(t, "CreateUsageEvent")
	}
	for agg, want := range map[billing.AggregationType]string{billing.AggregationMax: "1000", billing.AggregationMin: "-1000"} {
		m := createMetric(t, svc, acct, billing.UsageMetricParams{Name: string(agg), MetricType: billing.MetricTypeSimple, EventType: "e", AggregationType: agg, AggregationProperty: "v"})
		p := billing.CalculateUsageParams{UsageMetricID: m.ID, CustomerAliases: []string{c.ID},
			PeriodStart: billing.FormatTimestamp(hour.Add(-time.Hour)), PeriodEnd: billing.FormatTimestamp(hour.Add(2 * time.Hour))}
		for _, rollups := range []bool{true, false} {
			sw.read.Store(rollups)
			got := must(svc.CalculateUsage(ctx, acct, p)).of(t, "CalculateUsage")
			if got.Value.String() != want {
				t.Errorf("%s (rollups %t) = %s, want %s (the earliest event's)", agg, rollups, got.Value, want)
			}
		}
	}
	if sw.rollupReads.Load() == 0 {
		t.Fatal("no calculation read the rollups")
	}
}
