package httpserver

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
)

// stores runs a test on the memstore and on bbolt.
var stores = []struct {
	name string
	opts []billingtest.Option
}{
	{"memstore", nil},
	{"boltstore", []billingtest.Option{billingtest.WithBolt()}},
}

// Long on purpose: one scenario walked in order; each step starts from the state the previous steps
// left, so pieces would repeat the set-up.
func TestUsageMetricLifecycle(t *testing.T) {
	t.Parallel()
	onEveryStore(t, func(t *testing.T, e *env) {

		r := e.post("/usage-metrics", `{"name":"Storage","metricType":"GROUPED","eventType":"disk",
				"aggregationType":"SUM","aggregationProperty":"bytes","groupingProperty":"region",
				"propertyFilters":{"tier":["gold","silver"]},"propertiesToNegate":["tier"],
				"parameters":[{"name":"free","type":"INTEGER","defaultValue":"10"}],"unit":"GB"}`)
		wantStatus(t, r, http.StatusCreated)
		created := decode[billing.UsageMetric](t, r)
		if created.ServiceAccountID != e.account || created.Name != "Storage" || created.ID == "" ||
			!slices.Equal(created.PropertyFilters["tier"], []string{"gold", "silver"}) || len(created.Parameters) != 1 {
			t.Fatalf("created = %+v", created)
		}
		raw := decode[map[string]any](t, r)
		if raw["createdAt"] != "2024-07-30T12:00:00Z" || raw["caseSensitive"] != false {
			t.Errorf("wire shape: createdAt %v, caseSensitive %v", raw["createdAt"], raw["caseSensitive"])
		}

		path := "/usage-metrics/" + created.ID
		r = e.get(path)
		wantStatus(t, r, http.StatusOK)
		if diff := cmp.Diff(created, decode[billing.UsageMetric](t, r)); diff != "" {
			t.Errorf("GET differs from create (-create +get):\n%s", diff)
		}

		r = e.put(path, `{"name":"Disk","metricType":"SIMPLE","eventType":"disk","aggregationType":"COUNT"}`)
		wantStatus(t, r, http.StatusOK)
		updated := decode[billing.UsageMetric](t, r)
		if updated.Name != "Disk" || updated.AggregationType != billing.AggregationCount || updated.Unit != "" ||
			len(updated.PropertyFilters) != 0 || updated.ID != created.ID {
			t.Errorf("updated = %+v", updated)
		}

		page := decode[listBody](t, e.get("/usage-metrics"))
		if len(page.Items) != 1 || page.Items[0].ID != created.ID || *page.Pagination.TotalResultSize != 1 {
			t.Errorf("list = %+v", page)
		}

		e.clock.Advance(3600e9)
		r = e.del(path)
		wantStatus(t, r, http.StatusOK)
		deleted := decode[billing.UsageMetric](t, r)
		if deleted.DeletedAt == nil || billing.FormatTimestamp(*deleted.DeletedAt) != "2024-07-30T13:00:00Z" {
			t.Fatalf("deleted.DeletedAt = %v", deleted.DeletedAt)
		}
		t.Run("DeleteAgainIsUnchanged", func(t *testing.T) {
			r := e.del(path)
			wantStatus(t, r, http.StatusOK)
			if diff := cmp.Diff(deleted, decode[billing.UsageMetric](t, r)); diff != "" {
				t.Error(diff)
			}
		})
		t.Run("DeletedStillAnswersGet", func(t *testing.T) {
			got := decode[billing.UsageMetric](t, e.get(path))
			if got.DeletedAt == nil {
				t.Error("GET of a deleted metric has no deletedAt")
			}
		})
		t.Run("DeletedLeavesTheList", func(t *testing.T) {
			page := decode[listBody](t, e.get("/usage-metrics"))
			if len(page.Items) != 0 || *page.Pagination.TotalResultSize != 0 {
				t.Errorf("list after delete = %+v", page)
			}
		})
		t.Run("ErrInvalidStateOnUpdateOfDeleted", func(t *testing.T) {
			r := e.put(path, metricBody("Disk"))
			wantError(t, r, http.StatusConflict, billing.CodeInvalidState)
		})
	})
}

