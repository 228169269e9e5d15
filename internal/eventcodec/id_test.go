package eventcodec

import (
	"testing"

	"github.com/google/uuid"
)

// TestEventIDEncoding checks the stored form of event ids against uuid's
// own parsing: 16 bytes for a canonical UUID, the text for anything else.
func TestEventIDEncoding(t *testing.T) {
	for range 1000 {
		id := uuid.Must(uuid.NewV7()).String()
		u := uuid.MustParse(id)
		got := EncodeID(id)
		if string(got) != string(append([]byte{IDKindUUID}, u[:]...)) {
			t.Fatalf("%s: %x", id, got)
		}
		if back, err := DecodeID(got); err != nil || back != id {
			t.Fatalf("%s decodes to %q, %v", id, back, err)
		}
	}
	// Every one-byte change of a canonical UUID: a UUID exactly when uuid
	// parses it and writes it back the same.
	base := uuid.Must(uuid.NewV7()).String()
	for i := range len(base) {
		for _, c := range []byte("-09afgAF{}:_ \x00\xff") {
			id := base[:i] + string(c) + base[i+1:]
			u, err := uuid.Parse(id)
			want := append([]byte{IDKindText}, id...)
			if err == nil && u.String() == id {
				want = append([]byte{IDKindUUID}, u[:]...)
			}
			if got := EncodeID(id); string(got) != string(want) {
				t.Errorf("%q: %x, want %x", id, got, want)
			}
		}
	}
	for _, id := range []string{"x", "", "0B7E4A3C-9F1D-4C55-8A52-0D1E2F3A4B5C", "{0b7e4a3c-9f1d-4c55-8a52-0d1e2f3a4b5c}",
		"0b7e4a3c9f1d4c558a520d1e2f3a4b5c", "0b7e4a3c-9f1d-4c55-8a52-0d1e2f3a4b5g", "0b7e4a3c-9f1d-4c55-8a52_0d1e2f3a4b5c",
		"urn:uuid:0b7e4a3c-9f1d-4c55-8a52-0d1e2f3a4b5c"} {
		if got := EncodeID(id); string(got) != string(append([]byte{IDKindText}, id...)) {
			t.Errorf("%q: %x", id, got)
		}
	}
}
