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
// on a store with concurrent writers (concurrentWriters) a write does not
// read it: it adds a delta row of its own under the kept key (the key,
// deltaSep, eight random bytes), and a reader adds the base row and the
// deltas up. One write in compactEvery folds the deltas of a key it
// changed into one delta, so a reader adds a few rows, not one per write
// since the beginning. A fold takes its deltas (TakeTx: read and deleted
// in one request on PostgreSQL) and does not read the base row, which only
// stores written before the deltas and the backfill have.
//
// On a store with one writer at a time (bbolt, memstore) there is no hot
// row to avoid, and delta rows only cost: every ingestion of a group
// commit added one new row per kept key (four per event), spread over as
// many pages as the account has customers, each page rewritten at the
// commit (P1 in BENCHMARKS.md). There a write reads the base row, adds
// its change and any deltas it takes (left by a store that wrote deltas),
// and writes the base row back: one row per key, a few pages per commit.
// Readers add up the same rows either way.

// concurrentWriters reports whether tx's store runs write transactions
// at once: one whose Tx reads many keys in one request (MultiGetTx:
// PostgreSQL, at SERIALIZABLE). Writes there avoid rows every writer
// rewrites (kept deltas, alert marks); a store with one writer at a time
// (bbolt, memstore) rewrites them in place.
func concurrentWriters(tx Tx) bool {
	_, ok := tx.(MultiGetTx)
	return ok
}

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

// keptValue adds up the rows of one kept value: its base row and its
// deltas, which are stored alike.
type keptValue interface {
	// add adds the row v, stored under k.
	add(k, v []byte) error
	// encode returns the stored form of the total, and false when it adds
	// up to nothing (no row is kept then).
	encode() ([]byte, bool, error)
}

// addDelta adds the delta v to the kept value under k of table, adding up
// into acc (empty): with concurrent writers a row of its own, and one time
// in compactEvery the fold of k's deltas (foldDeltas); with one writer at
// a time, into the base row (rewriteBase).
func addDelta(ctx context.Context, tx Tx, table Table, k, v []byte, acc keptValue) error {
	if !concurrentWriters(tx) {
		return rewriteBase(ctx, tx, table, k, v, acc)
	}
	if err := tx.Put(ctx, table, deltaKey(k), v); err != nil {
		return err
	}
	if rand.IntN(compactEvery) != 0 {
		return nil
	}
	return foldDeltas(ctx, tx, table, k, acc)
}

// foldDeltas folds the deltas of the kept value k of table into one delta
// (none when they add up to nothing), adding up into acc (empty). The base
// row is not read: a fold costs one request (take), and the base row
// (written by stores before the deltas, and by the backfill) stays as it
// is.
func foldDeltas(ctx context.Context, tx Tx, table Table, k []byte, acc keptValue) error {
	if err := takeDeltas(ctx, tx, table, k, acc.add); err != nil {
		return err
	}
	out, ok, err := acc.encode()
	if !ok || err != nil {
		return err
	}
	return tx.Put(ctx, table, deltaKey(k), out)
}

// rewriteBase adds the delta v and the deltas of k (which it takes) to
// the base row of the kept value k of table, adding up into acc (empty),
// and writes the base row back, or deletes it when the total is nothing.
func rewriteBase(ctx context.Context, tx Tx, table Table, k, v []byte, acc keptValue) error {
	base, err := tx.Get(ctx, table, k)
	found := err == nil
	switch {
	case found:
		err = acc.add(k, base)
	case errors.Is(err, ErrNotFound):
		err = nil
	}
	if err == nil {
		err = acc.add(k, v)
	}
	if err == nil {
		err = takeDeltas(ctx, tx, table, k, acc.add)
	}
	if err != nil {
		return err
	}
	out, ok, err := acc.encode()
	switch {
	case err != nil:
		return err
	case ok:
		return tx.Put(ctx, table, k, out)
	case found:
		return tx.Delete(ctx, table, k)
	}
	return nil
}

// keptCount adds up the rows of a count of list_counts.
type keptCount int64

func (n *keptCount) add(k, v []byte) error {
	d, err := countDelta(k, v)
	*n += keptCount(d)
	return err
}

func (n *keptCount) encode() ([]byte, bool, error) {
	return binary.BigEndian.AppendUint64(nil, uint64(*n)), *n != 0, nil
}

// takeDeltas deletes the deltas of k in table and calls fn with each: one
// request on a store that offers TakeTx.
func takeDeltas(ctx context.Context, tx Tx, table Table, k []byte, fn func(dk, dv []byte) error) error {
	return take(ctx, tx, table, deltasOf(k), fn)
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

// addSum adds amount and count to the sum under k of invoice_sums
// (addDelta; the sum is deleted when it counts no invoice).
func addSum(ctx context.Context, tx Tx, k []byte, amount Decimal, count int64) error {
	if count == 0 && amount.IsZero() {
		return nil
	}
	v, err := json.Marshal(keptSum{Amount: amount, Count: count})
	if err != nil {
		return err
	}
	return addDelta(ctx, tx, tableInvoiceSums, k, v, &keptSum{})
}

// encode is keptValue's: the stored form of s, and whether it adds up to
// anything.
func (s *keptSum) encode() ([]byte, bool, error) {
	if s.Count == 0 && s.Amount.IsZero() {
		return nil, false, nil
	}
	v, err := json.Marshal(s)
	return v, true, err
}

// add adds the stored sum (or delta) v to s (keptValue's add; k is its
// key).
func (s *keptSum) add(_, v []byte) error {
	var d keptSum
	if err := json.Unmarshal(v, &d); err != nil {
		return fmt.Errorf("decoding %s record: %w", tableInvoiceSums, err)
	}
	s.Amount, s.Count = s.Amount.Add(d.Amount), s.Count+d.Count
	return nil
}
