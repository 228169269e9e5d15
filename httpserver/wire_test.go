package httpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
)

func TestVersion(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	t.Run("Absent", func(t *testing.T) {
		wantStatus(t, e.get("/usage-metrics"), http.StatusOK)
	})
	t.Run("Current", func(t *testing.T) {
		r := e.do(req{method: "GET", path: "/usage-metrics", header: map[string]string{"Service-Version": billing.APIVersion}})
		wantStatus(t, r, http.StatusOK)
	})
	t.Run("ErrUnsupportedVersion", func(t *testing.T) {
		for _, v := range []string{"2023-01-01", "2024-07-31", "latest"} {
			r := e.do(req{method: "GET", path: "/usage-metrics", header: map[string]string{"Service-Version": v}})
			wantError(t, r, http.StatusBadRequest, CodeUnsupportedVersion, "Service-Version")
		}
	})
}

func TestUnauthorized(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	revoked := e.apiKey(e.account)
	e.revokeKey(revoked.ID)
	keyID, secret, _ := billing.ParseBasicAuthorization(e.auth)
	other := e.apiKey(e.account)
	// The refusals run in parallel within one group, so that what they
	// created, if anything, is counted once they have all finished.
	t.Run("Refused", func(t *testing.T) {
		for name, auth := range map[string]string{
			"Missing":            "-",
			"NotBasic":           "Bearer abc",
			"NotBase64":          "Basic !!!",
			"NoColon":            "Basic " + base64.StdEncoding.EncodeToString([]byte("justakey")),
			"WrongSecret":        billing.BasicAuthorization(keyID, "sk_wrong"),
			"UnknownKey":         billing.BasicAuthorization("01900000-0000-7000-8000-000000000000", "sk_x"),
			"RevokedKey":         revoked.Authorization(),
			"EmptyBasic":         "Basic ",
			"SecretOfAnotherKey": billing.BasicAuthorization(other.ID, secret),
		} {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				for _, r := range []response{
					e.do(req{method: "GET", path: "/usage-metrics", auth: auth}),
					e.do(req{method: "POST", path: "/usage-metrics", body: metricBody("x"), auth: auth}),
				} {
					wantError(t, r, http.StatusUnauthorized, billing.CodeUnauthorized)
					if got := r.header.Get("WWW-Authenticate"); got != `Basic realm="billingd"` {
						t.Errorf("WWW-Authenticate = %q", got)
					}
				}
			})
		}
		// A key that authenticated requests (so it is in the Service's key
		// cache) gets 401 on the very next request after RevokeAPIKey returns,
		// while another key of the account keeps working.
		t.Run("RevokedKeyStopsAtOnce", func(t *testing.T) {
			t.Parallel()
			k := e.apiKey(e.account)
			for range 3 {
				wantStatus(t, e.do(req{method: "GET", path: "/usage-metrics", auth: k.Authorization()}), http.StatusOK)
			}
			e.revokeKey(k.ID)
			wantError(t, e.do(req{method: "GET", path: "/usage-metrics", auth: k.Authorization()}),
				http.StatusUnauthorized, billing.CodeUnauthorized)
			wantStatus(t, e.get("/usage-metrics"), http.StatusOK)
			wantError(t, e.do(req{method: "GET", path: "/usage-metrics", auth: billing.BasicAuthorization(k.ID, k.Secret+"x")}),
				http.StatusUnauthorized, billing.CodeUnauthorized)
		})
	})
	page, err := e.svc.ListUsageMetrics(context.Background(), e.account, billing.UsageMetricFilter{}, billing.ListParams{})
	if err != nil {
		t.Fatal(err)
	}
	if page.TotalResultSize != 0 {
		t.Errorf("%d metrics created without valid credentials", page.TotalResultSize)
	}
}

func TestUnsupportedMediaType(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	for _, ct := range []string{"text/plain", "application/x-www-form-urlencoded", "application/jsonx", "json", ";;;"} {
		r := e.do(req{method: "POST", path: "/usage-metrics", body: metricBody("a"), contentType: ct})
		wantError(t, r, http.StatusUnsupportedMediaType, CodeUnsupportedMediaType)
	}
	t.Run("Missing", func(t *testing.T) {
		hr := httptest.NewRequest("POST", "/usage-metrics", strings.NewReader(metricBody("a")))
		hr.Header.Set("Authorization", e.auth)
		rec := httptest.NewRecorder()
		e.h.ServeHTTP(rec, hr)
		wantError(t, response{status: rec.Code, header: rec.Header(), body: rec.Body.Bytes()},
			http.StatusUnsupportedMediaType, CodeUnsupportedMediaType)
	})
	t.Run("ParametersAllowed", func(t *testing.T) {
		for i, ct := range []string{"application/json; charset=utf-8", "Application/JSON;charset=UTF-8"} {
			r := e.do(req{method: "POST", path: "/usage-metrics", body: metricBody(fmt.Sprint("ok", i)), contentType: ct})
			wantStatus(t, r, http.StatusCreated)
		}
	})
	t.Run("RoutesWithoutBodyIgnoreIt", func(t *testing.T) {
		m := e.createMetric("to delete")
		r := e.do(req{method: "DELETE", path: "/usage-metrics/" + m.ID, body: "whatever", contentType: "text/plain"})
		wantStatus(t, r, http.StatusOK)
	})
}

