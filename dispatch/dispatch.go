// Package dispatch sends the notification outbox: a Dispatcher claims the
// due deliveries of a billing.Service, sends them outside any transaction
// (e-mail through a billing.Mailer, webhooks through a
// billing.WebhookSender, documents' e-mails rendered by a
// billing.DocumentRenderer) and records every attempt. It is the worker of
// the outbox, kept out of the domain as river keeps its maintenance
// services out of its jobs: the billing package says what a delivery is
// and how claims, attempts and retries are recorded (ClaimDeliveries,
// RecordDeliveryAttempt, ReleaseDelivery); this package polls, bounds the
// concurrency and talks to the transports. The library never starts it:
// billingd (or the embedding program) runs it.
package dispatch

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/billingd/billing"
	"github.com/billingd/billing/render"
)

// Config holds the options of a Dispatcher. Every zero field takes
// its documented default.
type Config struct {
	// Webhooks sends webhook deliveries: webhook.NewSender, with the
	// Service's Config.WebhookAllowPrivate. Defaults to none: webhook
	// deliveries are then recorded FAILED with WebhookNotConfiguredReason.
	Webhooks billing.WebhookSender

	// Mailer sends e-mail deliveries. Defaults to none: e-mail deliveries
	// are then recorded FAILED with the reason "email delivery is not
	// configured", and can be retried once a Mailer is configured.
	Mailer billing.Mailer

	// Documents renders the e-mails of sent invoices and credit notes when
	// they are sent: the message and the PDF attached (render.Renderer).
	// Defaults to none: those e-mails then go as render.SummaryEmail, a
	// plain-text summary without the document.
	Documents billing.DocumentRenderer

	// PollInterval is how often Run looks for due deliveries. Defaults to
	// one second.
	PollInterval time.Duration

	// Concurrency is how many deliveries are sent at once. Defaults to 8.
	Concurrency int

	// BatchSize is how many due deliveries one claim takes. Defaults to 64.
	BatchSize int

	// Lease is how long a claimed delivery is reserved for this dispatcher;
	// if its result is not recorded by then (the process died), another
	// run sends it again. It must exceed the 15 s webhook timeout.
	// Defaults to one minute.
	Lease time.Duration

	// Retention is how long Run keeps SUCCEEDED and FAILED deliveries
	// (Service.PruneDeliveries, once an hour). Defaults to 30 days; negative keeps
	// them for ever.
	Retention time.Duration

	// Logger receives a line per failed attempt. Defaults to the Service's
	// logger.
	Logger *slog.Logger
}

// Dispatcher sends the outbox's due deliveries, outside any transaction,
// and records every attempt. The library never starts it: billingd (or the
// embedding program) calls Run in a goroutine of its own, or RunOnce.
// Several dispatchers, in one process or several, may run over one store:
// each delivery is claimed in a transaction before it is sent.
type Dispatcher struct {
	svc       *billing.Service
	cfg       Config
	log       *slog.Logger
	lastPrune time.Time
}

// New returns a Dispatcher over svc's outbox.
func New(svc *billing.Service, cfg Config) *Dispatcher {
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = time.Second
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 8
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = 64
	}
	if cfg.Lease <= billing.WebhookTimeout {
		cfg.Lease = time.Minute
	}
	if cfg.Retention == 0 {
		cfg.Retention = 30 * 24 * time.Hour
	}
	d := &Dispatcher{svc: svc, cfg: cfg, log: cfg.Logger}
	if d.log == nil {
		d.log = svc.Logger()
	}
	return d
}

