package billing

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"slices"
	"sync"

	"github.com/billingd/billing/internal/eventcodec"
)

// idEntry is one event of the creation-order index: its stored id and its
// location, series no | timestamp (the start of its usage_events key); and
// for the events a run adds, their customer alias (usage_alias_ids).
type idEntry struct {
	id, loc []byte
	alias   string
}

// idBlock is a record of usage_event_ids that an ingestion changed: the
// key it is stored under and its entries as they are now, sorted by id
// (none: the record is to be deleted).
type idBlock struct {
	key     []byte
	entries []idEntry
}

// idSpot is where an event of the id index was found: entry i of block, or
// of the run's new entries when block is nil. loc is nil when it was not
// found.
type idSpot struct {
	block *idBlock
	i     int
	loc   []byte
}

// idIndex is one ingestion's view of usage_event_ids: the store as it was
// when the run started, the records the run changed (blocks, by the key
// they are stored under) and the events it added, so that a supersede
// finds what earlier events of the same run stored or deleted. flush
// writes it all at the end of the run, each changed record once.
type idIndex struct {
	acct  []byte
	added []idEntry // the run's events, in order; loc nil once deleted
	buf   []byte    // memory of the records flush writes
	// addedAt indexes added[:indexed] by id, filled only when a lookup
	// needs it (most batches never look up).
	addedAt map[string]int
	indexed int
	blocks  map[string]*idBlock
	// compact is whether records are written compactly: on a store no
	// other process shares (appendIDRecord).
	compact bool
	// aliasDrops are the run's deletions from records of usage_alias_ids
	// stored before it: the stored ids deleted, by the record's key
	// (usagealiasids.go).
	aliasDrops map[string][][]byte
	// tail is the account's tail mark of usage_alias_ids, read by flush,
	// and tailLimit the entries from which flush indexes the tail
	// (usagealiastail.go).
	tail      aliasTail
	tailLimit int
}

// find returns where the event with the stored id is.
func (x *idIndex) find(ctx context.Context, tx Tx, id []byte) (idSpot, error) {
	if x.addedAt == nil {
		x.addedAt = map[string]int{}
	}
	for ; x.indexed < len(x.added); x.indexed++ {
		x.addedAt[string(x.added[x.indexed].id)] = x.indexed
	}
	if i, ok := x.addedAt[string(id)]; ok {
		return idSpot{i: i, loc: x.added[i].loc}, nil
	}
	k := append(append(make([]byte, 0, len(x.acct)+len(id)+1), x.acct...), id...)
	// The records that can hold id: its own key, and for a UUID the keys
	// before it with the same millisecond.
	r := Range{Prefix: k, End: append(k[:len(k):len(k)], 0), Reverse: true}
	if id[0] == eventcodec.IDKindUUID {
		r.Prefix = k[:len(x.acct)+7]
	}
	var spot idSpot
	err := tx.Scan(ctx, tableUsageEventIDs, r, func(k, v []byte) error {
		b := x.blocks[string(k)]
		if b == nil {
			var err error
			if b, err = decodeIDBlock(k, v, len(x.acct)); err != nil {
				return err
			}
		}
		i, ok := slices.BinarySearchFunc(b.entries, id, func(e idEntry, id []byte) int { return bytes.Compare(e.id, id) })
		if !ok {
			return nil
		}
		if x.blocks == nil {
			x.blocks = map[string]*idBlock{}
		}
		x.blocks[string(b.key)] = b
		if !deadEntry(b.entries[i].loc) {
			spot = idSpot{block: b, i: i, loc: b.entries[i].loc}
		}
		return ErrStopScan
	})
	return spot, err
}

// drop deletes the entry at spot. A record's first entry, whose id is the
// record's key, stays as a dead entry (deadLoc) while others are live: a
// record is never stored under another key, since its key is the list
// position of that first entry and the prefix of the others' positions,
// which cursors already handed out point at.
func (x *idIndex) drop(spot idSpot) {
	switch {
	case spot.block == nil:
		x.added[spot.i].loc = nil
	case spot.i == 0:
		spot.block.entries[0].loc = deadLoc
	default:
		spot.block.entries = slices.Delete(spot.block.entries, spot.i, spot.i+1)
	}
}

