package billing

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
	// The zone database is embedded so that zones load, and every host
	// computes the same instants, where the host has no database of its own.
	_ "time/tzdata"
)

// TimestampLayout is the output form of every timestamp: UTC, second
// precision.
const TimestampLayout = "2006-01-02T15:04:05Z"

// The bounds of every date and timestamp the Service accepts, on the wire
// and in the library: a date from 0001-01-01 made one billing run create
// 24,311 invoices. MinDate and MaxDate are inclusive.
var (
	MinDate = Date{Year: 2000, Month: time.January, Day: 1}
	MaxDate = Date{Year: 2199, Month: time.December, Day: 31}
)

// boundsMessage completes "<field> " for a date or timestamp out of bounds.
const boundsMessage = "must be between 2000-01-01 and 2199-12-31"

// TimeInBounds reports whether t (in any zone) lies between MinDate
// 00:00:00Z and MaxDate 23:59:59Z.
func TimeInBounds(t time.Time) bool {
	return !t.Before(minTime) && t.Before(endTime)
}

// minTime and endTime are the instants of TimeInBounds, computed once: it
// runs twice for every ingested event.
var minTime, endTime = MinDate.Time(), MaxDate.AddDays(1).Time()

// InBounds reports whether d lies between MinDate and MaxDate.
func (d Date) InBounds() bool { return !d.Before(MinDate) && !d.After(MaxDate) }

// checkDate records an error on field when d is set and out of bounds.
func checkDate(v *validator, field string, d *Date) {
	if d != nil && !d.IsZero() && !d.InBounds() {
		v.add(field, "%s %s", lastName(field), boundsMessage)
	}
}

// checkTime records an error on field when t is out of bounds.
func checkTime(v *validator, field string, t time.Time) {
	if !TimeInBounds(t) {
		v.add(field, "%s %s", lastName(field), boundsMessage)
	}
}

// lastName is the last member name of a JSON path ("phases[1].startDate"
// → "startDate"), for messages that start with the field's name.
func lastName(path string) string {
	if i := strings.LastIndexByte(path, '.'); i >= 0 {
		return path[i+1:]
	}
	return path
}

// ParseTimestamp parses an RFC 3339 timestamp with any offset and an optional
// fraction, and returns it in UTC truncated to the second, as every stored
// timestamp is. Returns validation_failed (without a field: the caller
// knows it) for a malformed timestamp or one outside MinDate..MaxDate.
func ParseTimestamp(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, Errorf(CodeValidationFailed, "must be an RFC 3339 timestamp such as \"2024-07-30T12:00:00Z\"")
	}
	if !TimeInBounds(t) {
		return time.Time{}, Errorf(CodeValidationFailed, boundsMessage)
	}
	return NormalizeTime(t), nil
}

// NormalizeTime returns t in UTC, truncated to the second.
func NormalizeTime(t time.Time) time.Time {
	if t.Nanosecond() == 0 {
		return t.UTC() // the usual timestamp: Truncate's division saved
	}
	return t.UTC().Truncate(time.Second)
}

// FormatTimestamp formats t in the output form of timestamps.
func FormatTimestamp(t time.Time) string {
	return t.UTC().Format(TimestampLayout)
}

// Date is a calendar date in UTC, written YYYY-MM-DD. The zero Date is
// "no date". Period boundaries are UTC midnights.
type Date struct {
	// Year is the year, 2000 to 2199 where the Service accepts dates.
	Year int
	// Month is the month, January to December.
	Month time.Month
	// Day is the day of the month, from 1.
	Day int
}

// ParseDate parses a YYYY-MM-DD date.
func ParseDate(s string) (Date, error) {
	t, err := time.Parse(time.DateOnly, s)
	if err != nil || len(s) != len(time.DateOnly) {
		return Date{}, Errorf(CodeValidationFailed, "must be a date such as \"2024-07-30\"")
	}
	if d := DateOf(t); !d.InBounds() {
		return Date{}, Errorf(CodeValidationFailed, boundsMessage)
	}
	return DateOf(t), nil
}

// DateOf returns the UTC calendar date of t.
func DateOf(t time.Time) Date {
	y, m, d := t.UTC().Date()
	return Date{Year: y, Month: m, Day: d}
}

// IsZero reports whether d is the zero Date.
func (d Date) IsZero() bool { return d == Date{} }

// Time returns midnight UTC at the start of d.
func (d Date) Time() time.Time {
	return time.Date(d.Year, d.Month, d.Day, 0, 0, 0, 0, time.UTC)
}

