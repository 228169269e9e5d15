package billing

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/uuid"

	"github.com/billingd/billing/internal/eventcodec"
	"github.com/billingd/billing/internal/uuidseq"
)

// idRecordCase is a list of id index entries, sorted by id, as flush
// writes them: a UUID each (kind byte and 16 bytes), with locations.
func idRecordCase(ids [][]byte, loc func(i int) []byte) []idEntry {
	entries := make([]idEntry, len(ids))
	for i, id := range ids {
		entries[i] = idEntry{id: append([]byte{eventcodec.IDKindUUID}, id...), loc: loc(i)}
	}
	slices.SortFunc(entries, func(a, b idEntry) int { return bytes.Compare(a.id, b.id) })
	return entries
}

// location returns a series no | timestamp location.
func location(series uint32, ts uint64) []byte {
	return binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint32(nil, series), ts)
}

// batchIDs returns the 16 bytes of each of n ids of one batch (uuidseq).
func batchIDs(n int) [][]byte {
	_, raw := uuidseq.V7s(n)
	ids := make([][]byte, n)
	for i := range ids {
		ids[i] = raw[16*i : 16*i+16]
	}
	return ids
}

// checkIDRecord encodes entries as a record and reads it back through
// eachIndexEntry (both ways) and decodeIDBlock, which must give entries
// back exactly; it returns the record's value.
func checkIDRecord(t *testing.T, entries []idEntry) []byte {
	t.Helper()
	checkIDRecordReads(t, entries, appendIDRecord(nil, entries, false))
	v := appendIDRecord(nil, entries, true)
	checkIDRecordReads(t, entries, v)
	return v
}

// checkIDRecordReads checks that the record value v reads back as entries.
func checkIDRecordReads(t *testing.T, entries []idEntry, v []byte) {
	t.Helper()
	suffix := entries[0].id
	for _, desc := range []bool{false, true} {
		var got []idEntry
		err := eachIndexEntry(suffix, v, desc, func(id, loc, pos []byte) error {
			want := suffix // the first entry's position: the key's
			if !bytes.Equal(id, suffix) {
				want = append(slices.Clip(suffix), id[1:]...)
			}
			if !bytes.Equal(pos, want) {
				t.Errorf("entry %x: position %x, want %x", id, pos, want)
			}
			got = append(got, idEntry{id: bytes.Clone(id), loc: bytes.Clone(loc)})
			return nil
		})
		if err != nil {
			t.Fatalf("%d entries, %d bytes: %v", len(entries), len(v), err)
		}
		if desc {
			slices.Reverse(got)
		}
		if !slices.EqualFunc(got, entries, func(a, b idEntry) bool { return bytes.Equal(a.id, b.id) && bytes.Equal(a.loc, b.loc) }) {
			t.Fatalf("%d entries (desc %v) read back as %d, or not the same:\n%x\nwant\n%x", len(entries), desc, len(got), got, entries)
		}
	}
	b, err := decodeIDBlock(append([]byte("acct"), suffix...), v, 4)
	if err != nil || len(b.entries) != len(entries) {
		t.Fatalf("decodeIDBlock: %v", err)
	}
}

// TestCompactIDRecord checks the compact layout of the id index's records:
// entries read back as written whatever their ids, series and timestamps,
// a batch's entries take a few bytes each, and no compact record has the
// length of a record in the fixed layout.
func TestCompactIDRecord(t *testing.T) {
	t.Parallel()
	// A batch: consecutive ids, one series, a second apart.
	batch := idRecordCase(batchIDs(1000), func(i int) []byte { return location(7, 1<<63+1_720_000_000+uint64(i)) })
	if v := checkIDRecord(t, batch); len(v) > 12+1+3*999 {
		t.Errorf("a batch of 1,000 takes %d bytes, want at most %d", len(v), 12+1+3*999)
	}
	// Ids of one millisecond that differ in their first 8 bytes (google/uuid's
	// own v7s), series changing, timestamps back and forth, at the extremes.
	rng := rand.New(rand.NewPCG(1, 2))
	var ids [][]byte
	for range 300 {
		u, err := uuid.NewV7()
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, u[:])
	}
	extremes := []uint64{0, 1, math.MaxUint64, 1 << 63, math.MaxUint64 - 1}
	checkIDRecord(t, idRecordCase(ids, func(i int) []byte {
		if i < len(extremes) {
			return location(uint32(i%2+1), extremes[i])
		}
		return location(uint32(rng.IntN(3)+1), rng.Uint64())
	}))
	// A superseded first entry (deadLoc), and large steps between ids.
	big := idRecordCase(batchIDs(50), func(i int) []byte { return location(3, uint64(i)) })
	big[0].loc = deadLoc
	for i := range big[1:] {
		binary.BigEndian.PutUint64(big[1+i].id[9:], binary.BigEndian.Uint64(big[0].id[9:])+uint64(i+1)<<40)
	}
	checkIDRecord(t, big)
	// Ten entries of 3 bytes after the version byte: 28 bytes, padded.
	ten := idRecordCase(batchIDs(10), func(i int) []byte { return location(1, uint64(100+i)) })
	if v := checkIDRecord(t, ten); len(v) != 12+28+1 || v[len(v)-1] != 0 {
		t.Errorf("ten entries: %d bytes ending in %x, want %d ending in a 0", len(v), v[len(v)-1], 12+28+1)
	}
	for n := 2; n < 60; n++ {
		if v := checkIDRecord(t, idRecordCase(batchIDs(n), func(i int) []byte { return location(1, uint64(i*i*1000)) })); (len(v)-12)%idEntrySize == 0 {
			t.Errorf("%d entries: %d bytes, the length of a fixed record", n, len(v))
		}
	}
}

// FuzzFixedIDRecord feeds fixedIDRecord arbitrary records: it must never
// panic, and what it accepts it returns in the fixed layout, which reads
// back the same once written compactly again.
func FuzzFixedIDRecord(f *testing.F) {
	entries := idRecordCase(batchIDs(20), func(i int) []byte { return location(uint32(1+i%2), uint64(1000-i*7)) })
	f.Add(entries[0].id, appendIDRecord(nil, entries, true))
	f.Add(entries[0].id, appendIDRecord(nil, entries[:10], true))
	f.Add(entries[0].id, []byte("0123456789ab\x01\x83\x01"))
	f.Add([]byte("x"), []byte("0123456789ab"))
	f.Fuzz(func(t *testing.T, suffix, v []byte) {
		fixed, err := fixedIDRecord(nil, suffix, v)
		if err != nil {
			return
		}
		if len(fixed) < 12 || (len(fixed)-12)%idEntrySize != 0 {
			t.Fatalf("%x: %d bytes, not the fixed layout", v, len(fixed))
		}
		if len(fixed) == 12 {
			return
		}
		var again []idEntry
		err = eachIndexEntry(suffix, fixed, false, func(id, loc, _ []byte) error {
			again = append(again, idEntry{id: bytes.Clone(id), loc: bytes.Clone(loc)})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		back, err := fixedIDRecord(nil, suffix, appendIDRecord(nil, again, true))
		if err != nil || !bytes.Equal(back, fixed) {
			t.Fatalf("%x: written compactly again and read back as %x (%v), want %x", v, back, err, fixed)
		}
	})
}
