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
	// billingd uses 1s there. Negative turns the cache off. Defaults to 0,
	// or to 1s with SharedStore.
	KeyCacheTTL time.Duration

	// SharedStore says that other processes use the store at the same
	// time: several billingd instances on one PostgreSQL database. Then
	// an Idempotency-Key is marked in flight in the store before its
	// request runs (BeginIdempotent), so a request racing it on another
	// instance answers idempotency_key_in_use, and KeyCacheTTL defaults
	// to one second. Every other cache of the Service is correct across
	// processes by construction (docs/ARCHITECTURE.md, "Several
	// instances"). It also keeps the usage events' id index in the layout
	// releases before its compact one read, so that their instances can
	// share the store during a rolling upgrade (docs/ARCHITECTURE.md,
	// "Records"). Defaults to false: one process owns the store (bbolt).
	SharedStore bool

	// IdempotencyTTL is how long an idempotency record answers retries.
	// Defaults to 24 hours; shorter values are raised to 24 hours.
	IdempotencyTTL time.Duration

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
	idemTTL  time.Duration
	keyTTL   time.Duration
	shared   bool // Config.SharedStore
	limits   Limits
	cursors  cursor.Codec
	custom   map[string]CustomAggregation
	grace    time.Duration
	late     time.Duration // LateUsageWindow
	catchUp  int           // Config.MaxCatchUpInvoices
	observer Observer

	webhookAllowPrivate bool
	payments            paymentsConfig // Config.PaymentProviders and MasterKey (paymentconfig.go)

	keys cache.Keys[cachedKey] // authenticated API keys (account.go)
	memo memo.Memo             // decoded list records (store.go: lists)
	nums cache.Numbers         // committed usage account and series numbers (usagestore.go)
	// largeBatches counts the batch ingestions of ownCommitEvents or more
	// in progress (usage.go).
	largeBatches atomic.Int32
	// writes holds the memory of finished batch writes for the next ones
	// (usagestore.go, takeWrite and releaseWrite).
	writes chan *usageWrite
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
		idemTTL:  c.IdempotencyTTL,
		keyTTL:   c.KeyCacheTTL,
		shared:   c.SharedStore,
		limits:   c.Limits.withDefaults(),

		webhookAllowPrivate: c.WebhookAllowPrivate,
		writes:              make(chan *usageWrite, keptWrites),
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
	if s.keyTTL == 0 && s.shared {
		s.keyTTL = time.Second
	}
	if s.idemTTL < 24*time.Hour {
		s.idemTTL = 24 * time.Hour
	}
	key, err := s.loadCursorKey(context.Background())
	if err != nil {
		return nil, fmt.Errorf("billing: preparing the store: %w", err)
	}
	s.cursors = cursor.NewCodec(key)
	return s, nil
}

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

// mutate runs fn in one Update for account. When ctx carries an idempotency
// request (WithIdempotency), the response for fn's result is rendered and
// stored in the same transaction, so a change and its idempotency record
// commit together or not at all.
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

