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
)

// refusedPrefixes are the address ranges a webhook may not connect to
// unless private targets are allowed, besides what the netip predicates
// cover (loopback, private, link-local, multicast, unspecified).
var refusedPrefixes = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),          // "this network"
	netip.MustParsePrefix("100.64.0.0/10"),      // CGNAT
	netip.MustParsePrefix("192.0.0.0/24"),       // IETF protocol assignments
	netip.MustParsePrefix("198.18.0.0/15"),      // benchmarking
	netip.MustParsePrefix("240.0.0.0/4"),        // reserved, broadcast
	netip.MustParsePrefix("169.254.169.254/32"), // cloud metadata (also link-local)
	netip.MustParsePrefix("fd00:ec2::254/128"),  // AWS metadata over IPv6 (also private)
	netip.MustParsePrefix("64:ff9b::/96"),       // NAT64: checked through the embedded IPv4 too
	netip.MustParsePrefix("100::/64"),           // discard-only
}

// checkTarget returns an error when a webhook must not connect to addr.
func checkTarget(addr netip.Addr) error {
	addr = addr.Unmap()
	switch {
	case addr.IsLoopback(), addr.IsPrivate(), addr.IsLinkLocalUnicast(), addr.IsLinkLocalMulticast(),
		addr.IsInterfaceLocalMulticast(), addr.IsMulticast(), addr.IsUnspecified():
		return fmt.Errorf("webhook target %s is a loopback, private, link-local, multicast or unspecified address, which is refused unless private targets are allowed", addr)
	}
	for _, p := range refusedPrefixes {
		if p.Contains(addr) {
			return fmt.Errorf("webhook target %s is in the refused range %s (CGNAT, reserved or cloud metadata) unless private targets are allowed", addr, p)
		}
	}
	return nil
}

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