func TestInvalidJSON(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	for name, body := range map[string]string{
		"Syntax":          `{"name": "x",}`,
		"Truncated":       `{"name": "x"`,
		"TrailingData":    metricBody("a") + `{}`,
		"TrailingGarbage": metricBody("a") + ` x`,
		"Array":           `[` + metricBody("a") + `]`,
		"String":          `"hello"`,
		"Number":          `42`,
		"Null":            `null`,
		"Empty":           ` `,
		"InvalidUTF8":     "{\"name\": \"a\xff\xfeb\", \"metricType\":\"SIMPLE\",\"eventType\":\"e\",\"aggregationType\":\"COUNT\"}",
		"InvalidUTF8Key":  "{\"\xc3\": 1}",
		"DeepNesting":     `{"propertyFilters":` + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + `}`,
		"SingleQuotes":    `{'name': 'x'}`,
		"BOM":             "\xef\xbb\xbf" + metricBody("a"),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := e.post("/usage-metrics", body)
			wantError(t, r, http.StatusBadRequest, CodeInvalidJSON)
		})
	}
	t.Run("NothingCreated", func(t *testing.T) {
		page := decode[listBody](t, e.get("/usage-metrics"))
		if *page.Pagination.TotalResultSize != 0 {
			t.Errorf("%d metrics created from invalid JSON", *page.Pagination.TotalResultSize)
		}
	})
}

func TestDecodeErrorsOverHTTP(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	for _, tc := range []struct {
		name   string
		body   string
		fields []string
	}{
		{"EveryFieldAtOnce", `{"name": 12, "metricType": ["SIMPLE"], "caseSensitive": "yes",
			"propertyFilters": {"region": "eu", "tier": [1, "gold", true]},
			"propertiesToNegate": {"a": 1}, "parameters": [{"name": "x", "type": 5}, {"name": false, "colour": "red"}],
			"status": "ACTIVE", "id": "x", "serviceAccountId": "someone"}`,
			[]string{"name", "metricType", "caseSensitive", "propertyFilters.region", "propertyFilters.tier[0]",
				"propertyFilters.tier[2]", "propertiesToNegate", "parameters[0].type", "parameters[1].name",
				"parameters[1].colour", "status", "id", "serviceAccountId"}},
		{"NumberForString", `{"eventType": 1.5}`, []string{"eventType"}},
		{"StringForBool", `{"caseSensitive": "true"}`, []string{"caseSensitive"}},
		{"ObjectForArray", `{"parameters": {"name": "x"}}`, []string{"parameters"}},
		{"ArrayForObject", `{"propertyFilters": [["a"]]}`, []string{"propertyFilters"}},
		{"ArrayForString", `{"unit": ["GB"]}`, []string{"unit"}},
		{"FieldNamesAreCaseSensitive", `{"Name": "x", "METRICTYPE": "SIMPLE"}`, []string{"Name", "METRICTYPE"}},
		{"BadTimestamp", `{"deletedAt": "yesterday"}`, []string{"deletedAt"}},
		{"NumberForTimestamp", `{"deletedAt": 1722340800}`, []string{"deletedAt"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := e.post("/usage-metrics", tc.body)
			errs := wantError(t, r, http.StatusBadRequest, billing.CodeValidationFailed, tc.fields...)
			for _, er := range errs {
				if !strings.HasPrefix(er.Message, er.Field+" ") {
					t.Errorf("message %q does not name its field %q", er.Message, er.Field)
				}
			}
		})
	}
	t.Run("Messages", func(t *testing.T) {
		r := e.post("/usage-metrics", `{"name": 1, "caseSensitive": "no", "parameters": 3, "propertyFilters": {"a": "b"}}`)
		want := map[string]string{
			"name":              "name must be a string, not a number",
			"caseSensitive":     "caseSensitive must be true or false, not a string",
			"parameters":        "parameters must be an array, not a number",
			"propertyFilters.a": "propertyFilters.a must be an array, not a string",
		}
		for _, er := range wantError(t, r, http.StatusBadRequest, billing.CodeValidationFailed,
			"name", "caseSensitive", "parameters", "propertyFilters.a") {
			if want[er.Field] != er.Message {
				t.Errorf("%s: message %q, want %q", er.Field, er.Message, want[er.Field])
			}
		}
	})
	t.Run("NullIsAbsent", func(t *testing.T) {
		r := e.post("/usage-metrics", `{"name":"n","metricType":"SIMPLE","eventType":"e","aggregationType":"COUNT",
			"description":null,"propertyFilters":null,"parameters":null,"deletedAt":null,"caseSensitive":null}`)
		wantStatus(t, r, http.StatusCreated)
	})
}

