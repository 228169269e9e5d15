package billing

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"
)

// webhookTimeout bounds one webhook request: connect, send, and the answer.
const webhookTimeout = 15 * time.Second

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

// NewWebhookClient returns the HTTP client webhooks are sent with: a 15 s
// timeout, no proxy, no redirects followed (a 3xx answer is returned as it
// is, and counts as a failure), and, unless allowPrivate, connections to
// loopback, private, link-local, CGNAT, multicast, unspecified and cloud
// metadata addresses refused at connect time.
func NewWebhookClient(allowPrivate bool) *http.Client {
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
		ResponseHeaderTimeout: webhookTimeout,
	}
	return &http.Client{Transport: t, Timeout: webhookTimeout, CheckRedirect: noRedirects}
}

func noRedirects(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
