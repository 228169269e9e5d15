package billing_test

import (
	"context"
	"slices"
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

// filterCase is a row of a list filter table: a filter and the ids of the
// items it lists, in order (nil: none).
type filterCase[F any] struct {
	name string
	f    F
	want []string
}

// filterTable runs each case as a parallel subtest: list on account with
// the case's filter answers exactly the case's items (id gives an item's
// id), in order, and counts them in totalResultSize.
func filterTable[F, T any](t *testing.T, list func(context.Context, string, F, billing.ListParams) (billing.Page[T], error), account string, id func(T) string, cases []filterCase[F]) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			page, err := list(context.Background(), account, tc.f, billing.ListParams{})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, item := range page.Items {
				got = append(got, id(item))
			}
			if !slices.Equal(got, tc.want) || page.TotalResultSize != len(tc.want) {
				t.Fatalf("ids = %v (total %d), want %v", got, page.TotalResultSize, tc.want)
			}
		})
	}
}

// pages collects every item of a list, following the after cursors (100
// items a page unless fetch sets another limit).
func pages[T any](t testing.TB, fetch func(billing.ListParams) (billing.Page[T], error)) []T {
	t.Helper()
	var out []T
	p := billing.ListParams{Limit: 100}
	for {
		page, err := fetch(p)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, page.Items...)
		if page.After == "" {
			return out
		}
		p.After = page.After
	}
}

// listsNothing fails the test unless list answers no item on account under
// the zero filter; what says why the list must be empty.
func listsNothing[F, T any](t *testing.T, list func(context.Context, string, F, billing.ListParams) (billing.Page[T], error), account, what string) {
	t.Helper()
	var f F
	page, err := list(context.Background(), account, f, billing.ListParams{})
	if err != nil || len(page.Items) != 0 || page.TotalResultSize != 0 {
		t.Fatalf("%s: %+v, %v", what, page, err)
	}
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
