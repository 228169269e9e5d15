package httpserver

import (
	"context"
	"testing"
	"time"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
)

// idemPair returns the idempotency stores of two Servers that share one
// store and mark keys in flight, as two billingd on one PostgreSQL do, the
// first one's Service, and the clock of both.
func idemPair(t *testing.T) (*idempotencyStore, *idempotencyStore, *billing.Service, *billingtest.Clock) {
	t.Helper()
	store := billingtest.Store(t)
	ids := billingtest.IDs()
	svc, clock := billingtest.NewService(t, billingtest.WithStore(store), billingtest.WithConfig(billing.Config{ConcurrentBillingRuns: true, NewID: ids}))
	other, err := billing.New(store, &billing.Config{ConcurrentBillingRuns: true, NewID: ids, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	cfg := &Config{MarkIdempotencyKeysInFlight: true}
	return NewServer(svc, cfg).idem, NewServer(other, cfg).idem, svc, clock
}

// customerAnswer is the idempotency request of a customer creation.
func customerAnswer(key string) *idempotencyRequest {
	return &idempotencyRequest{key: key, fingerprint: "fp",
		render: func(any) (int, []byte, error) { return 201, []byte(`{"ok":true}`), nil }}
}

func TestIdempotencyKeyHeldAcrossInstances(t *testing.T) {
	t.Parallel()
	first, second, svc, _ := idemPair(t)
	ctx := context.Background()
	account := billingtest.Account(t, svc, "a")
	req := customerAnswer("k1")
	if rec, err := first.begin(ctx, account, req); err != nil || rec != nil {
		t.Fatalf("first begin: %v %v", rec, err)
	}
	// While the first request runs, the key is busy on the other instance.
	if _, err := second.begin(ctx, account, customerAnswer("k1")); billing.CodeOf(err) != CodeIdempotencyKeyInUse {
		t.Fatalf("second instance while the first runs: %v, want idempotency_key_in_use", err)
	}
	// A request that skipped begin (it raced ahead of the mark) cannot
	// store an answer over it: its change rolls back.
	racer := billing.WithCommitHook(ctx, second.hook(account, customerAnswer("k1")))
	if _, err := svc.CreateCustomer(racer, account, billing.CustomerParams{LegalName: "Racer"}); billing.CodeOf(err) != CodeIdempotencyKeyInUse {
		t.Fatalf("an operation racing the mark: %v, want idempotency_key_in_use", err)
	}
	// The first request's operation replaces its mark by its answer.
	if _, err := svc.CreateCustomer(billing.WithCommitHook(ctx, first.hook(account, req)), account, billing.CustomerParams{LegalName: "Winner"}); err != nil || !req.stored {
		t.Fatalf("the first request: %v, stored %v", err, req.stored)
	}
	req.hold = "" // as runAndStore does after a stored answer
	first.end(ctx, account, req)
	rec, err := second.begin(ctx, account, customerAnswer("k1"))
	if err != nil || rec == nil || string(rec.Body) != `{"ok":true}` || rec.Holder != "" {
		t.Fatalf("after the answer: %+v %v, want the stored answer", rec, err)
	}
	page, err := svc.ListCustomers(ctx, account, billing.CustomerFilter{}, billing.ListParams{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]int{}
	for _, c := range page.Items {
		names[c.LegalName]++
	}
	if names["Winner"] != 1 || names["Racer"] != 0 {
		t.Errorf("customers %v: want Winner once and no Racer", names)
	}

	// A request that stores nothing releases its mark at once.
	lost := customerAnswer("k2")
	if rec, err := first.begin(ctx, account, lost); err != nil || rec != nil {
		t.Fatalf("begin k2: %v %v", rec, err)
	}
	first.end(ctx, account, lost)
	if rec, err := second.begin(ctx, account, customerAnswer("k2")); err != nil || rec != nil {
		t.Errorf("k2 after release: %v %v, want free", rec, err)
	}
}

func TestIdempotencyAnswersArePerAccountExpireAndAreSwept(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ctx := context.Background()
	st := e.srv.idem
	if _, err := e.svc.CreateCustomer(billing.WithCommitHook(ctx, st.hook(e.account, customerAnswer("k1"))), e.account, billing.CustomerParams{LegalName: "A"}); err != nil {
		t.Fatal(err)
	}
	if rec, err := st.lookup(ctx, e.account, "k1"); err != nil || rec == nil || rec.Status != 201 || rec.Fingerprint != "fp" {
		t.Fatalf("lookup = %+v, %v", rec, err)
	}
	other := billingtest.Account(t, e.svc, "b")
	if rec, err := st.lookup(ctx, other, "k1"); err != nil || rec != nil {
		t.Fatalf("another account sees the answer: %+v, %v", rec, err)
	}
	// An error answer is stored by the HTTP layer itself.
	if err := st.storeAnswer(ctx, e.account, customerAnswer("k2"), 409, []byte(`{"errors":[]}`)); err != nil {
		t.Fatal(err)
	}
	if n, err := e.srv.SweepIdempotency(ctx); err != nil || n != 0 {
		t.Fatalf("SweepIdempotency before expiry = %d, %v; want 0", n, err)
	}
	e.clock.Advance(24*time.Hour + time.Second)
	if rec, _ := st.lookup(ctx, e.account, "k1"); rec != nil {
		t.Fatal("an expired answer still answers")
	}
	if n, err := e.srv.SweepIdempotency(ctx); err != nil || n != 2 {
		t.Fatalf("SweepIdempotency = %d, %v; want 2", n, err)
	}
}
