package billing

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// engineBatchSize is how many schedules one engine transaction bills: large
// enough that a run over 10,000 schedules needs few commits, small enough
// that API writes never wait long behind the engine.
const engineBatchSize = 100

// defaultLateUsageWindow is Config.LateUsageWindow's default: how long
// after an invoice's billing date the engine keeps checking its usage for
// late changes.
const defaultLateUsageWindow = 31 * 24 * time.Hour

// BillingRun reports what one run of the billing engine did.
type BillingRun struct {
	// AsOf is the instant the run billed up to: billing dates on or before it were
	// billed.
	AsOf time.Time `json:"asOf"`
	// SchedulesVisited counts the ACTIVE, non-archived schedules the run looked
	// at.
	SchedulesVisited int `json:"schedulesVisited"`
	// InvoicesCreated counts the invoices the run created.
	InvoicesCreated int `json:"invoicesCreated"`
	// InvoicesUpdated counts the DRAFT engine invoices whose usage lines the run
	// recomputed and changed.
	InvoicesUpdated int `json:"invoicesUpdated"`
	// InvoicesIssued counts the invoices sent at once (autoIssueInvoices).
	InvoicesIssued int `json:"invoicesIssued"`
	// SchedulesCompleted counts the schedules whose last period the run invoiced
	// (now COMPLETED).
	SchedulesCompleted int `json:"schedulesCompleted"`
	// CreditGrantsExpired counts the credit grants the run expired.
	CreditGrantsExpired int `json:"creditGrantsExpired"`
	// InvoiceIDs are the invoices the run created or changed.
	InvoiceIDs []string `json:"invoiceIds"`
	// CorrectionsIssued counts the late usage corrections issued: adjustment
	// invoices (also counted in InvoicesCreated) and credit notes.
	CorrectionsIssued int `json:"correctionsIssued"`
	// CreditNoteIDs are the credit notes the run created (late usage
	// corrections).
	CreditNoteIDs []string `json:"creditNoteIds"`
	// Failures are the schedules the run could not bill; each is retried by the
	// next run.
	Failures []BillingFailure `json:"failures"`
	// CatchingUp lists the schedules that reached Config.MaxCatchUpInvoices
	// in this run and have billing dates left: the next runs continue.
	CatchingUp []string `json:"catchingUp"`

	// accounts is the run split by account, for the run records; nil in
	// the parts of a run.
	accounts map[string]*BillingRun
}

// BillingFailure is a schedule the run could not bill; it is retried on
// the next run, and the error is on the schedule's lastBillingError.
type BillingFailure struct {
	// BillingScheduleID is the schedule that could not be billed.
	BillingScheduleID string `json:"billingScheduleId"`
	// ServiceAccountID is the schedule's account.
	ServiceAccountID string `json:"serviceAccountId"`
	// CustomerID is the schedule's customer; empty when the schedule could not be
	// read.
	CustomerID string `json:"customerId,omitempty"`
	// PriceID is the price whose charge could not be billed, when the
	// failure is about one price.
	PriceID string `json:"priceId,omitempty"`
	// Code classifies the failure: the error code (invalid_state,
	// validation_failed, not_found, ...; internal for a bug or a storage
	// failure).
	Code Code `json:"code"`
	// Error says what went wrong, naming the price, in words a person can
	// act on; it is also the schedule's lastBillingError.
	Error string `json:"error"`
}

// priceFailure is a failure to bill the charges of one price.
type priceFailure struct {
	price *Price
	err   error
}

func (e *priceFailure) Error() string { return describeFailure(e.price, e.err.Error()) }
func (e *priceFailure) Unwrap() error { return e.err }

// blamePrice ties a failure to bill a date to its price: the price of the
// line the error's field names (lineItems[i]...), else the only price of
// the date's charges. Other errors are returned as they are.
func blamePrice(err error, todo []charge, lines []InvoiceLineItemParams) error {
	if err == nil || CodeOf(err) == CodeInternal || CodeOf(err) == CodeUnavailable {
		return err
	}
	var price *Price
	if es := Errors(err); len(es) > 0 && strings.HasPrefix(es[0].Field, "lineItems[") {
		var i int
		if _, serr := fmt.Sscanf(es[0].Field, "lineItems[%d]", &i); serr == nil && i >= 0 && i < len(lines) {
			for _, ch := range todo {
				if ch.Price != nil && ch.Price.ID == lines[i].PriceID {
					price = ch.Price
				}
			}
		}
	}
	if price == nil {
		for _, ch := range todo {
			if price != nil && ch.Price.ID != price.ID {
				return err // several prices, none named
			}
			price = ch.Price
		}
	}
	if price == nil {
		return err
	}
	return &priceFailure{price: price, err: err}
}

// LateUsage is usage of a period that changed after the invoice carrying it
// was finalized, with the corrections the engine issued for it.
type LateUsage struct {
	// BillingScheduleID is the schedule whose invoice no longer matches its usage.
	BillingScheduleID string `json:"billingScheduleId"`
	// PriceID is the usage-based price whose usage changed.
	PriceID string `json:"priceId"`
	// InvoiceID is the finalized invoice that billed the period; empty when none
	// is known.
	InvoiceID string `json:"invoiceId,omitempty"`
	// ServicePeriod is the period whose usage changed (inclusive dates).
	ServicePeriod ServicePeriod `json:"servicePeriod"`
	// BilledUsage is the usage the finalized invoice billed.
	BilledUsage Decimal `json:"billedUsage"`
	// CurrentUsage is the usage of the period as the events now stand.
	CurrentUsage Decimal `json:"currentUsage"`
	// Difference is CurrentUsage - BilledUsage (negative when usage was removed).
	Difference Decimal `json:"difference"`
	// DetectedAt is when a billing run first saw the difference.
	DetectedAt time.Time `json:"detectedAt"`
	// CorrectionInvoiceIDs are the adjustment invoices that billed more
	// usage of this period, CorrectionCreditNoteIDs the credit notes that
	// credited less, in the order they were issued.
	CorrectionInvoiceIDs []string `json:"correctionInvoiceIds,omitempty"`
	// CorrectionCreditNoteIDs: see CorrectionInvoiceIDs.
	CorrectionCreditNoteIDs []string `json:"correctionCreditNoteIds,omitempty"`
}

// billingMarker records that one (schedule, price, period) was charged.
type billingMarker struct {
	InvoiceID   string `json:"invoiceId,omitempty"`
	BillingDate Date   `json:"billingDate"`
	PeriodEnd   Date   `json:"periodEnd"` // exclusive
}

// billingWatch is an engine invoice the engine still looks after: it
// recomputes a draft's lines, and checks a finalized invoice's usage for
// late changes, until the window closes.
type billingWatch struct {
	InvoiceID   string          `json:"invoiceId,omitempty"`
	BillingDate Date            `json:"billingDate"`
	Charges     []watchedCharge `json:"charges"`
}

// watchedCharge is a charge of a watched invoice with the usage it billed.
type watchedCharge struct {
	Phase     int      `json:"phase"`
	PriceID   string   `json:"priceId"`
	Start     Date     `json:"start"`
	End       Date     `json:"end"`
	FullStart Date     `json:"fullStart"`
	FullEnd   Date     `json:"fullEnd"`
	Usage     *Decimal `json:"usage,omitempty"`
}

// RunBilling runs the billing engine over every account as of asOf: for
// each schedule it bills, it creates the invoice of every billing date that
// is due and not yet billed, recomputes its engine drafts, and records late
// usage (docs/concepts.md). First it expires the credit grants whose last day
// is before asOf's date. Schedules are billed in batches, one transaction
// each. A schedule that cannot be billed is skipped and reported; an error
// is returned only when the store fails, and the work committed before it
// stays.
func (s *Service) RunBilling(ctx context.Context, asOf time.Time) (*BillingRun, error) {
	start, started := time.Now(), s.clock() // a duration for Config.Observer; a stamp for the records
	run, err := s.runBilling(ctx, "", NormalizeTime(asOf), s.now())
	s.observeRun(ctx, run, start)
	return run, s.recordRuns(ctx, run, err, "", started)
}

