package console

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
	"github.com/billingd/billing/httpserver"
	"github.com/billingd/billing/render"
)

// metric returns the value of the sample line of /metrics that starts with
// name (a metric name with its labels), or -1.
func (f *fixture) metric(name string) float64 {
	f.tb.Helper()
	_, body := f.newBrowser().get("/metrics")
	for _, l := range strings.Split(body, "\n") {
		if rest, ok := strings.CutPrefix(l, name+" "); ok {
			v, _ := strconv.ParseFloat(rest, 64)
			return v
		}
	}
	return -1
}

// TestConsoleIsBehindTheAPIMiddleware: console requests are logged with
// a request id, counted in the request metrics and refused with 431 when
// their headers are too large, as the API's are.
func TestConsoleIsBehindTheAPIMiddleware(t *testing.T) {
	var logs billingtest.LogBuffer
	f := newFixtureWith(t, &httpserver.Config{RateLimit: -1, Logger: slog.New(slog.NewTextHandler(&logs, nil))}, nil)
	b := f.newBrowser()
	resp, _ := b.get("/console/sign-in")
	id := resp.Header.Get("X-Request-Id")
	if resp.StatusCode != http.StatusOK || id == "" {
		t.Fatalf("sign-in page: %d, X-Request-Id %q", resp.StatusCode, id)
	}
	if !strings.Contains(logs.String(), "request_id="+id) || !strings.Contains(logs.String(), "route=/console/*path") {
		t.Errorf("the console request is not in the request log:\n%s", logs.String())
	}
	if n := f.metric(`billingd_http_requests_total{method="GET",route="/console/*path",status="200"}`); n < 1 {
		t.Errorf("console requests are not counted in billingd_http_requests_total: %v", n)
	}
	rq := must(http.NewRequest(http.MethodGet, f.srv.URL+"/console/sign-in", nil))
	rq.Header.Set("X-Padding", strings.Repeat("x", 780<<10))
	resp, _ = b.read(b.client.Do(rq))
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("780 KB of headers on the sign-in page: %d, want 431", resp.StatusCode)
	}
	if resp, _ := b.get("/console"); resp.StatusCode != http.StatusMovedPermanently || resp.Header.Get("Location") != Prefix {
		t.Errorf("/console: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
}

// TestConsoleSharesTheKeysRateLimit: signed-in pages are charged to the
// API key's rate limit; beyond it they are 429 with Retry-After, and a
// document's rendering costs more than a page.
func TestConsoleSharesTheKeysRateLimit(t *testing.T) {
	f := newFixtureWith(t, &httpserver.Config{RateLimit: 2}, nil) // a burst of 4
	b := f.signedIn()
	ok, limited := 0, 0
	for range 30 {
		resp, _ := b.get("/console/customers")
		switch resp.StatusCode {
		case http.StatusOK:
			ok++
		case http.StatusTooManyRequests:
			limited++
			if resp.Header.Get("Retry-After") == "" {
				t.Error("a 429 without Retry-After")
			}
		default:
			t.Fatalf("a page view: %d", resp.StatusCode)
		}
	}
	if ok > 6 || limited < 24 {
		t.Errorf("30 page views at --rate-limit 2: %d answered, %d limited", ok, limited)
	}
	if got := requestCost(httptest.NewRequest("GET", "/console/invoices/x/pdf", nil)); got != httpserver.RenderCost {
		t.Errorf("a PDF costs %d requests, want %d", got, httpserver.RenderCost)
	}
}

// TestWrongSignInsBackOff: wrong sign-ins are logged and counted in
// billingd_auth_failures_total; after freeSignInFailures of them the
// address waits, twice as long each time, even with the right secret;
// once the wait is over the right secret signs in.
func TestWrongSignInsBackOff(t *testing.T) {
	var logs billingtest.LogBuffer
	f := newFixtureWith(t, nil, func(c *Config) { c.Logger = slog.New(slog.NewTextHandler(&logs, nil)) })
	b := f.newBrowser()
	unauthorized, limited := 0, 0
	for range 20 {
		switch resp, _ := b.signIn(f.key.ID, "sk_wrong"); resp.StatusCode {
		case http.StatusUnauthorized:
			unauthorized++
		case http.StatusTooManyRequests:
			limited++
			if resp.Header.Get("Retry-After") != "1" {
				t.Errorf("the first wait's Retry-After is %q, want 1", resp.Header.Get("Retry-After"))
			}
		default:
			t.Fatalf("a wrong sign-in: %d", resp.StatusCode)
		}
	}
	if unauthorized != freeSignInFailures+1 || limited != 20-unauthorized {
		t.Errorf("20 wrong sign-ins at once: %d refused, %d made to wait; want %d and the rest", unauthorized, limited, freeSignInFailures+1)
	}
	if n := f.metric("billingd_auth_failures_total"); n != float64(unauthorized) {
		t.Errorf("billingd_auth_failures_total = %v, want %d", n, unauthorized)
	}
	if got := strings.Count(logs.String(), "console sign-in refused"); got != unauthorized || strings.Contains(logs.String(), "sk_wrong") {
		t.Errorf("%d sign-in failures logged (want %d), or the secret was logged:\n%s", got, unauthorized, logs.String())
	}
	if resp, _ := b.signIn(f.key.ID, f.key.Secret); resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("the right secret while the address waits: %d, want 429", resp.StatusCode)
	}
	f.clock.Advance(time.Second)
	if resp, _ := b.signIn(f.key.ID, "sk_wrong"); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a wrong sign-in after the wait: %d", resp.StatusCode)
	}
	if resp, _ := b.signIn(f.key.ID, f.key.Secret); resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "2" {
		t.Errorf("after another failure the wait doubles: %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	f.clock.Advance(2 * time.Second)
	if resp, body := b.signIn(f.key.ID, f.key.Secret); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("the right secret after the wait: %d\n%s", resp.StatusCode, body)
	}
	// Another address is not made to wait for this one's failures.
	f.con.signIns.failed("192.0.2.1", f.clock.Now())
	if wait := f.con.signIns.blocked("192.0.2.2", f.clock.Now()); wait != 0 {
		t.Errorf("an unrelated address waits %v", wait)
	}
}

