package billing

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
)

// requireValidation fails unless err is a *Error with code validation_failed
// and an empty Field (callers fill it).
func requireValidation(t *testing.T, what string, err error) *Error {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("%s: error %v (%T) is not a *billing.Error", what, err, err)
	}
	if e.Code != CodeValidationFailed {
		t.Errorf("%s: code %q, want %q", what, e.Code, CodeValidationFailed)
	}
	if e.Field != "" {
		t.Errorf("%s: Field %q, want empty", what, e.Field)
	}
	if e.Message == "" {
		t.Errorf("%s: empty message", what)
	}
	return e
}

func TestParseDecimalAccepted(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, str, canonical string }{
		{"0", "0", "0"},
		{"-0", "0", "0"},
		{"-0.00", "0.00", "0"},
		{"0.00", "0.00", "0"},
		{"007.50", "7.50", "7.5"},
		{"-3.50", "-3.50", "-3.5"},
		{"12", "12", "12"},
		{"0.2", "0.2", "0.2"},
		{"1.50", "1.50", "1.5"},
		{"100", "100", "100"},
		{"100.000", "100.000", "100"},
		{"0.000000000001", "0.000000000001", "0.000000000001"},
		{"99999999999999999999", "99999999999999999999", "99999999999999999999"},
		{"-99999999999999999999.999999999999", "-99999999999999999999.999999999999", "-99999999999999999999.999999999999"},
		{"12345678901234567890.123456789012", "12345678901234567890.123456789012", "12345678901234567890.123456789012"},
		{"0.120000000000", "0.120000000000", "0.12"},
		{"000000000000000000000000000001", "1", "1"},
		{"0000000000000000000000012345678901234567890.5", "12345678901234567890.5", "12345678901234567890.5"},
	}
	for _, tt := range tests {
		d, err := ParseDecimal(tt.in)
		if err != nil {
			t.Errorf("ParseDecimal(%q): %v", tt.in, err)
			continue
		}
		if got := d.String(); got != tt.str {
			t.Errorf("ParseDecimal(%q).String() = %q, want %q", tt.in, got, tt.str)
		}
		if got := d.Canonical(); got != tt.canonical {
			t.Errorf("ParseDecimal(%q).Canonical() = %q, want %q", tt.in, got, tt.canonical)
		}
		if got := MustDecimal(tt.in).String(); got != tt.str {
			t.Errorf("MustDecimal(%q).String() = %q, want %q", tt.in, got, tt.str)
		}
	}
}

func TestParseDecimalRejected(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, msg string }{
		{"", "decimal string"},
		{" 1", "decimal string"},
		{"1 ", "decimal string"},
		{"+1", "decimal string"},
		{"1e3", "decimal string"},
		{"1E3", "decimal string"},
		{"NaN", "decimal string"},
		{"nan", "decimal string"},
		{"Infinity", "decimal string"},
		{"-Infinity", "decimal string"},
		{"Inf", "decimal string"},
		{"-", "decimal string"},
		{".", "decimal string"},
		{".5", "decimal string"},
		{"-.5", "decimal string"},
		{"1.", "decimal string"},
		{"1..2", "decimal string"},
		{"1.2.3", "decimal string"},
		{"1,5", "decimal string"},
		{"0x10", "decimal string"},
		{"١٢", "decimal string"},
		{"１２", "decimal string"},
		{"--1", "decimal string"},
		{"1-", "decimal string"},
		{"1_000", "decimal string"},
		{"\t1", "decimal string"},
		{"1\n", "decimal string"},
		{`"1"`, "decimal string"},
		{"123456789012345678901", "more than 20 digits before"},
		{"-123456789012345678901.5", "more than 20 digits before"},
		{"0.1234567890123", "more than 12 digits after"},
		{"1.0000000000000", "more than 12 digits after"},
	}
	for _, tt := range tests {
		d, err := ParseDecimal(tt.in)
		if err == nil {
			t.Errorf("ParseDecimal(%q) = %s, want an error", tt.in, d)
			continue
		}
		e := requireValidation(t, "ParseDecimal("+tt.in+")", err)
		if !strings.Contains(e.Message, tt.msg) {
			t.Errorf("ParseDecimal(%q) message %q, want it to contain %q", tt.in, e.Message, tt.msg)
		}
	}
}

