package httpserver

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/google/go-cmp/cmp"

	"github.com/billingd/billing"
)

// usageParamsEqual compares decoded params exactly: times by their whole
// value (location included), property values by kind, canonical value and
// the text they are echoed with.
var usageParamsEqual = cmp.Options{
	cmp.Comparer(func(a, b time.Time) bool { return a == b }),
	cmp.Comparer(func(a, b billing.PropertyValue) bool {
		ja, erra := a.MarshalJSON()
		jb, errb := b.MarshalJSON()
		return a.Kind() == b.Kind() && a.String() == b.String() && string(ja) == string(jb) && (erra == nil) == (errb == nil)
	}),
}

// checkFast is the property of the fast path: for any body it declines, or
// the strict decoder accepts the body too and decodes the same params. It
// reports whether the fast path accepted.
func checkFast[P any](t *testing.T, body []byte, fast func([]byte, *P) bool) bool {
	t.Helper()
	var got P
	if !fast(body, &got) {
		return false
	}
	var want P
	if err := decodeJSON(body, &want); err != nil {
		t.Fatalf("the fast path accepted %q, which the strict decoder refuses: %v", body, err)
	}
	if diff := cmp.Diff(want, got, usageParamsEqual); diff != "" {
		t.Fatalf("fast path and strict decoder differ on %q (-strict +fast):\n%s", body, diff)
	}
	return true
}

// referenceEvent is the event of the benchmarks (an alias, an event type,
// a timestamp and three properties).
func referenceEvent(i int) string {
	return fmt.Sprintf(`{"customerAlias":"customer-0000000001","eventType":"api_call__","eventTimestamp":"2026-11-%02dT%02d:%02d:%02dZ","eventProperties":{"region":"region-%03d","requests":%d,"amount":%d.%02d}}`,
		1+i%28, i%24, i%60, i%59, i%1000, i%97, i%50, i%100)
}

// referenceBatch is a POST /usage-events/batch body of n reference events.
func referenceBatch(n int) []byte {
	events := make([]string, n)
	for i := range events {
		events[i] = referenceEvent(i)
	}
	return []byte(`{"events":[` + strings.Join(events, ",") + `]}`)
}

// usageAccepted are bodies the fast path must take (a fast path that
// declines everything is correct and useless).
var usageAccepted = []string{
	referenceEvent(7),
	usageEventBody("a", "b"),
	`{}`,
	` {"customerAlias" : "c1" ,` + "\n\t\r" + `"eventType":"t"}  `,
	`{"customerAlias":"c1","eventType":"t","eventProperties":{}}`,
	`{"customerAlias":"Zürich 東京","eventType":"t","eventProperties":{"ключ":"значение","":"empty name"}}`,
	`{"customerAlias":"c1","eventType":"t","eventTimestamp":"2024-07-01T12:00:00.5+02:00"}`,
	`{"customerAlias":"c1","eventType":"t","eventTimestamp":"2024-02-29T23:59:59Z"}`,
	`{"customerAlias":"c1","eventType":"t","eventTimestamp":"2000-01-01T00:00:00Z"}`,
	`{"customerAlias":"c1","eventType":"t","eventTimestamp":"2199-12-31T23:59:59Z"}`,
	`{"customerAlias":"c1","eventType":"t","eventTimestamp":"2030-01-01T00:00:00Z"}`,
	`{"customerAlias":"","eventType":"","customerEventId":""}`,
	`{"eventProperties":{"n":1.50,"big":1e3,"e":-2.5E-3,"p":1e+2,"z":0,"m":-0,"f":0.000,"t":true,"x":false}}`,
	`{"eventProperties":{"n":123456789012345678901234567890}}`,
	`{"eventProperties":{"s":"<&>'"}}`,
}

