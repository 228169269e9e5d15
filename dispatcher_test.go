package billing_test

import (
	"context"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
	"github.com/billingd/billing/dispatch"
	"github.com/billingd/billing/webhook"
)

// onlyDelivery returns the account's single delivery.
func (e *notifyEnv) onlyDelivery() billing.Delivery {
	e.t.Helper()
	ds := e.deliveries(billing.DeliveryFilter{})
	if len(ds) != 1 {
		e.t.Fatalf("%d deliveries, want 1", len(ds))
	}
	return ds[0]
}

// pendingWebhook makes one webhook delivery pending: a WEBHOOK policy to a
// receiver that answers with answer, then a customer created. It returns
// the receiver.
func (e *notifyEnv) pendingWebhook(answer func(attempt int, w http.ResponseWriter) int) *billingtest.WebhookReceiver {
	e.t.Helper()
	rc := billingtest.NewWebhookReceiver(e.t, answer)
	e.policy(billing.ChannelWebhook, []string{rc.URL})
	e.customer("Initech")
	return rc
}

// failing answers every webhook attempt with a 500.
func failing(int, http.ResponseWriter) int { return 500 }

// TestRetrySchedule: a receiver that always fails gets 8 attempts, spaced
// by the schedule plus at most 10% jitter, then the delivery is FAILED; a
// manual retry re-sends it with the same webhook-id.
func TestRetrySchedule(t *testing.T) {
	t.Parallel()
	e := newNotifyEnv(t, true)
	var ok atomic.Bool
	rc := e.pendingWebhook(func(int, http.ResponseWriter) int {
		if ok.Load() {
			return 200
		}
		return 500
	})
	d := dispatch.New(e.svc, dispatch.Config{Webhooks: e.webhooks})
	for i, wait := range billing.RetrySchedule {
		if n := e.runOnce(d); n != 1 {
			t.Fatalf("attempt %d: RunOnce made %d attempts", i+1, n)
		}
		dl := e.onlyDelivery()
		if dl.Status != billing.DeliveryPending || dl.NextAttemptAt == nil {
			t.Fatalf("after attempt %d: %+v", i+1, dl)
		}
		got := dl.NextAttemptAt.Sub(e.clock.Now())
		if got < wait || got > wait+wait/10+time.Second {
			t.Errorf("wait after attempt %d = %v, want %v + up to 10%%", i+1, got, wait)
		}
		e.clock.Set(*dl.NextAttemptAt)
	}
	e.runOnce(d)
	dl := e.onlyDelivery()
	if dl.Status != billing.DeliveryFailed || len(dl.Attempts) != 8 || dl.NextAttemptAt != nil {
		t.Fatalf("after the last retry: status %s, %d attempts", dl.Status, len(dl.Attempts))
	}
	if n := e.runOnce(d); n != 0 {
		t.Errorf("a FAILED delivery was attempted again")
	}
	if _, err := e.svc.RetryDelivery(context.Background(), e.account, dl.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.RetryDelivery(context.Background(), e.account, dl.ID); billing.CodeOf(err) != billing.CodeInvalidState {
		t.Errorf("retrying a PENDING delivery: %v, want invalid_state", err)
	}
	ok.Store(true)
	e.runOnce(d)
	dl = e.onlyDelivery()
	if dl.Status != billing.DeliverySucceeded || len(dl.Attempts) != 9 {
		t.Errorf("after the manual retry: %s with %d attempts", dl.Status, len(dl.Attempts))
	}
	hits := rc.Received()
	for _, h := range hits {
		if id, first := h.Header.Get(billing.HeaderWebhookID), hits[0].Header.Get(billing.HeaderWebhookID); id != first {
			t.Fatalf("webhook-id changed from %s to %s", first, id)
		}
	}
	if len(hits) != 9 {
		t.Errorf("receiver got %d requests, want 9", len(hits))
	}
}

// TestReceiverAnswers: 410 stops at once, Retry-After on 429/503 is honoured
// when longer than the schedule, and a redirect is a failure that is not
// followed.
func TestReceiverAnswers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		answer   func(attempt int, w http.ResponseWriter) int
		status   billing.DeliveryStatus
		minWait  time.Duration
		wantCode int
	}{
		{"GoneStopsRetries", func(int, http.ResponseWriter) int { return 410 }, billing.DeliveryFailed, 0, 410},
		{"RetryAfterLongerIsHonoured", func(_ int, w http.ResponseWriter) int {
			w.Header().Set("Retry-After", "3600")
			return 503
		}, billing.DeliveryPending, time.Hour, 503},
		{"RetryAfterShorterIsIgnored", func(_ int, w http.ResponseWriter) int {
			w.Header().Set("Retry-After", "1")
			return 429
		}, billing.DeliveryPending, 5 * time.Second, 429},
		{"RedirectIsFailure", func(_ int, w http.ResponseWriter) int {
			w.Header().Set("Location", "/elsewhere")
			return 302
		}, billing.DeliveryPending, 5 * time.Second, 302},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newNotifyEnv(t, true)
			rc := billingtest.NewWebhookReceiver(t, tc.answer)
			e.policy(billing.ChannelWebhook, []string{rc.URL + "/hook"})
			e.customer("Initech")
			e.runOnce(dispatch.New(e.svc, dispatch.Config{Webhooks: e.webhooks}))
			dl := e.onlyDelivery()
			if dl.Status != tc.status || len(dl.Attempts) != 1 || dl.Attempts[0].StatusCode != tc.wantCode || dl.Attempts[0].Error == "" {
				t.Fatalf("delivery %+v", dl)
			}
			if tc.status == billing.DeliveryPending {
				if wait := dl.NextAttemptAt.Sub(e.clock.Now()); wait < tc.minWait || wait > tc.minWait+tc.minWait/10+time.Second {
					t.Errorf("next attempt in %v, want about %v", wait, tc.minWait)
				}
			}
			if n := len(rc.Received()); n != 1 {
				t.Errorf("receiver got %d requests, want 1 (no redirect followed)", n)
			}
		})
	}
}

