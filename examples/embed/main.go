// Command embed runs the billing engine inside a program of its own, with
// no HTTP server: a bbolt file in a temporary directory, one account and
// one usage metric.
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/billingd/billing"
	"github.com/billingd/billing/storage/boltstore"
)

func main() {
	if err := run(context.Background()); err != nil {
		log.Fatal(err)
	}
}

// run opens a store, creates an account and a metric and prints them.
func run(ctx context.Context) error {
	dir, err := os.MkdirTemp("", "billing-embed-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	store, err := boltstore.Open(filepath.Join(dir, "billing.db"), nil)
	if err != nil {
		return err
	}
	defer store.Close()
	svc, err := billing.New(store, nil)
	if err != nil {
		return err
	}

	account, err := svc.CreateAccount(ctx, billing.CreateAccountParams{Name: "Acme"})
	if err != nil {
		return err
	}
	metric, err := svc.CreateUsageMetric(ctx, account.ID, billing.CreateUsageMetricParams{
		UsageMetricParams: billing.UsageMetricParams{
			Name:            "API calls",
			MetricType:      billing.MetricTypeSimple,
			EventType:       "api_call",
			AggregationType: billing.AggregationCount,
		},
	})
	if err != nil {
		return err
	}
	fmt.Printf("account %s (%s)\n", account.ID, account.Name)
	fmt.Printf("metric  %s (%s, %s of %q events)\n", metric.ID, metric.Name, metric.AggregationType, metric.EventType)
	return nil
}
