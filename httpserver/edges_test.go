package httpserver

import (
	"bufio"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
)

// Tests of the sharp edges a new user hit: unknown query parameters,
// foreign cursors, oversized headers, HEAD probes, refused requests with
// a body still on its way, and request ids.

// TestUnknownQueryParameterEveryRoute: every registered route refuses a
// query parameter it does not take, naming it, before doing anything (a
// mutating route changes nothing).
func TestUnknownQueryParameterEveryRoute(t *testing.T) {
	t.Parallel()
	e := newEnv(t, &Config{RateLimit: -1})
	f := buildFixtures(t, e, e.auth, "q")
	bodies := validBodies(f)
	for _, rt := range apiRoutes(t, e) {
		path := f.path(rt.path) + "?bogusFilter=1"
		r := e.do(req{method: rt.method, path: path, body: bodies[rt.String()]})
		errs := wantError(t, r, http.StatusBadRequest, billing.CodeValidationFailed, "bogusFilter")
		if len(errs) == 1 && !strings.HasPrefix(errs[0].Message, "bogusFilter is not a known query parameter") {
			t.Errorf("%s: message %q", rt, errs[0].Message)
		}
	}
}

func TestUnknownQueryParameterSuggestsTheClosest(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	// The case the new user hit: a filter in the wrong case answered every
	// invoice of the account.
	r := e.get("/invoices?billingScheduleID=x")
	errs := wantError(t, r, http.StatusBadRequest, billing.CodeValidationFailed, "billingScheduleID")
	if want := "did you mean billingScheduleId?"; !strings.Contains(errs[0].Message, want) {
		t.Errorf("message %q does not contain %q", errs[0].Message, want)
	}
	// Far from every known name: the known names are listed.
	r = e.get("/billing-schedules/x/upcoming-invoice?zzzzzz=1")
	errs = wantError(t, r, http.StatusBadRequest, billing.CodeValidationFailed, "zzzzzz")
	if want := "known: asOf"; !strings.Contains(errs[0].Message, want) {
		t.Errorf("message %q does not contain %q", errs[0].Message, want)
	}
}

func TestUnknownBodyFieldSuggestsTheClosest(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	r := e.post("/usage-metrics", `{"name":"x","metricType":"SIMPLE","eventtype":"api","aggregationType":"COUNT"}`)
	errs := wantError(t, r, http.StatusBadRequest, billing.CodeValidationFailed, "eventtype")
	if want := "eventtype is not a known field; did you mean eventType?"; errs[0].Message != want {
		t.Errorf("message %q, want %q", errs[0].Message, want)
	}
}

// TestForeignCursor: a cursor issued to another account is refused on the
// cursor parameter, not answered with an empty page.
func TestForeignCursor(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	for i := range 3 {
		e.createMetric("m" + string(rune('a'+i)))
	}
	var p struct {
		Pagination billing.Pagination `json:"pagination"`
	}
	p = decode[struct {
		Pagination billing.Pagination `json:"pagination"`
	}](t, e.get("/usage-metrics?limit=1"))
	if p.Pagination.After == "" {
		t.Fatal("no after cursor")
	}
	_, other := e.newAccount("other")
	r := e.do(req{method: "GET", path: "/usage-metrics?limit=1&after=" + p.Pagination.After, auth: other})
	wantError(t, r, http.StatusBadRequest, billing.CodeValidationFailed, "after")
}

// TestHeadersTooLarge: oversized headers get the JSON error body too.
func TestHeadersTooLarge(t *testing.T) {
	t.Parallel()
	e := newEnv(t, &Config{MaxHeaderBytes: 4096})
	r := e.do(req{method: "GET", path: "/usage-metrics", header: map[string]string{"X-Big": strings.Repeat("b", 5000)}})
	wantError(t, r, http.StatusRequestHeaderFieldsTooLarge, CodeHeadersTooLarge)
	wantStatus(t, e.get("/usage-metrics"), http.StatusOK)
}