// RunScheduledBilling is what a program's periodic billing loop calls every
// interval (billingd's --billing-interval). With one process it is
// RunBilling(now). On a shared store (Config.SharedStore) the instances
// bill in rounds: the first instance whose tick comes after the last round
// is an interval old starts a round as of now; the others' ticks within
// that interval join it (as of the round's time) and skip what it billed,
// so across the cluster each schedule is billed once per interval, and a
// round an instance left unfinished (it died) is finished by the others
// once its leases expire.
func (s *Service) RunScheduledBilling(ctx context.Context, now time.Time, interval time.Duration) (*BillingRun, error) {
	asOf, since := NormalizeTime(now), s.now()
	if s.shared {
		var err error
		if asOf, since, err = s.billingRound(ctx, asOf, since, interval); err != nil {
			return nil, err
		}
	}
	start, started := time.Now(), s.clock() // a duration for Config.Observer; a stamp for the records
	run, err := s.runBilling(ctx, "", asOf, since)
	s.observeRun(ctx, run, start)
	return run, s.recordRuns(ctx, run, err, "", started)
}

// billingRound is the round of scheduled billing a tick at asOf takes part
// in (see RunScheduledBilling): the round started less than interval ago,
// or a new one starting at asOf. It returns the round's asOf and the
// instant it started (work claimed since then counts as done).
func (s *Service) billingRound(ctx context.Context, asOf, started time.Time, interval time.Duration) (time.Time, time.Time, error) {
	type round struct {
		AsOf    time.Time `json:"asOf"`
		Started time.Time `json:"started"`
	}
	var r round
	err := s.store.Update(ctx, func(tx Tx) error {
		b, err := tx.Get(ctx, tableMeta, []byte("billing_round"))
		if err == nil && json.Unmarshal(b, &r) == nil && started.Sub(r.Started) < interval && !r.AsOf.After(asOf) {
			return nil // join it
		}
		if err != nil && !errors.Is(err, ErrNotFound) {
			return err
		}
		r = round{AsOf: asOf, Started: started}
		b, err = json.Marshal(r)
		if err != nil {
			return err
		}
		return tx.Put(ctx, tableMeta, []byte("billing_round"), b)
	})
	return r.AsOf, r.Started, internal(err)
}

// RunAccountBilling is RunBilling for one account (POST /billing-runs).
// asOf nil means now. Returns validation_failed when asOf is later than now:
// previews are for PreviewInvoice.
func (s *Service) RunAccountBilling(ctx context.Context, account string, asOf *time.Time) (*BillingRun, error) {
	now := s.clock()
	at := now
	if asOf != nil {
		at = NormalizeTime(*asOf)
		if at.After(now) {
			return nil, FieldError("asOf", "asOf must not be later than now; use the upcoming-invoice endpoint for previews")
		}
		if !TimeInBounds(at) {
			return nil, FieldError("asOf", "asOf %s", boundsMessage)
		}
	}
	start := time.Now() // a duration for Config.Observer, not a stamp
	run, err := s.runBilling(ctx, account, at, s.now())
	s.observeRun(ctx, run, start)
	return run, s.recordRuns(ctx, run, err, account, now)
}

// runBilling visits the runnable schedules of account (all accounts when
// empty) in key order, a batch per transaction. On a shared store each
// batch is first claimed (engineLease): schedules another run holds are
// left to it and waited for at the end, and schedules another run billed
// as of asOf or later, having claimed them at or after since, are done.
func (s *Service) runBilling(ctx context.Context, account string, asOf, since time.Time) (*BillingRun, error) {
	now := s.clock()
	run := &BillingRun{AsOf: asOf, InvoiceIDs: []string{}, CreditNoteIDs: []string{}, Failures: []BillingFailure{}, CatchingUp: []string{}}
	// Credit expires first, so no invoice of the run uses credit past its
	// last day (finalization checks the day too).
	expired, err := s.expireCredits(ctx, account, asOf)
	run.CreditGrantsExpired = expired
	if err != nil {
		return run, err
	}
	var pre []byte
	if account != "" {
		pre = prefix(account)
	}
	var l *runLeases
	if s.shared {
		l = &runLeases{hold: s.newID(), asOf: asOf, since: since}
	}
	var after []byte
	for {
		keys, last, err := s.nextBatch(ctx, pre, after, l)
		if err != nil || last == nil {
			if err == nil && l != nil {
				err = s.awaitHeld(ctx, l, asOf, now, run)
			}
			return run, err
		}
		after = last
		if err := s.billClaimed(ctx, keys, asOf, now, run, l); err != nil {
			return run, err
		}
	}
}

// nextBatch returns the next batch of schedule keys after after and the
// last key it looked at (nil at the end): with leases, the ones it claimed.
func (s *Service) nextBatch(ctx context.Context, pre, after []byte, l *runLeases) (keys [][]byte, last []byte, err error) {
	if l == nil {
		keys, err = s.runnableKeys(ctx, pre, after)
		if len(keys) > 0 {
			last = keys[len(keys)-1]
		}
		return keys, last, err
	}
	return s.claimRunnable(ctx, pre, after, l)
}

// billClaimed bills keys (claimed by l, when not nil); when that fails, it
// releases what l still holds of them, so other runs need not wait for the
// leases to expire (a shutdown cancelling ctx, a store outage).
func (s *Service) billClaimed(ctx context.Context, keys [][]byte, asOf, now time.Time, run *BillingRun, l *runLeases) error {
	if len(keys) == 0 {
		return nil
	}
	err := s.billBatch(ctx, keys, asOf, now, run, l)
	if err != nil && l != nil {
		s.releaseLeases(context.WithoutCancel(ctx), keys, l)
	}
	return err
}

// engineLeaseTime is how long a run holds the schedules of a batch it
// claimed: far longer than billing a batch takes, and the time after which
// the schedules of a run that died are billed by others.
const engineLeaseTime = 2 * time.Minute

// engineLease is the lease of one schedule on a shared store
// (tableBillingLeases): which run holds it, until when, and what the last
// run that held it did. Leases only share work out; exactly-once comes from
// the billing markers written with each invoice.
type engineLease struct {
	Holder    string    `json:"holder,omitempty"` // the holding run; empty once released
	Until     time.Time `json:"until"`            // when a held lease expires
	ClaimedAt time.Time `json:"claimedAt"`        // when the last run claimed it (Config.Now, untruncated)
	AsOf      time.Time `json:"asOf"`             // what that run billed it as of; zero when it failed
}

// runLeases is one run's side of the leases.
type runLeases struct {
	hold        string    // this run's id
	asOf, since time.Time // see runBilling
	claimedAt   time.Time // when the batch being billed was claimed
	held        [][]byte  // keys another run held when this run came to them
}

// leaseState is what a run may do with a schedule, given its lease.
type leaseState int

const (
	leaseFree leaseState = iota // claim it
	leaseHeld                   // another run holds it: wait for it
	leaseDone                   // another run billed it as of asOf since the run began
)

func (l *runLeases) state(e *engineLease, now time.Time) leaseState {
	switch {
	case e == nil:
		return leaseFree
	case e.Holder != "" && now.Before(e.Until):
		return leaseHeld
	case e.Holder == "" && !e.AsOf.IsZero() && !e.AsOf.Before(l.asOf) && !e.ClaimedAt.Before(l.since):
		return leaseDone
	}
	return leaseFree
}

