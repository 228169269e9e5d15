package httpserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// This file is the route coverage kit of the reliability suites (hostile
// input, tenancy, storage failure): they iterate over every route the real
// handler registers (gin's Routes), so a route added to routes() is covered
// without editing them. Two small tables let a suite go deeper than
// "unknown id": fixtureSegments names which fixture fills a path's :id, and
// validBodies gives a valid body per route. A route missing from both is
// still covered, with a random id and an empty body.

// apiRoute is one registered API route.
type apiRoute struct{ method, path string }

func (r apiRoute) String() string { return r.method + " " + r.path }

// apiRoutes returns every route of the handler except health, readiness
// and metrics, in a stable order with DELETE routes last (so deleting a
// fixture does not starve the other routes of it).
func apiRoutes(tb testing.TB, e *env) []apiRoute {
	tb.Helper()
	var out []apiRoute
	for _, ri := range e.srv.engine.Routes() {
		switch ri.Path {
		case "/healthz", "/readyz", "/metrics":
			continue
		}
		out = append(out, apiRoute{ri.Method, ri.Path})
	}
	slices.SortFunc(out, func(a, b apiRoute) int {
		if (a.method == http.MethodDelete) != (b.method == http.MethodDelete) {
			if a.method == http.MethodDelete {
				return 1
			}
			return -1
		}
		return strings.Compare(a.String(), b.String())
	})
	if len(out) < 20 {
		tb.Fatalf("only %d API routes registered: %v", len(out), out)
	}
	return out
}

// missingID is a well-formed id that names nothing.
const missingID = "0190ffff-ffff-7fff-bfff-ffffffffffff"

// fixtures are records created through the API for one account: the ids by
// the first path segment of the routes that take them, and the list pages
// that must show them.
type fixtures struct {
	ids map[string]string // "usage-metrics" → a metric id, ...
	all []string          // every id created
}

// path fills the path parameters of p from f (missingID when f has no
// fixture for the route, or for a second parameter).
func (f fixtures) path(p string) string {
	parts := strings.Split(p, "/")
	for i, part := range parts {
		if !strings.HasPrefix(part, ":") && !strings.HasPrefix(part, "*") {
			continue
		}
		id := missingID
		if i == 2 && f.ids[parts[1]] != "" {
			id = f.ids[parts[1]]
		}
		parts[i] = id
	}
	return strings.Join(parts, "/")
}

// seatTypeOf and similar fixture values shared by bodies.
const (
	fixtureAlias    = "acme"
	fixtureSeatType = "editor"
)

// buildFixtures creates two records of every catalog and usage kind
// through the API with auth (the second of each is the one routes use),
// and returns their ids.
func buildFixtures(tb testing.TB, e *env, auth, tag string) fixtures {
	tb.Helper()
	f := fixtures{ids: map[string]string{}}
	create := func(segment, path, body string) string {
		tb.Helper()
		r := e.do(req{method: "POST", path: path, body: body, auth: auth})
		if r.status != http.StatusCreated {
			tb.Fatalf("fixture POST %s: %d %s", path, r.status, r.body)
		}
		var v struct {
			ID    string `json:"id"`
			Items []struct {
				ID string `json:"id"`
			} `json:"items"`
		}
		if err := json.Unmarshal(r.body, &v); err != nil {
			tb.Fatal(err)
		}
		if v.ID == "" && len(v.Items) > 0 {
			v.ID = v.Items[0].ID
		}
		if v.ID == "" {
			tb.Fatalf("fixture POST %s answered no id: %s", path, r.body)
		}
		f.all = append(f.all, v.ID)
		if segment != "" {
			f.ids[segment] = v.ID
		}
		return v.ID
	}
	for i := range 2 {
		n := fmt.Sprintf("%s-%d", tag, i)
		metric := create("usage-metrics", "/usage-metrics", metricBody("calls "+n))
		product := create("products", "/products", `{"name":"Platform `+n+`"}`)
		create("tax-rates", "/tax-rates", `{"name":"VAT `+n+`","amount":"0.20"}`)
		create("customers", "/customers", fmt.Sprintf(`{"legalName":"Acme %s","customerAliases":[%q]}`, n, fixtureAlias+n))
		create("prices", "/prices", priceBody("Basic "+n, "USD", "MONTHLY", product, metric))
		create("seat-metrics", "/seat-metrics", fmt.Sprintf(`{"seatType":"%s_%d","label":"Editors"}`, fixtureSeatType, i))
		create("seat-events", "/seat-events", seatEventBody(fixtureAlias+n, fmt.Sprintf("%s_%d", fixtureSeatType, i), i, 1+i, "ce-"+n))
		create("usage-events", "/usage-events", usageEventBody(fixtureAlias+n, "ue-"+n))
		create("", "/usage-events/batch", `{"events":[`+usageEventBody(fixtureAlias+n, "ub-"+n)+`]}`)
	}
	r := e.do(req{method: "PUT", path: "/merchant-details", body: merchantBody, auth: auth})
	if r.status != http.StatusOK {
		tb.Fatalf("fixture PUT /merchant-details: %d %s", r.status, r.body)
	}
	return f
}

