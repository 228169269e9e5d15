package billing_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
)

// TestDayTotalsAgreeWithTheScan stores random usage events over six days
// and a half (values with 12 decimal places, numbers written with
// different scales, non-numbers, several aliases, many near a UTC
// midnight, some before the periods), sent out of order (late events),
// a third superseding an earlier one by customerEventId (a new value and a
// new time, often another day), the first batch before anything tracks
// the event type (so on bbolt and memstore the price's creation builds
// the hours from the events). After every batch it calculates
// every metric (COUNT, SUM, MIN, MAX, UNIQUE and LATEST; plain, with a
// property filter and grouped) over random periods of one hour to five
// days whose bounds fall on whole hours, on the half and three-quarter
// hours of time zones such as Asia/Kolkata and Asia/Kathmandu, or on any
// second, and checks that the answer from the day totals and hourly
// rollups equals that of a scan of the events, to the last digit of its
// JSON. On memstore and bbolt both as they keep rollups for a tracked
// event type (in place, hours only: keepsDays) and as a RollupTx (every
// series, in deltas, with day totals), and (with BILLINGD_TEST_POSTGRES)
// on PostgreSQL. BILLING_ROLLUP_SEED replays a seed.
func TestDayTotalsAgreeWithTheScan(t *testing.T) {
	t.Parallel()
	seed := billingtest.Seed(t, "BILLING_ROLLUP_SEED")
	for name, open := range realStores() {
		for _, tracked := range []bool{true, false} {
			if name == "postgres" && !tracked {
				continue // its own Tx is a RollupTx
			}
			t.Run(fmt.Sprintf("%s/tracked=%t", name, tracked), func(t *testing.T) {
				t.Parallel()
				sw := &rollupSwitch{Store: open(t), tracked: tracked}
				compared := checkDayWorld(t, sw, rand.New(rand.NewPCG(seed, 57)))
				// Day totals are kept through a RollupTx only (keepsDays).
				switch days := sw.dayReads.Load(); {
				case (name == "postgres" || !tracked) && days == 0:
					t.Fatal("no calculation read the day totals")
				case name != "postgres" && tracked && days > 0:
					t.Fatalf("%d reads of day totals where none are kept", days)
				case sw.rollupReads.Load() == 0:
					t.Fatal("no calculation read the rollups")
				}
				t.Logf("seed %d: %d calculations compared, %d reads of rollups, %d of them of day totals",
					seed, compared, sw.rollupReads.Load(), sw.dayReads.Load())
			})
		}
	}
}

// dayOffsets are the offsets from a whole hour of a random period's
// bounds: a whole hour, the half and three-quarter hours of some time
// zones; -1 stands for any second.
var dayOffsets = []time.Duration{0, 0, 30 * time.Minute, 45 * time.Minute, -1}

// dayBound returns instant at moved to one of dayOffsets past its hour.
func dayBound(r *rand.Rand, at time.Time) time.Time {
	switch off := dayOffsets[r.IntN(len(dayOffsets))]; off {
	case -1:
		return at.Add(time.Duration(r.Int64N(3600)) * time.Second)
	default:
		return at.Add(off)
	}
}

// checkDayWorld ingests random batches into sw and compares the answers
// from the rollups and from a scan after each; it returns the number of
// calculations compared.
//
// Long on purpose: the world, its batches and the comparison are one loop.
func checkDayWorld(t *testing.T, sw *rollupSwitch, r *rand.Rand) int {
	t.Helper()
	ctx := context.Background()
	svc, acct, c, metrics := newRollupWorld(t, sw, 30)
	start := rollupWorldStart
	const span = 6*24*3600 + 12*3600 // seconds of events
	ingest := func() {
		var b billing.UsageEventBatchParams
		for range 1 + r.IntN(80) {
			_, p := randomGaugeEvent(r, 0, start, []string{"c-a", "c-b", c.ID})
			at := start.Add(time.Duration(r.Int64N(span)-12*3600) * time.Second)
			if r.IntN(3) == 0 { // near a UTC midnight
				at = start.Add(time.Duration(r.IntN(7))*24*time.Hour + time.Duration(r.IntN(7200)-3600)*time.Second)
			}
			p.EventTimestamp, p.CustomerEventID = &at, ""
			if r.IntN(2) == 0 {
				p.CustomerEventID = fmt.Sprint("d", r.IntN(90))
			}
			if r.IntN(3) == 0 {
				p.EventProperties["v"] = billing.NumberProperty(billing.MustDecimal(tiePool[r.IntN(len(tiePool))]))
			}
			b.Events = append(b.Events, p)
		}
		if _, err := svc.CreateUsageEventBatch(ctx, acct, b); err != nil {
			t.Fatalf("CreateUsageEventBatch: %v", err)
		}
	}
	ingest() // before the price: tracking the event type builds its totals
	trackEventType(t, svc, acct, metrics[3].ID)
	compared := 0
	for batch := range 10 {
		ingest()
		for range 5 {
			from := dayBound(r, start.Add(time.Duration(r.IntN(6*24))*time.Hour))
			to := dayBound(r, from.Truncate(time.Hour).Add(time.Duration(1+r.IntN(5*24))*time.Hour))
			if !to.After(from) {
				to = from.Add(time.Hour)
			}
			compared += compareRollupPaths(t, sw, svc, acct, c.ID, metrics, from, to, fmt.Sprint("batch ", batch))
		}
	}
	return compared
}

