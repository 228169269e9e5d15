package billing

import (
	"encoding/json"
	"testing"
)

// benchRollup is an hour of the reference event (P7): two numeric
// properties.
func benchRollup() *usageRollup {
	r := &usageRollup{}
	for i := range 1000 {
		v := appendEvent(nil, "", EventProperties{
			"requests": NumberProperty(DecimalFromInt(int64(i % 97))),
			"amount":   NumberProperty(MustDecimal("12.34")),
			"region":   StringProperty("region-001"),
		})
		k := append([]byte{0, 0, 0, 1, 0x80, 0, 0, 0, 0x66, 0x81, 0xf1, byte(i)}, 1, byte(i))
		r.add(k, v)
	}
	return r
}

// BenchmarkRollupCodec compares the ingestion's work on one rollup (decode
// the stored record, encode the new one) in JSON and in the binary form:
//
//	go test -run '^$' -bench RollupCodec .
func BenchmarkRollupCodec(b *testing.B) {
	r := benchRollup()
	b.Run("json", func(b *testing.B) {
		v, _ := json.Marshal(r)
		for b.Loop() {
			var d usageRollup
			if err := json.Unmarshal(v, &d); err != nil {
				b.Fatal(err)
			}
			if _, err := json.Marshal(&d); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("binary", func(b *testing.B) {
		v := r.encode()
		for b.Loop() {
			var d usageRollup
			if err := decodeRollup(v, &d); err != nil {
				b.Fatal(err)
			}
			_ = d.encode()
		}
	})
}

// TestRollupCodecRoundTrip: the binary form reads back what was written,
// JSON records written before still read, and readRollup finds one
// property.
func TestRollupCodecRoundTrip(t *testing.T) {
	r := benchRollup()
	r.Props["big"] = &rollupProp{N: 1, Sum: MustDecimal("12345678901234567890.000000000001"), Min: MustDecimal("-0.00"),
		Max: MustDecimal("1.50"), MinKey: []byte{1}, MaxKey: []byte{2}}
	j, _ := json.Marshal(r)
	for _, v := range [][]byte{r.encode(), j} {
		var d usageRollup
		if err := decodeRollup(v, &d); err != nil {
			t.Fatal(err)
		}
		a, _ := json.Marshal(&d)
		if string(a) != string(j) {
			t.Errorf("decoded %s\nwant    %s", a, j)
		}
		var p rollupProp
		n, ok, err := readRollup(v, "big", &p)
		if err != nil || !ok || n != r.Events || p.Sum.d.String() != "12345678901234567890.000000000001" || p.Max.d.String() != "1.50" {
			t.Errorf("readRollup: %d %t %v %+v", n, ok, err, p)
		}
		if _, ok, err := readRollup(v, "region", &p); ok || err != nil {
			t.Errorf("readRollup of a string property: %t %v", ok, err)
		}
	}
	if err := decodeRollup([]byte{rollupBinaryForm, 5, 1, 9}, &usageRollup{}); err == nil {
		t.Error("a truncated rollup decodes")
	}
}