// usageDeclined are bodies the fast path must leave to the strict decoder
// (it refuses most of them, with its own messages and field paths).
var usageDeclined = []string{
	``, ` `, `[]`, `null`, `{`, `{}x`, `{} {}`, `{"customerAlias":"c1",}`, `{,}`,
	`{"customerAlias":"c\u0031"}`, `{"customerAlias":"c\n"}`, "{\"customerAlias\":\"c\x01\"}",
	"{\"customerAlias\":\"\xff\"}", `{"customerAlias":null}`, `{"customerAlias":1}`,
	`{"customerAlias":"a","customerAlias":"b"}`, `{"CustomerAlias":"a"}`, `{"id":"a"}`,
	`{"eventTimestamp":"2024-02-30T00:00:00Z"}`, `{"eventTimestamp":"2024-07-01T24:00:00Z"}`,
	`{"eventTimestamp":"2024-07-01"}`, `{"eventTimestamp":null}`, `{"eventTimestamp":1}`,
	`{"eventTimestamp":"2024-07-01t12:00:00z"}`,
	`{"eventTimestamp":"0000-01-01T00:00:00Z"}`, `{"eventTimestamp":"1999-12-31T23:59:59Z"}`,
	`{"eventTimestamp":"2200-01-01T00:00:00Z"}`, `{"eventTimestamp":"2000-01-01T00:30:00+01:00"}`,
	`{"eventProperties":null}`, `{"eventProperties":[]}`, `{"eventProperties":{"a":null}}`,
	`{"eventProperties":{"a":{}}}`, `{"eventProperties":{"a":[1]}}`, `{"eventProperties":{"a":1,"a":2}}`,
	`{"eventProperties":{"a":01}}`, `{"eventProperties":{"a":1.}}`, `{"eventProperties":{"a":.5}}`,
	`{"eventProperties":{"a":+1}}`, `{"eventProperties":{"a":1e}}`, `{"eventProperties":{"a":1e400}}`,
	`{"eventProperties":{"a":truex}}`, `{"eventProperties":{"a":tru}}`, `{"eventProperties":{"a":NaN}}`,
	`{"eventProperties":{"a\"b":1}}`, `{"eventProperties":{"a":1}`, "\ufeff{}", "{}\x00",
	`{"customerAliasX":"a"}`, `{"eventType2":"t"}`, `{"customerAlia":"a"}`, `{"customerAlias":"a`,
	`{"eventProperties":{"region":"x","region":"y"}}`,
}

func TestFastUsageEventAgreesWithStrictDecoder(t *testing.T) {
	for _, b := range usageAccepted {
		if !checkFast(t, []byte(b), fastUsageEvent) {
			t.Errorf("the fast path declined %q", b)
		}
	}
	for _, b := range usageDeclined {
		if checkFast(t, []byte(b), fastUsageEvent) {
			t.Errorf("the fast path accepted %q", b)
		}
	}
}

func TestFastUsageEventBatchAgreesWithStrictDecoder(t *testing.T) {
	accepted := []string{
		string(referenceBatch(billing.MaxUsageEventBatch)),
		`{"events":[` + strings.Join(usageAccepted, " ,\n ") + `]}`,
		`{"events":[]}`, `{}`, ` { "events" : [ {} ] } `,
		// Strings that repeat, then do not: other names at the same place,
		// names and values one longer or shorter, another order.
		`{"events":[{"customerAlias":"c1","eventType":"t","eventProperties":{"region":"x","requests":1}},` +
			`{"customerAlias":"c10","eventType":"t2","eventProperties":{"regions":"y","request":2}},` +
			`{"customerAlias":"c","eventType":"t","eventProperties":{"requests":1,"region":"x","a":true}},` +
			`{"eventType":"t","customerAlias":"c1","eventProperties":{"region":"x"}},` +
			`{"customerAlias":"c1","eventType":"","eventProperties":{"":"empty","region":"r"}}]}`,
		// Timestamps in the minute of the one before, and not.
		`{"events":[{"eventTimestamp":"2026-11-01T10:00:59Z"},{"eventTimestamp":"2026-11-01T10:00:05Z"},` +
			`{"eventTimestamp":"2026-11-01T10:01:00Z"},{"eventTimestamp":"2026-11-01T11:01:00Z"},` +
			`{"eventTimestamp":"2026-11-01T11:01:00.5Z"},{"eventTimestamp":"2026-11-01T11:01:09Z"}]}`,
	}
	for _, b := range accepted {
		if !checkFast(t, []byte(b), fastUsageEventBatch) {
			t.Errorf("the fast path declined %.200q", b)
		}
	}
	declined := []string{`{"events":null}`, `{"events":{}}`, `{"events":[],"events":[]}`, `{"events":[{}],"x":1}`,
		`{"events":[{},]}`, `{"events":[{}]`, `{"events":[{}]}]`, `{"Events":[]}`, `{"events":[1]}`, `{"events":[null]}`}
	for _, e := range usageDeclined {
		declined = append(declined, `{"events":[{},`+e+`]}`)
	}
	for _, ts := range []string{"60", "6a", "/0", "0:", "5"} {
		declined = append(declined, `{"events":[{"eventTimestamp":"2026-11-01T10:00:01Z"},{"eventTimestamp":"2026-11-01T10:00:`+ts+`Z"}]}`)
	}
	for _, b := range declined {
		if checkFast(t, []byte(b), fastUsageEventBatch) {
			t.Errorf("the fast path accepted %q", b)
		}
	}
}

