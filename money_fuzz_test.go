package billing

import (
	"errors"
	"strings"
	"testing"
)

// FuzzParseDecimal checks the properties the wire relies on: parsing never
// panics, an accepted value prints in a form that parses back to the same
// value and the same text, and Canonical has neither an exponent nor
// trailing fractional zeros. ParseDecimalNumber is exercised on the same
// input for panics and canonical form.
func FuzzParseDecimal(f *testing.F) {
	for _, s := range []string{
		"12.50", "0", "-0", "-0.00", "007.50", "-3.50", "0.2",
		"99999999999999999999.999999999999", "000000000000000000000000001",
		"", "1e3", ".5", "1.", "+1", "NaN", "١٢", "1,5", "--1",
		"123456789012345678901", "0.1234567890123", "1.50E-2", "1e999999",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if d, err := ParseDecimalNumber(s); err == nil {
			checkCanonical(t, s, d)
		}
		d, err := ParseDecimal(s)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Code != CodeValidationFailed {
				t.Fatalf("ParseDecimal(%q): error %v is not validation_failed", s, err)
			}
			return
		}
		str := d.String()
		back, err := ParseDecimal(str)
		if err != nil {
			t.Fatalf("ParseDecimal(%q).String() = %q does not parse: %v", s, str, err)
		}
		if back.Cmp(d) != 0 || back.String() != str {
			t.Fatalf("ParseDecimal(%q): %q parses back to %q", s, str, back.String())
		}
		if strings.HasPrefix(str, "-") && d.IsZero() {
			t.Fatalf("ParseDecimal(%q).String() = %q: negative zero", s, str)
		}
		checkCanonical(t, s, d)
		c, err := ParseDecimal(d.Canonical())
		if err != nil || c.Cmp(d) != 0 {
			t.Fatalf("ParseDecimal(%q).Canonical() = %q does not parse back to the value: %v", s, d.Canonical(), err)
		}
	})
}

func checkCanonical(t *testing.T, in string, d Decimal) {
	t.Helper()
	c := d.Canonical()
	if strings.ContainsAny(c, "eE+") {
		t.Fatalf("Canonical of %q = %q has an exponent or '+'", in, c)
	}
	if strings.Contains(c, ".") && (strings.HasSuffix(c, "0") || strings.HasSuffix(c, ".")) {
		t.Fatalf("Canonical of %q = %q has a trailing fractional zero", in, c)
	}
	if c == "-0" || (strings.HasPrefix(c, "0") && len(c) > 1 && c[1] != '.') {
		t.Fatalf("Canonical of %q = %q is not reduced", in, c)
	}
}
