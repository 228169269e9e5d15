package appendjson

import (
	"encoding/json"
	"testing"
	"time"
)

// TestMatchesEncodingJSON: every helper writes what encoding/json writes.
func TestMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "plain-id_01", "quote\"back\\slash", "<a&b>", "tab\tnl\n", "é", "\u2028", "\xff", "\x7f"} {
		want, _ := json.Marshal(s)
		if got := String(nil, s); string(got) != string(want) {
			t.Errorf("String(%q) = %s, want %s", s, got, want)
		}
	}
	for _, ss := range [][]string{nil, {}, {"a"}, {"a", "<b>"}} {
		want, _ := json.Marshal(ss)
		if got := Strings(nil, ss); string(got) != string(want) {
			t.Errorf("Strings(%q) = %s, want %s", ss, got, want)
		}
	}
	if got := Field([]byte("{"), `"a":`, ""); string(got) != "{" {
		t.Errorf("Field with empty value = %s, want it left out", got)
	}
	if got := Field([]byte("{"), `"a":`, "x"); string(got) != `{"a":"x"` {
		t.Errorf("Field = %s", got)
	}
	if got := Member([]byte("{"), `"a":`, ""); string(got) != `{"a":""` {
		t.Errorf("Member with empty value = %s, want it present", got)
	}
	for _, tm := range []time.Time{time.Date(2024, 3, 1, 12, 0, 0, 5, time.UTC), time.Date(2024, 3, 1, 0, 0, 0, 0, time.FixedZone("x", 3600))} {
		want, _ := json.Marshal(tm)
		got, err := Time(nil, tm)
		if err != nil || string(got) != string(want) {
			t.Errorf("Time(%v) = %s, %v; want %s", tm, got, err, want)
		}
	}
	if _, err := Time(nil, time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)); err == nil {
		t.Error("Time accepted the year 10000, which encoding/json refuses")
	}
}
