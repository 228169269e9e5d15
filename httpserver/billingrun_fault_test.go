package httpserver

import (
	"bytes"
	"fmt"
	"net/http"
	"testing"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
	"github.com/billingd/billing/storage/faultstore"
)

// TestBillingRunStorageFailureAnswers503AndRetryBillsOnce: POST
// /billing-runs bills outside mutate (a batch of schedules per transaction),
// so its Idempotency-Key answer is stored after the run, in a transaction
// of its own. When any commit of the run fails (the batch's, the run
// record's, or the answer's), the client gets 503 unavailable, never a 200 that its retry
// could not replay; the retry with the same key answers 200 and bills
// nothing twice (the exactly-once markers), and replays identically after.
func TestBillingRunStorageFailureAnswers503AndRetryBillsOnce(t *testing.T) {
	t.Parallel()
	// Commit 1 is the batch of both schedules, commit 2 the run's record,
	// commit 3 the stored answer; commit 4 does not exist (nothing fails).
	for after := range 4 {
		t.Run(fmt.Sprintf("commit_%d_fails", after+1), func(t *testing.T) {
			t.Parallel()
			fs := faultstore.New(billingtest.DurableStore(t))
			e := newEnv(t, &Config{RateLimit: -1}, billingtest.WithStore(fs))
			customer, price := e.scheduleFixture()
			for range 2 {
				id := e.create("/billing-schedules", scheduleBody(customer, price, ""))
				wantStatus(t, e.put("/billing-schedules/"+id+"/activate", ""), http.StatusOK)
			}
			run := withKey(req{method: "POST", path: "/billing-runs", body: `{}`}, "run-1")

			fs.Inject(faultstore.Fault{Op: faultstore.OpCommit, After: after, Count: 1})
			r := e.do(run)
			failed := fs.Failures() > 0
			fs.Clear()
			switch {
			case after < 3 && !failed:
				t.Fatalf("commit %d of the run was not attempted: %d %s", after+1, r.status, r.body)
			case failed:
				wantUnavailable(t, "POST /billing-runs with a failed commit", r)
			default:
				wantStatus(t, r, http.StatusOK)
			}

			retry := e.do(run)
			wantStatus(t, retry, http.StatusOK)
			if n := e.listTotal("/invoices"); n != 2 {
				t.Errorf("%d invoices after the run and its retry, want 2 (one per schedule)", n)
			}
			replay := e.do(run)
			wantStatus(t, replay, http.StatusOK)
			if replay.header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(replay.body, retry.body) {
				t.Errorf("second retry: replayed %q, %s; want the retry's answer %s", replay.header.Get("Idempotent-Replayed"), replay.body, retry.body)
			}
			again := decode[billing.BillingRun](t, e.post("/billing-runs", `{}`))
			if again.InvoicesCreated != 0 || e.listTotal("/invoices") != 2 {
				t.Errorf("a new run billed again: %+v", again)
			}
		})
	}
}
