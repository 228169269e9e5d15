package billing_test

import (
	"context"
	"fmt"
	"time"

	"github.com/billingd/billing"
	"github.com/billingd/billing/storage/memstore"
)

// A Service on the in-memory store: create an account, an API key and a usage
// metric, then list the account's metrics.
func Example() {
	ctx := context.Background()
	store := memstore.New()
	defer store.Close()
	svc, err := billing.New(store, &billing.Config{
		// Fixed clock for a deterministic example; leave Now unset in
		// production.
		Now: func() time.Time { return time.Date(2024, 7, 30, 12, 0, 0, 0, time.UTC) },
	})
	if err != nil {
		panic(err)
	}
	account, err := svc.CreateAccount(ctx, billing.CreateAccountParams{Name: "Acme"})
	if err != nil {
		panic(err)
	}
	key, err := svc.CreateAPIKey(ctx, account.ID)
	if err != nil {
		panic(err)
	}
	if _, err := svc.Authenticate(ctx, key.ID, key.Secret); err != nil {
		panic(err)
	}
	_, err = svc.CreateUsageMetric(ctx, account.ID, billing.CreateUsageMetricParams{
		UsageMetricParams: billing.UsageMetricParams{
			Name:                "Storage",
			MetricType:          billing.MetricTypeSimple,
			EventType:           "storage_used",
			AggregationType:     billing.AggregationSum,
			AggregationProperty: "gigabytes",
			Unit:                "GB",
		},
	})
	if err != nil {
		panic(err)
	}
	page, err := svc.ListUsageMetrics(ctx, account.ID, billing.UsageMetricFilter{}, billing.ListParams{})
	if err != nil {
		panic(err)
	}
	for _, m := range page.Items {
		fmt.Println(m.Name, m.AggregationType, m.AggregationProperty, m.CreatedAt.Format(time.RFC3339))
	}
	fmt.Println("total:", page.TotalResultSize)
	// Output:
	// Storage SUM gigabytes 2024-07-30T12:00:00Z
	// total: 1
}

// Invalid requests report every invalid field at once, with stable codes.
func ExampleCodeOf() {
	svc, _ := billing.New(memstore.New(), nil)
	_, err := svc.CreateUsageMetric(context.Background(), "any-account", billing.CreateUsageMetricParams{
		UsageMetricParams: billing.UsageMetricParams{Name: "Calls", MetricType: "SIMPLE", AggregationType: "SUM"},
	})
	fmt.Println(billing.CodeOf(err))
	for _, e := range billing.Errors(err) {
		fmt.Printf("%s: %s\n", e.Field, e.Message)
	}
	// Output:
	// validation_failed
	// eventType: eventType is required
	// aggregationProperty: aggregationProperty is required for SUM metrics
}
