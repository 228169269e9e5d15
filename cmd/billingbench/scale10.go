package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
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

// p10InvoicesPerCustomer is the number of draft invoices of each customer.
const p10InvoicesPerCustomer = 10

// p10World is the growing account of P10.
type p10World struct {
	metric, fixed, usage string // the usage metric and the schedules' prices
	largest, schedule    string // the largest customer and its schedule
	customers            int    // customers created so far
	month                time.Time
	events               int // events stored so far
}

// p10Costs are the costs measured at one stage.
type p10Costs struct {
	eventPage, customerEvents, invoicePage, customerInvoices, calculate, upcoming time.Duration
	runPerThousand                                                                time.Duration
}

// measureP10 grows the account to 10% of b.cfg.schedules customers,
// measures, grows it to all of them and measures again.
func measureP10(ctx context.Context, b *bench) ([]row, error) {
	n := b.cfg.schedules
	now := time.Now().UTC()
	w := &p10World{month: time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC).AddDate(0, -1, 0)}
	path := b.path("p10")
	var stages [2]p10Costs
	for i, upto := range []int{max(n/10, 2), n} {
		// Growing is not measured: sync off meanwhile (on bbolt).
		srv, err := startServer(ctx, path, &boltstore.Options{NoSync: true})
		if err != nil {
			return nil, err
		}
		from := w.customers
		b.progress("P10: growing the account to %d customers", upto)
		err = w.grow(ctx, srv, upto, n)
		if err = errors.Join(err, srv.stop()); err != nil {
			return nil, err
		}
		if srv, err = startServer(ctx, path, nil); err != nil {
			return nil, err
		}
		stages[i], err = w.measure(ctx, srv, now, upto-from)
		if err = errors.Join(err, srv.stop()); err != nil {
			return nil, err
		}
	}
	return p10Rows(stages, n, w.events), nil
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
	rows[len(rows)-1].note = fmt.Sprintf("%d customers and schedules, %d events, %d invoices at 100%% (plus those the runs create); medians of 11 (calculations 5)",
		customers, events, customers*p10InvoicesPerCustomer)
	return rows
}

// grow adds customers until there are upto (of n at 100%), with their
// schedules, events and invoices: 1,000 events a customer on average, the
// largest (the first) a tenth of all.
func (w *p10World) grow(ctx context.Context, srv *server, upto, n int) error {
	total := n * 1000
	if w.metric == "" {
		if err := w.setUp(ctx, srv); err != nil {
			return err
		}
	}
	svc, acct := srv.svc, srv.account
	start := billing.DateOf(w.month)
	no := false
	var batch billing.UsageEventBatchParams
	send := func() error {
		if len(batch.Events) == 0 {
			return nil
		}
		_, err := svc.CreateUsageEventBatch(ctx, acct, batch)
		w.events += len(batch.Events)
		batch.Events = batch.Events[:0]
		return err
	}
	for ; w.customers < upto; w.customers++ {
		i := w.customers
		c, err := svc.CreateCustomer(ctx, acct, billing.CustomerParams{LegalName: fmt.Sprintf("Customer %06d", i), TaxStatus: billing.TaxStatusTaxed})
		if err != nil {
			return err
		}
		sc, err := svc.CreateBillingSchedule(ctx, acct, billing.BillingScheduleParams{CustomerID: c.ID, StartDate: &start,
			AutoIssueInvoices: &no, IsDraft: &no, Phases: []billing.PhaseParams{{StartDate: &start, PriceIDs: []string{w.fixed, w.usage}}}})
		if err != nil {
			return err
		}
		events := (total - total/10) / max(n-1, 1)
		if i == 0 {
			w.largest, w.schedule, events = c.ID, sc.ID, total/10
		}
		step := w.month.AddDate(0, 1, 0).Sub(w.month) / time.Duration(events+1)
		for j := range events {
			ts := w.month.Add(time.Duration(j+1) * step)
			batch.Events = append(batch.Events, billing.UsageEventParams{CustomerAlias: c.ID, EventType: "api_call", EventTimestamp: &ts})
			if len(batch.Events) == batchSize {
				if err := send(); err != nil {
					return err
				}
			}
		}
		if err := p10Invoices(ctx, svc, acct, c.ID); err != nil {
			return err
		}
	}
	return send()
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
	periodStart, periodEnd := billing.FormatTimestamp(w.month), billing.FormatTimestamp(w.month.AddDate(0, 1, 0))
	for _, m := range []struct {
		to   *time.Duration
		runs int
		fn   func() error
	}{
		{&c.eventPage, 11, func() error { _, err := svc.ListUsageEvents(ctx, acct, billing.UsageEventFilter{}, page); return err }},
		{&c.customerEvents, 11, func() error {
			_, err := svc.ListUsageEvents(ctx, acct, billing.UsageEventFilter{CustomerAlias: w.largest}, page)
			return err
		}},
		{&c.invoicePage, 11, func() error { _, err := svc.ListInvoices(ctx, acct, billing.InvoiceFilter{}, page); return err }},
		{&c.customerInvoices, 11, func() error {
			_, err := svc.ListInvoices(ctx, acct, billing.InvoiceFilter{CustomerID: w.largest}, page)
			return err
		}},
		{&c.calculate, 5, func() error {
			_, err := svc.CalculateUsage(ctx, acct, billing.CalculateUsageParams{UsageMetricID: w.metric,
				CustomerAliases: []string{w.largest}, PeriodStart: periodStart, PeriodEnd: periodEnd})
			return err
		}},
		{&c.upcoming, 5, func() error { _, err := svc.PreviewInvoice(ctx, acct, w.schedule, now); return err }},
	} {
		d, err := median(m.runs, m.fn)
		if err != nil {
			return c, err
		}
		*m.to = d
	}
	start := time.Now()
	run, err := svc.RunBilling(ctx, now)
	elapsed := time.Since(start)
	switch {
	case err != nil:
		return c, err
	case len(run.Failures) > 0:
		return c, fmt.Errorf("P10: %d schedules failed, the first: %s", len(run.Failures), run.Failures[0].Error)
	}
	c.runPerThousand = elapsed * 1000 / time.Duration(max(added, 1))
	return c, nil
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
