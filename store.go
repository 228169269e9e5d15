package billing

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/billingd/billing/internal/cursor"
	"github.com/billingd/billing/internal/memo"
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

// KeepingTx is a Tx that can store a value without copying it: a backend
// whose Put must copy the value (bbolt keeps a reference to it until the
// commit) implements it, and the Service uses it for the records of usage
// events, a thousand values per batch that are never changed once encoded.
// storagetest.Run checks that PutKept stores as Put does.
type KeepingTx interface {
	Tx
	// PutKept is Put of a value the caller will neither change nor reuse
	// until the transaction has ended: the Tx may keep it as it is.
	PutKept(ctx context.Context, table Table, key, value []byte) error
}

// MultiGetTx is a Tx that reads many keys in one request: a backend whose
// Get costs a round trip (PostgreSQL) implements it, and the list path
// reads a page's records with it (listpage.go), the billing engine a
// batch's records (engineprefetch.go). storagetest.Run checks that GetMany
// answers what Get does, and Get after Prefetch what Get alone does.
type MultiGetTx interface {
	Tx
	// GetMany returns the value under each key of table, in the order of
	// keys, nil for a key that does not exist. The values are the
	// caller's, as Get's.
	GetMany(ctx context.Context, table Table, keys [][]byte) ([][]byte, error)
	// Prefetch reads the keys (and prefixes), of any tables, in one
	// request and keeps what it found (and what it did not) in the
	// transaction, so that the Gets of those keys, and the Scans of those
	// prefixes, that follow cost no request. It changes nothing that Get
	// or Scan answers.
	Prefetch(ctx context.Context, keys []TableKey) error
}

// TableKey is a key of a table, or a range of keys, for MultiGetTx.Prefetch.
type TableKey struct {
	// Table is the key's table.
	Table Table
	// Key is the key; Prefetch does not keep it after it returns.
	Key []byte
	// Prefix, Start and End, set instead of Key, ask for the range a Scan
	// of Range{Prefix, Start, End} visits (either way); a backend may read
	// it only when it holds few keys (a new document's lines: none).
	Prefix, Start, End []byte
	Expect             int // for a range: about how many keys it holds (0: few)
}

// prefetch is tx.Prefetch when tx has it (nothing otherwise: Gets are
// cheap there).
func prefetch(ctx context.Context, tx Tx, keys []TableKey) error {
	if m, ok := tx.(MultiGetTx); ok && len(keys) > 0 {
		return m.Prefetch(ctx, keys)
	}
	return nil
}

// TakeTx is a Tx that deletes a range of keys and returns what it
// deleted in one request: a backend whose reads and deletes each cost a
// round trip (PostgreSQL) implements it, and folding kept deltas
// (keptdelta.go) and usage rollups (usagerollup.go) takes their rows with
// it. storagetest.Run checks that Take answers and deletes what a Scan and
// a Delete of each key would.
type TakeTx interface {
	Tx
	// Take deletes every row of table in r (Reverse and Expect are
	// ignored) and calls fn with each deleted row, in key order. The
	// rows are the caller's. An error of fn ends the calls and is
	// returned; the rows are deleted all the same, so a caller that
	// fails should fail its transaction.
	Take(ctx context.Context, table Table, r Range, fn func(key, value []byte) error) error
}

// take is tx.Take when tx has it, else a Scan of r followed by a Delete of
// each key it met.
func take(ctx context.Context, tx Tx, table Table, r Range, fn func(key, value []byte) error) error {
	if t, ok := tx.(TakeTx); ok {
		return t.Take(ctx, table, r, fn)
	}
	r.Reverse, r.Expect = false, 0
	var keys [][]byte
	err := tx.Scan(ctx, table, r, func(k, v []byte) error {
		keys = append(keys, slices.Clone(k))
		return fn(k, v)
	})
	if err != nil {
		return err
	}
	for _, k := range keys {
		if err := tx.Delete(ctx, table, k); err != nil {
			return err
		}
	}
	return nil
}

