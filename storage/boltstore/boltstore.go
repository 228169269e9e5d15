// Package boltstore is the billing.Store backed by one bbolt file, the
// default storage of billingd.
//
// Every billing.Table is a top-level bucket, created on its first write;
// keys and values are stored as given, counters as 8-byte big-endian
// integers. Values are copied out of bbolt's memory map, so no slice handed
// to a caller depends on the transaction that produced it.
//
// A failed commit or sync leaves the file and the kernel's page cache in a
// state bbolt cannot vouch for, so the Store does not carry on writing: it
// closes the file, answers every transaction with an error wrapping
// billing.ErrUnavailable, and reopens the file on a later transaction (at
// most once per second). No bbolt type appears in this package's API.
package boltstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/billingd/billing"
	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// ErrLocked reports that Open gave up waiting for the file lock: another
// process (usually a running billingd) holds the database file.
var ErrLocked = errors.New("boltstore: database file is locked by another process")

// Defaults of Options.
const (
	defaultLockTimeout = time.Second
	// A closed loop of N concurrent writers gets about N/(delay+commit)
	// commits per second, so the delay should not exceed one fsync (~1-2ms
	// on an SSD): long enough for writers arriving during a commit to share
	// the next one, short enough that a lone writer barely notices. bbolt's
	// own default of 10ms would cap 64 concurrent writers at a few
	// thousand writes per second.
	defaultMaxBatchDelay = 2 * time.Millisecond
	// Bounds the memory and the commit time of one group commit; 1000
	// small writes are well under a megabyte of dirty pages.
	defaultMaxBatchSize = 1000
	defaultFileMode     = 0o600

	// reopenInterval spaces the attempts to reopen a failed file, so a disk
	// that keeps failing is not hammered by every incoming request.
	reopenInterval = time.Second
	// compactTxSize bounds the size of one transaction of Compact.
	compactTxSize = 64 << 20
)

// Options configures Open. A nil *Options uses every default.
type Options struct {
	// LockTimeout is how long Open waits for the file lock while another
	// process holds the file; bbolt allows one writer process per file.
	// A negative value tries once without waiting. Defaults to 1s.
	LockTimeout time.Duration

	// MaxBatchDelay is how long Batch waits for other callers before
	// committing their functions together. Defaults to 2ms.
	MaxBatchDelay time.Duration

	// MaxBatchSize is the number of Batch functions that triggers a group
	// commit without waiting for MaxBatchDelay. Defaults to 1000.
	MaxBatchSize int

	// NoSync skips fsync on commit. A crash then loses acknowledged writes
	// and can corrupt the file: for tests and benchmarks only. Defaults to
	// false.
	NoSync bool

	// ReadOnly opens an existing file with a shared lock, so several
	// processes may read it; every write fails with an error wrapping
	// billing.ErrUnavailable. Defaults to false.
	ReadOnly bool

	// FileMode is the permission of a file Open creates. Defaults to 0600:
	// the file holds API key hashes and customer data.
	FileMode os.FileMode
}

func (o *Options) withDefaults() (Options, error) {
	var r Options
	if o != nil {
		r = *o
	}
	if r.MaxBatchDelay < 0 || r.MaxBatchSize < 0 {
		return r, errors.New("boltstore: MaxBatchDelay and MaxBatchSize must not be negative")
	}
	if r.LockTimeout == 0 {
		r.LockTimeout = defaultLockTimeout
	}
	if r.MaxBatchDelay == 0 {
		r.MaxBatchDelay = defaultMaxBatchDelay
	}
	if r.MaxBatchSize == 0 {
		r.MaxBatchSize = defaultMaxBatchSize
	}
	if r.FileMode == 0 {
		r.FileMode = defaultFileMode
	}
	return r, nil
}

