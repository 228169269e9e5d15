package billing_test

import (
	"context"
	"testing"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
)

// The fixtures and checks the root package's external tests share. Builders
// of one aggregate stay in that aggregate's test file; what several files use
// lives here.

// stores runs a test against the Service on each real store.
func stores(t *testing.T, test func(t *testing.T, svc *billing.Service, clock *billingtest.Clock)) {
	t.Helper()
	for _, tc := range []struct {
		name string
		opts []billingtest.Option
	}{{"memstore", nil}, {"boltstore", []billingtest.Option{billingtest.WithBolt()}}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			svc, clock := billingtest.NewService(t, tc.opts...)
			test(t, svc, clock)
		})
	}
}

// onStores runs fn as two parallel subtests: on memstore and on boltstore.
func onStores(t *testing.T, fn func(t *testing.T, opts ...billingtest.Option)) {
	t.Helper()
	t.Run("memstore", func(t *testing.T) { t.Parallel(); fn(t) })
	t.Run("boltstore", func(t *testing.T) { t.Parallel(); fn(t, billingtest.WithBolt()) })
}

// tenants returns a context and two accounts of svc, "a" and "b": the set-up
// of the tests that check what one account may see or change of another's.
func tenants(tb testing.TB, svc *billing.Service) (ctx context.Context, a, b string) {
	tb.Helper()
	return context.Background(), billingtest.Account(tb, svc, "a"), billingtest.Account(tb, svc, "b")
}

// result is what a call returned, to be checked by of.
type result[T any] struct {
	v   T
	err error
}

// must takes what a call returned: must(svc.GetInvoice(...)).of(t,
// "GetInvoice") is the value, or fails the test naming the call.
func must[T any](v T, err error) result[T] { return result[T]{v, err} }

// of returns the value, failing tb with "what: err" when the call failed.
func (r result[T]) of(tb testing.TB, what string) T {
	tb.Helper()
	if r.err != nil {
		tb.Fatalf("%s: %v", what, r.err)
	}
	return r.v
}