// listBody is the wire shape of a list of usage metrics.
type listBody struct {
	Items      []billing.UsageMetric `json:"items"`
	Pagination struct {
		After           *string `json:"after"`
		Before          *string `json:"before"`
		TotalResultSize *int    `json:"totalResultSize"`
	} `json:"pagination"`
}

func TestUsageMetricConflictOnDuplicateName(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.createMetric("API calls")
	r := e.post("/usage-metrics", metricBody("api CALLS"))
	wantError(t, r, http.StatusConflict, billing.CodeConflict, "name")
}

func TestUsageMetricValidationFromService(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	r := e.post("/usage-metrics", `{"metricType":"FANCY","aggregationType":"SUM"}`)
	wantError(t, r, http.StatusBadRequest, billing.CodeValidationFailed,
		"name", "eventType", "metricType", "aggregationProperty")
}

// TestGaugeMetricsOverHTTP: the new aggregations are created, read back,
// listed by aggregationType and calculated over HTTP, and bad settings
// answer 400 naming the field.
func TestGaugeMetricsOverHTTP(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	r := e.post("/usage-metrics", `{"name":"p95","metricType":"SIMPLE","eventType":"bw","aggregationType":"PERCENTILE","aggregationProperty":"mbps","percentile":"95"}`)
	if r.status != http.StatusCreated || !strings.Contains(string(r.body), `"percentile":"95"`) {
		t.Fatalf("create PERCENTILE: %d %s", r.status, r.body)
	}
	p95 := decode[billing.UsageMetric](t, r)
	r = e.post("/usage-metrics", `{"name":"gbh","metricType":"SIMPLE","eventType":"storage","aggregationType":"TIME_WEIGHTED_SUM","aggregationProperty":"gb"}`)
	if r.status != http.StatusCreated || !strings.Contains(string(r.body), `"timeUnit":"HOUR"`) {
		t.Fatalf("create TIME_WEIGHTED_SUM: %d %s", r.status, r.body)
	}
	if r := e.get("/usage-metrics?aggregationType=PERCENTILE,MAX"); !strings.Contains(string(r.body), `"percentile":"95"`) || strings.Contains(string(r.body), "gbh") {
		t.Errorf("list by aggregationType: %d %s", r.status, r.body)
	}
	for i, v := range []string{"10", "20", "30", "40", "50", "60", "70", "80", "90", "100"} {
		body := fmt.Sprintf(`{"customerAlias":"cus","eventType":"bw","eventTimestamp":"2024-01-0%dT00:00:00Z","eventProperties":{"mbps":%s}}`, i%9+1, v)
		if r := e.post("/usage-events", body); r.status != http.StatusCreated {
			t.Fatalf("event: %d %s", r.status, r.body)
		}
	}
	r = e.get("/usage-metrics/" + p95.ID + "/calculate?customerAliases=cus&periodStart=2024-01-01&periodEnd=2024-01-31")
	if r.status != http.StatusOK || !strings.Contains(string(r.body), `"value":"100"`) || !strings.Contains(string(r.body), `"aggregationType":"PERCENTILE"`) {
		t.Errorf("calculate p95: %d %s", r.status, r.body)
	}
	for body, field := range map[string]string{
		`{"name":"x","metricType":"SIMPLE","eventType":"bw","aggregationType":"PERCENTILE","aggregationProperty":"mbps"}`:                     "percentile",
		`{"name":"x","metricType":"SIMPLE","eventType":"bw","aggregationType":"PERCENTILE","aggregationProperty":"mbps","percentile":"100"}`:  "percentile",
		`{"name":"x","metricType":"SIMPLE","eventType":"bw","aggregationType":"PERCENTILE","aggregationProperty":"mbps","percentile":95}`:     "percentile",
		`{"name":"x","metricType":"SIMPLE","eventType":"bw","aggregationType":"MAX"}`:                                                         "aggregationProperty",
		`{"name":"x","metricType":"SIMPLE","eventType":"bw","aggregationType":"TIME_WEIGHTED_SUM","aggregationProperty":"gb","timeUnit":"X"}`: "timeUnit",
		`{"name":"x","metricType":"SIMPLE","eventType":"bw","aggregationType":"AVG","aggregationProperty":"gb"}`:                              "aggregationType",
	} {
		wantError(t, e.post("/usage-metrics", body), http.StatusBadRequest, billing.CodeValidationFailed, field)
	}
}