// AddDays returns the date n days after d (before, for negative n).
func (d Date) AddDays(n int) Date { return DateOf(d.Time().AddDate(0, 0, n)) }

// Before reports whether d is before o.
func (d Date) Before(o Date) bool { return d.Time().Before(o.Time()) }

// After reports whether d is after o.
func (d Date) After(o Date) bool { return d.Time().After(o.Time()) }

// String returns YYYY-MM-DD, or "" for the zero Date.
func (d Date) String() string {
	if d.IsZero() {
		return ""
	}
	return fmt.Sprintf("%04d-%02d-%02d", d.Year, int(d.Month), d.Day)
}

// MarshalJSON writes the date as a "YYYY-MM-DD" string.
func (d Date) MarshalJSON() ([]byte, error) {
	return json.Marshal(d.String())
}

// UnmarshalJSON reads a "YYYY-MM-DD" string.
func (d *Date) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return Errorf(CodeValidationFailed, "must be a date string such as \"2024-07-30\"")
	}
	v, err := ParseDate(s)
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// DefaultTimeZone is the zone of an account that never set one.
const DefaultTimeZone = "UTC"

// LoadTimeZone returns the IANA time zone named name ("Europe/London",
// "UTC"). The zone database is embedded in the binary (time/tzdata), so
// this works on hosts without one. Returns validation_failed (without a
// field: the caller knows it) for an unknown name.
func LoadTimeZone(name string) (*time.Location, error) {
	// time.LoadLocation accepts "" and "Local" (the host's zone), which are
	// not IANA names a caller can mean, and file paths never are zones.
	if name == "" || name == "Local" || strings.ContainsAny(name, "\\") || strings.Contains(name, "..") || len(name) > 64 {
		return nil, Errorf(CodeValidationFailed, "must be an IANA time zone name such as \"Europe/London\"")
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, Errorf(CodeValidationFailed, "must be an IANA time zone name such as \"Europe/London\"; %q is not one", name)
	}
	return loc, nil
}

// checkTimeZone records an error on field when name is set and not an IANA
// time zone.
func checkTimeZone(v *validator, field, name string) {
	if name == "" {
		return
	}
	if _, err := LoadTimeZone(name); err != nil {
		v.add(field, "%s %s", lastName(field), err.(*Error).Message)
	}
}

// zoneChange is one entry of a zone history: from Since on, Zone is in
// force. Zone "" on a customer means "the account's zone". The first entry
// of a history has a zero Since: it is in force from the beginning of time.
type zoneChange struct {
	Zone  string    `json:"zone"`
	Since time.Time `json:"since"`
}

// zoneSpan is a zone in force over [since, the next span's since).
type zoneSpan struct {
	loc   *time.Location
	since time.Time
}

// Calendar maps the calendar dates of one customer (or of an account) to
// instants and back; the zero Calendar is UTC's. It is the one rule for every <date> that bounds a
// period: day d begins at the first instant at which the zone in force
// shows date d or later. With one zone that is the zone's midnight of d
// (the first instant of d when DST skips or repeats midnight). When the
// zone changes at instant T, days that began before T keep their instants
// and days that begin after T begin at the new zone's midnight; a day
// never begins twice and no instant belongs to two days, so every event
// falls in exactly one period of every period sequence.
type Calendar struct {
	spans []zoneSpan // ordered by since; spans[0].since is zero
}

// utcCalendar is the calendar of an account that never set a zone.
var utcCalendar = Calendar{spans: []zoneSpan{{loc: time.UTC}}}

// calendarOf builds the calendar of a customer from the account's zone
// history and the customer's (nil for the account's own calendar): at any
// instant the customer's zone is in force when it has one, else the
// account's.
func calendarOf(account, customer []zoneChange) Calendar {
	if len(account) == 0 {
		account = []zoneChange{{Zone: DefaultTimeZone}}
	}
	var cuts []time.Time
	for _, h := range [][]zoneChange{account, customer} {
		for _, z := range h {
			cuts = append(cuts, z.Since)
		}
	}
	slices.SortFunc(cuts, time.Time.Compare)
	cuts = slices.CompactFunc(cuts, time.Time.Equal)
	var c Calendar
	for _, at := range cuts {
		name := zoneAt(account, at)
		if n := zoneAt(customer, at); n != "" {
			name = n
		}
		loc, err := LoadTimeZone(name)
		if err != nil {
			loc = time.UTC // unreachable: zones are validated before they are stored
		}
		if len(c.spans) > 0 && c.spans[len(c.spans)-1].loc.String() == loc.String() {
			continue
		}
		c.spans = append(c.spans, zoneSpan{loc: loc, since: at})
	}
	c.spans[0].since = time.Time{}
	return c
}

