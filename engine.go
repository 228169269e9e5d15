package billing

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
func blamePrice(err error, todo []charge, lines []InvoiceLineItem) error {
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
// RunBilling(now). With Config.ConcurrentBillingRuns the instances
// bill in rounds: the first instance whose tick comes after the last round
// is an interval old starts a round as of now; the others' ticks within
// that interval join it (as of the round's time) and skip what it billed,
// so across the cluster each schedule is billed once per interval, and a
// round an instance left unfinished (it died) is finished by the others
// once its leases expire.
func (s *Service) RunScheduledBilling(ctx context.Context, now time.Time, interval time.Duration) (*BillingRun, error) {
	asOf, since := NormalizeTime(now), s.now()
	if s.billRuns {
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
	if s.billRuns {
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

// errScheduleFailed aborts a batch transaction when one schedule fails, so
// the batch can be rerun one schedule per transaction.
var errScheduleFailed = errors.New("billing: a schedule of the batch failed")

// billBatchTx bills the schedules of keys in tx, the part of each in
// parts; errScheduleFailed when one fails. The batch's records are read
// ahead first (engineprefetch.go).
func (s *Service) billBatchTx(ctx context.Context, tx Tx, keys [][]byte, asOf, now time.Time, parts []BillingRun, l *runLeases) error {
	if err := s.prefetchBatch(ctx, tx, keys, asOf); err != nil {
		return err
	}
	for i, k := range keys {
		if err := s.billSchedule(ctx, tx, k, asOf, now, &parts[i]); err != nil {
			if CodeOf(err) == CodeUnavailable {
				return err
			}
			return errScheduleFailed
		}
	}
	// Released last: the store then writes the leases with the batch's
	// other writes at the commit, not between schedules.
	for _, k := range keys {
		if err := l.release(ctx, tx, k, true); err != nil {
			return err
		}
	}
	return nil
}

// billBatch bills the schedules of keys in one transaction. When one of
// them fails, the transaction is rolled back and each schedule is billed in
// a transaction of its own, the failing ones recording their error.
func (s *Service) billBatch(ctx context.Context, keys [][]byte, asOf, now time.Time, run *BillingRun, l *runLeases) error {
	var parts []BillingRun
	err := s.store.Update(ctx, func(tx Tx) error {
		parts = make([]BillingRun, len(keys))
		return s.billBatchTx(ctx, tx, keys, asOf, now, parts, l)
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
	} else if err := s.billProgressive(ctx, tx, lc, prices, asOf, now, run); err != nil {
		return err
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
	lines  []InvoiceLineItem
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
		if sc.AutoIssueInvoices && issuable(inv) {
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
