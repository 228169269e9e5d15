// Package billing is an embeddable billing engine: usage metering, prices,
// seats, billing schedules, invoices, credit notes and signed notifications,
// exact to the last cent.
//
// A Service runs every operation of the product over a Store, the
// persistence port. The default Store is a bbolt file
// (package storage/boltstore); package storage/memstore keeps everything in
// memory for tests and demos. Package httpserver serves the Service as the
// REST API of the specification, and cmd/billingd is the standalone server.
// The API is documented in docs/ (docs/api-guide.md lists the numbers by
// which comments cite the specification's operations, "op 17") and
// described in openapi/openapi.yaml.
//
// Every operation takes the account it acts for; records of one account are
// invisible to every other. Errors are *Error values with stable codes
// (CodeOf), money is Decimal (never float64), and the Service never reads the
// wall clock or generates ids except through Config.Now and Config.NewID.
// The Service starts no goroutines: the embedding program runs background
// work such as the billing engine and the notification dispatcher.
package billing

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"

	"github.com/billingd/billing/internal/cache"
	"github.com/billingd/billing/internal/cursor"
	"github.com/billingd/billing/internal/memo"
	"github.com/google/uuid"
)

// APIVersion is the only version of the API; it is the value of the
// Service-Version header.
const APIVersion = "2024-07-30"

