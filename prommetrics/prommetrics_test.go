package prommetrics_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
	"github.com/billingd/billing/prommetrics"
)

// TestMetricsOfAService: the documented metrics move with what the
// Service does: usage ingested, invoices created by the API and the engine,
// a billing run with one failure, store transactions, the outbox backlog.
//
// Long on purpose: one scenario walked in order; each metric is read after
// the step that moves it.
func TestMetricsOfAService(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	m := prommetrics.New(reg)
	svc, clock := billingtest.NewService(t, billingtest.WithStore(m.Store(billingtest.Store(t))),
		billingtest.WithConfig(billing.Config{Observer: m.Observer()}))
	m.WatchOutbox(svc)
	acct := billingtest.Account(t, svc, "acme")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}

	_, err := svc.CreateUsageEventBatch(ctx, acct, billing.UsageEventBatchParams{Events: []billing.UsageEventParams{
		{CustomerAlias: "a", EventType: "t"}, {CustomerAlias: "a", EventType: "t"}}})
	must(err)
	_, err = svc.CreateUsageEvent(ctx, acct, billing.UsageEventParams{CustomerAlias: "a", EventType: "t"})
	must(err)

	_, err = svc.CreateNotificationPolicy(ctx, acct, billing.CreateNotificationPolicyParams{Name: "ops", Channel: billing.ChannelWebhook,
		Recipients: []string{"https://hooks.example.com/x"}})
	must(err)
	c, err := svc.CreateCustomer(ctx, acct, billing.CustomerParams{LegalName: "Globex", CustomerAliases: []string{"globex"}})
	must(err)
	_, err = svc.CreateInvoice(ctx, acct, billing.InvoiceParams{Currency: billing.CurrencyGBP, CustomerID: c.ID})
	must(err)

	product, err := svc.CreateProduct(ctx, acct, billing.CreateProductParams{Name: "Platform"})
	must(err)
	fee := billing.MustDecimal("10.00")
	price, err := svc.CreatePrice(ctx, acct, billing.CreatePriceParams{ProductID: product.ID, Name: "Fee", Currency: billing.CurrencyGBP,
		BillingFrequency: billing.FrequencyMonthly, BillingType: billing.BillingTypeInAdvance,
		Structure: billing.PriceStructure{PricingType: billing.PricingFixed, Price: &fee}})
	must(err)
	start := billing.DateOf(clock.Now())
	no := false
	var schedules []string
	for range 2 {
		sc, err := svc.CreateBillingSchedule(ctx, acct, billing.BillingScheduleParams{CustomerID: c.ID, StartDate: &start,
			AutoIssueInvoices: &no, IsDraft: &no, Phases: []billing.PhaseParams{{StartDate: &start, PriceIDs: []string{price.ID}}}})
		must(err)
		schedules = append(schedules, sc.ID)
	}
	// The first run bills both schedules; the second fails on both: they
	// were cancelled to end in two months, and their customer archived
	// before they billed their last periods.
	_, err = svc.RunBilling(ctx, clock.Now())
	must(err)
	end := start.AddDays(60)
	for _, id := range schedules {
		_, err = svc.CancelBillingSchedule(ctx, acct, id, billing.CancelBillingScheduleParams{At: &end})
		must(err)
	}
	_, err = svc.ArchiveCustomer(ctx, acct, c.ID)
	must(err)
	clock.Advance(40 * 24 * time.Hour)
	run, err := svc.RunBilling(ctx, clock.Now())
	must(err)
	if len(run.Failures) != 2 {
		t.Fatalf("failures %+v, want 2", run.Failures)
	}

	rec := httptest.NewRecorder()
	promhttp.HandlerFor(reg, promhttp.HandlerOpts{}).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	text := rec.Body.String()
	for _, want := range []string{
		"billingd_usage_events_ingested_total 3\n",
		"billingd_billing_runs_total 2\n",
		`billingd_invoices_created_total{source="api"} 1`,
		`billingd_invoices_created_total{source="engine"} 2`,
		`billingd_billing_failures_total{reason="invalid_state"} 2`,
		`billingd_billing_run_duration_seconds_count 2`,
		`billingd_store_transaction_duration_seconds_count{kind="update"}`,
		`billingd_store_transaction_duration_seconds_count{kind="batch"}`,
		`billingd_outbox_pending_deliveries `,
		`billingd_outbox_oldest_pending_age_seconds `,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	if strings.Contains(text, "billingd_outbox_pending_deliveries 0\n") {
		t.Error("the invoice notifications are not counted as pending deliveries")
	}
}
