// Package faultstore is a billing.Store that wraps another Store and fails
// chosen operations on demand, so tests can prove how the layers above a
// store behave when the disk fails: which answers clients get, that nothing
// is half-written, and that the service recovers once the fault clears.
//
// Without an injected fault a Store passes every call straight through (it
// passes storagetest.Run). A Fault names the kinds of operation that fail
// (Op, a bit set), how many matching operations succeed first (After), how
// many then fail (Count, 0 = until cleared) and the error they fail with
// (Err, by default ErrInjected, which wraps billing.ErrUnavailable as a real
// backend's disk-full or failed-sync error does):
//
//	fs := faultstore.New(boltstore)
//	fs.Inject(faultstore.Fault{Op: faultstore.OpCommit})           // every commit fails from now on
//	fs.Inject(faultstore.Fault{Op: faultstore.OpWrite, After: 3})   // the 4th Tx write and later fail
//	fs.Clear()                                                      // healthy again
//
// A failed commit is simulated by rolling the wrapped transaction back
// after its function succeeded, so exactly what a backend promises for a
// failed commit holds: nothing of the transaction is visible afterwards.
package faultstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/billingd/billing"
)

// Op is a set of kinds of store operation.
type Op uint

// The kinds of operation a Fault can fail.
const (
	// OpView is the start of a View transaction.
	OpView Op = 1 << iota
	// OpBegin is the start of an Update or Batch transaction.
	OpBegin
	// OpRead is a Tx Get or Scan.
	OpRead
	// OpWrite is a Tx Put, Insert, Delete or Increment.
	OpWrite
	// OpCommit is the commit (and sync) of an Update or Batch whose
	// function succeeded. The transaction is rolled back.
	OpCommit

	// OpAll is every kind of operation.
	OpAll = OpView | OpBegin | OpRead | OpWrite | OpCommit
)

// String names the kinds in o, for messages.
func (o Op) String() string {
	var names []string
	for _, k := range []struct {
		op   Op
		name string
	}{{OpView, "view"}, {OpBegin, "begin"}, {OpRead, "read"}, {OpWrite, "write"}, {OpCommit, "commit"}} {
		if o&k.op != 0 {
			names = append(names, k.name)
		}
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, "|")
}

// ErrInjected is the default error of a Fault. It wraps
// billing.ErrUnavailable, as a real backend's error for a full disk or a
// failed sync does.
var ErrInjected = fmt.Errorf("faultstore: injected fault: %w", billing.ErrUnavailable)

// Fault describes which operations fail.
type Fault struct {
	// Op is the set of operation kinds that the fault counts and fails.
	Op Op
	// After is how many matching operations succeed before the first
	// failure. Defaults to 0: the next matching operation fails.
	After int
	// Count is how many matching operations fail before the fault clears
	// itself. Defaults to 0: every one fails until Clear or Inject.
	Count int
	// Err is the error of a failing operation, wrapped so that errors.Is
	// matches it. Defaults to ErrInjected.
	Err error
}

// Store is a billing.Store that passes every call to the Store it wraps,
// failing those the current Fault selects. It is safe for concurrent use.
type Store struct {
	inner billing.Store

	mu       sync.Mutex
	fault    *Fault // nil when healthy
	seen     int    // matching operations since Inject
	failures int    // operations failed since New
}

var _ billing.Store = (*Store)(nil)

// New returns a healthy Store over inner.
func New(inner billing.Store) *Store { return &Store{inner: inner} }

// Inner returns the wrapped Store.
func (s *Store) Inner() billing.Store { return s.inner }

// Inject replaces the current fault with f, starting its counts afresh.
func (s *Store) Inject(f Fault) {
	if f.Err == nil {
		f.Err = ErrInjected
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fault, s.seen = &f, 0
}

// Clear removes the current fault: every operation passes through again.
func (s *Store) Clear() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fault = nil
}

// Failures returns how many operations the Store has failed since New.
func (s *Store) Failures() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failures
}

