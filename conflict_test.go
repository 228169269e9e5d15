package billing_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
	"github.com/billingd/billing/storage/pgstore"
	"github.com/billingd/billing/storage/pgstore/pgtest"
)

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
	var store billing.Store
	if billingtest.Postgres() {
		// Enough connections for the transactions to really overlap.
		store = pgtest.Open(t, &pgstore.Options{MaxConns: 16})
	} else {
		store = billingtest.DurableStore(t)
	}
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
