package billing

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// DeliveryStatus is the state of a delivery: PENDING (waiting to be sent or
// retried), SUCCEEDED or FAILED (no more retries).
type DeliveryStatus string

// The delivery statuses.
const (
	DeliveryPending   DeliveryStatus = "PENDING"
	DeliverySucceeded DeliveryStatus = "SUCCEEDED"
	DeliveryFailed    DeliveryStatus = "FAILED"
)

// RetrySchedule is how long a failed delivery waits before each retry; each
// wait gets up to 10% random jitter. After the last retry fails the delivery
// is FAILED.
var RetrySchedule = []time.Duration{
	5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 5 * time.Hour, 10 * time.Hour, 10 * time.Hour,
}

// maxRetryAfter caps a receiver's Retry-After.
const maxRetryAfter = 24 * time.Hour

// EmailNotConfiguredReason is the reason recorded for e-mail deliveries when
// the dispatcher has no Mailer.
const EmailNotConfiguredReason = "email delivery is not configured"

// WebhookNotConfiguredReason is the reason recorded for webhook deliveries
// when the Dispatcher has no WebhookSender.
const WebhookNotConfiguredReason = "webhook delivery is not configured"

// WebhookTimeout bounds one webhook attempt (connect, send, and the
// answer): a WebhookSender gives up after it, and a Dispatcher's lease
// must exceed it.
const WebhookTimeout = 15 * time.Second

// WebhookSender sends one webhook for the Dispatcher. Package webhook
// implements it over HTTP, refusing private targets at connect time.
type WebhookSender interface {
	SendWebhook(ctx context.Context, w Webhook) WebhookResult
}

// Webhook is one attempt of a webhook delivery: a POST of Body to URL with
// the Standard Webhooks headers (HeaderWebhookID, HeaderWebhookTimestamp,
// HeaderWebhookSignature) set to ID, Timestamp and Signature.
type Webhook struct {
	// URL is the recipient.
	URL string
	// ID is the notification id: the same on every attempt, so receivers
	// can de-duplicate.
	ID string
	// Timestamp is the attempt's time in Unix seconds (the Service clock).
	Timestamp int64
	// Signature is the webhook-signature value: one "v1,<base64>" per
	// signing secret of the policy.
	Signature string
	// Body is the notification's JSON.
	Body []byte
}

// WebhookResult is the outcome of one webhook attempt.
type WebhookResult struct {
	// StatusCode is the receiver's answer; 0 when there was none.
	StatusCode int
	// Err says why the attempt failed, for the delivery's attempts (never
	// the URL, which may carry tokens); empty on success (any 2xx).
	Err string
	// Final stops retries: the URL is malformed or the receiver answered
	// 410 Gone.
	Final bool
	// RetryAfter is the receiver's Retry-After (on 429 and 503), 0 if none.
	// The Dispatcher caps it at 24 hours.
	RetryAfter time.Duration
}

// Delivery is one notification (or e-mail) on its way to one recipient (a
// queued e-mail: to all its addresses), with every attempt made so far.
type Delivery struct {
	ID string `json:"id"`
	// ServiceAccountID is the account whose notification or e-mail it is.
	ServiceAccountID string    `json:"serviceAccountId"`
	CreatedAt        time.Time `json:"createdAt"`
	UpdatedAt        time.Time `json:"updatedAt"`
	// NotificationID is the notification delivered; empty for document e-mails.
	NotificationID string `json:"notificationId,omitempty"`
	// NotificationType is the notification's type; empty for document e-mails.
	NotificationType NotificationType `json:"notificationType,omitempty"`
	// PolicyID is the policy that matched; empty for the e-mails of
	// document sending, which no policy asks for.
	PolicyID string `json:"policyId,omitempty"`
	// Channel is EMAIL or WEBHOOK.
	Channel Channel `json:"channel"`
	// Recipients are the e-mail addresses or the webhook URLs delivered to.
	Recipients []string `json:"recipients"`
	// Status is PENDING until delivered (SUCCEEDED) or given up (FAILED).
	Status DeliveryStatus `json:"status"`
	// NextAttemptAt is when a PENDING delivery is next tried.
	NextAttemptAt *time.Time `json:"nextAttemptAt,omitempty"`
	// Attempts are the tries so far, oldest first; always present.
	Attempts []DeliveryAttempt `json:"attempts"`
}

