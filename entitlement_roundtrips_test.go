package billing_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
	"github.com/billingd/billing/storage/pgstore"
	"github.com/billingd/billing/storage/pgstore/pgtest"
)

// TestEntitlementRoundTripsOnPostgres counts the requests an entitlement
// answer sends to PostgreSQL: once the Service has answered for the
// customer, an answer (one feature, or the list) reads everything ahead in
// one request (readahead.go), which also begins the transaction (a read
// begins with its first request), the month's usage included (its whole
// UTC days' totals and the hourly rollups of the hours around them:
// usagerollupday.go, few enough rows for the hint, see maxHintRange), and
// COMMIT: two requests, for a customer with two metered features (a SUM
// and a COUNT of 1,500 events in the month: 30 day totals and 24 hourly
// rollups each) and a boolean one in a time zone whose months start at half past an hour (Asia/Kolkata: the
// events of the partial hours are read too). Between answers, a supersede
// and a late event change the usage: the answers stay those of a second
// Service, which has no hints.
func TestEntitlementRoundTripsOnPostgres(t *testing.T) {
	pgtest.Require(t)
	t.Parallel()
	var rt pgtest.RoundTrips
	store := pgtest.Open(t, &pgstore.Options{Tracer: &rt})
	f := newSched(t, billingtest.WithStore(store))
	f.clock.Set(ts("2024-08-15T00:00:00Z"))
	customer := f.zonedCustomer("Asia/Kolkata")
	kolkata, _ := time.LoadLocation("Asia/Kolkata")
	start := time.Date(2024, 7, 1, 0, 0, 0, 0, kolkata)
	for b := range 3 {
		var batch billing.UsageEventBatchParams
		for i := range 500 {
			j := b*500 + i
			batch.Events = append(batch.Events, callEvent(customer, fmt.Sprint("e", j), start.Add(time.Duration(j)*31*24*time.Hour/1500), j%7))
		}
		_, err := f.svc.CreateUsageEventBatch(f.ctx, f.account, batch)
		f.must(err)
	}
	pr := meteredPlan(f)
	f.schedule(customer, "2024-07-01", nil, phase("2024-07-01", pr))
	at := ts("2024-07-31T12:00:00Z")
	answer := func(svc *billing.Service) string { return entitlementAnswers(f, svc, customer, "n", at) }
	check := func(when string) {
		t.Helper()
		answer(f.svc) // learns the hint
		rt.Reset()
		got := answer(f.svc)
		n, trace := rt.Count(), rt.String()
		cold, _ := billingtest.NewService(t, billingtest.WithStore(store)) // no hints yet
		cold.Entitlements(f.ctx, f.account, "nobody", at)                  // its first request's own reads
		rt.Reset()
		want := answer(cold)
		if got != want {
			t.Errorf("%s: %s, without hints %s", when, got, want)
		}
		t.Logf("%s, without hints: %d requests:\n%s", when, rt.Count(), rt.String())
		if n > 2*2 {
			t.Errorf("%s: an entitlement answer and the list took %d requests, want 2 each (BEGIN and the reads, COMMIT):\n%s", when, n, trace)
		}
		t.Logf("%s: %d requests for two answers: %s", when, n, got)
	}
	check("after the schedule")
	_, err := f.svc.CreateUsageEventBatch(f.ctx, f.account, billing.UsageEventBatchParams{Events: []billing.UsageEventParams{
		callEvent(customer, "e10", start.Add(time.Hour), 1000),      // supersede
		callEvent(customer, "late", start.Add(30*time.Minute), 500), // late, in the partial first hour
	}})
	f.must(err)
	check("after a supersede and a late event")
}

// callEvent is an event "call" of alias with property n.
func callEvent(alias, id string, at time.Time, n int) billing.UsageEventParams {
	return billing.UsageEventParams{CustomerAlias: alias, EventType: "call", CustomerEventID: id, EventTimestamp: &at,
		EventProperties: billing.EventProperties{"n": billing.NumberProperty(billing.DecimalFromInt(int64(n)))}}
}

// meteredPlan creates a price granting "n" (a SUM of the events "call"'s
// property n, limit 100,000), "calls" (their COUNT, unlimited) and "sso".
func meteredPlan(f *sched) string {
	sum := createMetric(f.tb, f.svc, f.account, billing.UsageMetricParams{Name: "n", MetricType: billing.MetricTypeSimple,
		EventType: "call", AggregationType: billing.AggregationSum, AggregationProperty: "n"})
	count := createMetric(f.tb, f.svc, f.account, billing.UsageMetricParams{Name: "calls", MetricType: billing.MetricTypeSimple,
		EventType: "call", AggregationType: billing.AggregationCount})
	pr, err := f.svc.CreatePrice(f.ctx, f.account, billing.CreatePriceParams{ProductID: f.product, Name: "Plan", Currency: billing.CurrencyUSD,
		BillingFrequency: billing.FrequencyMonthly, BillingType: billing.BillingTypeInAdvance,
		Structure: billing.PriceStructure{PricingType: billing.PricingFixed, Price: dp("10.00")},
		Features: []billing.Feature{{FeatureKey: "n", UsageMetricID: sum.ID, Limit: dp("100000")},
			{FeatureKey: "calls", UsageMetricID: count.ID}, {FeatureKey: "sso"}}})
	f.must(err)
	return pr.ID
}

// entitlementAnswers is the entitlement of customer to feature and the
// list of its entitlements at instant at, as text.
func entitlementAnswers(f *sched, svc *billing.Service, customer, feature string, at time.Time) string {
	f.tb.Helper()
	all, err := svc.Entitlements(f.ctx, f.account, customer, at)
	f.must(err)
	one, err := svc.Entitlement(f.ctx, f.account, customer, feature, at)
	f.must(err)
	out := entitlementText(one)
	for i := range all {
		out += "; " + all[i].FeatureKey + " " + entitlementText(&all[i])
	}
	return out
}
