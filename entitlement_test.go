package billing_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/billingd/billing"
)

// TestEntitlementsThroughSupersedeLateEventsPhasesAndZones: a metered
// feature's usage follows supersede and late events, resets at the
// billing period's boundary in the customer's time zone (UTC+14), and a
// phase change grants the new plan's features from the phase's start.
func TestEntitlementsThroughSupersedeLateEventsPhasesAndZones(t *testing.T) {
	t.Parallel()
	f := newSched(t)
	f.clock.Set(ts("2024-06-01T00:00:00Z"))
	customer := f.zonedCustomer("Pacific/Kiritimati")
	m := createMetric(t, f.svc, f.account, billing.UsageMetricParams{Name: "calls", MetricType: billing.MetricTypeSimple,
		EventType: "call", AggregationType: billing.AggregationSum, AggregationProperty: "n"})
	plan := func(name, limit string, features ...billing.Feature) string {
		p, err := f.svc.CreatePrice(f.ctx, f.account, billing.CreatePriceParams{ProductID: f.product, Name: name, Currency: billing.CurrencyUSD,
			BillingFrequency: billing.FrequencyMonthly, BillingType: billing.BillingTypeInAdvance,
			Structure: billing.PriceStructure{PricingType: billing.PricingFixed, Price: dp("10.00")},
			Features:  append(features, billing.Feature{FeatureKey: "api_calls", UsageMetricID: m.ID, Limit: dp(limit)})})
		f.must(err)
		return p.ID
	}
	basic := plan("Basic", "100")
	pro := plan("Pro", "1000", billing.Feature{FeatureKey: "sso"})
	first := phase("2024-01-01", basic)
	first.EndDate = date("2024-02-29")
	f.schedule(customer, "2024-01-01", nil, first, phase("2024-03-01", pro))
	calls := func(id, at, n string) {
		t.Helper()
		tm := ts(at)
		_, err := f.svc.CreateUsageEvent(f.ctx, f.account, billing.UsageEventParams{CustomerAlias: customer, EventType: "call",
			CustomerEventID: id, EventTimestamp: &tm, EventProperties: billing.EventProperties{"n": billing.NumberProperty(billing.MustDecimal(n))}})
		f.must(err)
	}
	want := func(key, at, wantText string) {
		t.Helper()
		e, err := f.svc.Entitlement(f.ctx, f.account, customer, key, ts(at))
		f.must(err)
		if got := entitlementText(e); got != wantText {
			t.Errorf("%s at %s: %s, want %s", key, at, got, wantText)
		}
	}
	calls("x", "2024-01-10T00:00:00Z", "60")
	want("api_calls", "2024-01-20T00:00:00Z", "true limit 100 usage 60 remaining 40 resets 2024-01-31T10:00:00Z")
	want("sso", "2024-01-20T00:00:00Z", "false limit - usage - remaining - resets -")
	calls("x", "2024-01-10T00:00:00Z", "120") // supersede: over the limit
	want("api_calls", "2024-01-20T00:00:00Z", "false limit 100 usage 120 remaining 0 resets 2024-01-31T10:00:00Z")
	calls("late", "2024-01-05T00:00:00Z", "5") // a late event of the same period
	calls("feb", "2024-01-31T11:00:00Z", "7")  // February 1, 01:00 in Kiritimati
	want("api_calls", "2024-01-31T09:30:00Z", "false limit 100 usage 125 remaining 0 resets 2024-01-31T10:00:00Z")
	want("api_calls", "2024-01-31T10:30:00Z", "true limit 100 usage 7 remaining 93 resets 2024-02-29T10:00:00Z")
	// The Pro phase starts on March 1 in Kiritimati: 2024-02-29T10:00Z.
	want("sso", "2024-02-29T09:59:59Z", "false limit - usage - remaining - resets -")
	want("sso", "2024-02-29T10:00:00Z", "true limit - usage - remaining - resets -")
	want("api_calls", "2024-02-29T10:00:00Z", "true limit 1000 usage 0 remaining 1000 resets 2024-03-31T10:00:00Z")
	all, err := f.svc.Entitlements(f.ctx, f.account, customer, ts("2024-03-10T00:00:00Z"))
	f.must(err)
	if len(all) != 2 || all[0].FeatureKey != "api_calls" || all[1].FeatureKey != "sso" {
		t.Errorf("entitlements in March: %+v", all)
	}
	if _, err := f.svc.Entitlements(f.ctx, f.account, "nobody", ts("2024-03-10T00:00:00Z")); billing.CodeOf(err) != billing.CodeNotFound {
		t.Errorf("unknown customer: %v", err)
	}
}

func entitlementText(e *billing.Entitlement) string {
	dec := func(d *billing.Decimal) string {
		if d == nil {
			return "-"
		}
		return d.Canonical()
	}
	resets := "-"
	if e.ResetsAt != nil {
		resets = billing.FormatTimestamp(*e.ResetsAt)
	}
	return fmt.Sprintf("%t limit %s usage %s remaining %s resets %s", e.HasAccess, dec(e.Limit), dec(e.Usage), dec(e.Remaining), resets)
}

// TestPriceFeaturesValidation: bad features answer validation_failed
// naming the field.
func TestPriceFeaturesValidation(t *testing.T) {
	t.Parallel()
	f := newSched(t)
	for name, c := range map[string]struct {
		features []billing.Feature
		field    string
	}{
		"MissingKey":     {[]billing.Feature{{}}, "features[0].featureKey"},
		"DuplicateKey":   {[]billing.Feature{{FeatureKey: "a"}, {FeatureKey: "a"}}, "features[1].featureKey"},
		"LimitOnBoolean": {[]billing.Feature{{FeatureKey: "a", Limit: dp("5")}}, "features[0].limit"},
		"NegativeLimit":  {[]billing.Feature{{FeatureKey: "a", UsageMetricID: f.metric("x"), Limit: dp("-1")}}, "features[0].limit"},
		"UnknownMetric":  {[]billing.Feature{{FeatureKey: "a", UsageMetricID: "nope"}}, "features[0].usageMetricId"},
	} {
		_, err := f.svc.CreatePrice(f.ctx, f.account, billing.CreatePriceParams{ProductID: f.product, Name: "P", Currency: billing.CurrencyUSD,
			BillingFrequency: billing.FrequencyMonthly, BillingType: billing.BillingTypeInAdvance,
			Structure: billing.PriceStructure{PricingType: billing.PricingFixed, Price: dp("1.00")}, Features: c.features})
		if billing.CodeOf(err) != billing.CodeValidationFailed || !slices.Contains(fieldsOf(err), c.field) {
			t.Errorf("%s: %v, want validation_failed naming %s", name, err, c.field)
		}
	}
}
