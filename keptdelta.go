package billing

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
)

// Kept counts and sums without a hot row.
//
// A kept count (list_counts) or sum (invoice_sums) changes in nearly every
// write of its account. Read, changed and written back in place, it is one
// row every writer of the account reads and writes: on PostgreSQL, whose
// transactions are SERIALIZABLE, concurrent writers then fail on it and
// retry, and enough of them starve (a send gave up after 31 attempts). So
// a write does not read it: it adds a delta row of its own under the
// kept key (the key, deltaSep, eight random bytes), and a reader adds the
// base row and the deltas up. One write in compactEvery folds the deltas
// of a key it changed into the base row, so a reader adds a few rows, not
// one per write since the beginning.

// deltaSep separates a kept key from its deltas' random suffixes. It sorts
// after keySep, so a key's deltas are not among the longer keys that
// extend it (key + keySep + ...).
const deltaSep = 0x01

// compactEvery is how often (one write in compactEvery, at random) a write
// folds a kept key's deltas into its base row.
const compactEvery = 16

// deltaKey is the key of a new delta of k.
func deltaKey(k []byte) []byte {
	out := append(append(slices.Clip(k), deltaSep), make([]byte, 8)...)
	binary.BigEndian.PutUint64(out[len(out)-8:], rand.Uint64())
	return out
}

// deltasOf is the range of k's deltas.
func deltasOf(k []byte) Range {
	return Range{Prefix: append(slices.Clip(k), deltaSep)}
}

// addDelta adds the delta v to the kept value under k of table: a row of
// its own, and one time in compactEvery the fold of k's deltas (fold).
func addDelta(ctx context.Context, tx Tx, table Table, k, v []byte, fold func(context.Context, Tx, []byte) error) error {
	if err := tx.Put(ctx, table, deltaKey(k), v); err != nil {
		return err
	}
	if rand.IntN(compactEvery) != 0 {
		return nil
	}
	return fold(ctx, tx, k)
}

// foldCount folds the deltas of the count k into its base row (deleted at
// zero).
func foldCount(ctx context.Context, tx Tx, k []byte) error {
	n, err := readBase(ctx, tx, k)
	if err != nil {
		return err
	}
	err = takeDeltas(ctx, tx, tableListCounts, k, func(dk, dv []byte) error {
		d, err := countDelta(dk, dv)
		n += d
		return err
	})
	if err != nil {
		return err
	}
	switch {
	case n < 0:
		return fmt.Errorf("billing: list count %q is %d", k, n)
	case n == 0:
		return deleteIfPresent(ctx, tx, tableListCounts, k)
	}
	return tx.Put(ctx, tableListCounts, k, binary.BigEndian.AppendUint64(nil, uint64(n)))
}

// takeDeltas calls fn with each delta of k in table, then deletes them:
// one scan serves the fold's sum and its deletions.
func takeDeltas(ctx context.Context, tx Tx, table Table, k []byte, fn func(dk, dv []byte) error) error {
	var keys [][]byte
	err := tx.Scan(ctx, table, deltasOf(k), func(dk, dv []byte) error {
		keys = append(keys, slices.Clone(dk))
		return fn(dk, dv)
	})
	if err != nil {
		return err
	}
	for _, dk := range keys {
		if err := tx.Delete(ctx, table, dk); err != nil {
			return err
		}
	}
	return nil
}

// readCount reads one count of list_counts: its base row and its deltas
// (0 when there is none).
func readCount(ctx context.Context, tx Tx, k []byte) (int64, error) {
	n, err := readBase(ctx, tx, k)
	if err != nil {
		return 0, err
	}
	err = tx.Scan(ctx, tableListCounts, deltasOf(k), func(dk, dv []byte) error {
		d, err := countDelta(dk, dv)
		n += d
		return err
	})
	return n, err
}

// readBase reads the base row of the count k (0 when there is none).
func readBase(ctx context.Context, tx Tx, k []byte) (int64, error) {
	v, err := tx.Get(ctx, tableListCounts, k)
	switch {
	case errors.Is(err, ErrNotFound):
		return 0, nil
	case err != nil:
		return 0, err
	case len(v) != 8:
		return 0, fmt.Errorf("billing: list count %q of %d bytes", k, len(v))
	}
	return int64(binary.BigEndian.Uint64(v)), nil
}

// countDelta decodes the count delta dv stored under dk.
func countDelta(dk, dv []byte) (int64, error) {
	if len(dv) != 8 {
		return 0, fmt.Errorf("billing: list count delta %q of %d bytes", dk, len(dv))
	}
	return int64(binary.BigEndian.Uint64(dv)), nil
}

// addSum adds amount and count to the sum under k of invoice_sums, as a
// delta (the sum is deleted when a fold finds it counts no invoice).
func addSum(ctx context.Context, tx Tx, k []byte, amount Decimal, count int64) error {
	if count == 0 && amount.IsZero() {
		return nil
	}
	v, err := json.Marshal(keptSum{Amount: amount, Count: count})
	if err != nil {
		return err
	}
	return addDelta(ctx, tx, tableInvoiceSums, k, v, foldSum)
}

// foldSum folds the deltas of the sum k into its base row.
func foldSum(ctx context.Context, tx Tx, k []byte) error {
	s, err := findRecord[keptSum](ctx, tx, tableInvoiceSums, k)
	if err != nil {
		return err
	}
	if s == nil {
		s = &keptSum{}
	}
	if err := takeDeltas(ctx, tx, tableInvoiceSums, k, func(_, v []byte) error { return s.add(v) }); err != nil {
		return err
	}
	switch {
	case s.Count < 0:
		return fmt.Errorf("billing: invoice sum %q counts %d invoices", k, s.Count)
	case s.Count == 0:
		return deleteIfPresent(ctx, tx, tableInvoiceSums, k)
	}
	return putRecord(ctx, tx, tableInvoiceSums, k, s)
}

// add adds the stored sum (or delta) v to s.
func (s *keptSum) add(v []byte) error {
	var d keptSum
	if err := json.Unmarshal(v, &d); err != nil {
		return fmt.Errorf("decoding %s record: %w", tableInvoiceSums, err)
	}
	s.Amount, s.Count = s.Amount.Add(d.Amount), s.Count+d.Count
	return nil
}
