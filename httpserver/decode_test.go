package httpserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/billingd/billing"
	"github.com/google/go-cmp/cmp"
)

type testAddress struct {
	Line1    string `json:"line1"`
	Postcode string `json:"postcode"`
}

type testEvent struct {
	EventType  string         `json:"eventType"`
	Properties map[string]any `json:"eventProperties"`
}

type testBase struct {
	Name   string `json:"name"`
	Shadow string `json:"shadow"`
}

type testBody struct {
	testBase
	Shadow   int                 `json:"shadow"` // hides testBase.Shadow
	Count    int32               `json:"count"`
	Size     uint8               `json:"size"`
	Ratio    float64             `json:"ratio"`
	Enabled  bool                `json:"enabled"`
	Amount   billing.Decimal     `json:"amount"`
	Optional *billing.Decimal    `json:"optional"`
	Currency billing.Currency    `json:"currency"`
	Date     billing.Date        `json:"date"`
	At       *time.Time          `json:"at"`
	Address  testAddress         `json:"customerBillingAddress"`
	Events   []testEvent         `json:"events"`
	Tags     map[string][]string `json:"tags"`
	Pair     [2]string           `json:"pair"`
	Raw      json.RawMessage     `json:"raw"`
	Any      any                 `json:"any"`
	Ignored  string              `json:"-"`
	Untagged string
	hidden   string
}

// Long on purpose: a table of cases, one line each; its length is the cases, not logic.
func TestDecodeJSON(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		body   string
		fields map[string]string // field → message (prefix)
	}{
		{"Valid", `{"name":"n","shadow":3,"count":-7,"size":255,"ratio":1.5e2,"enabled":true,"amount":"12.50",
			"optional":null,"currency":"EUR","date":"2024-07-30","at":"2024-07-30T12:00:00+02:00",
			"customerBillingAddress":{"line1":"x","postcode":"y"},"events":[{"eventType":"a","eventProperties":{"n":1.10,"s":"x","b":false}}],
			"tags":{"k":["v"]},"pair":["a","b"],"raw":{"any":[1,{"x":null}]},"any":[1,"2"],"Untagged":"u"}`, nil},
		{"Nulls", `{"name":null,"count":null,"amount":"1","customerBillingAddress":null,"events":null,"tags":{"k":null},"at":null,"currency":"USD","date":"2024-01-01"}`, nil},
		{"NestedPaths", `{"customerBillingAddress":{"postcode":12,"town":"x"},
			"events":[{"eventType":"ok"},{"eventType":["x"]},{"eventType":"ok","bogus":1}],"tags":{"region":"eu","b":[1]}}`,
			map[string]string{
				"customerBillingAddress.postcode": "customerBillingAddress.postcode must be a string, not a number",
				"customerBillingAddress.town":     "customerBillingAddress.town is not a known field",
				"events[1].eventType":             "events[1].eventType must be a string, not an array",
				"events[2].bogus":                 "events[2].bogus is not a known field",
				"tags.region":                     "tags.region must be an array, not a string",
				"tags.b[0]":                       "tags.b[0] must be a string, not a number",
			}},
		{"Integers", `{"count":1.5,"size":256,"shadow":"3"}`, map[string]string{
			"count":  "count must be an integer",
			"size":   "size is out of range",
			"shadow": "shadow must be an integer, not a string",
		}},
		{"IntegersNoExponentOrNegativeUnsigned", `{"count":1e3,"size":-1}`, map[string]string{
			"count": "count must be an integer",
			"size":  "size must not be negative",
		}},
		{"IntegerOverflow", `{"count":2147483648}`, map[string]string{"count": "count is out of range"}},
		{"Bools", `{"enabled":"true"}`, map[string]string{"enabled": "enabled must be true or false, not a string"}},
		{"Floats", `{"ratio":"1.5"}`, map[string]string{"ratio": "ratio must be a number, not a string"}},
		{"Unmarshalers", `{"amount":1.5,"optional":"1e3","currency":"XXX","date":"30/07/2024","at":"noon"}`, map[string]string{
			"amount":   `amount must be a decimal string such as "12.50", not a number`,
			"optional": `optional must be a decimal string`,
			"currency": "currency ",
			"date":     "date ",
			"at":       `at must be an RFC 3339 timestamp`,
		}},
		{"DecimalDigitLimits", `{"amount":"123456789012345678901","optional":"0.1234567890123"}`, map[string]string{
			"amount":   "amount has more than 20 digits before the decimal point",
			"optional": "optional has more than 12 digits after the decimal point",
		}},
		{"DecimalNull", `{"amount":null}`, map[string]string{"amount": "amount must be a decimal string"}},
		{"ArrayLength", `{"pair":["a","b","c"]}`, map[string]string{"pair": "pair must have at most 2 elements"}},
		{"Ignored", `{"Ignored":"x","hidden":"y","-":1}`, map[string]string{
			"Ignored": "Ignored is not a known field",
			"hidden":  "hidden is not a known field",
			"-":       "- is not a known field",
		}},
		{"EmbeddedIsPromotedNotNamed", `{"testBase":{"name":"x"}}`, map[string]string{"testBase": "testBase is not a known field"}},
		{"CaseSensitive", `{"NAME":"x","untagged":"y"}`, map[string]string{
			"NAME":     "NAME is not a known field",
			"untagged": "untagged is not a known field",
		}},
		{"DuplicateNames", `{"name":1,"name":"ok","tags":{"a":["x"],"a":["y"]}}`, map[string]string{
			"name":   "name is given more than once",
			"tags.a": "tags.a is given more than once",
		}},
		{"KeysWithPercent", `{"tags":{"%s%d":"x"}}`, map[string]string{"tags.%s%d": "tags.%s%d must be an array, not a string"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var dst testBody
			err := decodeJSON([]byte(tc.body), &dst)
			if tc.fields == nil {
				if err != nil {
					t.Fatalf("decodeJSON: %v", err)
				}
				return
			}
			var verrs billing.ValidationErrors
			if !errors.As(err, &verrs) {
				t.Fatalf("err = %v, want ValidationErrors", err)
			}
			got := map[string]string{}
			for _, e := range verrs {
				if e.Code != billing.CodeValidationFailed {
					t.Errorf("%s: code %s", e.Field, e.Code)
				}
				got[e.Field] = e.Message
			}
			if len(got) != len(tc.fields) {
				t.Errorf("fields %v, want %v", keys(got), keys(tc.fields))
			}
			for f, want := range tc.fields {
				if !strings.HasPrefix(got[f], want) {
					t.Errorf("%s: message %q, want prefix %q", f, got[f], want)
				}
			}
		})
	}
}

