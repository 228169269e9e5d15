package uuidseq

import (
	"testing"

	"github.com/google/uuid"
)

// TestV7s checks the ids of batches: valid UUIDv7s, one millisecond
// per batch, strictly ascending within a batch and from one batch to the
// next (the counter carries into a higher byte every 256 ids), all distinct.
func TestV7s(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	last := ""
	for _, n := range []int{1, 1000, 257, 1000} {
		ids, raw := V7s(n)
		if len(ids) != n || len(raw) != 16*n {
			t.Fatalf("%d ids and %d bytes for %d", len(ids), len(raw), n)
		}
		for i, id := range ids {
			u, err := uuid.Parse(id)
			if err != nil || u.Version() != 7 || u.Variant() != uuid.RFC4122 || u.String() != id {
				t.Fatalf("%q is not a canonical UUIDv7 (%v)", id, err)
			}
			if string(u[:]) != string(raw[16*i:16*i+16]) {
				t.Fatalf("id %d, %q: its bytes are given as %x", i, id, raw[16*i:16*i+16])
			}
			if id[:13] != ids[0][:13] {
				t.Errorf("%q and %q: a batch spans milliseconds", ids[0], id)
			}
			if id <= last || seen[id] {
				t.Fatalf("id %d of a batch of %d, %q, is not after %q", i, n, id, last)
			}
			seen[id], last = true, id
		}
	}
	if ids, raw := V7s(0); ids != nil || raw != nil {
		t.Error("ids for an empty batch")
	}
}
