package billing_test

import (
	"context"
	"testing"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
	"github.com/google/go-cmp/cmp"
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

// parallelOn runs test as a parallel subtest named name, on a fixture of
// its own made by newFixture (newDocEnv, newSched).
func parallelOn[F any](t *testing.T, name string, newFixture func(testing.TB, ...billingtest.Option) F, test func(t *testing.T, f F)) {
	t.Helper()
	t.Run(name, func(t *testing.T) {
		t.Parallel()
		test(t, newFixture(t))
	})
}

// tenants returns a context and two accounts of svc, "a" and "b": the set-up
// of the tests that check what one account may see or change of another's.
func tenants(tb testing.TB, svc *billing.Service) (ctx context.Context, a, b string) {
	tb.Helper()
	return context.Background(), billingtest.Account(tb, svc, "a"), billingtest.Account(tb, svc, "b")
}

// newTenants is tenants on a fresh Service of the test kit's store.
func newTenants(tb testing.TB) (svc *billing.Service, ctx context.Context, a, b string) {
	tb.Helper()
	svc, _ = billingtest.NewService(tb)
	ctx, a, b = tenants(tb, svc)
	return svc, ctx, a, b
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

// fieldCase is a row of a validation table: a change to valid parameters
// and the fields the refusal names, in order.
type fieldCase[P any] struct {
	name   string
	change func(p *P)
	fields []string
}

// refuseFields runs each case as a subtest: valid() changed by the case is
// refused by create with validation_failed naming exactly the case's fields.
// The cases run one after another, so a check after refuseFields (nothing
// was stored) sees them all done.
func refuseFields[P any](t *testing.T, valid func() P, create func(p P) error, cases []fieldCase[P]) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := valid()
			tc.change(&p)
			if diff := cmp.Diff(tc.fields, errFields(t, create(p), billing.CodeValidationFailed)); diff != "" {
				t.Fatalf("invalid fields (-want +got):\n%s", diff)
			}
		})
	}
}

// errFields returns the fields err names, failing the test unless each
// error has code.
func errFields(t *testing.T, err error, code billing.Code) []string {
	t.Helper()
	var fields []string
	for _, e := range billing.Errors(err) {
		if e.Code != code {
			t.Fatalf("code %s, want %s: %v", e.Code, code, err)
		}
		fields = append(fields, e.Field)
	}
	return fields
}
