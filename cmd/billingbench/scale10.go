package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/billingd/billing"
	"github.com/billingd/billing/storage/boltstore"
)

// P10: costs that grow with the answer, not with the data. One account
// grows to b.cfg.schedules customers (10,000 at full scale), each with an
// active schedule like P6's, 10 draft invoices with a line, and about
// 1,000 events of last month (10,000,000 and 100,000 invoices at full
// scale); the largest customer holds a tenth of the events, all stored in
// the first stage. Six costs are measured when the account holds 10% of
// the data and again when it holds all of it; each row's value is the
// cost at 100%, its ceiling the cost at 10%, and the target says the
// cost may at most double (the ratio of the two).

// p10PageRuns is how many times each page is read, the median reported:
// a page takes milliseconds, in which other load on the machine can
// double it.
const p10PageRuns = 31

// p10InvoicesPerCustomer is the number of draft invoices of each customer.
const p10InvoicesPerCustomer = 10

// p10World is the growing account of P10.
type p10World struct {
	metric, fixed, usage string // the usage metric and the schedules' prices
	largest, schedule    string // the largest customer and its schedule
	customers            int    // customers created so far
	month                time.Time
	events               atomic.Int64 // events stored so far
}

// p10Costs are the costs measured at one stage.
type p10Costs struct {
	eventPage, customerEvents, invoicePage, customerInvoices, calculate, upcoming time.Duration
	runPerThousand                                                                time.Duration
	// runCPUPerThousand is the CPU time of the run per 1,000 schedules:
	// this process's and, on PostgreSQL, its server processes' (robust
	// against other load on the machine); retries the transactions the
	// run ran again.
	runCPUPerThousand time.Duration
	retries           int64
}

// measureP10 grows the account to 10% of b.cfg.schedules customers,
// measures, grows it to all of them and measures again. On PostgreSQL it
// also grows a bbolt twin of the first stage and calculates there, for
// the ratio of the two stores' calculations over the same events.
func measureP10(ctx context.Context, b *bench) ([]row, error) {
	n := b.cfg.schedules
	now := time.Now().UTC()
	w := newP10World(now)
	path := b.path("p10")
	var stages [2]p10Costs
	var boltCalc time.Duration
	for i, upto := range []int{max(n/10, 2), n} {
		from := w.customers
		if err := w.growAt(ctx, b, path, upto, n); err != nil {
			return nil, err
		}
		srv, err := startServer(ctx, path, nil)
		if err != nil {
			return nil, err
		}
		stages[i], err = w.measure(ctx, srv, now, upto-from)
		if err = errors.Join(err, srv.stop()); err != nil {
			return nil, err
		}
		if i == 0 && pgBase != "" {
			if boltCalc, err = p10BoltCalculation(ctx, b, now, upto, n); err != nil {
				return nil, err
			}
		}
	}
	rows := p10Rows(stages, n, int(w.events.Load()))
	if boltCalc > 0 {
		rows = append(rows, row{id: "P10", name: fmt.Sprintf("calculate the largest customer's month (%d events) on PostgreSQL, at 10%%", n*100),
			value: ms(stages[0].calculate), unit: "ms", ceiling: ms(boltCalc), ceilingName: "bbolt, the same data", target: 3,
			note: "bbolt's from a bbolt file grown like the first stage in the same run (medians of 5)"})
	}
	return rows, nil
}

// newP10World is an empty account whose events fall in the month before
// now's.
func newP10World(now time.Time) *p10World {
	return &p10World{month: time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC).AddDate(0, -1, 0)}
}

// growAt grows the account of the database at path to upto customers (of
// n at 100%). Growing is not measured: sync off meanwhile.
func (w *p10World) growAt(ctx context.Context, b *bench, path string, upto, n int) error {
	srv, err := startServer(ctx, path, &boltstore.Options{NoSync: true})
	if err != nil {
		return err
	}
	b.progress("P10: growing the account to %d customers", upto)
	start := time.Now()
	err = w.grow(ctx, srv, upto, n)
	b.progress("P10: %d customers, %d events after %v", w.customers, w.events.Load(), time.Since(start).Round(time.Second))
	return errors.Join(err, srv.stop())
}

// p10BoltCalculation grows a bbolt file like the first stage (upto
// customers of n) and returns the median time of the largest customer's
// calculation there.
func p10BoltCalculation(ctx context.Context, b *bench, now time.Time, upto, n int) (time.Duration, error) {
	var d time.Duration
	err := onBolt(func() error {
		w, path := newP10World(now), b.path("p10-bolt")
		if err := w.growAt(ctx, b, path, upto, n); err != nil {
			return err
		}
		srv, err := startServer(ctx, path, nil)
		if err != nil {
			return err
		}
		d, err = median(5, w.calculate(ctx, srv))
		return errors.Join(err, srv.stop())
	})
	return d, err
}

