package billing

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/cockroachdb/apd/v3"
)

// Wire limits of a decimal string (docs/api-guide.md, "Decimals and money").
const (
	maxIntegerDigits  = 20
	maxFractionDigits = 12
)

// Limits of ParseDecimalNumber: a JSON number is only ever compared or
// rendered canonically, so anything beyond decimal128's 34 digits or a
// hundred orders of magnitude is an attack or a mistake, not a quantity.
const (
	maxNumberDigits   = 34
	maxNumberExponent = 100
)

// decimalCtx is the context of the operations that cannot be exact
// (division): 34 significant digits (decimal128), rounded half-up beyond
// them. It is never mutated: Round works on a copy. apd documents a Context
// as safe for concurrent use as long as nobody modifies it.
var decimalCtx = apd.Context{
	Precision:   34,
	MaxExponent: apd.MaxExponent,
	MinExponent: apd.MinExponent,
	Traps:       apd.DefaultTraps,
	Rounding:    apd.RoundHalfUp,
}

// exactCtx is the context of additions, subtractions and products: precision
// 0 disables rounding, so their results are exact whatever the length of
// the operands (a 32-digit quantity times a 32-digit rate has 64 digits),
// and money is rounded only at the named rounding points.
var exactCtx = apd.BaseContext

// Decimal is an immutable decimal number: quantities, rates, tax rates and
// money amounts. The zero value is 0. Every method computes into a fresh
// apd.Decimal and never mutates the receiver, so a Decimal can be copied,
// shared between goroutines and embedded by value in structs. Compare two
// Decimals with Cmp, never with ==: "1.5" and "1.50" are equal values with
// different representations.
type Decimal struct{ d apd.Decimal }

// decimalSyntaxMessage is the message for anything that is not a decimal
// string.
const decimalSyntaxMessage = `must be a decimal string such as "12.50"`

// validationError returns a validation_failed *Error without a Field: the
// callers know the JSON path and fill it in.
func validationError(format string, args ...any) *Error {
	return &Error{Code: CodeValidationFailed, Message: fmt.Sprintf(format, args...)}
}

// ParseDecimal parses a decimal string in the strict wire grammar
// ^-?[0-9]+(\.[0-9]+)?$ with at most 20 integer digits (leading zeros not
// counted) and at most 12 fraction digits. There is no exponent, '+', space,
// NaN or Infinity, so a value has exactly one spelling up to leading zeros and
// the digits a client sends are the digits it gets back. Errors are *Error
// with code validation_failed and an empty Field.
func ParseDecimal(s string) (Decimal, error) {
	neg, intPart, fracPart, ok := splitDecimal(s)
	if !ok {
		return Decimal{}, validationError(decimalSyntaxMessage)
	}
	intPart = strings.TrimLeft(intPart, "0")
	if len(intPart) > maxIntegerDigits {
		return Decimal{}, validationError("has more than %d digits before the decimal point", maxIntegerDigits)
	}
	if len(fracPart) > maxFractionDigits {
		return Decimal{}, validationError("has more than %d digits after the decimal point", maxFractionDigits)
	}
	var d Decimal
	err := fromDigits(&d, neg, intPart, fracPart, -int32(len(fracPart)))
	return d, err
}

// splitDecimal matches s against -?[0-9]+(\.[0-9]+)? (splitNumber without
// an exponent).
func splitDecimal(s string) (neg bool, intPart, fracPart string, ok bool) {
	neg, intPart, fracPart, expPart, ok := splitNumber(s)
	return neg, intPart, fracPart, ok && expPart == ""
}