func keys(m map[string]string) []string {
	return slices.Sorted(func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	})
}

func TestDecodeJSONValues(t *testing.T) {
	t.Parallel()
	var got testBody
	err := decodeJSON([]byte(`{"name":"n","shadow":3,"amount":"007.50","events":[{"eventType":"a","eventProperties":{"n":1.10,"big":123456789012345678901234567890}}],"any":2}`), &got)
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != "n" || got.Shadow != 3 || got.testBase.Shadow != "" || got.Amount.String() != "7.50" {
		t.Errorf("got %+v", got)
	}
	props := got.Events[0].Properties
	if diff := cmp.Diff(map[string]any{"n": json.Number("1.10"), "big": json.Number("123456789012345678901234567890")}, props); diff != "" {
		t.Errorf("numbers in any are not kept exactly (-want +got):\n%s", diff)
	}
	if got.Any != json.Number("2") {
		t.Errorf("any = %#v", got.Any)
	}
}

func TestDecodeJSONErrorCap(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("{")
	for i := range 1000 {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"f%d":1`, i)
	}
	b.WriteString("}")
	var dst testBody
	var verrs billing.ValidationErrors
	if err := decodeJSON([]byte(b.String()), &dst); !errors.As(err, &verrs) || len(verrs) != maxDecodeErrors {
		t.Errorf("got %d errors (%v), want %d", len(verrs), err != nil, maxDecodeErrors)
	}
}

func TestStructFieldsFollowEncodingJSON(t *testing.T) {
	t.Parallel()
	type inner struct {
		A string `json:"a"`
		C string // same depth as other.C, both untagged: cancels
		X string `json:"X"`
		B string
	}
	type other struct {
		C string
		X string // hidden by the tagged inner.X
	}
	type outer struct {
		inner
		other
		B int // hides inner.B
	}
	got := structFields(reflect.TypeFor[outer]())
	want := map[string]reflect.Type{"a": reflect.TypeFor[string](), "X": reflect.TypeFor[string](), "B": reflect.TypeFor[int]()}
	if !maps.Equal(got, want) {
		t.Errorf("fields %v, want %v", got, want)
	}
	// encoding/json agrees.
	var o outer
	err := json.Unmarshal([]byte(`{"a":"a","C":"c","X":"x","B":3}`), &o)
	if err != nil || o.A != "a" || o.inner.C != "" || o.other.C != "" || o.inner.X != "x" || o.other.X != "" || o.B != 3 {
		t.Errorf("encoding/json: %+v %v", o, err)
	}
}

// TestDecodeOptional: the decoder tells an absent field from a null one and
// from a value, and checks the value inside billing.Optional[T] as a T, so
// every error inside it is reported with its full path.
func TestDecodeOptional(t *testing.T) {
	t.Parallel()
	var p billing.PatchSentInvoiceParams
	if err := decodeJSON([]byte(`{"memo":null,"dueDate":"2024-09-01","customerBillingAddress":{"line1":"1","town":"t","postcode":"p","country":"GB"}}`), &p); err != nil {
		t.Fatal(err)
	}
	switch {
	case p.PurchaseOrderNumber.Set:
		t.Error("an absent field is Set")
	case !p.Memo.Set || !p.Memo.Null:
		t.Errorf("memo:null = %+v, want Set and Null", p.Memo)
	case !p.DueDate.Set || p.DueDate.Null || p.DueDate.Value.String() != "2024-09-01":
		t.Errorf("dueDate = %+v", p.DueDate)
	case p.CustomerBillingAddress.Value.Town != "t":
		t.Errorf("address = %+v", p.CustomerBillingAddress)
	}

	err := decodeJSON([]byte(`{"customerBillingAddress":{"line1":1,"town":"t","zip":"z"},"dueDate":"2024-02-30","memo":["m"]}`), &p)
	var got []string
	for _, e := range billing.Errors(err) {
		if e.Code != billing.CodeValidationFailed {
			t.Errorf("code %s: %v", e.Code, e)
		}
		got = append(got, e.Field)
	}
	want := []string{"customerBillingAddress.line1", "customerBillingAddress.zip", "dueDate", "memo"}
	if len(got) != len(want) {
		t.Fatalf("fields = %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("fields = %q, want %q", got, want)
		}
	}
}
