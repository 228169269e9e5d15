// Package stripemock starts stripe-mock (github.com/stripe/stripe-mock,
// Stripe's official API mock) on loopback for tests, and records what a
// client sends it.
//
// The binary is found in $BILLINGD_STRIPE_MOCK, else as stripe-mock on the
// PATH, else installed once with `go install` (Version) into the user's
// cache directory. When none can be had the test is skipped, except in CI
// (CI=true), where it fails: .ci/run provides the binary.
package stripemock

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"
)

// Version is the stripe-mock the tests run.
const Version = "v0.203.0"

var (
	binOnce sync.Once
	binPath string
	binErr  string
)

// binary returns the stripe-mock binary, installing it once when needed.
func binary() (string, string) {
	binOnce.Do(func() {
		if p := os.Getenv("BILLINGD_STRIPE_MOCK"); p != "" {
			binPath = p
			return
		}
		if p, err := exec.LookPath("stripe-mock"); err == nil {
			binPath = p
			return
		}
		cache, err := os.UserCacheDir()
		if err != nil {
			cache = os.TempDir()
		}
		dir := filepath.Join(cache, "billingd-stripe-mock", Version)
		p := filepath.Join(dir, "stripe-mock")
		if _, err := os.Stat(p); err == nil {
			binPath = p
			return
		}
		cmd := exec.Command("go", "install", "github.com/stripe/stripe-mock@"+Version)
		cmd.Env = append(os.Environ(), "GOBIN="+dir)
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = "go install stripe-mock: " + err.Error() + ": " + string(out)
			return
		}
		binPath = p
	})
	return binPath, binErr
}

var listening = regexp.MustCompile(`Listening for HTTP at address: (\S+)`)

// Start runs stripe-mock on loopback for the test and returns its base URL
// (http://127.0.0.1:port). It is stopped when the test ends.
func Start(t testing.TB) string {
	t.Helper()
	bin, why := binary()
	if bin == "" {
		if os.Getenv("CI") != "" {
			t.Fatalf("stripe-mock is missing in CI: %s", why)
		}
		t.Skipf("stripe-mock test skipped: %s", why)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "-http-addr", "127.0.0.1:", "-https-addr", "127.0.0.1:")
	out, err := cmd.StdoutPipe()
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("starting stripe-mock: %v", err)
	}
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if m := listening.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
	}()
	select {
	case a := <-addr:
		return "http://" + a
	case <-time.After(60 * time.Second):
		t.Fatal("stripe-mock did not start listening within 60s")
	}
	return ""
}

// Request is one request a Recorder forwarded.
type Request struct {
	// Method and Path are the request's method and URL path.
	Method, Path string
	// Form is the decoded form body (Stripe's requests are form-encoded).
	Form url.Values
	// IdempotencyKey is the Idempotency-Key header.
	IdempotencyKey string
	// Authorization is the Authorization header as sent.
	Authorization string
}

// Recorder is a loopback HTTP server that records each request and
// forwards it to an upstream (stripe-mock), answering what it answers.
type Recorder struct {
	// URL is the recorder's base URL (http://127.0.0.1:port).
	URL  string
	mu   sync.Mutex
	reqs []Request
}

// NewRecorder starts a Recorder in front of upstream, closed with the test.
func NewRecorder(t testing.TB, upstream string) *Recorder {
	rec := &Recorder{}
	target, err := url.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		form, _ := url.ParseQuery(string(body))
		rec.mu.Lock()
		rec.reqs = append(rec.reqs, Request{Method: r.Method, Path: r.URL.Path, Form: form,
			IdempotencyKey: r.Header.Get("Idempotency-Key"), Authorization: r.Header.Get("Authorization")})
		rec.mu.Unlock()
		u := *target
		u.Path, u.RawQuery = r.URL.Path, r.URL.RawQuery
		req, err := http.NewRequestWithContext(r.Context(), r.Method, u.String(), bytes.NewReader(body))
		if err != nil {
			http.Error(w, err.Error(), 502)
			return
		}
		req.Header = r.Header.Clone()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			http.Error(w, err.Error(), 502)
			return
		}
		defer resp.Body.Close()
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	}))
	t.Cleanup(srv.Close)
	rec.URL = srv.URL
	return rec
}

// Requests returns the requests recorded so far whose path is path (every
// one for "").
func (r *Recorder) Requests(path string) []Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Request
	for _, q := range r.reqs {
		if path == "" || q.Path == path {
			out = append(out, q)
		}
	}
	return out
}
