// Package webhook sends billingd's webhooks over HTTP: Sender implements
// billing.WebhookSender, with an SSRF-safe dialer.
package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"syscall"
	"time"

	"github.com/billingd/billing"
	"github.com/billingd/billing/internal/iprange"
)

// checkTarget returns an error when a webhook must not connect to addr
// (internal/iprange: the list the Service also checks IP literals of
// webhook URLs against when a policy is created).
func checkTarget(addr netip.Addr) error { return iprange.Check(addr) }

// dialControl is a net.Dialer Control function that refuses connections to
// addresses checkTarget refuses. It runs after name resolution, on the
// address actually dialled, so DNS tricks (a name resolving to 127.0.0.1,
// rebinding between check and use) cannot get past it.
func dialControl(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("webhook target %q is not an IP address and port", address)
	}
	return checkTarget(ap.Addr())
}

// Sender sends webhooks with the Standard Webhooks headers.
type Sender struct {
	client *http.Client
}

var _ billing.WebhookSender = (*Sender)(nil)

// NewSender returns a Sender whose requests have a 15 s timeout
// (billing.WebhookTimeout), no proxy, no redirects followed (a 3xx answer
// counts as a failure), and, unless allowPrivate, connections to loopback,
// private, link-local, CGNAT, multicast, unspecified and cloud metadata
// addresses refused at connect time. Pass the Service's
// Config.WebhookAllowPrivate.
func NewSender(allowPrivate bool) *Sender {
	d := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	if !allowPrivate {
		d.Control = dialControl
	}
	t := &http.Transport{
		Proxy:                 nil, // a proxy would dial on our behalf and bypass the check
		DialContext:           d.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: billing.WebhookTimeout,
	}
	return &Sender{client: &http.Client{Transport: t, Timeout: billing.WebhookTimeout, CheckRedirect: noRedirects}}
}

// maxRetryAfter bounds a Retry-After in seconds (the Dispatcher caps it at
// 24 hours too), so that no header can overflow a time.Duration.
const maxRetryAfter = 24 * time.Hour

func noRedirects(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// SendWebhook POSTs w.Body to w.URL with the Standard Webhooks headers; any
// 2xx is a success.
func (s *Sender) SendWebhook(ctx context.Context, w billing.Webhook) billing.WebhookResult {
	var r billing.WebhookResult
	ctx, cancel := context.WithTimeout(ctx, billing.WebhookTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.URL, bytes.NewReader(w.Body))
	if err != nil {
		r.Err, r.Final = "the recipient is not a valid URL", true
		return r
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "billingd-webhooks/1")
	req.Header.Set(billing.HeaderWebhookID, w.ID)
	req.Header.Set(billing.HeaderWebhookTimestamp, strconv.FormatInt(w.Timestamp, 10))
	req.Header.Set(billing.HeaderWebhookSignature, w.Signature)
	resp, err := s.client.Do(req)
	if err != nil {
		r.Err = transportError(err)
		return r
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	r.StatusCode = resp.StatusCode
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
	case resp.StatusCode == http.StatusGone:
		r.Err, r.Final = "the receiver answered 410 Gone: no more retries", true
	default:
		r.Err = fmt.Sprintf("the receiver answered %d %s", resp.StatusCode, http.StatusText(resp.StatusCode))
		if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable {
			r.RetryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), time.Unix(w.Timestamp, 0))
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
