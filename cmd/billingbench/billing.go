package main

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/billingd/billing"
	"github.com/billingd/billing/storage/boltstore"
)

// eventsPerSchedule is the usage of each P6 schedule in its period.
const eventsPerSchedule = 100

// measureP6: RunBilling over b.cfg.schedules active schedules, each with a
// monthly FIXED price in advance and a LINEAR usage price in arrears and
// 100 events in last month, while GET /usage-metrics is served. The target
// (30 s for 10,000 schedules) scales with the number of schedules.
func measureP6(ctx context.Context, b *bench) ([]row, error) {
	path := b.path("p6")
	now := time.Now().UTC()
	month := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC).AddDate(0, -1, 0)
	// Setting up is not measured: sync off while creating.
	srv, err := startServer(ctx, path, &boltstore.Options{NoSync: true})
	if err != nil {
		return nil, err
	}
	b.progress("creating %d schedules with %d events each", b.cfg.schedules, eventsPerSchedule)
	err = setUpSchedules(ctx, srv, b.cfg.schedules, month)
	if err = cmp.Or(err, srv.stop()); err != nil {
		return nil, err
	}
	srv, err = startServer(ctx, path, nil)
	if err != nil {
		return nil, err
	}
	defer srv.stop()

	loadCtx, stopLoad := context.WithCancel(ctx)
	type listResult struct {
		res loadResult
		err error
	}
	listed := make(chan listResult, 1)
	l := load{conns: 4, requests: 1 << 30, limit: time.Hour, status: http.StatusOK, auth: srv.auth,
		request: func(int) (string, string, []byte) { return http.MethodGet, "/usage-metrics?limit=20", nil }}
	go func() {
		r, err := l.run(loadCtx, srv.url)
		listed <- listResult{r, err}
	}()
	start := time.Now()
	run, err := srv.svc.RunBilling(ctx, now)
	elapsed := time.Since(start)
	stopLoad()
	lr := <-listed
	if err != nil {
		return nil, err
	}
	if lr.err != nil {
		return nil, lr.err
	}
	if len(run.Failures) > 0 {
		return nil, fmt.Errorf("%d schedules failed, the first: %s", len(run.Failures), run.Failures[0].Error)
	}
	if run.SchedulesVisited < b.cfg.schedules {
		return nil, fmt.Errorf("RunBilling visited %d schedules, want %d", run.SchedulesVisited, b.cfg.schedules)
	}
	target := 30 * float64(b.cfg.schedules) / 10_000
	return []row{
		{id: "P6", name: fmt.Sprintf("RunBilling over %d schedules", b.cfg.schedules), value: elapsed.Seconds(), unit: "s",
			target: target, targetUnit: "s", note: fmt.Sprintf("%d invoices created; target 30 s per 10,000 schedules", run.InvoicesCreated)},
		{id: "P6", name: "p99 GET /usage-metrics during the run", value: ms(lr.res.p99), unit: "ms",
			target: 50, targetUnit: "ms"},
	}, nil
}

// setUpSchedules creates n customers, each with an active schedule from
// month on a FIXED and a LINEAR usage price, and 100 events in month.
func setUpSchedules(ctx context.Context, srv *server, n int, month time.Time) error {
	svc, acct := srv.svc, srv.account
	product, err := svc.CreateProduct(ctx, acct, billing.CreateProductParams{Name: "Platform"})
	if err != nil {
		return err
	}
	metric, err := svc.CreateUsageMetric(ctx, acct, billing.CreateUsageMetricParams{UsageMetricParams: billing.UsageMetricParams{
		Name: "API calls", MetricType: billing.MetricTypeSimple, EventType: "api_call", AggregationType: billing.AggregationCount}})
	if err != nil {
		return err
	}
	fee, rate := billing.MustDecimal("100.00"), billing.MustDecimal("0.25")
	fixed, err := svc.CreatePrice(ctx, acct, billing.CreatePriceParams{ProductID: product.ID, Name: "Plan", Currency: billing.CurrencyUSD,
		BillingFrequency: billing.FrequencyMonthly, BillingType: billing.BillingTypeInAdvance,
		Structure: billing.PriceStructure{PricingType: billing.PricingFixed, Price: &fee}})
	if err != nil {
		return err
	}
	usage, err := svc.CreatePrice(ctx, acct, billing.CreatePriceParams{ProductID: product.ID, Name: "API calls", Currency: billing.CurrencyUSD,
		BillingFrequency: billing.FrequencyMonthly, BillingType: billing.BillingTypeInArrears,
		Structure: billing.PriceStructure{PricingType: billing.PricingLinear, PricePerUnit: &rate, UsageMetricID: metric.ID}})
	if err != nil {
		return err
	}
	start := billing.DateOf(month)
	no := false
	var batch billing.UsageEventBatchParams
	for i := range n {
		c, err := svc.CreateCustomer(ctx, acct, billing.CustomerParams{LegalName: fmt.Sprintf("Customer %05d", i), TaxStatus: billing.TaxStatusTaxed,
			Contacts: []billing.Contact{{Name: "Ann", Email: "ann@example.com", BillingPreference: billing.BillingPreferencePrimary}}})
		if err != nil {
			return err
		}
		_, err = svc.CreateBillingSchedule(ctx, acct, billing.BillingScheduleParams{CustomerID: c.ID, StartDate: &start,
			AutoIssueInvoices: &no, IsDraft: &no, Phases: []billing.PhaseParams{{StartDate: &start, PriceIDs: []string{fixed.ID, usage.ID}}}})
		if err != nil {
			return err
		}
		for j := range eventsPerSchedule {
			ts := month.Add(time.Duration(j) * time.Hour)
			batch.Events = append(batch.Events, billing.UsageEventParams{CustomerAlias: c.ID, EventType: "api_call", EventTimestamp: &ts})
		}
		if len(batch.Events) >= batchSize || i == n-1 {
			if _, err := svc.CreateUsageEventBatch(ctx, acct, batch); err != nil {
				return err
			}
			batch.Events = batch.Events[:0]
		}
	}
	return nil
}
