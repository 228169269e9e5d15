package console

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"math"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/billingd/billing"
)

// Guard is what the console asks of the server it is mounted in, so that
// its requests are limited and counted with the API's:
// *httpserver.Server implements it.
type Guard interface {
	// AllowKey takes n requests from the rate limit of API key keyID, or
	// reports false with the time after which they would be allowed.
	AllowKey(keyID string, n int) (time.Duration, bool)
	// CountAuthFailure counts a refused credential
	// (billingd_auth_failures_total).
	CountAuthFailure()
}

// openGuard allows everything and counts nothing: the Guard of a console
// without one.
type openGuard struct{}

func (openGuard) AllowKey(string, int) (time.Duration, bool) { return 0, true }
func (openGuard) CountAuthFailure()                          {}

// secure reports whether r reached the browser over TLS: directly, when
// SecureCookies says so (a TLS-terminating proxy in front), or through a
// trusted proxy that says X-Forwarded-Proto: https.
func (c *Console) secure(r *http.Request) bool {
	if c.cfg.SecureCookies || r.TLS != nil {
		return true
	}
	return c.trusted(r) && strings.EqualFold(strings.TrimSpace(r.Header.Get("X-Forwarded-Proto")), "https")
}

// trusted reports whether r's peer is one of the trusted proxies.
func (c *Console) trusted(r *http.Request) bool {
	if len(c.cfg.TrustedProxies) == 0 {
		return false
	}
	ip, ok := peerIP(r.RemoteAddr)
	return ok && c.isTrusted(ip)
}

func (c *Console) isTrusted(ip netip.Addr) bool {
	for _, p := range c.cfg.TrustedProxies {
		if p.Contains(ip.Unmap()) {
			return true
		}
	}
	return false
}

// peerIP is the IP address of a RemoteAddr.
func peerIP(remote string) (netip.Addr, bool) {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	ip, err := netip.ParseAddr(host)
	return ip.Unmap(), err == nil
}

// clientIP is the address the sign-in limiter counts r under: its peer,
// or, when the peer is a trusted proxy, the nearest address of
// X-Forwarded-For that is not a trusted proxy.
func (c *Console) clientIP(r *http.Request) string {
	ip, ok := peerIP(r.RemoteAddr)
	if !ok {
		return r.RemoteAddr
	}
	if !c.isTrusted(ip) {
		return ip.String()
	}
	hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		hop, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			break
		}
		ip = hop.Unmap()
		if !c.isTrusted(ip) {
			break
		}
	}
	return ip.String()
}

// hsts is the Strict-Transport-Security of a console answer over TLS: one
// year, this host only.
const hsts = "max-age=31536000"

// Sign-in backoff: after freeSignInFailures wrong sign-ins from one
// address, each further one blocks the address for twice as long as the
// one before, from 1 second up to maxSignInBackoff; a success clears it.
const (
	freeSignInFailures = 5
	maxSignInBackoff   = 15 * time.Minute
	maxSignInEntries   = 10000
)

// signInLimiter counts wrong sign-ins per client address.
type signInLimiter struct {
	mu      sync.Mutex
	entries map[string]*signInEntry
}

type signInEntry struct {
	failures int
	until    time.Time // blocked until
	last     time.Time
}

// blocked returns how long ip must still wait before it may try again.
func (l *signInLimiter) blocked(ip string, now time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e := l.entries[ip]; e != nil && now.Before(e.until) {
		return e.until.Sub(now)
	}
	return 0
}

// failed records a wrong sign-in from ip and returns the failures so far.
func (l *signInLimiter) failed(ip string, now time.Time) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.entries == nil {
		l.entries = map[string]*signInEntry{}
	}
	e := l.entries[ip]
	if e == nil {
		if len(l.entries) >= maxSignInEntries {
			l.prune(now)
		}
		e = &signInEntry{}
		l.entries[ip] = e
	}
	e.failures++
	e.last = now
	if over := e.failures - freeSignInFailures; over > 0 {
		wait := time.Duration(math.Min(float64(time.Second)*math.Pow(2, float64(over-1)), float64(maxSignInBackoff)))
		e.until = now.Add(wait)
	}
	return e.failures
}

// succeeded forgets ip's failures.
func (l *signInLimiter) succeeded(ip string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.entries, ip)
}

// prune drops the entries idle for longer than the longest backoff, and
// every entry if that is not enough: the map stays bounded whatever the
// number of addresses.
func (l *signInLimiter) prune(now time.Time) {
	for ip, e := range l.entries {
		if now.Sub(e.last) > maxSignInBackoff {
			delete(l.entries, ip)
		}
	}
	if len(l.entries) >= maxSignInEntries {
		clear(l.entries)
	}
}

// signInTokenAge is how long a sign-in form's token is accepted.
const signInTokenAge = time.Hour

// signInToken returns a new anti-forgery token of the sign-in form: a
// random nonce and an expiry, signed with the console's key. The form and
// a cookie both carry it; only a token this console signed, unexpired, is
// accepted.
func (c *Console) signInToken(now time.Time) string {
	payload := rand.Text() + "." + strconv.FormatInt(now.Add(signInTokenAge).Unix(), 10)
	return payload + "." + c.sign(payload)
}

// validSignInToken reports whether token is a sign-in token this console
// signed and that has not expired.
func (c *Console) validSignInToken(token string, now time.Time) bool {
	i := strings.LastIndexByte(token, '.')
	if i < 0 {
		return false
	}
	payload, sig := token[:i], token[i+1:]
	if !hmac.Equal([]byte(sig), []byte(c.sign(payload))) {
		return false
	}
	exp, err := strconv.ParseInt(payload[strings.LastIndexByte(payload, '.')+1:], 10, 64)
	return err == nil && now.Unix() < exp
}

// sign is the HMAC-SHA256 of payload with the console's key.
func (c *Console) sign(payload string) string {
	m := hmac.New(sha256.New, c.key)
	m.Write([]byte("billingd console sign-in\x00" + payload))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// keyTable holds the console's signing key (key "sign-in", 32 bytes),
// made on first start and shared by every instance on one store.
const keyTable billing.Table = "console_keys"

// signingKey returns the console's signing key from store, making it
// when there is none.
func signingKey(ctx context.Context, store billing.Store) ([]byte, error) {
	var key []byte
	err := store.Update(ctx, func(tx billing.Tx) error {
		b, err := tx.Get(ctx, keyTable, []byte("sign-in"))
		switch {
		case err == nil && len(b) == 32:
			key = append([]byte(nil), b...)
			return nil
		case err != nil && !errors.Is(err, billing.ErrNotFound):
			return err
		}
		key = make([]byte, 32)
		_, _ = rand.Read(key) // never fails (crypto/rand)
		return tx.Put(ctx, keyTable, []byte("sign-in"), key)
	})
	return key, err
}
