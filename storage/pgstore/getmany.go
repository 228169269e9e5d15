package pgstore

import (
	"context"
	"slices"

	"github.com/billingd/billing"
	"github.com/jackc/pgx/v5"
)

var _ billing.MultiGetTx = (*tx)(nil)

// getManySQL reads the values of many keys (tables and keys in two
// arrays) of rel in one statement.
func getManySQL(rel string) string {
	return `select u.tbl, u.k, r.v from unnest($1::text[], $2::bytea[]) as u(tbl, k) join ` + rel +
		` r on r.tbl = u.tbl and r.k = u.k`
}

// GetMany returns the value under each key (nil when missing) with one
// statement for the keys the transaction does not know yet: a list page's
// records in one round trip instead of one each.
func (t *tx) GetMany(ctx context.Context, table billing.Table, keys [][]byte) ([][]byte, error) {
	if err := t.check(ctx, false); err != nil {
		return nil, err
	}
	tks := make([]billing.TableKey, len(keys))
	for i, k := range keys {
		tks[i] = billing.TableKey{Table: table, Key: k}
	}
	if err := t.fetch(ctx, tks); err != nil {
		return nil, err
	}
	out := make([][]byte, len(keys))
	for i, k := range keys {
		if v, _ := t.known(table, k); !isMissing(v) {
			out[i] = append(make([]byte, 0, len(v)), v...)
		}
	}
	return out, nil
}

// Prefetch reads the keys the transaction does not know yet, of any
// tables, in one round trip (one statement per SQL table, sent together),
// and remembers each value or its absence as Get does.
func (t *tx) Prefetch(ctx context.Context, keys []billing.TableKey) error {
	if err := t.check(ctx, false); err != nil {
		return err
	}
	return t.fetch(ctx, keys)
}

// fetch reads the keys the transaction does not know into what it knows
// (tx.seen). Unsent writes need not go first: a key written is known.
func (t *tx) fetch(ctx context.Context, keys []billing.TableKey) error {
	type ask struct {
		tables []string
		keys   [][]byte
	}
	byRel := map[string]*ask{}
	var rels []string
	asked := map[billing.Table]map[string]bool{}
	var ranges []billing.TableKey
	for _, tk := range keys {
		if tk.Prefix != nil {
			ranges = append(ranges, tk)
			continue
		}
		if _, ok := t.known(tk.Table, tk.Key); ok || asked[tk.Table][string(tk.Key)] {
			continue
		}
		if asked[tk.Table] == nil {
			asked[tk.Table] = map[string]bool{}
		}
		asked[tk.Table][string(tk.Key)] = true
		rel := Relation(tk.Table)
		a := byRel[rel]
		if a == nil {
			a = &ask{}
			byRel[rel] = a
			rels = append(rels, rel)
		}
		a.tables, a.keys = append(a.tables, string(tk.Table)), append(a.keys, tk.Key)
	}
	ranges = slices.DeleteFunc(ranges, func(tk billing.TableKey) bool {
		lower, upper := billing.Range{Prefix: tk.Prefix}.Bounds()
		_, ok := t.rangeRead(tk.Table, lower, upper)
		return ok
	})
	if len(rels) == 0 && len(ranges) == 0 {
		return nil
	}
	var batch pgx.Batch
	for _, rel := range rels {
		batch.Queue(getManySQL(rel), byRel[rel].tables, byRel[rel].keys)
	}
	for _, tk := range ranges {
		lower, upper := billing.Range{Prefix: tk.Prefix}.Bounds()
		c := scanCursor{lower: lower, upper: upper, limit: prefetchRange + 1}
		batch.Queue(stmts(tk.Table).scan[scanVariant(false, upper != nil, false)], chunkArgs(tk.Table, &c)...)
	}
	res := t.ptx.SendBatch(ctx, &batch)
	for range rels {
		if err := t.readFetched(res, asked); err != nil {
			res.Close()
			return t.fail(err)
		}
	}
	for _, tk := range ranges {
		if err := t.readRange(res, tk); err != nil {
			res.Close()
			return t.fail(err)
		}
	}
	if err := res.Close(); err != nil {
		return t.fail(err)
	}
	for table, ks := range asked {
		for k := range ks {
			t.remember(table, []byte(k), missing)
		}
	}
	return nil
}

// prefetchRange is the most keys of a prefix Prefetch remembers.
const prefetchRange = 256

// readRange remembers the rows of a prefix that fetch read, unless it
// holds more than prefetchRange keys.
func (t *tx) readRange(res pgx.BatchResults, tk billing.TableKey) error {
	rows, err := res.Query()
	if err != nil {
		return err
	}
	defer rows.Close()
	var keys, vals [][]byte
	for rows.Next() {
		raw := rows.RawValues()
		keys = append(keys, append([]byte(nil), raw[0]...))
		vals = append(vals, append(make([]byte, 0, len(raw[1])), raw[1]...))
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if len(keys) <= prefetchRange {
		lower, upper := billing.Range{Prefix: tk.Prefix}.Bounds()
		t.rememberRange(tk.Table, lower, upper, keys, vals, false)
	}
	return nil
}

// readFetched remembers the rows of one statement of fetch, and takes
// them out of asked (what is left there is missing).
func (t *tx) readFetched(res pgx.BatchResults, asked map[billing.Table]map[string]bool) error {
	rows, err := res.Query()
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var tbl string
		var k, v []byte
		if err := rows.Scan(&tbl, &k, &v); err != nil {
			return err
		}
		if v == nil {
			v = []byte{}
		}
		table := billing.Table(tbl)
		delete(asked[table], string(k))
		t.remember(table, k, v)
	}
	return rows.Err()
}