// trackEventType creates a price granting a metered feature of metric, so
// that (on bbolt and memstore) the series of its event type keep rollups
// from then on, built from their events at once.
func trackEventType(t testing.TB, svc *billing.Service, acct, metric string) {
	t.Helper()
	ctx := context.Background()
	pd := must(svc.CreateProduct(ctx, acct, billing.CreateProductParams{Name: "Plan"})).of(t, "CreateProduct")
	ten := billing.MustDecimal("10.00")
	must(svc.CreatePrice(ctx, acct, billing.CreatePriceParams{ProductID: pd.ID, Name: "Plan", Currency: billing.CurrencyUSD,
		BillingFrequency: billing.FrequencyMonthly, BillingType: billing.BillingTypeInAdvance,
		Structure: billing.PriceStructure{PricingType: billing.PricingFixed, Price: &ten},
		Features:  []billing.Feature{{FeatureKey: "v", UsageMetricID: metric}}})).of(t, "CreatePrice")
}

// TestDayTotalsFollowASupersede: an event in the middle of one UTC day is
// superseded by one (same customerEventId) two days later, and another
// event of the first day stays: a SUM over the four days, read from day
// totals, counts the new value and not the old one, and so does a SUM
// over the first day alone.
func TestDayTotalsFollowASupersede(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	day := time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)
	sw, svc, acct, c := newMemRollupService(t, day.Add(10*24*time.Hour))
	m := createMetric(t, svc, acct, billing.UsageMetricParams{Name: "sum", MetricType: billing.MetricTypeSimple, EventType: "e",
		AggregationType: billing.AggregationSum, AggregationProperty: "v"})
	send := func(id string, at time.Time, v string) {
		must(svc.CreateUsageEvent(ctx, acct, billing.UsageEventParams{CustomerAlias: c.ID, EventType: "e", CustomerEventID: id, EventTimestamp: &at,
			EventProperties: billing.EventProperties{"v": billing.NumberProperty(billing.MustDecimal(v))}})).of(t, "CreateUsageEvent")
	}
	send("a", day.Add(12*time.Hour), "5")
	send("b", day.Add(13*time.Hour), "1")
	send("a", day.Add(60*time.Hour), "7") // supersedes the first, two days later
	sw.read.Store(true)
	for _, p := range []struct {
		days int
		want string
	}{{4, "8"}, {1, "1"}} {
		got := must(svc.CalculateUsage(ctx, acct, billing.CalculateUsageParams{UsageMetricID: m.ID, CustomerAliases: []string{c.ID},
			PeriodStart: billing.FormatTimestamp(day), PeriodEnd: billing.FormatTimestamp(day.Add(time.Duration(p.days) * 24 * time.Hour))})).of(t, "CalculateUsage")
		if got.Value.String() != p.want {
			t.Errorf("SUM over %d days = %s, want %s", p.days, got.Value, p.want)
		}
	}
	if sw.dayReads.Load() == 0 {
		t.Fatal("no calculation read the day totals")
	}
}

// BenchmarkTrackedUsageEventCommit is BenchmarkCreateUsageEventCommit with
// the event type tracked (a price grants a metered feature on a SUM of
// it), so that every commit keeps its hourly rollups on bbolt: the pages a
// commit writes for them (BENCHMARKS.md, "Day totals": with day totals
// too, 250 pages instead of 207, so bbolt keeps none).
//
//	go test -run '^$' -bench TrackedUsageEventCommit -benchtime 200x .
func BenchmarkTrackedUsageEventCommit(b *testing.B) {
	benchUsageCommit(b, func(svc *billing.Service, acct string) {
		m := createMetric(b, svc, acct, billing.UsageMetricParams{Name: "amount", MetricType: billing.MetricTypeSimple,
			EventType: "api_calls0", AggregationType: billing.AggregationSum, AggregationProperty: "amount"})
		trackEventType(b, svc, acct, m.ID)
	})
}
