package billing_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
)

// props decodes a JSON object of event properties, as the HTTP layer does.
func props(tb testing.TB, js string) billing.EventProperties {
	tb.Helper()
	var p billing.EventProperties
	if err := json.Unmarshal([]byte(js), &p); err != nil {
		tb.Fatalf("props %s: %v", js, err)
	}
	return p
}

func at(tb testing.TB, s string) *time.Time {
	tb.Helper()
	ts, err := billing.ParseTimestamp(s)
	if err != nil {
		tb.Fatalf("timestamp %q: %v", s, err)
	}
	return &ts
}

// event returns an event of alias and type with properties js (may be "").
func event(tb testing.TB, alias, eventType, js string) billing.UsageEventParams {
	p := billing.UsageEventParams{CustomerAlias: alias, EventType: eventType}
	if js != "" {
		p.EventProperties = props(tb, js)
	}
	return p
}

// eventsAt is one event of alias and eventType, without properties, at
// each of the timestamps.
func eventsAt(tb testing.TB, alias, eventType string, timestamps ...string) []billing.UsageEventParams {
	tb.Helper()
	events := make([]billing.UsageEventParams, len(timestamps))
	for i, ts := range timestamps {
		events[i] = event(tb, alias, eventType, "")
		events[i].EventTimestamp = at(tb, ts)
	}
	return events
}

// withID is an "api" event of alias with the properties js and the
// customerEventId id, which supersedes an earlier event of that id.
func withID(tb testing.TB, id, alias, js string) billing.UsageEventParams {
	p := event(tb, alias, "api", js)
	p.CustomerEventID = id
	return p
}

// sumOfN is a SIMPLE metric summing the property "n" of "api" events.
func sumOfN(tb testing.TB, svc *billing.Service, acct string) *billing.UsageMetric {
	tb.Helper()
	return createMetric(tb, svc, acct, billing.UsageMetricParams{Name: "n", MetricType: billing.MetricTypeSimple,
		EventType: "api", AggregationType: billing.AggregationSum, AggregationProperty: "n"})
}

func ingest(tb testing.TB, svc *billing.Service, acct string, events ...billing.UsageEventParams) []billing.UsageEvent {
	tb.Helper()
	out, err := svc.CreateUsageEventBatch(context.Background(), acct, billing.UsageEventBatchParams{Events: events})
	if err != nil {
		tb.Fatalf("CreateUsageEventBatch: %v", err)
	}
	return out.Items
}

func listAll(tb testing.TB, svc *billing.Service, acct string, f billing.UsageEventFilter) []billing.UsageEvent {
	tb.Helper()
	page, err := svc.ListUsageEvents(context.Background(), acct, f, billing.ListParams{Limit: 100})
	if err != nil {
		tb.Fatalf("ListUsageEvents: %v", err)
	}
	return page.Items
}

func fieldsOf(err error) []string {
	var out []string
	for _, e := range billing.Errors(err) {
		out = append(out, e.Field)
	}
	slices.Sort(out)
	return out
}

