package pgstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/billingd/billing"
	"github.com/billingd/billing/storage/internal/counter"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// errTxDone reports a Tx used after its transaction function returned.
var errTxDone = errors.New("pgstore: transaction used after its function returned")

// Scans read chunks that start small (a page of a list usually ends the
// scan early) and double up to maxChunk rows.
const (
	firstChunk = 64
	maxChunk   = 2048
)

// tx is a billing.Tx over a pgx transaction.
type tx struct {
	// ptx is the transaction; nil until a read-only one's first request
	// begins it on conn (db, fetch), saving BEGIN's round trip.
	ptx      pgx.Tx
	conn     *pgxpool.Conn
	opts     pgx.TxOptions
	writable bool
	done     bool
	// retryable is the serialization failure or deadlock that aborted the
	// transaction, or errCopyConflict; set, the run is void whatever fn
	// returns.
	retryable error
	// noCopy sends every Put as an upsert (the run after errCopyConflict).
	noCopy bool
	// puts not yet sent, by table; sent by flush before anything that
	// reads, and before commit.
	pending map[billing.Table]*putBuffer
	npend   int
	// seen holds what this transaction knows of single keys: values it
	// read or wrote, and missing for keys it found absent or deleted. A
	// SERIALIZABLE transaction reads the same value twice unless it wrote
	// it itself, so a known key costs no round trip. By table, then key.
	seen map[billing.Table]map[string][]byte
	// ranges are the ranges read to their end since the transaction last
	// wrote to their table, with their rows (scanmerge.go); by table,
	// then rangeKey. rangeRowCount counts their rows.
	ranges        map[billing.Table]map[string]*rangeRows
	rangeRowCount int
	// schema is the store's schema, part of a counter's lock name.
	schema string
	// counters are the advisory lock keys of the counters incremented
	// (see counterLane).
	counters []int64
	// arena holds the copies of the keys and values put, a chunk at a
	// time rather than two allocations per Put.
	arena []byte
}

// arenaChunk is the size of a chunk of tx.arena.
const arenaChunk = 64 << 10

// keep returns a copy of b in the arena (never nil).
func (t *tx) keep(b []byte) []byte {
	if t.arena == nil || len(b) > cap(t.arena)-len(t.arena) {
		t.arena = make([]byte, 0, max(arenaChunk, len(b)))
	}
	start := len(t.arena)
	t.arena = append(t.arena, b...)
	return t.arena[start:len(t.arena):len(t.arena)]
}

// missing marks a key known to be absent in seen.
var missing = []byte("\x00pgstore: missing")

// orMissing is v, or missing for nil (a Delete).
func orMissing(v []byte) []byte {
	if v == nil {
		return missing
	}
	return v
}

// isMissing reports whether v, a value of seen, is the mark missing.
func isMissing(v []byte) bool { return len(v) > 0 && &v[0] == &missing[0] }

// known returns what the transaction knows of key: its unsent write
// (missing for a Delete), else what it read or wrote before; ok false when
// nothing.
func (t *tx) known(table billing.Table, key []byte) (v []byte, ok bool) {
	if b := t.pending[table]; b != nil {
		if i, ok := b.index[string(key)]; ok {
			if b.vals[i] == nil {
				return missing, true
			}
			return b.vals[i], true
		}
	}
	v, ok = t.seen[table][string(key)]
	return v, ok
}

// remember records what the transaction knows of key (value nil: nothing).
func (t *tx) remember(table billing.Table, key, value []byte) {
	m := t.seen[table]
	if value == nil {
		delete(m, string(key))
		return
	}
	if m == nil {
		if t.seen == nil {
			t.seen = make(map[billing.Table]map[string][]byte)
		}
		m = make(map[string][]byte)
		t.seen[table] = m
	}
	m[string(key)] = value
}

// putBuffer holds a table's unsent Puts and Deletes; a key written twice
// keeps its last write (a multi-row upsert may not touch one row twice).
type putBuffer struct {
	index map[string]int
	keys  [][]byte
	// vals are the values put, nil for a key deleted.
	vals [][]byte
	// existing counts the keys the transaction had found (or written)
	// before putting or deleting them: the buffer overwrites records, so
	// it is not sent with COPY.
	existing int
	// deletes counts the nil vals.
	deletes int
}