func TestPayloadTooLarge(t *testing.T) {
	t.Parallel()
	e := newEnv(t, &Config{MaxBodyBytes: 256})
	big := `{"name":"x","description":"` + strings.Repeat("a", 300) + `"}`
	t.Run("ContentLength", func(t *testing.T) {
		t.Parallel()
		r := e.post("/usage-metrics", big)
		wantError(t, r, http.StatusRequestEntityTooLarge, CodePayloadTooLarge)
		if r.header.Get("Connection") != "close" {
			t.Errorf("Connection = %q, want close", r.header.Get("Connection"))
		}
	})
	t.Run("UnderTheLimit", func(t *testing.T) {
		t.Parallel()
		wantStatus(t, e.post("/usage-metrics", metricBody("small")), http.StatusCreated)
	})
	t.Run("ChunkedConnectionClosed", func(t *testing.T) {
		t.Parallel()
		ts := e.serve()
		conn, err := net.Dial("tcp", ts.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if err := conn.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
			t.Fatal(err)
		}
		// A chunked body of 4 MiB with no declared length: the limit is
		// found while reading, and the server must answer and close the
		// connection rather than read the rest (it may discard a bounded
		// amount first).
		go func() {
			fmt.Fprintf(conn, "POST /usage-metrics HTTP/1.1\r\nHost: x\r\nAuthorization: %s\r\n"+
				"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n", e.auth)
			chunk := fmt.Sprintf("%x\r\n%s\r\n", 64<<10, strings.Repeat("a", 64<<10))
			for range 64 {
				if _, err := io.WriteString(conn, chunk); err != nil {
					return // the server closed the connection
				}
			}
			io.WriteString(conn, "0\r\n\r\n")
		}()
		br := bufio.NewReader(conn)
		res, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		wantError(t, response{status: res.StatusCode, header: res.Header, body: b},
			http.StatusRequestEntityTooLarge, CodePayloadTooLarge)
		if !res.Close {
			t.Error("the response does not close the connection")
		}
		_, err = br.ReadByte()
		if ne, ok := err.(net.Error); err == nil || ok && ne.Timeout() {
			t.Errorf("connection still open after 413: %v", err)
		}
	})
}

func TestRateLimited(t *testing.T) {
	t.Parallel()
	e := newEnv(t, &Config{RateLimit: 0.001, RateBurst: 2})
	for range 2 {
		wantStatus(t, e.get("/usage-metrics"), http.StatusOK)
	}
	r := e.get("/usage-metrics")
	wantError(t, r, http.StatusTooManyRequests, CodeRateLimited)
	secs, err := strconv.Atoi(r.header.Get("Retry-After"))
	if err != nil || secs < 1 {
		t.Errorf("Retry-After = %q, want whole seconds >= 1", r.header.Get("Retry-After"))
	}
	t.Run("PerKey", func(t *testing.T) {
		other := e.newKey(e.account)
		wantStatus(t, e.do(req{method: "GET", path: "/usage-metrics", auth: other}), http.StatusOK)
	})
	t.Run("HealthIsNotLimited", func(t *testing.T) {
		wantStatus(t, e.get("/healthz"), http.StatusOK)
	})
	t.Run("ZeroAndNegativeDisable", func(t *testing.T) {
		// 0 means off, as billingd's --rate-limit 0 does.
		for _, rate := range []float64{0, -1} {
			e := newEnv(t, &Config{RateLimit: rate, RateBurst: 1})
			for range 5 {
				wantStatus(t, e.get("/usage-metrics"), http.StatusOK)
			}
		}
	})
	t.Run("BurstFollowsTheRate", func(t *testing.T) {
		// --rate-limit 1 allows a burst of RateBurstFactor (2), not 2,000.
		e := newEnv(t, &Config{RateLimit: 1})
		var statuses []int
		for range 4 {
			statuses = append(statuses, e.get("/usage-metrics").status)
		}
		if !slices.Equal(statuses, []int{200, 200, 429, 429}) {
			t.Errorf("statuses %v, want a burst of 2 then 429", statuses)
		}
	})
	t.Run("NilConfigHasTheDefault", func(t *testing.T) {
		if got := (*Config)(nil).withDefaults(); got.RateLimit != DefaultRateLimit || got.RateBurst != RateBurstFactor*DefaultRateLimit {
			t.Errorf("nil Config: rate %v burst %d", got.RateLimit, got.RateBurst)
		}
	})
}

