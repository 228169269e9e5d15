package billingtest

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"

	"github.com/billingd/billing"
)

// WebhookReceiver is a real webhook endpoint on loopback for tests of
// deliveries: it records every request and answers each with the status
// (and headers) its answer function picks. It closes when the test ends.
// It is safe for concurrent use.
type WebhookReceiver struct {
	// URL is the receiver's base URL; requests to any path below it are
	// received too.
	URL string

	answer func(attempt int, w http.ResponseWriter) int
	mu     sync.Mutex
	got    []Webhook
}

// Webhook is one request a WebhookReceiver received.
type Webhook struct {
	// Header is the request's header: webhook-id, webhook-timestamp and
	// webhook-signature among others.
	Header http.Header
	// Body is the request's body, the notification as JSON.
	Body []byte
	// Attempt is 1 for the first request with its webhook-id, 2 for the
	// second, and so on.
	Attempt int
	// Status is the status the receiver answered.
	Status int
}

// NewWebhookReceiver starts a receiver. answer returns the status of the
// attempt-th request of a webhook-id and may set headers of the answer on
// w (Retry-After, Location); nil answers 200 to every request.
func NewWebhookReceiver(tb testing.TB, answer func(attempt int, w http.ResponseWriter) int) *WebhookReceiver {
	tb.Helper()
	r := &WebhookReceiver{answer: answer}
	srv := httptest.NewServer(http.HandlerFunc(r.serve))
	tb.Cleanup(srv.Close)
	r.URL = srv.URL
	return r
}

// serve records one request and answers it.
func (r *WebhookReceiver) serve(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	h := Webhook{Header: req.Header.Clone(), Body: body, Attempt: 1, Status: http.StatusOK}
	for _, prev := range r.got {
		if prev.Header.Get(billing.HeaderWebhookID) == req.Header.Get(billing.HeaderWebhookID) {
			h.Attempt++
		}
	}
	if r.answer != nil {
		h.Status = r.answer(h.Attempt, w)
	}
	r.got = append(r.got, h)
	r.mu.Unlock()
	w.WriteHeader(h.Status)
}

// Received returns the requests received so far, in the order they
// arrived.
func (r *WebhookReceiver) Received() []Webhook {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

// AfterSending returns a WebhookSender that sends through s, then runs f
// before handing back the result: a dispatcher's moment between a sent
// webhook and its recorded attempt, where the crash and lease tests act.
func AfterSending(s billing.WebhookSender, f func()) billing.WebhookSender {
	return afterSending{s, f}
}

type afterSending struct {
	billing.WebhookSender
	after func()
}

func (a afterSending) SendWebhook(ctx context.Context, w billing.Webhook) billing.WebhookResult {
	r := a.WebhookSender.SendWebhook(ctx, w)
	a.after()
	return r
}
