package billing

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
)

// The alias index's tail: usage_alias_ids written late on a store with one
// writer at a time.
//
// Written in the ingestion's transaction, the alias index cost a bbolt
// group commit of 64 single events about 75 pages more (168 instead of 94,
// BENCHMARKS.md): each event's alias record lands in its customer's part
// of the table, one page per customer, each rewritten at the commit. So on
// a store with one writer at a time (bbolt, memstore: !concurrentWriters)
// the newest records of usage_event_ids get no alias records at first.
// One record of usage_alias_ids per account, under account no | 0x00 (no
// alias is empty), is its tail mark: a uvarint of how many entries the
// tail has had since it was last indexed, then the watermark, a key
// suffix of usage_event_ids. The records of usage_event_ids below the
// watermark have their alias records; those from it on (the tail) have
// none, and a list of one alias reads them from usage_event_ids, keeping
// the alias's entries (listQuery.tail): both give the account list's
// positions, so the two parts of the list follow each other without
// overlap, and a cursor means the same whichever part it points into,
// whenever the watermark moves. An account without a mark has no tail.
//
// The ingestion that takes the tail past Service.aliasTailEntries entries
// writes the alias records of all of it (what backfillAliases writes for
// a record) and moves the watermark past the last record: one commit in
// many writes the alias pages, with many entries each, instead of every
// commit a few. A list of one alias reads at most that many entries of
// other aliases: a page costs the page and a bounded tail, whatever the
// account holds. A record written below the watermark (an id older than
// the newest, from Config.NewID or a clock set back) gets its alias
// records at once, as does every record on a store with concurrent
// writers (PostgreSQL), which keeps no mark: there a mark would be a row
// every ingestion rewrites. A supersede deletes an entry from its alias
// record only below the watermark; above it there is none.

// aliasTailEntries is the default of Service.aliasTailEntries: a tail of
// about 4,096 entries is indexed in one write.
const aliasTailEntries = 4096

// aliasTail is the tail mark of an account's usage_alias_ids. ok is false
// when the account has none: every record is indexed.
type aliasTail struct {
	ok bool
	// from is the watermark: the records of usage_event_ids whose key
	// suffix is below it are indexed.
	from []byte
	// entries is how many entries the tail has had since it was indexed
	// (supersedes in it are not subtracted).
	entries uint64
	// changed is whether the run changed the mark (keepAliasTail).
	changed bool
}

// errMalformedAliasTail is the error of a tail mark that does not decode.
var errMalformedAliasTail = errors.New("billing: malformed usage alias index mark")

// aliasTailKey is the key of account no acct's tail mark: the prefix of
// the empty alias's records, which no event has.
func aliasTailKey(acct []byte) []byte { return aliasPrefix(acct, "") }

// readAliasTail returns the tail mark of account no acct on a store with
// one writer at a time; a store with concurrent writers keeps none.
func readAliasTail(ctx context.Context, tx Tx, acct []byte) (aliasTail, error) {
	if concurrentWriters(tx) {
		return aliasTail{}, nil
	}
	v, err := tx.Get(ctx, tableUsageAliasIDs, aliasTailKey(acct))
	if errors.Is(err, ErrNotFound) {
		return aliasTail{}, nil
	}
	if err != nil {
		return aliasTail{}, err
	}
	n, size := binary.Uvarint(v)
	if size <= 0 {
		return aliasTail{}, errMalformedAliasTail
	}
	return aliasTail{ok: true, from: bytes.Clone(v[size:]), entries: n}, nil
}

// indexed reports whether the usage_event_ids record with key suffix
// suffix has its alias records (is below the watermark).
func (t *aliasTail) indexed(suffix []byte) bool {
	return !t.ok || bytes.Compare(suffix, t.from) < 0
}

