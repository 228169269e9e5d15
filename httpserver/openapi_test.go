package httpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/billingd/billing/openapi"
)

// This file keeps openapi/openapi.yaml true to the server: the document
// validates, it describes exactly the routes the engine registers, and
// every request env.do sends and every answer it gets are validated against
// it (checkContract), so an answer that drifts from the document fails the
// test that produced it.

// contract is the loaded OpenAPI document and a router over its paths.
type contract struct {
	doc    *openapi3.T
	router routers.Router
	errors *openapi3.Schema // the Error schema
}

var loadContract = sync.OnceValues(func() (*contract, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(openapi.YAML)
	if err != nil {
		return nil, err
	}
	if err := doc.Validate(loader.Context); err != nil {
		return nil, err
	}
	// Route on paths only: tests send their requests to any host.
	routing := *doc
	routing.Servers = nil
	router, err := gorillamux.NewRouter(&routing)
	if err != nil {
		return nil, err
	}
	return &contract{doc: doc, router: router, errors: doc.Components.Schemas["Error"].Value}, nil
})

// mustContract returns the contract, failing tb if the document does not
// load or validate.
func mustContract(tb testing.TB) *contract {
	tb.Helper()
	c, err := loadContract()
	if err != nil {
		tb.Fatalf("openapi/openapi.yaml: %v", err)
	}
	return c
}

var (
	contractOptions = &openapi3filter.Options{
		AuthenticationFunc:    openapi3filter.NoopAuthenticationFunc, // authentication has its own tests
		IncludeResponseStatus: true,                                  // an undocumented status fails
		MultiError:            true,
	}
	errorContractOptions = &openapi3filter.Options{
		IncludeResponseStatus: true,
		ExcludeResponseBody:   true, // checked by contract.isError
		MultiError:            true,
	}
)

// checkContract validates one exchange of env.do against the document. A
// request the document rejects must have been rejected by the server too
// (with a 4xx); every answer must be one the document describes for its
// route and status, headers and body included.
func (e *env) checkContract(method, target string, header http.Header, body string, res response) {
	e.tb.Helper()
	c := mustContract(e.tb)
	vr := httptest.NewRequest(method, target, strings.NewReader(body))
	vr.Header = header.Clone()
	route, params, err := c.router.FindRoute(vr)
	if err != nil {
		// Not a route of the document. The server's own routes are all in
		// it (TestOpenAPIRoutes), so this is an unknown route or one a test
		// registered for itself: only the error answers are checked.
		if (res.status == http.StatusNotFound || res.status == http.StatusMethodNotAllowed) && !c.isError(res.body) {
			e.tb.Errorf("contract: the %d answer to %s %s is not an error body: %s", res.status, method, target, res.body)
		}
		return
	}
	ctx := context.Background()
	e.checkRequiredAgree(route.Operation, method, target, res)
	in := &openapi3filter.RequestValidationInput{Request: vr, PathParams: params, Route: route, Options: contractOptions}
	if res.status < 400 { // a rejected request may be anything (the hostile suites send junk)
		if err := openapi3filter.ValidateRequest(ctx, in); err != nil {
			e.tb.Errorf("contract: openapi.yaml rejects a request the server accepted with %d: %s %s %s\n%v", res.status, method, target, body, err)
		}
		in.Request.Body = io.NopCloser(strings.NewReader(body))
	}
	opts := contractOptions
	if res.status >= 400 {
		// Error answers are most answers of the hostile suites: their body
		// is checked against the Error schema once compiled, not by the
		// filter, which compiles the schema again for every answer.
		opts = errorContractOptions
		if !c.isError(res.body) {
			e.tb.Errorf("contract: the %d answer to %s %s is not an error body: %s", res.status, method, target, res.body)
		}
	}
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: res.status, Header: res.header, Options: opts}
	out.SetBodyBytes(res.body)
	if err := openapi3filter.ValidateResponse(ctx, out); err != nil {
		e.tb.Errorf("contract: the %d answer to %s %s does not match openapi.yaml: %v\nbody: %s", res.status, method, target, err, truncate(res.body, 2000))
	}
}

