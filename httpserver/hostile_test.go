package httpserver

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/billingd/billing"
)

// The hostile-input suite (docs/ARCHITECTURE.md, "Reliability test suites"): every registered
// route receives malformed, oversized, wrongly typed and hostile bodies,
// headers, path ids and query strings. Every answer must be a success or a
// 4xx with the documented error body (never a 5xx), and the server must keep
// serving. Routes come from the handler itself (apiRoutes), so new routes
// are covered as soon as routes() mounts them.

// hostileValues replace one field of a valid body at a time.
var hostileValues = []string{
	`null`, `true`, `0`, `-1`, `1.5`, `1e5`, `-0`,
	`"1e5"`, `"NaN"`, `"Infinity"`, `"-Infinity"`, `"0x10"`, `"+1"`, `" 1"`, `"1."`, `".5"`, `"1,5"`,
	`"1234567890123456789012345678901234567890"`, `1234567890123456789012345678901234567890`,
	`"0.0000000000000000000000000001"`, `""`, `"x"`, `"SIDEWAYS"`,
	`"0001-01-01"`, `"2200-01-01"`, `"1999-12-31T23:59:59Z"`, `"2200-01-01T00:00:00+01:00"`,
	`"2024-13-45"`, `"2024-02-30T25:61:00Z"`, `"0000-00-00"`, `"9999-12-31T23:59:59Z"`, `"-0001-01-01T00:00:00Z"`,
	`[]`, `{}`, `[null]`, `[{}]`, `{"x":1}`, `[[[[]]]]`,
	`"\u0000"`, `"\ud800"`, `"a,b"`, `"` + strings.Repeat("é", 2000) + `"`,
}

// heavyValues replace the top-level fields only: they are large, and the
// decoder's cost does not depend on where they sit.
var heavyValues = []string{
	`"` + strings.Repeat("x", 100_000) + `"`,
	`[` + strings.Repeat(`"a",`, 20_000) + `"a"]`,
	`{` + strings.Repeat(`"k":1,`, 5000) + `"k":2}`,
	strings.Repeat("[", 10_000) + strings.Repeat("]", 10_000),
}

// hostileBodies are whole bodies sent, as application/json, to every route.
var hostileBodies = []string{
	" ", "{", "}", "nul", "null", "[]", `"s"`, "123", "{}{}", `{} x`, "\xff{}", "{\"a\":\"\xff\"}",
	"\xef\xbb\xbf{}", "\x00", `{"a":1,"a":2}`, `{"id":"x","serviceAccountId":"y","status":"VOIDED"}`,
	strings.Repeat(`{"a":`, 10_000) + "1" + strings.Repeat("}", 10_000),
	`{"x":` + strings.Repeat("[", 10_000) + strings.Repeat("]", 10_000) + `}`,
	"{" + strings.Join(slices.Repeat([]string{`"f":1`}, 10_000), ",") + "}",
}

// hostileQueries are query strings sent to every GET route.
var hostileQueries = []string{
	"limit=-1", "limit=abc", "limit=0", "limit=101", "limit=1e3", "limit=99999999999999999999999", "limit=%20", "limit=1&limit=-1",
	"sortOrder=sideways", "sortOrder=", "sortBy=nothing", "after=garbage", "before=garbage", "after=x&before=y",
	"after=%ff%fe", "after=" + strings.Repeat("A", 10_000), "after=" + base64.RawURLEncoding.EncodeToString([]byte(`{"l":"x"}`)),
	"customerIds=" + strings.Repeat("x,", 1000), "customerAliases=" + strings.Repeat("%2C", 500),
	"eventTimestampAfter=yesterday", "eventTimestampBefore=2024-13-01T00:00:00Z", "asOf=0", "excludeZeroQuantity=maybe",
	"asOf=1999-12-31T23:59:59Z", "eventTimestampBefore=2200-01-01T00:00:00Z", "periodStart=0001-01-01&periodEnd=0001-01-31",
	"periodStart=2024-13-01&periodEnd=x", "periodStart=2024-07-31&periodEnd=2024-07-01", "customParameters=%7B", "customParameters=" + url.QueryEscape(`{"a":[1]}`),
	"billingScheduleID=x", "Limit=5", "currency=usd", "billingFrequency=HOURLY", "aggregationType=BOGUS", "name=%00", "eventType=%ff", "productId=" + strings.Repeat("9", 5000),
}