// DeliveryAttempt is one try of a delivery.
type DeliveryAttempt struct {
	// At is when the attempt was made.
	At time.Time `json:"at"`
	// StatusCode is the webhook receiver's HTTP status; 0 when no answer
	// arrived (and for e-mail).
	StatusCode int `json:"statusCode,omitempty"`
	// Error says why the attempt failed; empty on success.
	Error string `json:"error,omitempty"`
	// Succeeded reports that the receiver accepted the delivery (a 2xx answer, or
	// the mail server's acceptance).
	Succeeded bool `json:"succeeded"`
}

// deliveryRecord is a stored delivery with what sending needs.
type deliveryRecord struct {
	Delivery
	Payload json.RawMessage `json:"payload,omitempty"`
	Email   *Email          `json:"email,omitempty"`
	// Failures counts the failed attempts since the delivery was queued
	// or re-queued: the position in RetrySchedule.
	Failures int `json:"failures,omitempty"`
	// Lease is the token of the dispatcher that claimed the delivery;
	// only that dispatcher's result is recorded.
	Lease string `json:"lease,omitempty"`
}

// queueKey is the delivery's key in tableDeliveryQueue.
func (d *deliveryRecord) queueKey() []byte {
	return key(fmt.Sprintf("%016x", d.NextAttemptAt.Unix()), d.ServiceAccountID, d.ID)
}

// enqueue stores a new PENDING delivery, due at now.
func (s *Service) enqueue(ctx context.Context, tx Tx, d *deliveryRecord, now time.Time) error {
	d.ID, d.CreatedAt, d.UpdatedAt = s.newID(), now, now
	d.Status, d.NextAttemptAt, d.Attempts = DeliveryPending, &now, []DeliveryAttempt{}
	if err := tx.Put(ctx, tableDeliveryQueue, d.queueKey(), nil); err != nil {
		return err
	}
	return putDelivery(ctx, tx, d.ServiceAccountID, d.ID, d)
}

// reschedule moves a delivery's queue entry to next (nil: out of the queue).
func reschedule(ctx context.Context, tx Tx, d *deliveryRecord, next *time.Time) error {
	if d.NextAttemptAt != nil {
		if err := deleteIfPresent(ctx, tx, tableDeliveryQueue, d.queueKey()); err != nil {
			return err
		}
	}
	d.NextAttemptAt = next
	if next == nil {
		return nil
	}
	return tx.Put(ctx, tableDeliveryQueue, d.queueKey(), nil)
}

// DeliveryFilter selects deliveries in ListDeliveries; empty fields select
// everything.
type DeliveryFilter struct {
	// PolicyID keeps the deliveries of this notification policy.
	PolicyID string
	// Status keeps deliveries in this status.
	Status DeliveryStatus
	// NotificationID keeps the deliveries of this notification.
	NotificationID string
}

// ListDeliveries lists the account's deliveries, newest first, each with
// its attempts. Returns validation_failed for an unknown status, a bad
// limit or cursor.
func (s *Service) ListDeliveries(ctx context.Context, account string, f DeliveryFilter, p ListParams) (Page[Delivery], error) {
	switch f.Status {
	case "", DeliveryPending, DeliverySucceeded, DeliveryFailed:
	default:
		return Page[Delivery]{}, FieldError("status", "status must be PENDING, SUCCEEDED or FAILED")
	}
	q := listQuery[Delivery]{
		name: "notification_deliveries", table: tableDeliveries, prefix: prefix(account), desc: true,
		filter: strings.Join([]string{f.PolicyID, string(f.Status), f.NotificationID}, "\x00"),
		decode: decodeAll(func(d *Delivery) bool {
			return (f.PolicyID == "" || d.PolicyID == f.PolicyID) && (f.Status == "" || d.Status == f.Status) &&
				(f.NotificationID == "" || d.NotificationID == f.NotificationID)
		}),
	}
	given := []string{f.PolicyID, string(f.Status), f.NotificationID}
	return read(ctx, s, func(tx Tx) (Page[Delivery], error) {
		return listKept(ctx, s, tx, keptDeliveries, account, given, q, p)
	})
}

