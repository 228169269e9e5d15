package pgstore

import (
	"context"

	"github.com/billingd/billing"
)

var _ billing.MultiGetTx = (*tx)(nil)

// getManySQL reads the values of many keys of one table of rel in one
// statement.
func getManySQL(rel string) string {
	return `select k, v from ` + rel + ` where tbl = $1 and k = any($2::bytea[])`
}

// GetMany returns the value under each key (nil when missing) with one
// statement for the keys the transaction does not know yet: a list page's
// records in one round trip instead of one each.
func (t *tx) GetMany(ctx context.Context, table billing.Table, keys [][]byte) ([][]byte, error) {
	if err := t.check(ctx, false); err != nil {
		return nil, err
	}
	out := make([][]byte, len(keys))
	var ask [][]byte
	at := map[string][]int{}
	for i, k := range keys {
		if v, ok := t.known(table, k); ok {
			if !isMissing(v) {
				out[i] = append(make([]byte, 0, len(v)), v...)
			}
			continue
		}
		if _, dup := at[string(k)]; !dup {
			ask = append(ask, k)
		}
		at[string(k)] = append(at[string(k)], i)
	}
	if len(ask) == 0 {
		return out, nil
	}
	if err := t.flush(ctx); err != nil {
		return nil, err
	}
	rows, err := t.ptx.Query(ctx, getManySQL(Relation(table)), string(table), ask)
	if err != nil {
		return nil, t.fail(err)
	}
	defer rows.Close()
	found := map[string]bool{}
	for rows.Next() {
		var k, v []byte
		if err := rows.Scan(&k, &v); err != nil {
			return nil, t.fail(err)
		}
		if v == nil {
			v = []byte{}
		}
		found[string(k)] = true
		t.remember(table, k, append(make([]byte, 0, len(v)), v...))
		for _, i := range at[string(k)] {
			out[i] = append(make([]byte, 0, len(v)), v...)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, t.fail(err)
	}
	for _, k := range ask {
		if !found[string(k)] {
			t.remember(table, k, missing)
		}
	}
	return out, nil
}
