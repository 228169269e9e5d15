package httpserver

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/billingd/billing"
)

// FuzzDecodeCreateUsageMetric checks that the strict decoder never panics
// and answers only success, invalid_json or validation_failed errors that
// name their field; a success must be what encoding/json decodes too
// (checkDecode); and each message starts with the field it names.
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
		for _, e := range checkDecode[billing.CreateUsageMetricParams](t, body) {
			if !strings.HasPrefix(e.Message, e.Field+" ") {
				t.Fatalf("bad validation error %+v for %q", e, body)
			}
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

// checkDecode is the property every request decoder keeps (see
// FuzzDecodeCreateUsageMetric): no panic; success only for what
// encoding/json decodes too; otherwise invalid_json, or validation_failed
// errors that each name their field, never more than maxDecodeErrors.
// It returns the validation errors, for checks of one decoder.
func checkDecode[P any](t *testing.T, body []byte) billing.ValidationErrors {
	t.Helper()
	var p P
	err := decodeJSON(body, &p)
	if err == nil {
		var want P
		if json.Unmarshal(body, &want) != nil {
			t.Fatalf("decodeJSON accepted what encoding/json refuses: %q", body)
		}
		return nil
	}
	var verrs billing.ValidationErrors
	if errors.As(err, &verrs) {
		if len(verrs) == 0 || len(verrs) > maxDecodeErrors {
			t.Fatalf("%d validation errors", len(verrs))
		}
		for _, e := range verrs {
			if e.Code != billing.CodeValidationFailed || e.Field == "" {
				t.Fatalf("bad validation error %+v for %q", e, body)
			}
		}
		return verrs
	}
	if billing.CodeOf(err) != CodeInvalidJSON {
		t.Fatalf("decodeJSON(%q) = %v (code %s)", body, err, billing.CodeOf(err))
	}
	if json.Valid(body) && utf8.Valid(body) && strings.HasPrefix(strings.TrimLeft(string(body), " \t\r\n"), "{") {
		t.Fatalf("invalid_json for a valid JSON object: %q", body)
	}
	return nil
}

// addSeeds adds the hostile suite's bodies and values as seeds, with valid.
func addSeeds(f *testing.F, valid string) {
	f.Add([]byte(valid))
	for _, b := range hostileBodies[:12] {
		f.Add([]byte(b))
	}
	for _, v := range hostileValues {
		for _, m := range mutations([]byte(valid), v, 1) {
			f.Add([]byte(m.body))
		}
	}
}

func FuzzDecodeCreatePrice(f *testing.F) {
	addSeeds(f, priceBody("n", "USD", "MONTHLY", missingID, missingID))
	f.Add([]byte(`{"structure":{"pricingType":"GRADUATED","tiers":[{"upperBound":"1e3","price":1,"fee":"NaN","isPricePercentage":"no"}]}}`))
	f.Fuzz(func(t *testing.T, body []byte) { checkDecode[billing.CreatePriceParams](t, body) })
}

func FuzzDecodeUsageEventBatch(f *testing.F) {
	addSeeds(f, `{"events":[`+usageEventBody("a", "b")+`]}`)
	f.Add([]byte(`{"events":[{"eventProperties":{"n":1e400,"m":-0.0000,"x":{"y":1}}}]}`))
	f.Fuzz(func(t *testing.T, body []byte) { checkDecode[billing.UsageEventBatchParams](t, body) })
}

func FuzzDecodeCustomer(f *testing.F) {
	addSeeds(f, `{"legalName":"Acme","customerAliases":["acme"],"contacts":[{"name":"x","billingPreference":"EMAIL"}]}`)
	f.Fuzz(func(t *testing.T, body []byte) { checkDecode[billing.CustomerParams](t, body) })
}

func FuzzDecodeMerchantDetails(f *testing.F) {
	addSeeds(f, merchantBody)
	f.Fuzz(func(t *testing.T, body []byte) { checkDecode[billing.MerchantDetails](t, body) })
}

// FuzzListCursor sends any string as the after and before cursors of a
// list: the answer is the list (a cursor this server issued) or 400
// validation_failed naming the parameter, never anything else.
func FuzzListCursor(f *testing.F) {
	e := newEnv(f, &Config{RateLimit: -1})
	for _, name := range []string{"a", "b", "c"} {
		e.createMetric(name)
	}
	cursor := decode[page](f, e.get("/usage-metrics?limit=1")).Pagination.After
	f.Add(cursor, true)
	f.Add(cursor, false)
	f.Add(tamper(cursor, len(cursor)-1), true)
	f.Add(cursor[:len(cursor)/2], true)
	f.Add("", true)
	f.Add("%ff", false)
	f.Fuzz(func(t *testing.T, c string, after bool) {
		param := "before"
		if after {
			param = "after"
		}
		et := *e // the F must not be used inside the fuzz function
		et.tb = t
		r := et.do(req{method: "GET", path: "/usage-metrics?limit=1&" + param + "=" + url.QueryEscape(c)})
		checkAnswer(t, param+"="+c, r)
		switch r.status {
		case http.StatusOK:
		case http.StatusBadRequest:
			for _, we := range decode[errorBody](t, r).Errors {
				if we.Field != param {
					t.Fatalf("%s=%q: error on %q: %s", param, c, we.Field, r.body)
				}
			}
		default:
			t.Fatalf("%s=%q: %d %s", param, c, r.status, r.body)
		}
	})
}
