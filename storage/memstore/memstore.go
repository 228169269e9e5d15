// Package memstore is an in-memory billing.Store for tests and demos.
//
// Every table is a sorted slice of keys next to a map of values, so Get is a
// map lookup and Scan a binary search followed by a walk. Update holds an
// exclusive lock and writes in place, recording an undo log that restores
// every write, counters included, when the transaction function fails or
// panics. Nothing is persisted: the data lives as long as the Store.
package memstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/billingd/billing"
	"github.com/billingd/billing/storage/internal/counter"
)

// Store is an in-memory billing.Store. The zero value is not usable; call
// New. A Store is safe for concurrent use.
type Store struct {
	mu     sync.RWMutex // shared for View, exclusive for Update and Close
	closed bool
	tables map[billing.Table]*table
}

var _ billing.Store = (*Store)(nil)

// New returns an empty Store.
func New() *Store {
	return &Store{tables: make(map[billing.Table]*table)}
}

// errTxDone reports a Tx used after its transaction function returned, a
// bug the contract forbids; failing loudly beats reading stale state.
var errTxDone = errors.New("memstore: transaction used after its function returned")

// errKeyRequired mirrors bbolt, which rejects empty keys, so code tested on
// memstore does not break on the production backend.
var errKeyRequired = errors.New("memstore: key required")

// View runs fn in a read-only transaction under a shared lock.
func (s *Store) View(ctx context.Context, fn func(billing.Tx) error) error {
	unlock, err := s.begin(ctx, false)
	if err != nil {
		return err
	}
	defer unlock()
	t := &tx{s: s}
	defer func() { t.done = true }()
	return fn(t)
}

// Update runs fn in a read-write transaction under an exclusive lock. Writes
// apply directly; if fn returns an error or panics they are undone before
// Update returns (or the panic resumes).
func (s *Store) Update(ctx context.Context, fn func(billing.Tx) error) error {
	unlock, err := s.begin(ctx, true)
	if err != nil {
		return err
	}
	defer unlock()
	t := &tx{s: s, writable: true}
	committed := false
	// A deferred rollback, rather than recover, also covers panics and
	// runtime.Goexit (t.FailNow inside fn) without swallowing them.
	defer func() {
		t.done = true
		if !committed {
			t.rollback()
		}
	}()
	if err := fn(t); err != nil {
		return err
	}
	// A caller that gave up before the commit gets no effect, as with a
	// backend that checks the context before committing.
	if err := ctx.Err(); err != nil {
		return err
	}
	committed = true
	return nil
}

// begin starts a transaction: it refuses a done ctx, takes the store's lock
// (exclusive for a writable transaction, shared otherwise) and refuses a
// closed store. On success the caller releases the lock with unlock.
func (s *Store) begin(ctx context.Context, writable bool) (unlock func(), err error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	lock, unlock := s.mu.RLock, s.mu.RUnlock
	if writable {
		lock, unlock = s.mu.Lock, s.mu.Unlock
	}
	lock()
	if s.closed {
		unlock()
		return nil, billing.ErrClosed
	}
	return unlock, nil
}

// Batch runs fn as an Update. An in-memory store has no commit cost to
// share, so there is nothing to group; fn runs exactly once.
func (s *Store) Batch(ctx context.Context, fn func(billing.Tx) error) error {
	return s.Update(ctx, fn)
}

// Close releases the data. Transactions started afterwards fail with
// billing.ErrClosed. Closing twice is harmless.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.tables = nil
	return nil
}

// table is one ordered keyspace.
type table struct {
	keys []string // sorted, unique
	vals map[string][]byte
}

func (t *table) set(key string, value []byte) {
	if _, ok := t.vals[key]; !ok {
		i, _ := slices.BinarySearch(t.keys, key)
		t.keys = slices.Insert(t.keys, i, key)
	}
	t.vals[key] = value
}

func (t *table) remove(key string) {
	if _, ok := t.vals[key]; !ok {
		return
	}
	if i, found := slices.BinarySearch(t.keys, key); found {
		t.keys = slices.Delete(t.keys, i, i+1)
	}
	delete(t.vals, key)
}

// undo restores one key to the state it had before a write.
type undo struct {
	t       *table
	key     string
	old     []byte
	existed bool
}

// tx is a transaction of a Store. View and Update hold the Store's lock for
// as long as a tx is live, so its methods need no locking of their own.
type tx struct {
	s        *Store
	writable bool
	done     bool
	log      []undo
}