// getMany is tx.GetMany when tx has it, else a Get of each key; a
// missing key gives nil.
func getMany(ctx context.Context, tx Tx, table Table, keys [][]byte) ([][]byte, error) {
	if m, ok := tx.(MultiGetTx); ok && len(keys) > 1 {
		return m.GetMany(ctx, table, keys)
	}
	out := make([][]byte, len(keys))
	for i, k := range keys {
		v, err := tx.Get(ctx, table, k)
		if err != nil && !errors.Is(err, ErrNotFound) {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// putKept is tx.PutKept when tx has it, else tx.Put.
func putKept(ctx context.Context, tx Tx, table Table, key, value []byte) error {
	if k, ok := tx.(KeepingTx); ok {
		return k.PutKept(ctx, table, key, value)
	}
	return tx.Put(ctx, table, key, value)
}

// Table names one keyspace of a Store. Package billing owns the list of
// tables; backends create a table on first write and treat a table that
// was never written as empty.
type Table string

// AppendMostly reports whether the keys of table mostly arrive in ascending
// order within their ranges, so that a backend may pack its pages fuller:
// usage events (series, then time) and their id indexes (time-ordered ids per account and per
// alias), the bulk of a billingd file. boltstore fills their pages to 90% instead of bbolt's 50%,
// which halves the pages an ingestion writes and a calculation reads.
func (t Table) AppendMostly() bool {
	return t == tableUsageEvents || t == tableUsageEventIDs || t == tableUsageAliasIDs
}

// Range selects the keys of a Scan. A key is in the range when it starts with
// Prefix, is at least Start (when Start is set) and is less than End (when End
// is set). Start and End are whole keys, including the prefix.
type Range struct {
	// Prefix: every key of the range starts with it (nil for the whole table).
	Prefix []byte
	// Start is the smallest key of the range, included; nil for no lower bound.
	Start []byte
	// End is the first key after the range, excluded; nil for no upper bound.
	End []byte
	// Reverse scans from the largest key down.
	Reverse bool
	// Expect, when set, is about how many keys the caller reads before it
	// ends the scan (ErrStopScan): a backend that reads in chunks may size
	// its first chunk by it (a list's page, listpage.go). It never changes
	// what the scan visits.
	Expect int
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

// Bounds returns r as the half-open interval of keys [lower, upper) a
// backend seeks in: lower is the larger of Prefix and Start (empty: from the
// first key), upper the smaller of End and PrefixEnd(Prefix) (nil: up to the
// last key). Reverse is the backend's to honour.
func (r Range) Bounds() (lower, upper []byte) {
	lower = r.Prefix
	if string(r.Start) > string(lower) {
		lower = r.Start
	}
	upper = r.End
	if len(r.Prefix) > 0 {
		if pe := PrefixEnd(r.Prefix); pe != nil && (upper == nil || string(pe) < string(upper)) {
			upper = pe
		}
	}
	return lower, upper
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

// The key layout: every table of package billing, declared here and only
// here. Backends do not need this list (a table exists once written). Keys
// are composite (key(), prefix()): parts joined by keySep.

// Accounts, keys, the catalog, customers, seats and usage. (httpserver
// keeps its Idempotency-Key answers in a table of its own, "idempotency".)
const (
	tableMeta             Table = "meta"                // key → value: store-wide settings
	tableAccounts         Table = "accounts"            // account id → Account
	tableAPIKeys          Table = "api_keys"            // key id → apiKeyRecord
	tableCounters         Table = "counters"            // account id / name → uint64
	tableUsageMetrics     Table = "usage_metrics"       // account id / metric id → UsageMetric
	tableUsageMetricNames Table = "usage_metric_names"  // account id / lower(name) → metric id (live metrics only)
	tableCustomers        Table = "customers"           // account id / customer id → Customer
	tableCustomerAliases  Table = "customer_aliases"    // account id / alias → customer id
	tableCustomerNames    Table = "customer_names"      // account id / legal name / customer id → customer id (seat balance order)
	tableProducts         Table = "products"            // account id / product id → Product
	tableTaxRates         Table = "tax_rates"           // account id / tax rate id → TaxRate
	tablePrices           Table = "prices"              // account id / price id → Price
	tableMerchantDetails  Table = "merchant_details"    // account id → MerchantDetails
	tableTimeZones        Table = "time_zones"          // account id → []zoneChange; account id / customer id → []zoneChange
	tableSeatMetrics      Table = "seat_metrics"        // account id / seat metric id → SeatMetric
	tableSeatMetricTypes  Table = "seat_metric_types"   // account id / seat type → seat metric id
	tableSeatEvents       Table = "seat_events"         // account id / event id → SeatEvent (creation order)
	tableSeatEventsByTime Table = "seat_events_by_time" // account id / timestamp / event id → SeatEvent
	tableSeatEventIDs     Table = "seat_event_ids"      // account id / customerEventId → event id
	tableSeatTimeline     Table = "seat_timeline"       // account id / alias / seat type / timestamp / event id → SeatEvent

	// Usage events (usagestore.go): an account and each of its (event type, customer alias) series
	// get a 4-byte number on first use: event keys stay short, a calculation scans one range per alias.
	tableUsageAccounts    Table = "usage_accounts"     // account id → account no; key {0}: last account no
	tableUsageSeries      Table = "usage_series"       // account id / event type / alias → series no; key {0}: last series no
	tableUsageSeriesNames Table = "usage_series_names" // series no → event type / alias
	tableUsageEvents      Table = "usage_events"       // series no | timestamp | event id → encoded event
	tableUsageEventIDs    Table = "usage_event_ids"    // account no | first event id → series no | timestamp, then an entry per other event of its batch and millisecond (appendIDRecord)
	tableUsageEventKeys   Table = "usage_event_keys"   // account no | customerEventId → usage_events key (explicit ids only)
	tableUsageAliasIDs    Table = "usage_alias_ids"    // account no | alias | usage_event_ids key suffix → that record's entries of the alias (usagealiasids.go)
	tableUsageRollups     Table = "usage_rollups"      // series no | hour → usageRollup; series no → marker (usagerollup.go, usagetracked.go)
	tableUsageRollupDays  Table = "usage_rollup_days"  // series no | UTC day → usageRollup (usagerollupday.go)
)

// The tables of invoices and credit notes. Lines and groups are keyed under
// their document, ending in their own id: ids sort in creation order, and
// indexes are assigned in creation order, so key order is index order and
// the line and group lists page through list() ordered by index.
const (
	tableInvoices          Table = "invoices"           // account id / invoice id → Invoice
	tableInvoiceLines      Table = "invoice_lines"      // account id / invoice id / line id → InvoiceLineItem
	tableInvoiceGroups     Table = "invoice_groups"     // account id / invoice id / group id → InvoiceLineItemGroup
	tableCreditNotes       Table = "credit_notes"       // account id / credit note id → CreditNote
	tableCreditNoteLines   Table = "credit_note_lines"  // account id / credit note id / line id → CreditNoteLineItem
	tableCreditNoteGroups  Table = "credit_note_groups" // account id / credit note id / group id → CreditNoteLineItemGroup
	tablePayments          Table = "payments"           // account id / invoice id / payment id → Payment
	tableJournal           Table = "journal"            // account id / entry id → JournalEntry (creation order)
	tableJournalBySource   Table = "journal_by_source"  // account id / source id / entry id → JournalEntry
	tableDocumentNumbering Table = "document_numbering" // account id / kind → 8-byte counter (INV, CN)
	tableDocumentRounding  Table = "document_rounding"  // account id / document id → rounding mode it is computed with
)

// Tables of credit grants (credit.go). A grant's ledger is keyed under the grant (transaction ids
// sort in creation order); the expiry index starts with the date so a run reads only what is due.
const (
	tableCreditGrants           Table = "credit_grants"             // account id / grant id → grantRecord
	tableCreditGrantsByCustomer Table = "credit_grants_by_customer" // account id / customer id / grant id → empty
	tableCreditTransactions     Table = "credit_transactions"       // account id / grant id / transaction id → txRecord
	tableCreditExpiries         Table = "credit_expiries"           // expiry date / account id / grant id → empty (ACTIVE grants with an expiry)
	tableCreditInvoiceUses      Table = "credit_invoice_uses"       // account id / invoice id / transaction id → grant id
)

// Tables of billing schedules and the billing engine (engine.go).
const (
	tableBillingSchedules Table = "billing_schedules" // account id / schedule id → BillingSchedule (prices not embedded)
	// tableBillingRunnable lists the schedules the engine visits: ACTIVE,
	// SUSPENDED or CANCELLED, not archived, or with invoices still watched.
	tableBillingRunnable Table = "billing_runnable" // account id / schedule id → empty
	// tableBillingMarkers is the exactly-once marker of each charge, written
	// in the transaction that creates the invoice carrying it.
	tableBillingMarkers Table = "billing_markers" // account id / schedule id / price id / period start → billingMarker
	// tableBillingDateInvoices is the one invoice of each (schedule, billing date).
	tableBillingDateInvoices Table = "billing_date_invoices" // account id / schedule id / billing date → invoice id
	// tableBillingWatch holds engine invoices whose lines the engine still
	// recomputes (drafts) or whose usage it still checks (late usage).
	tableBillingWatch Table = "billing_watch" // account id / schedule id / billing date → billingWatch
	// tableBillingLateUsage records usage that changed after its invoice was finalized.
	tableBillingLateUsage Table = "billing_late_usage" // account id / schedule id / price id / period start → LateUsage
	// tableBillingInterim lists the interim invoices progressive billing
	// issued before the invoice of a billing date (progressive.go).
	tableBillingInterim Table = "billing_interim" // account id / schedule id / billing date → interimRecord
	// tableBillingLeases shares the engine's work out between the
	// instances on one store (Config.ConcurrentBillingRuns; enginelease.go).
	tableBillingLeases Table = "billing_leases" // account id / schedule id → engineLease
	// tableBillingRuns keeps the newest billing run records of each account.
	tableBillingRuns Table = "billing_runs" // account id / record id → BillingRunRecord
)

// Tables of usage and spend alerts (usagealert.go, usagealerteval.go).
const (
	tableUsageAlerts Table = "usage_alerts" // account id / alert id → UsageAlert
	// tableAlertMarks says which customers' usage changed since their
	// alerts were last evaluated, written only while the account has
	// alerts: one key per alias, or on a store with concurrent writers
	// one per write and alias (markAlias).
	tableAlertMarks Table = "alert_marks" // account id / customer alias [/ write id] → write id
	// tableAlertLeases shares the evaluation of marked customers out
	// between instances.
	tableAlertLeases Table = "alert_leases" // account id / customer alias → alertLease
	// tableAlertCrossings is the exactly-once record of each notified
	// crossing, inserted in the transaction that emits its notification.
	tableAlertCrossings Table = "alert_crossings" // account id / alert id / customer id / period start → AlertCrossing
)

// The tables of kept counts and indexes of lists (listcount.go).
const (
	// tableListCounts holds how many records each list has, in all and
	// per value of each kept filter.
	tableListCounts Table = "list_counts" // account id / list → int64; account id / list / filter / value → int64 (8 bytes, big-endian)
	// tableListIndex holds, per record of a kept list, the values it is
	// counted under, and an entry per filter value, sorted as the list.
	tableListIndex Table = "list_index" // account id / list / "" / record id → values; account id / list / filter / value / record id → values
)

// The tables of the kept sums of issued invoices (invoicestanding.go).
const (
	tableInvoiceStanding Table = "invoice_standing" // account id / invoice id → standing (FINAL and SENT invoices)
	tableOpenInvoices    Table = "open_invoices"    // no longer written: emptied when the kept sums are rebuilt (listbackfill.go)
	tableInvoiceSums     Table = "invoice_sums"     // account id / "invoiced" / currency / YYYY-MM → keptSum; account id / "due" / currency / due date or "-" → keptSum; account id / "cdue" / customer id / currency / due date or "-" → keptSum
)

// The tables of notification policies.
const (
	tableNotificationPolicies Table = "notification_policies" // account id / policy id → policyRecord
)

// The tables of the outbox.
const (
	// tableDeliveries holds every delivery, in creation order per account.
	tableDeliveries Table = "notification_deliveries" // account id / delivery id → deliveryRecord
	// tableDeliveryQueue indexes the PENDING deliveries by the time they
	// are next due; a claimed delivery is re-filed at the end of its lease.
	tableDeliveryQueue Table = "notification_delivery_queue" // %016x unix seconds / account id / delivery id → empty
)

// The tables of e-invoicing (einvoice.go).
const (
	// tableAccountPreferences holds the account's settings besides its time
	// zone: what document e-mails attach.
	tableAccountPreferences Table = "account_preferences" // account id → accountPreferences
)

// The tables of rendering (printable.go).
const (
	// tableDocumentRenders holds what a finalized document was frozen with.
	tableDocumentRenders Table = "document_renders" // account id / document id → renderSnapshot
	// tableMerchantLogo points at the account's current logo.
	tableMerchantLogo Table = "merchant_logo" // account id → logoPointer
	// tableLogoImages holds every logo ever uploaded, by content, so that
	// documents frozen with an older logo keep it.
	tableLogoImages Table = "logo_images" // account id / SHA-256 hex → PNG bytes
)

// keySep separates the parts of a composite key. It sorts before every
// printable character, so a key is ordered by its parts from left to right.
const keySep = 0x00

// key joins parts into a composite store key.
func key(parts ...string) []byte {
	n := len(parts)
	for _, p := range parts {
		n += len(p)
	}
	b := make([]byte, 0, n)
	for i, p := range parts {
		if i > 0 {
			b = append(b, keySep)
		}
		b = append(b, p...)
	}
	return b
}

// prefix returns the key prefix selecting every key that starts with parts.
func prefix(parts ...string) []byte {
	return append(key(parts...), keySep)
}

// eachRecord decodes every JSON record of t in r, in key order, and calls
// fn with each; fn may return ErrStopScan to end the scan.
func eachRecord[T any](ctx context.Context, tx Tx, t Table, r Range, fn func(*T) error) error {
	return tx.Scan(ctx, t, r, func(_, v []byte) error {
		item := new(T)
		if err := json.Unmarshal(v, item); err != nil {
			return fmt.Errorf("decoding %s record: %w", t, err)
		}
		return fn(item)
	})
}

// scanRecords returns every JSON record of t in r, in key order.
func scanRecords[T any](ctx context.Context, tx Tx, t Table, r Range) ([]T, error) {
	var out []T
	err := eachRecord(ctx, tx, t, r, func(item *T) error {
		out = append(out, *item)
		return nil
	})
	return out, err
}

// deleteRange deletes the keys of t in r, in r's order, after the first
// skip of them. The keys are collected first: a Scan's fn must not write
// to the table it scans.
func deleteRange(ctx context.Context, tx Tx, t Table, r Range, skip int) error {
	var keys [][]byte
	n := 0
	err := tx.Scan(ctx, t, r, func(k, _ []byte) error {
		if n++; n > skip {
			keys = append(keys, bytes.Clone(k))
		}
		return nil
	})
	for _, k := range keys {
		if err == nil {
			err = tx.Delete(ctx, t, k)
		}
	}
	return err
}

// getRecord reads and decodes the JSON record under k. A missing record
// returns ErrNotFound.
func getRecord[T any](ctx context.Context, tx Tx, t Table, k []byte) (*T, error) {
	b, err := tx.Get(ctx, t, k)
	if err != nil {
		return nil, err
	}
	v := new(T)
	if err := json.Unmarshal(b, v); err != nil {
		return nil, fmt.Errorf("decoding %s record: %w", t, err)
	}
	return v, nil
}

// findRecord is getRecord for a record that may be missing: nil and no
// error when there is none.
func findRecord[T any](ctx context.Context, tx Tx, t Table, k []byte) (*T, error) {
	v, err := getRecord[T](ctx, tx, t, k)
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	return v, err
}

// exists reports whether t holds a record under k.
func exists(ctx context.Context, tx Tx, t Table, k []byte) (bool, error) {
	_, err := tx.Get(ctx, t, k)
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// deleteIfPresent deletes k from t; a key already gone is not an error.
func deleteIfPresent(ctx context.Context, tx Tx, t Table, k []byte) error {
	if err := tx.Delete(ctx, t, k); err != nil && !errors.Is(err, ErrNotFound) {
		return err
	}
	return nil
}

// claimKey stores id under k in t as a unique claim (a name, an alias, a
// seat type); when k is already claimed it returns conflict on field with
// message.
func claimKey(ctx context.Context, tx Tx, t Table, k []byte, id, field, message string) error {
	err := tx.Insert(ctx, t, k, []byte(id))
	if errors.Is(err, ErrConflict) {
		return &Error{Code: CodeConflict, Field: field, Message: message}
	}
	return err
}

// getOwned reads the record id of account from table, answering not_found
// for kind when the account has no such record (another account's record
// included: its key is under another prefix).
func getOwned[T any](ctx context.Context, tx Tx, t Table, account, id, kind string) (*T, error) {
	v, err := getRecord[T](ctx, tx, t, key(account, id))
	return v, lookupErr(err, kind)
}

// getOne reads, in a transaction of its own, the record of account with id
// in table; not_found names kind.
func getOne[T any](ctx context.Context, s *Service, t Table, account, id, kind string) (*T, error) {
	return read(ctx, s, func(tx Tx) (*T, error) { return getOwned[T](ctx, tx, t, account, id, kind) })
}

// updateOwned is the read-change-write of one record in one Update: it reads
// the record id of account from t (not_found names kind), lets change edit
// it or refuse (change may also write other records in tx), and stores it
// back. The stored record is also the call's answer, which an
// Idempotency-Key replays: use it only for records that are their API type
// (no internal fields), as prices, customers and metrics are.
func updateOwned[T any](ctx context.Context, s *Service, t Table, account, id, kind string, change func(tx Tx, v *T) error) (*T, error) {
	return mutate(ctx, s, account, func(tx Tx) (*T, error) {
		v, err := getOwned[T](ctx, tx, t, account, id, kind)
		if err != nil {
			return nil, err
		}
		if err := change(tx, v); err != nil {
			return nil, err
		}
		return v, putRecord(ctx, tx, t, key(account, id), v)
	})
}

// putRecord encodes v as JSON and stores it under k.
func putRecord(ctx context.Context, tx Tx, t Table, k []byte, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encoding %s record: %w", t, err)
	}
	return tx.Put(ctx, t, k, b)
}

// decodeAll returns a listQuery decode function for JSON records, keeping
// the records for which keep returns true (all of them when keep is nil).
func decodeAll[T any](keep func(*T) bool) func(k, v []byte) (T, bool, error) {
	return func(_, v []byte) (T, bool, error) {
		var item T
		if err := json.Unmarshal(v, &item); err != nil {
			return item, false, err
		}
		return item, keep == nil || keep(&item), nil
	}
}

// ListParams selects one page of a list: at most Limit items after the
// cursor After or before the cursor Before (at most one of the two).
// A zero Limit means the default page size.
type ListParams struct {
	// Limit is the most items on the page; zero means the default page size.
	Limit int
	// After is the After cursor of the previous page: the page that follows it. At
	// most one of After and Before.
	After string
	// Before is the Before cursor of a page: the page that precedes it.
	Before string
}

// Page is one page of a list. After is set when items follow this page and
// Before when items precede it; each is the cursor to pass back in
// ListParams to get that page. TotalResultSize counts every item matching the
// list's filters across all pages.
type Page[T any] struct {
	// Items are the page's items in the list's order.
	Items []T
	// After is the cursor of the next page; empty on the last page.
	After string
	// Before is the cursor of the previous page; empty on the first page.
	Before string
	// TotalResultSize counts the items matching the filters, on every page.
	TotalResultSize int
}

// MarshalJSON writes the page in the wire shape
// {"items": [...], "pagination": {"after", "before", "totalResultSize"}};
// items is [] (never null) for an empty page.
func (p Page[T]) MarshalJSON() ([]byte, error) {
	items := p.Items
	if items == nil {
		items = []T{}
	}
	return json.Marshal(struct {
		Items      []T        `json:"items"`
		Pagination Pagination `json:"pagination"`
	}{items, Pagination{After: p.After, Before: p.Before, TotalResultSize: p.TotalResultSize}})
}

// Pagination is the pagination object of a list response.
type Pagination struct {
	// After: see Page.After.
	After string `json:"after,omitempty"`
	// Before: see Page.Before.
	Before string `json:"before,omitempty"`
	// TotalResultSize: see Page.TotalResultSize.
	TotalResultSize int `json:"totalResultSize"`
}

func (q listQuery[T]) id() string {
	dir := "asc"
	if q.desc {
		dir = "desc"
	}
	// The prefix holds the account: a cursor of another account's list
	// is refused like any cursor of another list.
	return q.name + "\x00" + dir + "\x00" + q.filter + "\x00" + string(q.prefix)
}

func (s *Service) checkListParams(q interface{ id() string }, p ListParams) (int, *cursor.Cursor, error) {
	var v validator
	limit := p.Limit
	switch {
	case limit == 0:
		limit = s.limits.DefaultPageSize
	case limit < 1 || limit > s.limits.MaxPageSize:
		v.add("limit", "limit must be between 1 and %d", s.limits.MaxPageSize)
	}
	if p.After != "" && p.Before != "" {
		v.add("before", "send either after or before, not both")
	}
	var cur *cursor.Cursor
	for _, c := range []struct {
		field, value string
		after        bool
	}{{"after", p.After, true}, {"before", p.Before, false}} {
		if c.value == "" || p.After != "" && p.Before != "" {
			continue
		}
		decoded, ok := s.cursors.Decode(c.value)
		if !ok || decoded.List != q.id() || decoded.After != c.after {
			v.add(c.field, "%s is not a cursor issued for this list with these filters", c.field)
			continue
		}
		cur = &decoded
	}
	return limit, cur, v.err()
}

// SortOrder is the direction of a list: ASC or DESC.
type SortOrder string

// The sort orders.
const (
	SortAsc  SortOrder = "ASC"
	SortDesc SortOrder = "DESC"
)

// ParseSortOrder parses the sortOrder query parameter; "" gives def.
func ParseSortOrder(s string, def SortOrder) (SortOrder, error) {
	switch SortOrder(s) {
	case "":
		return def, nil
	case SortAsc, SortDesc:
		return SortOrder(s), nil
	}
	return "", FieldError("sortOrder", "sortOrder must be ASC or DESC")
}

// memoDecode returns the record under table t and key k whose stored bytes
// are v, from the Service's record memo or decoded now.
func memoDecode[T any](s *Service, t Table, k, v []byte) (*memo.Record, *T, error) {
	if r := s.memo.Get(string(t), k, v); r != nil {
		if item, ok := r.Item.(*T); ok {
			return r, item, nil
		}
	}
	item := new(T)
	if err := json.Unmarshal(v, item); err != nil {
		return nil, nil, err
	}
	r := &memo.Record{Raw: bytes.Clone(v), Item: item}
	s.memo.Put(string(t), k, r)
	return r, item, nil
}

// memoized is decodeAll through the Service's record memo: a record whose
// stored bytes did not change since it was last decoded is not decoded
// again. The items it returns share their maps, slices and pointers with
// the memo, so the listQuery using it must set clone (list then clones the
// items of the page, the only ones that leave it) and keep must not modify
// its argument.
func memoized[T any](s *Service, t Table, keep func(*T) bool) func(k, v []byte) (T, bool, error) {
	return func(k, v []byte) (T, bool, error) {
		_, item, err := memoDecode[T](s, t, k, v)
		if err != nil {
			var zero T
			return zero, false, err
		}
		return *item, keep == nil || keep(item), nil
	}
}

// Rendering is a form of records of type T made by a function of the
// caller's (such as their encoding for a wire protocol). A list through a
// Rendering makes it once per stored version of a record and keeps it with
// the record in the Service's record memo, so a list renders only the
// records that changed since they were last listed. Make one with
// NewRendering and keep it: each Rendering has its own slot.
type Rendering[T, R any] struct {
	derive func(item any) (any, error)
}

// NewRendering returns the Rendering made by render. render gets an item
// shared with the memo: it must not modify it, nor keep it.
func NewRendering[T, R any](render func(*T) (R, error)) *Rendering[T, R] {
	return &Rendering[T, R]{derive: func(item any) (any, error) { return render(item.(*T)) }}
}

// listRendered is list over q, whose decode is memoized with the filter
// keep, with each item of the page given as r's rendering of it: the same
// items, cursors and totals.
func listRendered[T, R any](ctx context.Context, s *Service, tx Tx, q listQuery[T], keep func(*T) bool, p ListParams, r *Rendering[T, R]) (Page[R], error) {
	qm := listQuery[*memo.Record]{
		name: q.name, filter: q.filter, table: q.table, prefix: q.prefix, desc: q.desc,
		count: q.count,
		decode: func(k, v []byte) (*memo.Record, bool, error) {
			rec, item, err := memoDecode[T](s, q.table, k, v)
			if err != nil {
				return nil, false, err
			}
			return rec, keep == nil || keep(item), nil
		},
	}
	page, err := list(ctx, s, tx, qm, p)
	if err != nil {
		return Page[R]{}, err
	}
	out := Page[R]{Items: make([]R, len(page.Items)), After: page.After, Before: page.Before, TotalResultSize: page.TotalResultSize}
	for i, rec := range page.Items {
		v, err := rec.Derived(r, r.derive)
		if err != nil {
			return Page[R]{}, err
		}
		out.Items[i] = v.(R)
	}
	return out, nil
}
