// Package billingtest is the test kit of package billing: a Service on a
// real store with a stub clock and deterministic ids, for tests and
// runnable examples.
//
// The kit picks the store. By default a Service runs on a fresh memstore
// (WithBolt: a bbolt file). With the environment variable
// BILLINGD_TEST_POSTGRES set to a PostgreSQL connection string, every
// store the kit makes (NewService, Store, DurableStore, WithBolt) is a
// pgstore in a fresh schema of that database, dropped when the test ends,
// so the same tests run on PostgreSQL:
//
//	BILLINGD_TEST_POSTGRES='postgres://postgres@127.0.0.1:5432/postgres' go test ./...
package billingtest

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/billingd/billing"
	"github.com/billingd/billing/storage/boltstore"
	"github.com/billingd/billing/storage/memstore"
	"github.com/billingd/billing/storage/pgstore/pgtest"
)

// Start is the stub clock's initial time: 2024-07-30T12:00:00Z.
var Start = time.Date(2024, 7, 30, 12, 0, 0, 0, time.UTC)

// Clock is a stub clock. It stands still until Set or Advance moves it.
// It is safe for concurrent use.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a clock showing t.
func NewClock(t time.Time) *Clock { return &Clock{now: t} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// IDs returns deterministic, sequential ids in the UUIDv7 layout, so that
// they sort in creation order as the Service requires:
// 00000001-0000-7000-8000-000000000000, 00000002-..., and so on.
func IDs() func() string {
	var mu sync.Mutex
	n := 0
	return func() string {
		mu.Lock()
		defer mu.Unlock()
		n++
		return fmt.Sprintf("%08x-0000-7000-8000-000000000000", n)
	}
}

// MillisecondIDs returns a Config.NewID of ascending ids in the UUIDv7
// layout of which every perMs in a row share their millisecond (their first
// 6 bytes), as billingd's own ids of one batch do, so that the usage events
// of a batch share records of the id index; and ahead, the id newID returns
// k calls from now (1: the next).
func MillisecondIDs(perMs int) (newID func() string, ahead func(k int) string) {
	var mu sync.Mutex
	n := 0
	id := func(i int) string {
		ms := fmt.Sprintf("%012x", i/perMs)
		return fmt.Sprintf("%s-%s-7000-8000-%012x", ms[:8], ms[8:], i)
	}
	newID = func() string {
		mu.Lock()
		defer mu.Unlock()
		n++
		return id(n)
	}
	ahead = func(k int) string {
		mu.Lock()
		defer mu.Unlock()
		return id(n + k)
	}
	return newID, ahead
}

// Option changes how NewService builds its Service.
type Option func(*options)

type options struct {
	store  billing.Store
	bolt   bool
	uuids  bool
	config billing.Config
}

// WithStore runs the Service on store instead of a fresh memstore.
func WithStore(store billing.Store) Option { return func(o *options) { o.store = store } }

// WithBolt runs the Service on a durable store (DurableStore): a fresh
// bbolt file under tb.TempDir(), whose consistency is checked when the test
// ends, or PostgreSQL under BILLINGD_TEST_POSTGRES.
func WithBolt() Option { return func(o *options) { o.bolt = true } }

// WithUUIDs keeps the Service's own ids (UUIDv7, drawn per batch for usage
// events) instead of the deterministic ones, for benchmarks of the paths
// production runs.
func WithUUIDs() Option { return func(o *options) { o.uuids = true } }

// WithConfig sets the base configuration; its Now and NewID are replaced by
// the stub clock and deterministic ids unless set.
func WithConfig(cfg billing.Config) Option { return func(o *options) { o.config = cfg } }

// NewService returns a Service on a fresh store (Store, or the store of
// the options) with a stub clock at Start and deterministic ids. The store
// is closed when the test ends.
func NewService(tb testing.TB, opts ...Option) (*billing.Service, *Clock) {
	tb.Helper()
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	switch {
	case o.store != nil:
	case o.bolt:
		o.store = DurableStore(tb)
	default:
		o.store = Store(tb)
	}
	clock := NewClock(Start)
	cfg := o.config
	if cfg.Now == nil {
		cfg.Now = clock.Now
	}
	if cfg.NewID == nil && !o.uuids {
		cfg.NewID = IDs()
	}
	svc, err := billing.New(o.store, &cfg)
	if err != nil {
		tb.Fatalf("billing.New: %v", err)
	}
	return svc, clock
}

// Postgres reports whether the kit's stores are on PostgreSQL
// (BILLINGD_TEST_POSTGRES is set).
func Postgres() bool { return pgtest.Enabled() }

// Store returns a fresh, empty store closed when the test ends: a memstore,
// or a pgstore under BILLINGD_TEST_POSTGRES.
func Store(tb testing.TB) billing.Store {
	tb.Helper()
	if pgtest.Enabled() {
		return pgtest.Open(tb, nil)
	}
	s := memstore.New()
	tb.Cleanup(func() { _ = s.Close() })
	return s
}

// DurableStore returns a fresh, empty store that persists, closed when the
// test ends: a bbolt file (as Bolt), or a pgstore under
// BILLINGD_TEST_POSTGRES. Tests of behaviour on real storage (faults,
// several Services on one store) use it rather than Bolt, so they run on
// both backends.
func DurableStore(tb testing.TB) billing.Store {
	tb.Helper()
	if pgtest.Enabled() {
		return pgtest.Open(tb, nil)
	}
	return Bolt(tb)
}

// Bolt opens a bbolt store in a file under tb.TempDir(). When the test ends
// it runs bbolt's consistency check, unless the test closed the store
// itself, and closes the store.
func Bolt(tb testing.TB) *boltstore.Store {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "billing.db")
	store, err := boltstore.Open(path, &boltstore.Options{NoSync: true})
	if err != nil {
		tb.Fatalf("boltstore.Open: %v", err)
	}
	tb.Cleanup(func() {
		if err := store.Check(); err != nil && !errors.Is(err, billing.ErrClosed) {
			tb.Errorf("bbolt consistency check: %v", err)
		}
		if err := store.Close(); err != nil {
			tb.Errorf("closing the store: %v", err)
		}
	})
	return store
}

// Account creates an account named name and returns its id.
func Account(tb testing.TB, svc *billing.Service, name string) string {
	tb.Helper()
	a, err := svc.CreateAccount(context.Background(), billing.CreateAccountParams{Name: name})
	if err != nil {
		tb.Fatalf("CreateAccount: %v", err)
	}
	return a.ID
}
