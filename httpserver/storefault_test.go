package httpserver

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
	"github.com/billingd/billing/storage/faultstore"
)

// The storage failure suite (docs/ARCHITECTURE.md, "Reliability test suites"): a
// faultstore over bbolt fails writes, commits, transaction starts and
// reads. Every request that needs the failing operation answers 503
// unavailable with the error body; nothing is half-written (every record
// and list reads back exactly as before the fault); and once the fault
// clears the same requests succeed, an Idempotency-Key retried included.

// faultEnv is an env on a faultstore over a fresh bbolt file, with fixtures.
func faultEnv(t *testing.T) (*env, *faultstore.Store, fixtures) {
	t.Helper()
	fs := faultstore.New(billingtest.DurableStore(t))
	e := newEnv(t, &Config{RateLimit: -1}, billingtest.WithStore(fs))
	return e, fs, buildFixtures(t, e, e.auth, "f")
}

// readAll answers every GET route of e, keyed by route: what a client can
// see of the account.
func readAll(t *testing.T, e *env, f fixtures) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, rt := range apiRoutes(t, e) {
		if rt.method != http.MethodGet || isPreview(rt) {
			continue
		}
		path := f.path(rt.path)
		if q := validQueries[rt.String()]; q != "" {
			path += "?" + q
		}
		r := e.get(path)
		out[rt.String()] = fmt.Sprintf("%d %s", r.status, r.body)
	}
	return out
}

func wantSameView(t *testing.T, before, after map[string]string, during string) {
	t.Helper()
	for k, b := range before {
		if after[k] != b {
			t.Errorf("after %s, %s changed:\nbefore %.400s\nafter  %.400s", during, k, b, after[k])
		}
	}
}

// wantUnavailable checks a 503 unavailable answer.
func wantUnavailable(t *testing.T, what string, r response) {
	t.Helper()
	if r.status != http.StatusServiceUnavailable {
		t.Errorf("%s: %d %.300s, want 503", what, r.status, r.body)
		return
	}
	wantError(t, r, http.StatusServiceUnavailable, billing.CodeUnavailable)
	if strings.Contains(string(r.body), "faultstore") || strings.Contains(string(r.body), "/") {
		t.Errorf("%s: the error leaks internals: %s", what, r.body)
	}
}

func TestWriteFaultsAnswer503AndWriteNothing(t *testing.T) {
	t.Parallel()
	for _, fault := range []faultstore.Fault{
		{Op: faultstore.OpCommit},
		{Op: faultstore.OpBegin},
		{Op: faultstore.OpWrite},
		{Op: faultstore.OpWrite, After: 1}, // the second write of a transaction
		{Op: faultstore.OpWrite, After: 3},
	} {
		t.Run(fmt.Sprintf("%s_after_%d", fault.Op, fault.After), func(t *testing.T) {
			t.Parallel()
			e, fs, f := faultEnv(t)
			bodies := validBodies(f)
			before := readAll(t, e, f)
			failed := 0
			for _, rt := range apiRoutes(t, e) {
				if !mutating(rt.method) {
					continue
				}
				fs.Inject(fault)
				r := e.do(withKey(req{method: rt.method, path: f.path(rt.path), body: bodies[rt.String()]}, "k-"+rt.String()))
				fs.Clear()
				if r.status == http.StatusServiceUnavailable {
					failed++
					wantUnavailable(t, rt.String(), r)
				} else if r.status >= 500 {
					// A 2xx is allowed only for a request that needed no
					// write (a billing run with nothing to bill):
					// wantSameView below proves nothing changed.
					t.Errorf("%s under %+v: %d %.300s, want 503", rt, fault, r.status, r.body)
				}
			}
			if failed == 0 {
				t.Fatalf("no request failed under %+v", fault)
			}
			if fault.After == 0 {
				wantSameView(t, before, readAll(t, e, f), fmt.Sprintf("%d failed writes", failed))
			}
			wantStatus(t, e.get("/readyz"), http.StatusOK)
		})
	}
}

func TestRequestsSucceedAfterTheFaultClears(t *testing.T) {
	t.Parallel()
	e, fs, f := faultEnv(t)
	bodies := validBodies(f)
	for _, rt := range apiRoutes(t, e) {
		if !mutating(rt.method) {
			continue
		}
		r := withKey(req{method: rt.method, path: f.path(rt.path), body: bodies[rt.String()]}, "retry-"+rt.String())
		fs.Inject(faultstore.Fault{Op: faultstore.OpCommit})
		first := e.do(r)
		if first.status/100 == 4 || first.status/100 == 2 {
			fs.Clear() // refused by a state rule, or nothing to write
			checkAnswer(t, rt.String(), first)
			continue
		}
		wantUnavailable(t, rt.String(), first)
		wantUnavailable(t, "GET /readyz", e.get("/readyz"))
		fs.Clear()
		// The 503 was not stored: the same key runs the request now.
		again := e.do(r)
		if again.status >= 500 || again.header.Get("Idempotent-Replayed") != "" {
			t.Errorf("%s retried after the fault: %d (replayed %q) %.300s", rt, again.status, again.header.Get("Idempotent-Replayed"), again.body)
		}
		if again.status/100 == 2 {
			if replay := e.do(r); replay.status != again.status || string(replay.body) != string(again.body) || replay.header.Get("Idempotent-Replayed") != "true" {
				t.Errorf("%s: the retry's answer was not stored: %d %s", rt, replay.status, replay.body)
			}
		}
	}
	wantStatus(t, e.get("/readyz"), http.StatusOK)
	if fs.Failures() == 0 {
		t.Fatal("no fault was injected")
	}
}

func TestReadFaultsAnswer503(t *testing.T) {
	t.Parallel()
	for _, op := range []faultstore.Op{faultstore.OpView, faultstore.OpRead} {
		t.Run(op.String(), func(t *testing.T) {
			t.Parallel()
			e, fs, f := faultEnv(t)
			for _, rt := range apiRoutes(t, e) {
				if rt.method != http.MethodGet {
					continue
				}
				path := f.path(rt.path)
				if q := validQueries[rt.String()]; q != "" {
					path += "?" + q
				}
				// Fail every read: authentication's too. After 1: only
				// the operation's own reads fail. Each request uses a
				// fresh key: a key that authenticated before is served
				// from the Service's key cache without a read.
				for _, after := range []int{0, 1} {
					auth := e.newKey(e.account)
					fs.Inject(faultstore.Fault{Op: op, After: after})
					r := e.do(req{method: http.MethodGet, path: path, auth: auth})
					fs.Clear()
					wantUnavailable(t, fmt.Sprintf("%s (reads fail after %d)", rt, after), r)
				}
			}
			healthy(t, e, "read faults")
			wantStatus(t, e.get("/usage-metrics"), http.StatusOK)
		})
	}
}