// GetDelivery returns a delivery. Returns not_found.
func (s *Service) GetDelivery(ctx context.Context, account, id string) (*Delivery, error) {
	return read(ctx, s, func(tx Tx) (*Delivery, error) {
		d, err := getOwned[deliveryRecord](ctx, tx, tableDeliveries, account, id, "delivery")
		if err != nil {
			return nil, err
		}
		return &d.Delivery, nil
	})
}

// RetryDelivery re-queues a FAILED or SUCCEEDED delivery to be sent now,
// with the same notification id (webhook-id) and a fresh retry schedule.
// Returns not_found, and invalid_state for a PENDING delivery.
func (s *Service) RetryDelivery(ctx context.Context, account, id string) (*Delivery, error) {
	now := s.clock()
	return mutate(ctx, s, account, func(tx Tx) (*Delivery, error) {
		d, err := getOwned[deliveryRecord](ctx, tx, tableDeliveries, account, id, "delivery")
		if err != nil {
			return nil, err
		}
		if d.Status == DeliveryPending {
			return nil, Errorf(CodeInvalidState, "the delivery is still PENDING; only FAILED or SUCCEEDED deliveries can be retried")
		}
		d.Status, d.Failures, d.Lease, d.UpdatedAt = DeliveryPending, 0, "", now
		if err := reschedule(ctx, tx, d, &now); err != nil {
			return nil, err
		}
		return &d.Delivery, putDelivery(ctx, tx, account, id, d)
	})
}

// PruneDeliveries deletes the SUCCEEDED and FAILED deliveries of every
// account last changed more than olderThan ago, and returns how many it
// deleted. PENDING deliveries are never pruned. billingd runs it
// periodically (--delivery-retention).
func (s *Service) PruneDeliveries(ctx context.Context, olderThan time.Duration) (int, error) {
	cutoff := s.clock().Add(-olderThan)
	type lastChange struct {
		Status    DeliveryStatus `json:"status"`
		UpdatedAt time.Time      `json:"updatedAt"`
	}
	deleted := func(ctx context.Context, tx Tx, k []byte) error {
		account, id, _ := strings.Cut(string(k), string(rune(keySep)))
		return keptDeliveries.put(ctx, tx, account, id, nil)
	}
	return sweep(ctx, s, tableDeliveries, deleted, func(d *lastChange) bool {
		return d.Status != DeliveryPending && d.UpdatedAt.Before(cutoff)
	})
}

// DeliveryClaim is one delivery a dispatcher claimed (ClaimDeliveries),
// with what sending it needs. It is the dispatcher's until its lease
// expires: it records the attempt (RecordDeliveryAttempt) or gives the
// delivery back (ReleaseDelivery).
type DeliveryClaim struct {
	// Account and ID name the delivery.
	Account, ID string
	// Channel is how it is sent: EMAIL or WEBHOOK.
	Channel Channel
	// NotificationID is the notification's id: the webhook-id of a webhook.
	NotificationID string
	// Recipients are the e-mail addresses, or the one webhook URL.
	Recipients []string
	// Payload is the notification's JSON body.
	Payload []byte
	// Email is the e-mail to send (EMAIL), as queued: a document's names
	// the document to render (Email.Document); a notification's has only
	// its recipient, the words being written from Payload when it is sent.
	Email *Email

	lease   string
	secrets []string // WEBHOOK: the secrets signing it now
}

// Signature returns the Standard Webhooks signature header value of the
// claimed webhook's payload sent at ts (Unix seconds), by every secret of
// its policy that signs now (two while a rotation's old secret lasts).
func (c *DeliveryClaim) Signature(ts int64) (string, error) {
	return signWebhook(c.secrets, c.NotificationID, ts, c.Payload)
}

