package httpserver

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
)

// withKey returns r with an Idempotency-Key.
func withKey(r req, key string) req {
	r.header = map[string]string{"Idempotency-Key": key}
	return r
}

// metricCount returns how many live metrics account has.
func (e *env) metricCount(account string) int {
	e.tb.Helper()
	p, err := e.svc.ListUsageMetrics(context.Background(), account, billing.UsageMetricFilter{}, billing.ListParams{})
	if err != nil {
		e.tb.Fatal(err)
	}
	return p.TotalResultSize
}

func TestIdempotentReplay(t *testing.T) {
	t.Parallel()
	onEveryStore(t, func(t *testing.T, e *env) {
		create := withKey(req{method: "POST", path: "/usage-metrics", body: metricBody("calls")}, "create-1")

		first := e.do(create)
		wantStatus(t, first, http.StatusCreated)
		if first.header.Get("Idempotent-Replayed") != "" {
			t.Error("the first answer says it is replayed")
		}
		e.clock.Advance(3600e9)
		again := e.do(create)
		wantStatus(t, again, http.StatusCreated)
		if !bytes.Equal(first.body, again.body) || again.header.Get("Idempotent-Replayed") != "true" {
			t.Errorf("replay: %s (Idempotent-Replayed %q), want %s",
				again.body, again.header.Get("Idempotent-Replayed"), first.body)
		}
		if n := e.metricCount(e.account); n != 1 {
			t.Errorf("%d metrics after a replay, want 1", n)
		}

		t.Run("ErrReusedWithOtherBody", func(t *testing.T) {
			r := e.do(withKey(req{method: "POST", path: "/usage-metrics", body: metricBody("other")}, "create-1"))
			wantError(t, r, http.StatusUnprocessableEntity, CodeIdempotencyKeyReused)
		})
		t.Run("ErrReusedWithOtherPath", func(t *testing.T) {
			r := e.do(withKey(req{method: "POST", path: "/products", body: metricBody("calls")}, "create-1"))
			wantError(t, r, http.StatusUnprocessableEntity, CodeIdempotencyKeyReused)
		})
		t.Run("ErrReusedWithOtherMethod", func(t *testing.T) {
			m := decode[billing.UsageMetric](t, first)
			r := e.do(withKey(req{method: "DELETE", path: "/usage-metrics/" + m.ID}, "create-1"))
			wantError(t, r, http.StatusUnprocessableEntity, CodeIdempotencyKeyReused)
			if got := decode[billing.UsageMetric](t, e.get("/usage-metrics/"+m.ID)); got.DeletedAt != nil {
				t.Error("a refused request deleted the metric")
			}
		})
		t.Run("KeysAreScopedToTheAccount", func(t *testing.T) {
			b, authB := e.newAccount("beta")
			r := e.do(req{method: "POST", path: "/usage-metrics", body: metricBody("calls"), auth: authB,
				header: map[string]string{"Idempotency-Key": "create-1"}})
			wantStatus(t, r, http.StatusCreated)
			if r.header.Get("Idempotent-Replayed") != "" || decode[billing.UsageMetric](t, r).ServiceAccountID != b {
				t.Errorf("account B got account A's answer: %s", r.body)
			}
		})
		t.Run("DeleteReplay", func(t *testing.T) {
			m := e.createMetric("to delete")
			del := withKey(req{method: "DELETE", path: "/usage-metrics/" + m.ID}, "del-1")
			first := e.do(del)
			wantStatus(t, first, http.StatusOK)
			again := e.do(del)
			if again.status != http.StatusOK || !bytes.Equal(first.body, again.body) || again.header.Get("Idempotent-Replayed") != "true" {
				t.Errorf("replayed DELETE: %d %s", again.status, again.body)
			}
		})
	})
}

