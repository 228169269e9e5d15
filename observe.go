package billing

import (
	"context"
	"fmt"
	"time"
)

// Observer receives what an operator counts and alerts on: billing runs,
// invoices created, usage events ingested and notification delivery
// attempts. Set it in Config.Observer (package prommetrics exports it to
// Prometheus). Every field may be nil. The functions are called after the
// change they report committed, from the goroutine that made it, so they
// must be quick and safe for concurrent use.
type Observer struct {
	// BillingRun is called after every run of the billing engine
	// (RunBilling, RunAccountBilling), with how long it took; run.Failures
	// lists the schedules it could not bill.
	BillingRun func(run *BillingRun, elapsed time.Duration)

	// InvoicesCreated is called with the number of invoices created: by
	// CreateInvoice (source "api") and by a billing run (source "engine").
	InvoicesCreated func(source string, n int)

	// UsageEventsIngested is called with the number of usage events
	// committed by CreateUsageEvent and CreateUsageEventBatch.
	UsageEventsIngested func(n int)

	// DeliveryAttempted is called after each attempt of a Dispatcher to
	// deliver a notification, with its channel and whether it succeeded.
	DeliveryAttempted func(channel Channel, succeeded bool)
}

// observeRun reports a finished billing run, and logs each of its
// failures at WARN with the ids an operator needs.
func (s *Service) observeRun(ctx context.Context, run *BillingRun, start time.Time) {
	if run == nil {
		return
	}
	for _, f := range run.Failures {
		s.log.WarnContext(ctx, "billing engine: schedule not billed",
			"schedule", f.BillingScheduleID, "account", f.ServiceAccountID, "price", f.PriceID,
			"code", string(f.Code), "error", f.Error)
	}
	if o := s.observer; o.BillingRun != nil {
		o.BillingRun(run, time.Since(start))
	}
	if o := s.observer; o.InvoicesCreated != nil && run.InvoicesCreated > 0 {
		o.InvoicesCreated("engine", run.InvoicesCreated)
	}
}

// observeIngested reports n usage events committed.
func (s *Service) observeIngested(n int) {
	if f := s.observer.UsageEventsIngested; f != nil {
		f(n)
	}
}

// describeFailure names, in a billing failure's message, the price whose
// line could not be computed: "price <name> (<id>): <reason>".
func describeFailure(price *Price, reason string) string {
	if price == nil {
		return reason
	}
	return fmt.Sprintf("price %q (%s): %s", price.Name, price.ID, reason)
}
