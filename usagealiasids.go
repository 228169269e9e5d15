package billing

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/billingd/billing/internal/eventcodec"
)

// The creation-order index of each customer alias (usage_alias_ids): what
// makes a page of GET /usage-events?customerAlias=... cost the page, not
// the account. The account's index (usage_event_ids, usageids.go) holds
// every event of the account; a page of one alias read there skipped every
// other alias's events, newest first (9,000,000 of them for the oldest
// customer of a 10,000,000-event account).
//
// Every record of usage_event_ids has one record here per alias among its
// entries: account no | alias | 0x00 | the usage_event_ids record's key
// suffix → that alias's entries of the record, in id order. So the alias's
// list visits its events in exactly the account list's order, and an
// entry's list position is the one the account list gives it (the record's
// key suffix, followed by the entry's 16 id bytes unless it is the
// record's first): a cursor means the same in both, and a cursor handed
// out before this index existed still finds its place. A record's value
// is a byte saying whether its first entry is the usage_event_ids
// record's first (0) or another, whose 16 UUID bytes follow (1), then the
// entries as appendIDRecord writes them (always compactly: no release
// without this index reads it). The ingestion writes them in its
// transaction, beside the account's records (idIndex.flush), except on a
// store with one writer at a time, where the newest records are indexed
// later, many at once (the tail, usagealiastail.go); a supersede deletes
// the event's entry (a record left empty is deleted: the key is the
// account record's, so no dead entry needs to stay). Stores written
// before the index get it built once, when a Service opens them
// (keepAliasIndex).

// aliasPrefix is the key prefix of alias's records of account no acct.
func aliasPrefix(acct []byte, alias string) []byte {
	b := make([]byte, 0, len(acct)+len(alias)+1)
	return append(append(append(b, acct...), alias...), keySep)
}

// putAliases writes the usage_alias_ids records of the usage_event_ids
// record with key suffix suffix and (live) entries, sorted by id, at the
// end of buf, and returns buf with them: one record per alias, its entries
// in id order.
func (x *idIndex) putAliases(ctx context.Context, tx Tx, buf, suffix []byte, entries []idEntry) ([]byte, error) {
	same := true
	for _, e := range entries[1:] {
		same = same && e.alias == entries[0].alias
	}
	if same { // a batch of one customer's events, or a single event
		return x.putAlias(ctx, tx, buf, entries[0].alias, suffix, entries)
	}
	byAlias := map[string][]idEntry{}
	var order []string
	for _, e := range entries {
		if _, ok := byAlias[e.alias]; !ok {
			order = append(order, e.alias)
		}
		byAlias[e.alias] = append(byAlias[e.alias], e)
	}
	slices.Sort(order)
	for _, alias := range order {
		var err error
		if buf, err = x.putAlias(ctx, tx, buf, alias, suffix, byAlias[alias]); err != nil {
			return nil, err
		}
	}
	return buf, nil
}

// putAlias writes alias's record of the usage_event_ids record whose key
// suffix is suffix: entries (sorted by id, at least one), at the end of
// buf.
func (x *idIndex) putAlias(ctx context.Context, tx Tx, buf []byte, alias string, suffix []byte, entries []idEntry) ([]byte, error) {
	start := len(buf)
	buf = append(append(append(append(buf, x.acct...), alias...), keySep), suffix...)
	k := buf[start:len(buf):len(buf)]
	buf = appendAliasRecord(buf, suffix, entries)
	return buf, tx.Put(ctx, tableUsageAliasIDs, k, buf[start+len(k):len(buf):len(buf)])
}

// appendAliasRecord appends the value of an alias's usage_alias_ids record
// of entries, under the usage_event_ids record with key suffix suffix.
func appendAliasRecord(b, suffix []byte, entries []idEntry) []byte {
	if bytes.Equal(entries[0].id, suffix) {
		b = append(b, 0)
	} else {
		b = append(append(b, 1), entries[0].id[1:]...)
	}
	return appendIDRecord(b, entries, true)
}