// Long on purpose: a table of cases, one line each; its length is the cases, not logic.
func TestIdempotentErrorAnswers(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	t.Run("400NotStored", func(t *testing.T) {
		// A 400 is answered before the operation runs: the client fixes
		// its body and retries with the same key (Stripe's rule).
		bad := withKey(req{method: "POST", path: "/usage-metrics", body: `{"name": 1}`}, "bad-1")
		first := e.do(bad)
		wantError(t, first, http.StatusBadRequest, billing.CodeValidationFailed, "name")
		again := e.do(bad)
		wantError(t, again, http.StatusBadRequest, billing.CodeValidationFailed, "name")
		if again.header.Get("Idempotent-Replayed") != "" {
			t.Errorf("400 replayed: %s", again.header)
		}
		fixed := e.do(withKey(req{method: "POST", path: "/usage-metrics", body: metricBody("fixed")}, "bad-1"))
		wantStatus(t, fixed, http.StatusCreated)
		replay := e.do(withKey(req{method: "POST", path: "/usage-metrics", body: metricBody("fixed")}, "bad-1"))
		if replay.header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(replay.body, fixed.body) {
			t.Errorf("the fixed request's 201 is not replayed: %d %s", replay.status, replay.body)
		}
	})
	t.Run("Replayed404", func(t *testing.T) {
		r := withKey(req{method: "POST", path: "/invoices/00000000-0000-7000-8000-000000000000/send"}, "nf-1")
		wantError(t, e.do(r), http.StatusNotFound, billing.CodeNotFound)
		again := e.do(r)
		wantError(t, again, http.StatusNotFound, billing.CodeNotFound)
		if again.header.Get("Idempotent-Replayed") != "true" {
			t.Error("404 of an operation that ran is not replayed")
		}
	})
	t.Run("Replayed409Conflict", func(t *testing.T) {
		e.createMetric("dup")
		dup := withKey(req{method: "POST", path: "/usage-metrics", body: metricBody("dup")}, "dup-1")
		wantError(t, e.do(dup), http.StatusConflict, billing.CodeConflict, "name")
		r := e.do(dup)
		wantError(t, r, http.StatusConflict, billing.CodeConflict, "name")
		if r.header.Get("Idempotent-Replayed") != "true" {
			t.Error("409 conflict not replayed")
		}
	})
	t.Run("Unauthorized401NotStored", func(t *testing.T) {
		r := e.do(req{method: "POST", path: "/usage-metrics", body: metricBody("later"), auth: "Basic eDp5",
			header: map[string]string{"Idempotency-Key": "auth-1"}})
		wantError(t, r, http.StatusUnauthorized, billing.CodeUnauthorized)
		r = e.do(withKey(req{method: "POST", path: "/usage-metrics", body: metricBody("later")}, "auth-1"))
		wantStatus(t, r, http.StatusCreated)
	})
	t.Run("ErrInvalidKey", func(t *testing.T) {
		for _, key := range []string{"", strings.Repeat("k", 256), "tab\there", "nul\x00", "bad\xffutf8"} {
			r := e.do(withKey(req{method: "POST", path: "/usage-metrics", body: metricBody("never")}, key))
			wantError(t, r, http.StatusBadRequest, billing.CodeValidationFailed, "Idempotency-Key")
		}
		if n := e.metricCount(e.account); n != 3 {
			t.Errorf("%d metrics, want 3 (fixed, dup and later)", n)
		}
	})
	t.Run("LongestKey", func(t *testing.T) {
		key := strings.Repeat("é", 255)
		r := e.do(withKey(req{method: "POST", path: "/usage-metrics", body: metricBody("long")}, key))
		wantStatus(t, r, http.StatusCreated)
	})
	t.Run("IgnoredOnGET", func(t *testing.T) {
		r := e.do(withKey(req{method: "GET", path: "/usage-metrics"}, strings.Repeat("k", 300)))
		wantStatus(t, r, http.StatusOK)
	})
}