// hostileIDs fill the path parameters of routes that take one.
var hostileIDs = []string{"nope", "..%2F..%2Fetc", "%00", "%ff", strings.Repeat("a", 5000), "00000000-0000-0000-0000-000000000000", "%20", "0190FFFF-FFFF-7FFF-BFFF-FFFFFFFFFFFF"}

// hostileAuth are Authorization values that must all be refused with 401.
func hostileAuth(e *env) []string {
	keyID, _, _ := billing.ParseBasicAuthorization(e.auth)
	b64 := func(s string) string { return "Basic " + base64.StdEncoding.EncodeToString([]byte(s)) }
	return []string{
		"-", " ", "Basic", "Basic ", "Basic !!!!", "Basic ====", b64("nocolon"), b64(":"), b64(keyID + ":"), b64(":secret"),
		b64(keyID + ":sk_wrong"), b64(keyID + ":" + strings.Repeat("s", 10_000)), b64("\xff\xfe:\x00"),
		"Bearer " + strings.TrimPrefix(e.auth, "Basic "), "basic", strings.Repeat("B", 8000), e.auth + "x", e.auth + " extra",
	}
}

// Long on purpose: a table of cases, one line each; its length is the cases, not logic.
func TestHostileInputEveryRoute(t *testing.T) {
	t.Parallel()
	e := newEnv(t, &Config{RateLimit: -1})
	f := buildFixtures(t, e, e.auth, "h")
	bodies := validBodies(f)
	auths := hostileAuth(e)
	versions := []string{"2020-01-01", "latest", "2024-07-30 ", strings.Repeat("9", 1000)}
	for ri, rt := range apiRoutes(t, e) {
		t.Run(rt.method+strings.ReplaceAll(rt.path, "/", "_"), func(t *testing.T) {
			path := f.path(rt.path)
			send := func(what string, r req) response {
				t.Helper()
				if r.method == "" {
					r.method, r.path = rt.method, path
				}
				res := e.do(r)
				checkAnswer(t, rt.String()+" "+what, res)
				return res
			}
			valid, hasBody := bodies[rt.String()]

			// Whole bodies, then each field of the valid body replaced by
			// each hostile value.
			for i, b := range hostileBodies {
				res := send(fmt.Sprintf("hostile body %d", i), req{body: b})
				if hasBody && res.status/100 == 2 {
					t.Errorf("hostile body %d %.40q accepted: %d %.200s", i, b, res.status, res.body)
				}
			}
			if hasBody {
				for _, v := range hostileValues {
					for _, m := range mutations([]byte(valid), v, 0) {
						send(fmt.Sprintf("%s=%.40s", m.path, v), req{body: m.body})
					}
				}
				for _, v := range heavyValues {
					for _, m := range mutations([]byte(valid), v, 3) {
						send(fmt.Sprintf("%s=%.40s", m.path, v), req{body: m.body})
					}
				}
				// The valid body under wrong media types.
				for _, ct := range []string{"text/plain", "application/xml", "application/json-patch+json", "application/json; charset", ";;;", "multipart/form-data; boundary=x"} {
					wantError(t, send("Content-Type "+ct, req{body: valid, contentType: ct}), http.StatusUnsupportedMediaType, CodeUnsupportedMediaType)
				}
				// Oversized: over the route's limit (5 MiB on batch routes).
				size := defaultMaxBodyBytes + 1
				if strings.HasSuffix(rt.path, "/batch") {
					size = defaultMaxBatchBodyBytes + 1
				}
				big := `{"x":"` + strings.Repeat("x", size) + `"}`
				wantError(t, send("oversized body", req{body: big}), http.StatusRequestEntityTooLarge, CodePayloadTooLarge)
			}

			// Headers.
			// Authentication and versioning run before any route code:
			// each route gets a rotating share of the values, and every
			// value reaches many routes.
			for j := range 5 {
				i := (ri*5 + j) % len(auths)
				res := send(fmt.Sprintf("Authorization %d", i), req{body: valid, auth: auths[i]})
				if wantError(t, res, http.StatusUnauthorized, billing.CodeUnauthorized); res.header.Get("WWW-Authenticate") == "" {
					t.Errorf("Authorization %d: 401 without WWW-Authenticate", i)
				}
			}
			for _, v := range []string{versions[ri%len(versions)]} {
				wantError(t, send("Service-Version "+v, req{body: valid, header: map[string]string{"Service-Version": v}}),
					http.StatusBadRequest, CodeUnsupportedVersion, "Service-Version")
			}
			if mutating(rt.method) {
				for _, k := range []string{strings.Repeat("k", 256), "a\x01b", "\x7f"} {
					wantError(t, send("Idempotency-Key", req{body: valid, header: map[string]string{"Idempotency-Key": k}}),
						http.StatusBadRequest, billing.CodeValidationFailed, "Idempotency-Key")
				}
			}

			// Query strings and path ids.
			if rt.method == http.MethodGet {
				for _, q := range hostileQueries {
					send("?"+q, req{method: "GET", path: path + "?" + q})
				}
			}
			if strings.Contains(rt.path, "/:") {
				for _, id := range hostileIDs {
					p := strings.NewReplacer(":id", id, ":item", id).Replace(rt.path)
					res := send("id "+id, req{method: rt.method, path: p, body: valid})
					if res.status/100 == 2 {
						t.Errorf("%s with id %.20q: %d", rt, id, res.status)
					}
				}
			}
			healthy(t, e, rt.String())
		})
	}
}