func TestParseDecimalSyntaxMessage(t *testing.T) {
	t.Parallel()
	_, err := ParseDecimal("1e3")
	if e := requireValidation(t, "1e3", err); e.Message != `must be a decimal string such as "12.50"` {
		t.Errorf("message %q", e.Message)
	}
}

func TestMustDecimalPanics(t *testing.T) {
	t.Parallel()
	defer func() {
		if recover() == nil {
			t.Error("MustDecimal(\"1e3\") did not panic")
		}
	}()
	MustDecimal("1e3")
}

func TestDecimalZeroValue(t *testing.T) {
	t.Parallel()
	var d Decimal
	if d.String() != "0" || d.Canonical() != "0" || !d.IsZero() || d.Sign() != 0 {
		t.Errorf("zero value: String %q Canonical %q IsZero %v Sign %d", d.String(), d.Canonical(), d.IsZero(), d.Sign())
	}
	if got := d.Add(MustDecimal("1.50")).String(); got != "1.50" {
		t.Errorf("0 + 1.50 = %q", got)
	}
}

func TestDecimalFromInt(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   int64
		want string
	}{
		{0, "0"}, {7, "7"}, {-42, "-42"},
		{9223372036854775807, "9223372036854775807"},
		{-9223372036854775808, "-9223372036854775808"},
	}
	for _, tt := range tests {
		if got := DecimalFromInt(tt.in).String(); got != tt.want {
			t.Errorf("DecimalFromInt(%d) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestDecimalRounding(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in              string
		places          int32
		halfUp, halfEvn string
	}{
		{"2.345", 2, "2.35", "2.34"},
		{"-2.345", 2, "-2.35", "-2.34"},
		{"2.355", 2, "2.36", "2.36"},
		{"0.125", 2, "0.13", "0.12"},
		{"-0.125", 2, "-0.13", "-0.12"},
		{"2.5", 0, "3", "2"},
		{"-2.5", 0, "-3", "-2"},
		{"3.5", 0, "4", "4"},
		{"2.3449", 2, "2.34", "2.34"},
		{"2.3451", 2, "2.35", "2.35"},
		{"12.3", 2, "12.30", "12.30"},
		{"5", 0, "5", "5"},
		{"5", 2, "5.00", "5.00"},
		{"9.995", 2, "10.00", "10.00"},
		{"-0.004", 2, "0.00", "0.00"},
		{"0", 2, "0.00", "0.00"},
		{"99999999999999999999.999999999999", 2, "100000000000000000000.00", "100000000000000000000.00"},
		{"99999999999999999999.999999999999", 12, "99999999999999999999.999999999999", "99999999999999999999.999999999999"},
	}
	for _, tt := range tests {
		d := MustDecimal(tt.in)
		if got := d.Round(tt.places, RoundHalfUp).String(); got != tt.halfUp {
			t.Errorf("%s.Round(%d, half-up) = %q, want %q", tt.in, tt.places, got, tt.halfUp)
		}
		if got := d.Round(tt.places, RoundHalfEven).String(); got != tt.halfEvn {
			t.Errorf("%s.Round(%d, half-even) = %q, want %q", tt.in, tt.places, got, tt.halfEvn)
		}
		if got := d.String(); got != MustDecimal(tt.in).String() {
			t.Errorf("Round mutated its receiver: %q", got)
		}
	}
	// The zero value of Rounding is the default, half-up.
	var zero Rounding
	if got := MustDecimal("2.5").Round(0, zero).String(); got != "3" {
		t.Errorf("zero Rounding: 2.5 → %q, want half-up 3", got)
	}
}

func TestDecimalRoundBeyondPrecision(t *testing.T) {
	t.Parallel()
	// A product with more than 34 digits once quantized must still round,
	// not fail: 10^20 × 10^10 to 12 places needs 43 digits.
	e10 := MustDecimal("10000000000")
	big := e10.Mul(e10).Mul(e10)
	want := "1000000000000000000000000000000.000000000000"
	if got := big.Round(12, RoundHalfUp).String(); got != want {
		t.Errorf("Round(12) = %q, want %q", got, want)
	}
}

func TestCurrencyRound(t *testing.T) {
	t.Parallel()
	tests := []struct {
		c       Currency
		in      string
		mode    Rounding
		want    string
		wantStr string
	}{
		{CurrencyJPY, "1000.5", RoundHalfUp, "1001", ""},
		{CurrencyJPY, "1000.5", RoundHalfEven, "1000", ""},
		{CurrencyJPY, "1001.5", RoundHalfEven, "1002", ""},
		{CurrencyKRW, "-7.5", RoundHalfUp, "-8", ""},
		{CurrencyUSD, "1.005", RoundHalfUp, "1.01", ""},
		{CurrencyUSD, "1.005", RoundHalfEven, "1.00", ""},
		{CurrencyEUR, "3", RoundHalfUp, "3.00", ""},
	}
	for _, tt := range tests {
		if got := tt.c.Round(MustDecimal(tt.in), tt.mode).String(); got != tt.want {
			t.Errorf("%s.Round(%s, %s) = %q, want %q", tt.c, tt.in, tt.mode, got, tt.want)
		}
	}
}

// TestMoneyDocumentTotals follows the examples of docs/concepts.md, "Documents and their states".
func TestMoneyDocumentTotals(t *testing.T) {
	t.Parallel()
	tests := []struct {
		c                        Currency
		quantity, rate, taxRate  string
		mode                     Rounding
		product, net, tax, gross string
	}{
		{CurrencyGBP, "3", "0.335", "0.2", RoundHalfUp, "1.005", "1.01", "0.20", "1.21"},
		{CurrencyGBP, "3", "0.335", "0.2", RoundHalfEven, "1.005", "1.00", "0.20", "1.20"},
		{CurrencyJPY, "1", "1000.5", "0.1", RoundHalfUp, "1000.5", "1001", "100", "1101"},
		{CurrencyJPY, "1", "1000.5", "0.1", RoundHalfEven, "1000.5", "1000", "100", "1100"},
	}
	for _, tt := range tests {
		product := MustDecimal(tt.quantity).Mul(MustDecimal(tt.rate))
		net := tt.c.Round(product, tt.mode)
		tax := tt.c.Round(net.Mul(MustDecimal(tt.taxRate)), tt.mode)
		gross := net.Add(tax)
		got := []string{product.String(), net.String(), tax.String(), gross.String()}
		want := []string{tt.product, tt.net, tt.tax, tt.gross}
		if !slices.Equal(got, want) {
			t.Errorf("%s %s × %s, tax %s, %s: got product/net/tax/gross %v, want %v",
				tt.c, tt.quantity, tt.rate, tt.taxRate, tt.mode, got, want)
		}
	}
	// The spec's "tax 1.01 × 0.2 → 0.20" step on its own.
	if got := CurrencyGBP.Round(MustDecimal("1.01").Mul(MustDecimal("0.2")), RoundHalfUp).String(); got != "0.20" {
		t.Errorf("1.01 × 0.2 = %q, want 0.20", got)
	}
}

// Long on purpose: a table of cases, one line each; its length is the cases, not logic.
func TestDecimalArithmetic(t *testing.T) {
	t.Parallel()
	sum := Decimal{}
	cent := MustDecimal("0.01")
	for range 1000 {
		sum = sum.Add(cent)
	}
	if got := sum.String(); got != "10.00" {
		t.Errorf("1000 × 0.01 summed = %q, want 10.00", got)
	}
	// 0.1 + 0.2 is exactly 0.3, unlike binary floating point.
	if got := MustDecimal("0.1").Add(MustDecimal("0.2")); got.Cmp(MustDecimal("0.3")) != 0 {
		t.Errorf("0.1 + 0.2 = %s", got)
	}
	tests := []struct{ a, op, b, want string }{
		{"1.50", "+", "2.5", "4.00"},
		{"1.50", "-", "2.5", "-1.00"},
		{"2.5", "-", "2.50", "0.00"},
		{"-2.5", "+", "2.50", "0.00"},
		{"1.50", "*", "2", "3.00"},
		{"-0.5", "*", "0", "0.0"},
		{"0.335", "*", "3", "1.005"},
		{"99999999999999999999.999999999999", "+", "0.000000000001", "100000000000000000000.000000000000"},
		{"10", "/", "4", "2.5"},
		{"1", "/", "3", "0.3333333333333333333333333333333333"},
		{"2", "/", "3", "0.6666666666666666666666666666666667"},
		{"-7.50", "/", "2.5", "-3.0"},
		{"7.5", "/", "2.50", "3"},
		{"1.00", "/", "1", "1.00"},
		{"0.00", "/", "5", "0.00"},
		{"1000", "/", "8", "125"},
		{"1", "/", "8", "0.125"},
		{"0", "/", "5", "0"},
	}
	for _, tt := range tests {
		a, b := MustDecimal(tt.a), MustDecimal(tt.b)
		var got Decimal
		switch tt.op {
		case "+":
			got = a.Add(b)
		case "-":
			got = a.Sub(b)
		case "*":
			got = a.Mul(b)
		case "/":
			var err error
			if got, err = a.Quo(b); err != nil {
				t.Errorf("%s / %s: %v", tt.a, tt.b, err)
				continue
			}
		}
		if got.String() != tt.want {
			t.Errorf("%s %s %s = %q, want %q", tt.a, tt.op, tt.b, got.String(), tt.want)
		}
		if a.String() != MustDecimal(tt.a).String() || b.String() != MustDecimal(tt.b).String() {
			t.Errorf("%s %s %s mutated an operand: %s, %s", tt.a, tt.op, tt.b, a, b)
		}
	}
	if got := MustDecimal("3.50").Neg().String(); got != "-3.50" {
		t.Errorf("Neg(3.50) = %q", got)
	}
	if got := MustDecimal("0.00").Neg().String(); got != "0.00" {
		t.Errorf("Neg(0.00) = %q", got)
	}
	if got := MustDecimal("-3.50").Abs().String(); got != "3.50" {
		t.Errorf("Abs(-3.50) = %q", got)
	}
}

func TestDecimalQuoByZero(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"1", "0", "-2.5"} {
		for _, zero := range []string{"0", "0.00", "-0"} {
			if d, err := MustDecimal(s).Quo(MustDecimal(zero)); err == nil {
				t.Errorf("%s / %s = %s, want an error", s, zero, d)
			} else {
				requireValidation(t, s+" / "+zero, err)
			}
		}
	}
}