// TestTwoDispatchersSendOnce: dispatchers running at the same time never
// claim the same delivery.
func TestTwoDispatchersSendOnce(t *testing.T) {
	t.Parallel()
	e := newNotifyEnv(t, true)
	rc := billingtest.NewWebhookReceiver(t, nil)
	e.policy(billing.ChannelWebhook, []string{rc.URL + "/a", rc.URL + "/b"})
	for range 20 {
		e.customer("Initech")
	}
	billingtest.AtOnce(t, 2, func(int) error {
		_, err := dispatch.New(e.svc, dispatch.Config{Webhooks: e.webhooks, BatchSize: 3, Concurrency: 2}).RunOnce(context.Background())
		return err
	})
	if got := len(rc.Received()); got != 40 {
		t.Errorf("receiver got %d requests, want 40 (20 notifications × 2 recipients, each once)", got)
	}
	if n := len(e.deliveries(billing.DeliveryFilter{Status: billing.DeliverySucceeded})); n != 40 {
		t.Errorf("%d SUCCEEDED deliveries, want 40", n)
	}
}

// TestRotateSecret: for 24 hours webhooks carry both signatures, then only
// the new one.
func TestRotateSecret(t *testing.T) {
	t.Parallel()
	e := newNotifyEnv(t, true)
	rc := billingtest.NewWebhookReceiver(t, nil)
	p := e.policy(billing.ChannelWebhook, []string{rc.URL})
	rotated, err := e.svc.RotateNotificationPolicySecret(context.Background(), e.account, p.ID)
	if err != nil || rotated.WebhookSecret == p.WebhookSecret || !strings.HasPrefix(rotated.WebhookSecret, "whsec_") {
		t.Fatalf("rotate: %+v, %v", rotated, err)
	}
	d := dispatch.New(e.svc, dispatch.Config{Webhooks: e.webhooks})
	e.customer("during the overlap")
	e.runOnce(d)
	e.clock.Advance(24*time.Hour + time.Second)
	e.customer("after the overlap")
	e.runOnce(d)
	hits := rc.Received()
	if len(hits) != 2 {
		t.Fatalf("%d requests, want 2", len(hits))
	}
	check := func(h billingtest.Webhook, secret string, want bool) {
		t.Helper()
		err := billing.VerifyWebhookAt(secret, h.Header, h.Body, time.Minute, time.Unix(mustInt(t, h.Header.Get("webhook-timestamp")), 0))
		if (err == nil) != want {
			t.Errorf("verify with a secret: %v, want ok=%v (signature %q)", err, want, h.Header.Get("webhook-signature"))
		}
	}
	check(hits[0], p.WebhookSecret, true)
	check(hits[0], rotated.WebhookSecret, true)
	if n := len(strings.Fields(hits[0].Header.Get("webhook-signature"))); n != 2 {
		t.Errorf("%d signatures during the overlap, want 2", n)
	}
	check(hits[1], p.WebhookSecret, false)
	check(hits[1], rotated.WebhookSecret, true)
}

