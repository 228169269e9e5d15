package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/billingd/billing"
	"github.com/billingd/billing/storage/boltstore"
	"github.com/jackc/pgx/v5"
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
	l := load{conns: 4, requests: 1 << 30, limit: time.Hour, status: http.StatusOK, auth: srv.auth, completed: new(atomic.Int64),
		request: func(int) (string, string, []byte) { return http.MethodGet, "/usage-metrics?limit=20", nil }}
	go func() {
		r, err := l.run(loadCtx, srv.url)
		listed <- listResult{r, err}
	}()
	start := time.Now()
	run, err := srv.svc.RunBilling(ctx, now)
	elapsed := time.Since(start)
	awaitAnswer(ctx, &l)
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
	pl, err := createPlan(ctx, srv)
	if err != nil {
		return err
	}
	fixed, usage := pl.fixed, pl.usage
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
			AutoIssueInvoices: &no, IsDraft: &no, Phases: []billing.PhaseParams{{StartDate: &start, PriceIDs: []string{fixed, usage}}}})
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

// measureP9: RunBilling over b.cfg.schedules schedules like P6's, on
// PostgreSQL, as billingd instances on one database run it
// (severalInstances): first one instance, then, on an identical copy of
// the database, two instances (two Services, each with its own pool) at
// once, sharing the schedules out through the engine's leases. Each run
// must create each invoice once; GET /usage-metrics is served by the first
// instance during both. The target (60 s for 10,000 schedules) scales with
// the number of schedules.
func measureP9(ctx context.Context, b *bench) ([]row, error) {
	name := fmt.Sprintf("RunBilling over %d schedules on PostgreSQL", b.cfg.schedules)
	now := time.Now().UTC()
	month := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC).AddDate(0, -1, 0)
	var shared billing.Config
	severalInstances(&shared)
	onePath, twoPath := b.path("p9-one"), b.path("p9-two")
	one, err := startServerWith(ctx, onePath, nil, shared, "", "")
	if err != nil {
		return nil, err
	}
	defer one.stop()
	b.progress("creating %d schedules with %d events each", b.cfg.schedules, eventsPerSchedule)
	if err := setUpSchedules(ctx, one, b.cfg.schedules, month); err != nil {
		return nil, err
	}
	if err := cloneSchema(ctx, onePath, twoPath); err != nil {
		return nil, err
	}
	b.progress("one instance")
	oneTime, oneP99, oneCPU, err := timedRuns(ctx, b, one, now, one.svc)
	if err != nil {
		return nil, err
	}
	two, err := startServerWith(ctx, twoPath, nil, shared, "", "")
	if err != nil {
		return nil, err
	}
	defer two.stop()
	st, err := openStore(ctx, twoPath, nil)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	other, err := billing.New(st, &shared)
	if err != nil {
		return nil, err
	}
	b.progress("two instances at once")
	twoTime, twoP99, twoCPU, err := timedRuns(ctx, b, two, now, two.svc, other)
	if err != nil {
		return nil, err
	}
	target := 60 * float64(b.cfg.schedules) / 10_000
	note := "each invoice created once; target 60 s per 10,000 schedules"
	return []row{
		{id: "P9", name: name + ", one instance", value: oneTime.Seconds(), unit: "s", target: target, targetUnit: "s", note: note + "; " + oneCPU},
		{id: "P9", name: "p99 GET /usage-metrics during it", value: ms(oneP99), unit: "ms", target: 50, targetUnit: "ms"},
		{id: "P9", name: name + ", two instances at once", value: twoTime.Seconds(), unit: "s", target: target, targetUnit: "s", note: note + "; " + twoCPU},
		{id: "P9", name: "p99 GET /usage-metrics during it", value: ms(twoP99), unit: "ms", target: 50, targetUnit: "ms"},
	}, nil
}