// TestIdempotencyKeyInUse holds the first request inside its operation and
// sends the duplicate meanwhile.
func TestIdempotencyKeyInUse(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil, billingtest.WithBolt())
	entered, release := make(chan struct{}), make(chan struct{})
	e.srv.group(e.srv.engine, false).post("/slow-metrics", 201,
		body(func(c *call, p *billing.CreateUsageMetricParams) (any, error) {
			entered <- struct{}{}
			<-release
			return e.svc.CreateUsageMetric(c.ctx, c.account, *p)
		}))
	slow := withKey(req{method: "POST", path: "/slow-metrics", body: metricBody("slow")}, "slow-1")

	firstDone := make(chan response)
	go func() { firstDone <- e.do(slow) }()
	<-entered
	wantError(t, e.do(slow), http.StatusConflict, CodeIdempotencyKeyInUse)
	t.Run("OtherKeysAreFree", func(t *testing.T) {
		wantStatus(t, e.do(withKey(req{method: "POST", path: "/usage-metrics", body: metricBody("free")}, "slow-2")),
			http.StatusCreated)
	})
	close(release)
	first := <-firstDone
	wantStatus(t, first, http.StatusCreated)

	// The 409 was not stored: the retry replays the first answer.
	again := e.do(slow)
	if again.status != http.StatusCreated || !bytes.Equal(again.body, first.body) || again.header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("retry after the first finished: %d %s", again.status, again.body)
	}
	if n := e.metricCount(e.account); n != 2 {
		t.Errorf("%d metrics, want 2", n)
	}
}

// TestIdempotencyRace sends many identical requests at once: exactly one
// metric is created, and every answer is that creation (first or replayed)
// or idempotency_key_in_use.
func TestIdempotencyRace(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	r := withKey(req{method: "POST", path: "/usage-metrics", body: metricBody("raced")}, "race")
	answers := e.doAtOnce(r, 32)
	var created []byte
	fresh := 0
	for _, a := range answers {
		switch a.status {
		case http.StatusCreated:
			if a.header.Get("Idempotent-Replayed") == "" {
				fresh++
			}
			if created != nil && !bytes.Equal(created, a.body) {
				t.Errorf("two different creations: %s and %s", created, a.body)
			}
			created = a.body
		default:
			wantError(t, a, http.StatusConflict, CodeIdempotencyKeyInUse)
		}
	}
	if fresh != 1 {
		t.Errorf("%d fresh creations, want 1", fresh)
	}
	if got := e.metricCount(e.account); got != 1 {
		t.Errorf("%d metrics, want 1", got)
	}
}

// TestIdempotencyWithoutServiceRecord covers an op that does not store its
// own record (it does not go through the Service's mutate helper): the
// server stores the answer itself.
func TestIdempotencyWithoutServiceRecord(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	calls := 0
	e.srv.group(e.srv.engine, false).post("/counter", 200, func(c *call) (any, error) {
		calls++
		return map[string]int{"calls": calls}, nil
	})
	r := withKey(req{method: "POST", path: "/counter"}, "count-1")
	first, again := e.do(r), e.do(r)
	wantStatus(t, first, http.StatusOK)
	if string(first.body) != `{"calls":1}` || !bytes.Equal(first.body, again.body) || again.header.Get("Idempotent-Replayed") != "true" || calls != 1 {
		t.Errorf("first %s, again %s, %d calls", first.body, again.body, calls)
	}
}

// TestConflictIsReplayedAfterItIsGone: a 409 answer is stored with its
// Idempotency-Key like any answer of an operation that ran: once the
// conflicting record is gone, the same request with the same key still
// gets the 409 (and creates nothing), while a new key creates the metric.
func TestConflictIsReplayedAfterItIsGone(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	first := e.createMetric("taken")
	dup := withKey(req{method: "POST", path: "/usage-metrics", body: metricBody("taken")}, "taken-1")
	wantError(t, e.do(dup), http.StatusConflict, billing.CodeConflict, "name")
	wantStatus(t, e.del("/usage-metrics/"+first.ID), http.StatusOK)
	again := e.do(dup)
	wantError(t, again, http.StatusConflict, billing.CodeConflict, "name")
	if again.header.Get("Idempotent-Replayed") != "true" {
		t.Error("the stored 409 was not replayed")
	}
	wantStatus(t, e.do(withKey(req{method: "POST", path: "/usage-metrics", body: metricBody("taken")}, "taken-2")), http.StatusCreated)
}
