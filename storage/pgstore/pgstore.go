// Package pgstore is the billing.Store over PostgreSQL (15 or later), for
// deployments that need a managed, replicated database instead of the
// embedded bbolt file.
//
// # Schema
//
// Every billing.Table lives in one table, billing_kv (tbl text, k bytea,
// v bytea, primary key (tbl, k)), except the usage event tables, which
// have tables of their own with the same columns (see Relation): bytea
// compares bytewise, so key order is the port's byte order and a Scan is
// an index range read. Counters are
// ordinary rows holding an 8-byte big-endian integer, as in boltstore, so a
// copy between the two backends is byte for byte. The schema is created and
// upgraded on Open by numbered migrations recorded in billing_schema; a
// database whose schema is newer than this package knows is refused. The
// migrations also keep read-only views of the financial records, with typed
// columns, in a reporting schema (see Options.ReportingSchema and
// docs/reporting.md).
//
// # Transactions
//
// Update and Batch run at SERIALIZABLE, which gives the port's promise of
// one writer at a time without any explicit locking; View runs at
// REPEATABLE READ, READ ONLY (one consistent snapshot, never blocked). A
// serialization failure (SQLSTATE 40001) or a deadlock (40P01) rolls the
// transaction back and runs the transaction function again after a jittered,
// growing pause, up to Options.MaxRetries times; after that the error wraps
// billing.ErrUnavailable. The port lets every Update and Batch function run
// more than once for this reason.
//
// Puts and Deletes are kept in the transaction and sent at the commit, in
// one statement per table (many new keys with COPY, the others with one
// upsert; Deletes with one delete), so a transaction that writes a
// thousand records costs one round trip, not a thousand. Reads between
// the writes do not send them: a Get or GetMany answers a key the
// transaction wrote from memory, a Scan merges the unsent writes of its
// range with the rows the server returns, an Insert or a Delete of a key
// the transaction already read or wrote costs no statement; only an
// Increment of a counter put earlier sends its table's writes first. What
// a transaction read (single keys, small ranges read to their end) is
// remembered, so reading it again costs no round trip (a snapshot answers
// the same), and MultiGetTx.Prefetch reads many keys and prefixes of
// several tables in one round trip (the billing engine reads a batch's
// records so). Errors of
// the network or the server (connection refused, lost, server shutting
// down, too many connections) wrap billing.ErrUnavailable; the pool
// reconnects by itself once the server is back.
//
// The SQL is kept to what PostgreSQL-compatible distributed databases also
// accept (plain tables and primary keys, insert ... on conflict, update and
// delete ... returning, select ... for update, SERIALIZABLE with retries);
// no advisory locks, no LISTEN/NOTIFY.
package pgstore

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/billingd/billing"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Defaults of Options.
const (
	defaultMaxConns = 16
	// defaultConnectTimeout applies when the connection string sets no
	// connect_timeout.
	defaultConnectTimeout = 5 * time.Second
	defaultMaxRetries     = 60
	defaultMaxBatchDelay  = 2 * time.Millisecond
	defaultMaxBatchSize   = 1000
	// Retry pauses grow from retryBase, doubling up to retryCap, each
	// drawn uniformly between half and all of that (jitter), so
	// transactions that collided once do not collide again in lockstep.
	retryBase = time.Millisecond
	retryCap  = 100 * time.Millisecond
)