// Run sends due deliveries every PollInterval, and prunes old ones hourly,
// until ctx is done. It returns nil when ctx ends it; store errors are
// logged and retried at the next poll.
func (d *Dispatcher) Run(ctx context.Context) error {
	t := time.NewTicker(d.cfg.PollInterval)
	defer t.Stop()
	for {
		if _, err := d.RunOnce(ctx); err != nil && ctx.Err() == nil {
			d.log.Error("dispatching notifications", "err", err)
		}
		d.prune(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

func (d *Dispatcher) prune(ctx context.Context) {
	if d.cfg.Retention < 0 || time.Since(d.lastPrune) < time.Hour {
		return
	}
	d.lastPrune = time.Now()
	n, err := d.svc.PruneDeliveries(ctx, d.cfg.Retention)
	switch {
	case err != nil && ctx.Err() == nil:
		d.log.Error("pruning deliveries", "err", err)
	case n > 0:
		d.log.Info("pruned old deliveries", "deleted", n)
	}
}

// RunOnce sends every delivery due now (by the Service's clock) and records
// each attempt, then returns the number of attempts made. Deliveries that
// fail are rescheduled and are not retried by the same call.
func (d *Dispatcher) RunOnce(ctx context.Context) (int, error) {
	attempts := 0
	for {
		claims, err := d.svc.ClaimDeliveries(ctx, d.cfg.Lease, d.cfg.BatchSize)
		if err != nil {
			return attempts, err
		}
		if err := d.sendAll(ctx, claims); err != nil {
			return attempts, err
		}
		attempts += len(claims)
		if len(claims) < d.cfg.BatchSize {
			return attempts, nil
		}
	}
}

// sendAll sends claims with at most Concurrency at once and records each
// result; it returns the first recording error.
func (d *Dispatcher) sendAll(ctx context.Context, claims []billing.DeliveryClaim) error {
	sem := make(chan struct{}, d.cfg.Concurrency)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	for i := range claims {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			c := &claims[i]
			if ctx.Err() != nil {
				// Shutting down: hand the delivery back at once rather than
				// hold it until its lease expires.
				d.svc.ReleaseDelivery(context.WithoutCancel(ctx), c)
				return
			}
			r := d.send(ctx, c)
			if r.Err != "" && ctx.Err() != nil {
				// Cut off by the shutdown, not refused by the receiver: no
				// failure to count, and another dispatcher may send it
				// now (at least once: the receiver may have had it).
				d.svc.ReleaseDelivery(context.WithoutCancel(ctx), c)
				return
			}
			if r.Err != "" {
				d.log.Warn("notification delivery attempt failed", "delivery", c.ID, "status", r.StatusCode, "err", r.Err)
			}
			// A send that completed is recorded even when ctx ends meanwhile
			// (shutdown), so it is not sent again.
			if err := d.svc.RecordDeliveryAttempt(context.WithoutCancel(ctx), c, r); err != nil {
				mu.Lock()
				first = cmpOr(first, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return first
}

func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// send makes one attempt of a claimed delivery.
func (d *Dispatcher) send(ctx context.Context, c *billing.DeliveryClaim) billing.DeliveryResult {
	now := d.svc.Now()
	r := billing.DeliveryResult{At: now}
	if c.Channel == billing.ChannelEmail {
		switch {
		case d.cfg.Mailer == nil:
			r.Err, r.Final = billing.EmailNotConfiguredReason, true
		case c.Email == nil:
			r.Err, r.Final = "the delivery has no e-mail", true
		default:
			e, err := d.email(ctx, c)
			if err == nil {
				err = d.cfg.Mailer.Send(ctx, *e)
			}
			if err != nil {
				r.Err, r.Final = err.Error(), billing.CodeOf(err) == billing.CodeNotFound
			}
		}
		return r
	}
	return d.sendWebhook(ctx, c, now)
}

// email is the e-mail of a claimed delivery as it is sent. The outbox
// queues references, and package render writes the words: a notification
// e-mail (render.NotificationEmail) with its payload attached; a payment
// e-mail to a customer (render.PaymentEmail); a document's e-mail rendered
// by the DocumentRenderer, or summarized in plain text without one
// (render.SummaryEmail), from the document as stored now. An e-mail queued
// with its words (a Subject: those queued by earlier versions) goes as
// queued, but for its document. A document that is gone is a not_found error (the
// delivery then fails for good).
func (d *Dispatcher) email(ctx context.Context, c *billing.DeliveryClaim) (*billing.Email, error) {
	e := *c.Email
	switch {
	case e.Document != nil && (e.Subject == "" || d.cfg.Documents != nil):
		return d.documentEmail(ctx, c.Account, &e)
	case e.Subject == "" && e.Payment != nil:
		written := render.PaymentEmail(e.Payment)
		written.To = e.To
		e = *written
	case e.Subject == "" && c.NotificationID != "":
		var n billing.Notification
		if err := json.Unmarshal(c.Payload, &n); err != nil {
			return nil, fmt.Errorf("reading the notification: %w", err)
		}
		written := render.NotificationEmail(&n)
		written.To = e.To
		e = *written
	}
	if e.JSON == nil && e.Document == nil {
		e.JSON = c.Payload
	}
	return &e, nil
}

// documentEmail renders the e-mail of e's document to e.To.
func (d *Dispatcher) documentEmail(ctx context.Context, account string, e *billing.Email) (*billing.Email, error) {
	var doc *billing.PrintableDocument
	var err error
	switch e.Document.Kind {
	case billing.DocumentCreditNote:
		doc, err = d.svc.PrintableCreditNote(ctx, account, e.Document.ID)
	default:
		doc, err = d.svc.PrintableInvoice(ctx, account, e.Document.ID)
	}
	if err != nil {
		return nil, err
	}
	rendered := render.SummaryEmail(doc)
	if d.cfg.Documents != nil {
		if rendered, err = d.cfg.Documents.DocumentEmail(doc); err != nil {
			return nil, fmt.Errorf("rendering the document: %w", err)
		}
	}
	rendered.To = e.To
	return rendered, nil
}

// sendWebhook signs the payload and hands it to the WebhookSender.
func (d *Dispatcher) sendWebhook(ctx context.Context, c *billing.DeliveryClaim, now time.Time) billing.DeliveryResult {
	r := billing.DeliveryResult{At: now}
	switch {
	case d.cfg.Webhooks == nil:
		r.Err, r.Final = billing.WebhookNotConfiguredReason, true
		return r
	case len(c.Recipients) != 1:
		r.Err, r.Final = "a webhook delivery has exactly one recipient", true
		return r
	}
	sig, err := c.Signature(now.Unix())
	if err != nil {
		r.Err, r.Final = "the policy's webhook secret is malformed", true
		return r
	}
	w := d.cfg.Webhooks.SendWebhook(ctx, billing.Webhook{URL: c.Recipients[0], ID: c.NotificationID,
		Timestamp: now.Unix(), Signature: sig, Body: c.Payload})
	r.StatusCode, r.Err, r.Final, r.RetryAfter = w.StatusCode, w.Err, w.Final, w.RetryAfter
	return r
}
