package billing

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
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
