// Package prommetrics exports what an operator of a billing.Service alerts
// on as Prometheus metrics: billing runs and their duration, invoices
// created, billing failures by reason, notification deliveries by channel
// and outcome, the outbox backlog, store transaction latency and usage
// events ingested. (Request counts, latencies, authentication failures
// and rate-limited requests are httpserver's.)
//
// Wiring, as billingd does it:
//
//	reg := prometheus.NewRegistry()
//	m := prommetrics.New(reg)
//	svc, err := billing.New(m.Store(store), &billing.Config{Observer: m.Observer()})
//	m.WatchOutbox(svc)
//	handler := httpserver.New(svc, &httpserver.Config{Registry: reg})
//
// Metric names (all prefixed billingd_):
//
//	billing_runs_total                         counter
//	billing_run_duration_seconds               histogram
//	invoices_created_total{source}             counter: api, engine
//	billing_failures_total{reason}             counter: the failure's error code
//	notification_deliveries_total{channel,outcome} counter: WEBHOOK/EMAIL, succeeded/failed (per attempt)
//	outbox_pending_deliveries                  gauge
//	outbox_oldest_pending_age_seconds          gauge (0 when none is pending)
//	store_transaction_duration_seconds{kind}   histogram: view, update, batch
//	usage_events_ingested_total                counter
package prommetrics

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/billingd/billing"
)

// Metrics holds the collectors of one Service. Create it with New.
type Metrics struct {
	runs        prometheus.Counter
	runDuration prometheus.Histogram
	invoices    *prometheus.CounterVec
	failures    *prometheus.CounterVec
	deliveries  *prometheus.CounterVec
	storeTx     *prometheus.HistogramVec
	ingested    prometheus.Counter
	reg         prometheus.Registerer
}

// New registers the metrics on reg and returns them. It panics if reg
// already holds metrics of the same names (prometheus.MustRegister).
func New(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		reg: reg,
		runs: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "billingd_billing_runs_total", Help: "Runs of the billing engine (background loop and POST /billing-runs).",
		}),
		runDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "billingd_billing_run_duration_seconds", Help: "How long billing runs took.",
			Buckets: []float64{.01, .05, .1, .5, 1, 5, 10, 30, 60, 300},
		}),
		invoices: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "billingd_invoices_created_total", Help: "Invoices created, by source: api (POST /invoices) or engine (billing runs).",
		}, []string{"source"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "billingd_billing_failures_total", Help: "Schedules a billing run could not bill, by reason (the error code: invalid_state, validation_failed, internal, ...).",
		}, []string{"reason"}),
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "billingd_notification_deliveries_total", Help: "Notification delivery attempts, by channel (WEBHOOK, EMAIL) and outcome (succeeded, failed).",
		}, []string{"channel", "outcome"}),
		storeTx: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "billingd_store_transaction_duration_seconds", Help: "Store transaction latency, commit included, by kind (view, update, batch).",
			Buckets: []float64{.0001, .0005, .001, .005, .01, .05, .1, .5, 1, 5},
		}, []string{"kind"}),
		ingested: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "billingd_usage_events_ingested_total", Help: "Usage events committed (single and batch ingestion).",
		}),
	}
	reg.MustRegister(m.runs, m.runDuration, m.invoices, m.failures, m.deliveries, m.storeTx, m.ingested)
	return m
}

// Observer returns the billing.Observer that feeds the metrics; set it in
// billing.Config.Observer.
func (m *Metrics) Observer() billing.Observer {
	return billing.Observer{
		BillingRun: func(run *billing.BillingRun, elapsed time.Duration) {
			m.runs.Inc()
			m.runDuration.Observe(elapsed.Seconds())
			for _, f := range run.Failures {
				m.failures.WithLabelValues(string(f.Code)).Inc()
			}
		},
		InvoicesCreated: func(source string, n int) {
			m.invoices.WithLabelValues(source).Add(float64(n))
		},
		UsageEventsIngested: func(n int) { m.ingested.Add(float64(n)) },
		DeliveryAttempted: func(channel billing.Channel, succeeded bool) {
			outcome := "failed"
			if succeeded {
				outcome = "succeeded"
			}
			m.deliveries.WithLabelValues(string(channel), outcome).Inc()
		},
	}
}

// Store returns st with the latency of its transactions observed.
func (m *Metrics) Store(st billing.Store) billing.Store {
	return &timedStore{Store: st, view: m.storeTx.WithLabelValues("view"),
		update: m.storeTx.WithLabelValues("update"), batch: m.storeTx.WithLabelValues("batch")}
}

// timedStore is a billing.Store whose transactions are timed.
type timedStore struct {
	billing.Store
	view, update, batch prometheus.Observer
}

func (s *timedStore) View(ctx context.Context, fn func(billing.Tx) error) error {
	defer observeSince(s.view, time.Now())
	return s.Store.View(ctx, fn)
}

func (s *timedStore) Update(ctx context.Context, fn func(billing.Tx) error) error {
	defer observeSince(s.update, time.Now())
	return s.Store.Update(ctx, fn)
}

func (s *timedStore) Batch(ctx context.Context, fn func(billing.Tx) error) error {
	defer observeSince(s.batch, time.Now())
	return s.Store.Batch(ctx, fn)
}

func observeSince(o prometheus.Observer, start time.Time) { o.Observe(time.Since(start).Seconds()) }

// WatchOutbox registers the outbox gauges of svc: they are read from the
// store at every scrape (Service.OutboxBacklog), with a 5-second limit.
func (m *Metrics) WatchOutbox(svc *billing.Service) {
	m.reg.MustRegister(&outboxCollector{svc: svc,
		pending: prometheus.NewDesc("billingd_outbox_pending_deliveries",
			"Notification deliveries waiting to be sent or retried.", nil, nil),
		oldest: prometheus.NewDesc("billingd_outbox_oldest_pending_age_seconds",
			"Age of the oldest pending notification delivery; 0 when none is pending.", nil, nil),
	})
}

// outboxCollector reads the outbox backlog at scrape time.
type outboxCollector struct {
	svc             *billing.Service
	pending, oldest *prometheus.Desc
}

func (c *outboxCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.pending; ch <- c.oldest }

func (c *outboxCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	b, err := c.svc.OutboxBacklog(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.pending, errors.New("reading the outbox backlog failed"))
		return
	}
	age := 0.0
	if !b.OldestCreatedAt.IsZero() {
		age = max(0, time.Since(b.OldestCreatedAt).Seconds())
	}
	ch <- prometheus.MustNewConstMetric(c.pending, prometheus.GaugeValue, float64(b.Pending))
	ch <- prometheus.MustNewConstMetric(c.oldest, prometheus.GaugeValue, age)
}