// ClaimDeliveries claims at most limit deliveries due now (by the
// Service's clock) for the duration of lease: their queue entries move to
// now+lease, so another dispatcher does not take them unless this one dies
// before recording a result, in which case they are sent again (at least
// once). A webhook delivery whose policy was deleted is recorded FAILED
// instead. The dispatcher (package dispatch) calls it.
func (s *Service) ClaimDeliveries(ctx context.Context, lease time.Duration, limit int) ([]DeliveryClaim, error) {
	now := s.clock()
	var out []DeliveryClaim
	err := s.store.Update(ctx, func(tx Tx) error {
		out = nil
		end := []byte(fmt.Sprintf("%016x", now.Unix()+1))
		due, err := firstKeys(ctx, tx, tableDeliveryQueue, Range{End: end}, limit, nil)
		if err != nil {
			return err
		}
		for _, k := range due {
			c, err := s.claimOne(ctx, tx, k, now, lease)
			if err != nil {
				return err
			}
			if c != nil {
				out = append(out, *c)
			}
		}
		return nil
	})
	return out, internal(err)
}

// claimOne claims the delivery of queue key k, or drops a stale queue entry.
func (s *Service) claimOne(ctx context.Context, tx Tx, k []byte, now time.Time, lease time.Duration) (*DeliveryClaim, error) {
	parts := bytes.Split(k, []byte{keySep})
	if len(parts) != 3 {
		return nil, tx.Delete(ctx, tableDeliveryQueue, k)
	}
	account, id := string(parts[1]), string(parts[2])
	d, err := getRecord[deliveryRecord](ctx, tx, tableDeliveries, key(account, id))
	if errors.Is(err, ErrNotFound) || err == nil && (d.Status != DeliveryPending || d.NextAttemptAt == nil || !bytes.Equal(d.queueKey(), k)) {
		return nil, tx.Delete(ctx, tableDeliveryQueue, k)
	}
	if err != nil {
		return nil, err
	}
	c := &DeliveryClaim{Account: account, ID: id, lease: s.newID(), Channel: d.Channel, NotificationID: d.NotificationID,
		Recipients: d.Recipients, Payload: d.Payload, Email: d.Email}
	if d.Channel == ChannelWebhook {
		p, err := s.getPolicy(ctx, tx, account, d.PolicyID)
		if CodeOf(err) == CodeNotFound {
			return nil, s.finish(ctx, tx, d, now, DeliveryAttempt{At: now, Error: "the notification policy was deleted"}, DeliveryFailed)
		}
		if err != nil {
			return nil, err
		}
		c.secrets = p.signingSecrets(now)
	}
	until := now.Add(lease)
	d.Lease = c.lease
	if err := reschedule(ctx, tx, d, &until); err != nil {
		return nil, err
	}
	return c, putDelivery(ctx, tx, account, id, d)
}

// ReleaseDelivery gives back a claimed delivery that was not sent (the
// dispatcher is stopping): due again now, for any dispatcher, without an
// attempt recorded. A failure is logged and leaves the lease to expire.
func (s *Service) ReleaseDelivery(ctx context.Context, c *DeliveryClaim) {
	now := s.clock()
	err := s.store.Update(ctx, func(tx Tx) error {
		d, err := getRecord[deliveryRecord](ctx, tx, tableDeliveries, key(c.Account, c.ID))
		if errors.Is(err, ErrNotFound) {
			return nil
		}
		if err != nil || d.Lease != c.lease || d.Status != DeliveryPending {
			return err
		}
		d.Lease = ""
		if err := reschedule(ctx, tx, d, &now); err != nil {
			return err
		}
		return putDelivery(ctx, tx, c.Account, c.ID, d)
	})
	if err != nil {
		s.log.Warn("releasing a claimed delivery", "delivery", c.ID, "err", err)
	}
}

// finish records a last attempt and takes the delivery out of the queue.
func (s *Service) finish(ctx context.Context, tx Tx, d *deliveryRecord, now time.Time, a DeliveryAttempt, status DeliveryStatus) error {
	d.Attempts = append(d.Attempts, a)
	d.Status, d.Lease, d.UpdatedAt = status, "", now
	if err := reschedule(ctx, tx, d, nil); err != nil {
		return err
	}
	return putDelivery(ctx, tx, d.ServiceAccountID, d.ID, d)
}

// DeliveryResult is the outcome of one attempt of a claimed delivery.
type DeliveryResult struct {
	// At is when the attempt was made.
	At time.Time
	// StatusCode is the webhook receiver's HTTP status; 0 for e-mail or
	// when no answer came.
	StatusCode int
	// Err says why the attempt failed; empty when it succeeded.
	Err string
	// Final stops retries (410 Gone, e-mail not configured).
	Final bool
	// RetryAfter is the receiver's Retry-After (429, 503); 0 if none.
	RetryAfter time.Duration
}

