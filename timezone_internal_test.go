package billing

import (
	"testing"
	"time"
)

func ts(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

// TestCalendarMidnights checks the first instant of a day in zones where DST
// moves an hour away from midnight, skips midnight or repeats it.
func TestCalendarMidnights(t *testing.T) {
	cases := []struct{ zone, date, start string }{
		{"UTC", "2026-03-01", "2026-03-01T00:00:00Z"},
		{"Pacific/Kiritimati", "2026-02-01", "2026-01-31T10:00:00Z"},
		{"Etc/GMT+12", "2026-02-01", "2026-02-01T12:00:00Z"},
		{"America/Los_Angeles", "2026-03-08", "2026-03-08T08:00:00Z"}, // the day DST starts (23 hours)
		{"America/Los_Angeles", "2026-03-09", "2026-03-09T07:00:00Z"},
		{"America/Los_Angeles", "2026-11-01", "2026-11-01T07:00:00Z"}, // the day DST ends (25 hours)
		{"America/Los_Angeles", "2026-11-02", "2026-11-02T08:00:00Z"},
		{"Europe/London", "2026-03-29", "2026-03-29T00:00:00Z"},
		{"Europe/London", "2026-03-30", "2026-03-29T23:00:00Z"},
		{"America/Havana", "2024-03-10", "2024-03-10T05:00:00Z"}, // 00:00 is skipped: the day begins at 01:00 CDT
		{"America/Havana", "2024-11-03", "2024-11-03T04:00:00Z"}, // 00:00 happens twice: the first
		{"America/Havana", "2024-11-04", "2024-11-04T05:00:00Z"},
	}
	for _, c := range cases {
		loc, err := LoadTimeZone(c.zone)
		if err != nil {
			t.Fatal(err)
		}
		cal := calendarOf([]zoneChange{{Zone: c.zone}}, nil)
		got := cal.Start(mustDate(c.date))
		if want := ts(c.start); !got.Equal(want) {
			t.Errorf("%s %s begins at %s, want %s", c.zone, c.date, got.UTC().Format(time.RFC3339), c.start)
		}
		if d := cal.DateOf(got); d != mustDate(c.date) {
			t.Errorf("%s: the date of %s is %s, want %s", c.zone, c.start, d, c.date)
		}
		if d := cal.DateOf(got.Add(-time.Second)); d != mustDate(c.date).AddDays(-1) {
			t.Errorf("%s: the date one second before %s is %s", c.zone, c.start, d)
		}
		if m := midnight(mustDate(c.date), loc); !m.Equal(got) {
			t.Errorf("%s %s: midnight %s differs from the calendar's start", c.zone, c.date, m)
		}
	}
}

// TestCalendarZoneChange checks that a zone change moves only the days that
// had not begun: every day begins once, in order, and the days that began
// before the change keep their instants.
func TestCalendarZoneChange(t *testing.T) {
	cases := []struct {
		from, to string
		at       string
	}{
		{"UTC", "America/Los_Angeles", "2026-01-15T12:00:00Z"},
		{"Etc/GMT+12", "Pacific/Kiritimati", "2026-01-31T20:00:00Z"}, // 26 hours east: days are skipped to zero length
		{"Pacific/Kiritimati", "Etc/GMT+12", "2026-01-31T20:00:00Z"}, // 26 hours west: one day lasts 50 hours
		{"Europe/London", "Asia/Tokyo", "2026-03-29T00:30:00Z"},
	}
	for _, c := range cases {
		before := calendarOf([]zoneChange{{Zone: c.from}}, nil)
		after := calendarOf([]zoneChange{{Zone: c.from}, {Zone: c.to, Since: ts(c.at)}}, nil)
		prev := time.Time{}
		for d := mustDate("2026-01-01"); d.Before(mustDate("2026-05-01")); d = d.AddDays(1) {
			got := after.Start(d)
			if got.Before(prev) {
				t.Fatalf("%s→%s: %s begins at %s, before the day before it (%s)", c.from, c.to, d, got, prev)
			}
			prev = got
			if b := before.Start(d); b.Before(ts(c.at)) && !got.Equal(b) {
				t.Errorf("%s→%s: %s had begun at %s before the change, now begins at %s", c.from, c.to, d, b, got)
			}
			if !got.Before(ts(c.at)) {
				if loc, _ := LoadTimeZone(c.to); got.After(ts(c.at)) && !got.Equal(midnight(d, loc)) {
					t.Errorf("%s→%s: %s begins at %s, not at the new zone's midnight", c.from, c.to, d, got)
				}
			}
			if dd := after.DateOf(got); after.Start(dd) != got && dd != d {
				t.Errorf("%s→%s: DateOf(Start(%s)) = %s", c.from, c.to, d, dd)
			}
		}
	}
	// A customer's own zone wins over the account's, from when it is set.
	cal := calendarOf([]zoneChange{{Zone: "UTC"}, {Zone: "Asia/Tokyo", Since: ts("2026-03-01T00:00:00Z")}},
		[]zoneChange{{Zone: ""}, {Zone: "America/New_York", Since: ts("2026-02-01T00:00:00Z")}, {Zone: "", Since: ts("2026-04-01T00:00:00Z")}})
	for _, c := range []struct{ date, start string }{
		{"2026-01-20", "2026-01-20T00:00:00Z"},
		{"2026-02-20", "2026-02-20T05:00:00Z"},
		{"2026-03-20", "2026-03-20T04:00:00Z"},
		{"2026-04-20", "2026-04-19T15:00:00Z"},
	} {
		if got := cal.Start(mustDate(c.date)); !got.Equal(ts(c.start)) {
			t.Errorf("%s begins at %s, want %s", c.date, got.UTC(), c.start)
		}
	}
}