// Len, Less and Swap sort the buffer by key (sort.Interface). The index
// is not kept up to date: a buffer is sorted only when it is sent.
func (b *putBuffer) Len() int           { return len(b.keys) }
func (b *putBuffer) Less(i, j int) bool { return bytes.Compare(b.keys[i], b.keys[j]) < 0 }
func (b *putBuffer) Swap(i, j int) {
	b.keys[i], b.keys[j] = b.keys[j], b.keys[i]
	b.vals[i], b.vals[j] = b.vals[j], b.vals[i]
}

// db returns the transaction, begun now if it was not (a read's first
// statement sent alone).
func (t *tx) db(ctx context.Context) (pgx.Tx, error) {
	if t.ptx == nil {
		ptx, err := t.conn.BeginTx(ctx, t.opts)
		if err != nil {
			return nil, t.fail(err)
		}
		t.ptx = ptx
	}
	return t.ptx, nil
}

func (t *tx) check(ctx context.Context, write bool) error {
	if t.done {
		return errTxDone
	}
	if t.retryable != nil {
		return t.retryable
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if write && !t.writable {
		return billing.ErrReadOnly
	}
	return nil
}

// fail records a serialization failure and maps err to the port's errors.
func (t *tx) fail(err error) error {
	if isRetryable(err) && t.retryable == nil {
		t.retryable = classify(err)
	}
	return classify(err)
}

// copyMin is the number of buffered Puts of one table from which flush
// sends them with COPY rather than an upsert, unless the transaction read
// one of those keys and found it. Many Puts in one transaction are nearly
// always new records (usage ingestion): COPY writes them several times
// faster than insert ... on conflict, and, unlike the upsert's conflict
// check, takes no SIREAD (predicate) locks, which on a large batch grow
// into a lock on the whole index and make concurrent writers fail to
// serialize. A key that exists all the same makes the COPY fail, which
// aborts the transaction: it runs again at once, with upserts only
// (errCopyConflict). No savepoint guards the COPY: it would cost a round
// trip in every transaction to save one in a rare one.
const copyMin = 64

// errCopyConflict voids a run of a transaction whose COPY met an existing
// key; runOnce runs it again without COPY.
var errCopyConflict = errors.New("pgstore: a key sent with COPY exists")

// flush sends the buffered writes: of each table, the Deletes in one
// statement, then many new keys with one COPY, or the Puts with one upsert.
// The COPYs go first; the other statements follow in one round trip (a
// pipeline, in table order).
func (t *tx) flush(ctx context.Context) error {
	if t.npend == 0 {
		return nil
	}
	tables := make([]billing.Table, 0, len(t.pending))
	for table, b := range t.pending {
		// In key order: each row lands next to the one before it in the
		// index (fewer pages touched), and two transactions upserting
		// the same keys lock them in the same order rather than
		// deadlocking.
		sort.Sort(b)
		tables = append(tables, table)
	}
	slices.Sort(tables)
	var queued pgx.Batch
	for _, table := range tables {
		if err := t.flushTable(ctx, table, t.pending[table], &queued); err != nil {
			return err
		}
	}
	if err := t.send(ctx, &queued); err != nil {
		return err
	}
	clear(t.pending)
	t.npend = 0
	return nil
}

// flushOne sends the buffered writes of table only.
func (t *tx) flushOne(ctx context.Context, table billing.Table) error {
	b := t.pending[table]
	if b == nil {
		return nil
	}
	sort.Sort(b)
	var queued pgx.Batch
	if err := t.flushTable(ctx, table, b, &queued); err != nil {
		return err
	}
	if err := t.send(ctx, &queued); err != nil {
		return err
	}
	delete(t.pending, table)
	t.npend -= len(b.keys)
	return nil
}

// flushTable sends b, the buffered writes of table, with COPY, or queues
// them on q (its Deletes in one statement, its Puts in one upsert). The
// table's remembered ranges are forgotten: the server's rows now hold the
// writes.
func (t *tx) flushTable(ctx context.Context, table billing.Table, b *putBuffer, q *pgx.Batch) error {
	t.forgetRanges(table)
	keys, vals := b.keys, b.vals
	if b.deletes > 0 {
		var dels [][]byte
		keys, vals, dels = b.split()
		q.Queue(stmts(table).delMany, string(table), dels)
		if len(keys) == 0 {
			return nil
		}
	}
	if len(keys) < copyMin || b.existing > 0 || t.noCopy {
		q.Queue(stmts(table).upsert, string(table), keys, vals)
		return nil
	}
	stream := copyStream(string(table), keys, vals)
	if Relation(table) == sharedRelation {
		return t.copyGuarded(ctx, table, stream, keys, vals)
	}
	_, err := t.ptx.Conn().PgConn().CopyFrom(ctx, bytes.NewReader(stream), stmts(table).copy)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" /* unique_violation */ {
		t.retryable = errCopyConflict
		return err
	}
	return t.fail(err)
}