// zoneAt returns the zone of history h in force at t ("" if none).
func zoneAt(h []zoneChange, t time.Time) string {
	name := ""
	for _, z := range h {
		if !z.Since.After(t) {
			name = z.Zone
		}
	}
	return name
}

// Location returns the zone in force now (the last one).
func (c Calendar) Location() *time.Location {
	if len(c.spans) == 0 {
		return time.UTC
	}
	return c.spans[len(c.spans)-1].loc
}

// end returns the end of span i (zero for the last: open).
func (c Calendar) end(i int) time.Time {
	if i+1 < len(c.spans) {
		return c.spans[i+1].since
	}
	return time.Time{}
}

// Start returns the instant at which day d begins: the earliest instant at
// which the zone in force shows d or a later date.
func (c Calendar) Start(d Date) time.Time {
	if len(c.spans) == 0 {
		c = utcCalendar
	}
	var best time.Time
	for i, sp := range c.spans {
		t := midnight(d, sp.loc)
		if t.Before(sp.since) {
			t = sp.since
		}
		if end := c.end(i); !end.IsZero() && !t.Before(end) {
			continue // d does not begin while this zone is in force
		}
		if best.IsZero() || t.Before(best) {
			best = t
		}
	}
	return best
}

// DateOf returns the date of instant t: the latest day that began at or
// before t.
func (c Calendar) DateOf(t time.Time) Date {
	if len(c.spans) == 0 {
		c = utcCalendar
	}
	var best Date
	for i, sp := range c.spans {
		if t.Before(sp.since) {
			break
		}
		at := t
		if end := c.end(i); !end.IsZero() && !at.Before(end) {
			at = end.Add(-time.Nanosecond)
		}
		if d := localDate(at, sp.loc); best.IsZero() || d.After(best) {
			best = d
		}
	}
	return best
}

// Days returns the days a period of instants [start, end) covers: the
// date of start, and the date of end, or the day before when end is the
// instant a day begins (a period that ends at a midnight does not cover
// the day that midnight begins). Documents print periods given as
// timestamps with it, and e-invoices write them.
func (c Calendar) Days(start, end time.Time) (first, last Date) {
	last = c.DateOf(end)
	if c.Start(last).Equal(end) && end.After(start) {
		last = last.AddDays(-1)
	}
	return c.DateOf(start), last
}

// Period returns the instants [Start(first), Start(endExclusive)) of the
// days first up to endExclusive (exclusive), as a usage period.
func (c Calendar) Period(first, endExclusive Date) UsagePeriod {
	return UsagePeriod{Start: c.Start(first), End: c.Start(endExclusive),
		StartText: first.String(), EndText: endExclusive.AddDays(-1).String()}
}

// midnight returns the first instant of day d in loc: its midnight, or
// where DST skips midnight the instant the day begins, or where DST repeats
// it the first of the two.
func midnight(d Date, loc *time.Location) time.Time {
	t := time.Date(d.Year, d.Month, d.Day, 0, 0, 0, 0, loc)
	if wallDate(t, loc).Before(d) { // landed before a skipped midnight
		_, end := t.ZoneBounds()
		return end
	}
	// Where the clocks went back shortly before t, the same wall midnight
	// may have happened first under the previous offset.
	if start, _ := t.ZoneBounds(); !start.IsZero() && start.After(t.Add(-3*time.Hour)) {
		_, prev := start.Add(-time.Second).Zone()
		earlier := time.Date(d.Year, d.Month, d.Day, 0, 0, 0, 0, time.UTC).Add(-time.Duration(prev) * time.Second)
		if earlier.Before(start) && wallDate(earlier, loc) == d {
			return earlier
		}
	}
	return t
}

// wallDate is the date on a wall clock in loc at t.
func wallDate(t time.Time, loc *time.Location) Date {
	y, m, d := t.In(loc).Date()
	return Date{Year: y, Month: m, Day: d}
}

// localDate is the date in loc of t, in the sense of midnight: the latest
// day whose first instant is at or before t.
func localDate(t time.Time, loc *time.Location) Date {
	d := wallDate(t, loc)
	if midnight(d, loc).After(t) {
		return d.AddDays(-1)
	}
	return d
}
