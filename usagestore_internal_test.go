package billing

import (
	"testing"

	"github.com/google/uuid"
)

// TestEventIDEncoding checks the stored form of event ids against uuid's
// own parsing: 16 bytes for a canonical UUID, the text for anything else.
func TestEventIDEncoding(t *testing.T) {
	for range 1000 {
		id := newUUIDv7()
		u := uuid.MustParse(id)
		got := encodeEventID(id)
		if string(got) != string(append([]byte{idKindUUID}, u[:]...)) {
			t.Fatalf("%s: %x", id, got)
		}
		if back, err := decodeEventID(got); err != nil || back != id {
			t.Fatalf("%s decodes to %q, %v", id, back, err)
		}
	}
	for _, id := range []string{"x", "", "0B7E4A3C-9F1D-4C55-8A52-0D1E2F3A4B5C", "{0b7e4a3c-9f1d-4c55-8a52-0d1e2f3a4b5c}",
		"0b7e4a3c9f1d4c558a520d1e2f3a4b5c", "0b7e4a3c-9f1d-4c55-8a52-0d1e2f3a4b5g", "0b7e4a3c-9f1d-4c55-8a52_0d1e2f3a4b5c",
		"urn:uuid:0b7e4a3c-9f1d-4c55-8a52-0d1e2f3a4b5c"} {
		if got := encodeEventID(id); string(got) != string(append([]byte{idKindText}, id...)) {
			t.Errorf("%q: %x", id, got)
		}
	}
}