func (t *tx) check(ctx context.Context, write bool) error {
	if t.done {
		return errTxDone
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if write && !t.writable {
		return billing.ErrReadOnly
	}
	return nil
}

func (t *tx) table(name billing.Table, create bool) *table {
	tb := t.s.tables[name]
	if tb == nil && create {
		tb = &table{vals: make(map[string][]byte)}
		t.s.tables[name] = tb
	}
	return tb
}

// write stores value (nil deletes) and records how to undo it.
func (t *tx) write(tb *table, key string, value []byte) {
	old, existed := tb.vals[key]
	t.log = append(t.log, undo{t: tb, key: key, old: old, existed: existed})
	if value == nil {
		tb.remove(key)
		return
	}
	tb.set(key, value)
}

func (t *tx) rollback() {
	for i := len(t.log) - 1; i >= 0; i-- {
		u := t.log[i]
		if u.existed {
			u.t.set(u.key, u.old)
		} else {
			u.t.remove(u.key)
		}
	}
	t.log = nil
}

// clone copies b into a new non-nil slice: stored values never alias a
// caller's buffer, and an empty value stays distinct from a missing one.
func clone(b []byte) []byte {
	return append(make([]byte, 0, len(b)), b...)
}

// Get returns a copy of the value under key.
func (t *tx) Get(ctx context.Context, name billing.Table, key []byte) ([]byte, error) {
	if err := t.check(ctx, false); err != nil {
		return nil, err
	}
	tb := t.table(name, false)
	if tb == nil {
		return nil, billing.ErrNotFound
	}
	v, ok := tb.vals[string(key)]
	if !ok {
		return nil, billing.ErrNotFound
	}
	return clone(v), nil
}

// Put stores a copy of value under key.
func (t *tx) Put(ctx context.Context, name billing.Table, key, value []byte) error {
	if err := t.check(ctx, true); err != nil {
		return err
	}
	if len(key) == 0 {
		return errKeyRequired
	}
	t.write(t.table(name, true), string(key), clone(value))
	return nil
}

// Insert stores a copy of value under a key that must not exist yet.
func (t *tx) Insert(ctx context.Context, name billing.Table, key, value []byte) error {
	if err := t.check(ctx, true); err != nil {
		return err
	}
	if len(key) == 0 {
		return errKeyRequired
	}
	tb := t.table(name, true)
	if _, ok := tb.vals[string(key)]; ok {
		return billing.ErrConflict
	}
	t.write(tb, string(key), clone(value))
	return nil
}

// Delete removes an existing key.
func (t *tx) Delete(ctx context.Context, name billing.Table, key []byte) error {
	if err := t.check(ctx, true); err != nil {
		return err
	}
	tb := t.table(name, false)
	if tb == nil {
		return billing.ErrNotFound
	}
	if _, ok := tb.vals[string(key)]; !ok {
		return billing.ErrNotFound
	}
	t.write(tb, string(key), nil)
	return nil
}

// Increment adds one to the counter under key, stored as every backend
// stores it (storage/internal/counter).
func (t *tx) Increment(ctx context.Context, name billing.Table, key []byte) (uint64, error) {
	if err := t.check(ctx, true); err != nil {
		return 0, err
	}
	if len(key) == 0 {
		return 0, errKeyRequired
	}
	tb := t.table(name, true)
	v, found := tb.vals[string(key)]
	n, stored, err := counter.Next(v, found)
	if err != nil {
		return 0, fmt.Errorf("memstore: %s/%q: %w", name, key, err)
	}
	t.write(tb, string(key), stored)
	return n, nil
}

// Scan walks the keys of r. After each callback it looks the next key up
// again by binary search instead of keeping an index, so a callback that
// writes (to another table, or against the contract to this one) never
// makes the walk skip or repeat a key.
func (t *tx) Scan(ctx context.Context, name billing.Table, r billing.Range, fn func(key, value []byte) error) error {
	if err := t.check(ctx, false); err != nil {
		return err
	}
	tb := t.table(name, false)
	if tb == nil {
		return nil
	}
	next := firstForward(tb.keys, r)
	if r.Reverse {
		next = firstReverse(tb.keys, r)
	}
	for i := next; i >= 0 && i < len(tb.keys); {
		k := tb.keys[i]
		// Positioned at or beyond the bound on one side, the first key
		// outside r ends the walk on the other side.
		if !r.Contains([]byte(k)) {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fn([]byte(k), clone(tb.vals[k])); err != nil {
			if errors.Is(err, billing.ErrStopScan) {
				return nil
			}
			return err
		}
		j, found := slices.BinarySearch(tb.keys, k)
		if r.Reverse {
			i = j - 1
		} else if found {
			i = j + 1
		} else {
			i = j
		}
	}
	return nil
}

// firstForward returns the index of the first key >= max(Prefix, Start).
func firstForward(keys []string, r billing.Range) int {
	lower, _ := r.Bounds()
	i, _ := slices.BinarySearch(keys, string(lower))
	return i
}

// firstReverse returns the index of the last key below both End and
// PrefixEnd(Prefix), or -1.
func firstReverse(keys []string, r billing.Range) int {
	_, upper := r.Bounds()
	if upper == nil {
		return len(keys) - 1
	}
	i, _ := slices.BinarySearch(keys, string(upper))
	return i - 1
}
