package billing

import (
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/cockroachdb/apd/v3"
)

// FuzzParseDecimal checks the properties the wire relies on: parsing never
// panics, an accepted value prints in a form that parses back to the same
// value and the same text, and Canonical has neither an exponent nor
// trailing fractional zeros. ParseDecimalNumber is exercised on the same
// input: it accepts exactly the numbers of its grammar (but those beyond
// its limits) with apd's value for them, in canonical form; ParseDecimal
// accepts only plain decimals.
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
		checkNumberGrammar(t, s)
		d, err := ParseDecimal(s)
		if err == nil && !plainDecimal.MatchString(s) {
			t.Fatalf("ParseDecimal(%q) accepts what is not -?[0-9]+(\\.[0-9]+)?", s)
		}
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

// The grammars of ParseDecimal and ParseDecimalNumber, written as
// regular expressions: what the hand-written scanner must match.
var (
	plainDecimal = regexp.MustCompile(`^-?[0-9]+(\.[0-9]+)?$`)
	jsonNumber   = regexp.MustCompile(`^-?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?$`)
)

// checkNumberGrammar fails t unless ParseDecimalNumber accepts s exactly
// when it is a number of jsonNumber within the limits, with the value apd
// reads from it, in canonical form.
func checkNumberGrammar(t *testing.T, s string) {
	t.Helper()
	d, err := ParseDecimalNumber(s)
	if err != nil {
		if m := err.Error(); jsonNumber.MatchString(s) && !strings.Contains(m, "significant digits") && !strings.Contains(m, "out of range") {
			t.Fatalf("ParseDecimalNumber(%q) refuses a number: %v", s, err)
		}
		return
	}
	if !jsonNumber.MatchString(s) {
		t.Fatalf("ParseDecimalNumber(%q) = %v accepts what is not a JSON number", s, d)
	}
	if want, _, err := apd.NewFromString(s); err != nil || want.Cmp(&d.d) != 0 {
		t.Fatalf("ParseDecimalNumber(%q) = %v; apd reads %v (%v)", s, d, want, err)
	}
	checkCanonical(t, s, d)
}