// TestSecureCookiesBehindATLSProxy: with SecureCookies (billingd's
// --console-secure-cookies) or a trusted proxy saying
// X-Forwarded-Proto: https, the cookies are Secure with the __Host- prefix
// and answers carry HSTS; an untrusted peer's header changes nothing.
func TestSecureCookiesBehindATLSProxy(t *testing.T) {
	cookieOf := func(resp *http.Response, name string) *http.Cookie {
		for _, c := range resp.Cookies() {
			if c.Name == name {
				return c
			}
		}
		return nil
	}
	t.Run("Flag", func(t *testing.T) {
		f := newFixtureWith(t, nil, func(c *Config) { c.SecureCookies = true })
		b := f.newBrowser()
		resp, _ := b.get("/console/sign-in")
		c := cookieOf(resp, hostPrefix+preCookieName)
		if c == nil || !c.Secure || c.Path != "/" || resp.Header.Get("Strict-Transport-Security") != hsts {
			t.Errorf("sign-in page with SecureCookies: cookie %+v, HSTS %q", c, resp.Header.Get("Strict-Transport-Security"))
		}
	})
	t.Run("TrustedProxy", func(t *testing.T) {
		loopback := netip.MustParsePrefix("127.0.0.0/8")
		f := newFixtureWith(t, nil, func(c *Config) { c.TrustedProxies = []netip.Prefix{loopback} })
		b := f.newBrowser()
		rq := must(http.NewRequest(http.MethodGet, f.srv.URL+"/console/sign-in", nil))
		rq.Header.Set("X-Forwarded-Proto", "https")
		resp, _ := b.read(b.client.Do(rq))
		if c := cookieOf(resp, hostPrefix+preCookieName); c == nil || !c.Secure || resp.Header.Get("Strict-Transport-Security") == "" {
			t.Errorf("through a trusted proxy over https: cookies %v, HSTS %q", resp.Cookies(), resp.Header.Get("Strict-Transport-Security"))
		}
		rq = httptest.NewRequest(http.MethodGet, "/console/sign-in", nil)
		rq.RemoteAddr = "127.0.0.1:5555"
		rq.Header.Set("X-Forwarded-For", "198.51.100.7, 127.0.0.2")
		if got := f.con.clientIP(rq); got != "198.51.100.7" {
			t.Errorf("the client address behind a trusted proxy is %q", got)
		}
	})
	t.Run("UntrustedPeer", func(t *testing.T) {
		f := newFixture(t)
		b := f.newBrowser()
		rq := must(http.NewRequest(http.MethodGet, f.srv.URL+"/console/sign-in", nil))
		rq.Header.Set("X-Forwarded-Proto", "https")
		resp, _ := b.read(b.client.Do(rq))
		if c := cookieOf(resp, preCookieName); c == nil || c.Secure || resp.Header.Get("Strict-Transport-Security") != "" {
			t.Errorf("an untrusted X-Forwarded-Proto made the answer secure: %v", resp.Cookies())
		}
		rq = httptest.NewRequest(http.MethodGet, "/console/sign-in", nil)
		rq.RemoteAddr = "203.0.113.9:5555"
		rq.Header.Set("X-Forwarded-For", "198.51.100.7")
		if got := f.con.clientIP(rq); got != "203.0.113.9" {
			t.Errorf("an untrusted peer's X-Forwarded-For was believed: %q", got)
		}
	})
}