// Options configures Open. A nil *Options uses every default.
type Options struct {
	// Schema is the PostgreSQL schema that holds billingd's tables. It is
	// created when missing and put first on every connection's search
	// path. Defaults to the connection's own search path (usually
	// "public"), which a search_path parameter of the URL can set.
	Schema string

	// ReportingSchema is the PostgreSQL schema of the read-only reporting
	// views (docs/reporting.md), created by the migration that creates the
	// views. Defaults to billing_reporting for a store whose tables are in
	// "public", else to the store's schema followed by "_reporting" (a
	// store in schema "billing" reports in billing_reporting). It only
	// matters when the views are created: views that exist stay where they
	// are.
	ReportingSchema string

	// MaxConns bounds the connection pool. A URL's pool_max_conns wins.
	// Defaults to 16.
	MaxConns int32

	// MaxRetries is how many times a transaction that failed to serialize
	// (or deadlocked) is run again before the error is returned, wrapping
	// billing.ErrUnavailable. Defaults to 60 (about 4.5 seconds of pauses).
	MaxRetries int

	// MaxBatchDelay is how long Batch waits for other callers before
	// running their functions in one transaction. Defaults to 2ms.
	MaxBatchDelay time.Duration

	// MaxBatchSize is the number of Batch functions that starts a group
	// commit without waiting for MaxBatchDelay. Defaults to 1000.
	MaxBatchSize int

	// Tracer, when set, sees every statement the store sends: pgx calls
	// its QueryTracer methods for each statement sent alone (BEGIN and
	// COMMIT included), and, when it implements them, pgx.BatchTracer's
	// for each pipeline and pgx.CopyFromTracer's for each COPY. For
	// tracing (OpenTelemetry's pgx tracers) or counting a request's round
	// trips (pgtest.RoundTrips). Nil traces nothing.
	Tracer pgx.QueryTracer
}

func (o *Options) withDefaults() Options {
	var r Options
	if o != nil {
		r = *o
	}
	if r.MaxRetries <= 0 {
		r.MaxRetries = defaultMaxRetries
	}
	if r.MaxBatchDelay <= 0 {
		r.MaxBatchDelay = defaultMaxBatchDelay
	}
	if r.MaxBatchSize <= 0 {
		r.MaxBatchSize = defaultMaxBatchSize
	}
	return r
}

// Store is a billing.Store over a PostgreSQL database. It is safe for
// concurrent use.
type Store struct {
	pool   *pgxpool.Pool
	opts   Options
	closed atomic.Bool
	// running counts transactions in progress, so Close waits for them.
	running sync.WaitGroup
	mu      sync.Mutex // guards closing and running.Add
	batch   batcher
	// retried counts transaction functions run again after a
	// serialization failure or deadlock (for tests and metrics).
	retried atomic.Int64
	// reporting is the schema of the reporting views (set by migrate).
	reporting string
}

var _ billing.Store = (*Store)(nil)

// IsURL reports whether s names a PostgreSQL database rather than a file:
// a postgres:// or postgresql:// URL, or a libpq key=value connection
// string ("host=db dbname=billing").
func IsURL(s string) bool {
	if strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://") {
		return true
	}
	for _, f := range strings.Fields(s) {
		k, _, ok := strings.Cut(f, "=")
		switch k {
		case "host", "hostaddr", "dbname", "user", "port", "sslmode", "service":
			if ok {
				return true
			}
		}
	}
	return false
}

// Open connects to the database named by connString (a postgres:// URL or
// a libpq key=value string; the password may also come from PGPASSWORD or a
// password file), creates or upgrades the schema, and returns the Store. It
// fails when the database cannot be reached, or when its schema is newer
// than this package knows.
func Open(ctx context.Context, connString string, opts *Options) (*Store, error) {
	o := opts.withDefaults()
	cfg, err := pgxpool.ParseConfig(connString)
	if err != nil {
		// pgx quotes the connection string in some errors; never the
		// password.
		return nil, fmt.Errorf("pgstore: parsing the connection string: %w", redact(err))
	}
	if o.Schema != "" {
		cfg.ConnConfig.RuntimeParams["search_path"] = o.Schema
	}
	if o.Tracer != nil {
		cfg.ConnConfig.Tracer = o.Tracer
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		// Without a bound, a request would wait for an unreachable
		// server as long as its client does.
		cfg.ConnConfig.ConnectTimeout = defaultConnectTimeout
	}
	if o.MaxConns > 0 && !strings.Contains(connString, "pool_max_conns") {
		cfg.MaxConns = o.MaxConns
	} else if !strings.Contains(connString, "pool_max_conns") {
		cfg.MaxConns = defaultMaxConns
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("pgstore: %w", classify(err))
	}
	s := &Store{pool: pool, opts: o}
	s.batch.s = s
	if err := s.migrate(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	return s, nil
}

// redact drops the text of a connection string parse error, which may
// quote the password.
func redact(err error) error {
	var pe *pgconn.ParseConfigError
	if errors.As(err, &pe) {
		return errors.New("invalid connection string (details withheld: they could show the password)")
	}
	return err
}

// Close closes the pool. Transactions started afterwards fail with
// billing.ErrClosed; Close waits for running ones. Closing twice is
// harmless.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed.Swap(true) {
		s.mu.Unlock()
		return nil
	}
	s.mu.Unlock()
	s.running.Wait()
	s.pool.Close()
	return nil
}

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.enter(ctx); err != nil {
		return err
	}
	defer s.running.Done()
	return classify(s.pool.Ping(ctx))
}