// deadLoc is the location of a deleted first entry of a usage_event_ids
// record: series no 0, which is never handed out (counters start at 1).
var deadLoc = make([]byte, 12)

// deadEntry reports whether loc is deadLoc's: an entry to skip.
func deadEntry(loc []byte) bool { return loc[0]|loc[1]|loc[2]|loc[3] == 0 }

// decodeIDBlock copies the usage_event_ids record (k, v) into an idBlock;
// the account no is k's first n bytes.
func decodeIDBlock(k, v []byte, n int) (*idBlock, error) {
	v, err := fixedIDRecord(nil, k[n:], v)
	if err != nil {
		return nil, err
	}
	b := &idBlock{key: bytes.Clone(k)}
	buf := make([]byte, 0, (1+len(v)/idEntrySize)*(len(k)-n+12))
	err = eachIndexEntry(k[n:], v, false, func(id, loc, _ []byte) error {
		buf = append(buf, id...)
		id = buf[len(buf)-len(id):]
		buf = append(buf, loc...)
		b.entries = append(b.entries, idEntry{id: id, loc: buf[len(buf)-len(loc):]})
		return nil
	})
	return b, err
}

// idEntrySize is the size of an entry of a usage_event_ids record after
// its first in the fixed layout: a UUID's 16 bytes, series no and
// timestamp.
const idEntrySize = 16 + 12

// eachIndexEntry calls fn with every entry of the usage_event_ids record
// whose key suffix (after the account no) is suffix and whose value is v,
// in id order or reversed when desc: its stored id, its location (series
// no | timestamp) and its list position (suffix, then for all but the
// first entry the entry's 16 id bytes). The slices are valid only during
// the call.
func eachIndexEntry(suffix, v []byte, desc bool, fn func(id, loc, pos []byte) error) error {
	compact := compactIDLayout(v)
	buf := idRecordBuffers.Get().(*[]byte)
	defer idRecordBuffers.Put(buf)
	v, err := fixedIDRecord(*buf, suffix, v)
	if err != nil {
		return err
	}
	if compact && cap(v) <= maxPooledIDRecord {
		*buf = v[:0] // the decoded record's memory, for the next call
	}
	n := 1 + (len(v)-12)/idEntrySize
	var idBuf [17]byte
	idBuf[0] = eventcodec.IDKindUUID
	pos := make([]byte, 0, len(suffix)+16)
	for j := range n {
		i := j
		if desc {
			i = n - 1 - j
		}
		if i == 0 {
			if err := fn(suffix, v[:12], suffix); err != nil {
				return err
			}
			continue
		}
		e := v[12+(i-1)*idEntrySize:][:idEntrySize]
		copy(idBuf[1:], e[:16])
		pos = append(append(pos[:0], suffix...), e[:16]...)
		if err := fn(idBuf[:], e[16:], pos); err != nil {
			return err
		}
	}
	return nil
}