func TestDecimalRoundUpFloor(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, up, floor string }{
		{"2.1", "3", "2"},
		{"2.9", "3", "2"},
		{"3", "3", "3"},
		{"3.00", "3", "3"},
		{"0", "0", "0"},
		{"0.001", "1", "0"},
		{"-0.001", "0", "-1"},
		{"-2.1", "-2", "-3"},
		{"-2.9", "-2", "-3"},
		{"-3", "-3", "-3"},
		{"99999999999999999999.5", "100000000000000000000", "99999999999999999999"},
	}
	for _, tt := range tests {
		d := MustDecimal(tt.in)
		if got := d.RoundUp().String(); got != tt.up {
			t.Errorf("%s.RoundUp() = %q, want %q", tt.in, got, tt.up)
		}
		if got := d.Floor().String(); got != tt.floor {
			t.Errorf("%s.Floor() = %q, want %q", tt.in, got, tt.floor)
		}
	}
	// ceil(usage / packageSize)
	q, err := MustDecimal("1001").Quo(MustDecimal("100"))
	if err != nil {
		t.Fatal(err)
	}
	if got := q.RoundUp().String(); got != "11" {
		t.Errorf("ceil(1001 / 100) = %q, want 11", got)
	}
	if got := DecimalFromInt(1000).Mul(MustDecimal("1")).RoundUp(); got.Cmp(DecimalFromInt(1000)) != 0 {
		t.Errorf("ceil(1000) = %s", got)
	}
}

