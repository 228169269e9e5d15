package httpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
)

// env is one Server on a fresh Service with one account and API key.
type env struct {
	tb      testing.TB
	svc     *billing.Service
	clock   *billingtest.Clock
	srv     *Server
	h       http.Handler
	account string
	auth    string // Authorization header of the account's key
}

// newEnv returns an env; cfg may be nil.
func newEnv(tb testing.TB, cfg *Config, opts ...billingtest.Option) *env {
	tb.Helper()
	svc, clock := billingtest.NewService(tb, opts...)
	srv := NewServer(svc, cfg)
	e := &env{tb: tb, svc: svc, clock: clock, srv: srv, h: srv.Handler()}
	e.account, e.auth = e.newAccount("acme")
	return e
}

// newAccount creates an account with one API key.
func (e *env) newAccount(name string) (account, auth string) {
	e.tb.Helper()
	account = billingtest.Account(e.tb, e.svc, name)
	return account, e.newKey(account)
}

// newKey creates an API key for account and returns its Authorization value.
func (e *env) newKey(account string) string {
	e.tb.Helper()
	return e.apiKey(account).Authorization()
}

// apiKey creates an API key for account.
func (e *env) apiKey(account string) *billing.NewAPIKey {
	e.tb.Helper()
	k, err := e.svc.CreateAPIKey(context.Background(), account)
	if err != nil {
		e.tb.Fatalf("CreateAPIKey: %v", err)
	}
	return k
}

// revokeKey revokes the API key id.
func (e *env) revokeKey(id string) {
	e.tb.Helper()
	if _, err := e.svc.RevokeAPIKey(context.Background(), id); err != nil {
		e.tb.Fatalf("RevokeAPIKey: %v", err)
	}
}

// doAtOnce sends r n times at once and returns the answers, in the order
// of the senders.
func (e *env) doAtOnce(r req, n int) []response {
	return e.doEachAtOnce(slices.Repeat([]req{r}, n))
}

// doEachAtOnce sends every request of rs at once and returns the answers
// in the order of rs.
func (e *env) doEachAtOnce(rs []req) []response {
	answers := make([]response, len(rs))
	var wg sync.WaitGroup
	for i, r := range rs {
		wg.Go(func() { answers[i] = e.do(r) })
	}
	wg.Wait()
	return answers
}

// serve starts a real HTTP server on the env's handler, closed when the
// test ends, for tests that need net/http's own connection handling.
func (e *env) serve() *httptest.Server {
	srv := httptest.NewServer(e.h)
	e.tb.Cleanup(srv.Close)
	return srv
}

// response is a recorded answer.
type response struct {
	status int
	header http.Header
	body   []byte
}

// req is a request to send; zero fields take sensible defaults.
type req struct {
	method, path string
	body         string // sent as application/json unless contentType is set
	contentType  string
	auth         string            // Authorization; "" uses the env's key, "-" sends none
	header       map[string]string // extra headers
}

// do sends r with the env's key and checks what every answer must carry:
// Service-Version, a JSON Content-Type (except on /metrics), and that the
// exchange matches openapi/openapi.yaml (checkContract).
func (e *env) do(r req) response {
	e.tb.Helper()
	return e.doWith(e.h, r)
}

func (e *env) doWith(h http.Handler, r req) response {
	e.tb.Helper()
	var body io.Reader
	if r.body != "" {
		body = strings.NewReader(r.body)
	}
	hr := httptest.NewRequest(r.method, r.path, body)
	switch {
	case r.contentType != "":
		hr.Header.Set("Content-Type", r.contentType)
	case r.body != "":
		hr.Header.Set("Content-Type", "application/json")
	}
	switch r.auth {
	case "":
		hr.Header.Set("Authorization", e.auth)
	case "-":
	default:
		hr.Header.Set("Authorization", r.auth)
	}
	for k, v := range r.header {
		hr.Header.Set(k, v)
	}
	sent := hr.Header.Clone()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, hr)
	res := response{status: rec.Code, header: rec.Header(), body: rec.Body.Bytes()}
	e.checkContract(r.method, r.path, sent, r.body, res)
	if got := res.header.Get("Service-Version"); got != billing.APIVersion {
		e.tb.Errorf("%s %s: Service-Version = %q, want %q", r.method, r.path, got, billing.APIVersion)
	}
	if ct := res.header.Get("Content-Type"); r.path != "/metrics" && !fileRoute(r, res) && ct != jsonContentType {
		e.tb.Errorf("%s %s: Content-Type = %q, want %q", r.method, r.path, ct, jsonContentType)
	}
	return res
}