// eachAliasEntry calls fn with every entry of the usage_alias_ids record
// whose key suffix (after the alias and its separator) is suffix and
// whose value is v, in id order or reversed when desc: its stored id, its
// location and its list position (the account list's). The slices are
// valid only during the call.
func eachAliasEntry(suffix, v []byte, desc bool, fn func(id, loc, pos []byte) error) error {
	first := suffix
	switch {
	case len(v) > 0 && v[0] == 0:
		v = v[1:]
	case len(v) > 17 && v[0] == 1 && len(suffix) == 17 && suffix[0] == eventcodec.IDKindUUID:
		first = append([]byte{eventcodec.IDKindUUID}, v[1:17]...)
		v = v[17:]
	default:
		return errMalformedIDRecord
	}
	pos := make([]byte, 0, len(suffix)+16)
	return eachIndexEntry(first, v, desc, func(id, loc, _ []byte) error {
		pos = append(pos[:0], suffix...)
		if !bytes.Equal(id, suffix) {
			pos = append(pos, id[1:]...)
		}
		return fn(id, loc, pos)
	})
}

// dropAlias records that the event with stored id, of alias, found at spot
// of the account's index, is deleted: its entry leaves alias's record of
// that usage_event_ids record when the run ends (flushAliasDrops). An
// event the run itself added (spot.block nil) has no such record yet.
func (x *idIndex) dropAlias(alias string, spot idSpot, id []byte) {
	if spot.block == nil {
		return
	}
	if x.aliasDrops == nil {
		x.aliasDrops = map[string][][]byte{}
	}
	k := string(x.acct) + alias + string(rune(keySep)) + string(spot.block.key[len(x.acct):])
	x.aliasDrops[k] = append(x.aliasDrops[k], bytes.Clone(id))
}