// TestSignInTokenIsSigned: a sign-in token the console did not sign (as an
// attacker who can plant cookies would make) or one that expired is
// refused, even when the form and the cookie agree.
func TestSignInTokenIsSigned(t *testing.T) {
	f := newFixture(t)
	b := f.newBrowser()
	forged := "attacker-chosen-value"
	u := must(url.Parse(f.srv.URL + Prefix))
	b.client.Jar.SetCookies(u, []*http.Cookie{{Name: preCookieName, Value: forged, Path: Prefix}})
	resp, _ := b.post("/console/sign-in", url.Values{"csrf": {forged}, "keyId": {f.key.ID}, "secret": {f.key.Secret}})
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("a forged sign-in token: %d, want 403", resp.StatusCode)
	}
	token := b.token("/console/sign-in")
	f.clock.Advance(signInTokenAge + time.Second)
	resp, _ = b.post("/console/sign-in", url.Values{"csrf": {token}, "keyId": {f.key.ID}, "secret": {f.key.Secret}})
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("an expired sign-in token: %d, want 403", resp.StatusCode)
	}
	if resp, _ := b.signIn(f.key.ID, f.key.Secret); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("a fresh token: %d", resp.StatusCode)
	}
}

// countingStore counts the records scanned in the sessions table.
type countingStore struct {
	billing.Store
	mu      sync.Mutex
	scanned int
}

type countingTx struct {
	billing.Tx
	s *countingStore
}

func (s *countingStore) Update(ctx context.Context, fn func(billing.Tx) error) error {
	return s.Store.Update(ctx, func(tx billing.Tx) error { return fn(countingTx{tx, s}) })
}

func (t countingTx) Scan(ctx context.Context, table billing.Table, r billing.Range, fn func(k, v []byte) error) error {
	return t.Tx.Scan(ctx, table, r, func(k, v []byte) error {
		t.s.mu.Lock()
		t.s.scanned++
		t.s.mu.Unlock()
		return fn(k, v)
	})
}

// TestSessionsAreBounded: a key keeps at most MaxSessionsPerKey sessions
// (the oldest end), a sign-in reads only its own key's sessions however
// many others exist, and Sweep deletes the expired ones.
func TestSessionsAreBounded(t *testing.T) {
	f := newFixture(t)
	cs := &countingStore{Store: f.con.cfg.Store}
	f.con.sessions.store = cs
	first := f.signedIn()
	var browsers []*browser
	for range 12 {
		f.clock.Advance(time.Second)
		browsers = append(browsers, f.signedIn())
	}
	if !ended(first) || ended(browsers[len(browsers)-1]) {
		t.Error("the oldest session outlived the cap, or the newest ended")
	}
	live := 0
	countSessions := func() int {
		n := 0
		must(0, f.con.cfg.Store.View(context.Background(), func(tx billing.Tx) error {
			n = 0
			return tx.Scan(context.Background(), sessionTable, billing.Range{}, func(_, _ []byte) error { n++; return nil })
		}))
		return n
	}
	if live = countSessions(); live != f.con.cfg.MaxSessionsPerKey {
		t.Errorf("%d sessions after 13 sign-ins of one key, want %d", live, f.con.cfg.MaxSessionsPerKey)
	}
	// Another key's 500 sessions do not make this key's sign-in read them.
	other := must(f.svc.CreateAPIKey(context.Background(), f.account))
	for range 500 {
		must(f.con.sessions.create(context.Background(), &other.APIKey))
	}
	cs.mu.Lock()
	cs.scanned = 0
	cs.mu.Unlock()
	f.signedIn()
	if cs.scanned > f.con.cfg.MaxSessionsPerKey {
		t.Errorf("a sign-in scanned %d session records", cs.scanned)
	}
	f.clock.Advance(f.con.cfg.IdleTimeout + time.Minute)
	n, err := f.con.Sweep(context.Background())
	if err != nil || n != 2*live || countSessions() != 0 { // both keys' capped sessions
		t.Errorf("Sweep deleted %d (%v), %d left", n, err, countSessions())
	}
}

// TestConsoleRendersInTheSharedPool: the console's PDF is rendered in the
// Pool it was given, and a refusal of the pool is 503 with Retry-After.
func TestConsoleRendersInTheSharedPool(t *testing.T) {
	pool := render.NewPool(render.PoolConfig{})
	f := newFixtureWith(t, nil, func(c *Config) { c.Renders = pool })
	b := f.signedIn()
	if resp, _ := b.get("/console/invoices/" + f.invoice.ID + "/pdf"); resp.StatusCode != http.StatusOK || pool.Stats().Renders != 1 {
		t.Errorf("console PDF: %d, %d renders in the shared pool", resp.StatusCode, pool.Stats().Renders)
	}
}

// ended reports whether b's session has ended: a page redirects it to the
// sign-in page.
func ended(b *browser) bool {
	resp, _ := b.get("/console/customers")
	return resp.StatusCode == http.StatusSeeOther
}