// Retries returns how many times a transaction function has been run again
// after a serialization failure or a deadlock since Open.
func (s *Store) Retries() int64 { return s.retried.Load() }

// enter registers a running transaction, or fails when ctx is done or the
// store is closed.
func (s *Store) enter(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		return billing.ErrClosed
	}
	s.running.Add(1)
	return nil
}

var (
	readOnly  = pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}
	readWrite = pgx.TxOptions{IsoLevel: pgx.Serializable, AccessMode: pgx.ReadWrite}
)

// View runs fn in a REPEATABLE READ, READ ONLY transaction: one snapshot,
// never a serialization failure.
func (s *Store) View(ctx context.Context, fn func(billing.Tx) error) error {
	if err := s.enter(ctx); err != nil {
		return err
	}
	defer s.running.Done()
	err, _ := s.runOnce(ctx, readOnly, nil, func(t *tx) error { return fn(t) })
	return err
}

// Update runs fn in a SERIALIZABLE transaction and commits it; fn runs
// again when the transaction fails to serialize.
func (s *Store) Update(ctx context.Context, fn func(billing.Tx) error) error {
	if err := s.enter(ctx); err != nil {
		return err
	}
	defer s.running.Done()
	var lane counterLane
	return s.retry(ctx, func() (error, bool) {
		return s.runOnce(ctx, readWrite, &lane, func(t *tx) error { return fn(t) })
	})
}

// retry runs attempt until it succeeds, fails for a reason other than a
// serialization failure, or has been retried MaxRetries times.
func (s *Store) retry(ctx context.Context, attempt func() (err error, again bool)) error {
	for n := 0; ; n++ {
		err, again := attempt()
		if !again {
			return err
		}
		if n >= s.opts.MaxRetries {
			return fmt.Errorf("pgstore: gave up after %d attempts: %w: %w", n+1, billing.ErrUnavailable, err)
		}
		s.retried.Add(1)
		if werr := sleep(ctx, backoff(n)); werr != nil {
			return werr
		}
	}
}

