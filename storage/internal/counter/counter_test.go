package counter

import (
	"bytes"
	"testing"
)

func TestNext(t *testing.T) {
	t.Parallel()
	n, stored, err := Next(nil, false)
	if err != nil || n != 1 || !bytes.Equal(stored, []byte{0, 0, 0, 0, 0, 0, 0, 1}) {
		t.Fatalf("first Next = %d, %x, %v; want 1, 0000000000000001", n, stored, err)
	}
	if n, stored, err = Next(stored, true); err != nil || n != 2 || !bytes.Equal(stored, []byte{0, 0, 0, 0, 0, 0, 0, 2}) {
		t.Errorf("Next after 1 = %d, %x, %v; want 2, 0000000000000002", n, stored, err)
	}
	for _, v := range [][]byte{nil, {}, []byte("abc"), make([]byte, 9)} {
		if _, _, err := Next(v, true); err == nil {
			t.Errorf("Next of a stored %d-byte value succeeded", len(v))
		}
	}
}