// usageEventBody is a valid usage event.
func usageEventBody(alias, customerEventID string) string {
	return fmt.Sprintf(`{"customerAlias":%q,"eventType":"api_call","customerEventId":%q,"eventTimestamp":"2024-07-30T10:00:00Z","eventProperties":{"n":"1.5","s":"x","b":true}}`,
		alias, customerEventID)
}

const merchantBody = `{"legalCompanyName":"Seller","ukAccountDetails":{"sortCode":"00-00-00","accountNumber":"1"},"customFields":[{"key":"k","value":"v"}]}`

// validBodies returns a valid body for the routes that take one, using
// the fixtures of f. A route that takes a body and is missing here gets
// "{}" and the whole-body hostile set, but no per-field mutations.
func validBodies(f fixtures) map[string]string {
	return map[string]string{
		"POST /usage-metrics":      metricBody("another"),
		"PUT /usage-metrics/:id":   metricBody("renamed"),
		"POST /usage-events":       usageEventBody(fixtureAlias, "ue-new"),
		"POST /usage-events/batch": `{"events":[` + usageEventBody(fixtureAlias, "ub-new") + `]}`,
		"POST /customers":          `{"legalName":"Other","customerAliases":["other"]}`,
		"PUT /customers/:id":       `{"legalName":"Acme","customerAliases":["acme-x"]}`,
		"POST /products":           `{"name":"Support"}`,
		"POST /tax-rates":          `{"name":"GST","amount":"0.1"}`,
		"POST /prices":             priceBody("New", "USD", "MONTHLY", f.ids["products"], f.ids["usage-metrics"]),
		"PUT /prices/:id":          `{"name":"Basic","status":"DRAFT"}`,
		"POST /seat-metrics":       `{"seatType":"viewer","label":"Viewers"}`,
		"PUT /seat-metrics/:id":    `{"label":"People","description":"who edit"}`,
		"POST /seat-events":        seatEventBody(fixtureAlias, fixtureSeatType+"_1", 5, 3, "ce-new"),
		"PUT /merchant-details":    merchantBody,
	}
}

// checkAnswer fails unless r is a success or a documented error answer: a
// status below 500, and an error body of exactly {"errors":[...]} whose
// codes map to that status in the one status table.
func checkAnswer(tb testing.TB, what string, r response) {
	tb.Helper()
	if r.status >= 500 {
		tb.Errorf("%s: %d %.300s", what, r.status, r.body)
		return
	}
	if r.status < 400 {
		if !json.Valid(r.body) {
			tb.Errorf("%s: %d with a body that is not JSON: %.300q", what, r.status, r.body)
		}
		return
	}
	dec := json.NewDecoder(bytes.NewReader(r.body))
	dec.DisallowUnknownFields()
	var body errorBody
	if err := dec.Decode(&body); err != nil || len(body.Errors) == 0 {
		tb.Errorf("%s: %d with a body that is not the error shape (%v): %.300s", what, r.status, err, r.body)
		return
	}
	for _, e := range body.Errors {
		if statusOf[e.Code] != r.status || e.Message == "" {
			tb.Errorf("%s: %d with error %+v", what, r.status, e)
		}
	}
}

// healthy fails the test unless the handler still answers /healthz.
func healthy(tb testing.TB, e *env, after string) {
	tb.Helper()
	if r := e.do(req{method: "GET", path: "/healthz", auth: "-"}); r.status != http.StatusOK {
		tb.Fatalf("after %s: GET /healthz = %d %s", after, r.status, r.body)
	}
}
