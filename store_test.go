package billing_test

import (
	"fmt"
	"testing"

	"github.com/billingd/billing"
)

// TestRangeBoundsAgreeWithContains checks the one scan-bounds rule the
// backends seek by: a key lies in [lower, upper) exactly when the range
// contains it, for every key of up to three bytes over a small alphabet
// (with 0x00 and 0xff, where PrefixEnd carries or has no end) and ranges
// mixing a prefix with a start and an end on either side of it.
func TestRangeBoundsAgreeWithContains(t *testing.T) {
	t.Parallel()
	alphabet := []byte{0x00, 'a', 'b', 0xff}
	keys := [][]byte{{}}
	for n := 0; n < 3; n++ {
		for _, k := range keys {
			if len(k) == n {
				for _, c := range alphabet {
					keys = append(keys, append(append([]byte(nil), k...), c))
				}
			}
		}
	}
	ranges := []billing.Range{
		{},
		{Prefix: []byte("a")},
		{Prefix: []byte{0xff}},
		{Prefix: []byte{0xff, 0xff}},
		{Prefix: []byte{'a', 0xff}},
		{Start: []byte("ab")},
		{End: []byte("b")},
		{Prefix: []byte("a"), Start: []byte{0x00}}, // start before the prefix
		{Prefix: []byte("a"), Start: []byte("ab")}, // start inside it
		{Prefix: []byte("a"), End: []byte("c")},    // end after the prefix's end
		{Prefix: []byte("a"), End: []byte("ab")},   // end inside it
		{Prefix: []byte("a"), Start: []byte("b")},  // empty: start after it
		{Prefix: []byte{0xff}, Start: []byte{0xff, 'a'}, End: []byte{0xff, 0xff}},
	}
	for _, r := range ranges {
		lower, upper := r.Bounds()
		for _, k := range keys {
			in := string(k) >= string(lower) && (upper == nil || string(k) < string(upper))
			if in != r.Contains(k) {
				t.Errorf("%s: key %x: within bounds [%x, %x) = %v, Contains = %v",
					fmt.Sprintf("%+v", r), k, lower, upper, in, r.Contains(k))
			}
		}
	}
}
