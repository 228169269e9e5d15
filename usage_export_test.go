package billing

import (
	"bytes"
	"context"
	"errors"
	"fmt"
)

// CheckBatch exposes a batch's validation and record encoding (checkBatch:
// the work between decoding and the transaction) to the external
// benchmarks; it stores nothing and returns the validation error.
func (s *Service) CheckBatch(account string, p []UsageEventParams) error {
	var v validator
	ids, raw := s.newIDs(len(p))
	w := s.takeWrite()
	w.reset(account, make([]UsageEvent, len(p)), ids, raw)
	s.checkBatch(&v, w, ids, p)
	s.releaseWrite(w)
	return v.err()
}

// FixedIDRecord exposes fixedIDRecord: a usage_event_ids record (its key
// suffix after the account no, and its value) in the fixed layout of
// 28-byte entries, for the tests of records written in older layouts.
func FixedIDRecord(suffix, v []byte) ([]byte, error) { return fixedIDRecord(nil, suffix, v) }

// CheckAliasIndex reports the first difference between usage_alias_ids and
// what it must hold: for every record of usage_event_ids below its
// account's watermark (all of them without a tail mark,
// usagealiastail.go), one record per alias among its live entries,
// holding exactly those entries with the list positions the account's
// index gives them, and nothing else; and a tail mark counting at least
// the live entries of the tail.
func CheckAliasIndex(ctx context.Context, st Store) error {
	return st.View(ctx, func(tx Tx) error {
		want, err := wantAliasRecords(ctx, tx)
		if err != nil {
			return err
		}
		err = tx.Scan(ctx, tableUsageAliasIDs, Range{}, func(k, v []byte) error {
			if k[4] == keySep {
				return nil // a tail mark
			}
			suffix := k[4+bytes.IndexByte(k[4:], keySep)+1:]
			got := ""
			err := eachAliasEntry(suffix, v, false, func(id, loc, pos []byte) error {
				got += fmt.Sprintf("%x/%x/%x ", id, loc, pos)
				return nil
			})
			if err != nil {
				return err
			}
			if got != want[string(k)] {
				return fmt.Errorf("usage_alias_ids %q holds %s, the account's index %s", k, got, want[string(k)])
			}
			delete(want, string(k))
			return nil
		})
		for k, w := range want {
			err = errors.Join(err, fmt.Errorf("usage_alias_ids has no record %q of %s", k, w))
		}
		return err
	})
}

// wantAliasRecords returns the records usage_alias_ids must hold, by key,
// each as the text CheckAliasIndex compares; and an error when a tail mark
// counts fewer entries than its tail holds.
func wantAliasRecords(ctx context.Context, tx Tx) (map[string]string, error) {
	want := map[string]string{}
	tails := map[string]*aliasTail{}
	tailEntries := map[string]uint64{}
	err := tx.Scan(ctx, tableUsageEventIDs, Range{}, func(k, v []byte) error {
		acct := string(k[:4])
		if tails[acct] == nil {
			t, err := readAliasTail(ctx, tx, k[:4])
			if err != nil {
				return err
			}
			tails[acct] = &t
		}
		indexed := tails[acct].indexed(k[4:])
		return eachIndexEntry(k[4:], v, false, func(id, loc, pos []byte) error {
			if deadEntry(loc) {
				return nil
			}
			if !indexed {
				tailEntries[acct]++
				return nil
			}
			name, err := seriesNameOf(ctx, tx, loc[:4])
			ak := string(aliasPrefix(k[:4], name.alias)) + string(k[4:])
			want[ak] += fmt.Sprintf("%x/%x/%x ", id, loc, pos)
			return err
		})
	})
	for acct, t := range tails {
		if err == nil && t.entries < tailEntries[acct] {
			err = fmt.Errorf("account %x: the tail mark counts %d entries, the tail holds %d", acct, t.entries, tailEntries[acct])
		}
	}
	return want, err
}

// SetAliasTailEntries sets the size from which s's ingestions index the
// alias index's tail (usagealiastail.go), so that tests move the
// watermark with a few events; set it before s ingests.
func SetAliasTailEntries(s *Service, n int) { s.aliasTailEntries = n }

// AliasTail returns account's watermark of the alias index (a key suffix
// of usage_event_ids) and whether it has one.
func AliasTail(ctx context.Context, s *Service, account string) (from []byte, ok bool, err error) {
	err = s.store.View(ctx, func(tx Tx) error {
		acct, err := number(ctx, tx, tableUsageAccounts, []byte(account), false)
		if err != nil {
			return err
		}
		t, err := readAliasTail(ctx, tx, acct)
		from, ok = t.from, t.ok
		return err
	})
	return from, ok, err
}
