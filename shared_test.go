package billing_test

import (
	"context"
	"testing"
	"time"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
)

// Several Services over one store with what billingd sets on PostgreSQL
// (Config.ConcurrentBillingRuns, SeriesInOwnTransaction, LegacyUsageIDRecords,
// KeyCacheTTL) stand for several
// billingd instances on one PostgreSQL database (memstore without
// BILLINGD_TEST_POSTGRES: the rules are the Service's, not the store's).
// The multi-process tests in internal/crashtest drive real processes.

// sharedPair returns a fixture and a second Service (another instance) on
// the fixture's store, both configured as billingd on PostgreSQL, sharing the stub clock and
// one id sequence.
func sharedPair(t *testing.T) (*sched, *billing.Service) {
	t.Helper()
	store := billingtest.Store(t)
	ids := billingtest.IDs()
	f := newSched(t, billingtest.WithStore(store), billingtest.WithConfig(billing.Config{ConcurrentBillingRuns: true, SeriesInOwnTransaction: true, LegacyUsageIDRecords: true, KeyCacheTTL: time.Second, NewID: ids}))
	other, err := billing.New(store, &billing.Config{ConcurrentBillingRuns: true, SeriesInOwnTransaction: true, LegacyUsageIDRecords: true, KeyCacheTTL: time.Second, NewID: ids, Now: f.clock.Now})
	f.must(err)
	return f, other
}

func TestSharedStoreInstancesBillEachScheduleOnce(t *testing.T) {
	t.Parallel()
	f, other := sharedPair(t)
	var ids []string
	for i := range 120 { // more than one engine batch
		c := f.newCustomer(billing.TaxStatusTaxed)
		if i%50 == 0 {
			f.events(c, "api_call", ts("2024-01-10T00:00:00Z"), i+1)
		}
		sc, _, _ := f.usageSchedule(c, nil)
		ids = append(ids, sc.ID)
	}
	asOf := ts("2024-02-01T05:00:00Z")
	runs := concurrentRuns(t, asOf, f.svc, other, f.svc, other)
	if t.Failed() {
		return
	}
	created, visited := 0, 0
	for _, r := range runs {
		created += r.InvoicesCreated
		visited += r.SchedulesVisited
		if len(r.Failures) != 0 {
			t.Errorf("failures: %+v", r.Failures)
		}
	}
	// Two billing dates each (January in advance and in arrears, February
	// in advance): 2 invoices per schedule, created once across the runs.
	if created != 2*len(ids) {
		t.Errorf("the runs created %d invoices together, want %d", created, 2*len(ids))
	}
	// The leases shared the work out: far fewer visits than four full runs.
	if visited >= 4*len(ids) || visited < len(ids) {
		t.Errorf("the runs visited %d schedules together, want at least %d and fewer than %d", visited, len(ids), 4*len(ids))
	}
	for _, id := range ids {
		if n := f.wantOnce(id); n < 2 { // 3 with usage in January
			t.Errorf("schedule %s: %d charges, want 2 or 3", id, n)
		}
	}
	// A later run of either instance finds everything billed.
	again, err := other.RunBilling(f.ctx, asOf)
	f.must(err)
	if again.InvoicesCreated != 0 {
		t.Errorf("a later run created %d invoices", again.InvoicesCreated)
	}
}

// concurrentRuns runs RunBilling as of asOf on every Service at once.
func concurrentRuns(t *testing.T, asOf time.Time, svcs ...*billing.Service) []*billing.BillingRun {
	runs := make([]*billing.BillingRun, len(svcs))
	billingtest.AtOnce(t, len(svcs), func(i int) (err error) {
		runs[i], err = svcs[i].RunBilling(context.Background(), asOf)
		return err
	})
	return runs
}

func TestSharedStoreScheduledBillingRunsOnceAnInterval(t *testing.T) {
	t.Parallel()
	f, other := sharedPair(t)
	for range 3 {
		c := f.newCustomer(billing.TaxStatusTaxed)
		f.usageSchedule(c, nil)
	}
	at := ts("2024-02-01T05:00:00Z")
	first, err := f.svc.RunScheduledBilling(f.ctx, at, time.Minute)
	f.must(err)
	if first.InvoicesCreated != 6 || first.SchedulesVisited != 3 {
		t.Fatalf("first tick: %+v", first)
	}
	// The other instance's tick within the interval joins the round: as of
	// the round's time, with nothing left to do.
	f.clock.Advance(time.Minute / 2)
	joined, err := other.RunScheduledBilling(f.ctx, f.clock.Now(), time.Minute)
	f.must(err)
	if !joined.AsOf.Equal(first.AsOf) || joined.SchedulesVisited != 0 {
		t.Errorf("a tick within the interval: asOf %v (round %v), %d schedules visited, want the round and 0", joined.AsOf, first.AsOf, joined.SchedulesVisited)
	}
	// A tick an interval later starts a new round.
	f.clock.Advance(time.Minute)
	next, err := other.RunScheduledBilling(f.ctx, f.clock.Now(), time.Minute)
	f.must(err)
	if next.SchedulesVisited != 3 {
		t.Errorf("a tick an interval later visited %d schedules, want 3", next.SchedulesVisited)
	}
}