// TestHostileCursors: a cursor that was tampered with, comes from another
// list, or is combined with the other direction is refused with 400 naming
// the parameter, on every list route.
//
// Long on purpose: one scenario walked in order; each step starts from the state the previous steps
// left, so pieces would repeat the set-up.
func TestHostileCursors(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	buildFixtures(t, e, e.auth, "c")
	cursors := map[string]string{} // list path → an after cursor
	var lists []string
	for _, rt := range apiRoutes(t, e) {
		if rt.method != http.MethodGet || strings.Contains(rt.path, ":") {
			continue
		}
		r := e.get(rt.path + "?limit=1")
		var p struct {
			Pagination *billing.Pagination `json:"pagination"`
		}
		if r.status != http.StatusOK || json.Unmarshal(r.body, &p) != nil || p.Pagination == nil {
			continue // not a list
		}
		lists = append(lists, rt.path)
		if p.Pagination.TotalResultSize < 2 {
			t.Logf("%s: no fixtures, cursors not checked", rt.path)
			continue
		}
		if p.Pagination.After == "" {
			t.Errorf("%s?limit=1: no after cursor over %d items", rt.path, p.Pagination.TotalResultSize)
			continue
		}
		cursors[rt.path] = p.Pagination.After
	}
	if len(lists) < 8 {
		t.Fatalf("only %d lists found: %v", len(lists), lists)
	}
	var withCursor []string
	for _, list := range lists {
		if cursors[list] != "" {
			withCursor = append(withCursor, list)
		}
	}
	if len(withCursor) < 8 {
		t.Fatalf("only %d lists with a cursor: %v", len(withCursor), withCursor)
	}
	for i, list := range withCursor {
		c := cursors[list]
		other := cursors[withCursor[(i+1)%len(withCursor)]]
		wantStatus(t, e.get(list+"?limit=1&after="+url.QueryEscape(c)), http.StatusOK)
		for name, q := range map[string]string{
			"Tampered":       "after=" + url.QueryEscape(tamper(c, len(c)/2)),
			"TamperedTag":    "after=" + url.QueryEscape(tamper(c, len(c)-1)),
			"Truncated":      "after=" + url.QueryEscape(c[:len(c)-3]),
			"Extended":       "after=" + url.QueryEscape(c+"AA"),
			"OtherList":      "after=" + url.QueryEscape(other),
			"TamperedBefore": "before=" + url.QueryEscape(tamper(c, len(c)/3)),
		} {
			field := strings.SplitN(q, "=", 2)[0]
			t.Run(name+strings.ReplaceAll(list, "/", "_"), func(t *testing.T) {
				wantError(t, e.get(list+"?"+q), http.StatusBadRequest, billing.CodeValidationFailed, field)
			})
		}
		r := e.get(list + "?after=" + url.QueryEscape(c) + "&before=" + url.QueryEscape(c))
		if errs := wantErrorAnyField(t, r); len(errs) == 0 {
			t.Errorf("%s with both cursors: %d", list, r.status)
		}
	}
}