func TestRetryAfterSeconds(t *testing.T) {
	t.Parallel()
	for d, want := range map[time.Duration]int{0: 1, time.Millisecond: 1, time.Second: 1, 1001 * time.Millisecond: 2, 1e18: 86400} {
		if got := retryAfterSeconds(d); got != want {
			t.Errorf("retryAfterSeconds(%v) = %d, want %d", d, got, want)
		}
	}
}

func TestInternalErrorFromPanic(t *testing.T) {
	t.Parallel()
	var logs billingtest.LogBuffer
	e := newEnv(t, &Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	e.srv.engine.GET("/boom", func(*gin.Context) { panic("secret: /etc/passwd at db.go:42") })
	e.srv.group(e.srv.engine, false).post("/boom-op", 201, func(c *call) (any, error) {
		panic(fmt.Errorf("secret %s", c.account))
	})
	for _, path := range []string{"/boom", "/boom-op"} {
		r := e.do(req{method: map[string]string{"/boom": "GET", "/boom-op": "POST"}[path], path: path})
		errs := wantError(t, r, http.StatusInternalServerError, billing.CodeInternal)
		if errs[0].Message != internalMessage || bytes.Contains(r.body, []byte("secret")) {
			t.Errorf("%s: the answer leaks: %s", path, r.body)
		}
	}
	if !strings.Contains(logs.String(), "secret: /etc/passwd") {
		t.Error("the panic was not logged")
	}
	t.Run("ServerStillServes", func(t *testing.T) {
		wantStatus(t, e.get("/usage-metrics"), http.StatusOK)
	})
	t.Run("ErrorWithCause", func(t *testing.T) {
		e.srv.group(e.srv.engine, false).get("/fail", 200, func(c *call) (any, error) {
			return nil, fmt.Errorf("open /var/lib/billing.db: disk on fire")
		})
		r := e.get("/fail")
		wantError(t, r, http.StatusInternalServerError, billing.CodeInternal)
		if bytes.Contains(r.body, []byte("fire")) {
			t.Errorf("the answer leaks: %s", r.body)
		}
		if !strings.Contains(logs.String(), "disk on fire") {
			t.Error("the cause was not logged")
		}
	})
}

func TestRequestLog(t *testing.T) {
	t.Parallel()
	var logs billingtest.LogBuffer
	e := newEnv(t, &Config{Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	keyID, secret, _ := billing.ParseBasicAuthorization(e.auth)
	r := e.post("/usage-metrics", metricBody("very-private-name"))
	wantStatus(t, r, http.StatusCreated)
	id := decode[billing.UsageMetric](t, r).ID
	e.get("/usage-metrics/" + id + "?after=sekrit-query")

	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d log lines, want 2:\n%s", len(lines), logs.String())
	}
	var first map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &first); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]any{
		"method": "POST", "route": "/usage-metrics", "status": float64(201), "account": e.account, "key": keyID,
	} {
		if first[k] != want {
			t.Errorf("log %s = %v, want %v", k, first[k], want)
		}
	}
	if ms, ok := first["duration_ms"].(float64); !ok || ms < 0 || ms > 60_000 {
		t.Errorf("log duration_ms = %v, want milliseconds as a number", first["duration_ms"])
	}
	if id, _ := first["request_id"].(string); id == "" || id != r.header.Get("X-Request-Id") {
		t.Errorf("log request_id = %v, answer's X-Request-Id = %q", first["request_id"], r.header.Get("X-Request-Id"))
	}
	if first["remote"] != "192.0.2.1:1234" { // httptest.NewRequest's RemoteAddr
		t.Errorf("log remote = %v", first["remote"])
	}
	if !strings.Contains(lines[1], `"route":"/usage-metrics/:id"`) {
		t.Errorf("second line has no route template: %s", lines[1])
	}
	for _, leak := range []string{secret, e.auth, strings.TrimPrefix(e.auth, "Basic "), "very-private-name", id, "sekrit"} {
		if strings.Contains(logs.String(), leak) {
			t.Errorf("the log contains %q", leak)
		}
	}
}