func TestHeadHealthAndReady(t *testing.T) {
	t.Parallel()
	srv := newEnv(t, nil).serve()
	for _, path := range []string{"/healthz", "/readyz"} {
		res, err := http.Head(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK || len(b) != 0 || res.Header.Get("Content-Type") != jsonContentType {
			t.Errorf("HEAD %s: %d %q (%s)", path, res.StatusCode, b, res.Header.Get("Content-Type"))
		}
	}
}

// TestRefusedWithIncompleteBodyAnswersAtOnce: a request refused on its
// headers (bad credentials: 401; an unknown Service-Version with good
// ones: 400) whose body never fully arrives is answered at once, not when
// the server gives up reading the body.
func TestRefusedWithIncompleteBodyAnswersAtOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	srv := e.serve()
	for name, tc := range map[string]struct {
		extra  string
		status int
		code   billing.Code
	}{
		"ErrUnauthorized":       {"Authorization: Basic eDp5\r\n", http.StatusUnauthorized, billing.CodeUnauthorized},
		"ErrUnsupportedVersion": {"Authorization: " + e.auth + "\r\nService-Version: 1999-01-01\r\n", http.StatusBadRequest, CodeUnsupportedVersion},
	} {
		extra := tc.extra
		conn, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_, err = io.WriteString(conn, "POST /usage-metrics HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"+
			extra+"Content-Length: 1000\r\n\r\n{\"name\":")
		if err != nil {
			t.Fatal(err)
		}
		_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		res, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("%s: no answer while the body is incomplete: %v", name, err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != tc.status || !strings.Contains(string(b), `"`+string(tc.code)+`"`) {
			t.Errorf("%s: %d %s, want %d %s", name, res.StatusCode, b, tc.status, tc.code)
		}
	}
}

// TestRequestID: X-Request-Id is taken from the request when sent (else
// generated), echoed on the answer, and logged with the remote address and
// the error code of a failed request.
func TestRequestID(t *testing.T) {
	t.Parallel()
	var logs billingtest.LogBuffer
	e := newEnv(t, &Config{Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	r := e.do(req{method: "GET", path: "/usage-metrics/nope", header: map[string]string{"X-Request-Id": "req-42"}})
	if got := r.header.Get("X-Request-Id"); got != "req-42" {
		t.Errorf("X-Request-Id = %q, want the request's", got)
	}
	generated := e.get("/usage-metrics").header.Get("X-Request-Id")
	other := e.get("/usage-metrics").header.Get("X-Request-Id")
	if len(generated) < 16 || generated == other {
		t.Errorf("generated ids %q and %q", generated, other)
	}
	bad := e.do(req{method: "GET", path: "/usage-metrics", header: map[string]string{"X-Request-Id": "a b\x01"}})
	if got := bad.header.Get("X-Request-Id"); got == "a b\x01" || got == "" {
		t.Errorf("an unprintable X-Request-Id was echoed: %q", got)
	}
	var first map[string]any
	if err := json.Unmarshal([]byte(strings.SplitN(logs.String(), "\n", 2)[0]), &first); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]any{"request_id": "req-42", "error": "not_found", "status": float64(404), "remote": "192.0.2.1:1234"} {
		if first[k] != want {
			t.Errorf("log %s = %v, want %v", k, first[k], want)
		}
	}
}

// TestDateBounds: dates and timestamps outside 2000-01-01 .. 2199-12-31 are
// 400 naming the field or parameter, in bodies and in query strings.
func TestDateBounds(t *testing.T) {
	t.Parallel()
	e := newEnv(t, &Config{RateLimit: -1})
	f := buildFixtures(t, e, e.auth, "d")
	body := strings.ReplaceAll(scheduleBody(f.ids["customers"], f.ids["prices"], ""), "2024-07-01", "0001-01-01")
	r := e.post("/billing-schedules", body)
	errs := wantError(t, r, http.StatusBadRequest, billing.CodeValidationFailed, "startDate", "phases[0].startDate")
	if errs[0].Message != errs[0].Field+" must be between 2000-01-01 and 2199-12-31" {
		t.Errorf("message %q", errs[0].Message)
	}
	r = e.post("/usage-events", `{"customerAlias":"a","eventType":"t","eventTimestamp":"1999-12-31T23:59:59Z"}`)
	wantError(t, r, http.StatusBadRequest, billing.CodeValidationFailed, "eventTimestamp")
	r = e.post("/usage-events/batch", `{"events":[{"customerAlias":"a","eventType":"t","eventTimestamp":"2200-01-01T00:00:00Z"}]}`)
	wantError(t, r, http.StatusBadRequest, billing.CodeValidationFailed, "events[0].eventTimestamp")
	for path, field := range map[string]string{
		"/billing-schedules/" + f.ids["billing-schedules"] + "/upcoming-invoice?asOf=1999-12-31T23:59:59Z":                      "asOf",
		"/usage-events?eventTimestampAfter=2200-01-01T00:00:00Z":                                                                "eventTimestampAfter",
		"/seat-balances?asOf=0001-01-01T00:00:00Z":                                                                              "asOf",
		"/usage-metrics/" + f.ids["usage-metrics"] + "/calculate?customerAliases=a&periodStart=1999-12-31&periodEnd=2000-01-31": "periodStart",
	} {
		errs := wantError(t, e.get(path), http.StatusBadRequest, billing.CodeValidationFailed, field)
		if !strings.Contains(errs[0].Message, "between 2000-01-01 and 2199-12-31") {
			t.Errorf("%s: message %q", path, errs[0].Message)
		}
	}
	r = e.post("/billing-runs", `{"asOf":"1999-01-01T00:00:00Z"}`)
	wantError(t, r, http.StatusBadRequest, billing.CodeValidationFailed, "asOf")
}

// TestErrorsNameTheirField: every validation error names its field and
// reads as a sentence about it; an unknown enum value lists the valid ones.
func TestErrorsNameTheirField(t *testing.T) {
	t.Parallel()
	e := newEnv(t, &Config{RateLimit: -1})
	f := buildFixtures(t, e, e.auth, "m")
	r := e.post("/notifications/policies", `{"name":"ops","channel":"WEBHOOK","recipients":["https://hooks.example.com/x"],"notificationTypes":["INVOICE_SENT"]}`)
	errs := wantError(t, r, http.StatusBadRequest, billing.CodeValidationFailed, "notificationTypes[0]")
	if !strings.Contains(errs[0].Message, string(billing.NotificationInvoiceCreated)) {
		t.Errorf("message %q does not list the valid types", errs[0].Message)
	}
	// quantity × rate beyond 20 integer digits: the line's fields, not a
	// bare "has more than 20 digits".
	inv := f.ids["invoices"]
	r = e.post("/invoices/"+inv+"/line-items", lineBody("Big", "9999999999", "9999999999.99", "0.2", ""))
	errs = wantErrorAnyField(t, r)
	for _, er := range errs {
		if er.Field == "" || !strings.Contains(er.Message, "digits") {
			t.Errorf("error %+v names no field or does not say what is wrong", er)
		}
	}
}

// TestNegativeInvoiceIsNotFinalized: negative lines are adjustments; an
// invoice whose gross total is negative is refused at finalize and send
// (409 invalid_state) and stays a DRAFT without a number.
func TestNegativeInvoiceIsNotFinalized(t *testing.T) {
	t.Parallel()
	e := newEnv(t, &Config{RateLimit: -1})
	f := buildFixtures(t, e, e.auth, "n")
	create := func() string {
		r := e.post("/invoices", `{"currency":"GBP","customerId":"`+f.ids["customers"]+`"}`)
		wantStatus(t, r, http.StatusCreated)
		return decode[billing.Invoice](t, r).ID
	}
	neg := create()
	wantStatus(t, e.post("/invoices/"+neg+"/line-items", lineBody("Refund", "-3", "9.99", "0.2", "")), http.StatusCreated)
	for _, op := range []string{"finalize", "send"} {
		errs := wantError(t, e.post("/invoices/"+neg+"/"+op, ""), http.StatusConflict, billing.CodeInvalidState)
		if !strings.Contains(errs[0].Message, "credit note") {
			t.Errorf("%s: message %q does not say what to do", op, errs[0].Message)
		}
	}
	if inv := decode[billing.Invoice](t, e.get("/invoices/"+neg)); inv.Status != billing.StatusDraft || inv.InvoiceNumber != "" {
		t.Errorf("refused invoice: %s %q", inv.Status, inv.InvoiceNumber)
	}
	adjusted := create()
	wantStatus(t, e.post("/invoices/"+adjusted+"/line-items", lineBody("Plan", "1", "50", "0.2", "")), http.StatusCreated)
	wantStatus(t, e.post("/invoices/"+adjusted+"/line-items", lineBody("Goodwill", "-1", "10", "0.2", "")), http.StatusCreated)
	r := e.post("/invoices/"+adjusted+"/finalize", "")
	wantStatus(t, r, http.StatusOK)
	if got := decode[billing.Invoice](t, r).GrossTotal.String(); got != "48.00" {
		t.Errorf("grossTotal %s, want 48.00", got)
	}
}

// TestAuthAndRateLimitMetrics: refused credentials and rate-limited
// requests are counted on /metrics.
func TestAuthAndRateLimitMetrics(t *testing.T) {
	t.Parallel()
	e := newEnv(t, &Config{RateLimit: 0.001, RateBurst: 1})
	e.do(req{method: "GET", path: "/usage-metrics", auth: "Basic eDp5"})
	e.do(req{method: "GET", path: "/usage-metrics", auth: "-"})
	e.get("/usage-metrics")
	e.get("/usage-metrics") // over the burst of 1
	r := e.do(req{method: "GET", path: "/metrics", auth: "-"})
	wantStatus(t, r, http.StatusOK)
	for _, want := range []string{"billingd_auth_failures_total 2\n", "billingd_rate_limited_requests_total 1\n"} {
		if !strings.Contains(string(r.body), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

// TestNegativeUsageInSUM documents what negative values do in SUM: they are
// added as they are, so a correction can be sent as a negative event.
func TestNegativeUsageInSUM(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	r := e.post("/usage-metrics", `{"name":"uploads","metricType":"SIMPLE","eventType":"up","aggregationType":"SUM","aggregationProperty":"n"}`)
	wantStatus(t, r, http.StatusCreated)
	id := decode[billing.UsageMetric](t, r).ID
	for i, n := range []string{"5", "-2"} {
		body := `{"customerAlias":"neg","eventType":"up","customerEventId":"e` + string(rune('0'+i)) +
			`","eventTimestamp":"2024-07-30T10:00:00Z","eventProperties":{"n":` + n + `}}`
		wantStatus(t, e.post("/usage-events", body), http.StatusCreated)
	}
	r = e.get("/usage-metrics/" + id + "/calculate?customerAliases=neg&periodStart=2024-07-01&periodEnd=2024-07-31")
	wantStatus(t, r, http.StatusOK)
	if !strings.Contains(string(r.body), `"value":"3"`) {
		t.Errorf("SUM of 5 and -2: %s, want 3", r.body)
	}
}