func TestDecimalPredicates(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		sign    int
		integer bool
	}{
		{"0", 0, true}, {"-0.00", 0, true}, {"3.00", 1, true}, {"3.01", 1, false},
		{"-7", -1, true}, {"-0.5", -1, false}, {"0.000000000001", 1, false},
	}
	for _, tt := range tests {
		d := MustDecimal(tt.in)
		if d.Sign() != tt.sign || d.IsZero() != (tt.sign == 0) || d.IsInteger() != tt.integer {
			t.Errorf("%s: Sign %d IsZero %v IsInteger %v, want %d %v %v",
				tt.in, d.Sign(), d.IsZero(), d.IsInteger(), tt.sign, tt.sign == 0, tt.integer)
		}
	}
	cmps := []struct {
		a, b string
		want int
	}{
		{"1.5", "1.50", 0}, {"0", "-0.00", 0}, {"1.49", "1.5", -1}, {"-1", "-2", 1},
		{"99999999999999999999", "99999999999999999999.000000000001", -1},
	}
	for _, tt := range cmps {
		if got := MustDecimal(tt.a).Cmp(MustDecimal(tt.b)); got != tt.want {
			t.Errorf("Cmp(%s, %s) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestDecimalInt64(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true},
		{"42", 42, true},
		{"42.000", 42, true},
		{"-17", -17, true},
		{"9223372036854775807", 9223372036854775807, true},
		{"-9223372036854775808", -9223372036854775808, true},
		{"9223372036854775808", 0, false},
		{"-9223372036854775809", 0, false},
		{"1.5", 0, false},
		{"0.000000000001", 0, false},
	}
	for _, tt := range tests {
		got, ok := MustDecimal(tt.in).Int64()
		if ok != tt.ok || (ok && got != tt.want) {
			t.Errorf("%s.Int64() = %d, %v; want %d, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestDecimalApdIsACopy(t *testing.T) {
	t.Parallel()
	d := MustDecimal("7.50")
	a := d.Apd()
	a.Neg(a)
	a.Exponent = 5
	if d.String() != "7.50" {
		t.Errorf("mutating Apd() changed d to %s", d)
	}
}

func TestDecimalJSON(t *testing.T) {
	t.Parallel()
	type line struct {
		Quantity Decimal  `json:"quantity"`
		Rate     Decimal  `json:"rate"`
		Tax      *Decimal `json:"tax,omitempty"`
	}
	tax := MustDecimal("0.20")
	// Non-pointer fields must marshal through the value-receiver methods.
	b, err := json.Marshal(line{Quantity: MustDecimal("007.50"), Rate: MustDecimal("-0.00"), Tax: &tax})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"quantity":"7.50","rate":"0.00","tax":"0.20"}`; string(b) != want {
		t.Errorf("Marshal = %s, want %s", b, want)
	}
	// A bare value too (not addressable inside an interface).
	if b, err := json.Marshal(any(MustDecimal("1.50"))); err != nil || string(b) != `"1.50"` {
		t.Errorf("Marshal(any(1.50)) = %s, %v", b, err)
	}
	if b, err := json.Marshal(map[string]Decimal{"a": MustDecimal("12")}); err != nil || string(b) != `{"a":"12"}` {
		t.Errorf("Marshal(map) = %s, %v", b, err)
	}

	var got line
	if err := json.Unmarshal([]byte(`{"quantity":"7.50","rate":"\u0031.5"}`), &got); err != nil {
		t.Fatal(err)
	}
	if got.Quantity.String() != "7.50" || got.Rate.String() != "1.5" || got.Tax != nil {
		t.Errorf("Unmarshal = %+v", got)
	}
	b, err = json.Marshal(got)
	if err != nil || string(b) != `{"quantity":"7.50","rate":"1.5"}` {
		t.Errorf("round trip = %s, %v", b, err)
	}

	// A null pointer field stays nil (encoding/json handles it).
	if err := json.Unmarshal([]byte(`{"quantity":"1","rate":"1","tax":null}`), &got); err != nil || got.Tax != nil {
		t.Errorf("tax null: %v, %v", got.Tax, err)
	}
}

func TestDecimalJSONRejected(t *testing.T) {
	t.Parallel()
	tests := []struct{ body, msg string }{
		{`12.5`, `must be a decimal string such as "12.50", not a number`},
		{`-1`, `must be a decimal string such as "12.50", not a number`},
		{`1e3`, `must be a decimal string such as "12.50", not a number`},
		{`0`, `must be a decimal string such as "12.50", not a number`},
		{`null`, `not null`},
		{`true`, `not a boolean`},
		{`{}`, `not an object`},
		{`["1"]`, `not an array`},
		{`""`, `must be a decimal string`},
		{`"1e3"`, `must be a decimal string`},
		{`" 1"`, `must be a decimal string`},
		{`"+1"`, `must be a decimal string`},
		{`"NaN"`, `must be a decimal string`},
	}
	for _, tt := range tests {
		var v struct {
			Amount Decimal `json:"amount"`
		}
		err := json.Unmarshal([]byte(`{"amount":`+tt.body+`}`), &v)
		if err == nil {
			t.Errorf("Unmarshal(%s) = %s, want an error", tt.body, v.Amount)
			continue
		}
		e := requireValidation(t, "Unmarshal("+tt.body+")", err)
		if !strings.Contains(e.Message, tt.msg) {
			t.Errorf("Unmarshal(%s) message %q, want it to contain %q", tt.body, e.Message, tt.msg)
		}
	}
	// Direct calls see the same errors.
	var d Decimal
	requireValidation(t, "UnmarshalJSON(12.5)", d.UnmarshalJSON([]byte(`12.5`)))
	requireValidation(t, "UnmarshalJSON(null)", d.UnmarshalJSON([]byte(`null`)))
	if !d.IsZero() {
		t.Errorf("failed UnmarshalJSON changed d to %s", d)
	}
}

// Stored records are read with UnmarshalJSON, and the engine stores exact
// rates longer than a client may send: reading never applies the wire's
// digit limits (the HTTP decoder does, with ParseDecimal).
func TestDecimalJSONReadsAnyPlainDecimal(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"0.0617283945060", "123456789012345678901.00", "-0.00000000000000000000000000000000000001"} {
		var d Decimal
		if err := d.UnmarshalJSON([]byte(`"` + s + `"`)); err != nil || d.String() != s {
			t.Errorf("UnmarshalJSON(%q) = %s, %v", s, d, err)
		}
		if _, err := ParseDecimal(s); err == nil {
			t.Errorf("ParseDecimal(%q) accepted a value beyond the wire grammar", s)
		}
	}
}

func TestDecimalText(t *testing.T) {
	t.Parallel()
	b, err := MustDecimal("007.50").MarshalText()
	if err != nil || string(b) != "7.50" {
		t.Errorf("MarshalText = %q, %v", b, err)
	}
	var d Decimal
	if err := d.UnmarshalText([]byte("-3.50")); err != nil || d.String() != "-3.50" {
		t.Errorf("UnmarshalText(-3.50) = %s, %v", d, err)
	}
	for _, bad := range []string{"1e3", "", " 1", "NaN"} {
		requireValidation(t, "UnmarshalText("+bad+")", d.UnmarshalText([]byte(bad)))
	}
	if d.String() != "-3.50" {
		t.Errorf("failed UnmarshalText changed d to %s", d)
	}
}

func TestParseDecimalNumber(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, canonical string }{
		{"1e3", "1000"},
		{"1E3", "1000"},
		{"1e+3", "1000"},
		{"1.50", "1.5"},
		{"1.50E-2", "0.015"},
		{"-0", "0"},
		{"-0.0e5", "0"},
		{"0e100", "0"},
		{"12", "12"},
		{"-3.50", "-3.5"},
		{"0.1", "0.1"},
		{"123.456e1", "1234.56"},
		{"1e100", "1" + strings.Repeat("0", 100)},
		{"1e-100", "0." + strings.Repeat("0", 99) + "1"},
		{"1234567890123456789012345678901234", "1234567890123456789012345678901234"},
		{"0.000000001234567890123456789012345678901234", "0.000000001234567890123456789012345678901234"},
	}
	for _, tt := range tests {
		d, err := ParseDecimalNumber(tt.in)
		if err != nil {
			t.Errorf("ParseDecimalNumber(%q): %v", tt.in, err)
			continue
		}
		if got := d.Canonical(); got != tt.canonical {
			t.Errorf("ParseDecimalNumber(%q).Canonical() = %q, want %q", tt.in, got, tt.canonical)
		}
		if strings.ContainsAny(d.String(), "eE+") {
			t.Errorf("ParseDecimalNumber(%q).String() = %q has an exponent", tt.in, d.String())
		}
	}
	if got := MustDecimal("1.50").Cmp(mustNumber(t, "15e-1")); got != 0 {
		t.Errorf("1.50 vs 15e-1: Cmp %d", got)
	}
	if got := mustNumber(t, "1.50E-2").String(); got != "0.0150" {
		t.Errorf("1.50E-2 String = %q, want 0.0150", got)
	}
	rejected := []string{
		"", "NaN", "nan", "Infinity", "-Infinity", "Inf", "+1", ".5", "1.", "1e", "1e+", "e3",
		"1e3.5", "1e3e4", "1E3e4", "0x10", " 1", "1 ", "١٢", "--1", "1e--3",
		"1e999999", "1e-999999", "1e99999999999999999999999", "1e101", "1e-101", "0.1e-100",
		"12345678901234567890123456789012345", // 35 digits
	}
	for _, s := range rejected {
		if d, err := ParseDecimalNumber(s); err == nil {
			t.Errorf("ParseDecimalNumber(%q) = %s, want an error", s, d)
		} else {
			requireValidation(t, "ParseDecimalNumber("+s+")", err)
		}
	}
}

func mustNumber(t *testing.T, s string) Decimal {
	t.Helper()
	d, err := ParseDecimalNumber(s)
	if err != nil {
		t.Fatalf("ParseDecimalNumber(%q): %v", s, err)
	}
	return d
}

func TestRounding(t *testing.T) {
	t.Parallel()
	for _, r := range []Rounding{RoundHalfUp, RoundHalfEven} {
		got, err := ParseRounding(r.String())
		if err != nil || got != r {
			t.Errorf("ParseRounding(%q) = %v, %v", r.String(), got, err)
		}
	}
	if RoundHalfUp.String() != "half-up" || RoundHalfEven.String() != "half-even" {
		t.Errorf("String: %q %q", RoundHalfUp, RoundHalfEven)
	}
	for _, s := range []string{"", "HALF_UP", "half_up", "Half-Up", "half-down", "up"} {
		_, err := ParseRounding(s)
		requireValidation(t, "ParseRounding("+s+")", err)
	}
}

func TestCurrency(t *testing.T) {
	t.Parallel()
	all := []Currency{
		CurrencyAED, CurrencyARS, CurrencyAUD, CurrencyBGN, CurrencyBRL, CurrencyCAD, CurrencyCHF,
		CurrencyCLP, CurrencyCNY, CurrencyCOP, CurrencyCZK, CurrencyDKK, CurrencyEGP, CurrencyEUR,
		CurrencyGBP, CurrencyHKD, CurrencyILS, CurrencyINR, CurrencyISK, CurrencyJPY, CurrencyKRW,
		CurrencyKWD, CurrencyMXN, CurrencyNOK, CurrencyNZD, CurrencyPLN, CurrencySAR, CurrencySEK, CurrencySGD,
		CurrencyTHB, CurrencyUSD, CurrencyUYU, CurrencyZAR,
	}
	if len(all) != 33 {
		t.Fatalf("test lists %d currencies", len(all))
	}
	if got := Currencies(); !slices.Equal(got, all) {
		t.Errorf("Currencies() = %v, want %v", got, all)
	}
	// Callers may modify the returned slice.
	Currencies()[0] = "XXX"
	if Currencies()[0] != CurrencyAED {
		t.Error("Currencies() shares its slice")
	}
	zeroDigit := map[Currency]bool{CurrencyCLP: true, CurrencyISK: true, CurrencyJPY: true, CurrencyKRW: true}
	for _, c := range all {
		got, err := ParseCurrency(string(c))
		if err != nil || got != c {
			t.Errorf("ParseCurrency(%q) = %q, %v", c, got, err)
		}
		if !c.Valid() {
			t.Errorf("%s.Valid() = false", c)
		}
		wantUnits, wantZero := int32(2), "0.00"
		if zeroDigit[c] {
			wantUnits, wantZero = 0, "0"
		}
		if c == CurrencyKWD { // the three-decimal currency
			wantUnits, wantZero = 3, "0.000"
		}
		if c.MinorUnits() != wantUnits {
			t.Errorf("%s.MinorUnits() = %d, want %d", c, c.MinorUnits(), wantUnits)
		}
		if z := c.Zero(); z.String() != wantZero || !z.IsZero() {
			t.Errorf("%s.Zero() = %q, want %q", c, z.String(), wantZero)
		}
	}
	for _, s := range []string{"", "usd", "Usd", "XXX", "EURO", "US", " USD", "USD ", "BTC", "GBp"} {
		got, err := ParseCurrency(s)
		if err == nil {
			t.Errorf("ParseCurrency(%q) = %q, want an error", s, got)
			continue
		}
		e := requireValidation(t, "ParseCurrency("+s+")", err)
		if !strings.Contains(e.Message, "ISO 4217") {
			t.Errorf("ParseCurrency(%q) message %q does not say it must be an ISO code", s, e.Message)
		}
		if Currency(s).Valid() {
			t.Errorf("Currency(%q).Valid() = true", s)
		}
	}
}

func TestCurrencyJSON(t *testing.T) {
	t.Parallel()
	var v struct {
		Currency Currency `json:"currency"`
	}
	if err := json.Unmarshal([]byte(`{"currency":"JPY"}`), &v); err != nil || v.Currency != CurrencyJPY {
		t.Errorf("Unmarshal JPY = %q, %v", v.Currency, err)
	}
	b, err := json.Marshal(v)
	if err != nil || string(b) != `{"currency":"JPY"}` {
		t.Errorf("Marshal = %s, %v", b, err)
	}
	for _, body := range []string{`"jpy"`, `"XXX"`, `""`, `1`, `null`, `true`, `{}`, `["USD"]`} {
		v.Currency = CurrencyEUR
		err := json.Unmarshal([]byte(`{"currency":`+body+`}`), &v)
		if err == nil {
			t.Errorf("Unmarshal(%s) = %q, want an error", body, v.Currency)
			continue
		}
		requireValidation(t, "Unmarshal currency "+body, err)
		if v.Currency != CurrencyEUR {
			t.Errorf("failed Unmarshal(%s) changed the currency to %q", body, v.Currency)
		}
	}
}

// TestDecimalConcurrentUse shares values between goroutines; with -race it
// checks that no method writes to its receiver or operands.
func TestDecimalConcurrentUse(t *testing.T) {
	t.Parallel()
	a := MustDecimal("12345678901234567890.123456789012")
	b := MustDecimal("0.335")
	done := make(chan string)
	for range 8 {
		go func() {
			s := a.Mul(b).Add(a).Sub(b).Round(2, RoundHalfEven).String()
			q, _ := a.Quo(b)
			_ = q.RoundUp().Floor().Canonical()
			_, _ = a.Int64()
			_ = a.Abs().Neg().IsInteger()
			done <- s
		}()
	}
	first := <-done
	for range 7 {
		if s := <-done; s != first {
			t.Errorf("concurrent results differ: %s vs %s", s, first)
		}
	}
}