func TestHealth(t *testing.T) {
	t.Parallel()
	store := billingtest.Store(t)
	e := newEnv(t, nil, billingtest.WithStore(store))
	for _, path := range []string{"/healthz", "/readyz"} {
		r := e.do(req{method: "GET", path: path, auth: "-"})
		wantStatus(t, r, http.StatusOK)
	}
	t.Run("IgnoresVersion", func(t *testing.T) {
		r := e.do(req{method: "GET", path: "/healthz", auth: "-", header: map[string]string{"Service-Version": "1999-01-01"}})
		wantStatus(t, r, http.StatusOK)
	})
	t.Run("ErrUnavailableWhenStoreClosed", func(t *testing.T) {
		if err := store.Close(); err != nil {
			t.Fatal(err)
		}
		wantError(t, e.do(req{method: "GET", path: "/readyz", auth: "-"}), http.StatusServiceUnavailable, billing.CodeUnavailable)
		wantStatus(t, e.do(req{method: "GET", path: "/healthz", auth: "-"}), http.StatusOK)
	})
}

func TestMetrics(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.get("/usage-metrics/nope")
	e.get("/usage-metrics/nope")
	e.get("/nowhere")
	r := e.do(req{method: "GET", path: "/metrics", auth: "-"})
	wantStatus(t, r, http.StatusOK)
	for _, want := range []string{
		`billingd_http_requests_total{method="GET",route="/usage-metrics/:id",status="404"} 2`,
		`billingd_http_requests_total{method="GET",route="unmatched",status="404"} 1`,
		`billingd_http_request_duration_seconds_bucket{method="GET",route="/usage-metrics/:id",status="404",le="+Inf"} 2`,
		"go_goroutines", "process_",
	} {
		if !strings.Contains(string(r.body), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	t.Run("Disabled", func(t *testing.T) {
		e := newEnv(t, &Config{DisableMetrics: true})
		wantError(t, e.do(req{method: "GET", path: "/metrics", auth: "-"}), http.StatusNotFound, billing.CodeNotFound)
	})
}

func TestRegisterOnCallersEngine(t *testing.T) {
	t.Parallel()
	svc, _ := billingtest.NewService(t, billingtest.WithBolt())
	e := &env{tb: t, svc: svc}
	e.account, e.auth = e.newAccount("acme")
	engine := gin.New()
	engine.GET("/mine", func(g *gin.Context) { g.String(http.StatusTeapot, "mine") })
	NewServer(svc, nil).Register(engine.Group("/billing"))
	e.h = engine

	r := e.post("/billing/usage-metrics", metricBody("a"))
	wantStatus(t, r, http.StatusCreated)
	m := decode[billing.UsageMetric](t, r)
	wantStatus(t, e.get("/billing/usage-metrics/"+m.ID), http.StatusOK)
	wantError(t, e.do(req{method: "GET", path: "/billing/usage-metrics", auth: "-"}), http.StatusUnauthorized, billing.CodeUnauthorized)

	hr := httptest.NewRequest("GET", "/mine", nil)
	rec := httptest.NewRecorder()
	engine.ServeHTTP(rec, hr)
	if rec.Code != http.StatusTeapot {
		t.Errorf("the caller's own route answered %d", rec.Code)
	}
}

func TestBatchBodyLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t, &Config{MaxBodyBytes: 100, MaxBatchBodyBytes: 1000})
	echo := body(func(c *call, p *map[string]any) (any, error) { return len(c.body), nil })
	a := e.srv.group(e.srv.engine, false)
	a.patch("/small", 200, echo)
	a.patch("/batch", 200, echo, batchBody)
	payload := `{"x":"` + strings.Repeat("a", 500) + `"}`
	wantError(t, e.do(req{method: "PATCH", path: "/small", body: payload}), http.StatusRequestEntityTooLarge, CodePayloadTooLarge)
	r := e.do(req{method: "PATCH", path: "/batch", body: payload})
	wantStatus(t, r, http.StatusOK)
	if string(r.body) != strconv.Itoa(len(payload)) {
		t.Errorf("batch route read %s bytes, want %d", r.body, len(payload))
	}
	wantError(t, e.do(req{method: "PATCH", path: "/batch", body: payload + strings.Repeat(" ", 600)}),
		http.StatusRequestEntityTooLarge, CodePayloadTooLarge)
}