// RecordDeliveryAttempt records the result of a claimed delivery and
// schedules the next attempt: success → SUCCEEDED; failure → the next wait
// of RetrySchedule (with jitter, or the receiver's longer Retry-After), or
// FAILED after the last one or when r.Final. A result whose lease is no
// longer the delivery's (it expired and another dispatcher took over) is
// dropped. It reports the attempt to Config.Observer first.
func (s *Service) RecordDeliveryAttempt(ctx context.Context, c *DeliveryClaim, r DeliveryResult) error {
	if f := s.observer.DeliveryAttempted; f != nil {
		f(c.Channel, r.Err == "")
	}
	now := s.clock()
	return internal(s.store.Update(ctx, func(tx Tx) error {
		d, err := getRecord[deliveryRecord](ctx, tx, tableDeliveries, key(c.Account, c.ID))
		if errors.Is(err, ErrNotFound) {
			return nil
		}
		if err != nil || d.Lease != c.lease || d.Status != DeliveryPending {
			return err
		}
		a := DeliveryAttempt{At: r.At, StatusCode: r.StatusCode, Error: r.Err, Succeeded: r.Err == ""}
		switch {
		case a.Succeeded:
			return s.finish(ctx, tx, d, now, a, DeliverySucceeded)
		case r.Final || d.Failures >= len(RetrySchedule):
			return s.finish(ctx, tx, d, now, a, DeliveryFailed)
		}
		wait, err := s.jitter(RetrySchedule[d.Failures])
		if err != nil {
			return err
		}
		wait = max(wait, min(r.RetryAfter, maxRetryAfter))
		next := now.Add(wait)
		d.Failures++
		d.Attempts = append(d.Attempts, a)
		d.Lease, d.UpdatedAt = "", now
		if err := reschedule(ctx, tx, d, &next); err != nil {
			return err
		}
		return putDelivery(ctx, tx, c.Account, c.ID, d)
	}))
}

// jitter returns d plus up to 10% of d at random, rounded up to the second
// (stored times have second precision).
func (s *Service) jitter(d time.Duration) (time.Duration, error) {
	b, err := s.randomBytes(8)
	if err != nil {
		return 0, err
	}
	var n uint64 // the 8 random bytes, big-endian
	for _, c := range b {
		n = n<<8 | uint64(c)
	}
	extra := time.Duration(n % uint64(d/10+1))
	return (d + extra + time.Second - 1).Truncate(time.Second), nil
}

// OutboxBacklog is the state of the notification outbox across accounts.
type OutboxBacklog struct {
	// Pending is how many deliveries wait to be sent or retried.
	Pending int
	// OldestCreatedAt is when the oldest pending delivery was created;
	// zero when none is pending.
	OldestCreatedAt time.Time
}

// OutboxBacklog counts the pending deliveries of every account and finds
// the oldest, for monitoring (a growing backlog or an old delivery means
// receivers are down or the dispatcher is not running). It reads every
// pending delivery: cheap while the backlog is small, which is when it
// matters least.
func (s *Service) OutboxBacklog(ctx context.Context) (OutboxBacklog, error) {
	var b OutboxBacklog
	err := s.store.View(ctx, func(tx Tx) error {
		b = OutboxBacklog{}
		var keys [][]byte // read after the scan: a Get inside a Scan is not every Store's
		err := tx.Scan(ctx, tableDeliveryQueue, Range{}, func(k, _ []byte) error {
			if parts := bytes.Split(k, []byte{keySep}); len(parts) == 3 {
				keys = append(keys, key(string(parts[1]), string(parts[2])))
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, k := range keys {
			d, err := getRecord[deliveryRecord](ctx, tx, tableDeliveries, k)
			if errors.Is(err, ErrNotFound) {
				continue // a stale queue entry: claimDue drops it
			}
			if err != nil {
				return err
			}
			if d.Status != DeliveryPending {
				continue
			}
			b.Pending++
			if b.OldestCreatedAt.IsZero() || d.CreatedAt.Before(b.OldestCreatedAt) {
				b.OldestCreatedAt = d.CreatedAt
			}
		}
		return nil
	})
	return b, internal(err)
}