// send sends the statements queued on q in one round trip.
func (t *tx) send(ctx context.Context, q *pgx.Batch) error {
	switch q.Len() {
	case 0:
		return nil
	case 1:
		_, err := t.ptx.Exec(ctx, q.QueuedQueries[0].SQL, q.QueuedQueries[0].Arguments...)
		return t.fail(err)
	}
	res := t.ptx.SendBatch(ctx, q)
	var err error
	for range q.Len() {
		if _, err = res.Exec(); err != nil {
			break
		}
	}
	if cerr := res.Close(); err == nil {
		err = cerr
	}
	return t.fail(err)
}

// copyGuarded sends the Puts keys and vals of table, a table of
// billing_kv, as the COPY stream, inside a savepoint, and with an upsert
// when a key exists after all (a record read by a Scan and put back: scans
// do not remember what they read). Many new keys of billing_kv come from
// transactions that also read and write much else (a batch of the billing
// engine creates hundreds of invoices and lines): running such a
// transaction again (errCopyConflict) would cost more than the savepoint's
// two statements.
func (t *tx) copyGuarded(ctx context.Context, table billing.Table, stream []byte, keys, vals [][]byte) error {
	if _, err := t.ptx.Exec(ctx, `savepoint pgstore_copy`); err != nil {
		return t.fail(err)
	}
	_, err := t.ptx.Conn().PgConn().CopyFrom(ctx, bytes.NewReader(stream), stmts(table).copy)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" /* unique_violation */ {
		if _, err := t.ptx.Exec(ctx, `rollback to savepoint pgstore_copy`); err != nil {
			return t.fail(err)
		}
		_, err = t.ptx.Exec(ctx, stmts(table).upsert, string(table), keys, vals)
		return t.fail(err)
	}
	if err != nil {
		return t.fail(err)
	}
	_, err = t.ptx.Exec(ctx, `release savepoint pgstore_copy`)
	return t.fail(err)
}

// split returns b's Puts (keys and values) and Deletes (keys), in key
// order.
func (b *putBuffer) split() (keys, vals, dels [][]byte) {
	for i, v := range b.vals {
		if v == nil {
			dels = append(dels, b.keys[i])
		} else {
			keys, vals = append(keys, b.keys[i]), append(vals, v)
		}
	}
	return keys, vals, dels
}

// copyHeader starts a COPY stream in binary format: the signature, no
// flags, no header extension.
var copyHeader = []byte("PGCOPY\n\xff\r\n\x00\x00\x00\x00\x00\x00\x00\x00\x00")

// copyStream encodes the Puts keys and vals of table as a binary COPY stream of rows
// (tbl, k, v): in binary format text and bytea are their bytes, so this
// is all the encoding there is (pgx's CopyFrom would look up an encoder
// for every value).
func copyStream(table string, keys, vals [][]byte) []byte {
	n := len(copyHeader) + 2
	for i := range keys {
		n += 2 + 12 + len(table) + len(keys[i]) + len(vals[i])
	}
	buf := append(make([]byte, 0, n), copyHeader...)
	for i := range keys {
		buf = binary.BigEndian.AppendUint16(buf, 3) // fields
		buf = binary.BigEndian.AppendUint32(buf, uint32(len(table)))
		buf = append(buf, table...)
		buf = binary.BigEndian.AppendUint32(buf, uint32(len(keys[i])))
		buf = append(buf, keys[i]...)
		buf = binary.BigEndian.AppendUint32(buf, uint32(len(vals[i])))
		buf = append(buf, vals[i]...)
	}
	return binary.BigEndian.AppendUint16(buf, 0xffff) // trailer
}

// Get returns the value under key.
func (t *tx) Get(ctx context.Context, table billing.Table, key []byte) ([]byte, error) {
	if err := t.check(ctx, false); err != nil {
		return nil, err
	}
	if v, ok := t.known(table, key); ok {
		if isMissing(v) {
			return nil, billing.ErrNotFound
		}
		return append(make([]byte, 0, len(v)), v...), nil
	}
	// Unsent writes need not go first: none is of this key (it would be
	// known), and the answer depends on no other.
	var v []byte
	db, err := t.db(ctx)
	if err != nil {
		return nil, err
	}
	err = db.QueryRow(ctx, stmts(table).get, string(table), key).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		t.remember(table, key, missing)
		return nil, billing.ErrNotFound
	}
	if err != nil {
		return nil, t.fail(err)
	}
	if v == nil {
		v = []byte{}
	}
	t.remember(table, key, append(make([]byte, 0, len(v)), v...))
	return v, nil
}

