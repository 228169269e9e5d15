package billing

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// DispatcherConfig holds the options of a Dispatcher. Every zero field takes
// its documented default.
type DispatcherConfig struct {
	// HTTPClient sends webhooks. Its redirect policy is replaced so that
	// redirects are never followed. Defaults to NewWebhookClient with the
	// Service's Config.WebhookAllowPrivate.
	HTTPClient *http.Client

	// Mailer sends e-mail deliveries. Defaults to none: e-mail deliveries
	// are then recorded FAILED with the reason "email delivery is not
	// configured", and can be retried once a Mailer is configured.
	Mailer Mailer

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
	// (PruneDeliveries, once an hour). Defaults to 30 days; negative keeps
	// them for ever.
	Retention time.Duration

	// Logger receives a line per failed attempt. Defaults to the Service's
	// logger.
	Logger *slog.Logger

	// afterSend, when set (tests), runs after a delivery was sent and
	// before its result is recorded.
	afterSend func()
}

// Dispatcher sends the outbox's due deliveries, outside any transaction,
// and records every attempt. The library never starts it: billingd (or the
// embedding program) calls Run in a goroutine of its own, or RunOnce.
// Several dispatchers, in one process or several, may run over one store:
// each delivery is claimed in a transaction before it is sent.
type Dispatcher struct {
	svc       *Service
	cfg       DispatcherConfig
	client    *http.Client
	log       *slog.Logger
	lastPrune time.Time
}

// NewDispatcher returns a Dispatcher over svc's outbox.
func NewDispatcher(svc *Service, cfg DispatcherConfig) *Dispatcher {
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = time.Second
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 8
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = 64
	}
	if cfg.Lease <= webhookTimeout {
		cfg.Lease = time.Minute
	}
	if cfg.Retention == 0 {
		cfg.Retention = 30 * 24 * time.Hour
	}
	d := &Dispatcher{svc: svc, cfg: cfg, log: cfg.Logger}
	if d.log == nil {
		d.log = svc.log
	}
	if cfg.HTTPClient == nil {
		d.client = NewWebhookClient(svc.webhookAllowPrivate)
	} else {
		c := *cfg.HTTPClient
		c.CheckRedirect = noRedirects
		if c.Timeout <= 0 || c.Timeout > webhookTimeout {
			c.Timeout = webhookTimeout
		}
		d.client = &c
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
		claims, err := d.svc.claimDue(ctx, d.svc.clock(), d.cfg.Lease, d.cfg.BatchSize)
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
func (d *Dispatcher) sendAll(ctx context.Context, claims []claim) error {
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
			r := d.send(ctx, c)
			if d.cfg.afterSend != nil {
				d.cfg.afterSend()
			}
			if r.err != "" {
				d.log.Warn("notification delivery attempt failed", "delivery", c.id, "status", r.statusCode, "err", r.err)
			}
			// A send that completed is recorded even when ctx ends meanwhile
			// (shutdown), so it is not sent again.
			if err := d.svc.recordAttempt(context.WithoutCancel(ctx), c, r); err != nil {
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
func (d *Dispatcher) send(ctx context.Context, c *claim) attemptResult {
	now := d.svc.clock()
	r := attemptResult{at: now}
	if c.channel == ChannelEmail {
		switch {
		case d.cfg.Mailer == nil:
			r.err, r.final = EmailNotConfiguredReason, true
		case c.email == nil:
			r.err, r.final = "the delivery has no e-mail", true
		default:
			e := *c.email
			if e.JSON == nil {
				e.JSON = c.payload
			}
			if err := d.cfg.Mailer.Send(ctx, e); err != nil {
				r.err = err.Error()
			}
		}
		return r
	}
	return d.sendWebhook(ctx, c, now)
}

// sendWebhook POSTs the payload to the recipient with the Standard Webhooks
// headers; any 2xx is a success.
func (d *Dispatcher) sendWebhook(ctx context.Context, c *claim, now time.Time) attemptResult {
	r := attemptResult{at: now}
	if len(c.recipients) != 1 {
		r.err, r.final = "a webhook delivery has exactly one recipient", true
		return r
	}
	sig, err := signWebhook(c.secrets, c.notificationID, now.Unix(), c.payload)
	if err != nil {
		r.err, r.final = "the policy's webhook secret is malformed", true
		return r
	}
	ctx, cancel := context.WithTimeout(ctx, webhookTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.recipients[0], bytes.NewReader(c.payload))
	if err != nil {
		r.err, r.final = "the recipient is not a valid URL", true
		return r
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "billingd-webhooks/1")
	req.Header.Set(HeaderWebhookID, c.notificationID)
	req.Header.Set(HeaderWebhookTimestamp, strconv.FormatInt(now.Unix(), 10))
	req.Header.Set(HeaderWebhookSignature, sig)
	resp, err := d.client.Do(req)
	if err != nil {
		r.err = transportError(err)
		return r
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	r.statusCode = resp.StatusCode
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
	case resp.StatusCode == http.StatusGone:
		r.err, r.final = "the receiver answered 410 Gone: no more retries", true
	default:
		r.err = fmt.Sprintf("the receiver answered %d %s", resp.StatusCode, http.StatusText(resp.StatusCode))
		if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable {
			r.retryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), now)
		}
	}
	return r
}

// transportError describes a failed request without the URL (which may
// carry tokens in its query).
func transportError(err error) string {
	var ue interface{ Unwrap() error }
	if errors.As(err, &ue) && ue.Unwrap() != nil {
		err = ue.Unwrap()
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "no answer within 15 seconds"
	}
	return err.Error()
}

// parseRetryAfter reads a Retry-After header: delay seconds or an HTTP date.
func parseRetryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil && n > 0 {
		return time.Duration(min(n, int64(maxRetryAfter/time.Second))) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