// p10Rows turns the two stages' costs into rows: the cost at 100%, against
// the cost at 10% as the ceiling, at most twice it.
func p10Rows(s [2]p10Costs, customers, events int) []row {
	r := func(name string, at func(p10Costs) time.Duration) row {
		return row{id: "P10", name: name, value: ms(at(s[1])), unit: "ms", ceiling: ms(at(s[0])), ceilingName: "at 10% of the data", target: 2}
	}
	rows := []row{
		r("first page of 100 usage events", func(c p10Costs) time.Duration { return c.eventPage }),
		r("first page of 100 usage events of one customer", func(c p10Costs) time.Duration { return c.customerEvents }),
		r("first page of 100 invoices", func(c p10Costs) time.Duration { return c.invoicePage }),
		r("first page of one customer's invoices", func(c p10Costs) time.Duration { return c.customerInvoices }),
		r("calculate the largest customer's month", func(c p10Costs) time.Duration { return c.calculate }),
		r("upcoming invoice of the largest customer", func(c p10Costs) time.Duration { return c.upcoming }),
		r("RunBilling per 1,000 schedules", func(c p10Costs) time.Duration { return c.runPerThousand }),
	}
	rows = append(rows, r("RunBilling CPU per 1,000 schedules (billingd and its PostgreSQL server processes)",
		func(c p10Costs) time.Duration { return c.runCPUPerThousand }))
	rows[len(rows)-1].note = fmt.Sprintf("%d customers and schedules, %d events, %d invoices at 100%% (plus those the runs create); pages medians of %d, calculations of 5; transactions run again: %d at 10%%, %d at 100%%",
		customers, events, customers*p10InvoicesPerCustomer, p10PageRuns, s[0].retries, s[1].retries)
	return rows
}

// p10Growers is how many customers grow at once: concurrent writers let
// PostgreSQL commit several transactions with one WAL flush, which the
// set-up of 10,000,000 events needs there (bbolt serializes them anyway).
const p10Growers = 4

// grow adds customers until there are upto (of n at 100%), with their
// schedules, events and invoices: 1,000 events a customer on average, the
// largest (the first, alone, so that its events are the account's oldest)
// a tenth of all. The others grow p10Growers at a time.
func (w *p10World) grow(ctx context.Context, srv *server, upto, n int) error {
	if w.metric == "" {
		if err := w.setUp(ctx, srv); err != nil {
			return err
		}
	}
	if w.customers == 0 {
		g := p10Grower{w: w, srv: srv, n: n}
		if err := errors.Join(g.add(ctx, 0), g.send(ctx)); err != nil {
			return err
		}
		w.customers = 1
	}
	next := atomic.Int64{}
	next.Store(int64(w.customers))
	errs := make([]error, p10Growers)
	var wg sync.WaitGroup
	for k := range p10Growers {
		wg.Go(func() {
			g := p10Grower{w: w, srv: srv, n: n}
			for i := int(next.Add(1) - 1); i < upto && errs[k] == nil; i = int(next.Add(1) - 1) {
				errs[k] = g.add(ctx, i)
			}
			errs[k] = errors.Join(errs[k], g.send(ctx))
		})
	}
	wg.Wait()
	w.customers = upto
	return errors.Join(errs...)
}

// p10Grower adds customers to a p10World, sending their events in
// batches of batchSize (a batch may hold the events of two customers).
type p10Grower struct {
	w     *p10World
	srv   *server
	n     int // customers at 100%
	batch billing.UsageEventBatchParams
}

// add creates customer i with its schedule, events and invoices.
func (g *p10Grower) add(ctx context.Context, i int) error {
	w, svc, acct := g.w, g.srv.svc, g.srv.account
	start, no := billing.DateOf(w.month), false
	c, err := svc.CreateCustomer(ctx, acct, billing.CustomerParams{LegalName: fmt.Sprintf("Customer %06d", i), TaxStatus: billing.TaxStatusTaxed})
	if err != nil {
		return err
	}
	sc, err := svc.CreateBillingSchedule(ctx, acct, billing.BillingScheduleParams{CustomerID: c.ID, StartDate: &start,
		AutoIssueInvoices: &no, IsDraft: &no, Phases: []billing.PhaseParams{{StartDate: &start, PriceIDs: []string{w.fixed, w.usage}}}})
	if err != nil {
		return err
	}
	total := g.n * 1000
	events := (total - total/10) / max(g.n-1, 1)
	if i == 0 {
		w.largest, w.schedule, events = c.ID, sc.ID, total/10
	}
	step := w.month.AddDate(0, 1, 0).Sub(w.month) / time.Duration(events+1)
	for j := range events {
		ts := w.month.Add(time.Duration(j+1) * step)
		g.batch.Events = append(g.batch.Events, billing.UsageEventParams{CustomerAlias: c.ID, EventType: "api_call", EventTimestamp: &ts})
		if len(g.batch.Events) == batchSize {
			if err := g.send(ctx); err != nil {
				return err
			}
		}
	}
	return p10Invoices(ctx, svc, acct, c.ID)
}