// Store is a billing.Store over one bbolt file. It is safe for concurrent
// use.
type Store struct {
	path string
	opts Options
	// Test seams: the clock of the reopen interval, and the file opener
	// (to inject write failures).
	now      func() time.Time
	openFile func(name string, flag int, perm os.FileMode) (*os.File, error)

	// mu is held shared for the whole of every transaction and exclusively
	// to swap db: closing or reopening the file never races a transaction.
	mu       sync.RWMutex
	db       *bolt.DB // nil while failed or closed
	closed   bool
	cause    error     // why the last failure closed db
	failedAt time.Time // when db was closed or last reopened in vain

	// failed is set, under the shared lock, by the transaction whose
	// commit failed, so that no other transaction writes to db while the
	// failing one waits for the exclusive lock to close it.
	failed atomic.Pointer[error]
}

var _ billing.Store = (*Store)(nil)

// Open opens or creates the bbolt file at path. It fails after
// opts.LockTimeout when another process holds the file.
func Open(path string, opts *Options) (*Store, error) {
	return open(path, opts, time.Now, os.OpenFile)
}

func open(path string, opts *Options, now func() time.Time, openFile func(string, int, os.FileMode) (*os.File, error)) (*Store, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	s := &Store{path: path, opts: o, now: now, openFile: openFile}
	if s.db, err = s.openDB(); err != nil {
		return nil, fmt.Errorf("boltstore: %w", err)
	}
	return s, nil
}

func (s *Store) openDB() (*bolt.DB, error) {
	timeout := s.opts.LockTimeout
	if timeout < 0 {
		timeout = time.Nanosecond // bbolt's 0 means wait forever
	}
	db, err := bolt.Open(s.path, s.opts.FileMode, &bolt.Options{
		Timeout:  timeout,
		NoSync:   s.opts.NoSync,
		ReadOnly: s.opts.ReadOnly,
		OpenFile: s.openFile,
	})
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, fmt.Errorf("open %s: the file is locked by another process (waited %v): %w",
			s.path, s.opts.LockTimeout, ErrLocked)
	}
	var pathErr *fs.PathError
	if err != nil && !errors.As(err, &pathErr) {
		return nil, fmt.Errorf("open %s: %w", s.path, err)
	}
	if err != nil {
		return nil, err
	}
	db.MaxBatchDelay = s.opts.MaxBatchDelay
	db.MaxBatchSize = s.opts.MaxBatchSize
	return db, nil
}

// Path returns the path of the database file.
func (s *Store) Path() string { return s.path }

// Close closes the file. Transactions started afterwards fail with
// billing.ErrClosed; Close waits for running ones. Closing twice is
// harmless.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	if s.db == nil {
		return nil
	}
	err := s.db.Close()
	s.db = nil
	if err != nil {
		return fmt.Errorf("boltstore: close %s: %w", s.path, err)
	}
	return nil
}

// unavailable wraps err so that errors.Is matches both
// billing.ErrUnavailable and the underlying cause.
func (s *Store) unavailable(op string, err error) error {
	return fmt.Errorf("boltstore: %s: %s: %w: %w", s.path, op, billing.ErrUnavailable, err)
}

// withDB runs fn with the open bbolt DB while holding the shared lock.
func (s *Store) withDB(fn func(db *bolt.DB) error) error {
	db, err := s.acquire()
	if err != nil {
		return err
	}
	defer s.mu.RUnlock()
	return fn(db)
}

// acquire returns the open DB with the shared lock held, reopening a
// failed file first when it is time to try again.
func (s *Store) acquire() (*bolt.DB, error) {
	for range 2 {
		s.mu.RLock()
		if s.closed {
			s.mu.RUnlock()
			return nil, billing.ErrClosed
		}
		if s.db != nil && s.failed.Load() == nil {
			return s.db, nil
		}
		s.mu.RUnlock()

		s.mu.Lock()
		err := s.recoverLocked()
		s.mu.Unlock()
		if err != nil {
			return nil, err
		}
	}
	// Reopened, and failed again before this caller got to use it.
	return nil, s.unavailable("open", errors.New("the store failed again right after reopening"))
}

