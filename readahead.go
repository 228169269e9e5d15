package billing

import (
	"context"
	"slices"
	"sync"
)

// Reads ahead by hints: a read that asks the same store keys every time it
// answers the same question (an entitlement answer: the customer, its time
// zones, its schedules, their prices, the features' metrics, series, rollup
// markers, the period's day totals and hourly rollups) asks them, on a
// store whose Tx offers MultiGetTx (PostgreSQL), in one request: the keys
// and ranges its previous answer to that question read. The chain of
// lookups (the prices are known from the schedules, the metrics from the
// prices, the series from the metrics, the rollups from the series) would
// cost a round trip each; the hint knows them all at once.
//
// A hint is never trusted. The read runs as it would without one, through
// Gets and Scans in its own transaction; the hint only put the records it
// asks into the transaction's known keys (the same snapshot), so an answer
// is exactly what it would be without the hint. A record the hint did not
// foresee (a new schedule, a new month's rollups) costs the round trip it
// costs without hints, and the answer's own reads become the next hint.

// IsRange reports whether tk asks for a range rather than a key (Key
// nil).
func (tk TableKey) IsRange() bool { return tk.Key == nil }

// Range is the range tk asks for (IsRange).
func (tk TableKey) Range() Range { return Range{Prefix: tk.Prefix, Start: tk.Start, End: tk.End} }

// maxReadHints bounds the hints a Service keeps: past it they are dropped
// and the questions in use fill the map again.
const maxReadHints = 1 << 12

// maxHintRange is the most keys of a range a hint asks for: a longer
// range (a month of hourly rollups, or day totals with their unfolded
// deltas) is read by its own Scan, in one chunk
// when its caller sets Range.Expect. Measured on PostgreSQL
// (BENCHMARKS.md, "Entitlements in few requests"): with the month's
// rollups in the hint's request, an answer took 2 requests but its median
// time doubled; read apart, 3 to 4 requests and the median of before.
const maxHintRange = 256

// readHints holds, by question, the keys and ranges its last answer read.
type readHints struct {
	mu sync.Mutex
	m  map[string][]TableKey
}

// get returns the hint of question q (nil: none).
func (h *readHints) get(q string) []TableKey {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.m[q]
}

// put keeps keys as the hint of question q.
func (h *readHints) put(q string, keys []TableKey) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.m == nil || len(h.m) >= maxReadHints {
		h.m = make(map[string][]TableKey)
	}
	h.m[q] = keys
}

// readAhead prepares the read transaction tx of question q: on a store
// whose Tx offers MultiGetTx it prefetches q's hint, in one request, and
// returns a Tx that records what the read asks; done, called once the read
// succeeded, keeps that as q's next hint. Elsewhere it returns tx and a
// done that does nothing. An error is the store's.
func (s *Service) readAhead(ctx context.Context, tx Tx, q string) (Tx, func(), error) {
	m, ok := tx.(MultiGetTx)
	if !ok {
		return tx, func() {}, nil
	}
	if err := prefetch(ctx, tx, s.hints.get(q)); err != nil {
		return nil, nil, err
	}
	r := &recordingTx{MultiGetTx: m, seen: map[string]bool{}}
	return r, func() { s.hints.put(q, r.keys) }, nil
}

// recordingTx is a read transaction that records, once each, the keys its
// Gets ask and the ranges its Scans read to their end (a scan its caller
// stopped early may be long, and is not recorded), for readAhead. It is a
// RollupTx answering as the Tx it wraps reads rollups (readsRollups): it
// serves reads only.
type recordingTx struct {
	MultiGetTx
	keys []TableKey
	seen map[string]bool // table | key, or table | range: recorded
}

// record records tk once; id names it in seen.
func (r *recordingTx) record(tk TableKey, id string) {
	if r.seen[id] {
		return
	}
	r.seen[id] = true
	r.keys = append(r.keys, tk)
}

// Get records the key and reads it.
func (r *recordingTx) Get(ctx context.Context, table Table, k []byte) ([]byte, error) {
	r.record(TableKey{Table: table, Key: append([]byte{}, k...)}, string(table)+"\x00k"+string(k)) // never nil: a key
	return r.MultiGetTx.Get(ctx, table, k)
}

// Scan reads the range, and records it when fn did not stop the scan and
// it held at most maxHintRange keys.
func (r *recordingTx) Scan(ctx context.Context, table Table, rg Range, fn func(k, v []byte) error) error {
	n, stopped := 0, false
	err := r.MultiGetTx.Scan(ctx, table, rg, func(k, v []byte) error {
		n++
		err := fn(k, v)
		stopped = err != nil
		return err
	})
	if err == nil && !stopped && n <= maxHintRange && (rg.Prefix != nil || rg.End != nil) {
		tk := TableKey{Table: table, Prefix: slices.Clone(rg.Prefix), Start: slices.Clone(rg.Start), End: slices.Clone(rg.End), Expect: n}
		lower, upper := rg.Bounds()
		r.record(tk, string(table)+"\x00r"+string(lower)+"\x00"+string(upper))
	}
	return err
}

// KeepsUsageRollups answers as the wrapped Tx is read (readsRollups).
func (r *recordingTx) KeepsUsageRollups() bool { return readsRollups(r.MultiGetTx) }
