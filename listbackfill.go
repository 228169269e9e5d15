package billing

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
)

// listCountsVersion marks, in the meta table, a store whose kept counts
// and indexes of lists (listcount.go) are complete. A store written before
// they existed (or by a version that kept them otherwise) has another or
// none, and New builds them from the records, once.
const listCountsVersion = "2"

// keepListCounts builds the kept counts and indexes of lists when the
// store's marker says they are not complete (buildOnce).
func (s *Service) keepListCounts(ctx context.Context) error {
	return s.buildOnce(ctx, []byte("list_counts"), listCountsVersion, rebuildListCounts)
}

// buildOnce runs build, which builds something kept from the records, when
// the marker in the meta table does not say version: in one transaction
// that also sets the marker, so that a process starting at the same time
// either finds it built or builds it itself (the store serializes the two).
func (s *Service) buildOnce(ctx context.Context, marker []byte, version string, build func(context.Context, Tx) error) error {
	done := false
	err := s.store.View(ctx, func(tx Tx) error {
		v, err := tx.Get(ctx, tableMeta, marker)
		done = err == nil && string(v) == version
		if errors.Is(err, ErrNotFound) {
			return nil
		}
		return err
	})
	if err != nil || done {
		return err
	}
	return s.store.Update(ctx, func(tx Tx) error {
		v, err := tx.Get(ctx, tableMeta, marker)
		if err == nil && string(v) == version {
			return nil
		}
		if err := build(ctx, tx); err != nil {
			return err
		}
		return tx.Put(ctx, tableMeta, marker, []byte(version))
	})
}

// keptSource is how rebuildListCounts reads the filter values of the
// records of one kept list.
type keptSource struct {
	kl     keptList
	table  Table
	values func(v []byte) ([]string, error)
}

// keptSources are the kept lists and their records.
var keptSources = []keptSource{
	{keptInvoices, tableInvoices, valuesOf(invoiceValues)},
	{keptCreditNotes, tableCreditNotes, valuesOf(creditNoteValues)},
	{keptCustomers, tableCustomers, func([]byte) ([]string, error) { return []string{}, nil }},
	{keptJournal, tableJournal, valuesOf(journalValues)},
	{keptDeliveries, tableDeliveries, valuesOf(deliveryValues)},
}

// valuesOf decodes a JSON record of type T and gives its filter values.
func valuesOf[T any](values func(*T) []string) func(v []byte) ([]string, error) {
	return func(v []byte) ([]string, error) {
		r := new(T)
		if err := json.Unmarshal(v, r); err != nil {
			return nil, err
		}
		return values(r), nil
	}
}

// rebuildListCounts replaces every kept count and index with those of the
// records stored.
func rebuildListCounts(ctx context.Context, tx Tx) error {
	for _, t := range []Table{tableListCounts, tableListIndex, tableInvoiceStanding, tableOpenInvoices, tableInvoiceSums} {
		if err := deleteRange(ctx, tx, t, Range{}, 0); err != nil {
			return err
		}
	}
	deltas := map[string]int64{}
	for _, src := range keptSources {
		type entry struct {
			account, id string
			values      []string
		}
		var entries []entry
		err := tx.Scan(ctx, src.table, Range{}, func(k, v []byte) error {
			account, id, _ := strings.Cut(string(k), string(rune(keySep)))
			values, err := src.values(v)
			entries = append(entries, entry{account, id, values})
			return err
		})
		if err != nil {
			return err
		}
		for _, e := range entries {
			enc := encodeValues(e.values)
			deltas[string(key(e.account, src.kl.name))]++
			if err := tx.Put(ctx, tableListIndex, key(e.account, src.kl.name, "", e.id), enc); err != nil {
				return err
			}
			for i, v := range e.values {
				if v == "" {
					continue
				}
				deltas[string(key(e.account, src.kl.name, src.kl.filters[i], v))]++
				if err := tx.Put(ctx, tableListIndex, key(e.account, src.kl.name, src.kl.filters[i], v, e.id), enc); err != nil {
					return err
				}
			}
		}
	}
	if err := countStoredUsage(ctx, tx, deltas); err != nil {
		return err
	}
	if err := rebuildStandings(ctx, tx); err != nil {
		return err
	}
	return addCounts(ctx, tx, deltas)
}

// countStoredUsage adds the kept counts of the usage events stored to
// deltas: every series' events, counted by their keys.
func countStoredUsage(ctx context.Context, tx Tx, deltas map[string]int64) error {
	type series struct {
		account string
		name    seriesName
		no      []byte
	}
	var all []series
	err := tx.Scan(ctx, tableUsageSeries, Range{}, func(k, v []byte) error {
		parts := strings.SplitN(string(k), string(rune(keySep)), 3)
		if len(parts) == 3 {
			all = append(all, series{parts[0], seriesName{parts[1], parts[2]}, append([]byte(nil), v...)})
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, sr := range all {
		var n int64
		err := tx.Scan(ctx, tableUsageEvents, Range{Prefix: sr.no}, func(_, _ []byte) error {
			n++
			return nil
		})
		if err != nil {
			return err
		}
		for k, d := range usageCountDeltas(sr.account, map[seriesName]int64{sr.name: n}) {
			deltas[k] += d
		}
	}
	return nil
}

// rebuildStandings keeps the standing of every invoice stored
// (invoicestanding.go), on emptied tables.
func rebuildStandings(ctx context.Context, tx Tx) error {
	type stored struct {
		account, id string
		r           *invoiceRecord
	}
	var all []stored
	err := eachRecord(ctx, tx, tableInvoices, Range{}, func(r *invoiceRecord) error {
		all = append(all, stored{r.ServiceAccountID, r.ID, r})
		return nil
	})
	for _, s := range all {
		if err == nil {
			err = keepStanding(ctx, tx, s.account, s.id, s.r)
		}
	}
	return err
}
