package render

import (
	"strings"
	"time"

	"github.com/billingd/billing"
)

// currencySymbols are the currencies printed with a symbol; every other
// currency is printed with its ISO code ("CHF 12.00"), which no reader can
// mistake for another.
var currencySymbols = map[billing.Currency]string{
	billing.CurrencyGBP: "£", billing.CurrencyEUR: "€", billing.CurrencyUSD: "$", billing.CurrencyJPY: "¥",
}

// money formats an amount exactly as stored (its digits are the currency's
// minor units, set when it was computed) with the currency's symbol or code
// and thousands separators: "£1,234.50", "¥1,001", "-€3.00", "CHF 12.00".
func money(cur billing.Currency, d billing.Decimal) string {
	neg, digits := splitSign(d.String())
	sign := ""
	if neg {
		sign = "-"
	}
	if sym, ok := currencySymbols[cur]; ok {
		return sign + sym + group(digits)
	}
	return sign + string(cur) + " " + group(digits)
}

// Money formats an amount as documents print it (see money): the console
// shows amounts with it, so that they read as on the PDF.
func Money(cur billing.Currency, d billing.Decimal) string { return money(cur, d) }

// Number formats a quantity as documents print it: as stored, with
// thousands separators ("1,234,567.5"); the console's charts label their
// axes with it.
func Number(d billing.Decimal) string { return number(d) }

// price formats a unit price: money with every stored digit, or a
// percentage when the line displays its rate as one.
func price(cur billing.Currency, d billing.Decimal, display billing.RateDisplay) string {
	if display == billing.RateDisplayPercentage {
		return percent(d)
	}
	return money(cur, d)
}

// number formats a quantity as stored, with thousands separators.
func number(d billing.Decimal) string {
	neg, digits := splitSign(d.String())
	if neg {
		return "-" + group(digits)
	}
	return group(digits)
}

// percent formats a fraction as a percentage by moving the decimal point,
// so nothing is rounded: "0.2" → "20%", "0.175" → "17.5%", "0.00001" →
// "0.001%".
func percent(d billing.Decimal) string {
	neg, s := splitSign(d.String())
	intPart, frac, _ := strings.Cut(s, ".")
	frac += "00"
	intPart, frac = strings.TrimLeft(intPart+frac[:2], "0"), strings.TrimRight(frac[2:], "0")
	if intPart == "" {
		intPart = "0"
	}
	out := intPart
	if frac != "" {
		out += "." + frac
	}
	if neg && out != "0" {
		out = "-" + out
	}
	return out + "%"
}

// splitSign separates the sign of a decimal string.
func splitSign(s string) (neg bool, digits string) {
	if strings.HasPrefix(s, "-") {
		return true, s[1:]
	}
	return false, s
}

// group inserts thousands separators into the integer part of an unsigned
// decimal string.
func group(s string) string {
	intPart, frac, hasFrac := strings.Cut(s, ".")
	if len(intPart) > 3 {
		var b strings.Builder
		lead := len(intPart) % 3
		if lead > 0 {
			b.WriteString(intPart[:lead])
		}
		for i := lead; i < len(intPart); i += 3 {
			if b.Len() > 0 {
				b.WriteByte(',')
			}
			b.WriteString(intPart[i : i+3])
		}
		intPart = b.String()
	}
	if hasFrac {
		return intPart + "." + frac
	}
	return intPart
}

// date formats a calendar date as "24 Nov 2026"; "" for no date.
func date(d billing.Date) string {
	if d.IsZero() {
		return ""
	}
	return d.Time().Format("2 Jan 2006")
}

// dateRange formats an inclusive range of dates.
func dateRange(start, end billing.Date) string {
	if start.IsZero() && end.IsZero() {
		return ""
	}
	if start == end {
		return date(start)
	}
	return date(start) + " – " + date(end)
}

// timeRange formats a period of timestamps as the days of cal (the
// customer's calendar) it covers: an end at the midnight that begins a day
// is exclusive (the credit note period copied from an invoice ends at the
// midnight after its last day).
func timeRange(cal billing.Calendar, start, end *time.Time) string {
	if start == nil || end == nil {
		return ""
	}
	return dateRange(cal.Days(*start, *end))
}

// addressLines are the printed lines of an address; none for an empty one.
func addressLines(a *billing.Address) []string {
	if a == nil || *a == (billing.Address{}) {
		return nil
	}
	var out []string
	for _, l := range []string{a.Line1, a.Line2, strings.TrimSpace(a.Town + " " + a.Postcode), a.State, a.Country} {
		if l != "" {
			out = append(out, l)
		}
	}
	return out
}