// fileRoute reports whether res is a successful answer of a route that
// answers a file rather than JSON (a rendered document, the logo).
func fileRoute(r req, res response) bool {
	path, _, _ := strings.Cut(r.path, "?")
	return res.status == http.StatusOK && r.method == http.MethodGet &&
		(strings.HasSuffix(path, "/download") || path == "/merchant-details/logo")
}

// get, post, put and del are shorthands for do.
func (e *env) get(path string) response { e.tb.Helper(); return e.do(req{method: "GET", path: path}) }
func (e *env) del(path string) response {
	e.tb.Helper()
	return e.do(req{method: "DELETE", path: path})
}
func (e *env) post(path, body string) response {
	e.tb.Helper()
	return e.do(req{method: "POST", path: path, body: body})
}
func (e *env) put(path, body string) response {
	e.tb.Helper()
	return e.do(req{method: "PUT", path: path, body: body})
}

// decode decodes the body of r into a T, failing the test on error.
func decode[T any](tb testing.TB, r response) T {
	tb.Helper()
	var v T
	if err := json.Unmarshal(r.body, &v); err != nil {
		tb.Fatalf("decoding %s: %v", r.body, err)
	}
	return v
}

// wantStatus fails unless r has status.
func wantStatus(tb testing.TB, r response, status int) {
	tb.Helper()
	if r.status != status {
		tb.Fatalf("status = %d, want %d; body %s", r.status, status, r.body)
	}
}

// wantError checks an error answer: its status, that every error has code,
// that the body has exactly the error shape, and that the errors name
// exactly fields (in any order; "" for an error without a field).
func wantError(tb testing.TB, r response, status int, code billing.Code, fields ...string) []wireError {
	tb.Helper()
	wantStatus(tb, r, status)
	var body map[string][]map[string]any
	if err := json.Unmarshal(r.body, &body); err != nil || len(body) != 1 || body["errors"] == nil {
		tb.Fatalf("error body %s is not {\"errors\": [...]} (%v)", r.body, err)
	}
	errs := decode[errorBody](tb, r).Errors
	var got []string
	for i, e := range errs {
		if e.Code != code {
			tb.Errorf("errors[%d].code = %q, want %q; body %s", i, e.Code, code, r.body)
		}
		if e.Message == "" {
			tb.Errorf("errors[%d] has no message", i)
		}
		for k := range body["errors"][i] {
			if k != "code" && k != "message" && k != "field" {
				tb.Errorf("errors[%d] has an unexpected member %q", i, k)
			}
		}
		got = append(got, e.Field)
	}
	if len(fields) == 0 {
		fields = []string{""}
	}
	slices.Sort(got)
	want := slices.Sorted(slices.Values(fields))
	if !slices.Equal(got, want) {
		tb.Errorf("error fields = %q, want %q; body %s", got, want, r.body)
	}
	return errs
}

// metricBody is a valid create body for a COUNT metric named name.
func metricBody(name string) string {
	return `{"name":"` + name + `","metricType":"SIMPLE","eventType":"api_call","aggregationType":"COUNT"}`
}

// createMetric creates a metric over HTTP and returns it.
func (e *env) createMetric(name string) billing.UsageMetric {
	e.tb.Helper()
	r := e.post("/usage-metrics", metricBody(name))
	wantStatus(e.tb, r, http.StatusCreated)
	return decode[billing.UsageMetric](e.tb, r)
}

// onEveryStore runs test once on each store of stores, each in a parallel
// subtest named after the store with an env of its own.
func onEveryStore(t *testing.T, test func(t *testing.T, e *env)) {
	t.Helper()
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			test(t, newEnv(t, nil, st.opts...))
		})
	}
}

// docStatuses are the statuses of a document (invoice, credit note).
var docStatuses = []string{"IN_PROGRESS", "DRAFT", "FINAL", "SENT", "VOIDED"}

// editableDoc are the statuses in which a document's header and lines may
// change.
var editableDoc = []string{"IN_PROGRESS", "DRAFT"}

// createdIn is the extra JSON member that creates a document on its way to
// status st (IN_PROGRESS is created as such, the others start as DRAFT).
func createdIn(st string) string {
	if st == "IN_PROGRESS" {
		return `"status":"IN_PROGRESS"`
	}
	return ""
}

// moveDocTo takes the document at path from DRAFT or IN_PROGRESS to st
// through the API's own transitions.
func (e *env) moveDocTo(path, st string) {
	e.tb.Helper()
	if op, ok := map[string]string{"FINAL": "/finalize", "SENT": "/send", "VOIDED": "/void"}[st]; ok {
		wantStatus(e.tb, e.post(path+op, ""), http.StatusOK)
	}
}

