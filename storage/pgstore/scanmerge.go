package pgstore

import (
	"bytes"
	"context"
	"errors"
	"slices"

	"github.com/billingd/billing"
)

// A Scan neither sends the transaction's unsent writes nor asks the
// server twice for a small range:
//   - the unsent writes of the scanned table within the range (an
//     overlay) are merged with the rows the server returns, so a
//     transaction that reads what it just wrote (an invoice's lines, the
//     billing engine's watches) still sends all its writes together at
//     the commit;
//   - a range read to its end in one chunk (or by Prefetch) is
//     remembered, with its rows, until the transaction sends writes of the
//     table to the server: the same scan again (the notification policies
//     of an account, read for every notification of a billing batch; the
//     lines of a new invoice) is answered from memory, merged with the
//     unsent writes. A snapshot (REPEATABLE READ, SERIALIZABLE) reads the
//     same rows twice.

// maxRemembered bounds the rows of remembered ranges in one transaction.
const maxRemembered = 4096

// rangeRows are the rows of a range read to its end, in ascending key
// order.
type rangeRows struct {
	keys, vals [][]byte
}

// rangeKey names a range of a table in tx.ranges.
func rangeKey(lower, upper []byte) string {
	if upper == nil {
		return string(lower) + "\x00-"
	}
	return string(lower) + "\x00+" + string(upper)
}

// rangeRead returns the remembered rows of [lower, upper) of table.
func (t *tx) rangeRead(table billing.Table, lower, upper []byte) (*rangeRows, bool) {
	rr, ok := t.ranges[table][rangeKey(lower, upper)]
	return rr, ok
}

// rememberRange keeps the rows of a range read to its end (in the scan's
// order; reverse when descending), within maxRemembered rows.
func (t *tx) rememberRange(table billing.Table, lower, upper []byte, keys, vals [][]byte, reverse bool) {
	if t.rangeRowCount+len(keys) > maxRemembered {
		return
	}
	if reverse {
		keys, vals = slices.Clone(keys), slices.Clone(vals)
		slices.Reverse(keys)
		slices.Reverse(vals)
	}
	if t.ranges == nil {
		t.ranges = make(map[billing.Table]map[string]*rangeRows)
	}
	m := t.ranges[table]
	if m == nil {
		m = make(map[string]*rangeRows)
		t.ranges[table] = m
	}
	rk := rangeKey(lower, upper)
	if old := m[rk]; old != nil {
		t.rangeRowCount -= len(old.keys)
	}
	m[rk] = &rangeRows{keys: keys, vals: vals}
	t.rangeRowCount += len(keys)
}

// forgetRanges drops the remembered ranges of table: the transaction
// sent writes of it to the server.
func (t *tx) forgetRanges(table billing.Table) {
	if m := t.ranges[table]; m != nil {
		for _, rr := range m {
			t.rangeRowCount -= len(rr.keys)
		}
		delete(t.ranges, table)
	}
}

// overlayOf returns the unsent writes of table within r, in the scan's
// order (values nil for Deletes); nil when there are none.
func (t *tx) overlayOf(table billing.Table, r billing.Range) *overlay {
	b := t.pending[table]
	if b == nil {
		return nil
	}
	var o overlay
	for i, k := range b.keys {
		if r.Contains(k) {
			o.keys, o.vals = append(o.keys, k), append(o.vals, b.vals[i])
		}
	}
	if len(o.keys) == 0 {
		return nil
	}
	o.reverse = r.Reverse
	sort := func(i, j int) int { return bytes.Compare(o.keys[i], o.keys[j]) }
	idx := make([]int, len(o.keys))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, sort)
	if o.reverse {
		slices.Reverse(idx)
	}
	keys, vals := make([][]byte, len(idx)), make([][]byte, len(idx))
	for n, i := range idx {
		keys[n], vals[n] = o.keys[i], o.vals[i]
	}
	o.keys, o.vals = keys, vals
	return &o
}

// overlay is the unsent writes a scan merges with the server's rows.
type overlay struct {
	keys, vals [][]byte
	reverse    bool
}

// merger calls a Scan's fn for the rows of the server merged with an
// overlay (nil: none).
type merger struct {
	fn   func(key, value []byte) error
	over *overlay
}

// precedes reports whether a comes before b in the scan's order.
func (o *overlay) precedes(a, b []byte) bool {
	c := bytes.Compare(a, b)
	if o.reverse {
		return c > 0
	}
	return c < 0
}

// row visits the server's row (k, v), after the overlay's writes that
// come before it; the overlay's write of k itself replaces it.
func (m *merger) row(ctx context.Context, k, v []byte) error {
	if o := m.over; o != nil {
		for len(o.keys) > 0 && o.precedes(o.keys[0], k) {
			if err := m.visit(ctx, o.keys[0], o.vals[0]); err != nil {
				return err
			}
			o.keys, o.vals = o.keys[1:], o.vals[1:]
		}
		if len(o.keys) > 0 && bytes.Equal(o.keys[0], k) {
			k, v = o.keys[0], o.vals[0]
			o.keys, o.vals = o.keys[1:], o.vals[1:]
		}
	}
	return m.visit(ctx, k, v)
}

// rest visits the overlay's writes after the server's last row.
func (m *merger) rest(ctx context.Context) error {
	if o := m.over; o != nil {
		for i := range o.keys {
			if err := m.visit(ctx, o.keys[i], o.vals[i]); err != nil {
				return err
			}
		}
		o.keys, o.vals = nil, nil
	}
	return nil
}

// visit calls fn for a row; a nil value (a Delete) is skipped.
func (m *merger) visit(ctx context.Context, k, v []byte) error {
	if v == nil {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return m.fn(k, v)
}

// remembered visits the remembered rows rr, merged with the overlay, in
// the scan's order.
func (m *merger) remembered(ctx context.Context, rr *rangeRows, reverse bool) error {
	n := len(rr.keys)
	for i := range n {
		j := i
		if reverse {
			j = n - 1 - i
		}
		if err := m.row(ctx, rr.keys[j], rr.vals[j]); err != nil {
			return stopped(err)
		}
	}
	return stopped(m.rest(ctx))
}

// stopped is err, or nil for ErrStopScan.
func stopped(err error) error {
	if errors.Is(err, billing.ErrStopScan) {
		return nil
	}
	return err
}