func TestUsageMetricPutRejectsDeletedAt(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	m := e.createMetric("calls")
	r := e.put("/usage-metrics/"+m.ID,
		`{"name":"calls","metricType":"SIMPLE","eventType":"api_call","aggregationType":"COUNT","deletedAt":"2024-07-30T12:00:00Z"}`)
	wantError(t, r, http.StatusBadRequest, billing.CodeValidationFailed, "deletedAt")
	if got := decode[billing.UsageMetric](t, e.get("/usage-metrics/"+m.ID)); got.DeletedAt != nil {
		t.Error("a rejected PUT deleted the metric")
	}
}

func TestUsageMetricCreateWithDeletedAt(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	r := e.post("/usage-metrics",
		`{"name":"old","metricType":"SIMPLE","eventType":"e","aggregationType":"COUNT","deletedAt":"2024-01-02T03:04:05.9+01:00"}`)
	wantStatus(t, r, http.StatusCreated)
	if got := decode[map[string]any](t, r)["deletedAt"]; got != "2024-01-02T02:04:05Z" {
		t.Errorf("deletedAt = %v", got)
	}
}

func TestTenancy(t *testing.T) {
	t.Parallel()
	onEveryStore(t, func(t *testing.T, e *env) {
		m := e.createMetric("secret metric")
		_, authB := e.newAccount("beta")
		path := "/usage-metrics/" + m.ID
		as := func(r req) req { r.auth = authB; return r }

		wantError(t, e.do(as(req{method: "GET", path: path})), http.StatusNotFound, billing.CodeNotFound)
		wantError(t, e.do(as(req{method: "PUT", path: path, body: metricBody("mine")})), http.StatusNotFound, billing.CodeNotFound)
		wantError(t, e.do(as(req{method: "DELETE", path: path})), http.StatusNotFound, billing.CodeNotFound)

		r := e.do(as(req{method: "GET", path: "/usage-metrics"}))
		wantStatus(t, r, http.StatusOK)
		if page := decode[listBody](t, r); len(page.Items) != 0 || *page.Pagination.TotalResultSize != 0 {
			t.Errorf("account B sees %+v", page)
		}
		// The same name is free in another account.
		r = e.do(as(req{method: "POST", path: "/usage-metrics", body: metricBody("secret metric")}))
		wantStatus(t, r, http.StatusCreated)
		if got := decode[billing.UsageMetric](t, r); got.ServiceAccountID == e.account {
			t.Error("account B's metric belongs to account A")
		}
		// A's metric is untouched.
		if got := decode[billing.UsageMetric](t, e.get(path)); got.DeletedAt != nil || got.Name != "secret metric" {
			t.Errorf("A's metric changed: %+v", got)
		}
	})
}

func TestNotFound(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	for name, path := range map[string]string{
		"MissingID":    "/usage-metrics/01900000-0000-7000-8000-000000000000",
		"NotAUUID":     "/usage-metrics/not-a-uuid",
		"UnknownRoute": "/no-such-thing",
		"TrailingPath": "/usage-metrics/x/y",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			wantError(t, e.get(path), http.StatusNotFound, billing.CodeNotFound)
		})
	}
	t.Run("UnknownRouteWithoutCredentials", func(t *testing.T) {
		t.Parallel()
		wantError(t, e.do(req{method: "GET", path: "/nope", auth: "-"}), http.StatusNotFound, billing.CodeNotFound)
	})
}

