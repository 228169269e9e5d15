package pgstore

import (
	"bytes"
	"context"
	"slices"

	"github.com/billingd/billing"
)

var _ billing.TakeTx = (*tx)(nil)

// takeSQL deletes the rows of one table of rel in [$2, $3) (or from $2 on,
// bounded) and returns them.
func takeSQL(rel string, bounded bool) string {
	q := `delete from ` + rel + ` where tbl = $1 and k >= $2`
	if bounded {
		q += ` and k < $3`
	}
	return q + ` returning k, v`
}

// Take deletes the rows of table in r and hands them to fn in key order,
// with one statement: a fold of kept deltas reads and deletes its rows in
// one round trip instead of a scan and a delete per row.
func (t *tx) Take(ctx context.Context, table billing.Table, r billing.Range, fn func(key, value []byte) error) error {
	if err := t.check(ctx, true); err != nil {
		return err
	}
	// The table's unsent writes go first: some may be in r.
	if err := t.flushOne(ctx, table); err != nil {
		return err
	}
	t.forgetRanges(table)
	lower, upper := r.Bounds()
	if upper != nil && bytes.Compare(lower, upper) >= 0 {
		return nil
	}
	if lower == nil {
		lower = []byte{}
	}
	args := []any{string(table), lower}
	if upper != nil {
		args = append(args, upper)
	}
	rows, err := t.ptx.Query(ctx, takeSQL(Relation(table), upper != nil), args...)
	if err != nil {
		return t.fail(err)
	}
	var taken [][2][]byte
	for rows.Next() {
		raw := rows.RawValues()
		taken = append(taken, [2][]byte{slices.Clone(raw[0]), append(make([]byte, 0, len(raw[1])), raw[1]...)})
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return t.fail(err)
	}
	slices.SortFunc(taken, func(a, b [2][]byte) int { return bytes.Compare(a[0], b[0]) })
	for _, row := range taken {
		t.remember(table, row[0], missing)
	}
	for _, row := range taken {
		if err := fn(row[0], row[1]); err != nil {
			return err
		}
	}
	return nil
}
