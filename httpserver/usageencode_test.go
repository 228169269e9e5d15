package httpserver

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/billingd/billing"
)

// encodingEvents are events whose answers exercise the append encoding:
// all kinds of property values, names that the event before had and
// then one of them another, strings encoding/json escapes, timestamps it
// writes in other forms.
func encodingEvents(t *testing.T) []billing.UsageEvent {
	t.Helper()
	num := func(s string) billing.PropertyValue {
		d, err := billing.ParseDecimalNumber(s)
		if err != nil {
			t.Fatal(err)
		}
		return billing.NumberProperty(d)
	}
	at := time.Date(2026, 11, 22, 8, 30, 1, 0, time.UTC)
	events := []billing.UsageEvent{
		{ID: "0b7e4a3c-9f1d-4c55-8a52-0d1e2f3a4b5c", ServiceAccountID: "acct", CustomerEventID: "0b7e4a3c-9f1d-4c55-8a52-0d1e2f3a4b5c",
			CustomerAlias: "customer-1", EventType: "api_call", EventTimestamp: at,
			EventProperties: billing.EventProperties{"region": billing.StringProperty("region-001"), "requests": num("42"), "amount": num("12.30"),
				"big": num("1e3"), "neg": num("-0.000"), "huge": num("123456789012345678901234567890"), "t": billing.BoolProperty(true), "f": billing.BoolProperty(false)}},
		// The names of the event before (looked up, not sorted again),
		// then as many names with one of them another.
		{ID: "same names", EventProperties: billing.EventProperties{"region": billing.StringProperty("region-002"), "requests": num("43"), "amount": num("0.5"),
			"big": num("2"), "neg": num("-1"), "huge": num("7"), "t": billing.BoolProperty(false), "f": billing.BoolProperty(true)}},
		{ID: "one name another", EventProperties: billing.EventProperties{"regions": billing.StringProperty("region-002"), "requests": num("43"), "amount": num("0.5"),
			"big": num("2"), "neg": num("-1"), "huge": num("7"), "t": billing.BoolProperty(false), "f": billing.BoolProperty(true)}},
		{ID: "x", CustomerAlias: `<script>&"quotes"\ and ` + "\u2028\u2029\x7f\x01\n\t", EventType: "Zürich 東京", EventTimestamp: at.Add(500 * time.Millisecond),
			EventProperties: billing.EventProperties{"ключ": billing.StringProperty("bad \xff utf-8"), "": billing.StringProperty(""), "<k>": billing.PropertyValue{}}},
		{ID: "no properties", EventTimestamp: time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC)},
		{ID: "empty properties", EventProperties: billing.EventProperties{}, EventTimestamp: at.In(time.FixedZone("x", 3600))},
	}
	return events
}

// TestUsageEventEncodingMatchesEncodingJSON checks the append encoding of
// ingestion answers byte for byte against encoding/json.
func TestUsageEventEncodingMatchesEncodingJSON(t *testing.T) {
	events := encodingEvents(t)
	check := func(name string, got json.Marshaler, want any) {
		t.Helper()
		g, err := json.Marshal(got)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		w, err := json.Marshal(want)
		if err != nil {
			t.Fatal(err)
		}
		if string(g) != string(w) {
			t.Errorf("%s:\n got %s\nwant %s", name, g, w)
		}
		a, err := got.(interface{ AppendJSON([]byte) ([]byte, error) }).AppendJSON([]byte("prefix"))
		if err != nil || string(a) != "prefix"+string(w) {
			t.Errorf("%s: AppendJSON gives %s, %v", name, a, err)
		}
	}
	for i := range events {
		check(events[i].ID, usageEventJSON{&events[i]}, &events[i])
	}
	check("batch", usageEventsJSON{Items: events}, billing.Items[billing.UsageEvent]{Items: events})
	check("empty batch", usageEventsJSON{Items: []billing.UsageEvent{}}, billing.Items[billing.UsageEvent]{Items: []billing.UsageEvent{}})
	check("nil batch", usageEventsJSON{}, billing.Items[billing.UsageEvent]{})
	// Encoded ahead, while the batch commits: the same bytes.
	check("batch encoded ahead", encodeAhead(usageEventsJSON{Items: events}, new(batchScratch)), billing.Items[billing.UsageEvent]{Items: events})
	// Into the buffer of an earlier, longer answer: the same bytes.
	used := &batchScratch{answer: []byte(strings.Repeat(`{"items":[]}`, 1000))}
	check("batch encoded ahead into a used buffer", encodeAhead(usageEventsJSON{Items: events}, used), billing.Items[billing.UsageEvent]{Items: events})

	// A timestamp encoding/json cannot write fails the same way.
	bad := billing.UsageEvent{EventTimestamp: time.Date(-1, 12, 31, 0, 0, 0, 0, time.UTC)}
	_, gerr := json.Marshal(usageEventJSON{&bad})
	_, werr := json.Marshal(&bad)
	if gerr == nil || werr == nil || !strings.Contains(gerr.Error(), "year outside of range") {
		t.Errorf("year -1: got %v, encoding/json %v", gerr, werr)
	}
	if _, err := json.Marshal(encodeAhead(usageEventJSON{&bad}, new(batchScratch))); err == nil || !strings.Contains(err.Error(), "year outside of range") {
		t.Errorf("year -1 encoded ahead: %v, want %v", err, gerr)
	}
}