// Put buffers value under key; it reaches the server with the next
// statement that reads it, or the commit.
func (t *tx) Put(ctx context.Context, table billing.Table, key, value []byte) error {
	if err := t.check(ctx, true); err != nil {
		return err
	}
	t.buffer(table, key, t.keep(value))
	return nil
}

// buffer records a write of key: value v (kept), or nil for a Delete.
func (t *tx) buffer(table billing.Table, key, v []byte) {
	if t.pending == nil {
		t.pending = make(map[billing.Table]*putBuffer)
	}
	b := t.pending[table]
	if b == nil {
		b = &putBuffer{index: make(map[string]int)}
		t.pending[table] = b
	}
	if i, ok := b.index[string(key)]; ok {
		switch {
		case b.vals[i] == nil && v != nil:
			b.deletes--
		case b.vals[i] != nil && v == nil:
			b.deletes++
			b.existing++ // sent with the Deletes: never with COPY
		}
		b.vals[i] = v
		t.remember(table, key, orMissing(v))
		return
	}
	prev, known := t.known(table, key)
	if (known && !isMissing(prev)) || v == nil {
		b.existing++
	}
	if v == nil {
		b.deletes++
	}
	k := t.keep(key)
	b.index[string(k)] = len(b.keys)
	b.keys = append(b.keys, k)
	b.vals = append(b.vals, v)
	t.npend++
	if known || len(b.keys) <= copyMin {
		// A key put in bulk (usage events) is not read back in the
		// same transaction; remembering each would cost a map entry.
		// Unremembered, a Get of it finds it in the buffer.
		t.remember(table, k, orMissing(v))
	}
}

// Insert stores value under key unless the key exists. A key the
// transaction already knows costs no statement: a conflict when it is
// there, and a buffered Put when it found it missing (SERIALIZABLE: a
// concurrent insert of the key makes one of the two fail to serialize) or
// deleted it.
func (t *tx) Insert(ctx context.Context, table billing.Table, key, value []byte) error {
	if err := t.check(ctx, true); err != nil {
		return err
	}
	if v, ok := t.known(table, key); ok {
		if !isMissing(v) {
			return billing.ErrConflict
		}
		t.buffer(table, key, t.keep(value))
		return nil
	}
	t.forgetRanges(table)
	tag, err := t.ptx.Exec(ctx, stmts(table).insert, string(table), key, nonNil(value))
	if err != nil {
		return t.fail(err)
	}
	if tag.RowsAffected() == 0 {
		t.remember(table, key, nil) // exists, value unknown
		return billing.ErrConflict
	}
	t.remember(table, key, append(make([]byte, 0, len(value)), value...))
	return nil
}

// nonNil keeps an empty value from being sent as SQL NULL.
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// Delete removes key, which must exist. A key the transaction knows costs
// no statement: not found when missing, else a buffered Delete.
func (t *tx) Delete(ctx context.Context, table billing.Table, key []byte) error {
	if err := t.check(ctx, true); err != nil {
		return err
	}
	if v, ok := t.known(table, key); ok {
		if isMissing(v) {
			return billing.ErrNotFound
		}
		t.buffer(table, key, nil)
		return nil
	}
	t.forgetRanges(table)
	tag, err := t.ptx.Exec(ctx, stmts(table).del, string(table), key)
	if err != nil {
		return t.fail(err)
	}
	t.remember(table, key, missing)
	if tag.RowsAffected() == 0 {
		return billing.ErrNotFound
	}
	return nil
}