// Config holds the options of a Service. The zero value, and a nil *Config,
// give a production-ready Service; every field says its default.
type Config struct {
	// Now returns the current time. Each operation reads it once and stamps
	// everything it writes with that instant, truncated to the second in
	// UTC. Defaults to time.Now.
	Now func() time.Time

	// NewID returns a new unique record id. Ids must sort in creation order
	// as byte strings (lists ordered by creation rely on it), as UUIDv7 does.
	// Defaults to lower-case UUIDv7 strings.
	NewID func() string

	// Rand is the source of randomness for API key secrets and webhook
	// secrets. Defaults to crypto/rand.Reader.
	Rand io.Reader

	// Rounding is the rounding mode used at the named rounding points
	// (line totals, tax, proration). Defaults to RoundHalfUp.
	Rounding Rounding

	// Logger receives the Service's own log lines (never secrets).
	// Defaults to a logger that discards everything.
	Logger *slog.Logger

	// KeyCacheTTL bounds how long an API key that authenticated is trusted
	// without reading the store again. Zero keeps it until RevokeAPIKey of
	// this Service revokes it: right when no other process writes the store
	// (bbolt). A store shared with other processes (PostgreSQL) needs a
	// bound, since a key revoked elsewhere stays usable here that long;
	// billingd uses 1s there. Negative turns the cache off. Defaults to 0.
	KeyCacheTTL time.Duration

	// What several processes on one store (billingd instances on one
	// PostgreSQL database) need is three settings, each of one job;
	// billingd sets all three on PostgreSQL, with KeyCacheTTL 1s. Every
	// other cache of the Service is correct across processes by
	// construction (docs/ARCHITECTURE.md, "Several instances"). The HTTP
	// layer's own is httpserver.Config.MarkIdempotencyKeysInFlight.

	// ConcurrentBillingRuns says that other processes run the billing
	// engine on the store at the same time: a run then leases the
	// schedules of each batch before billing them, so each schedule is
	// billed once, and RunScheduledBilling bills in rounds shared by the
	// processes (a tick within an interval of the last round joins it).
	// Defaults to false: one process bills (bbolt).
	ConcurrentBillingRuns bool

	// SeriesInOwnTransaction commits the usage series (account and
	// (event type, alias) numbers) that a batch of usage events creates in
	// a short transaction of its own before the batch's. On a store whose
	// concurrent writers conflict and retry (PostgreSQL at SERIALIZABLE),
	// concurrent batches creating series all increment one counter row:
	// then only that small transaction retries, not the whole batch.
	// Defaults to false: one writer at a time (bbolt), where it would only
	// cost a second commit.
	SeriesInOwnTransaction bool

	// LegacyUsageIDRecords writes the usage events' creation-order index
	// in the fixed layout that releases before its compact one read, so
	// that instances of such a release can share the store during a
	// rolling upgrade (docs/ARCHITECTURE.md, "Records"). Both layouts are
	// always read. Defaults to false: the compact layout.
	LegacyUsageIDRecords bool

	// Limits bounds the size of requests. Zero fields take their defaults.
	Limits Limits

	// CustomAggregations computes CUSTOM usage metrics, keyed by metric
	// name. Calculating a CUSTOM metric whose name has no function here
	// answers invalid_state. A nil function is refused by New. Defaults to
	// none.
	CustomAggregations map[string]CustomAggregation

	// BillingGrace is how long after the end of a period the billing engine
	// waits before it bills IN_ARREARS charges, so that late-arriving usage
	// still lands on the invoice. Defaults to 1 hour; negative values are
	// refused by New.
	BillingGrace time.Duration

	// LateUsageWindow is how long after an invoice's billing date the
	// billing engine keeps re-measuring the usage of a finalized invoice:
	// usage that changes within it is corrected in the next run (an
	// adjustment invoice or a credit note, schedules' late usage). Defaults
	// to 31 days; negative values are refused by New.
	LateUsageWindow time.Duration

	// MaxCatchUpInvoices bounds how many invoices the billing engine
	// creates for one schedule in one run. A schedule further behind (one
	// that starts years in the past) catches up over the following runs,
	// and each run's result lists it in CatchingUp. Defaults to 36 (also
	// for zero or negative values).
	MaxCatchUpInvoices int

	// Observer receives billing runs, invoices created, usage events
	// ingested and notification delivery attempts, for metrics. Defaults
	// to none.
	Observer Observer

	// WebhookAllowPrivate allows insecure webhook targets: http:// recipient
	// URLs, and (for a Dispatcher of this Service) connections to loopback,
	// private, link-local, CGNAT and cloud-metadata addresses. For
	// self-hosted setups and tests. Defaults to false: only https:// URLs
	// that resolve to public addresses.
	WebhookAllowPrivate bool

	// PaymentProviders are the payment-provider adapters the Service may
	// collect through (payments/stripe's New for STRIPE), at most one per
	// name. Defaults to none: payments are recorded by hand.
	PaymentProviders []PaymentProvider

	// MasterKey encrypts the accounts' provider secrets in the store
	// (AES-256-GCM; 32 bytes, ParseMasterKey reads BILLINGD_MASTER_KEY).
	// Without one, configuring a provider is refused. Defaults to none.
	MasterKey []byte
}

// Limits are the size limits of docs/api-guide.md. A zero field takes the
// documented default.
type Limits struct {
	// MaxPageSize is the largest page a list returns. Defaults to 100.
	MaxPageSize int
	// DefaultPageSize is the page size when none is given. Defaults to 20.
	DefaultPageSize int
	// MaxStringLength bounds string fields not otherwise limited, in
	// characters. Defaults to 1000.
	MaxStringLength int
	// MaxEntries bounds metadata, externalIds, customFields, property
	// filters and metric parameters. Defaults to 50.
	MaxEntries int
}

func (l Limits) withDefaults() Limits {
	if l.MaxPageSize <= 0 {
		l.MaxPageSize = 100
	}
	if l.DefaultPageSize <= 0 {
		l.DefaultPageSize = 20
	}
	if l.DefaultPageSize > l.MaxPageSize {
		l.DefaultPageSize = l.MaxPageSize
	}
	if l.MaxStringLength <= 0 {
		l.MaxStringLength = 1000
	}
	if l.MaxEntries <= 0 {
		l.MaxEntries = 50
	}
	return l
}