// loadAliasTail reads the account's tail mark into x.tail before flush
// writes the run's records. An account without one on a store with one
// writer at a time starts its tail after its last record, when the run
// adds records.
func (x *idIndex) loadAliasTail(ctx context.Context, tx Tx) error {
	t, err := readAliasTail(ctx, tx, x.acct)
	if err != nil || t.ok || concurrentWriters(tx) || len(x.added) == 0 {
		x.tail = t
		return err
	}
	last, err := lastIDRecord(ctx, tx, x.acct)
	x.tail = aliasTail{ok: true, from: afterKey(last), changed: true}
	return err
}

// lastIDRecord returns the key suffix of account no acct's last record of
// usage_event_ids, nil when it has none.
func lastIDRecord(ctx context.Context, tx Tx, acct []byte) ([]byte, error) {
	var last []byte
	r := Range{Prefix: acct, Reverse: true, Expect: 1}
	err := tx.Scan(ctx, tableUsageEventIDs, r, func(k, _ []byte) error {
		last = bytes.Clone(k[len(acct):])
		return ErrStopScan
	})
	if errors.Is(err, ErrStopScan) {
		err = nil
	}
	return last, err
}

// afterKey is the smallest key after k (k followed by a 0 byte); for nil
// (no record), the empty key, below every key.
func afterKey(k []byte) []byte {
	if k == nil {
		return []byte{}
	}
	return append(bytes.Clone(k), 0)
}

// keepAliasTail counts the run's entries written to the tail (n) and
// writes the mark when it changed; once the tail has more than limit
// entries, it writes their alias records and moves the watermark past
// them (indexAliasTail).
func (x *idIndex) keepAliasTail(ctx context.Context, tx Tx, n, limit int) error {
	if !x.tail.ok {
		return nil
	}
	if n > 0 {
		x.tail.entries += uint64(n)
		x.tail.changed = true
	}
	if x.tail.entries > uint64(limit) {
		if err := x.indexAliasTail(ctx, tx); err != nil {
			return err
		}
	}
	if !x.tail.changed {
		return nil
	}
	v := append(binary.AppendUvarint(nil, x.tail.entries), x.tail.from...)
	return tx.Put(ctx, tableUsageAliasIDs, aliasTailKey(x.acct), v)
}

// indexAliasTail writes the alias records of every record of the tail and
// moves the watermark past the last of them.
func (x *idIndex) indexAliasTail(ctx context.Context, tx Tx) error {
	var recs [][2][]byte
	r := Range{Prefix: x.acct, Start: append(bytes.Clone(x.acct), x.tail.from...)}
	err := tx.Scan(ctx, tableUsageEventIDs, r, func(k, v []byte) error {
		recs = append(recs, [2][]byte{bytes.Clone(k), bytes.Clone(v)})
		return nil
	})
	if err != nil {
		return err
	}
	aliases := map[string]string{}
	for _, rec := range recs {
		if err := backfillAliases(ctx, tx, rec[0], rec[1], aliases); err != nil {
			return err
		}
	}
	if len(recs) > 0 {
		x.tail.from = afterKey(recs[len(recs)-1][0][len(x.acct):])
	}
	x.tail.entries, x.tail.changed = 0, true
	return nil
}

// aliasList makes q a list of one alias's events (f.CustomerAlias): it
// reads the alias's index (aliasScan), and the account's tail
// (usage_event_ids from the watermark on, keeping the alias's entries)
// when the account has one.
func aliasList(ctx context.Context, tx Tx, q *listQuery[usageEventRef], acct []byte, f *UsageEventFilter, names seriesNames) error {
	q.scanTable, q.scanPrefix, q.expand = aliasScan(ctx, tx, acct, f, names)
	t, err := readAliasTail(ctx, tx, acct)
	if err != nil || !t.ok {
		return err
	}
	q.tail = &listSource[usageEventRef]{table: tableUsageEventIDs, prefix: acct, expand: accountScan(ctx, tx, acct, f, names), from: t.from}
	return nil
}