// splitNumber matches s against -?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)? byte
// by byte, in one pass (ASCII digits only: unicode digits are not numbers
// on the wire), and returns its parts: expPart with its sign, empty when
// there is no exponent.
func splitNumber(s string) (neg bool, intPart, fracPart, expPart string, ok bool) {
	i := 0
	if i < len(s) && s[i] == '-' {
		neg, i = true, 1
	}
	if intPart, i = digitsAt(s, i); intPart == "" {
		return false, "", "", "", false
	}
	if i < len(s) && s[i] == '.' {
		if fracPart, i = digitsAt(s, i+1); fracPart == "" {
			return false, "", "", "", false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		start := i + 1
		if i = start; i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		var digits string
		if digits, i = digitsAt(s, i); digits == "" {
			return false, "", "", "", false
		}
		expPart = s[start:i]
	}
	return neg, intPart, fracPart, expPart, i == len(s)
}

// digitsAt returns the ASCII digits of s from i on (empty when there are
// none) and the index after them.
func digitsAt(s string, i int) (string, int) {
	start := i
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return s[start:i], i
}

// fromDigits sets *r to -?(intPart fracPart) × 10^exp from validated
// strings of ASCII digits (possibly empty or with leading zeros, meaning 0),
// without joining them: a coefficient of at most 18 significant digits
// (most amounts, and the numbers of usage events, thousands per batch) is
// summed in a uint64 without allocating; a longer one is parsed as text. r
// is written in place: a Decimal is 32 bytes, and the numbers of a batch
// were copied through every return on their way into a property.
func fromDigits(r *Decimal, neg bool, intPart, fracPart string, exp int32) error {
	if intPart = strings.TrimLeft(intPart, "0"); intPart == "" {
		fracPart = strings.TrimLeft(fracPart, "0")
	}
	n := len(intPart) + len(fracPart)
	switch {
	case n == 0:
		r.d.Coeff.SetInt64(0)
	case n <= 18:
		var v uint64
		for i := 0; i < len(intPart); i++ {
			v = v*10 + uint64(intPart[i]-'0')
		}
		for i := 0; i < len(fracPart); i++ {
			v = v*10 + uint64(fracPart[i]-'0')
		}
		r.d.Coeff.SetInt64(int64(v))
	default:
		if _, ok := r.d.Coeff.SetString(intPart+fracPart, 10); !ok {
			// Unreachable: the digits were validated. Kept so a bug is an error, not a wrong amount.
			return validationError(decimalSyntaxMessage)
		}
	}
	r.d.Form = apd.Finite
	r.d.Exponent = exp
	r.d.Negative = neg && n != 0
	return nil
}

// ParseDecimalNumber parses the text of a JSON number, exponent allowed
// ("1e3" is 1000, "1.50E-2" is 0.0150), for places that must accept numbers,
// such as event properties compared in canonical form. It never goes through
// float64, so "0.1" is exactly 0.1. The grammar is
// -?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)? (JSON's, tolerating leading zeros);
// NaN and Infinity are not numbers. Values with more than 34 digits in their
// coefficient (leading zeros not counted, trailing zeros counted) or whose
// coefficient exponent is beyond ±100 are rejected as absurd rather than
// rounded. Errors are *Error with code validation_failed.
func ParseDecimalNumber(s string) (Decimal, error) {
	var d Decimal
	err := parseNumber(&d, s)
	return d, err
}

// parseNumber is ParseDecimalNumber into *d.
func parseNumber(d *Decimal, s string) error {
	neg, intPart, fracPart, expPart, ok := splitNumber(s)
	if !ok {
		return validationError("must be a number")
	}
	var exp int64
	if expPart != "" {
		digits := strings.TrimLeft(strings.TrimLeft(expPart, "+-"), "0")
		if len(digits) > 9 {
			return validationError("is out of range: its exponent is beyond ±%d", maxNumberExponent)
		}
		if digits != "" {
			// Cannot fail: at most 9 ASCII digits.
			exp, _ = strconv.ParseInt(digits, 10, 64)
		}
		if expPart[0] == '-' {
			exp = -exp
		}
	}
	significant := len(strings.TrimLeft(intPart, "0"))
	if significant == 0 {
		significant = len(strings.TrimLeft(fracPart, "0"))
	} else {
		significant += len(fracPart)
	}
	if significant > maxNumberDigits {
		return validationError("has more than %d significant digits", maxNumberDigits)
	}
	exp -= int64(len(fracPart))
	if exp < -maxNumberExponent || exp > maxNumberExponent {
		return validationError("is out of range: its exponent is beyond ±%d", maxNumberExponent)
	}
	return fromDigits(d, neg, intPart, fracPart, int32(exp))
}

// MustDecimal is ParseDecimal that panics on error, for constants, tests and
// examples where the string is known to be valid.
func MustDecimal(s string) Decimal {
	d, err := ParseDecimal(s)
	if err != nil {
		panic(fmt.Sprintf("billing.MustDecimal(%q): %v", s, err))
	}
	return d
}

// DecimalFromInt returns the integer i as a Decimal (exponent 0, so it prints
// without a decimal point).
func DecimalFromInt(i int64) Decimal {
	var r Decimal
	r.d.SetInt64(i)
	return r
}

// String renders d as received, normalised: no exponent, no leading zeros,
// trailing zeros kept ("007.50" is "7.50"), because quantities and rates are
// echoed back with the precision the client gave. Negative zero prints as
// zero ("-0.00" is "0.00").
func (d Decimal) String() string {
	if d.d.Form != apd.Finite {
		// Unreachable: constructors and operations only produce finite values.
		return d.d.Text('f')
	}
	if d.d.IsZero() {
		// apd would print 0E+3 as "0000".
		if d.d.Exponent >= 0 {
			return "0"
		}
		return "0." + strings.Repeat("0", int(-d.d.Exponent))
	}
	return d.d.Text('f')
}

// Canonical renders d in reduced form: no exponent, no trailing fractional
// zeros, no '+', and "0" for any zero ("1.50" is "1.5", 1e3 is "1000"), so
// that equal values have equal text where decimals are compared as strings
// (docs/api-guide.md, "Decimals and money").
func (d Decimal) Canonical() string {
	if d.d.IsZero() {
		return "0"
	}
	var r apd.Decimal
	r.Reduce(&d.d)
	// 'f' writes a positive exponent as zeros: 1E+3 is "1000".
	return r.Text('f')
}

// result wraps a freshly computed apd value: it panics on an error (with the
// limits of the wire grammar, only exponents beyond ±100000 can trap, which no
// real amount reaches) and clears the sign of zero so -0 never leaks.
func result(r *apd.Decimal, err error) Decimal {
	if err != nil {
		panic(fmt.Sprintf("billing: decimal arithmetic failed: %v", err))
	}
	if r.IsZero() {
		r.Negative = false
	}
	return Decimal{d: *r}
}

// Add returns d + o, exactly.
func (d Decimal) Add(o Decimal) Decimal {
	r := new(apd.Decimal)
	_, err := exactCtx.Add(r, &d.d, &o.d)
	return result(r, err)
}

// Sub returns d - o, exactly.
func (d Decimal) Sub(o Decimal) Decimal {
	r := new(apd.Decimal)
	_, err := exactCtx.Sub(r, &d.d, &o.d)
	return result(r, err)
}

// Mul returns d × o, exactly: the product keeps all its digits ("0.335" ×
// "3" is "1.005"); round it explicitly at the named rounding points.
func (d Decimal) Mul(o Decimal) Decimal {
	r := new(apd.Decimal)
	_, err := exactCtx.Mul(r, &d.d, &o.d)
	return result(r, err)
}

// Neg returns -d.
func (d Decimal) Neg() Decimal {
	r := new(apd.Decimal)
	r.Neg(&d.d)
	return result(r, nil)
}

// Abs returns |d|.
func (d Decimal) Abs() Decimal {
	r := new(apd.Decimal)
	r.Abs(&d.d)
	return result(r, nil)
}

// Quo returns d / o to 34 significant digits (rounded half-up beyond them);
// an exact quotient carries no padding zeros (10 / 4 is "2.5").
// Division by zero returns a validation_failed *Error: a zero divisor always
// comes from input (a package size, a rate) that should have been rejected.
func (d Decimal) Quo(o Decimal) (Decimal, error) {
	if o.d.IsZero() {
		return Decimal{}, validationError("division by zero")
	}
	r := new(apd.Decimal)
	cond, err := decimalCtx.Quo(r, &d.d, &o.d)
	if err != nil {
		return Decimal{}, &Error{Code: CodeValidationFailed, Message: "decimal division failed", Err: err}
	}
	if !cond.Inexact() {
		// apd fills an exact quotient to 34 digits (10/4 = 2.500…0). Drop the
		// padding down to the ideal exponent of decimal arithmetic, the
		// dividend's minus the divisor's: 10/4 = 2.5, 7.50/2.5 = 3.0.
		var reduced apd.Decimal
		reduced.Reduce(r)
		want := min(reduced.Exponent, max(d.d.Exponent-o.d.Exponent, r.Exponent))
		if want != r.Exponent {
			// Exact: only trailing zeros are removed.
			_, err = decimalCtx.Quantize(r, r, want)
		}
	}
	return result(r, err), nil
}

// integerDigits returns the number of digits of d before the decimal point
// (0 for |d| < 1).
func (d Decimal) integerDigits() int64 {
	if d.d.IsZero() {
		return 0
	}
	return max(0, d.d.NumDigits()+int64(d.d.Exponent))
}

// Cmp compares d and o by value: -1 if d < o, 0 if equal ("1.5" equals
// "1.50"), +1 if d > o.
func (d Decimal) Cmp(o Decimal) int { return d.d.Cmp(&o.d) }

// Sign returns -1, 0 or +1 as d is negative, zero or positive (negative zero
// is 0).
func (d Decimal) Sign() int { return d.d.Sign() }

// IsZero reports whether d equals 0, whatever its exponent.
func (d Decimal) IsZero() bool { return d.d.IsZero() }

// IsInteger reports whether d has no fractional part ("3.00" is an integer).
func (d Decimal) IsInteger() bool {
	var integ, frac apd.Decimal
	d.d.Modf(&integ, &frac)
	return frac.IsZero()
}

// Round returns d quantized to exactly places fraction digits with the given
// rounding mode, so "12.3".Round(2, ...) prints "12.30" and money always has
// its currency's minor-unit digits. It uses a copy of the package context
// with mode; when the quantized value needs more than 34 digits the copy's
// precision is raised to fit, because quantizing never loses digits left of
// the rounding point.
func (d Decimal) Round(places int32, mode Rounding) Decimal {
	c := decimalCtx
	c.Rounding = mode.apd()
	// Digits left of the point (adjusted exponent + 1), the places, and one
	// for a carry such as 9.995 → 10.00.
	if need := d.d.NumDigits() + int64(d.d.Exponent) + int64(places) + 1; need > int64(c.Precision) {
		c.Precision = uint32(need)
	}
	r := new(apd.Decimal)
	_, err := c.Quantize(r, &d.d, -places)
	return result(r, err)
}

// RoundUp returns the smallest integer ≥ d (the ceiling), as in
// "ceil(usage / packageSize)".
func (d Decimal) RoundUp() Decimal {
	r := new(apd.Decimal)
	_, err := exactCtx.Ceil(r, &d.d)
	return result(r, err)
}

// ceilQuo returns ceil(d / o) for o > 0, computed exactly (an integer
// quotient and the sign of its remainder), so a quotient just above an
// integer is never rounded down onto it, however many digits it has.
func (d Decimal) ceilQuo(o Decimal) (Decimal, error) {
	if o.Sign() <= 0 {
		return Decimal{}, validationError("division by zero")
	}
	abs := func(e int32) int64 { return max(int64(e), -int64(e)) }
	c := exactCtx
	c.Precision = uint32(d.d.NumDigits() + o.d.NumDigits() + abs(d.d.Exponent) + abs(o.d.Exponent) + 2)
	q := new(apd.Decimal)
	if _, err := c.QuoInteger(q, &d.d, &o.d); err != nil {
		return Decimal{}, &Error{Code: CodeValidationFailed, Message: "decimal division failed", Err: err}
	}
	quo := result(q, nil)
	if d.Sub(quo.Mul(o)).Sign() > 0 {
		quo = quo.Add(DecimalFromInt(1))
	}
	return quo, nil
}

// Floor returns the largest integer ≤ d.
func (d Decimal) Floor() Decimal {
	r := new(apd.Decimal)
	_, err := exactCtx.Floor(r, &d.d)
	return result(r, err)
}

// Int64 returns d as an int64 when it is an integer ("3.00" is 3) within
// range; ok is false otherwise, so callers never truncate silently.
func (d Decimal) Int64() (int64, bool) {
	i, err := d.d.Int64()
	return i, err == nil
}

// MarshalJSON writes d as a JSON string of String(). It has a value receiver
// on purpose: a pointer-receiver marshaler (like apd's own MarshalText) is
// skipped for non-pointer struct fields, which would silently put apd's
// internal struct on the wire.
func (d Decimal) MarshalJSON() ([]byte, error) {
	s := d.String()
	b := make([]byte, 0, len(s)+2)
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"'), nil
}

// UnmarshalJSON reads a JSON string holding a plain decimal
// (-?[0-9]+(\.[0-9]+)?) of any length: it is how stored records are read
// back, and what the engine stores may be longer than a client may send
// (exact rates such as "0.0617283945060"), so nothing stored can ever make a
// read fail. Input from clients is held to the strict grammar of
// ParseDecimal (at most 20 digits before and 12 after the point) by the
// HTTP decoder, which checks every Decimal field with ParseDecimal first.
// JSON numbers are rejected because a client that sends 0.1 as a number has
// usually been through a float already; null is rejected because a Decimal
// field is a value that must be present (use *Decimal for optional fields:
// encoding/json sets those to nil on null without calling this).
func (d *Decimal) UnmarshalJSON(b []byte) error {
	if len(b) == 0 || b[0] != '"' {
		return validationError("%s, not %s", decimalSyntaxMessage, jsonKind(b))
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return validationError(decimalSyntaxMessage)
	}
	v, err := parseStoredDecimal(s)
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// parseStoredDecimal parses a plain decimal string of any length (the
// grammar of ParseDecimal without its digit limits).
func parseStoredDecimal(s string) (Decimal, error) {
	neg, intPart, fracPart, ok := splitDecimal(s)
	if !ok {
		return Decimal{}, validationError(decimalSyntaxMessage)
	}
	if len(fracPart) > math.MaxInt32/2 {
		return Decimal{}, validationError("has too many digits after the decimal point")
	}
	var d Decimal
	err := fromDigits(&d, neg, intPart, fracPart, -int32(len(fracPart)))
	return d, err
}

// jsonKind names the kind of a non-string JSON value for error messages.
func jsonKind(b []byte) string {
	if len(b) == 0 {
		return "empty"
	}
	switch b[0] {
	case 'n':
		return "null"
	case 't', 'f':
		return "a boolean"
	case '{':
		return "an object"
	case '[':
		return "an array"
	}
	return "a number"
}

// MarshalText writes String(). Value receiver for the same reason as
// MarshalJSON; it also makes Decimal usable as a text map key or query value.
func (d Decimal) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText parses b with ParseDecimal (strict grammar).
func (d *Decimal) UnmarshalText(b []byte) error {
	v, err := ParseDecimal(string(b))
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// Apd returns a fresh copy of d as an *apd.Decimal, for callers that need apd
// directly; mutating it does not affect d.
func (d Decimal) Apd() *apd.Decimal { return new(apd.Decimal).Set(&d.d) }

// Rounding is the rounding mode applied at the named rounding points
// (docs/concepts.md, "Documents and their states"). The zero value is RoundHalfUp, the default; any
// value other than the two constants rounds half-up too.
type Rounding int

// The rounding modes a Service can be configured with.
const (
	// RoundHalfUp rounds ties away from zero ("2.345" → "2.35", "-2.345" → "-2.35").
	RoundHalfUp Rounding = iota
	// RoundHalfEven rounds ties to the even neighbour ("2.345" → "2.34"), the
	// banker's rounding some jurisdictions require.
	RoundHalfEven
)

// String returns "half-up" or "half-even", the spelling ParseRounding accepts.
func (r Rounding) String() string {
	switch r {
	case RoundHalfUp:
		return "half-up"
	case RoundHalfEven:
		return "half-even"
	}
	return "Rounding(" + strconv.Itoa(int(r)) + ")"
}

// apd returns the apd rounder of r.
func (r Rounding) apd() apd.Rounder {
	if r == RoundHalfEven {
		return apd.RoundHalfEven
	}
	return apd.RoundHalfUp
}

// ParseRounding parses "half-up" or "half-even" (exactly as String writes
// them). Anything else is a validation_failed *Error.
func ParseRounding(s string) (Rounding, error) {
	switch s {
	case "half-up":
		return RoundHalfUp, nil
	case "half-even":
		return RoundHalfEven, nil
	}
	return RoundHalfUp, validationError(`must be "half-up" or "half-even"`)
}

// Currency is an ISO 4217 code of one of the currencies the service supports.
// Use ParseCurrency for input; the constants are always valid.
type Currency string

// The supported currencies.
const (
	CurrencyAED Currency = "AED"
	CurrencyARS Currency = "ARS"
	CurrencyAUD Currency = "AUD"
	CurrencyBGN Currency = "BGN"
	CurrencyBRL Currency = "BRL"
	CurrencyCAD Currency = "CAD"
	CurrencyCHF Currency = "CHF"
	CurrencyCLP Currency = "CLP"
	CurrencyCNY Currency = "CNY"
	CurrencyCOP Currency = "COP"
	CurrencyCZK Currency = "CZK"
	CurrencyDKK Currency = "DKK"
	CurrencyEGP Currency = "EGP"
	CurrencyEUR Currency = "EUR"
	CurrencyGBP Currency = "GBP"
	CurrencyHKD Currency = "HKD"
	CurrencyILS Currency = "ILS"
	CurrencyINR Currency = "INR"
	CurrencyISK Currency = "ISK"
	CurrencyJPY Currency = "JPY"
	CurrencyKRW Currency = "KRW"
	CurrencyKWD Currency = "KWD"
	CurrencyMXN Currency = "MXN"
	CurrencyNOK Currency = "NOK"
	CurrencyNZD Currency = "NZD"
	CurrencyPLN Currency = "PLN"
	CurrencySAR Currency = "SAR"
	CurrencySEK Currency = "SEK"
	CurrencySGD Currency = "SGD"
	CurrencyTHB Currency = "THB"
	CurrencyUSD Currency = "USD"
	CurrencyUYU Currency = "UYU"
	CurrencyZAR Currency = "ZAR"
)

// currencyMinorUnits maps every supported currency to its minor units; it is
// the single list of supported currencies. Read-only after init.
var currencyMinorUnits = map[Currency]int32{
	CurrencyAED: 2, CurrencyARS: 2, CurrencyAUD: 2, CurrencyBGN: 2,
	CurrencyBRL: 2, CurrencyCAD: 2, CurrencyCHF: 2, CurrencyCLP: 0,
	CurrencyCNY: 2, CurrencyCOP: 2, CurrencyCZK: 2, CurrencyDKK: 2,
	CurrencyEGP: 2, CurrencyEUR: 2, CurrencyGBP: 2, CurrencyHKD: 2,
	CurrencyILS: 2, CurrencyINR: 2, CurrencyISK: 0, CurrencyJPY: 0,
	CurrencyKRW: 0, CurrencyKWD: 3, CurrencyMXN: 2, CurrencyNOK: 2, CurrencyNZD: 2,
	CurrencyPLN: 2, CurrencySAR: 2, CurrencySEK: 2, CurrencySGD: 2,
	CurrencyTHB: 2, CurrencyUSD: 2, CurrencyUYU: 2, CurrencyZAR: 2,
}

// ParseCurrency returns the currency with code s, which must be one of the
// supported upper-case ISO 4217 codes exactly ("usd" is rejected, so stored
// codes never differ by case). Otherwise it returns a validation_failed *Error.
func ParseCurrency(s string) (Currency, error) {
	c := Currency(s)
	if !c.Valid() {
		return "", validationError("must be an upper-case ISO 4217 currency code the service supports (one of %s)", currencyList())
	}
	return c, nil
}

// currencyList is the supported codes, comma separated, for error messages.
func currencyList() string {
	cs := Currencies()
	s := make([]string, len(cs))
	for i, c := range cs {
		s[i] = string(c)
	}
	return strings.Join(s, ", ")
}

// Currencies returns the supported currencies sorted by code, in a new slice
// the caller may modify.
func Currencies() []Currency {
	cs := make([]Currency, 0, len(currencyMinorUnits))
	for c := range currencyMinorUnits {
		cs = append(cs, c)
	}
	slices.Sort(cs)
	return cs
}

// Valid reports whether c is a supported currency.
func (c Currency) Valid() bool {
	_, ok := currencyMinorUnits[c]
	return ok
}

// MinorUnits returns the number of fraction digits of c's amounts: 0 for CLP,
// ISK, JPY and KRW, 2 for every other supported currency (and, defensively,
// for an invalid one).
func (c Currency) MinorUnits() int32 {
	if m, ok := currencyMinorUnits[c]; ok {
		return m
	}
	return 2
}

// Round returns d rounded to c's minor units with mode: the one rounding
// point for money amounts.
func (c Currency) Round(d Decimal, mode Rounding) Decimal {
	return d.Round(c.MinorUnits(), mode)
}

// Zero returns zero with c's minor units ("0.00", or "0" for JPY), the total
// of a document without lines.
func (c Currency) Zero() Decimal {
	var r Decimal
	r.d.Exponent = -c.MinorUnits()
	return r
}

// MinorUnit returns the smallest amount of c: "0.01", or "1" for JPY.
func (c Currency) MinorUnit() Decimal {
	var r Decimal
	r.d.Coeff.SetInt64(1)
	r.d.Exponent = -c.MinorUnits()
	return r
}

// UnmarshalJSON accepts a JSON string holding a supported currency code
// (validated with ParseCurrency); anything else, null included, is a
// validation_failed *Error.
func (c *Currency) UnmarshalJSON(b []byte) error {
	if len(b) == 0 || b[0] != '"' {
		return validationError("must be a currency code string such as \"USD\", not %s", jsonKind(b))
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return validationError(`must be a currency code string such as "USD"`)
	}
	v, err := ParseCurrency(s)
	if err != nil {
		return err
	}
	*c = v
	return nil
}