// isError reports whether body is an error body of the document.
func (c *contract) isError(body []byte) bool {
	var v any
	return json.Unmarshal(body, &v) == nil && c.errors.VisitJSON(v) == nil
}

func truncate(b []byte, n int) []byte {
	if len(b) <= n {
		return b
	}
	return append(b[:n:n], "..."...)
}

func TestOpenAPIDocumentValidates(t *testing.T) {
	t.Parallel()
	c := mustContract(t)
	if !c.doc.IsOpenAPI31OrLater() || c.doc.IsOpenAPI32OrLater() {
		t.Errorf("openapi = %q, want 3.1.x", c.doc.OpenAPI)
	}
	if err := c.doc.Validate(context.Background(), openapi3.EnableExamplesValidation()); err != nil {
		t.Errorf("examples: %v", err)
	}
	ids := map[string]bool{}
	for path, item := range c.doc.Paths.Map() {
		for method, op := range item.Operations() {
			if op.OperationID == "" || ids[op.OperationID] {
				t.Errorf("%s %s: operationId %q missing or not unique", method, path, op.OperationID)
			}
			ids[op.OperationID] = true
		}
	}
}

// templateParam matches a path parameter of gin (:id, *recipient) or of
// OpenAPI ({id}).
var templateParam = regexp.MustCompile(`:[^/]+|\*[^/]+|\{[^}]+\}`)

// TestOpenAPIRoutes checks that openapi.yaml describes exactly the routes
// the server registers (parameter names aside: gin needs one name per
// position, the document uses the specification's).
func TestOpenAPIRoutes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	c := mustContract(t)
	var registered, documented []string
	for _, ri := range e.srv.engine.Routes() {
		registered = append(registered, ri.Method+" "+templateParam.ReplaceAllString(ri.Path, "{}"))
	}
	for path, item := range c.doc.Paths.Map() {
		for method := range item.Operations() {
			documented = append(documented, method+" "+templateParam.ReplaceAllString(path, "{}"))
		}
	}
	slices.Sort(registered)
	slices.Sort(documented)
	for _, r := range registered {
		if _, found := slices.BinarySearch(documented, r); !found {
			t.Errorf("%s is registered but not in openapi/openapi.yaml", r)
		}
	}
	for _, d := range documented {
		if _, found := slices.BinarySearch(registered, d); !found {
			t.Errorf("%s is in openapi/openapi.yaml but not registered", d)
		}
	}
}

func TestOpenAPIServed(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	r := e.do(req{method: "GET", path: "/openapi.json", auth: "-"})
	wantStatus(t, r, http.StatusOK)
	doc, err := openapi3.NewLoader().LoadFromData(r.body)
	if err != nil {
		t.Fatalf("GET /openapi.json: %v", err)
	}
	if want := mustContract(t).doc; len(doc.Paths.Map()) != len(want.Paths.Map()) || doc.Info.Version != want.Info.Version {
		t.Errorf("GET /openapi.json serves %d paths of version %q, want %d of %q", len(doc.Paths.Map()), doc.Info.Version, len(want.Paths.Map()), want.Info.Version)
	}
	if !json.Valid(r.body) || bytes.Contains(r.body, []byte("\n")) {
		t.Error("GET /openapi.json is not compact JSON")
	}
}