// send stores the batch's events, if any.
func (g *p10Grower) send(ctx context.Context) error {
	if len(g.batch.Events) == 0 {
		return nil
	}
	_, err := g.srv.svc.CreateUsageEventBatch(ctx, g.srv.account, g.batch)
	g.w.events.Add(int64(len(g.batch.Events)))
	g.batch.Events = g.batch.Events[:0]
	return err
}

// setUp creates the metric and the two prices of the schedules.
func (w *p10World) setUp(ctx context.Context, srv *server) error {
	p, err := createPlan(ctx, srv)
	w.metric, w.fixed, w.usage = p.metric, p.fixed, p.usage
	return err
}

// p10Invoices creates the draft invoices of customer, each with a line,
// four at a time.
func p10Invoices(ctx context.Context, svc *billing.Service, acct, customer string) error {
	errs := make([]error, p10InvoicesPerCustomer)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for k := range p10InvoicesPerCustomer {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			inv, err := svc.CreateInvoice(ctx, acct, billing.InvoiceParams{Currency: billing.CurrencyUSD, CustomerID: customer})
			if err == nil {
				qty, rate, tax := billing.MustDecimal("1"), billing.MustDecimal("10.00"), billing.MustDecimal("0")
				_, err = svc.CreateInvoiceLineItem(ctx, acct, inv.ID, billing.InvoiceLineItemParams{Title: "Work", Quantity: &qty, Rate: &rate,
					TaxRate: &tax, ExternalIDs: []billing.KeyValue{}})
			}
			errs[k] = err
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// measure times the stage's reads (medians) and a billing run over the
// schedules added since the last stage (added of them).
func (w *p10World) measure(ctx context.Context, srv *server, now time.Time, added int) (p10Costs, error) {
	svc, acct := srv.svc, srv.account
	var c p10Costs
	page := billing.ListParams{Limit: 100}
	for _, m := range []struct {
		to   *time.Duration
		runs int
		fn   func() error
	}{
		{&c.eventPage, p10PageRuns, func() error { _, err := svc.ListUsageEvents(ctx, acct, billing.UsageEventFilter{}, page); return err }},
		{&c.customerEvents, p10PageRuns, func() error {
			_, err := svc.ListUsageEvents(ctx, acct, billing.UsageEventFilter{CustomerAlias: w.largest}, page)
			return err
		}},
		{&c.invoicePage, p10PageRuns, func() error { _, err := svc.ListInvoices(ctx, acct, billing.InvoiceFilter{}, page); return err }},
		{&c.customerInvoices, p10PageRuns, func() error {
			_, err := svc.ListInvoices(ctx, acct, billing.InvoiceFilter{CustomerID: w.largest}, page)
			return err
		}},
		{&c.calculate, 5, w.calculate(ctx, srv)},
		{&c.upcoming, 5, func() error { _, err := svc.PreviewInvoice(ctx, acct, w.schedule, now); return err }},
	} {
		d, err := median(m.runs, m.fn)
		if err != nil {
			return c, err
		}
		*m.to = d
	}
	before, start := sampleCPU(ctx), time.Now()
	run, err := svc.RunBilling(ctx, now)
	elapsed, use := time.Since(start), before.until(sampleCPU(ctx))
	switch {
	case err != nil:
		return c, err
	case len(run.Failures) > 0:
		return c, fmt.Errorf("P10: %d schedules failed, the first: %s", len(run.Failures), run.Failures[0].Error)
	}
	c.runPerThousand = elapsed * 1000 / time.Duration(max(added, 1))
	c.runCPUPerThousand, c.retries = (use.self+use.pg)*1000/time.Duration(max(added, 1)), use.retries
	return c, nil
}

// calculate returns a calculation of the largest customer's month on srv.
func (w *p10World) calculate(ctx context.Context, srv *server) func() error {
	p := billing.CalculateUsageParams{UsageMetricID: w.metric, CustomerAliases: []string{w.largest},
		PeriodStart: billing.FormatTimestamp(w.month), PeriodEnd: billing.FormatTimestamp(w.month.AddDate(0, 1, 0))}
	return func() error {
		_, err := srv.svc.CalculateUsage(ctx, srv.account, p)
		return err
	}
}

// median runs fn runs times and returns the median time.
func median(runs int, fn func() error) (time.Duration, error) {
	ds := make([]time.Duration, runs)
	for i := range ds {
		start := time.Now()
		if err := fn(); err != nil {
			return 0, err
		}
		ds[i] = time.Since(start)
	}
	slices.Sort(ds)
	return ds[runs/2], nil
}
