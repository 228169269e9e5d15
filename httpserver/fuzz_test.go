package httpserver

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/billingd/billing"
)

// FuzzDecodeCreateUsageMetric checks that the strict decoder never panics
// and answers only success, invalid_json or validation_failed errors that
// name their field; a success must be what encoding/json decodes too.
func FuzzDecodeCreateUsageMetric(f *testing.F) {
	for _, seed := range []string{
		metricBody("a"),
		`{"name":"n","propertyFilters":{"a":["b"]},"parameters":[{"name":"p","type":"INTEGER","defaultValue":"1"}],"deletedAt":"2024-07-30T12:00:00Z"}`,
		`{"name":1,"parameters":{"x":[]},"caseSensitive":"yes","deletedAt":5}`,
		`{"name":"a","name":"b"}`,
		`[]`, `{}{}`, "{\"name\":\"\xff\"}", `{"propertyFilters":{"a":[[[[]]]]}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var p billing.CreateUsageMetricParams
		err := decodeJSON(body, &p)
		if err == nil {
			var want billing.CreateUsageMetricParams
			if json.Unmarshal(body, &want) != nil {
				t.Fatalf("decodeJSON accepted what encoding/json refuses: %q", body)
			}
			return
		}
		var verrs billing.ValidationErrors
		if errors.As(err, &verrs) {
			if len(verrs) == 0 || len(verrs) > maxDecodeErrors {
				t.Fatalf("%d validation errors", len(verrs))
			}
			for _, e := range verrs {
				if e.Code != billing.CodeValidationFailed || e.Field == "" || !strings.HasPrefix(e.Message, e.Field+" ") {
					t.Fatalf("bad validation error %+v for %q", e, body)
				}
			}
			return
		}
		if billing.CodeOf(err) != billing.CodeInvalidJSON {
			t.Fatalf("decodeJSON(%q) = %v (code %s)", body, err, billing.CodeOf(err))
		}
		if json.Valid(body) && utf8.Valid(body) && strings.HasPrefix(strings.TrimLeft(string(body), " \t\r\n"), "{") {
			t.Fatalf("invalid_json for a valid JSON object: %q", body)
		}
	})
}

// FuzzParseBasicAuthorization checks that any header parses without panic
// and that what parses is a non-empty key id without a colon and a
// non-empty secret that BasicAuthorization writes back the same way.
func FuzzParseBasicAuthorization(f *testing.F) {
	for _, seed := range []string{
		billing.BasicAuthorization("01900000-0000-7000-8000-000000000000", "sk_abc"),
		"Basic ", "Basic Og==", "basic YTpi", "Bearer x", "Basic YTpiOmM=", "Basic  YTpi ", "",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, header string) {
		keyID, secret, ok := billing.ParseBasicAuthorization(header)
		if !ok {
			if keyID != "" || secret != "" {
				t.Fatalf("not ok but returned %q, %q", keyID, secret)
			}
			return
		}
		if keyID == "" || secret == "" || strings.Contains(keyID, ":") {
			t.Fatalf("ParseBasicAuthorization(%q) = %q, %q", header, keyID, secret)
		}
		k, s, ok := billing.ParseBasicAuthorization(billing.BasicAuthorization(keyID, secret))
		if !ok || k != keyID || s != secret {
			t.Fatalf("round trip of %q, %q gave %q, %q, %v", keyID, secret, k, s, ok)
		}
	})
}