// Service is the billing engine: every operation of the product, over a Store.
// It is safe for concurrent use. It starts no goroutines of its own.
type Service struct {
	store    Store
	now      func() time.Time
	newID    func() string
	uuidIDs  bool // newID is newUUIDv7: batches draw theirs with uuidseq.V7s
	rand     io.Reader
	rounding Rounding
	log      *slog.Logger
	keyTTL   time.Duration
	billRuns bool // Config.ConcurrentBillingRuns
	seriesTx bool // Config.SeriesInOwnTransaction
	legacyID bool // Config.LegacyUsageIDRecords
	limits   Limits
	cursors  cursor.Codec
	custom   map[string]CustomAggregation
	grace    time.Duration
	late     time.Duration // LateUsageWindow
	catchUp  int           // Config.MaxCatchUpInvoices
	observer Observer

	webhookAllowPrivate bool
	payments            paymentsConfig // Config.PaymentProviders and MasterKey (paymentconfig.go)

	keys     cache.Keys[cachedKey] // authenticated API keys (account.go)
	memo     memo.Memo             // decoded list records (store.go: lists)
	nums     cache.Numbers         // committed usage account and series numbers (usagestore.go)
	alerting alertPresence         // whether accounts have usage alerts (usagealert.go)
	hints    readHints             // what reads asked last time (readahead.go)
	// largeBatches counts the batch ingestions of ownCommitEvents or more
	// in progress (usage.go).
	largeBatches atomic.Int32
	// writes holds the memory of finished batch writes for the next ones
	// (usagestore.go, takeWrite and releaseWrite).
	writes chan *usageWrite
	// aliasTailEntries is the size from which the ingestion indexes the
	// alias index's tail (usagealiastail.go); tests make it small.
	aliasTailEntries int
}