// backoff returns the pause before retry n (0-based).
func backoff(n int) time.Duration {
	d := retryCap
	if n < 10 {
		d = min(retryBase<<n, retryCap)
	}
	return d/2 + rand.N(d/2+1)
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// runOnce runs fn in one transaction. again reports a serialization
// failure or deadlock, after which the whole transaction may run again. A
// panic in fn rolls the transaction back and continues. lane (nil for a
// read-only transaction) carries the counters of a failed run to the next
// run of the same function (see counterLane).
func (s *Store) runOnce(ctx context.Context, opts pgx.TxOptions, lane *counterLane, fn func(*tx) error) (err error, again bool) {
	err, again = s.attempt(ctx, opts, false, lane, fn)
	if errors.Is(err, errCopyConflict) {
		// Sent with COPY, a Put met an existing key, which aborted the
		// transaction: run it again with upserts only, at once (no
		// other transaction is involved).
		err, again = s.attempt(ctx, opts, true, lane, fn)
	}
	return err, again
}

// start begins t's transaction (in lane, if any), or, for a read, takes
// the connection it begins on with its first request (tx.db, tx.fetch).
// release ends what start took besides the transaction.
func (s *Store) start(ctx context.Context, t *tx, lane *counterLane) (release func(), err error) {
	if t.writable || lane != nil {
		t.ptx, release, err = s.begin(ctx, t.opts, lane)
		return release, err
	}
	t.conn, err = s.pool.Acquire(ctx)
	return func() { t.conn.Release() }, err
}

// attempt is one run of runOnce; noCopy sends every Put as an upsert.
func (s *Store) attempt(ctx context.Context, opts pgx.TxOptions, noCopy bool, lane *counterLane, fn func(*tx) error) (err error, again bool) {
	t := &tx{writable: opts.AccessMode == pgx.ReadWrite, noCopy: noCopy, schema: s.opts.Schema, opts: opts}
	release, err := s.start(ctx, t, lane)
	if err != nil {
		return startFailed(ctx, err)
	}
	defer release() // after the rollback deferred below
	if lane != nil {
		defer func() {
			if again {
				lane.add(t.counters)
			}
		}()
	}
	defer func() {
		t.done = true
		if t.ptx != nil {
			// The transaction failed or panicked. Rolling back needs a
			// context that still works: ctx may be the reason.
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			_ = t.ptx.Rollback(rctx)
			cancel()
		}
	}()
	fnErr := fn(t)
	if t.retryable != nil {
		// The server aborted the transaction: whatever fn made of that
		// error, this run is void and fn may run again.
		return t.retryable, !errors.Is(t.retryable, errCopyConflict)
	}
	if fnErr != nil {
		return fnErr, false
	}
	if err := t.flush(ctx); err != nil {
		if t.retryable != nil {
			return t.retryable, !errors.Is(t.retryable, errCopyConflict)
		}
		return err, false
	}
	if err := ctx.Err(); err != nil {
		return err, false // the caller gave up: no effect, nothing acknowledged
	}
	commit := t.ptx
	t.ptx = nil
	if commit == nil {
		return nil, false // a read that sent nothing
	}
	if err := commit.Commit(ctx); err != nil {
		err = t.fail(err)
		return err, t.retryable != nil
	}
	return nil, false
}

// startFailed is what attempt returns when its transaction could not
// begin.
func startFailed(ctx context.Context, err error) (error, bool) {
	if ctx.Err() != nil {
		return ctx.Err(), false
	}
	if isRetryable(err) {
		// Taking a counter's lane met a transaction that holds one of
		// its counters and waits for another of the lane's: the server
		// chose this run to break the deadlock.
		return err, true
	}
	return classify(err), false
}

// classify maps a driver error to the port's errors: context errors stay
// as they are; network failures and server errors of the classes
// "connection exception", "insufficient resources", "operator
// intervention" and "system error" wrap billing.ErrUnavailable; the rest
// (bugs, mostly) are returned unchanged.
func classify(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code[:2] {
		case "08", "53", "57", "58", "40":
			return fmt.Errorf("pgstore: %w: %w", billing.ErrUnavailable, err)
		}
		return fmt.Errorf("pgstore: %w", err)
	}
	if errors.Is(err, billing.ErrUnavailable) || errors.Is(err, billing.ErrClosed) {
		return err
	}
	// Not an answer of the server: the connection could not be made or
	// was lost.
	return fmt.Errorf("pgstore: %w: %w", billing.ErrUnavailable, err)
}

// isRetryable reports a serialization failure or a deadlock.
func isRetryable(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "40001" || pgErr.Code == "40P01")
}

// Redact returns what logs and messages may show of connString: its host,
// port, database and user, as pgx parses them (URL or key=value form,
// quoted values, spaces around "=", several hosts), and nothing else, so
// neither a password nor any other parameter can leak. A string pgx cannot
// parse shows as "(unparsable connection string)".
func Redact(connString string) string {
	cfg, err := pgconn.ParseConfig(connString)
	if err != nil {
		return "(unparsable connection string)"
	}
	return fmt.Sprintf("host=%s port=%d database=%s user=%s", cfg.Host, cfg.Port, cfg.Database, cfg.User)
}