// claimRunnable claims, in one transaction, up to engineBatchSize free
// schedules of the runnable index under pre after after, looking at no
// more than four batches' worth of keys. It returns them and the last key
// it looked at (nil when none is left); held ones go to l.held.
func (s *Service) claimRunnable(ctx context.Context, pre, after []byte, l *runLeases) (claimed [][]byte, last []byte, err error) {
	r := Range{Prefix: pre}
	if after != nil {
		r.Start = append(append([]byte(nil), after...), 0)
	}
	var held [][]byte
	err = s.store.Update(ctx, func(tx Tx) error {
		claimed, last, held = nil, nil, nil
		var keys [][]byte
		err := tx.Scan(ctx, tableBillingRunnable, r, func(k, _ []byte) error {
			keys = append(keys, append([]byte(nil), k...))
			if len(keys) == 4*engineBatchSize {
				return ErrStopScan
			}
			return nil
		})
		if err != nil || len(keys) == 0 {
			return err
		}
		claimed, held, last, err = s.claimAmong(ctx, tx, keys, l)
		return err
	})
	if err == nil {
		l.held = append(l.held, held...)
	}
	return claimed, last, err
}

// claimAmong claims the free schedules of keys (in key order) in tx, up to
// engineBatchSize, and returns them, the held ones and the last key looked
// at.
func (s *Service) claimAmong(ctx context.Context, tx Tx, keys [][]byte, l *runLeases) (claimed, held [][]byte, last []byte, err error) {
	now := s.now()
	leases := map[string]*engineLease{}
	end := append(append([]byte(nil), keys[len(keys)-1]...), 0)
	err = tx.Scan(ctx, tableBillingLeases, Range{Start: keys[0], End: end}, func(k, v []byte) error {
		var e engineLease
		if err := json.Unmarshal(v, &e); err != nil {
			return err
		}
		leases[string(k)] = &e
		return nil
	})
	if err != nil {
		return nil, nil, nil, err
	}
	for _, k := range keys {
		last = k
		switch l.state(leases[string(k)], now) {
		case leaseHeld:
			held = append(held, k)
		case leaseFree:
			claimed = append(claimed, k)
			if err := putRecord(ctx, tx, tableBillingLeases, k, engineLease{Holder: l.hold, Until: now.Add(engineLeaseTime), ClaimedAt: now}); err != nil {
				return nil, nil, nil, err
			}
		}
		if len(claimed) == engineBatchSize {
			break
		}
	}
	l.claimedAt = now
	return claimed, held, last, nil
}

// release marks the lease of k released in tx, with the asOf it was billed
// as of (billed) or none (it failed). A nil l does nothing.
func (l *runLeases) release(ctx context.Context, tx Tx, k []byte, billed bool) error {
	if l == nil {
		return nil
	}
	e := engineLease{ClaimedAt: l.claimedAt}
	if billed {
		e.AsOf = l.asOf
	}
	return putRecord(ctx, tx, tableBillingLeases, k, e)
}

