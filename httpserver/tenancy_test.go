package httpserver

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/billingd/billing"
)

// The tenancy matrix (docs/api-guide.md, "Authentication";
// docs/ARCHITECTURE.md, "Reliability test suites"): accounts A and B each build fixtures through
// the API. For every registered route, B's credentials on A's ids answer
// 404 and change nothing; B's lists never show A's records, whatever the
// filters; and a body of B that references A's records is refused as a
// reference to a missing record.

// validQueries are the query strings a route needs to get past its own
// parameter checks to the record lookup.
var validQueries = map[string]string{
	"GET /usage-metrics/:id/calculate": "customerAliases=acme&periodStart=2024-07-01&periodEnd=2024-07-31",
}

// Long on purpose: a table of cases, one line each; its length is the cases, not logic.
func TestTenancyMatrix(t *testing.T) {
	t.Parallel()
	e := newEnv(t, &Config{RateLimit: -1}, stores[1].opts...)
	authA := e.auth
	_, authB := e.newAccount("b")
	fa := buildFixtures(t, e, authA, "tenant-a")
	fb := buildFixtures(t, e, authB, "tenant-b")
	bodiesB := validBodies(fb)
	routes := apiRoutes(t, e)

	// A's view of its records (every GET route on A's fixtures: records,
	// their lines, groups and payments), to prove B's attempts changed
	// nothing.
	snapshot := func() map[string]string {
		out := map[string]string{}
		for _, rt := range routes {
			if rt.method == http.MethodGet && strings.Contains(rt.path, ":") && fa.has(rt.path) && !isPreview(rt) {
				path := fa.path(rt.path)
				if q := validQueries[rt.String()]; q != "" {
					path += "?" + q
				}
				r := e.do(req{method: "GET", path: path, auth: authA})
				out[rt.path] = fmt.Sprintf("%d %s", r.status, r.body)
			}
		}
		return out
	}
	before := snapshot()

	t.Run("ForeignIDsAreNotFound", func(t *testing.T) {
		for _, rt := range routes {
			if !strings.Contains(rt.path, "/:") {
				continue
			}
			if !fa.has(rt.path) {
				t.Errorf("%s: no fixture for its path parameters", rt)
			}
			path := fa.path(rt.path)
			if q := validQueries[rt.String()]; q != "" {
				path += "?" + q
			}
			body, hasBody := bodiesB[rt.String()]
			if !hasBody {
				body = "{}"
			}
			r := e.do(req{method: rt.method, path: path, body: body, auth: authB})
			if !hasBody && r.status == http.StatusBadRequest {
				// Without a valid body for the route, its validation
				// answers first: no record was looked up, nothing leaked.
				checkAnswer(t, rt.String(), r)
				continue
			}
			if r.status != http.StatusNotFound {
				t.Errorf("%s with B's key on A's id: %d %.300s, want 404", rt, r.status, r.body)
				continue
			}
			wantError(t, r, http.StatusNotFound, billing.CodeNotFound)
		}
	})

	t.Run("AUnchanged", func(t *testing.T) {
		after := snapshot()
		for path, b := range before {
			if after[path] != b {
				t.Errorf("GET %s by A changed after B's requests:\nbefore %s\nafter  %s", path, b, after[path])
			}
		}
		for path, b := range before {
			if !strings.HasPrefix(b, "200 ") || (strings.HasSuffix(path, ":id") || strings.HasSuffix(path, ":item")) && !strings.Contains(b, `"id"`) {
				t.Errorf("GET %s by A did not answer its record: %.300s", path, b)
			}
		}
		if len(before) < 12 {
			t.Errorf("only %d GET routes on A's records: %v", len(before), slices.Collect(maps.Keys(before)))
		}
	})

	t.Run("ListsNeverShowA", func(t *testing.T) {
		// Filters naming A's records and aliases, on every list.
		var filters []string
		for _, id := range fa.all {
			filters = append(filters, "customerIds="+id, "productId="+id)
		}
		filters = append(filters, "customerId="+fa.ids["customers"], "invoiceId="+fa.ids["invoices/sent"], "sourceId="+fa.ids["invoices/sent"],
			"policyId="+fa.ids["notifications/policies"], "notificationId="+fa.ids["notifications/deliveries"], "status=DRAFT", "status=SENT", "status=PENDING")
		filters = append(filters, "customerAlias="+fixtureAlias+"tenant-a-0", "customerAliases="+fixtureAlias+"tenant-a-0,"+fixtureAlias+"tenant-a-1",
			"name=tenant-a-0", "customerEventId=ce-tenant-a-0", "eventType=api_call", "seatType="+fixtureSeatType+"_0")
		for _, rt := range routes {
			if rt.method != http.MethodGet || strings.Contains(rt.path, ":") {
				continue
			}
			for _, q := range append([]string{""}, filters...) {
				r := e.do(req{method: "GET", path: rt.path + "?" + q, auth: authB})
				checkAnswer(t, rt.String()+"?"+q, r)
				for _, id := range fa.all {
					if strings.Contains(string(r.body), id) {
						t.Errorf("%s?%s by B shows A's record %s: %.300s", rt, q, id, r.body)
					}
				}
				if strings.Contains(string(r.body), "tenant-a") {
					t.Errorf("%s?%s by B shows A's data: %.300s", rt, q, r.body)
				}
			}
		}
	})

	t.Run("ReferencesToAAreRefused", func(t *testing.T) {
		// Every id of B's in a valid body of B's is swapped for A's record
		// of the same kind: a reference to a record B does not have.
		swap := map[string]string{}
		for segment, id := range fb.ids {
			swap[id] = fa.ids[segment]
		}
		checked := 0
		for _, rt := range routes {
			body, ok := bodiesB[rt.String()]
			if !ok {
				continue
			}
			var fields []string
			foreign := swapIDs(t, body, swap, "", &fields)
			if len(fields) == 0 {
				continue
			}
			checked++
			path := fb.path(rt.path)
			r := e.do(req{method: rt.method, path: path, body: foreign, auth: authB})
			switch r.status {
			case http.StatusBadRequest:
				wantError(t, r, http.StatusBadRequest, billing.CodeValidationFailed, fields...)
			case http.StatusNotFound:
				wantError(t, r, http.StatusNotFound, billing.CodeNotFound)
			default:
				t.Errorf("%s by B referencing A's records (%v): %d %.300s, want 400 naming them", rt, fields, r.status, r.body)
			}
		}
		if checked == 0 {
			t.Fatal("no body references another record")
		}
	})
}

// swapIDs returns body with every string value found in swap replaced,
// appending the JSON path of each replaced value to fields.
func swapIDs(tb testing.TB, body string, swap map[string]string, at string, fields *[]string) string {
	tb.Helper()
	var v any
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		tb.Fatal(err)
	}
	var walk func(v any, at string) any
	walk = func(v any, at string) any {
		switch x := v.(type) {
		case map[string]any:
			for k, c := range x {
				x[k] = walk(c, joinMutationPath(at, k))
			}
		case []any:
			for i, c := range x {
				x[i] = walk(c, fmt.Sprintf("%s[%d]", at, i))
			}
		case string:
			if to, ok := swap[x]; ok && to != "" {
				*fields = append(*fields, strings.TrimPrefix(at, "."))
				return to
			}
		}
		return v
	}
	out, err := json.Marshal(walk(v, at))
	if err != nil {
		tb.Fatal(err)
	}
	return string(out)
}