// wantErrorAnyField checks a 400 validation_failed answer without fixing
// which field it names.
func wantErrorAnyField(tb testing.TB, r response) []wireError {
	tb.Helper()
	checkAnswer(tb, "", r)
	if r.status != http.StatusBadRequest {
		tb.Errorf("status %d, want 400: %s", r.status, r.body)
		return nil
	}
	return decode[errorBody](tb, r).Errors
}

// tamper flips the lowest bit of the character at i of a base64url string
// (at the end of a string that bit may be padding, which a strict decoder
// must refuse as well).
func tamper(s string, i int) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	b := []byte(s)
	b[i] = alphabet[strings.IndexByte(alphabet, b[i])^1]
	return string(b)
}

// mutation is a body with one value replaced.
type mutation struct{ path, body string }

// mutations returns raw with each of its values (objects and arrays
// recursively to depth 3; the first element of arrays) replaced by v, one
// at a time.
func mutations(raw []byte, v string, depth int) []mutation {
	var out []mutation
	var obj map[string]json.RawMessage
	var arr []json.RawMessage
	switch {
	case json.Unmarshal(raw, &obj) == nil && obj != nil:
		for _, k := range slices.Sorted(func(yield func(string) bool) {
			for k := range obj {
				if !yield(k) {
					return
				}
			}
		}) {
			old := obj[k]
			replace := func(path string, with []byte) {
				obj[k] = with
				out = append(out, mutation{path, renderObject(obj)})
				obj[k] = old
			}
			replace(k, []byte(v))
			if depth < 3 {
				for _, m := range mutations(old, v, depth+1) {
					replace(joinMutationPath(k, m.path), []byte(m.body))
				}
			}
		}
	case json.Unmarshal(raw, &arr) == nil && len(arr) > 0:
		old := arr[0]
		replace := func(path string, with []byte) {
			arr[0] = with
			parts := make([]string, len(arr))
			for i, a := range arr {
				parts[i] = string(a)
			}
			out = append(out, mutation{path, "[" + strings.Join(parts, ",") + "]"})
			arr[0] = old
		}
		replace("[0]", []byte(v))
		if depth < 3 {
			for _, m := range mutations(old, v, depth+1) {
				replace(joinMutationPath("[0]", m.path), []byte(m.body))
			}
		}
	}
	return out
}

func joinMutationPath(a, b string) string {
	if strings.HasPrefix(b, "[") {
		return a + b
	}
	return a + "." + b
}

// renderObject writes obj as JSON text, values verbatim (so invalid ones
// stay invalid).
func renderObject(obj map[string]json.RawMessage) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range obj {
			if !yield(k) {
				return
			}
		}
	}) {
		if i > 0 {
			b.WriteByte(',')
		}
		q, _ := json.Marshal(k)
		b.Write(q)
		b.WriteByte(':')
		b.Write(obj[k])
	}
	b.WriteByte('}')
	return b.String()
}
