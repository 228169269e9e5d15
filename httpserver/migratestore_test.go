package httpserver

import (
	"bytes"
	"context"
	"math"
	"net/http"
	"strings"
	"testing"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
	"github.com/billingd/billing/storage/pgstore/pgtest"
	"github.com/billingd/billing/storage/storecopy"
)

// TestMigratedStoreAnswersIdentically fills a bbolt store with two records
// of every kind through the API (buildFixtures), copies it to PostgreSQL as
// billingd migrate-store does, and serves the copy: every GET route, with
// the same key, answers byte for byte what the original answers.
func TestMigratedStoreAnswersIdentically(t *testing.T) {
	t.Parallel()
	pgtest.Require(t)
	ctx := context.Background()
	bolt := billingtest.Bolt(t)
	oneMillisecond, _ := billingtest.MillisecondIDs(math.MaxInt) // a batch shares one id-index record
	src := newEnv(t, &Config{RateLimit: -1}, billingtest.WithStore(bolt), billingtest.WithConfig(billing.Config{NewID: oneMillisecond}))
	f := buildFixtures(t, src, src.auth, "m")
	wantStatus(t, src.post("/usage-events/batch", `{"events":[`+strings.Repeat(`{"customerAlias":"c","eventType":"t"},`, 4)+`{"customerAlias":"c","eventType":"t"}]}`), http.StatusCreated)
	// The billing engine's and the idempotency layer's records too.
	src.do(req{method: "POST", path: "/billing-runs", body: `{}`, header: map[string]string{"Idempotency-Key": "migrate-run"}})

	dst := pgtest.Open(t, nil)
	report, err := storecopy.ToPostgres(ctx, bolt, dst)
	if err != nil {
		t.Fatalf("copy: %v", err)
	}
	if len(report) < 20 {
		t.Errorf("only %d tables copied: %+v", len(report), report)
	}
	svc, err := billing.New(dst, &billing.Config{Now: src.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer(svc, &Config{RateLimit: -1})
	to := &env{tb: t, svc: svc, clock: src.clock, srv: srv, h: srv.Handler(), account: src.account, auth: src.auth}

	paths := []string{
		"/journal-entries?sourceId=" + f.ids["invoices/sent"],
		"/usage-events?limit=100", "/usage-events?limit=3", "/usage-events?customerAlias=c&limit=100",
		"/notifications/deliveries?limit=100",
	}
	for _, rt := range apiRoutes(t, src) {
		if rt.method == http.MethodGet && !isPreview(rt) && f.has(rt.path) {
			paths = append(paths, f.path(rt.path))
		}
	}
	ok := 0
	for _, p := range paths {
		want := src.do(req{method: "GET", path: p})
		got := to.do(req{method: "GET", path: p})
		if got.status != want.status || !bytes.Equal(got.body, want.body) {
			t.Errorf("GET %s after the copy: %d %s\nwant %d %s", p, got.status, got.body, want.status, want.body)
		}
		if want.status == http.StatusOK {
			ok++
		}
	}
	// Replaying the billing run's idempotency key answers from the copied
	// record, not by running again.
	first := src.do(req{method: "POST", path: "/billing-runs", body: `{}`, header: map[string]string{"Idempotency-Key": "migrate-run"}})
	again := to.do(req{method: "POST", path: "/billing-runs", body: `{}`, header: map[string]string{"Idempotency-Key": "migrate-run"}})
	if !bytes.Equal(first.body, again.body) || first.status != again.status {
		t.Errorf("idempotent replay after the copy: %d %s, want %d %s", again.status, again.body, first.status, first.body)
	}
	t.Logf("%d GETs compared, %d of them 200", len(paths), ok)
	if ok < 25 {
		t.Errorf("only %d GETs answered 200: the comparison covers too little", ok)
	}
}