// flushAliasDrops rewrites each usage_alias_ids record the run deleted
// entries of, without them, under its own key (deleted when none is left);
// a record of the tail has none to rewrite.
func (x *idIndex) flushAliasDrops(ctx context.Context, tx Tx) error {
	keys := make([]string, 0, len(x.aliasDrops))
	for k := range x.aliasDrops {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		sep := bytes.IndexByte([]byte(k[len(x.acct):]), keySep)
		suffix := []byte(k[len(x.acct)+sep+1:])
		if !x.tail.indexed(suffix) {
			continue // the tail's records have no alias records
		}
		v, err := tx.Get(ctx, tableUsageAliasIDs, []byte(k))
		if err != nil {
			return err // an entry of the account's index below the watermark has one here
		}
		var kept []idEntry
		err = eachAliasEntry(suffix, v, false, func(id, loc, _ []byte) error {
			if !slices.ContainsFunc(x.aliasDrops[k], func(d []byte) bool { return bytes.Equal(d, id) }) {
				kept = append(kept, idEntry{id: bytes.Clone(id), loc: bytes.Clone(loc)})
			}
			return nil
		})
		switch {
		case err != nil:
			return err
		case len(kept) == 0:
			err = tx.Delete(ctx, tableUsageAliasIDs, []byte(k))
		default:
			err = tx.Put(ctx, tableUsageAliasIDs, []byte(k), appendAliasRecord(nil, suffix, kept))
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// The meta marker usage_alias_ids says how complete usage_alias_ids is:
// aliasIndexVersion, every record indexed (as releases before the tail
// wrote it, "1"); aliasIndexTailVersion, every record but those of each
// account's tail (usagealiastail.go), what a store with one writer at a
// time keeps. A store written before the index has none, and New builds it
// from usage_event_ids, once. A store whose marker promises more than its
// writers keep needs nothing but the new marker (an index without tails
// on bbolt); one that promises less is built again: a bbolt file copied to
// PostgreSQL (billingd migrate-store), whose tails no PostgreSQL writer
// reads, and a store with tails opened by a release that indexed every
// record at once (which knows neither new marker).
const (
	aliasIndexVersion     = "2"
	aliasIndexTailVersion = "2+tail"
)

// keepAliasIndex builds usage_alias_ids when the store's marker does not
// say it is as complete as the store's writers keep it (buildOnce).
func (s *Service) keepAliasIndex(ctx context.Context) error {
	want := aliasIndexVersion
	err := s.store.View(ctx, func(tx Tx) error {
		if !concurrentWriters(tx) {
			want = aliasIndexTailVersion
		}
		return nil
	})
	if err != nil {
		return err
	}
	return s.buildOnce(ctx, []byte("usage_alias_ids"), want, func(ctx context.Context, tx Tx) error {
		v, err := tx.Get(ctx, tableMeta, []byte("usage_alias_ids"))
		if err != nil && !errors.Is(err, ErrNotFound) {
			return err
		}
		if err == nil && (string(v) == "1" || string(v) == aliasIndexVersion) {
			return nil // complete, without tails
		}
		return rebuildAliasIndex(ctx, tx)
	})
}

// rebuildAliasIndex replaces usage_alias_ids with the records of
// usage_event_ids stored, read a bounded number of records at a time: every
// record indexed, no tail marks.
func rebuildAliasIndex(ctx context.Context, tx Tx) error {
	if err := deleteRange(ctx, tx, tableUsageAliasIDs, Range{}, 0); err != nil {
		return err
	}
	aliases := map[string]string{} // series no → alias
	var from []byte
	for {
		recs, next, err := readIDRecords(ctx, tx, from, 4096)
		if err != nil {
			return err
		}
		for _, r := range recs {
			if err := backfillAliases(ctx, tx, r[0], r[1], aliases); err != nil {
				return err
			}
		}
		if next == nil {
			return nil
		}
		from = next
	}
}

// readIDRecords returns up to n records (key, value) of usage_event_ids
// from key from on (nil: the first), and the key to go on from (nil: no
// more).
func readIDRecords(ctx context.Context, tx Tx, from []byte, n int) (recs [][2][]byte, next []byte, err error) {
	err = tx.Scan(ctx, tableUsageEventIDs, Range{Start: from, Expect: n + 1}, func(k, v []byte) error {
		if len(recs) == n {
			next = bytes.Clone(k)
			return ErrStopScan
		}
		recs = append(recs, [2][]byte{bytes.Clone(k), bytes.Clone(v)})
		return nil
	})
	if errors.Is(err, ErrStopScan) {
		err = nil
	}
	return recs, next, err
}

// backfillAliases writes the usage_alias_ids records of the
// usage_event_ids record (k, v); aliases caches series no → alias.
func backfillAliases(ctx context.Context, tx Tx, k, v []byte, aliases map[string]string) error {
	const acctLen = 4
	x := idIndex{acct: k[:acctLen]}
	var entries []idEntry
	err := eachIndexEntry(k[acctLen:], v, false, func(id, loc, _ []byte) error {
		if deadEntry(loc) {
			return nil
		}
		alias, ok := aliases[string(loc[:4])]
		if !ok {
			name, err := seriesNameOf(ctx, tx, loc[:4])
			if err != nil {
				return err
			}
			alias, aliases[string(loc[:4])] = name.alias, name.alias
		}
		entries = append(entries, idEntry{id: bytes.Clone(id), loc: bytes.Clone(loc), alias: alias})
		return nil
	})
	if err != nil || len(entries) == 0 {
		return err
	}
	_, err = x.putAliases(ctx, tx, nil, k[acctLen:], entries)
	return err
}

// aliasFilterUsable reports whether alias can be a key part of
// usage_alias_ids: no alias stored holds a key separator (checkKey), so a
// filter holding one matches nothing.
func aliasFilterUsable(alias string) bool { return !strings.ContainsRune(alias, keySep) }