// recoverLocked closes a DB whose commit failed and, at most once per
// reopenInterval, opens the file again. The caller holds mu exclusively.
func (s *Store) recoverLocked() error {
	if s.closed {
		return billing.ErrClosed
	}
	if f := s.failed.Load(); f != nil {
		if s.db != nil {
			_ = s.db.Close() // the failure is what gets reported
			s.db = nil
		}
		s.cause, s.failedAt = *f, s.now()
		s.failed.Store(nil)
	}
	if s.db != nil {
		return nil // another caller reopened it
	}
	if wait := reopenInterval - s.now().Sub(s.failedAt); wait > 0 {
		return s.unavailable(fmt.Sprintf("closed after a failure, next reopen in %v", wait.Round(time.Millisecond)), s.cause)
	}
	db, err := s.openDB()
	if err != nil {
		s.cause, s.failedAt = err, s.now()
		return s.unavailable("reopen", err)
	}
	s.db, s.cause = db, nil
	return nil
}

// fail marks the store failed after a commit error on db and closes db as
// soon as running transactions let go of it. It returns the error for the
// caller. fail must be called without holding mu.
func (s *Store) fail(db *bolt.DB, err error) error {
	if errors.Is(err, bolterrors.ErrDatabaseReadOnly) {
		// Not a fault: the store was opened ReadOnly.
		return s.unavailable("write", err)
	}
	s.failed.CompareAndSwap(nil, &err)
	s.mu.Lock()
	if s.db == db && s.failed.Load() != nil {
		_ = s.recoverLocked() // closes db; it is too early to reopen
	}
	s.mu.Unlock()
	return s.unavailable("commit", err)
}

// errFailed is returned by a write that started while another transaction
// was marking the store failed.
var errFailed = errors.New("boltstore: a concurrent commit failed")

// View runs fn in a bbolt read-only transaction.
func (s *Store) View(ctx context.Context, fn func(billing.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.withDB(func(db *bolt.DB) error {
		btx, err := db.Begin(false)
		if err != nil {
			return s.unavailable("begin", err)
		}
		defer func() { _ = btx.Rollback() }()
		return run(btx, fn)
	})
}

// Update runs fn in a bbolt read-write transaction and commits it, with an
// fsync unless Options.NoSync is set.
func (s *Store) Update(ctx context.Context, fn func(billing.Tx) error) error {
	return s.write(ctx, func(db *bolt.DB) (err, commitErr error) {
		btx, err := db.Begin(true)
		if err != nil {
			return s.unavailable("begin", err), nil // a ReadOnly store, or a closed file
		}
		// A no-op once committed; rolls back on error and on panic.
		defer func() { _ = btx.Rollback() }()
		if err := s.ready(ctx); err != nil {
			return err, nil
		}
		if err := run(btx, fn); err != nil {
			return err, nil
		}
		if err := ctx.Err(); err != nil {
			return err, nil // the caller gave up: no effect, nothing acknowledged
		}
		return nil, btx.Commit()
	})
}

// Batch runs fn through bbolt's DB.Batch, which commits the functions of
// concurrent callers in one transaction and one fsync. As the port
// documents, fn may run more than once.
func (s *Store) Batch(ctx context.Context, fn func(billing.Tx) error) error {
	return s.write(ctx, func(db *bolt.DB) (err, commitErr error) {
		// fnErr is the result of fn's last run. DB.Batch returns either it
		// or a commit error; only the latter means the file is in trouble.
		// DB.Batch hands the result over on a channel after fn's last run,
		// which orders these accesses.
		var fnErr error
		err = db.Batch(func(btx *bolt.Tx) error {
			if fnErr = s.ready(ctx); fnErr == nil {
				fnErr = run(btx, fn)
			}
			return fnErr
		})
		if err == nil || err == fnErr {
			return err, nil
		}
		return nil, err
	})
}

// write runs one write transaction of Update or Batch on the current file.
// do returns either err, the result of the caller's fn (no change was
// committed), or commitErr, a failed commit: that one marks the store
// failed before the file is released (unless it only says the store is
// ReadOnly), and fail then recovers it.
func (s *Store) write(ctx context.Context, do func(db *bolt.DB) (err, commitErr error)) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	var failedDB *bolt.DB
	var commitErr error
	err := s.withDB(func(db *bolt.DB) error {
		err, cerr := do(db)
		if cerr == nil {
			return err
		}
		failedDB, commitErr = db, cerr
		if !errors.Is(cerr, bolterrors.ErrDatabaseReadOnly) {
			s.failed.CompareAndSwap(nil, &cerr)
		}
		return nil
	})
	if commitErr != nil {
		return s.fail(failedDB, commitErr)
	}
	return err
}

