package billing

import (
	"strings"
	"testing"

	"github.com/billingd/billing/internal/eventcodec"
	"github.com/cockroachdb/apd/v3"
)

func TestAppendCanonicalMatchesDecimal(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"0", "-0", "0.00", "1", "10", "1e3", "1.50", "-1.50", "0.001", "-0.0010", "123.456",
		"1e-5", "25e-1", "9223372036854775807", "-9223372036854775807", "100e-2", "7e20"} {
		d, err := ParseDecimalNumber(s)
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		enc := encodeEvent("", EventProperties{"n": NumberProperty(d)})
		p, ok := eventcodec.View(enc).Find("n")
		if !ok {
			t.Fatalf("%s: not found", s)
		}
		if got, want := string(appendRawText(nil, p)), d.Canonical(); got != want {
			t.Errorf("%s: rendered %q, want %q", s, got, want)
		}
		back, err := decodeProperty(p)
		if err != nil || back.num.Cmp(d) != 0 || back.num.String() != d.String() {
			t.Errorf("%s: decoded %v (%v)", s, back.num, err)
		}
	}
}

func TestAppendFoldMatchesEqualFold(t *testing.T) {
	t.Parallel()
	pairs := [][2]string{{"ABC", "abc"}, {"\u212Aelvin", "KELVIN"}, {"ſ", "S"}, {"Σσς", "σΣΣ"}, {"Straße", "STRASSE"}, {"éÉ", "Éé"}, {"ǅ", "ǆ"}}
	for _, p := range pairs {
		same := string(appendFold(nil, []byte(p[0]))) == string(appendFold(nil, []byte(p[1])))
		if same != strings.EqualFold(p[0], p[1]) {
			t.Errorf("%q vs %q: fold equal %v, EqualFold %v", p[0], p[1], same, !same)
		}
	}
	if got := string(appendFold(nil, []byte("EU-West"))); got != "eu-west" {
		t.Errorf("fold = %q, want lower case", got)
	}
}

func TestEventEncodingFind(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("k", 128)
	props := EventProperties{"a": BoolProperty(true), "b": StringProperty(strings.Repeat("x", 300)),
		long: StringProperty("v"), "z": NumberProperty(MustDecimal("-12.5"))}
	v := eventcodec.View(encodeEvent(strings.Repeat("c", 200), props))
	for name, want := range map[string]string{"a": "true", "b": strings.Repeat("x", 300), long: "v", "z": "-12.5"} {
		p, ok := v.Find(name)
		if !ok || string(appendRawText(nil, p)) != want {
			t.Errorf("find(%q) = %q, %v", name, appendRawText(nil, p), ok)
		}
	}
	if _, ok := v.Find("missing"); ok {
		t.Error("found a missing property")
	}
	if _, ok := eventcodec.View([]byte{eventcodec.V1, 0x80}).Find("a"); ok {
		t.Error("found a property in a truncated record")
	}
}

// TestSmallNumberRoundTrip checks the in-place varint decoding of stored
// numbers, one-byte and multi-byte, positive and negative.
func TestSmallNumberRoundTrip(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"0", "1", "-1", "63", "-64", "64", "49.99", "-3.50", "81.91", "-81.92", "8192", "-8193", "1.000000000000", "123456789012.345",
		"9223372036854775807", "-9223372036854775807", "0.000000000001", "99999999999999999999"} {
		v := eventcodec.View(encodeEvent("", EventProperties{"n": NumberProperty(MustDecimal(s))}))
		p, ok := v.Find("n")
		if !ok {
			t.Fatalf("%s: not found", s)
		}
		got, err := decodeProperty(p)
		if err != nil || got.num.String() != MustDecimal(s).String() {
			t.Errorf("%s: decoded %s, %v", s, got.num.String(), err)
		}
		var sum decimalSum
		if !sum.addProperty(p) || !sum.addProperty(p) || sum.total().String() != MustDecimal(s).Add(MustDecimal(s)).String() {
			t.Errorf("%s: sum of two = %s", s, sum.total().String())
		}
	}
}

// TestCheckPropertyASCIIPath checks checkProperty's one-pass path for
// ASCII names and values against the rules it stands for.
func TestCheckPropertyASCIIPath(t *testing.T) {
	t.Parallel()
	texts := []string{"", "a", "region", " ", "~", "\x7f", "a\x1fb", "\t", "é", "東京", "\xff", "a\xc3",
		strings.Repeat("k", 128), strings.Repeat("k", 129), strings.Repeat("é", 128), strings.Repeat("é", 129),
		strings.Repeat("v", 1024), strings.Repeat("v", 1025), strings.Repeat("é", 1024), strings.Repeat("é", 1025),
		strings.Repeat("\n", 1024), strings.Repeat("\n", 1025)}
	for _, k := range texts {
		for _, v := range texts {
			for _, pv := range []PropertyValue{StringProperty(v), BoolProperty(true), {}} {
				gn, gv := checkProperty(k, pv)
				wn, wv := checkPropertyRules(k, pv)
				if gn != wn || gv != wv {
					t.Fatalf("checkProperty(%.20q, %.20q) = %d, %d; the rules say %d, %d", k, v, gn, gv, wn, wv)
				}
			}
		}
	}
}

// TestDecimalDigitsSummedOrParsed: fromDigits sums a coefficient of up to
// 18 significant digits in a uint64 and parses longer ones as text; both
// give what apd reads from the same text (value, exponent, sign), through
// ParseDecimalNumber and, within its limits, ParseDecimal; and the usual
// event number does not allocate.
func TestDecimalDigitsSummedOrParsed(t *testing.T) { // not parallel: AllocsPerRun
	for _, s := range []string{"0", "-0", "0.00", "-0.00", "1", "-1", "12.34", "007.50", "-007.50", "1.0", "100",
		"0.000000000000000001", "123456789.123456789", "999999999999999999", "-999999999999999999",
		"9999999999999999999", "-9999999999999999999", "00000999999999999999999", "1234567890.1234567890",
		"99999999999999999999.999999999999", "0.000000000012", "1e3", "-1.50E-2", "0e5"} {
		want, _, err := apd.NewFromString(s)
		if err != nil {
			t.Fatal(err)
		}
		parsers := map[string]func(string) (Decimal, error){"ParseDecimalNumber": ParseDecimalNumber}
		if _, ip, fp, ok := splitDecimal(s); ok && len(strings.TrimLeft(ip, "0")) <= maxIntegerDigits && len(fp) <= maxFractionDigits {
			parsers["ParseDecimal"] = ParseDecimal // within its limits
		}
		for name, parse := range parsers {
			got, err := parse(s)
			if err != nil || got.d.Cmp(want) != 0 || got.d.Exponent != want.Exponent || got.d.Negative != (want.Negative && !want.IsZero()) {
				t.Errorf("%s(%q) = %v (exponent %d), %v; apd reads %v (exponent %d)", name, s, got, got.d.Exponent, err, want, want.Exponent)
			}
		}
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = ParseDecimalNumber("12.34") }); n != 0 {
		t.Errorf("ParseDecimalNumber(\"12.34\") allocates %v times", n)
	}
}