// flush writes the run's changes of usage_event_ids: each changed record
// once, under its own key (deleted when only its dead first entry is
// left), then one record per group of the run's remaining UUID ids that
// share a millisecond, and one per other id; and those of usage_alias_ids
// (each new record's entries by alias, the deletions from stored ones),
// but for the records of the alias index's tail (usagealiastail.go).
func (x *idIndex) flush(ctx context.Context, tx Tx) error {
	if err := x.loadAliasTail(ctx, tx); err != nil {
		return err
	}
	if err := x.flushAliasDrops(ctx, tx); err != nil {
		return err
	}
	keys := make([]string, 0, len(x.blocks))
	for k := range x.blocks {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		b := x.blocks[k]
		if len(b.entries) == 1 && deadEntry(b.entries[0].loc) {
			if err := tx.Delete(ctx, tableUsageEventIDs, b.key); err != nil {
				return err
			}
		} else if _, err := x.put(ctx, tx, nil, b.entries); err != nil {
			return err
		}
	}
	// The last use of added in this run: sorted in place.
	live := slices.DeleteFunc(x.added, func(e idEntry) bool { return e.loc == nil })
	if byID := func(a, b idEntry) int { return bytes.Compare(a.id, b.id) }; !slices.IsSortedFunc(live, byID) {
		slices.SortFunc(live, byID)
	}
	// One buffer for the new records (at most an id, a key and a location
	// per event: an entry after a record's first is smaller).
	size := 0
	for _, e := range live {
		size += len(x.acct) + len(e.id) + 12
	}
	buf := sized(x.buf, size)
	defer func() { x.buf = buf }()
	tail := 0 // entries written to the alias index's tail
	for len(live) > 0 {
		n := 1
		if id := live[0].id; id[0] == eventcodec.IDKindUUID {
			for n < len(live) && live[n].id[0] == eventcodec.IDKindUUID && bytes.Equal(live[n].id[1:7], id[1:7]) {
				n++
			}
		}
		var err error
		if buf, err = x.put(ctx, tx, buf, live[:n]); err != nil {
			return err
		}
		if !x.tail.indexed(live[0].id) {
			tail += n
		} else if buf, err = x.putAliases(ctx, tx, buf, live[0].id, live[:n]); err != nil {
			return err
		}
		live = live[n:]
	}
	return x.keepAliasTail(ctx, tx, tail, x.tailLimit)
}

// put writes the usage_event_ids record of entries (sorted by id; UUIDs of
// one millisecond when more than one), encoded at the end of buf (one
// buffer for all the records of a run's events), and returns buf with it.
func (x *idIndex) put(ctx context.Context, tx Tx, buf []byte, entries []idEntry) ([]byte, error) {
	start := len(buf)
	buf = append(append(buf, x.acct...), entries[0].id...)
	k := buf[start:len(buf):len(buf)]
	buf = appendIDRecord(buf, entries, x.compact)
	return buf, tx.Put(ctx, tableUsageEventIDs, k, buf[start+len(k):len(buf):len(buf)])
}

// The entries of a usage_event_ids record after its first were written in
// a fixed layout, 28 bytes each (the UUID's 16 bytes, series no,
// timestamp), until records were written compactly: a version byte
// (compactIDRecord), then each entry relative to the one before it (the
// first to the key's id and the value's first location), as a tag byte
// (entryTag with the flags below), the id (a uvarint of how much its last
// 8 bytes exceed the previous id's when its first 8 are the same, which
// they are for the ids of one batch: usually 1; else its 16 bytes), the
// series no unless it is the previous entry's, and the timestamp as a
// varint of its difference from the previous one. A batch's thousand
// entries take about 3 to 5 bytes each instead of 28, a few KB that fit
// in a page instead of eight pages to write and sync (BENCHMARKS.md,
// "A compact id index"). A compact record is never 12 plus a multiple of
// 28 bytes long (a trailing 0 byte is added when it would be), which is
// how readers tell the layouts apart: records written before are read as
// they are.
const (
	compactIDRecord = 1
	entryTag        = 0x80 // set in every tag byte: a 0 byte is the padding
	entryNextID     = 0x01 // the id is the previous one's plus a uvarint
	entrySameSeries = 0x02 // the series no is the previous entry's
)