// ready reports whether a write transaction may proceed.
func (s *Store) ready(ctx context.Context) error {
	if s.failed.Load() != nil {
		return s.unavailable("write", errFailed)
	}
	return ctx.Err()
}

// run calls fn with a Tx over btx and invalidates the Tx when fn returns:
// bbolt memory must never be touched after its transaction ends.
func run(btx *bolt.Tx, fn func(billing.Tx) error) error {
	t := &tx{btx: btx}
	defer func() { t.btx = nil }()
	return fn(t)
}

// Check runs bbolt's consistency check over the whole file and returns every
// problem found, joined, or nil.
func (s *Store) Check() error {
	return s.withDB(func(db *bolt.DB) error {
		return db.View(func(btx *bolt.Tx) error {
			var errs []error
			for err := range btx.Check() {
				errs = append(errs, err)
			}
			return errors.Join(errs...)
		})
	})
}

// WriteTo writes a consistent copy of the database file to w while other
// transactions carry on: a hot backup, openable with Open.
func (s *Store) WriteTo(w io.Writer) (int64, error) {
	var n int64
	err := s.withDB(func(db *bolt.DB) error {
		return db.View(func(btx *bolt.Tx) error {
			var err error
			n, err = btx.WriteTo(w)
			return err
		})
	})
	return n, err
}

// Compact copies the database file at src into a new file at dst, leaving
// out the free pages src has accumulated. src must not be open for writing
// (stop the server first); dst must not exist. On success the caller
// replaces src with dst.
func Compact(src, dst string) (err error) {
	if _, err := os.Stat(dst); err == nil {
		return fmt.Errorf("boltstore: compact: %s already exists", dst)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("boltstore: compact: %w", err)
	}
	if _, err := os.Stat(src); err != nil {
		return fmt.Errorf("boltstore: compact: %w", err)
	}
	from, err := Open(src, &Options{ReadOnly: true})
	if err != nil {
		return fmt.Errorf("boltstore: compact: %w", err)
	}
	defer from.Close()
	// Durability comes from the single Sync at the end, not from every
	// intermediate commit.
	to, err := bolt.Open(dst, defaultFileMode, &bolt.Options{Timeout: defaultLockTimeout, NoSync: true})
	if err != nil {
		return fmt.Errorf("boltstore: compact: %w", err)
	}
	defer func() {
		if cerr := to.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("boltstore: compact: %w", cerr)
		}
		if err != nil {
			_ = os.Remove(dst)
		}
	}()
	if err := bolt.Compact(to, from.db, compactTxSize); err != nil {
		return fmt.Errorf("boltstore: compact %s into %s: %w", src, dst, err)
	}
	if err := to.Sync(); err != nil {
		return fmt.Errorf("boltstore: compact: sync %s: %w", dst, err)
	}
	return syncDir(filepath.Dir(dst))
}

// syncDir makes a new file's directory entry durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("boltstore: compact: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("boltstore: compact: sync %s: %w", dir, err)
	}
	return nil
}

// Tables returns the names of the tables the file holds (every table ever
// written), in byte order.
func (s *Store) Tables() ([]billing.Table, error) {
	var tables []billing.Table
	err := s.withDB(func(db *bolt.DB) error {
		return db.View(func(btx *bolt.Tx) error {
			return btx.ForEach(func(name []byte, _ *bolt.Bucket) error {
				tables = append(tables, billing.Table(name))
				return nil
			})
		})
	})
	return tables, err
}
