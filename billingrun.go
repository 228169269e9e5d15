package billing

import (
	"context"
	"time"
)

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