func TestMethodNotAllowed(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	for _, tc := range []struct {
		method, path string
		allow        []string
	}{
		{"PATCH", "/usage-metrics/abc", []string{"DELETE", "GET", "PUT"}},
		{"DELETE", "/usage-metrics", []string{"GET", "POST"}},
		{"POST", "/healthz", []string{"GET", "HEAD"}},
	} {
		t.Run(tc.method+tc.path, func(t *testing.T) {
			t.Parallel()
			r := e.do(req{method: tc.method, path: tc.path})
			wantError(t, r, http.StatusMethodNotAllowed, CodeMethodNotAllowed)
			var got []string
			for _, v := range r.header.Values("Allow") {
				got = append(got, splitComma(v)...)
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.allow) {
				t.Errorf("Allow = %q, want %q", got, tc.allow)
			}
		})
	}
}

func splitComma(s string) []string {
	var out []string
	for p := range strings.SplitSeq(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// Long on purpose: one scenario walked in order; each step starts from the state the previous steps
// left, so pieces would repeat the set-up.
func TestPagination(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil, billingtest.WithBolt())
	ctx := context.Background()
	var want []string // newest first
	for i := range 45 {
		m, err := e.svc.CreateUsageMetric(ctx, e.account, billing.CreateUsageMetricParams{UsageMetricParams: billing.UsageMetricParams{
			Name: fmt.Sprintf("metric %02d", i), MetricType: billing.MetricTypeSimple,
			EventType: "e", AggregationType: billing.AggregationCount,
		}})
		if err != nil {
			t.Fatal(err)
		}
		want = append([]string{m.ID}, want...)
	}
	// Another account's metrics never show up.
	other := billingtest.Account(t, e.svc, "other")
	if _, err := e.svc.CreateUsageMetric(ctx, other, billing.CreateUsageMetricParams{UsageMetricParams: billing.UsageMetricParams{
		Name: "x", MetricType: billing.MetricTypeSimple, EventType: "e", AggregationType: billing.AggregationCount,
	}}); err != nil {
		t.Fatal(err)
	}

	page := func(query string) listBody {
		t.Helper()
		r := e.get("/usage-metrics?" + query)
		wantStatus(t, r, http.StatusOK)
		p := decode[listBody](t, r)
		if p.Pagination.TotalResultSize == nil || *p.Pagination.TotalResultSize != 45 {
			t.Fatalf("%s: totalResultSize = %v, want 45", query, p.Pagination.TotalResultSize)
		}
		return p
	}
	ids := func(p listBody) []string {
		var out []string
		for _, m := range p.Items {
			out = append(out, m.ID)
		}
		return out
	}

	// Forward with after, to the end.
	var pages []listBody
	q := "limit=20"
	for {
		p := page(q)
		pages = append(pages, p)
		if p.Pagination.After == nil {
			break
		}
		q = "limit=20&after=" + url.QueryEscape(*p.Pagination.After)
	}
	if len(pages) != 3 {
		t.Fatalf("%d pages, want 3", len(pages))
	}
	var seen []string
	for i, p := range pages {
		seen = append(seen, ids(p)...)
		if (p.Pagination.Before != nil) != (i > 0) {
			t.Errorf("page %d: before present = %v", i, p.Pagination.Before != nil)
		}
		if (p.Pagination.After != nil) != (i < 2) {
			t.Errorf("page %d: after present = %v", i, p.Pagination.After != nil)
		}
	}
	if diff := cmp.Diff(want, seen); diff != "" {
		t.Fatalf("after pages visit (-want +got):\n%s", diff)
	}

	// Backward with before, to the start.
	p := pages[2]
	for i := 1; i >= 0; i-- {
		p = page("limit=20&before=" + url.QueryEscape(*p.Pagination.Before))
		if diff := cmp.Diff(ids(pages[i]), ids(p)); diff != "" {
			t.Fatalf("before page %d (-want +got):\n%s", i, diff)
		}
	}
	if p.Pagination.Before != nil || p.Pagination.After == nil {
		t.Errorf("first page again: before %v, after %v", p.Pagination.Before, p.Pagination.After)
	}

	after := url.QueryEscape(*pages[0].Pagination.After)
	t.Run("ErrBadCursor", func(t *testing.T) {
		wantError(t, e.get("/usage-metrics?after=bogus"), http.StatusBadRequest, billing.CodeValidationFailed, "after")
		wantError(t, e.get("/usage-metrics?before="+after), http.StatusBadRequest, billing.CodeValidationFailed, "before")
	})
	t.Run("ErrBothCursors", func(t *testing.T) {
		r := e.get("/usage-metrics?after=" + after + "&before=" + url.QueryEscape(*pages[1].Pagination.Before))
		wantStatus(t, r, http.StatusBadRequest)
	})
	t.Run("ErrCursorWithOtherFilters", func(t *testing.T) {
		wantError(t, e.get("/usage-metrics?name=metric&after="+after), http.StatusBadRequest, billing.CodeValidationFailed, "after")
	})
	t.Run("ErrBadLimit", func(t *testing.T) {
		for _, l := range []string{"abc", "1.5", "0", "-1", "101", "99999999999999999999", ""} {
			wantError(t, e.get("/usage-metrics?limit="+l), http.StatusBadRequest, billing.CodeValidationFailed, "limit")
		}
	})
	t.Run("DefaultLimitIs20", func(t *testing.T) {
		if got := len(page("").Items); got != 20 {
			t.Errorf("%d items", got)
		}
	})
	t.Run("ErrUnknownQueryParameters", func(t *testing.T) {
		// Each unknown parameter is named: a mistyped filter must never
		// silently widen a list.
		r := e.get("/usage-metrics?limit=20&colour=blue&sortOrder=ASC")
		errs := wantError(t, r, http.StatusBadRequest, billing.CodeValidationFailed, "colour")
		if !strings.Contains(errs[0].Message, "colour is not a known query parameter") {
			t.Errorf("message %q", errs[0].Message)
		}
	})
}

func TestUsageMetricListFilters(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	mk := func(name, eventType, agg, prop string) string {
		t.Helper()
		b := fmt.Sprintf(`{"name":%q,"metricType":"SIMPLE","eventType":%q,"aggregationType":%q`, name, eventType, agg)
		if prop != "" {
			b += fmt.Sprintf(`,"aggregationProperty":%q`, prop)
		}
		r := e.post("/usage-metrics", b+"}")
		wantStatus(t, r, http.StatusCreated)
		return decode[billing.UsageMetric](t, r).ID
	}
	calls := mk("API calls", "api", "COUNT", "")
	bytes := mk("Bytes out", "egress", "SUM", "bytes")
	users := mk("Active users", "login", "UNIQUE", "user")
	for _, tc := range []struct {
		query string
		want  []string
	}{
		{"name=CALL", []string{calls}},
		{"eventType=api,login", []string{users, calls}},
		{"eventType=api&eventType=egress", []string{bytes, calls}},
		{"aggregationType=SUM,UNIQUE", []string{users, bytes}},
		{"aggregationType=SUM,UNIQUE&name=bytes", []string{bytes}},
		{"eventType=nothing", nil},
	} {
		t.Run(tc.query, func(t *testing.T) {
			r := e.get("/usage-metrics?" + tc.query)
			wantStatus(t, r, http.StatusOK)
			p := decode[listBody](t, r)
			var got []string
			for _, m := range p.Items {
				got = append(got, m.ID)
			}
			if !slices.Equal(got, tc.want) || *p.Pagination.TotalResultSize != len(tc.want) {
				t.Errorf("got %v (total %d), want %v", got, *p.Pagination.TotalResultSize, tc.want)
			}
		})
	}
	t.Run("ErrUnknownAggregationType", func(t *testing.T) {
		wantError(t, e.get("/usage-metrics?aggregationType=SUM,AVERAGE"), http.StatusBadRequest,
			billing.CodeValidationFailed, "aggregationType")
	})
}
