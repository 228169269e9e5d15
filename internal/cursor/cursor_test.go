package cursor

import (
	"bytes"
	"testing"
)

// TestCodecRoundTripAndTamper: a cursor decodes to what was encoded, and
// is refused under another key or with any character changed.
func TestCodecRoundTripAndTamper(t *testing.T) {
	t.Parallel()
	c := NewCodec([]byte("key-1"))
	in := Cursor{List: "usage_metrics\x00desc\x00", After: true, Inclusive: true, Key: []byte{0, 1, 0xff}}
	s := c.Encode(in)
	out, ok := c.Decode(s)
	if !ok || out.List != in.List || out.After != in.After || out.Inclusive != in.Inclusive || !bytes.Equal(out.Key, in.Key) {
		t.Fatalf("Decode(Encode(%+v)) = %+v, %v", in, out, ok)
	}
	if _, ok := NewCodec([]byte("key-2")).Decode(s); ok {
		t.Fatal("a cursor signed with another key was accepted")
	}
	for i := range len(s) {
		b := []byte(s)
		b[i] ^= 1
		if _, ok := c.Decode(string(b)); ok {
			t.Fatalf("a cursor changed at %d was accepted", i)
		}
	}
}