func mustInt(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestPolicyDeletedStopsDeliveries: pending deliveries of a deleted policy
// fail without being sent.
func TestPolicyDeletedStopsDeliveries(t *testing.T) {
	t.Parallel()
	e := newNotifyEnv(t, true)
	rc := billingtest.NewWebhookReceiver(t, nil)
	p := e.policy(billing.ChannelWebhook, []string{rc.URL})
	e.customer("Initech")
	if _, err := e.svc.DeleteNotificationPolicy(context.Background(), e.account, p.ID); err != nil {
		t.Fatal(err)
	}
	e.runOnce(dispatch.New(e.svc, dispatch.Config{Webhooks: e.webhooks}))
	if dl := e.onlyDelivery(); dl.Status != billing.DeliveryFailed || len(rc.Received()) != 0 {
		t.Errorf("delivery %+v, %d requests; want FAILED and none sent", dl, len(rc.Received()))
	}
}

// TestPruneDeliveries: finished deliveries older than the retention go,
// pending ones and recent ones stay.
func TestPruneDeliveries(t *testing.T) {
	t.Parallel()
	e := newNotifyEnv(t, true)
	rc := billingtest.NewWebhookReceiver(t, nil)
	e.policy(billing.ChannelWebhook, []string{rc.URL})
	e.customer("old")
	e.runOnce(dispatch.New(e.svc, dispatch.Config{Webhooks: e.webhooks}))
	e.clock.Advance(31 * 24 * time.Hour)
	e.customer("pending")
	n, err := e.svc.PruneDeliveries(context.Background(), 30*24*time.Hour)
	if err != nil || n != 1 {
		t.Fatalf("PruneDeliveries = %d, %v; want 1", n, err)
	}
	if dl := e.onlyDelivery(); dl.Status != billing.DeliveryPending {
		t.Errorf("left %+v, want the pending delivery", dl)
	}
}

// TestSSRFRefusedAtConnect: by default webhooks never connect to loopback,
// private, link-local, CGNAT or metadata addresses, named directly or
// through a host name.
func TestSSRFRefusedAtConnect(t *testing.T) {
	t.Parallel()
	// IP literals of refused ranges are refused when a policy is created
	// (TestWebhookIPLiteralsAreRefusedAtCreation); names are not, and
	// every address is checked again when dialled. The policy is made by a
	// Service that allows private targets, as a policy created before the
	// creation check was, and sent by a sender that refuses them.
	e := newNotifyEnv(t, true)
	e.webhooks = webhook.NewSender(false)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var connected atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			connected.Add(1)
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	targets := []string{
		"https://127.0.0.1:" + itoa(int64(port)) + "/hook",
		"https://localhost:" + itoa(int64(port)) + "/hook",
		"https://[::1]:" + itoa(int64(port)) + "/hook",
		"https://10.1.2.3/hook",
		"https://192.168.1.1/hook",
		"https://169.254.169.254/latest/meta-data",
		"https://100.64.0.1/hook",
	}
	e.policy(billing.ChannelWebhook, targets)
	e.customer("Initech")
	e.runOnce(dispatch.New(e.svc, dispatch.Config{Webhooks: e.webhooks}))
	ds := e.deliveries(billing.DeliveryFilter{})
	if len(ds) != len(targets) {
		t.Fatalf("%d deliveries, want %d", len(ds), len(targets))
	}
	for _, dl := range ds {
		if len(dl.Attempts) != 1 || !strings.Contains(dl.Attempts[0].Error, "unless private targets are allowed") {
			t.Errorf("%s: attempts %+v, want a refusal", dl.Recipients[0], dl.Attempts)
		}
	}
	if n := connected.Load(); n != 0 {
		t.Errorf("%d connections reached the loopback listener", n)
	}
}

// TestExpiredLeaseCannotRecord: a dispatcher whose lease expired while it
// was sending (another dispatcher claimed the delivery and recorded its
// own attempt) cannot record its result over the new holder's: the
// delivery keeps one failure, not two.
func TestExpiredLeaseCannotRecord(t *testing.T) {
	t.Parallel()
	e := newNotifyEnv(t, true)
	e.pendingWebhook(failing)
	other := dispatch.New(e.svc, dispatch.Config{Webhooks: e.webhooks})
	took := 0
	cfg := dispatch.Config{Webhooks: billingtest.AfterSending(e.webhooks, func() {
		// While this dispatcher's result is on its way, its lease runs
		// out and the other dispatcher takes the delivery over.
		e.clock.Advance(2 * time.Minute)
		took = e.runOnce(other)
	})}
	if n := e.runOnce(dispatch.New(e.svc, cfg)); n != 1 || took != 1 {
		t.Fatalf("attempts: %d by the first dispatcher, %d by the second", n, took)
	}
	dl := e.onlyDelivery()
	if len(dl.Attempts) != 1 || dl.Status != billing.DeliveryPending {
		t.Fatalf("%s with %d attempts recorded, want PENDING with the new holder's one", dl.Status, len(dl.Attempts))
	}
	// One failure: the next wait is the schedule's first, not its second.
	if got := dl.NextAttemptAt.Sub(e.clock.Now()); got < billing.RetrySchedule[0] || got > billing.RetrySchedule[0]+billing.RetrySchedule[0]/10+time.Second {
		t.Errorf("next attempt in %v, want %v and jitter", got, billing.RetrySchedule[0])
	}
}

// TestManualRetryRestartsTheRetryCounter: with a fixed sequence of answers
// (fail, fail, manual retry, fail), the wait after each failure follows
// the failures since the last manual retry: the schedule's first, second,
// then first again.
func TestManualRetryRestartsTheRetryCounter(t *testing.T) {
	t.Parallel()
	e := newNotifyEnv(t, true)
	e.pendingWebhook(failing)
	d := dispatch.New(e.svc, dispatch.Config{Webhooks: e.webhooks})
	wantWait := func(step string, want time.Duration) {
		t.Helper()
		dl := e.onlyDelivery()
		if dl.NextAttemptAt == nil {
			t.Fatalf("%s: no next attempt (%s)", step, dl.Status)
		}
		if got := dl.NextAttemptAt.Sub(e.clock.Now()); got < want || got > want+want/10+time.Second {
			t.Errorf("%s: next attempt in %v, want %v and jitter", step, got, want)
		}
		e.clock.Set(*dl.NextAttemptAt)
	}
	e.runOnce(d)
	wantWait("first failure", billing.RetrySchedule[0])
	e.runOnce(d)
	wantWait("second failure", billing.RetrySchedule[1])
	// Give up on it by hand (FAILED), then retry it by hand.
	for e.onlyDelivery().Status == billing.DeliveryPending {
		e.runOnce(d)
		if dl := e.onlyDelivery(); dl.NextAttemptAt != nil {
			e.clock.Set(*dl.NextAttemptAt)
		}
	}
	if _, err := e.svc.RetryDelivery(context.Background(), e.account, e.onlyDelivery().ID); err != nil {
		t.Fatal(err)
	}
	e.runOnce(d)
	wantWait("the failure after a manual retry", billing.RetrySchedule[0])
}
