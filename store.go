package billing

import (
	"context"
	"errors"
)

// Store is the persistence port of the billing engine. A Store holds ordered
// tables of byte keys and byte values and runs managed transactions over them,
// in the manner of bbolt: the function given to View or Update receives an
// explicit Tx that is valid only until the function returns.
//
// Backends are deliberately dumb: they store, scan in key order and count.
// Every business rule, every key layout and every record encoding lives once,
// in package billing, next to the aggregate it belongs to. That keeps the
// contract small enough for a SQL backend to implement with one table
// (table, key, value) and a primary key on (table, key), and lets one
// conformance suite (package storage/storagetest) cover every backend.
//
// Every implementation must pass storagetest.Run.
type Store interface {
	// View runs fn in a read-only transaction. A Tx write method called
	// inside View returns an error.
	View(ctx context.Context, fn func(Tx) error) error

	// Update runs fn in a read-write transaction. If fn returns nil the
	// transaction is committed durably before Update returns; otherwise
	// every write made through the Tx, counters included, is rolled back
	// and fn's error is returned unchanged.
	//
	// The store may run fn more than once: a backend with concurrent
	// writers (PostgreSQL) rolls back a transaction that failed to
	// serialize and runs fn again, on the state other transactions have
	// committed since. So fn must derive everything from its inputs and
	// the Tx, keep no state between runs (reset what it returns at its
	// start), and change nothing outside the transaction (caches,
	// in-memory counters, notifications): do that after Update returned
	// nil, when the last run has committed. Every run but the last leaves
	// no trace in the store. An error returned to the caller is fn's own
	// error or the store's; a failed serialization that the store gave up
	// retrying wraps ErrUnavailable.
	Update(ctx context.Context, fn func(Tx) error) error

	// Batch is Update for many concurrent callers: the store may run the
	// functions of several concurrent Batch calls in one transaction and
	// one durable commit (group commit). If one function fails, the store
	// retries the others and runs the failing one on its own, so fn must be
	// safe to run more than once and must not keep state between runs,
	// exactly as Update's. Batch returns only after fn's writes are
	// durably committed.
	Batch(ctx context.Context, fn func(Tx) error) error

	// Close releases the store. Transactions started after Close fail with
	// ErrClosed.
	Close() error
}

// Tx is one transaction of a Store. Its methods must only be called from the
// goroutine running the transaction function, and never after that function
// returns. Byte slices passed to a Tx may be reused by the caller after the
// call returns. A value returned by Get is owned by the caller and stays
// valid after the transaction ends; the key and value given to a Scan
// callback are valid only during that call and must not be modified (so
// backends can scan without copying). Keys are never empty. If ctx is
// cancelled before an Update commits, the transaction is rolled back.
type Tx interface {
	// Get returns the value stored under key in table, or ErrNotFound.
	Get(ctx context.Context, table Table, key []byte) ([]byte, error)

	// Put stores value under key in table, replacing any existing value.
	Put(ctx context.Context, table Table, key, value []byte) error

	// Insert stores value under key in table, or returns ErrConflict
	// without writing anything if the key already exists.
	Insert(ctx context.Context, table Table, key, value []byte) error

	// Delete removes key from table, or returns ErrNotFound.
	Delete(ctx context.Context, table Table, key []byte) error

	// Scan calls fn for each key of table within r, in ascending key
	// order, or descending when r.Reverse is set. The key and value given
	// to fn are valid only during the call and read-only; fn copies what
	// it keeps.
	// Returning ErrStopScan from fn ends the scan without error; any other
	// error ends it and is returned. fn must not write to the table being
	// scanned.
	Scan(ctx context.Context, table Table, r Range, fn func(key, value []byte) error) error

	// Increment adds one to the counter stored under key in table and
	// returns the new value (1 the first time). The counter is an ordinary
	// transactional write: it is rolled back with the transaction, so a
	// sequence of counter values is gapless across committed transactions.
	Increment(ctx context.Context, table Table, key []byte) (uint64, error)
}

// Table names one keyspace of a Store. Package billing owns the list of
// tables; backends create a table on first write and treat a table that
// was never written as empty.
type Table string

// Range selects the keys of a Scan. A key is in the range when it starts with
// Prefix, is at least Start (when Start is set) and is less than End (when End
// is set). Start and End are whole keys, including the prefix.
type Range struct {
	Prefix  []byte
	Start   []byte
	End     []byte
	Reverse bool
}

// Contains reports whether key lies within r.
func (r Range) Contains(key []byte) bool {
	if len(key) < len(r.Prefix) || string(key[:len(r.Prefix)]) != string(r.Prefix) {
		return false
	}
	if r.Start != nil && string(key) < string(r.Start) {
		return false
	}
	if r.End != nil && string(key) >= string(r.End) {
		return false
	}
	return true
}

// Sentinel errors of the Store contract. Every backend returns them (possibly
// wrapped) and callers test them with errors.Is.
var (
	// ErrNotFound reports a key that does not exist.
	ErrNotFound = errors.New("billing: not found")
	// ErrConflict reports an Insert of a key that already exists.
	ErrConflict = errors.New("billing: conflict")
	// ErrReadOnly reports a write attempted in a View transaction.
	ErrReadOnly = errors.New("billing: write in a read-only transaction")
	// ErrClosed reports a transaction started on a closed store.
	ErrClosed = errors.New("billing: store closed")
	// ErrUnavailable reports a store that cannot write right now (read-only
	// file system, disk full, failed sync). Service maps it to the
	// unavailable error code.
	ErrUnavailable = errors.New("billing: store unavailable")
	// ErrStopScan ends a Scan early without error when returned by its
	// callback.
	ErrStopScan = errors.New("billing: stop scan")
)

// PrefixEnd returns the smallest key greater than every key that starts with
// prefix, for use as a Range End; nil when no such key exists. It is part of
// the port: Store implementations bound a scan of Range.Prefix with it.
func PrefixEnd(prefix []byte) []byte {
	end := append([]byte(nil), prefix...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}
