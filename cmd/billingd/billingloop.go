package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/billingd/billing"
)

// billingLoop runs the billing engine over every account each interval,
// as of now, until ctx is done. A run in progress when ctx is cancelled
// stops at its next transaction; what it committed stays (the engine is
// exactly-once per charge, so the next start simply continues). On
// PostgreSQL every instance runs this loop: RunScheduledBilling makes the
// instances' ticks of one interval one round, its work shared out by
// leases.
func billingLoop(ctx context.Context, svc *billing.Service, log *slog.Logger, interval time.Duration, now func() time.Time) {
	every(ctx, interval, func() {
		run, err := svc.RunScheduledBilling(ctx, now(), interval)
		switch {
		case err != nil && ctx.Err() == nil:
			log.Error("billing run failed", "err", err)
		case err == nil && (run.InvoicesCreated > 0 || run.InvoicesUpdated > 0 || len(run.Failures) > 0):
			log.Info("billing run", "schedules", run.SchedulesVisited, "created", run.InvoicesCreated,
				"updated", run.InvoicesUpdated, "issued", run.InvoicesIssued, "failures", len(run.Failures))
		}
	})
}

// every calls fn each interval, the first time one interval from now, until
// ctx is done. A call in progress is never interrupted by the loop itself.
func every(ctx context.Context, interval time.Duration, fn func()) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		fn()
	}
}

// alertInterval is how often billingd evaluates the alerts of the
// customers whose usage changed: a threshold crossed by an event is
// notified within about this time.
const alertInterval = time.Second

// alertLoop evaluates usage and spend alerts every interval until ctx is
// done (billing.Service.EvaluateAlerts). On PostgreSQL every instance runs
// it; leases share the marked customers out, and the crossing records
// make each notification exactly-once.
func alertLoop(ctx context.Context, svc *billing.Service, log *slog.Logger, interval time.Duration) {
	every(ctx, interval, func() {
		run, err := svc.EvaluateAlerts(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			log.Error("evaluating alerts failed", "err", err)
		case err == nil && (run.Notified > 0 || run.Failed > 0):
			log.Info("alerts", "customers", run.CustomersEvaluated, "notified", run.Notified, "failed", run.Failed)
		}
	})
}
