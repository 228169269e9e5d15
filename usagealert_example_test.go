package billing_test

import (
	"context"
	"fmt"
	"time"

	"github.com/billingd/billing"
	"github.com/billingd/billing/storage/memstore"
)

// An alert at 80 GB of a customer's monthly storage: usage is ingested,
// EvaluateAlerts (billingd runs it every second) finds the threshold
// reached and queues one USAGE_THRESHOLD_REACHED notification; later
// events of the month notify nothing more.
func ExampleService_EvaluateAlerts() {
	ctx := context.Background()
	store := memstore.New()
	defer store.Close()
	svc, err := billing.New(store, &billing.Config{
		Now: func() time.Time { return time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC) },
	})
	if err != nil {
		panic(err)
	}
	account, _ := svc.CreateAccount(ctx, billing.CreateAccountParams{Name: "Acme"})
	customer, _ := svc.CreateCustomer(ctx, account.ID, billing.CustomerParams{LegalName: "Initech", CustomerAliases: []string{"initech"}})
	metric, _ := svc.CreateUsageMetric(ctx, account.ID, billing.CreateUsageMetricParams{UsageMetricParams: billing.UsageMetricParams{
		Name: "Storage", MetricType: billing.MetricTypeSimple, EventType: "storage_used",
		AggregationType: billing.AggregationSum, AggregationProperty: "gigabytes",
	}})
	_, _ = svc.CreateNotificationPolicy(ctx, account.ID, billing.CreateNotificationPolicyParams{
		Name: "ops", Channel: billing.ChannelEmail, Recipients: []string{"ops@example.com"},
		NotificationTypes: []billing.NotificationType{billing.NotificationUsageThresholdReached},
	})
	threshold := billing.MustDecimal("80")
	if _, err := svc.CreateUsageAlert(ctx, account.ID, billing.CreateUsageAlertParams{
		Kind: billing.UsageAlertUsage, CustomerID: customer.ID, UsageMetricID: metric.ID, Threshold: &threshold,
	}); err != nil {
		panic(err)
	}
	for _, gb := range []string{"50", "35", "10"} {
		_, err := svc.CreateUsageEvent(ctx, account.ID, billing.UsageEventParams{
			CustomerAlias: "initech", EventType: "storage_used",
			EventProperties: billing.EventProperties{"gigabytes": billing.NumberProperty(billing.MustDecimal(gb))},
		})
		if err != nil {
			panic(err)
		}
		run, err := svc.EvaluateAlerts(ctx)
		if err != nil {
			panic(err)
		}
		fmt.Printf("after %s GB: %d notified\n", gb, run.Notified)
	}
	page, _ := svc.ListDeliveries(ctx, account.ID, billing.DeliveryFilter{}, billing.ListParams{})
	for _, d := range page.Items {
		fmt.Println(d.NotificationType, d.Recipients)
	}
	// Output:
	// after 50 GB: 0 notified
	// after 35 GB: 1 notified
	// after 10 GB: 0 notified
	// USAGE_THRESHOLD_REACHED [ops@example.com]
}