// timedRuns runs RunBilling as of now on every Service at once while srv
// serves GET /usage-metrics, and returns the time until the last run
// returned and the p99 of the lists. Between them the runs must create two
// invoices per schedule (last month's fee, this month's fee with last
// month's usage), each once. It also returns the CPU time the runs took
// (cpuUse), in words.
func timedRuns(ctx context.Context, b *bench, srv *server, now time.Time, svcs ...*billing.Service) (time.Duration, time.Duration, string, error) {
	loadCtx, stopLoad := context.WithCancel(ctx)
	l := load{conns: 4, requests: 1 << 30, limit: time.Hour, status: http.StatusOK, auth: srv.auth, completed: new(atomic.Int64),
		request: func(int) (string, string, []byte) { return http.MethodGet, "/usage-metrics?limit=20", nil }}
	listed := make(chan loadResult, 1)
	listErr := make(chan error, 1)
	go func() {
		r, err := l.run(loadCtx, srv.url)
		listed <- r
		listErr <- err
	}()
	runs := make([]*billing.BillingRun, len(svcs))
	errs := make([]error, len(svcs))
	var wg sync.WaitGroup
	before := sampleCPU(ctx)
	start := time.Now()
	for i, svc := range svcs {
		wg.Go(func() { runs[i], errs[i] = svc.RunBilling(ctx, now) })
	}
	wg.Wait()
	elapsed := time.Since(start)
	use := before.until(sampleCPU(ctx))
	awaitAnswer(ctx, &l)
	stopLoad()
	lr := <-listed
	if err := errors.Join(append(errs, <-listErr)...); err != nil {
		return 0, 0, "", err
	}
	created := 0
	for _, r := range runs {
		if len(r.Failures) > 0 {
			return 0, 0, "", fmt.Errorf("%d schedules failed, the first: %s", len(r.Failures), r.Failures[0].Error)
		}
		created += r.InvoicesCreated
	}
	page, err := srv.svc.ListInvoices(ctx, srv.account, billing.InvoiceFilter{}, billing.ListParams{Limit: 1})
	if err != nil {
		return 0, 0, "", err
	}
	if want := 2 * b.cfg.schedules; created != want || page.TotalResultSize != want {
		return 0, 0, "", fmt.Errorf("the runs created %d invoices and %d are stored, want %d", created, page.TotalResultSize, want)
	}
	return elapsed, lr.p99, use.describe(elapsed), nil
}

// awaitAnswer waits until l has had a request answered, for at most a
// minute: a run shorter than one list request (the tiny scale, or a loaded
// machine) would leave the p99 without a sample.
func awaitAnswer(ctx context.Context, l *load) {
	for deadline := time.Now().Add(time.Minute); l.completed.Load() == 0 && time.Now().Before(deadline) && ctx.Err() == nil; {
		time.Sleep(time.Millisecond)
	}
}

// cloneSchema makes the database of to a copy of the database of from
// (PostgreSQL): every table of from's schema copied into to's, which
// opening a store there creates.
func cloneSchema(ctx context.Context, from, to string) error {
	st, err := openStore(ctx, to, nil)
	if err != nil {
		return err
	}
	st.Close()
	conn, err := pgx.Connect(ctx, pgBase)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	src, dst := strings.ToLower(schemaOf(from)), strings.ToLower(schemaOf(to))
	tables, err := column[string](ctx, conn, `select table_name from information_schema.tables where table_schema = $1 and table_type = 'BASE TABLE'`, src)
	if err != nil {
		return err
	}
	for _, t := range tables {
		s, d := pgx.Identifier{src, t}.Sanitize(), pgx.Identifier{dst, t}.Sanitize()
		if _, err := conn.Exec(ctx, `truncate `+d+`; insert into `+d+` select * from `+s); err != nil {
			return fmt.Errorf("copying %s: %w", t, err)
		}
		// Both copies start the runs vacuumed and analysed, so neither
		// run competes with autovacuum catching up on the set-up.
		for _, tbl := range []string{s, d} {
			if _, err := conn.Exec(ctx, `vacuum analyze `+tbl); err != nil {
				return fmt.Errorf("vacuuming %s: %w", tbl, err)
			}
		}
	}
	return nil
}

// plan is the metric and prices of P6's and P10's schedules.
type plan struct{ metric, fixed, usage string }

// createPlan creates a product with a monthly FIXED price in advance
// (100.00) and a LINEAR price in arrears (0.25 a call) on a COUNT metric of
// api_call events.
func createPlan(ctx context.Context, srv *server) (plan, error) {
	svc, acct := srv.svc, srv.account
	product, err := svc.CreateProduct(ctx, acct, billing.CreateProductParams{Name: "Platform"})
	if err != nil {
		return plan{}, err
	}
	metric, err := svc.CreateUsageMetric(ctx, acct, billing.CreateUsageMetricParams{UsageMetricParams: billing.UsageMetricParams{
		Name: "API calls", MetricType: billing.MetricTypeSimple, EventType: "api_call", AggregationType: billing.AggregationCount}})
	if err != nil {
		return plan{}, err
	}
	fee, rate := billing.MustDecimal("100.00"), billing.MustDecimal("0.25")
	fixed, err := svc.CreatePrice(ctx, acct, billing.CreatePriceParams{ProductID: product.ID, Name: "Plan", Currency: billing.CurrencyUSD,
		BillingFrequency: billing.FrequencyMonthly, BillingType: billing.BillingTypeInAdvance,
		Structure: billing.PriceStructure{PricingType: billing.PricingFixed, Price: &fee}})
	if err != nil {
		return plan{}, err
	}
	usage, err := svc.CreatePrice(ctx, acct, billing.CreatePriceParams{ProductID: product.ID, Name: "API calls", Currency: billing.CurrencyUSD,
		BillingFrequency: billing.FrequencyMonthly, BillingType: billing.BillingTypeInArrears,
		Structure: billing.PriceStructure{PricingType: billing.PricingLinear, PricePerUnit: &rate, UsageMetricID: metric.ID}})
	if err != nil {
		return plan{}, err
	}
	return plan{metric.ID, fixed.ID, usage.ID}, nil
}