// releaseLeases releases the leases of keys that l still holds, after a
// batch failed; a failure leaves them to expire.
func (s *Service) releaseLeases(ctx context.Context, keys [][]byte, l *runLeases) {
	err := s.store.Update(ctx, func(tx Tx) error {
		for _, k := range keys {
			e, err := findRecord[engineLease](ctx, tx, tableBillingLeases, k)
			if err != nil {
				return err
			}
			if e != nil && e.Holder == l.hold {
				if err := l.release(ctx, tx, k, false); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		s.log.Warn("billing engine: releasing leases", "err", err)
	}
}

// awaitHeld bills the schedules other runs held when this run came to
// them, once they are released (or their leases expired), unless those
// runs billed them as of asOf already: when a run returns, every schedule
// it visited is billed as of asOf, by it or by another run.
func (s *Service) awaitHeld(ctx context.Context, l *runLeases, asOf, now time.Time, run *BillingRun) error {
	for wait := 10 * time.Millisecond; len(l.held) > 0; wait = min(2*wait, time.Second) {
		held := l.held
		l.held = nil
		for chunk := range slices.Chunk(held, engineBatchSize) {
			var claimed, still [][]byte
			err := s.store.Update(ctx, func(tx Tx) (err error) {
				claimed, still, _, err = s.claimAmong(ctx, tx, chunk, l)
				return err
			})
			if err != nil {
				return internal(err)
			}
			l.held = append(l.held, still...)
			if err := s.billClaimed(ctx, claimed, asOf, now, run, l); err != nil {
				return err
			}
		}
		if len(l.held) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
	}
	return nil
}

// runnableKeys returns up to engineBatchSize keys of the runnable index
// under pre that come after after.
func (s *Service) runnableKeys(ctx context.Context, pre, after []byte) ([][]byte, error) {
	return s.nextKeys(ctx, tableBillingRunnable, Range{Prefix: pre}, after, engineBatchSize, nil)
}

// nextKeys returns, in one read transaction, up to n keys of table t in r
// that come after after (all of r when nil) and that keep accepts (every
// key when nil): the next batch of a run that works in batches.
func (s *Service) nextKeys(ctx context.Context, t Table, r Range, after []byte, n int, keep func(k []byte) bool) ([][]byte, error) {
	var keys [][]byte
	if after != nil {
		r.Start = append(append([]byte(nil), after...), 0)
	}
	err := s.view(ctx, func(tx Tx) error {
		return tx.Scan(ctx, t, r, func(k, _ []byte) error {
			if keep == nil || keep(k) {
				keys = append(keys, append([]byte(nil), k...))
			}
			if len(keys) == n {
				return ErrStopScan
			}
			return nil
		})
	})
	return keys, err
}

// errScheduleFailed aborts a batch transaction when one schedule fails, so
// the batch can be rerun one schedule per transaction.
var errScheduleFailed = errors.New("billing: a schedule of the batch failed")

// billBatch bills the schedules of keys in one transaction. When one of
// them fails, the transaction is rolled back and each schedule is billed in
// a transaction of its own, the failing ones recording their error.
func (s *Service) billBatch(ctx context.Context, keys [][]byte, asOf, now time.Time, run *BillingRun, l *runLeases) error {
	var parts []BillingRun
	err := s.store.Update(ctx, func(tx Tx) error {
		parts = make([]BillingRun, len(keys))
		for i, k := range keys {
			if err := s.billSchedule(ctx, tx, k, asOf, now, &parts[i]); err != nil {
				if CodeOf(err) == CodeUnavailable {
					return err
				}
				return errScheduleFailed
			}
		}
		// Released last: the store then writes the leases with the
		// batch's other writes at the commit, not between schedules.
		for _, k := range keys {
			if err := l.release(ctx, tx, k, true); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		for i, k := range keys {
			run.add(k, &parts[i])
		}
		return nil
	}
	if !errors.Is(err, errScheduleFailed) {
		return internal(err)
	}
	var part BillingRun
	for _, k := range keys {
		part = BillingRun{}
		var failure error
		err := s.store.Update(ctx, func(tx Tx) error {
			part = BillingRun{}
			failure = s.billSchedule(ctx, tx, k, asOf, now, &part)
			if failure != nil && CodeOf(failure) != CodeUnavailable {
				return errScheduleFailed
			}
			if failure != nil {
				return failure
			}
			return l.release(ctx, tx, k, true)
		})
		switch {
		case err == nil:
			run.add(k, &part)
		case errors.Is(err, errScheduleFailed):
			if err := s.recordBillingError(ctx, k, failure, run, l); err != nil {
				return err
			}
		default:
			return internal(err)
		}
	}
	return nil
}

// add merges the part o of the run, the billing of the schedule under
// key k, into r and into r's part of k's account.
func (r *BillingRun) add(k []byte, o *BillingRun) {
	r.merge(o)
	r.account(keyAccount(k)).merge(o)
}

// account returns r's part of one account, creating it.
func (r *BillingRun) account(id string) *BillingRun {
	if r.accounts == nil {
		r.accounts = map[string]*BillingRun{}
	}
	a := r.accounts[id]
	if a == nil {
		a = &BillingRun{AsOf: r.AsOf, InvoiceIDs: []string{}, CreditNoteIDs: []string{}, Failures: []BillingFailure{}, CatchingUp: []string{}}
		r.accounts[id] = a
	}
	return a
}

// keyAccount returns the account id of a key that starts with one.
func keyAccount(k []byte) string {
	a, _, _ := bytes.Cut(k, []byte{keySep})
	return string(a)
}

func (r *BillingRun) merge(o *BillingRun) {
	r.SchedulesVisited += o.SchedulesVisited
	r.InvoicesCreated += o.InvoicesCreated
	r.InvoicesUpdated += o.InvoicesUpdated
	r.InvoicesIssued += o.InvoicesIssued
	r.SchedulesCompleted += o.SchedulesCompleted
	r.InvoiceIDs = append(r.InvoiceIDs, o.InvoiceIDs...)
	r.CorrectionsIssued += o.CorrectionsIssued
	r.CreditNoteIDs = append(r.CreditNoteIDs, o.CreditNoteIDs...)
	r.CatchingUp = append(r.CatchingUp, o.CatchingUp...)
}

// recordBillingError stores why the schedule under k could not be billed.
func (s *Service) recordBillingError(ctx context.Context, k []byte, failure error, run *BillingRun, l *runLeases) error {
	f := BillingFailure{Code: CodeOf(failure), Error: "internal error: the cause is in the server's log"}
	if es := Errors(failure); len(es) > 0 && es[0].Code != CodeInternal {
		f.Error = es[0].Message
		s.log.Warn("billing engine: schedule could not be billed", "schedule", string(k), "code", string(f.Code), "error", f.Error)
	} else {
		s.log.Error("billing engine: schedule failed", "schedule", string(k), "error", failure)
	}
	var pf *priceFailure
	if errors.As(failure, &pf) {
		f.PriceID, f.Error = pf.price.ID, describeFailure(pf.price, f.Error)
	}
	msg := f.Error
	err := s.store.Update(ctx, func(tx Tx) error {
		if err := l.release(ctx, tx, k, false); err != nil {
			return err
		}
		sc, err := getRecord[BillingSchedule](ctx, tx, tableBillingSchedules, k)
		if err != nil {
			return err
		}
		f.BillingScheduleID, f.ServiceAccountID, f.CustomerID = sc.ID, sc.ServiceAccountID, sc.CustomerID
		if sc.LastBillingError == msg {
			return nil
		}
		sc.LastBillingError = msg
		return s.storeSchedule(ctx, tx, sc)
	})
	if err != nil && !errors.Is(err, ErrNotFound) {
		return internal(err)
	}
	run.Failures = append(run.Failures, f)
	a := run.account(keyAccount(k))
	a.Failures = append(a.Failures, f)
	return nil
}

// storeSchedule writes sc without its embedded prices.
func (s *Service) storeSchedule(ctx context.Context, tx Tx, sc *BillingSchedule) error {
	stored := *sc
	stored.Prices = nil
	return putRecord(ctx, tx, tableBillingSchedules, key(sc.ServiceAccountID, sc.ID), &stored)
}

// hasWatch reports whether the engine still watches invoices of sc.
func (s *Service) hasWatch(ctx context.Context, tx Tx, sc *BillingSchedule) (bool, error) {
	found := false
	err := tx.Scan(ctx, tableBillingWatch, Range{Prefix: prefix(sc.ServiceAccountID, sc.ID)}, func(_, _ []byte) error {
		found = true
		return ErrStopScan
	})
	return found, err
}

// lastBilledDay returns the last day of the latest period billed for sc,
// zero when nothing was billed.
func (s *Service) lastBilledDay(ctx context.Context, tx Tx, sc *BillingSchedule) (Date, error) {
	var last Date
	err := eachRecord(ctx, tx, tableBillingMarkers, Range{Prefix: prefix(sc.ServiceAccountID, sc.ID)}, func(m *billingMarker) error {
		if e := m.PeriodEnd.AddDays(-1); last.IsZero() || e.After(last) {
			last = e
		}
		return nil
	})
	return last, err
}

// due reports whether a charge's billing date has come at asOf: IN_ARREARS
// charges only once the grace period after it has passed.
func (s *Service) due(cal Calendar, ch charge, asOf time.Time) bool {
	at := cal.Start(ch.BillingDate)
	if ch.Price.BillingType == BillingTypeInArrears && !oneTime(ch.Price) {
		at = at.Add(s.grace)
	}
	return !at.After(asOf)
}

// dueDates groups charges by billing date, keeping only the dates all of
// whose charges are due, so one invoice carries every charge of its date.
func (s *Service) dueDates(cal Calendar, charges []charge, asOf time.Time) [][]charge {
	var out [][]charge
	for _, group := range byBillingDate(charges) {
		ok := true
		for _, ch := range group {
			ok = ok && s.due(cal, ch, asOf)
		}
		if ok {
			out = append(out, group)
		}
	}
	return out
}

// billSchedule bills the schedule under k inside tx: the new invoices of
// every due billing date, then the watched invoices, then its status.
func (s *Service) billSchedule(ctx context.Context, tx Tx, k []byte, asOf, now time.Time, run *BillingRun) error {
	sc, err := getRecord[BillingSchedule](ctx, tx, tableBillingSchedules, k)
	if errors.Is(err, ErrNotFound) {
		return tx.Delete(ctx, tableBillingRunnable, k)
	}
	if err != nil {
		return err
	}
	run.SchedulesVisited++
	prices, err := s.schedulePrices(ctx, tx, sc)
	if err != nil {
		return Errorf(CodeInvalidState, "a price of the schedule no longer exists")
	}
	lc, err := s.newLineContext(ctx, tx, sc, prices)
	if err != nil {
		return err
	}
	orig := *sc
	created := map[Date]bool{}
	catchingUp := false
	if sc.runnable() {
		charges := scheduleCharges(sc, prices, lc.cal.DateOf(asOf).AddDays(1))
		groups, billed := s.dueDates(lc.cal, charges, asOf), 0
		for _, group := range groups {
			if billed == s.catchUp {
				// The rest follows in the next runs: one run of a schedule
				// starting years back must not write thousands of invoices.
				catchingUp = true
				break
			}
			made, err := s.billDate(ctx, tx, lc, group, now, run)
			if err != nil {
				return err
			}
			created[group[0].BillingDate] = made
			if made {
				billed++
			}
		}
	}
	if catchingUp {
		run.CatchingUp = append(run.CatchingUp, sc.ID)
	}
	if err := s.reviewWatched(ctx, tx, lc, prices, created, asOf, now, run); err != nil {
		return err
	}
	return s.settleSchedule(ctx, tx, lc, &orig, prices, asOf, now, catchingUp, run)
}

// dateInvoice is what the engine does for one billing date of a schedule:
// the charges not yet billed, and the invoice computed from them (with no
// lines, no invoice is created and the charges are only marked billed).
type dateInvoice struct {
	date   Date
	todo   []charge
	params InvoiceParams
	lines  []InvoiceLineItemParams
	qs     []chargeQuantity
}

// planDate computes the invoice of one billing date from the charges of
// group not yet billed; nil when every charge is billed. It is the one
// computation behind both the billing run and the upcoming invoice, so the
// two can never disagree: the same charges, the same lines, the same
// refusals.
func (s *Service) planDate(ctx context.Context, tx Tx, lc *lineContext, group []charge) (*dateInvoice, error) {
	sc := lc.sc
	var todo []charge
	for _, ch := range group {
		billed, err := exists(ctx, tx, tableBillingMarkers, markerKey(sc, ch))
		if err != nil {
			return nil, err
		}
		if !billed {
			todo = append(todo, ch)
		}
	}
	if len(todo) == 0 {
		return nil, nil
	}
	date := todo[0].BillingDate
	if closed, err := exists(ctx, tx, tableBillingDateInvoices, key(sc.ServiceAccountID, sc.ID, date.String())); err != nil {
		return nil, err
	} else if closed {
		return nil, Errorf(CodeInvalidState, "charges due on %s cannot join that date's invoice any more", date)
	}
	if lc.customer.ArchivedAt != nil {
		return nil, Errorf(CodeInvalidState, "the schedule's customer is archived")
	}
	p, lines, qs, err := s.invoiceFor(ctx, tx, lc, todo)
	if err != nil {
		return nil, blamePrice(err, todo, nil)
	}
	return &dateInvoice{date: date, todo: todo, params: p, lines: lines, qs: qs}, nil
}

// billDate creates the invoice of one billing date from the charges not yet
// billed (planDate), writing their markers in the same transaction. It
// reports whether it billed anything.
func (s *Service) billDate(ctx context.Context, tx Tx, lc *lineContext, group []charge, now time.Time, run *BillingRun) (bool, error) {
	sc := lc.sc
	plan, err := s.planDate(ctx, tx, lc, group)
	if err != nil || plan == nil {
		return false, err
	}
	date := plan.date
	w := billingWatch{BillingDate: date, Charges: watchCharges(plan.todo, plan.qs)}
	if len(plan.lines) > 0 {
		inv, err := s.createInvoiceTx(ctx, tx, sc.ServiceAccountID, plan.params, plan.lines, now)
		if err != nil {
			return false, blamePrice(err, plan.todo, plan.lines)
		}
		w.InvoiceID = inv.ID
		if err := s.emitInvoice(ctx, tx, sc, inv.ID, NotificationInvoiceCreated); err != nil {
			return false, err
		}
		if err := tx.Put(ctx, tableBillingDateInvoices, key(sc.ServiceAccountID, sc.ID, date.String()), []byte(inv.ID)); err != nil {
			return false, err
		}
		run.InvoicesCreated++
		run.InvoiceIDs = append(run.InvoiceIDs, inv.ID)
		sc.LastInvoiceID = inv.ID
		if sc.AutoIssueInvoices {
			// The finalization applies USAGE credit through the watch.
			if err := putRecord(ctx, tx, tableBillingWatch, key(sc.ServiceAccountID, sc.ID, date.String()), &w); err != nil {
				return false, err
			}
			if _, err := s.sendInvoiceTx(ctx, tx, sc.ServiceAccountID, inv.ID); err != nil {
				return false, err
			}
			if err := s.emitInvoice(ctx, tx, sc, inv.ID, NotificationInvoiceIssued); err != nil {
				return false, err
			}
			run.InvoicesIssued++
		}
	}
	for _, ch := range plan.todo {
		b, _ := json.Marshal(billingMarker{InvoiceID: w.InvoiceID, BillingDate: date, PeriodEnd: ch.Period.End})
		if err := tx.Insert(ctx, tableBillingMarkers, markerKey(sc, ch), b); err != nil {
			return false, err // a conflict here would be a second charge: never commit it
		}
	}
	return true, putRecord(ctx, tx, tableBillingWatch, key(sc.ServiceAccountID, sc.ID, date.String()), &w)
}

// emitInvoice emits typ about the invoice as its GET returns it.
func (s *Service) emitInvoice(ctx context.Context, tx Tx, sc *BillingSchedule, id string, typ NotificationType) error {
	inv, err := s.getInvoiceTx(ctx, tx, sc.ServiceAccountID, id)
	if err != nil {
		return err
	}
	return s.emit(ctx, tx, sc.ServiceAccountID, typ, inv)
}

func markerKey(sc *BillingSchedule, ch charge) []byte {
	return key(sc.ServiceAccountID, sc.ID, ch.Price.ID, ch.Period.Start.String())
}

func watchCharges(cs []charge, qs []chargeQuantity) []watchedCharge {
	out := make([]watchedCharge, len(cs))
	for i, ch := range cs {
		p := ch.Period
		out[i] = watchedCharge{Phase: ch.Phase, PriceID: ch.Price.ID, Start: p.Start, End: p.End, FullStart: p.FullStart, FullEnd: p.FullEnd}
		if qs[i].usage {
			u := qs[i].value
			out[i].Usage = &u
		}
	}
	return out
}

// charges rebuilds the charges of a watched invoice.
func (w *billingWatch) charges(prices map[string]*Price) ([]charge, bool) {
	out := make([]charge, len(w.Charges))
	for i, wc := range w.Charges {
		pr := prices[wc.PriceID]
		if pr == nil {
			return nil, false
		}
		out[i] = charge{Phase: wc.Phase, Price: pr, BillingDate: w.BillingDate,
			Period: billingPeriod{Start: wc.Start, End: wc.End, FullStart: wc.FullStart, FullEnd: wc.FullEnd}}
	}
	return out, true
}

// reviewWatched recomputes the schedule's engine drafts and records late
// usage of its finalized invoices; watches whose window has closed, or
// whose invoice was voided, are dropped.
func (s *Service) reviewWatched(ctx context.Context, tx Tx, lc *lineContext, prices map[string]*Price, created map[Date]bool, asOf, now time.Time, run *BillingRun) error {
	sc := lc.sc
	watches, err := scanRecords[billingWatch](ctx, tx, tableBillingWatch, Range{Prefix: prefix(sc.ServiceAccountID, sc.ID)})
	if err != nil {
		return err
	}
	for i := range watches {
		w := &watches[i]
		if created[w.BillingDate] {
			continue
		}
		if err := s.reviewWatch(ctx, tx, lc, prices, w, asOf, now, run); err != nil {
			return err
		}
	}
	return nil
}

func (s *Service) reviewWatch(ctx context.Context, tx Tx, lc *lineContext, prices map[string]*Price, w *billingWatch, asOf, now time.Time, run *BillingRun) error {
	sc := lc.sc
	wk := key(sc.ServiceAccountID, sc.ID, w.BillingDate.String())
	drop := func() error { return tx.Delete(ctx, tableBillingWatch, wk) }
	charges, ok := w.charges(prices)
	if !ok {
		return drop()
	}
	status := StatusFinal
	if w.InvoiceID != "" {
		inv, err := s.getInvoiceTx(ctx, tx, sc.ServiceAccountID, w.InvoiceID)
		if errors.Is(err, ErrNotFound) || CodeOf(err) == CodeNotFound {
			return drop()
		}
		if err != nil {
			return err
		}
		status = inv.Status
	}
	switch status {
	case StatusVoided:
		return drop()
	case StatusDraft, StatusInProgress:
		mode, err := s.docRounding(ctx, tx, sc.ServiceAccountID, w.InvoiceID)
		if err != nil {
			return err
		}
		dlc := *lc
		dlc.rounding = mode
		_, lines, qs, err := s.invoiceFor(ctx, tx, &dlc, charges)
		if err != nil {
			return err
		}
		_, changed, err := s.replaceInvoiceLinesTx(ctx, tx, sc.ServiceAccountID, w.InvoiceID, lines, now)
		if err != nil {
			return err
		}
		if changed {
			run.InvoicesUpdated++
			if err := s.emitInvoice(ctx, tx, sc, w.InvoiceID, NotificationInvoiceUpdated); err != nil {
				return err
			}
		}
		w.Charges = watchCharges(charges, qs)
		return putRecord(ctx, tx, tableBillingWatch, wk, w)
	}
	if err := s.reviewFinalized(ctx, tx, lc, w, wk, charges, now, run); err != nil {
		return err
	}
	if lc.cal.Start(w.BillingDate).Add(s.late).Before(asOf) {
		return drop()
	}
	return nil
}

// settleSchedule clears a recorded billing error, completes a schedule
// whose last period is billed, and drops it from the runnable index when
// the engine has nothing left to do for it.
func (s *Service) settleSchedule(ctx context.Context, tx Tx, lc *lineContext, orig *BillingSchedule, prices map[string]*Price, asOf, now time.Time, catchingUp bool, run *BillingRun) error {
	sc := lc.sc
	done := !sc.runnable()
	completed := false
	if sc.runnable() && sc.EndDate != nil && !catchingUp {
		all := scheduleCharges(sc, prices, sc.EndDate.AddDays(1))
		done = true
		for _, ch := range all {
			done = done && s.due(lc.cal, ch, asOf)
		}
		if done && sc.Status != ScheduleStatusCancelled {
			sc.Status, sc.UpdatedAt, completed = ScheduleStatusCompleted, now, true
			run.SchedulesCompleted++
		}
	}
	sc.LastBillingError = ""
	if completed || sc.LastInvoiceID != orig.LastInvoiceID || orig.LastBillingError != "" {
		if err := s.storeSchedule(ctx, tx, sc); err != nil {
			return err
		}
	}
	if completed {
		if _, err := s.emitSchedule(ctx, tx, sc, NotificationBillingScheduleUpdated); err != nil {
			return err
		}
	}
	if !done {
		return nil
	}
	watched, err := s.hasWatch(ctx, tx, sc)
	if err != nil || watched {
		return err
	}
	return deleteIfPresent(ctx, tx, tableBillingRunnable, key(sc.ServiceAccountID, sc.ID))
}

// PreviewInvoice computes, without storing anything, the next invoice of a
// schedule as the engine creates it (the "upcoming invoice"): the earliest
// billing date whose charges are not yet billed and would make an invoice
// with lines, computed by the same code as the billing run (planDate) from
// the usage and seats recorded so far. Billing dates the run would not
// invoice (nothing to charge) are skipped, as the run skips them, up to 13
// months past asOf. A zero asOf means now. Returns not_found for an unknown
// schedule or when no invoice is coming, and the error the run would
// record (invalid_state, validation_failed) when the run could not bill it.
func (s *Service) PreviewInvoice(ctx context.Context, account, scheduleID string, asOf time.Time) (*UpcomingInvoice, error) {
	now := s.clock()
	asOf = NormalizeTime(asOf)
	if asOf.IsZero() {
		asOf = now
	}
	return read(ctx, s, func(tx Tx) (*UpcomingInvoice, error) {
		sc, err := s.getSchedule(ctx, tx, account, scheduleID)
		if err != nil {
			return nil, err
		}
		if sc.ArchivedAt != nil || sc.Status == ScheduleStatusCompleted {
			return nil, Errorf(CodeNotFound, "the schedule has no upcoming invoice")
		}
		prices, err := s.schedulePrices(ctx, tx, sc)
		if err != nil {
			return nil, Errorf(CodeInvalidState, "a price of the schedule no longer exists")
		}
		lc, err := s.newLineContext(ctx, tx, sc, prices)
		if err != nil {
			return nil, err
		}
		for _, group := range byBillingDate(scheduleCharges(sc, prices, lc.cal.DateOf(asOf).AddDays(400))) {
			plan, err := s.planDate(ctx, tx, lc, group)
			if err != nil {
				return nil, err
			}
			if plan == nil || len(plan.lines) == 0 {
				continue
			}
			inv, items, err := s.draftInvoice(ctx, tx, account, plan.params, plan.lines, now)
			if err != nil {
				return nil, err
			}
			// Nothing is stored, so nothing gets an id: the same state and
			// asOf give the same preview, byte for byte.
			inv.ID = ""
			for i := range items {
				items[i].ID, items[i].InvoiceID = "", ""
			}
			return &UpcomingInvoice{Invoice: inv, BillingDate: plan.date, LineItems: items}, nil
		}
		return nil, Errorf(CodeNotFound, "the schedule has no upcoming invoice")
	})
}

// UpcomingInvoice is a computed, unstored invoice with its lines and the
// billing date the engine would create it for. Its id and its lines' ids
// are empty: nothing is stored.
type UpcomingInvoice struct {
	*Invoice
	// BillingDate is the date the invoice would be created for.
	BillingDate Date `json:"billingDate"`
	// LineItems are the invoice's lines as the engine would store them now (ids
	// minted per call).
	LineItems []InvoiceLineItem `json:"lineItems"`
}

// byBillingDate splits charges (ordered by billing date) into one group
// per billing date.
func byBillingDate(charges []charge) [][]charge {
	var out [][]charge
	for i := 0; i < len(charges); {
		j := i
		for j < len(charges) && charges[j].BillingDate == charges[i].BillingDate {
			j++
		}
		out = append(out, charges[i:j])
		i = j
	}
	return out
}

// ListLateUsage lists the late usage recorded for a schedule, by price and
// period. Returns not_found for an unknown schedule and validation_failed
// for a bad limit or cursor.
func (s *Service) ListLateUsage(ctx context.Context, account, scheduleID string, p ListParams) (Page[LateUsage], error) {
	q := listQuery[LateUsage]{
		name: "late_usage", filter: scheduleID, table: tableBillingLateUsage,
		prefix: prefix(account, scheduleID), decode: decodeAll[LateUsage](nil),
	}
	return read(ctx, s, func(tx Tx) (Page[LateUsage], error) {
		if _, err := s.getSchedule(ctx, tx, account, scheduleID); err != nil {
			return Page[LateUsage]{}, err
		}
		return list(ctx, s, tx, q, p)
	})
}

// BillingRunRecord is one billing run as one account saw it: what the engine
// did for the account's schedules and which of them it could not bill.
// Runs that changed nothing for an account and found no failure are not
// recorded (the server runs the engine every minute); runs asked for with
// RunAccountBilling always are. An account keeps its newest
// maxBillingRunRecords records.
type BillingRunRecord struct {
	// ID identifies the record; records sort by it in the order they were made.
	ID string `json:"id"`
	// ServiceAccountID is the account the record belongs to.
	ServiceAccountID string `json:"serviceAccountId"`
	// StartedAt is when the run started (the Service's clock).
	StartedAt time.Time `json:"startedAt"`
	// FinishedAt is when the run ended and was recorded.
	FinishedAt time.Time `json:"finishedAt"`
	// Requested is true for a run asked for with RunAccountBilling, false
	// for a run of every account (RunBilling, the server's background loop).
	Requested bool `json:"requested"`
	// Error says why the run stopped before visiting every schedule (the
	// store failed); empty when it finished.
	Error string `json:"error,omitempty"`
	// BillingRun is what the run did for this account. CreditGrantsExpired
	// is counted only in requested runs (a run of every account expires
	// grants across accounts).
	BillingRun
}

// maxBillingRunRecords is how many run records an account keeps.
const maxBillingRunRecords = 100

// changed reports whether the run did anything or failed somewhere.
func (r *BillingRun) changed() bool {
	return r.InvoicesCreated+r.InvoicesUpdated+r.InvoicesIssued+r.SchedulesCompleted+r.CreditGrantsExpired+
		r.CorrectionsIssued+len(r.Failures)+len(r.CatchingUp) > 0
}

// recordRuns records run, started at started, for every account it changed
// or failed in, and for requested (the account of a RunAccountBilling, ""
// for RunBilling) always; runErr is the run's own error, returned as it is.
// A failure to record a run of every account is logged, not returned: the
// billing itself is committed. A requested run returns it, like any failed
// commit of the run: its caller retries, and the retry bills nothing twice.
func (s *Service) recordRuns(ctx context.Context, run *BillingRun, runErr error, requested string, started time.Time) error {
	if run == nil {
		return runErr
	}
	if requested != "" {
		run.account(requested).CreditGrantsExpired = run.CreditGrantsExpired
	}
	msg := ""
	if runErr != nil {
		msg = "the run stopped early: " + runErr.Error()
	}
	finished := s.clock()
	err := s.store.Update(ctx, func(tx Tx) error {
		for account, part := range run.accounts {
			if account != requested && !part.changed() && runErr == nil {
				continue
			}
			rec := BillingRunRecord{ID: s.newID(), ServiceAccountID: account, StartedAt: started, FinishedAt: finished,
				Requested: account == requested, Error: msg, BillingRun: *part}
			if err := putRecord(ctx, tx, tableBillingRuns, key(account, rec.ID), &rec); err != nil {
				return err
			}
			if err := pruneRuns(ctx, tx, account); err != nil {
				return err
			}
		}
		return nil
	})
	switch {
	case err != nil && requested != "" && runErr == nil:
		return internal(err)
	case err != nil:
		s.log.ErrorContext(ctx, "billing engine: the run could not be recorded", "error", err)
	}
	return runErr
}

// pruneRuns deletes the account's run records beyond the newest
// maxBillingRunRecords.
func pruneRuns(ctx context.Context, tx Tx, account string) error {
	return deleteRange(ctx, tx, tableBillingRuns, Range{Prefix: prefix(account), Reverse: true}, maxBillingRunRecords)
}

// ListBillingRuns lists the account's billing run records, newest first
// (see BillingRunRecord for which runs are recorded). Returns
// validation_failed for a bad limit or cursor.
func (s *Service) ListBillingRuns(ctx context.Context, account string, p ListParams) (Page[BillingRunRecord], error) {
	q := listQuery[BillingRunRecord]{
		name: "billing_runs", table: tableBillingRuns, prefix: prefix(account), desc: true,
		decode: decodeAll[BillingRunRecord](nil),
	}
	return read(ctx, s, func(tx Tx) (Page[BillingRunRecord], error) { return list(ctx, s, tx, q, p) })
}

// GetBillingRun returns one of the account's billing run records. Returns
// not_found.
func (s *Service) GetBillingRun(ctx context.Context, account, id string) (*BillingRunRecord, error) {
	return getOne[BillingRunRecord](ctx, s, tableBillingRuns, account, id, "billing run")
}

// Late usage corrections (schedules: late usage). When usage of a period
// whose invoice is already final changes within Config.LateUsageWindow,
// the next run re-prices the invoice's charges with the usage as it is now
// and issues the difference once: an adjustment invoice when the customer
// owes more, a credit note against the finalized invoice when it owes
// less. The watch record then holds the corrected usage, in the same
// transaction, so a difference is issued exactly once however often the
// engine runs or crashes; a later change is corrected again, from there.

// correctionLine is the change of one (price, period) of a corrected
// invoice: the net difference and what caused it.
type correctionLine struct {
	priceID string
	name    string // the price's
	period  billingPeriod
	diff    Decimal
	usage   *[2]Decimal // billed and current usage, for usage charges
}

// reviewFinalized re-measures the usage charges of a finalized (or
// lineless) watched invoice and corrects a changed amount.
func (s *Service) reviewFinalized(ctx context.Context, tx Tx, lc *lineContext, w *billingWatch, wk []byte, charges []charge, now time.Time, run *BillingRun) error {
	current := make([]chargeQuantity, len(charges))
	billed := make([]chargeQuantity, len(charges))
	var changed []int
	for i, ch := range charges {
		q, err := s.measure(ctx, tx, lc, ch)
		if err != nil {
			return err
		}
		current[i], billed[i] = q, q
		if u := w.Charges[i].Usage; u != nil {
			billed[i] = chargeQuantity{value: *u, usage: true}
			if u.Cmp(q.value) != 0 {
				changed = append(changed, i)
			}
		}
	}
	if len(changed) == 0 {
		return nil
	}
	var orig *Invoice
	dlc := *lc
	// Re-pricing twice must not draw USAGE credit twice: the difference is
	// priced without it (credit stays with the invoices that drew it).
	dlc.units = nil
	if w.InvoiceID != "" {
		var err error
		if orig, err = s.getInvoiceTx(ctx, tx, lc.sc.ServiceAccountID, w.InvoiceID); err != nil {
			return err
		}
		if dlc.rounding, err = s.docRounding(ctx, tx, lc.sc.ServiceAccountID, w.InvoiceID); err != nil {
			return err
		}
	}
	lines := correctionLines(s.engineLines(&dlc, charges, billed), s.engineLines(&dlc, charges, current), charges, billed, current)
	doc, err := s.issueCorrection(ctx, tx, lc, orig, lines, now, run)
	if err != nil {
		return err
	}
	for _, i := range changed {
		if err := s.recordLateUsage(ctx, tx, lc.sc, w.InvoiceID, charges[i], *w.Charges[i].Usage, current[i].value, doc, now); err != nil {
			return err
		}
		u := current[i].value
		w.Charges[i].Usage = &u
	}
	return putRecord(ctx, tx, tableBillingWatch, wk, w)
}

// correctionLines returns, per (price, period), the net difference between
// the invoice's lines with the billed usage and with the current usage;
// discount and minimum lines count for the price they belong to, so the
// differences add up to the whole invoice's difference.
func correctionLines(before, after []engineLine, charges []charge, billed, current []chargeQuantity) []correctionLine {
	var out []correctionLine
	index := map[string]int{}
	add := func(l engineLine, sign int) {
		id := l.priceID
		if id == "" {
			id = l.forPrice
		}
		k := id + "/" + l.period.Start.String()
		i, ok := index[k]
		if !ok {
			i = len(out)
			index[k] = i
			out = append(out, correctionLine{priceID: id, period: l.period})
		}
		if sign < 0 {
			out[i].diff = out[i].diff.Sub(l.net)
		} else {
			out[i].diff = out[i].diff.Add(l.net)
		}
	}
	for _, l := range before {
		add(l, -1)
	}
	for _, l := range after {
		add(l, 1)
	}
	for i, ch := range charges {
		j, ok := index[ch.Price.ID+"/"+ch.Period.Start.String()]
		if !ok {
			continue
		}
		out[j].name = ch.Price.Name
		if current[i].usage && billed[i].value.Cmp(current[i].value) != 0 {
			out[j].usage = &[2]Decimal{billed[i].value, current[i].value}
		}
	}
	return slices.DeleteFunc(out, func(c correctionLine) bool { return c.diff.Sign() == 0 })
}

// correctionDoc names the document a correction issued.
type correctionDoc struct {
	invoiceID, creditNoteID string
}

// issueCorrection issues the lines' total difference: an adjustment invoice
// (an engine invoice, sent at once when the schedule auto-issues) when it
// is positive, a DRAFT credit note against the original invoice when it is
// negative (a refund needs a person: the invoice may be paid). Nothing is
// issued when the differences cancel out.
func (s *Service) issueCorrection(ctx context.Context, tx Tx, lc *lineContext, orig *Invoice, lines []correctionLine, now time.Time, run *BillingRun) (correctionDoc, error) {
	total := lc.currency.Zero()
	for _, l := range lines {
		total = total.Add(l.diff)
	}
	if total.Sign() == 0 {
		return correctionDoc{}, nil
	}
	sc := lc.sc
	of, number := "a billing date without an invoice", ""
	if orig != nil {
		of, number = "invoice "+orig.InvoiceNumber, orig.InvoiceNumber
	}
	memo := correctionMemo(of, lines)
	meta := []KeyValue{{Key: "lateUsageCorrectionOf", Value: number}}
	if orig != nil {
		meta = append(meta, KeyValue{Key: "lateUsageCorrectionOfInvoiceId", Value: orig.ID})
	}
	params := make([]InvoiceLineItemParams, len(lines))
	sign := DecimalFromInt(int64(total.Sign()))
	for i, l := range lines {
		params[i] = correctionParams(lc, l, sign, number)
	}
	if total.Sign() > 0 {
		p := InvoiceParams{Currency: lc.currency, CustomerID: sc.CustomerID, BillingScheduleID: sc.ID,
			InvoiceUpdateParams: InvoiceUpdateParams{PurchaseOrderNumber: sc.PurchaseOrderNumber, Reference: sc.Reference,
				Memo: memo, Metadata: meta, BillingPeriod: invoicePeriodOf(orig, lines)}}
		inv, err := s.createInvoiceTx(ctx, tx, sc.ServiceAccountID, p, params, now)
		if err != nil {
			return correctionDoc{}, err
		}
		if err := s.emitInvoice(ctx, tx, sc, inv.ID, NotificationInvoiceCreated); err != nil {
			return correctionDoc{}, err
		}
		run.InvoicesCreated++
		run.CorrectionsIssued++
		run.InvoiceIDs = append(run.InvoiceIDs, inv.ID)
		if sc.AutoIssueInvoices {
			if _, err := s.sendInvoiceTx(ctx, tx, sc.ServiceAccountID, inv.ID); err != nil {
				return correctionDoc{}, err
			}
			if err := s.emitInvoice(ctx, tx, sc, inv.ID, NotificationInvoiceIssued); err != nil {
				return correctionDoc{}, err
			}
			run.InvoicesIssued++
		}
		return correctionDoc{invoiceID: inv.ID}, nil
	}
	cn, err := s.createCorrectionCreditNote(ctx, tx, lc, orig, memo, meta, params, now)
	if err != nil {
		return correctionDoc{}, err
	}
	run.CorrectionsIssued++
	run.CreditNoteIDs = append(run.CreditNoteIDs, cn.ID)
	return correctionDoc{creditNoteID: cn.ID}, nil
}

// correctionMemo says what happened, for the document and the
// notifications about it: which usage changed, from what to what.
func correctionMemo(of string, lines []correctionLine) string {
	var parts []string
	for _, l := range lines {
		if l.usage == nil {
			continue
		}
		if len(parts) == 3 {
			parts = append(parts, "and more")
			break
		}
		parts = append(parts, fmt.Sprintf("usage of %s for %s..%s changed from %s to %s", l.name, l.period.Start, l.period.EndInclusive(), l.usage[0], l.usage[1]))
	}
	return fmt.Sprintf("Correction of %s after it was finalized: %s", of, strings.Join(parts, "; "))
}

// correctionParams is the line of one (price, period) difference, its rate
// multiplied by sign (a credit note's lines credit the difference as a
// positive amount).
func correctionParams(lc *lineContext, l correctionLine, sign Decimal, number string) InvoiceLineItemParams {
	after := "its invoice was finalized"
	if number != "" {
		after = number + " was finalized"
	}
	desc := fmt.Sprintf("discounts and minimums of %s..%s adjusted for late usage after %s", l.period.Start, l.period.EndInclusive(), after)
	if l.usage != nil {
		desc = fmt.Sprintf("late usage: usage of %s..%s changed from %s to %s after %s", l.period.Start, l.period.EndInclusive(),
			l.usage[0], l.usage[1], after)
	}
	quantity, rate := l.perUnit(sign)
	tax := lc.taxRates[l.priceID]
	start, end := lc.cal.Start(l.period.Start), lc.cal.Start(l.period.End)
	return InvoiceLineItemParams{
		Title: "Late usage correction: " + l.name, Description: desc, Quantity: &quantity, Rate: &rate, TaxRate: &tax,
		ServicePeriodStart: &start, ServicePeriodEnd: &end,
		ServicePeriod: &ServicePeriod{StartDate: l.period.Start, EndDate: l.period.EndInclusive()},
		PriceID:       l.priceID, RateDisplay: RateDisplayAbsolute, ExternalIDs: []KeyValue{},
	}
}

// perUnit returns the quantity and rate of a correction line, multiplied
// by sign: the usage that changed at the unit price it changed the
// amount by ("3 × 0.05"), when that price is exact (at most 12 decimals);
// else 1 × the difference (tiers, packages and minimums do not price a
// unit alike).
func (l correctionLine) perUnit(sign Decimal) (quantity, rate Decimal) {
	diff := l.diff.Mul(sign)
	if l.usage != nil {
		delta := l.usage[1].Sub(l.usage[0]).Mul(sign)
		if delta.Sign() != 0 {
			if r, err := diff.Quo(delta); err == nil {
				r = r.Round(maxUsageDecimals, RoundHalfUp)
				if r.Mul(delta).Cmp(diff) == 0 {
					return delta, MustDecimal(r.Canonical())
				}
			}
		}
	}
	return DecimalFromInt(1), diff
}

// invoicePeriodOf is the billing period of a correction: the original
// invoice's, else the span of the corrected periods.
func invoicePeriodOf(orig *Invoice, lines []correctionLine) *DateRange {
	if orig != nil && orig.BillingPeriod != nil {
		bp := *orig.BillingPeriod
		return &bp
	}
	var r *DateRange
	for _, l := range lines {
		r = r.span(l.period)
	}
	return r
}

// createCorrectionCreditNote stores a DRAFT credit note crediting orig
// with lines, and emits CREDIT_NOTE_CREATED.
func (s *Service) createCorrectionCreditNote(ctx context.Context, tx Tx, lc *lineContext, orig *Invoice, memo string, meta []KeyValue, lines []InvoiceLineItemParams, now time.Time) (*CreditNote, error) {
	account := lc.sc.ServiceAccountID
	p := CreditNoteParams{Currency: lc.currency, CustomerID: lc.sc.CustomerID, Memo: memo, Metadata: meta}
	if orig != nil {
		p.InvoiceID = orig.ID
	}
	cn, err := s.createCreditNoteTx(ctx, tx, account, p, now)
	if err != nil {
		return nil, err
	}
	for _, lp := range lines {
		var v validator
		period := &DateRange{Start: lp.ServicePeriod.StartDate, EndInclusive: lp.ServicePeriod.EndDate}
		l, err := s.buildCreditNoteLine(ctx, tx, &v, account, cn, &CreditNoteLineItemParams{
			Title: lp.Title, Description: lp.Description, Quantity: lp.Quantity, Rate: lp.Rate, TaxRate: lp.TaxRate,
			ExternalIDs: []KeyValue{}, ServicePeriod: period,
		}, "")
		if err == nil {
			err = v.err()
		}
		if err != nil {
			return nil, err
		}
		if err := putNewLine(ctx, s, tx, tableCreditNoteLines, account, cn.ID, l); err != nil {
			return nil, err
		}
	}
	if err := recompute[CreditNote, CreditNoteLineItem, CreditNoteLineItemGroup](ctx, s, tx, creditNoteKind, account, cn, now); err != nil {
		return nil, err
	}
	return cn, s.emit(ctx, tx, account, NotificationCreditNoteCreated, cn)
}

// recordLateUsage stores the late usage of one charge, with the document
// that corrected it (none when the amount did not change).
func (s *Service) recordLateUsage(ctx context.Context, tx Tx, sc *BillingSchedule, invoiceID string, ch charge, billed, current Decimal, doc correctionDoc, now time.Time) error {
	lk := markerKey(sc, ch)
	lu, err := getRecord[LateUsage](ctx, tx, tableBillingLateUsage, lk)
	switch {
	case errors.Is(err, ErrNotFound):
		lu = &LateUsage{BillingScheduleID: sc.ID, PriceID: ch.Price.ID, InvoiceID: invoiceID, BilledUsage: billed,
			ServicePeriod: ServicePeriod{StartDate: ch.Period.Start, EndDate: ch.Period.EndInclusive()}}
	case err != nil:
		return err
	}
	lu.CurrentUsage, lu.Difference, lu.DetectedAt = current, current.Sub(lu.BilledUsage), now
	if doc.invoiceID != "" {
		lu.CorrectionInvoiceIDs = append(lu.CorrectionInvoiceIDs, doc.invoiceID)
	}
	if doc.creditNoteID != "" {
		lu.CorrectionCreditNoteIDs = append(lu.CorrectionCreditNoteIDs, doc.creditNoteID)
	}
	return putRecord(ctx, tx, tableBillingLateUsage, lk, lu)
}