// docStateOp is one operation of a document's state table over HTTP.
type docStateOp struct {
	name, method, suffix, body string
	allowed                    []string
	status                     int
	after                      string // status afterwards; "" = unchanged, "-" = deleted
}

// docLifecycleOps are the rows both documents' state tables share.
var docLifecycleOps = []docStateOp{
	{"Draft", "POST", "/draft", "", []string{"IN_PROGRESS"}, 200, "DRAFT"},
	{"Finalize", "POST", "/finalize", "", editableDoc, 200, "FINAL"},
	{"Void", "POST", "/void", "", []string{"IN_PROGRESS", "DRAFT", "FINAL", "SENT"}, 200, "VOIDED"},
	{"Update", "PUT", "", `{"memo":"m"}`, editableDoc, 200, ""},
	{"AddGroup", "POST", "/line-item-groups", `{"title":"G"}`, editableDoc, 201, ""},
}

// runDocStateTable runs every operation on a fresh document (docIn makes
// one in a status and returns its path) in every status: allowed ones
// answer their success status with an object and leave the document in the
// right status; the others answer 409 invalid_state and leave the status.
// always are the members every answer for the document carries.
func runDocStateTable(t *testing.T, e *env, always []string, docIn func(st string) string, ops []docStateOp) {
	t.Helper()
	for _, op := range ops {
		for _, st := range docStatuses {
			t.Run(op.name+"/"+st, func(t *testing.T) {
				path := docIn(st)
				r := e.do(req{method: op.method, path: path + op.suffix, body: op.body})
				if !slices.Contains(op.allowed, st) {
					wantError(t, r, http.StatusConflict, billing.CodeInvalidState)
					if got := object(t, e.get(path), http.StatusOK, always); got["status"] != st {
						t.Errorf("a refused %s left status %v", op.name, got["status"])
					}
					return
				}
				object(t, r, op.status, nil)
				want := op.after
				switch want {
				case "-":
					wantError(t, e.get(path), http.StatusNotFound, billing.CodeNotFound)
					return
				case "":
					want = st
				}
				if got := object(t, e.get(path), http.StatusOK, always); got["status"] != want {
					t.Errorf("status after %s = %v, want %s", op.name, got["status"], want)
				}
			})
		}
	}
}

// createAs POSTs body to path with the Authorization auth, wants 201 and
// returns the new record's id (of a batch, its first item's).
func (e *env) createAs(auth, path, body string) string {
	e.tb.Helper()
	r := e.do(req{method: "POST", path: path, body: body, auth: auth})
	if r.status != http.StatusCreated {
		e.tb.Fatalf("POST %s: %d %s", path, r.status, r.body)
	}
	v := decode[struct {
		ID    string `json:"id"`
		Items []struct {
			ID string `json:"id"`
		} `json:"items"`
	}](e.tb, r)
	if v.ID == "" && len(v.Items) > 0 {
		v.ID = v.Items[0].ID
	}
	if v.ID == "" {
		e.tb.Fatalf("POST %s answered no id: %s", path, r.body)
	}
	return v.ID
}

// wantRefused sends each request in a subtest of its own: each answers 409
// invalid_state and leaves the document of its path (/kind/id/...) byte for
// byte as it was.
func wantRefused(t *testing.T, e *env, rqs []req) {
	t.Helper()
	for _, rq := range rqs {
		t.Run(rq.method+" "+rq.path, func(t *testing.T) {
			doc := strings.Join(strings.SplitN(rq.path, "/", 4)[:3], "/")
			before := e.get(doc).body
			wantError(t, e.do(rq), http.StatusConflict, billing.CodeInvalidState)
			if after := e.get(doc).body; !bytes.Equal(before, after) {
				t.Errorf("a refused %s changed %s:\n%s\n%s", rq.method, doc, before, after)
			}
		})
	}
}

// lineRoutes are the requests of every line and group route of the
// document at path, on its line lineID and group groupID; newLine is the
// body that creates a line.
func lineRoutes(path, lineID, groupID, newLine string) []req {
	return []req{
		{method: "GET", path: path + "/line-items"},
		{method: "POST", path: path + "/line-items", body: newLine},
		{method: "PUT", path: path + "/line-items/" + lineID, body: lineBody("x", "1", "1", "0", "")},
		{method: "DELETE", path: path + "/line-items/" + lineID},
		{method: "GET", path: path + "/line-item-groups"},
		{method: "POST", path: path + "/line-item-groups", body: `{"title":"G"}`},
		{method: "PUT", path: path + "/line-item-groups/" + groupID, body: `{"title":"G"}`},
		{method: "DELETE", path: path + "/line-item-groups/" + groupID},
	}
}