// Increment adds one to the counter under key (storage/internal/counter).
// It waits for the counter's lane (lane.go), then reads the row "for
// update". A transaction whose snapshot predates another's committed
// increment fails to serialize here once; its next run takes the lane
// before its snapshot and cannot fail on this counter again. The loser of
// a race to create a counter fails to serialize and runs again the same
// way.
func (t *tx) Increment(ctx context.Context, table billing.Table, key []byte) (uint64, error) {
	if err := t.check(ctx, true); err != nil {
		return 0, err
	}
	if b := t.pending[table]; b != nil {
		if _, ok := b.index[string(key)]; ok {
			if err := t.flushOne(ctx, table); err != nil {
				return 0, err
			}
		}
	}
	lk := lockKey(t.schema, table, key)
	if !slices.Contains(t.counters, lk) {
		t.counters = append(t.counters, lk)
		if _, err := t.ptx.Exec(ctx, `select pg_advisory_xact_lock($1)`, lk); err != nil {
			return 0, t.fail(err)
		}
	}
	var v []byte
	err := t.ptx.QueryRow(ctx, stmts(table).lock, string(table), key).Scan(&v)
	found := !errors.Is(err, pgx.ErrNoRows)
	if found && err != nil {
		return 0, t.fail(err)
	}
	n, stored, err := counter.Next(v, found)
	if err != nil {
		return 0, fmt.Errorf("pgstore: %s/%q: %w", table, key, err)
	}
	return n, t.Put(ctx, table, key, stored)
}

// Scan reads r in chunks of rows, in key order, and calls fn for each row
// of a chunk once the chunk has been read: fn may use the Tx (the
// connection is free again), and no scan holds more than one chunk.
func (t *tx) Scan(ctx context.Context, table billing.Table, r billing.Range, fn func(key, value []byte) error) error {
	if err := t.check(ctx, false); err != nil {
		return err
	}
	lower, upper := r.Bounds()
	if upper != nil && bytes.Compare(lower, upper) >= 0 {
		return nil
	}
	if lower == nil {
		lower = []byte{} // bytea, never NULL, in the chunk queries
	}
	m := merger{fn: fn, over: t.overlayOf(table, r)}
	if rr, ok := t.rangeRead(table, lower, upper); ok {
		return m.remembered(ctx, rr, r.Reverse) // scanmerge.go
	}
	cursor := scanCursor{lower: lower, upper: upper, reverse: r.Reverse, limit: firstChunk}
	if r.Expect > 0 {
		// a list's page: no more rows than it reads; the hours of a
		// calculation's rollups: all of them in one chunk
		cursor.limit = min(r.Expect, maxChunk)
	}
	var keys, vals [][]byte
	for first := true; ; first = false {
		var err error
		keys, vals, err = t.chunk(ctx, table, &cursor, keys[:0], vals[:0])
		if err != nil {
			return err
		}
		for i := range keys {
			if err := m.row(ctx, keys[i], vals[i]); err != nil {
				return stopped(err)
			}
		}
		if len(keys) < cursor.limit {
			if first && m.over == nil {
				t.rememberRange(table, lower, upper, keys, vals, r.Reverse)
			}
			return stopped(m.rest(ctx))
		}
		cursor.advance(keys[len(keys)-1])
	}
}

// scanCursor is the position of a chunked scan: the interval still to
// read and whether its lower bound is exclusive (after a forward chunk).
type scanCursor struct {
	lower, upper []byte
	lowerOpen    bool
	reverse      bool
	limit        int
}

// advance moves the cursor past last, the final key of a full chunk.
func (c *scanCursor) advance(last []byte) {
	last = append([]byte(nil), last...)
	if c.reverse {
		c.upper = last
	} else {
		c.lower, c.lowerOpen = last, true
	}
	c.limit = min(c.limit*2, maxChunk)
}

// chunkArgs are the arguments of the chunk query of c.
func chunkArgs(table billing.Table, c *scanCursor) []any {
	args := []any{string(table), c.lower, c.limit}
	if c.upper != nil {
		args = append(args, c.upper)
	}
	return args
}

// chunk reads the next chunk of the cursor's interval into keys and vals.
func (t *tx) chunk(ctx context.Context, table billing.Table, c *scanCursor, keys, vals [][]byte) ([][]byte, [][]byte, error) {
	q := stmts(table).scan[scanVariant(c.lowerOpen, c.upper != nil, c.reverse)]
	db, err := t.db(ctx)
	if err != nil {
		return nil, nil, err
	}
	rows, err := db.Query(ctx, q, chunkArgs(table, c)...)
	if err != nil {
		return nil, nil, t.fail(err)
	}
	defer rows.Close()
	for rows.Next() {
		raw := rows.RawValues()
		keys = append(keys, append([]byte(nil), raw[0]...))
		vals = append(vals, append(make([]byte, 0, len(raw[1])), raw[1]...))
	}
	if err := rows.Err(); err != nil {
		return nil, nil, t.fail(err)
	}
	return keys, vals, nil
}