// New returns a Service over store. It validates cfg (nil means all
// defaults) and prepares the store: the first call on an empty store writes
// the store's cursor-signing key.
//
// Long on purpose: every Config field is checked or defaulted here, so New
// is the one place that says what an unset field means.
func New(store Store, cfg *Config) (*Service, error) {
	if store == nil {
		return nil, errors.New("billing: New needs a Store")
	}
	var c Config
	if cfg != nil {
		c = *cfg
	}
	if c.Rounding != RoundHalfUp && c.Rounding != RoundHalfEven {
		return nil, fmt.Errorf("billing: unknown rounding mode %d", c.Rounding)
	}
	s := &Service{
		store:    store,
		now:      c.Now,
		newID:    c.NewID,
		rand:     c.Rand,
		rounding: c.Rounding,
		log:      c.Logger,
		keyTTL:   c.KeyCacheTTL,
		billRuns: c.ConcurrentBillingRuns,
		seriesTx: c.SeriesInOwnTransaction,
		legacyID: c.LegacyUsageIDRecords,
		limits:   c.Limits.withDefaults(),

		webhookAllowPrivate: c.WebhookAllowPrivate,
		writes:              make(chan *usageWrite, keptWrites),
		aliasTailEntries:    aliasTailEntries,
	}
	payments, err := newPaymentsConfig(c.PaymentProviders, c.MasterKey)
	if err != nil {
		return nil, err
	}
	s.payments = payments
	s.custom = make(map[string]CustomAggregation, len(c.CustomAggregations))
	for name, fn := range c.CustomAggregations {
		if fn == nil {
			return nil, fmt.Errorf("billing: CustomAggregations[%q] is nil", name)
		}
		s.custom[name] = fn
	}
	if c.BillingGrace < 0 {
		return nil, fmt.Errorf("billing: BillingGrace %v is negative", c.BillingGrace)
	}
	s.grace = c.BillingGrace
	s.observer = c.Observer
	s.catchUp = c.MaxCatchUpInvoices
	if s.catchUp <= 0 {
		s.catchUp = 36
	}
	if s.grace == 0 {
		s.grace = time.Hour
	}
	if c.LateUsageWindow < 0 {
		return nil, fmt.Errorf("billing: LateUsageWindow %v is negative", c.LateUsageWindow)
	}
	s.late = c.LateUsageWindow
	if s.late == 0 {
		s.late = defaultLateUsageWindow
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.newID == nil {
		s.newID, s.uuidIDs = newUUIDv7, true
	}
	if s.rand == nil {
		s.rand = rand.Reader
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	key, err := s.loadCursorKey(context.Background())
	if err != nil {
		return nil, fmt.Errorf("billing: preparing the store: %w", err)
	}
	s.cursors = cursor.NewCodec(key)
	if err := s.keepListCounts(context.Background()); err != nil {
		return nil, fmt.Errorf("billing: counting the lists of the store: %w", err)
	}
	if err := s.keepAliasIndex(context.Background()); err != nil {
		return nil, fmt.Errorf("billing: indexing the usage events of each customer: %w", err)
	}
	return s, nil
}

// Now returns the Service's clock (Config.Now) for one operation: UTC,
// truncated to the second. Adapters stamp their own records with it
// (httpserver's idempotency records), so that one clock rules them all.
func (s *Service) Now() time.Time { return s.clock() }

// Logger returns the Service's logger (Config.Logger), for the workers
// that run beside it (package dispatch) and log where it does.
func (s *Service) Logger() *slog.Logger { return s.log }

// Store returns the Store the Service runs on.
func (s *Service) Store() Store { return s.store }

// Rounding returns the Service's rounding mode.
func (s *Service) Rounding() Rounding { return s.rounding }

// Limits returns the Service's effective limits, defaults applied.
func (s *Service) Limits() Limits { return s.limits }

// clock returns "now" for one operation: UTC, truncated to the second.
func (s *Service) clock() time.Time {
	return s.now().UTC().Truncate(time.Second)
}

// randomBytes returns n bytes of the Service's randomness source
// (Config.Rand).
func (s *Service) randomBytes(n int) ([]byte, error) {
	b := make([]byte, n)
	_, err := io.ReadFull(s.rand, b)
	return b, err
}

func newUUIDv7() string {
	id, err := uuid.NewV7()
	if err != nil {
		// NewV7 fails only when the system's randomness source fails, in
		// which case nothing secure can be done anyway.
		panic(fmt.Sprintf("billing: generating a UUIDv7: %v", err))
	}
	return id.String()
}

// loadCursorKey reads the store's cursor-signing key, creating it once.
func (s *Service) loadCursorKey(ctx context.Context) ([]byte, error) {
	var key []byte
	err := s.store.View(ctx, func(tx Tx) error {
		v, err := tx.Get(ctx, tableMeta, []byte("cursor_key"))
		if errors.Is(err, ErrNotFound) {
			return nil
		}
		key = v
		return err
	})
	if err != nil || key != nil {
		return key, err
	}
	fresh, err := s.randomBytes(32)
	if err != nil {
		return nil, err
	}
	err = s.store.Update(ctx, func(tx Tx) error {
		err := tx.Insert(ctx, tableMeta, []byte("cursor_key"), fresh)
		if errors.Is(err, ErrConflict) {
			// Another process created it first: use theirs.
			key, err = tx.Get(ctx, tableMeta, []byte("cursor_key"))
			return err
		}
		key = fresh
		return err
	})
	return key, err
}

// view runs fn in one read-only transaction and maps unexpected errors.
func (s *Service) view(ctx context.Context, fn func(Tx) error) error {
	return internal(s.store.View(ctx, fn))
}

// mutate runs fn in one Update for account. When ctx carries a CommitHook
// (WithCommitHook), it runs in the same transaction, so a change and what
// the hook writes (an Idempotency-Key's answer) commit together or not at
// all.
func mutate[T any](ctx context.Context, s *Service, account string, fn func(Tx) (T, error)) (T, error) {
	return mutateWith(ctx, s, s.store.Update, account, fn)
}

// mutateBatch is mutate over Store.Batch: concurrent calls may share one
// transaction and one durable commit (group commit). The store may run the
// transaction function more than once, so fn must derive everything it
// writes from its inputs and the Tx (generate ids and read the clock before
// calling mutateBatch).
func mutateBatch[T any](ctx context.Context, s *Service, account string, fn func(Tx) (T, error)) (T, error) {
	return mutateWith(ctx, s, s.store.Batch, account, fn)
}

// mutateWith is the one write path behind mutate and mutateBatch. The
// CommitHook of ctx (WithCommitHook), if any, runs after fn in every run of
// the transaction function, so that what it writes commits with the change.
func mutateWith[T any](ctx context.Context, s *Service, run func(context.Context, func(Tx) error) error, account string, fn func(Tx) (T, error)) (T, error) {
	hook, _ := ctx.Value(commitHookKey{}).(CommitHook)
	var out T
	err := run(ctx, func(tx Tx) error {
		var zero T
		out = zero
		v, err := fn(tx)
		if err != nil {
			return err
		}
		if hook != nil {
			if err := hook(ctx, tx, v); err != nil {
				return err
			}
		}
		out = v
		return nil
	})
	if err != nil {
		var zero T
		return zero, internal(err)
	}
	return out, nil
}

// read runs fn in one read-only transaction and returns its result.
func read[T any](ctx context.Context, s *Service, fn func(Tx) (T, error)) (T, error) {
	var out T
	err := s.view(ctx, func(tx Tx) (err error) {
		out, err = fn(tx)
		return err
	})
	return out, err
}

// Ping checks that the store is open and writable by committing a small
// write. Returns unavailable when it is not.
func (s *Service) Ping(ctx context.Context) error {
	now := s.clock()
	return internal(s.store.Update(ctx, func(tx Tx) error {
		return tx.Put(ctx, tableMeta, []byte("ping"), []byte(FormatTimestamp(now)))
	}))
}

// CommitHook is run by a write of the Service inside its transaction,
// once the operation succeeded, with the operation's result: what it writes
// commits with the change or not at all, and its error rolls the change
// back (the operation returns it). The store may run a transaction function
// more than once (Batch, or Update on a store with concurrent writers), so
// a hook may run more than once; only its run in the committed transaction
// counts. httpserver stores the answers of requests sent with an
// Idempotency-Key through one.
type CommitHook func(ctx context.Context, tx Tx, result any) error

type commitHookKey struct{}

// WithCommitHook returns a context that makes the mutating operation run
// with it call hook inside its transaction (see CommitHook). An operation
// that commits several transactions (a billing run) calls no hook.
func WithCommitHook(ctx context.Context, hook CommitHook) context.Context {
	return context.WithValue(ctx, commitHookKey{}, hook)
}

// Sweep deletes every record of table t of st for which due says true, and
// returns how many it deleted; see sweep. It is the sweep of the Service's
// own records, for the tables of adapters (httpserver's idempotency
// records).
func Sweep(ctx context.Context, st Store, t Table, due func(value []byte) (bool, error)) (int, error) {
	return sweepTable(ctx, st, t, nil, due)
}

// sweep deletes every record of table t that is due, and returns how many
// it deleted. R is the part of the record due needs (decoding only that
// keeps a sweep over large records cheap). One read transaction finds the
// due keys; they are deleted in write transactions of 1,000 keys, each
// checking again that a record is still due (it may have changed since the
// scan), so a sweep never holds the writer for long.
// deleted, when set, runs in the transaction of each deletion, with the
// key deleted (to keep what is kept of the record: listcount.go).
func sweep[R any](ctx context.Context, s *Service, t Table, deleted func(context.Context, Tx, []byte) error, due func(*R) bool) (int, error) {
	return sweepTable(ctx, s.store, t, deleted, func(v []byte) (bool, error) {
		var r R
		if err := json.Unmarshal(v, &r); err != nil {
			return false, err
		}
		return due(&r), nil
	})
}

// sweepTable is sweep over the stored bytes of the records.
func sweepTable(ctx context.Context, st Store, t Table, onDelete func(context.Context, Tx, []byte) error, due func(value []byte) (bool, error)) (int, error) {
	var keys [][]byte
	err := internal(st.View(ctx, func(tx Tx) error {
		return tx.Scan(ctx, t, Range{}, func(k, v []byte) error {
			ok, err := due(v)
			if ok {
				keys = append(keys, bytes.Clone(k))
			}
			return err
		})
	}))
	if err != nil {
		return 0, err
	}
	deleted := 0
	for chunk := range slices.Chunk(keys, 1000) {
		n := 0
		err := st.Update(ctx, func(tx Tx) error {
			n = 0
			for _, k := range chunk {
				v, err := tx.Get(ctx, t, k)
				if errors.Is(err, ErrNotFound) {
					continue
				}
				if err != nil {
					return err
				}
				if ok, err := due(v); err != nil || !ok {
					return err
				}
				if err := tx.Delete(ctx, t, k); err != nil {
					return err
				}
				if onDelete != nil {
					if err := onDelete(ctx, tx, k); err != nil {
						return err
					}
				}
				n++
			}
			return nil
		})
		if err != nil {
			return deleted, internal(err)
		}
		deleted += n
	}
	return deleted, nil
}

// Observer receives what an operator counts and alerts on: billing runs,
// invoices created, usage events ingested and notification delivery
// attempts. Set it in Config.Observer (package prommetrics exports it to
// Prometheus). Every field may be nil. The functions are called after the
// change they report committed, from the goroutine that made it, so they
// must be quick and safe for concurrent use.
type Observer struct {
	// BillingRun is called after every run of the billing engine
	// (RunBilling, RunAccountBilling), with how long it took; run.Failures
	// lists the schedules it could not bill.
	BillingRun func(run *BillingRun, elapsed time.Duration)

	// InvoicesCreated is called with the number of invoices created: by
	// CreateInvoice (source "api") and by a billing run (source "engine").
	InvoicesCreated func(source string, n int)

	// UsageEventsIngested is called with the number of usage events
	// committed by CreateUsageEvent and CreateUsageEventBatch.
	UsageEventsIngested func(n int)

	// DeliveryAttempted is called after each attempt of a Dispatcher to
	// deliver a notification, with its channel and whether it succeeded.
	DeliveryAttempted func(channel Channel, succeeded bool)
}

// observeRun reports a finished billing run, and logs each of its
// failures at WARN with the ids an operator needs.
func (s *Service) observeRun(ctx context.Context, run *BillingRun, start time.Time) {
	if run == nil {
		return
	}
	for _, f := range run.Failures {
		s.log.WarnContext(ctx, "billing engine: schedule not billed",
			"schedule", f.BillingScheduleID, "account", f.ServiceAccountID, "price", f.PriceID,
			"code", string(f.Code), "error", f.Error)
	}
	if o := s.observer; o.BillingRun != nil {
		o.BillingRun(run, time.Since(start))
	}
	if o := s.observer; o.InvoicesCreated != nil && run.InvoicesCreated > 0 {
		o.InvoicesCreated("engine", run.InvoicesCreated)
	}
}

// observeIngested reports n usage events committed.
func (s *Service) observeIngested(n int) {
	if f := s.observer.UsageEventsIngested; f != nil {
		f(n)
	}
}

// describeFailure names, in a billing failure's message, the price whose
// line could not be computed: "price <name> (<id>): <reason>".
func describeFailure(price *Price, reason string) string {
	if price == nil {
		return reason
	}
	return fmt.Sprintf("price %q (%s): %s", price.Name, price.ID, reason)
}