// Active reports whether a fault is injected and has failures left.
func (s *Store) Active() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fault != nil
}

// check counts one operation of kind op and returns the error it must fail
// with, or nil.
func (s *Store) check(op Op) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.fault
	if f == nil || f.Op&op == 0 {
		return nil
	}
	s.seen++
	if s.seen <= f.After {
		return nil
	}
	s.failures++
	if f.Count > 0 && s.seen-f.After >= f.Count {
		s.fault = nil // that was the last failure
	}
	return &faultError{op: op, err: f.Err}
}

// faultError is the error of one failed operation.
type faultError struct {
	op  Op
	err error
}

func (e *faultError) Error() string { return fmt.Sprintf("faultstore: %s failed: %v", e.op, e.err) }
func (e *faultError) Unwrap() error { return e.err }

// IsInjected reports whether err comes from a fault of this package.
func IsInjected(err error) bool {
	var fe *faultError
	return errors.As(err, &fe)
}

// View runs fn in a View of the wrapped Store, unless OpView fails.
func (s *Store) View(ctx context.Context, fn func(billing.Tx) error) error {
	if err := s.check(OpView); err != nil {
		return err
	}
	return s.inner.View(ctx, func(tx billing.Tx) error { return fn(&faultTx{s: s, tx: tx}) })
}

// Update runs fn in an Update of the wrapped Store, unless OpBegin fails;
// when OpCommit fails the transaction is rolled back after fn succeeds.
func (s *Store) Update(ctx context.Context, fn func(billing.Tx) error) error {
	return s.write(ctx, s.inner.Update, fn)
}

// Batch is Update over the wrapped Store's Batch. Each run of fn counts as
// one commit.
func (s *Store) Batch(ctx context.Context, fn func(billing.Tx) error) error {
	return s.write(ctx, s.inner.Batch, fn)
}

func (s *Store) write(ctx context.Context, run func(context.Context, func(billing.Tx) error) error, fn func(billing.Tx) error) error {
	if err := s.check(OpBegin); err != nil {
		return err
	}
	return run(ctx, func(tx billing.Tx) error {
		if err := fn(&faultTx{s: s, tx: tx}); err != nil {
			return err
		}
		return s.check(OpCommit) // an error rolls everything back
	})
}

// Close closes the wrapped Store; it never fails by injection.
func (s *Store) Close() error { return s.inner.Close() }

// faultTx is a billing.Tx that fails reads and writes the Fault selects.
type faultTx struct {
	s  *Store
	tx billing.Tx
}

func (t *faultTx) Get(ctx context.Context, table billing.Table, key []byte) ([]byte, error) {
	if err := t.s.check(OpRead); err != nil {
		return nil, err
	}
	return t.tx.Get(ctx, table, key)
}

func (t *faultTx) Scan(ctx context.Context, table billing.Table, r billing.Range, fn func(key, value []byte) error) error {
	if err := t.s.check(OpRead); err != nil {
		return err
	}
	return t.tx.Scan(ctx, table, r, fn)
}

func (t *faultTx) Put(ctx context.Context, table billing.Table, key, value []byte) error {
	if err := t.s.check(OpWrite); err != nil {
		return err
	}
	return t.tx.Put(ctx, table, key, value)
}

func (t *faultTx) Insert(ctx context.Context, table billing.Table, key, value []byte) error {
	if err := t.s.check(OpWrite); err != nil {
		return err
	}
	return t.tx.Insert(ctx, table, key, value)
}

func (t *faultTx) Delete(ctx context.Context, table billing.Table, key []byte) error {
	if err := t.s.check(OpWrite); err != nil {
		return err
	}
	return t.tx.Delete(ctx, table, key)
}

func (t *faultTx) Increment(ctx context.Context, table billing.Table, key []byte) (uint64, error) {
	if err := t.s.check(OpWrite); err != nil {
		return 0, err
	}
	return t.tx.Increment(ctx, table, key)
}