// mutateWith is the one write path behind mutate and mutateBatch. Every run
// of the transaction function starts the idempotency record afresh, so a
// re-run (Batch) never reports a response of an earlier, rolled-back run.
func mutateWith[T any](ctx context.Context, s *Service, run func(context.Context, func(Tx) error) error, account string, fn func(Tx) (T, error)) (T, error) {
	var out T
	err := run(ctx, func(tx Tx) error {
		var zero T
		out = zero
		if req, _ := ctx.Value(idempotencyKey{}).(*IdempotencyRequest); req != nil {
			req.Status, req.Body, req.Stored = 0, nil, false
			// A request that lost a race for its key (another process
			// stored an answer under it since) must not run again: it
			// answers idempotency_key_in_use, never an answer of its own.
			if req.Render != nil {
				if err := s.idempotencyFree(ctx, tx, account, req, s.clock()); err != nil {
					return err
				}
			}
		}
		v, err := fn(tx)
		if err != nil {
			return err
		}
		if err := s.recordIdempotent(ctx, tx, account, v); err != nil {
			return err
		}
		out = v
		return nil
	})
	if err != nil {
		var zero T
		return zero, internal(err)
	}
	if req, _ := ctx.Value(idempotencyKey{}).(*IdempotencyRequest); req != nil && req.Stored {
		req.hold = "" // the answer replaced the in-flight mark
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

// IdempotencyRecord is the stored outcome of a request sent with an
// Idempotency-Key: a retry with the same key and the same request is
// answered with Status and Body and changes nothing.
type IdempotencyRecord struct {
	// Key is the client's Idempotency-Key.
	Key string `json:"key"`
	// AccountID is the account that sent the key; keys are per account.
	AccountID string `json:"serviceAccountId"`
	// Fingerprint identifies the first request sent with the key; a later request
	// with the key and another fingerprint is refused.
	Fingerprint string `json:"fingerprint"`
	// Status is the HTTP status of the stored answer.
	Status int `json:"status"`
	// Body is the stored answer, byte for byte as first sent.
	Body []byte `json:"body"`
	// Holder is set while the record is only an in-flight mark
	// (BeginIdempotent on a shared store): the request holding the key has
	// not answered yet, and Status and Body are empty.
	Holder    string    `json:"holder,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
	// ExpiresAt is when the record may be swept: CreatedAt plus
	// Config.IdempotencyTTL (at least 24 hours).
	ExpiresAt time.Time `json:"expiresAt"`
}

// IdempotencyRequest asks a Service operation to store its response under
// an idempotency key in the same transaction as its change. The caller (the
// HTTP layer) sets Key, Fingerprint and Render; the operation sets Status and
// Body to the stored response, which the caller then sends as it is.
type IdempotencyRequest struct {
	// Key is the request's Idempotency-Key.
	Key string
	// Fingerprint identifies the request (httpserver: a hash of its method,
	// path and body), stored with the response so the caller can refuse the
	// key when it comes back with another request.
	Fingerprint string
	// Render turns the operation's result into the response to store.
	Render func(result any) (status int, body []byte, err error)

	// Status and Body are the stored response, set when Stored is true.
	Status int
	// Body is the stored response body (see Status).
	Body []byte
	// Stored says the operation ran and Status and Body hold its response.
	Stored bool

	hold string // the in-flight mark BeginIdempotent put on the key, if any
}

type idempotencyKey struct{}

// WithIdempotency returns a context that makes the next mutating operation
// run with it store its response under req.Key (see IdempotencyRequest).
func WithIdempotency(ctx context.Context, req *IdempotencyRequest) context.Context {
	return context.WithValue(ctx, idempotencyKey{}, req)
}

// recordIdempotent stores the response for result when ctx carries an
// idempotency request. It runs inside the operation's transaction.
func (s *Service) recordIdempotent(ctx context.Context, tx Tx, account string, result any) error {
	req, _ := ctx.Value(idempotencyKey{}).(*IdempotencyRequest)
	if req == nil || req.Render == nil {
		return nil
	}
	status, body, err := req.Render(result)
	if err != nil {
		return err
	}
	if err := s.putIdempotency(ctx, tx, account, req, status, body); err != nil {
		return err
	}
	req.Status, req.Body, req.Stored = status, body, true
	return nil
}

// idempotencyHold is how long a request's in-flight mark on its
// Idempotency-Key (Config.SharedStore) keeps requests with that key on other
// instances out. It outlives any request (billingd's write timeout is a
// minute); after it a key whose instance died is free again.
const idempotencyHold = 2 * time.Minute

// putIdempotency stores the answer of req under its key. The key must be
// free, or held by req itself (its in-flight mark): a record stored by
// another request, or a mark of another request, answers
// idempotency_key_in_use.
func (s *Service) putIdempotency(ctx context.Context, tx Tx, account string, req *IdempotencyRequest, status int, body []byte) error {
	now := s.clock()
	if err := s.idempotencyFree(ctx, tx, account, req, now); err != nil {
		return err
	}
	return putRecord(ctx, tx, tableIdempotency, key(account, req.Key), IdempotencyRecord{
		Key: req.Key, AccountID: account, Fingerprint: req.Fingerprint,
		Status: status, Body: body, CreatedAt: now, ExpiresAt: now.Add(s.idemTTL),
	})
}

// idempotencyFree returns nil when req may use its key: no unexpired record
// is stored under it, or the record is req's own in-flight mark.
func (s *Service) idempotencyFree(ctx context.Context, tx Tx, account string, req *IdempotencyRequest, now time.Time) error {
	old, err := getRecord[IdempotencyRecord](ctx, tx, tableIdempotency, key(account, req.Key))
	switch {
	case errors.Is(err, ErrNotFound):
		return nil
	case err != nil:
		return err
	case !now.Before(old.ExpiresAt) || req.hold != "" && old.Holder == req.hold:
		return nil
	}
	// Another request, here or on another instance, answered or holds
	// this key first.
	return Errorf(CodeIdempotencyKeyInUse, "a request with this Idempotency-Key was processed concurrently")
}

// IdempotentResponse returns the unexpired answer stored under key for an
// account, or nil when there is none (an in-flight mark is no answer).
func (s *Service) IdempotentResponse(ctx context.Context, account, idemKey string) (*IdempotencyRecord, error) {
	now := s.clock()
	var rec *IdempotencyRecord
	err := s.view(ctx, func(tx Tx) error {
		r, err := getRecord[IdempotencyRecord](ctx, tx, tableIdempotency, key(account, idemKey))
		if errors.Is(err, ErrNotFound) {
			return nil
		}
		if err == nil && now.Before(r.ExpiresAt) && r.Holder == "" {
			rec = r
		}
		return err
	})
	return rec, err
}

// BeginIdempotent starts a request sent with an Idempotency-Key, before it
// runs: it returns the answer stored under the key, if any (the caller
// replays it, or refuses another request with the key). Otherwise, on a
// shared store (Config.SharedStore), it marks the key in flight in a
// transaction of its own, so that the same key sent to another instance
// meanwhile answers idempotency_key_in_use; it returns that error itself
// when another request holds the key. A nil record and nil error mean the
// request may run: with req passed to WithIdempotency, its operation
// replaces the mark by its answer; EndIdempotent releases a mark that no
// answer replaced. (In one process the HTTP layer refuses concurrent
// duplicates itself; without SharedStore this is only the lookup.)
func (s *Service) BeginIdempotent(ctx context.Context, account string, req *IdempotencyRequest) (*IdempotencyRecord, error) {
	if !s.shared {
		return s.IdempotentResponse(ctx, account, req.Key)
	}
	now := s.clock()
	hold := s.newID()
	var rec *IdempotencyRecord
	err := s.store.Update(ctx, func(tx Tx) error {
		rec = nil
		k := key(account, req.Key)
		old, err := getRecord[IdempotencyRecord](ctx, tx, tableIdempotency, k)
		switch {
		case err != nil && !errors.Is(err, ErrNotFound):
			return err
		case err == nil && now.Before(old.ExpiresAt) && old.Holder == "":
			rec = old
			return nil
		case err == nil && now.Before(old.ExpiresAt):
			return Errorf(CodeIdempotencyKeyInUse, "a request with this Idempotency-Key is being processed; retry later")
		}
		return putRecord(ctx, tx, tableIdempotency, k, IdempotencyRecord{
			Key: req.Key, AccountID: account, Fingerprint: req.Fingerprint, Holder: hold,
			CreatedAt: now, ExpiresAt: now.Add(idempotencyHold),
		})
	})
	if err != nil {
		return nil, internal(err)
	}
	if rec == nil {
		req.hold = hold
	}
	return rec, nil
}

// EndIdempotent releases the in-flight mark BeginIdempotent put on req's
// key when the request stored no answer (it failed before its operation
// ran, or with an answer that is not stored), so a retry may run. It runs
// even when ctx is done; a failure leaves the mark to expire.
func (s *Service) EndIdempotent(ctx context.Context, account string, req *IdempotencyRequest) {
	if req.hold == "" {
		return
	}
	ctx = context.WithoutCancel(ctx)
	err := s.store.Update(ctx, func(tx Tx) error {
		k := key(account, req.Key)
		old, err := getRecord[IdempotencyRecord](ctx, tx, tableIdempotency, k)
		if err != nil || old.Holder != req.hold {
			return nil // answered, gone, or taken over after it expired
		}
		return tx.Delete(ctx, tableIdempotency, k)
	})
	if err != nil {
		s.log.Warn("releasing an Idempotency-Key", "err", err)
	}
}

// StoreIdempotentResponse stores a response that no operation stored
// itself: an error answer, which changed nothing and so needs no shared
// transaction.
func (s *Service) StoreIdempotentResponse(ctx context.Context, account string, req *IdempotencyRequest, status int, body []byte) error {
	err := internal(s.store.Update(ctx, func(tx Tx) error {
		return s.putIdempotency(ctx, tx, account, req, status, body)
	}))
	if err == nil {
		req.hold = "" // the answer replaced the in-flight mark
	}
	return err
}

// SweepIdempotency deletes expired idempotency records and returns how many
// it deleted. billingd runs it periodically.
func (s *Service) SweepIdempotency(ctx context.Context) (int, error) {
	now := s.clock()
	type expiry struct {
		ExpiresAt time.Time `json:"expiresAt"`
	}
	return sweep(ctx, s, tableIdempotency, func(r *expiry) bool { return !now.Before(r.ExpiresAt) })
}

// sweep deletes every record of table t that is due, and returns how many
// it deleted. R is the part of the record due needs (decoding only that
// keeps a sweep over large records cheap). One read transaction finds the
// due keys; they are deleted in write transactions of 1,000 keys, each
// checking again that a record is still due (it may have changed since the
// scan), so a sweep never holds the writer for long.
func sweep[R any](ctx context.Context, s *Service, t Table, due func(*R) bool) (int, error) {
	var keys [][]byte
	err := s.view(ctx, func(tx Tx) error {
		return tx.Scan(ctx, t, Range{}, func(k, v []byte) error {
			var r R
			if err := json.Unmarshal(v, &r); err != nil {
				return err
			}
			if due(&r) {
				keys = append(keys, bytes.Clone(k))
			}
			return nil
		})
	})
	if err != nil {
		return 0, err
	}
	deleted := 0
	for chunk := range slices.Chunk(keys, 1000) {
		n := 0
		err := s.store.Update(ctx, func(tx Tx) error {
			n = 0
			for _, k := range chunk {
				r, err := getRecord[R](ctx, tx, t, k)
				if errors.Is(err, ErrNotFound) || err == nil && !due(r) {
					continue
				}
				if err != nil {
					return err
				}
				if err := tx.Delete(ctx, t, k); err != nil {
					return err
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