// TestFastUsageBatchSharesStrings checks that repeated aliases, event types
// and property names are decoded once per batch.
func TestFastUsageBatchSharesStrings(t *testing.T) {
	var p billing.UsageEventBatchParams
	if !fastUsageEventBatch([]byte(`{"events":[`+referenceEvent(1)+`,`+referenceEvent(2)+`]}`), &p) {
		t.Fatal("declined")
	}
	a, b := p.Events[0], p.Events[1]
	if unsafe.StringData(a.CustomerAlias) != unsafe.StringData(b.CustomerAlias) || unsafe.StringData(a.EventType) != unsafe.StringData(b.EventType) {
		t.Errorf("aliases or event types not shared")
	}
	var an, bn []string
	for k := range a.EventProperties {
		an = append(an, k)
	}
	for k := range b.EventProperties {
		bn = append(bn, k)
	}
	slices.Sort(an)
	slices.Sort(bn)
	for i := range an {
		if unsafe.StringData(an[i]) != unsafe.StringData(bn[i]) {
			t.Errorf("property name %q not shared", an[i])
		}
	}
}

func FuzzFastUsageEvent(f *testing.F) {
	for _, b := range append(append([]string{}, usageAccepted...), usageDeclined...) {
		f.Add([]byte(b))
	}
	addSeeds(f, usageEventBody("a", "b"))
	f.Fuzz(func(t *testing.T, body []byte) { checkFast(t, body, fastUsageEvent) })
}

func FuzzFastUsageEventBatch(f *testing.F) {
	f.Add([]byte(`{"events":[` + strings.Join(usageAccepted, ",") + `]}`))
	for _, b := range usageDeclined {
		f.Add([]byte(`{"events":[` + referenceEvent(3) + `,` + b + `]}`))
	}
	addSeeds(f, `{"events":[`+usageEventBody("a", "b")+`,`+referenceEvent(5)+`]}`)
	f.Fuzz(func(t *testing.T, body []byte) {
		checkFast(t, body, fastUsageEventBatch)
		checkFast(t, body, decodeIntoUsedScratch)
	})
}

// decodeIntoUsedScratch is fastUsageEventBatch into a batchScratch that an
// earlier batch used (other names, more events, more properties, all
// timestamps taken), as the next request of a connection finds it.
func decodeIntoUsedScratch(body []byte, p *billing.UsageEventBatchParams) bool {
	sc := new(batchScratch)
	var earlier billing.UsageEventBatchParams
	events := []string{`{"eventProperties":{"a":1,"b":"x","c":true,"d":2,"e":3,"f":4,"g":5,"h":6,"i":7}}`}
	for i := range billing.MaxUsageEventBatch {
		events = append(events, referenceEvent(i))
	}
	if !sc.decode([]byte(`{"events":[`+strings.Join(events, ",")+`]}`), &earlier) {
		panic("the earlier batch was declined")
	}
	// Not released: a released scratch may be taken by another request.
	return sc.decode(body, p)
}

// TestBatchScratchReused checks a batch decoded into the memory of an
// earlier one: it decodes what the strict decoder does (no property, event
// or timestamp of the earlier batch shows through), and nothing it decoded
// aliases the body, whose buffer the server does not keep.
func TestBatchScratchReused(t *testing.T) {
	for _, b := range []string{`{"events":[` + strings.Join(usageAccepted, ",") + `]}`, `{"events":[{}]}`, `{"events":[]}`,
		`{"events":[{"eventProperties":{}},{"eventProperties":{"region":"x"}}]}`} {
		if !checkFast(t, []byte(b), decodeIntoUsedScratch) {
			t.Errorf("declined %.100q", b)
		}
	}
	sc := new(batchScratch)
	body := []byte(`{"events":[` + referenceEvent(1) + `,` + referenceEvent(2) + `,{"customerEventId":"id-1","eventProperties":{"name":"value"}}]}`)
	var p, want billing.UsageEventBatchParams
	if !sc.decode(body, &p) || decodeJSON(body, &want) != nil {
		t.Fatal("declined")
	}
	for i := range body {
		body[i] = 'x' // the next request's bytes in the same buffer
	}
	if diff := cmp.Diff(want, p, usageParamsEqual); diff != "" {
		t.Errorf("the decoded batch changed with the body's buffer (-want +got):\n%s", diff)
	}
	// The interned names outlive the batch: they are not the body's bytes.
	for name := range sc.names {
		if name == strings.Repeat("x", len(name)) {
			t.Errorf("interned property name %q aliases the body", name)
		}
	}
}