// TestContractCheckCatchesDrift shows that checkContract fails on an answer
// the document does not describe.
func TestContractCheckCatchesDrift(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	m := e.createMetric("calls")
	var rec recorderTB
	probe := &env{tb: &rec}
	header := http.Header{"Authorization": {e.auth}}
	good := e.get("/usage-metrics/" + m.ID)
	probe.checkContract("GET", "/usage-metrics/"+m.ID, header, "", good)
	if rec.failed {
		t.Fatalf("a real answer failed the check: %s", rec.msg)
	}
	drifted := good
	drifted.body = bytes.Replace(good.body, []byte(`"metricType":"SIMPLE"`), []byte(`"metricType":"SIMPLE","extra":1`), 1)
	probe.checkContract("GET", "/usage-metrics/"+m.ID, header, "", drifted)
	if !rec.failed {
		t.Error("an answer with an undocumented field passed the check")
	}
	rec = recorderTB{}
	undocumented := good
	undocumented.status = http.StatusTeapot
	probe.checkContract("GET", "/usage-metrics/"+m.ID, header, "", undocumented)
	if !rec.failed {
		t.Error("an undocumented status passed the check")
	}
}

// recorderTB records failures instead of failing.
type recorderTB struct {
	testing.TB
	failed bool
	msg    string
}

func (r *recorderTB) Helper() {}
func (r *recorderTB) Errorf(format string, args ...any) {
	r.failed = true
	r.msg = errors.New(strings.TrimSpace(format)).Error()
}
func (r *recorderTB) Fatalf(format string, args ...any) { r.Errorf(format, args...) }

// TestOpenAPIErrorCodes checks that the document lists every error code of
// the server's code-to-status table, and that every operation with
// credentials answers errors (default response) with the Error body.
func TestOpenAPIErrorCodes(t *testing.T) {
	t.Parallel()
	c := mustContract(t)
	var listed []string
	for _, v := range c.errors.Properties["errors"].Value.Items.Value.Properties["code"].Value.Enum {
		listed = append(listed, v.(string))
	}
	for code := range statusOf {
		if !slices.Contains(listed, string(code)) {
			t.Errorf("error code %q is not in the Error schema of openapi.yaml", code)
		}
	}
	for path, item := range c.doc.Paths.Map() {
		for method, op := range item.Operations() {
			if op.Security != nil && len(*op.Security) == 0 {
				continue // no credentials, no API middleware
			}
			def := op.Responses.Default()
			if def == nil || def.Value.Content.Get("application/json") == nil ||
				def.Value.Content.Get("application/json").Schema.Ref != "#/components/schemas/Error" {
				t.Errorf("%s %s: the default response is not the Error body", method, path)
			}
		}
	}
}

// TestOpenAPIOperations checks each API route against its operation in the
// document: the success status, and the query parameters, which the server
// refuses when a route does not accept them.
func TestOpenAPIOperations(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	c := mustContract(t)
	ops := map[string]*openapi3.Operation{}
	for path, item := range c.doc.Paths.Map() {
		for method, op := range item.Operations() {
			ops[method+" "+templateParam.ReplaceAllString(path, "{}")] = op
		}
	}
	for _, rt := range e.srv.routes {
		key := rt.method + " " + templateParam.ReplaceAllString(rt.path, "{}")
		op := ops[key]
		if op == nil {
			continue // TestOpenAPIRoutes reports it
		}
		var documented []string
		for _, p := range op.Parameters {
			if p.Value.In == openapi3.ParameterInQuery {
				documented = append(documented, p.Value.Name)
			}
		}
		slices.Sort(documented)
		accepted := slices.Sorted(slices.Values(rt.query))
		if !slices.Equal(documented, accepted) {
			t.Errorf("%s: openapi.yaml documents the query parameters %q, the route accepts %q", key, documented, accepted)
		}
		if op.Responses.Status(rt.status) == nil {
			t.Errorf("%s: openapi.yaml does not document the success status %d", key, rt.status)
		}
		for code := range op.Responses.Map() {
			if len(code) == 3 && code[0] == '2' && code != strconv.Itoa(rt.status) {
				t.Errorf("%s: openapi.yaml documents the success status %s, the route answers %d", key, code, rt.status)
			}
		}
	}
}
