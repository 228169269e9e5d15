package console

import (
	"fmt"
	"html/template"
	"strings"
	"time"

	"github.com/billingd/billing"
	"github.com/billingd/billing/render"
)

// funcs are the template functions every page may use.
var funcs = template.FuncMap{
	"day":          day,
	"moment":       moment,
	"money":        money,
	"badge":        badge,
	"join":         strings.Join,
	"scheduleRows": scheduleRows,
	"currency":     func(code string) billing.Currency { return billing.Currency(code) },
	"lastAttempt": func(a []billing.DeliveryAttempt) *billing.DeliveryAttempt {
		if len(a) == 0 {
			return nil
		}
		return &a[len(a)-1]
	},
}

// day formats a date as design's rendering does: "24 Nov 2026"; "" for
// none. It takes a billing.Date, a time.Time (its UTC date) or a pointer to
// either.
func day(v any) string {
	if d, ok := dateOf(v); ok {
		return d.Format("2 Jan 2006")
	}
	return ""
}

// dateOf is the calendar day of v (see day) as midnight UTC; false for
// none (zero, nil or another type).
func dateOf(v any) (time.Time, bool) {
	switch d := v.(type) {
	case billing.Date:
		return time.Date(d.Year, d.Month, d.Day, 0, 0, 0, 0, time.UTC), !d.IsZero()
	case *billing.Date:
		if d != nil {
			return dateOf(*d)
		}
	case time.Time:
		return d.UTC(), !d.IsZero()
	case *time.Time:
		if d != nil {
			return dateOf(*d)
		}
	}
	return time.Time{}, false
}

// moment formats an instant to the minute, in UTC.
func moment(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2 Jan 2006 15:04 UTC")
}

// money formats an amount exactly as stored, as the PDF prints it: the
// currency's symbol or code, thousands separators, the stored minor units
// ("£1,234.50", "CHF 12.00"); render.Money is the one formatter.
func money(d billing.Decimal, c billing.Currency) string {
	return render.Money(c, d)
}

// badge shows a status as a badge: its words ("PARTIALLY PAID") in a span
// of class "status status-<status in lower case>" ("status-partially-paid"),
// which the stylesheet colours.
func badge(s any) template.HTML {
	v := fmt.Sprint(s)
	class := "status status-" + strings.ToLower(strings.ReplaceAll(v, "_", "-"))
	return template.HTML(`<span class="` + template.HTMLEscapeString(class) + `">` +
		template.HTMLEscapeString(strings.ReplaceAll(v, "_", " ")) + `</span>`)
}
