package httpserver

import (
	"context"
	"reflect"
	"strings"

	"github.com/billingd/billing"
)

// queryFilter is the one reader of a list's filter from the query: each
// field of F of string kind (CustomerID, Status, SortOrder, ...) takes the
// query parameter named as the field in lower camel case, a final "ID"
// read "Id" (CustomerID: customerId, SortOrder: sortOrder). Fields of
// other kinds (BillingScheduleFilter.Failing) are not read from the query.
// The Service checks the values.
type queryFilter[F any] struct {
	names  []string // the query parameters, in the order of F's fields
	fields []int    // the index in F of the field of each name
}

// filterOf describes the query parameters of the filter type F.
func filterOf[F any]() queryFilter[F] {
	var q queryFilter[F]
	t := reflect.TypeFor[F]()
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Type.Kind() != reflect.String {
			continue
		}
		name := strings.ToLower(f.Name[:1]) + f.Name[1:]
		if base, ok := strings.CutSuffix(name, "ID"); ok {
			name = base + "Id"
		}
		q.names = append(q.names, name)
		q.fields = append(q.fields, i)
	}
	return q
}

// read returns the filter the query of c gives; an absent parameter leaves
// its field empty.
func (q queryFilter[F]) read(c *call) F {
	var f F
	v := reflect.ValueOf(&f).Elem()
	for i, name := range q.names {
		v.Field(q.fields[i]).SetString(c.query.Get(name))
	}
	return f
}

// getList mounts GET path: the list fn of the account's records under the
// filter F read from the query by queryFilter. The route accepts exactly
// F's parameters besides limit, after and before.
func getList[F, T any](a api, path string, fn func(ctx context.Context, account string, f F, p billing.ListParams) (billing.Page[T], error)) {
	q := filterOf[F]()
	a.get(path, 200, filtered(fn, q.read), listed(q.names...))
}
