package billing_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
	"github.com/billingd/billing/storage/pgstore"
	"github.com/billingd/billing/storage/pgstore/pgtest"
)

// concurrentStore is a durable store for tests of concurrent writers: on
// PostgreSQL with conns connections, enough for the transactions to really
// overlap.
func concurrentStore(tb testing.TB, conns int32) billing.Store {
	tb.Helper()
	if billingtest.Postgres() {
		return pgtest.Open(tb, &pgstore.Options{MaxConns: conns})
	}
	return billingtest.DurableStore(tb)
}

// TestConcurrentWritesThroughTheService races finalizations (each takes the
// next invoice number from a counter) with customers created under the
// same aliases, on a durable store. On PostgreSQL these transactions fail
// to serialize and are run again by the store; none of that may reach a
// caller: the numbers are gapless, each alias has exactly one winner and
// every loser gets conflict, and no other error surfaces.
//
// Long on purpose: the set-up, the concurrent run and the checks of its outcome belong together.
func TestConcurrentWritesThroughTheService(t *testing.T) {
	t.Parallel()
	store := concurrentStore(t, 16)
	e := newDocEnv(t, billingtest.WithStore(store))
	const invoices, aliases, contenders = 24, 6, 4
	ids := make([]string, invoices)
	for i := range ids {
		inv := e.invoice(billing.CurrencyGBP, "")
		e.line(inv.ID, invLine("Fee", "1", "10.00", "0"))
		ids[i] = inv.ID
	}

	var mu sync.Mutex
	numbers := map[string]int{}
	winners := map[string]int{}
	var wg sync.WaitGroup
	for i := range invoices {
		wg.Go(func() {
			inv, err := e.svc.FinalizeInvoice(e.ctx, e.acct, ids[i])
			if err != nil {
				t.Errorf("FinalizeInvoice: %v", err)
				return
			}
			mu.Lock()
			numbers[inv.InvoiceNumber]++
			mu.Unlock()
		})
	}
	for a := range aliases {
		for c := range contenders {
			wg.Go(func() {
				alias := fmt.Sprintf("contested-%d", a)
				_, err := e.svc.CreateCustomer(e.ctx, e.acct, billing.CustomerParams{
					LegalName: fmt.Sprintf("Contender %d of %s", c, alias), CustomerAliases: []string{alias},
				})
				switch billing.CodeOf(err) {
				case "":
					mu.Lock()
					winners[alias]++
					mu.Unlock()
				case billing.CodeConflict:
				default:
					t.Errorf("CreateCustomer %s: %v (want success or conflict)", alias, err)
				}
			})
		}
	}
	wg.Wait()

	for i := 1; i <= invoices; i++ {
		if n := numbers[fmt.Sprintf("INV%05d", i)]; n != 1 {
			t.Errorf("INV%05d given %d times, want once", i, n)
		}
	}
	if len(numbers) != invoices {
		t.Errorf("%d distinct numbers, want %d: %v", len(numbers), invoices, numbers)
	}
	for a := range aliases {
		if n := winners[fmt.Sprintf("contested-%d", a)]; n != 1 {
			t.Errorf("alias contested-%d: %d winners, want 1", a, n)
		}
	}
	if pg, ok := store.(*pgstore.Store); ok {
		t.Logf("PostgreSQL: %d transaction functions run again after a serialization failure", pg.Retries())
		if pg.Retries() == 0 {
			t.Errorf("no transaction was retried: the test did not make any conflict")
		}
	}
}

// TestConcurrentBatchesSupersedeByCustomerEventID sends batches that carry
// the same customerEventIds at the same time, each large enough that
// PostgreSQL receives its rows with COPY: every customerEventId must end
// with exactly one event, and no caller may see the conflicts the store
// resolved by running a transaction again.
func TestConcurrentBatchesSupersedeByCustomerEventID(t *testing.T) {
	t.Parallel()
	svc, _ := billingtest.NewService(t, billingtest.WithStore(concurrentStore(t, 8)))
	acct := billingtest.Account(t, svc, "acme")
	ctx := context.Background()
	const senders, events = 4, 100
	var wg sync.WaitGroup
	for s := range senders {
		wg.Go(func() {
			batch := make([]billing.UsageEventParams, events)
			for i := range batch {
				batch[i] = billing.UsageEventParams{CustomerAlias: "acme", EventType: "call", CustomerEventID: fmt.Sprintf("e-%03d", i),
					EventProperties: billing.EventProperties{"sender": billing.StringProperty(fmt.Sprint(s))}}
			}
			if _, err := svc.CreateUsageEventBatch(ctx, acct, billing.UsageEventBatchParams{Events: batch}); err != nil {
				t.Errorf("CreateUsageEventBatch of sender %d: %v", s, err)
			}
		})
	}
	wg.Wait()
	stored := map[string]int{}
	for _, e := range pages(t, func(p billing.ListParams) (billing.Page[billing.UsageEvent], error) {
		return svc.ListUsageEvents(ctx, acct, billing.UsageEventFilter{}, p)
	}) {
		stored[e.CustomerEventID]++
	}
	if len(stored) != events {
		t.Errorf("%d distinct customerEventIds stored, want %d", len(stored), events)
	}
	for id, n := range stored {
		if n != 1 {
			t.Errorf("customerEventId %s: %d events, want 1", id, n)
		}
	}
}