func TestPropertyValueJSON(t *testing.T) {
	t.Parallel()
	p := props(t, `{"a": 1e3, "b": "x", "c": true, "d": 1.50, "e": -0.001, "f": 123456789012345678901234567890}`)
	got, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"a":1000,"b":"x","c":true,"d":1.50,"e":-0.001,"f":123456789012345678901234567890}`; string(got) != want {
		t.Errorf("marshal = %s, want %s", got, want)
	}
	for _, bad := range []string{`{"a": {"b": 1}}`, `{"a": [1]}`, `{"a": null}`} {
		var p billing.EventProperties
		if err := json.Unmarshal([]byte(bad), &p); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
}

func TestCreateUsageEventRoundTrip(t *testing.T) {
	t.Parallel()
	stores(t, func(t *testing.T, svc *billing.Service, _ *billingtest.Clock) {
		acct := billingtest.Account(t, svc, "a")
		ctx := context.Background()
		p := event(t, "cust-1", "api_call", `{"region":"EU","n":42,"price":"2.50","amount":0.10,"big":-123456789012345678901234567890.5,"ok":false}`)
		p.EventTimestamp = at(t, "2024-07-01T10:00:00.9+02:00")
		e, err := svc.CreateUsageEvent(ctx, acct, p)
		if err != nil {
			t.Fatal(err)
		}
		if e.CustomerEventID != e.ID || e.ServiceAccountID != acct || billing.FormatTimestamp(e.EventTimestamp) != "2024-07-01T08:00:00Z" {
			t.Errorf("event = %+v", e)
		}
		got := listAll(t, svc, acct, billing.UsageEventFilter{})
		if len(got) != 1 {
			t.Fatalf("listed %d events, want 1", len(got))
		}
		want, _ := json.Marshal(e)
		have, _ := json.Marshal(got[0])
		if string(want) != string(have) {
			t.Errorf("stored event\n got %s\nwant %s", have, want)
		}
	})
}

func TestCreateUsageEventDefaultsAndLimits(t *testing.T) {
	t.Parallel()
	svc, clock := billingtest.NewService(t)
	acct := billingtest.Account(t, svc, "a")
	ctx := context.Background()
	e, err := svc.CreateUsageEvent(ctx, acct, event(t, "c", "t", ""))
	if err != nil {
		t.Fatal(err)
	}
	if !e.EventTimestamp.Equal(clock.Now()) {
		t.Errorf("timestamp = %v, want now", e.EventTimestamp)
	}
	if b, _ := json.Marshal(e); !strings.Contains(string(b), `"eventProperties":{}`) {
		t.Errorf("no properties render as {}: %s", b)
	}
	late := event(t, "c", "t", "")
	late.EventTimestamp = at(t, "2001-01-01T00:00:00Z")
	if _, err := svc.CreateUsageEvent(ctx, acct, late); err != nil {
		t.Errorf("late event: %v", err)
	}
	soon := event(t, "c", "t", "")
	soon.EventTimestamp = at(t, "2024-07-31T12:00:00Z") // exactly 24h ahead
	if _, err := svc.CreateUsageEvent(ctx, acct, soon); err != nil {
		t.Errorf("event 24h ahead: %v", err)
	}
	many := map[string]any{}
	for i := range 51 {
		many[fmt.Sprintf("k%d", i)] = "v"
	}
	manyJSON, _ := json.Marshal(many)
	tests := []struct {
		name   string
		p      billing.UsageEventParams
		fields []string
	}{
		{"ErrMissing", billing.UsageEventParams{}, []string{"customerAlias", "eventType"}},
		{"ErrFuture", func() billing.UsageEventParams {
			p := event(t, "c", "t", "")
			p.EventTimestamp = at(t, "2024-07-31T12:00:01Z")
			return p
		}(), []string{"eventTimestamp"}},
		{"ErrComma", event(t, "a,b", "t", ""), []string{"customerAlias"}},
		{"ErrLongKeys", billing.UsageEventParams{CustomerAlias: strings.Repeat("a", 256), EventType: "t", CustomerEventID: "x\n"},
			[]string{"customerAlias", "customerEventId"}},
		{"ErrTooManyProperties", event(t, "c", "t", string(manyJSON)), []string{"eventProperties"}},
		{"ErrPropertyKeyAndValue", event(t, "c", "t", `{"`+strings.Repeat("k", 129)+`":1,"s":"`+strings.Repeat("é", 1025)+`"}`),
			[]string{"eventProperties." + strings.Repeat("k", 129), "eventProperties.s"}},
		{"ErrInvalidValue", billing.UsageEventParams{CustomerAlias: "c", EventType: "t",
			EventProperties: billing.EventProperties{"x": {}}}, []string{"eventProperties.x"}},
	}
	for _, tc := range tests {
		_, err := svc.CreateUsageEvent(ctx, acct, tc.p)
		if got := fieldsOf(err); !slices.Equal(got, tc.fields) || billing.CodeOf(err) != billing.CodeValidationFailed {
			t.Errorf("%s: fields %q (%v), want %q", tc.name, got, err, tc.fields)
		}
	}
}

func TestCreateUsageEventBatchAllOrNothing(t *testing.T) {
	t.Parallel()
	stores(t, func(t *testing.T, svc *billing.Service, _ *billingtest.Clock) {
		acct := billingtest.Account(t, svc, "a")
		ctx := context.Background()
		future := event(t, "c", "t", "")
		future.EventTimestamp = at(t, "2024-08-30T00:00:00Z")
		bad := []billing.UsageEventParams{
			event(t, "c", "t", `{"n":1}`),
			{CustomerAlias: "c"},
			{CustomerAlias: "c", EventType: "t", EventProperties: billing.EventProperties{"x": {}}},
			future,
		}
		_, err := svc.CreateUsageEventBatch(ctx, acct, billing.UsageEventBatchParams{Events: bad})
		want := []string{"events[1].eventType", "events[2].eventProperties.x", "events[3].eventTimestamp"}
		if got := fieldsOf(err); !slices.Equal(got, want) {
			t.Errorf("fields %q, want %q", got, want)
		}
		if got := listAll(t, svc, acct, billing.UsageEventFilter{}); len(got) != 0 {
			t.Errorf("a bad batch stored %d events", len(got))
		}
		for _, n := range []int{0, billing.MaxUsageEventBatch + 1} {
			events := slices.Repeat([]billing.UsageEventParams{event(t, "c", "t", "")}, n)
			_, err := svc.CreateUsageEventBatch(ctx, acct, billing.UsageEventBatchParams{Events: events})
			if got := fieldsOf(err); !slices.Equal(got, []string{"events"}) {
				t.Errorf("%d events: fields %q", n, got)
			}
		}
		items := ingest(t, svc, acct, slices.Repeat([]billing.UsageEventParams{event(t, "c", "t", "")}, 1000)...)
		if len(items) != 1000 || items[0].ID >= items[999].ID {
			t.Errorf("batch of 1000 returned %d items out of order", len(items))
		}
	})
}

// TestBatchChecksEveryEvent: a batch validates the strings its events
// repeat once (the alias, the event type, property names found valid in an
// earlier event), but never carries an invalid one over, and checks what
// differs in every event. Its records are encoded from each event's
// properties read in name order (looked up by the names of the event before
// when it has the same), or, past eight of them, from the map: all read
// back as sent.
func TestBatchChecksEveryEvent(t *testing.T) {
	t.Parallel()
	stores(t, func(t *testing.T, svc *billing.Service, _ *billingtest.Clock) {
		acct := billingtest.Account(t, svc, "a")
		ctx := context.Background()
		long := strings.Repeat("n", 129)
		bad := []billing.UsageEventParams{
			event(t, "c", "t", `{"region":"x","requests":1}`),
			event(t, "c,d", "t", `{"region":"x"}`),
			event(t, "c,d", "t", `{"region":"x"}`), // the same invalid alias again
			event(t, "c", "t\u0001", `{"region":"x"}`),
			event(t, "c", "t", `{"region":"`+strings.Repeat("v", 1025)+`","requests":1}`), // a known name, a bad value
			event(t, "c", "t", `{"region":"x","`+long+`":1}`),
			event(t, "c", "t", `{"region":"x","requests":1}`),
		}
		_, err := svc.CreateUsageEventBatch(ctx, acct, billing.UsageEventBatchParams{Events: bad})
		want := []string{"events[1].customerAlias", "events[2].customerAlias", "events[3].eventType",
			"events[4].eventProperties.region", "events[5].eventProperties." + long}
		if got := fieldsOf(err); !slices.Equal(got, want) {
			t.Errorf("fields %q, want %q", got, want)
		}
		many := `{"a":1,"b":"x","c":true,"d":2.50,"e":3,"f":4,"g":5,"h":6,"i":"last"}`
		sent := []billing.UsageEventParams{
			event(t, "c", "t", `{"region":"x","requests":1}`),
			event(t, "c", "t", `{"requests":2,"region":"y"}`), // the names before: looked up
			event(t, "c", "t", `{"region":"x","zone":"z"}`),   // the first found, not the second
			event(t, "c", "t", `{"requests":2,"region":"y","zone":"z"}`),
			event(t, "c", "t", ""),
			event(t, "c", "t", many),
			event(t, "c", "t", `{"regions":"x","request":1.25}`),
			event(t, "c", "t", `{"regions":"y","request":2.5}`),
		}
		items := ingest(t, svc, acct, sent...)
		byID := map[string]billing.UsageEvent{}
		for _, e := range listAll(t, svc, acct, billing.UsageEventFilter{}) {
			byID[e.ID] = e
		}
		for i, e := range items {
			got, _ := json.Marshal(byID[e.ID].EventProperties)
			want, _ := json.Marshal(sent[i].EventProperties)
			if string(got) != string(want) {
				t.Errorf("event %d stored %s, sent %s", i, got, want)
			}
		}
	})
}

func TestListUsageEvents(t *testing.T) {
	t.Parallel()
	svc, _ := billingtest.NewService(t)
	acct := billingtest.Account(t, svc, "a")
	other := billingtest.Account(t, svc, "b")
	ctx := context.Background()
	mk := func(alias, typ, ts string) billing.UsageEventParams { return eventsAt(t, alias, typ, ts)[0] }
	ingest(t, svc, acct,
		mk("c1", "api", "2024-07-01T00:00:00Z"), mk("c2", "api", "2024-07-02T00:00:00Z"),
		mk("c1", "storage", "2024-07-03T00:00:00Z"), mk("c1", "api", "2024-07-04T00:00:00Z"))
	ingest(t, svc, other, mk("c1", "api", "2024-07-01T00:00:00Z"))
	count := func(f billing.UsageEventFilter) int { return len(listAll(t, svc, acct, f)) }
	checks := []struct {
		name string
		f    billing.UsageEventFilter
		want int
	}{
		{"All", billing.UsageEventFilter{}, 4},
		{"Alias", billing.UsageEventFilter{CustomerAlias: "c1"}, 3},
		{"AliasAndType", billing.UsageEventFilter{CustomerAlias: "c1", EventType: "api"}, 2},
		{"After", billing.UsageEventFilter{EventTimestampAfter: at(t, "2024-07-02T00:00:00Z")}, 3},
		{"Before", billing.UsageEventFilter{EventTimestampBefore: at(t, "2024-07-02T00:00:00Z")}, 1},
	}
	for _, c := range checks {
		if got := count(c.f); got != c.want {
			t.Errorf("%s: %d events, want %d", c.name, got, c.want)
		}
	}
	page, err := svc.ListUsageEvents(ctx, acct, billing.UsageEventFilter{}, billing.ListParams{Limit: 3})
	if err != nil || len(page.Items) != 3 || page.TotalResultSize != 4 || page.After == "" {
		t.Fatalf("first page: %+v, %v", page, err)
	}
	if page.Items[0].EventTimestamp.Day() != 4 {
		t.Errorf("not newest first: %v", page.Items[0].EventTimestamp)
	}
	next, err := svc.ListUsageEvents(ctx, acct, billing.UsageEventFilter{}, billing.ListParams{Limit: 3, After: page.After})
	if err != nil || len(next.Items) != 1 || next.Items[0].CustomerAlias != "c1" || next.Before == "" {
		t.Errorf("second page: %+v, %v", next, err)
	}
	if none := listAll(t, svc, billingtest.Account(t, svc, "c"), billing.UsageEventFilter{}); len(none) != 0 {
		t.Errorf("a new account lists %d events", len(none))
	}
}

func TestUsageEventSupersede(t *testing.T) {
	t.Parallel()
	stores(t, func(t *testing.T, svc *billing.Service, _ *billingtest.Clock) {
		acct := billingtest.Account(t, svc, "a")
		other := billingtest.Account(t, svc, "b")
		ctx := context.Background()
		m := sumOfN(t, svc, acct)
		// Replaced by a later request; the replacement moves to another alias.
		first := ingest(t, svc, acct, withID(t, "x", "c1", `{"n":10}`))[0]
		second := ingest(t, svc, acct, withID(t, "x", "c2", `{"n":5}`))[0]
		if first.ID == second.ID || second.CustomerEventID != "x" {
			t.Errorf("replacement = %+v", second)
		}
		// Within one batch the last wins; an event without a
		// customerEventId is replaced by one naming its id.
		plain := ingest(t, svc, acct, event(t, "c1", "api", `{"n":100}`))[0]
		ingest(t, svc, acct, withID(t, "y", "c1", `{"n":1}`), withID(t, "y", "c1", `{"n":2}`), withID(t, plain.ID, "c1", `{"n":3}`))
		// Same customerEventId in another account: separate.
		ingest(t, svc, other, withID(t, "x", "c2", `{"n":1000}`))
		checkCalc(t, svc, acct, m, []string{"c1"}, "2024-07-01", "2024-07-31", 2, 0, "5")
		checkCalc(t, svc, acct, m, []string{"c2"}, "2024-07-01", "2024-07-31", 1, 0, "5")
		if got := listAll(t, svc, acct, billing.UsageEventFilter{}); len(got) != 3 {
			t.Errorf("listed %d events, want 3", len(got))
		}

		billingtest.AtOnce(t, 50, func(i int) error {
			_, err := svc.CreateUsageEvent(ctx, acct, withID(t, "dup", "c3", fmt.Sprintf(`{"n":%d}`, i)))
			return err
		})
		calc := checkCalc(t, svc, acct, m, []string{"c3"}, "2024-07-01", "2024-07-31", 1, 0, "")
		if len(listAll(t, svc, acct, billing.UsageEventFilter{CustomerAlias: "c3"})) != 1 {
			t.Errorf("concurrent duplicates stored more than once (value %s)", calc.Value)
		}
	})
}