// appendIDRecord appends the value of the usage_event_ids record of
// entries (sorted by id; UUIDs when more than one) to b: the first entry's
// location, then the others compactly, or in the fixed layout unless
// compact. Releases before the compact layout cannot read it: on a store
// that several billingd instances share, where one of an earlier release
// may run beside during a rolling upgrade, records are still written in the
// fixed layout (Config.LegacyUsageIDRecords).
func appendIDRecord(b []byte, entries []idEntry, compact bool) []byte {
	start := len(b)
	b = append(b, entries[0].loc...)
	if len(entries) == 1 {
		return b
	}
	if !compact {
		for _, e := range entries[1:] {
			b = append(append(b, e.id[1:]...), e.loc...)
		}
		return b
	}
	b = append(b, compactIDRecord)
	prev := entries[0]
	for _, e := range entries[1:] {
		tag := byte(entryTag)
		id, pid := e.id[1:17], prev.id[1:17]
		if bytes.Equal(id[:8], pid[:8]) {
			tag |= entryNextID
		}
		if bytes.Equal(e.loc[:4], prev.loc[:4]) {
			tag |= entrySameSeries
		}
		b = append(b, tag)
		if tag&entryNextID != 0 {
			b = binary.AppendUvarint(b, binary.BigEndian.Uint64(id[8:])-binary.BigEndian.Uint64(pid[8:]))
		} else {
			b = append(b, id...)
		}
		if tag&entrySameSeries == 0 {
			b = append(b, e.loc[:4]...)
		}
		b = binary.AppendVarint(b, int64(binary.BigEndian.Uint64(e.loc[4:])-binary.BigEndian.Uint64(prev.loc[4:])))
		prev = e
	}
	if !compactIDLayout(b[start:]) {
		b = append(b, 0) // not to be read as the fixed layout
	}
	return b
}

// compactIDLayout reports whether the usage_event_ids value v holds entries
// written compactly: a value of 12 plus a multiple of 28 bytes is in the
// fixed layout (12 alone: a single entry).
func compactIDLayout(v []byte) bool { return len(v) > 12 && (len(v)-12)%idEntrySize != 0 }

// errMalformedIDRecord is the error of a usage_event_ids record that is
// neither layout.
var errMalformedIDRecord = errors.New("billing: malformed usage event index record")

// idRecordBuffers holds the memory eachIndexEntry decodes compact records
// into: a list visits every record of the account to count its total, and
// a new buffer per record (28 KB for a batch of 1,000) nearly doubled what
// a page allocated. maxPooledIDRecord is the largest buffer kept.
var idRecordBuffers = sync.Pool{New: func() any { return new([]byte) }}

const maxPooledIDRecord = 1 << 20

// fixedIDRecord returns the usage_event_ids record v, whose key suffix
// (after the account no) is suffix, in the fixed layout: v itself when it
// is in that layout, else its compact entries decoded into dst's memory
// (or new memory when dst has too little room). A malformed record is an
// error.
func fixedIDRecord(dst, suffix, v []byte) ([]byte, error) {
	if len(v) < 12 || len(v) > 12 && (len(suffix) != 17 || suffix[0] != eventcodec.IDKindUUID) {
		return nil, errMalformedIDRecord
	}
	if !compactIDLayout(v) {
		return v, nil
	}
	if v[12] != compactIDRecord {
		return nil, errMalformedIDRecord
	}
	var id [16]byte
	var loc [12]byte
	copy(id[:], suffix[1:])
	copy(loc[:], v)
	out := dst[:0]
	if n := 12 + (len(v)-13)/3*idEntrySize; cap(out) < n { // an entry takes at least 3 bytes
		out = make([]byte, 0, n)
	}
	out = append(out, v[:12]...)
	for p := v[13:]; len(p) > 0; {
		tag := p[0]
		p = p[1:]
		if tag == 0 && len(p) == 0 {
			break // the padding
		}
		if tag&^(entryNextID|entrySameSeries) != entryTag {
			return nil, errMalformedIDRecord
		}
		if tag&entryNextID != 0 {
			d, n := binary.Uvarint(p)
			if n <= 0 {
				return nil, errMalformedIDRecord
			}
			binary.BigEndian.PutUint64(id[8:], binary.BigEndian.Uint64(id[8:])+d)
			p = p[n:]
		} else {
			if len(p) < 16 {
				return nil, errMalformedIDRecord
			}
			p = p[copy(id[:], p):]
		}
		if tag&entrySameSeries == 0 {
			if len(p) < 4 {
				return nil, errMalformedIDRecord
			}
			p = p[copy(loc[:4], p):]
		}
		d, n := binary.Varint(p)
		if n <= 0 {
			return nil, errMalformedIDRecord
		}
		binary.BigEndian.PutUint64(loc[4:], binary.BigEndian.Uint64(loc[4:])+uint64(d))
		p = p[n:]
		out = append(append(out, id[:]...), loc[:]...)
	}
	return out, nil
}
