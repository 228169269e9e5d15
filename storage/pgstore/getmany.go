package pgstore

import (
	"context"

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
// (tx.seen), and the prefixes it has not read into its remembered ranges.
// Unsent writes need not go first: a key written is known, and a Scan
// merges them with a remembered range.
func (t *tx) fetch(ctx context.Context, keys []billing.TableKey) error {
	f := t.plan(keys)
	if len(f.rels) == 0 && len(f.ranges) == 0 {
		return nil
	}
	var batch pgx.Batch
	begin := t.ptx == nil // a read's first request: BEGIN goes with it
	if begin {
		batch.BeginTx(t.opts)
	}
	for _, rel := range f.rels {
		batch.Queue(getManySQL(rel), f.byRel[rel].tables, f.byRel[rel].keys)
	}
	for _, tk := range f.ranges {
		lower, upper := rangeBounds(tk)
		c := scanCursor{lower: lower, upper: upper, limit: rangeLimit(tk) + 1}
		batch.Queue(stmts(tk.Table).scan[scanVariant(false, upper != nil, false)], chunkArgs(tk.Table, &c)...)
	}
	res := t.sendBatch(ctx, &batch, begin)
	if begin {
		if _, err := res.Exec(); err != nil {
			res.Close()
			return t.fail(err)
		}
	}
	for range f.rels {
		if err := t.readFetched(res, f.asked); err != nil {
			res.Close()
			return t.fail(err)
		}
	}
	for _, tk := range f.ranges {
		if err := t.readRange(res, tk); err != nil {
			res.Close()
			return t.fail(err)
		}
	}
	if err := res.Close(); err != nil {
		return t.fail(err)
	}
	for table, ks := range f.asked {
		for k := range ks {
			t.remember(table, []byte(k), missing)
		}
	}
	return nil
}

// sendBatch sends batch; with begin, on the connection, where it begins the
// transaction (Batch.BeginTx).
func (t *tx) sendBatch(ctx context.Context, batch *pgx.Batch, begin bool) pgx.BatchResults {
	if !begin {
		return t.ptx.SendBatch(ctx, batch)
	}
	res := t.conn.SendBatch(ctx, batch)
	t.ptx = res.Tx()
	return res
}

// fetchPlan is what fetch asks the server: keys by SQL table (rels in
// the order met), each key once, and the prefixes.
type fetchPlan struct {
	rels  []string
	byRel map[string]*relKeys
	// asked holds the keys asked, by table; fetch takes out those found.
	asked  map[billing.Table]map[string]bool
	ranges []billing.TableKey
}

// relKeys are the keys fetch asks of one SQL table, with their tables.
type relKeys struct {
	tables []string
	keys   [][]byte
}

// plan returns what fetch must ask of keys: what the transaction does not
// know yet.
func (t *tx) plan(keys []billing.TableKey) fetchPlan {
	f := fetchPlan{byRel: map[string]*relKeys{}, asked: map[billing.Table]map[string]bool{}}
	for _, tk := range keys {
		if tk.IsRange() {
			lower, upper := rangeBounds(tk)
			if _, ok := t.rangeRead(tk.Table, lower, upper); !ok {
				f.ranges = append(f.ranges, tk)
			}
			continue
		}
		if _, ok := t.known(tk.Table, tk.Key); ok || f.asked[tk.Table][string(tk.Key)] {
			continue
		}
		if f.asked[tk.Table] == nil {
			f.asked[tk.Table] = map[string]bool{}
		}
		f.asked[tk.Table][string(tk.Key)] = true
		rel := Relation(tk.Table)
		a := f.byRel[rel]
		if a == nil {
			a = &relKeys{}
			f.byRel[rel] = a
			f.rels = append(f.rels, rel)
		}
		a.tables, a.keys = append(a.tables, string(tk.Table)), append(a.keys, tk.Key)
	}
	return f
}

// prefetchRange is the most keys of a range Prefetch remembers, unless
// its TableKey expects more (up to maxChunk).
const prefetchRange = 256

// rangeLimit is the most keys of range tk that Prefetch remembers.
func rangeLimit(tk billing.TableKey) int { return min(max(tk.Expect, prefetchRange), maxChunk) }

// rangeBounds are the bounds of range tk, as a Scan's (lower never nil).
func rangeBounds(tk billing.TableKey) (lower, upper []byte) {
	lower, upper = tk.Range().Bounds()
	if lower == nil {
		lower = []byte{}
	}
	return lower, upper
}

// readRange remembers the rows of a range that fetch read, unless it
// holds more than rangeLimit keys.
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
	if len(keys) <= rangeLimit(tk) {
		lower, upper := rangeBounds(tk)
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
