package eventcodec

import (
	"encoding/binary"
	"math"
	"testing"
)

// TestSmallNumberValue checks the stored form of a number that fits an
// int64, written in place: a tag, a one-byte length and two zig-zag
// varints, byte for byte what AppendString of the two varints writes, and
// read back by SmallNumber.
func TestSmallNumberValue(t *testing.T) {
	for _, c := range []int64{0, 1, -1, 63, -64, 64, 1234, -1234, 1 << 40, math.MaxInt64, math.MinInt64} {
		for _, e := range []int64{0, -2, 2, -100, 100, math.MinInt64, math.MaxInt64} {
			payload := binary.AppendVarint(binary.AppendVarint(nil, c), e)
			want := AppendString([]byte{'x', TagSmall}, string(payload))
			got := AppendSmallNumberValue([]byte{'x'}, c, e)
			if string(got) != string(want) {
				t.Fatalf("AppendSmallNumberValue(%d, %d) = %x, want %x", c, e, got, want)
			}
			if gc, ge := SmallNumber(got[3:]); gc != c || ge != e {
				t.Fatalf("SmallNumber read %d, %d back, want %d, %d", gc, ge, c, e)
			}
		}
	}
}
