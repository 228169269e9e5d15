package httpserver

import (
	"context"
	"net/http"
	"testing"

	"github.com/billingd/billing"
)

// TestRevokedKeyRefusedAtOnce: a key that authenticated requests (so it is
// in the Service's key cache) gets 401 on the very next request after
// RevokeAPIKey returns, while another key of the account keeps working.
func TestRevokedKeyRefusedAtOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, &Config{RateLimit: -1})
	k, err := e.svc.CreateAPIKey(context.Background(), e.account)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if r := e.do(req{method: http.MethodGet, path: "/usage-metrics", auth: k.Authorization()}); r.status != http.StatusOK {
			t.Fatalf("before revocation: %d %s", r.status, r.body)
		}
	}
	if _, err := e.svc.RevokeAPIKey(context.Background(), k.ID); err != nil {
		t.Fatal(err)
	}
	r := e.do(req{method: http.MethodGet, path: "/usage-metrics", auth: k.Authorization()})
	if r.status != http.StatusUnauthorized {
		t.Fatalf("revoked key: %d %s, want 401", r.status, r.body)
	}
	if r := e.do(req{method: http.MethodGet, path: "/usage-metrics"}); r.status != http.StatusOK {
		t.Fatalf("other key: %d %s", r.status, r.body)
	}
	wrong := billing.BasicAuthorization(k.ID, k.Secret+"x")
	if r := e.do(req{method: http.MethodGet, path: "/usage-metrics", auth: wrong}); r.status != http.StatusUnauthorized {
		t.Fatalf("wrong secret: %d, want 401", r.status)
	}
}
