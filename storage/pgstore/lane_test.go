package pgstore_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/billingd/billing"
	"github.com/billingd/billing/storage/pgstore"
	"github.com/billingd/billing/storage/pgstore/pgtest"
)

// TestSlowNumberingTransactionsNeedOneRetry runs transactions that read,
// dawdle, then take the next number of one counter, eight at a time, with
// one retry allowed. Each one's snapshot is older than another's increment,
// so a first run may fail to serialize; its second run goes through the
// counter's lane and must not fail again. Every transaction gets a number,
// and the numbers are 1..n without gaps.
func TestSlowNumberingTransactionsNeedOneRetry(t *testing.T) {
	t.Parallel()
	pgtest.Require(t)
	st := pgtest.Open(t, &pgstore.Options{MaxRetries: 1, MaxConns: 10})
	ctx := context.Background()
	const table = billing.Table("lane_test")
	if err := st.Update(ctx, func(tx billing.Tx) error {
		return tx.Put(ctx, table, []byte("other"), []byte("x"))
	}); err != nil {
		t.Fatal(err)
	}
	const workers, each = 8, 4
	var (
		mu   sync.Mutex
		got  []uint64
		wg   sync.WaitGroup
		errs = make(chan error, workers*each)
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				var n uint64
				err := st.Update(ctx, func(tx billing.Tx) error {
					// The snapshot is taken here, well before the increment.
					if _, err := tx.Get(ctx, table, []byte("other")); err != nil {
						return err
					}
					time.Sleep(15 * time.Millisecond)
					var err error
					n, err = tx.Increment(ctx, table, []byte("invoice numbers"))
					return err
				})
				if err != nil {
					errs <- err
					continue
				}
				mu.Lock()
				got = append(got, n)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("a numbering transaction failed after one retry: %v", err)
	}
	slices.Sort(got)
	for i, n := range got {
		if n != uint64(i+1) {
			t.Fatalf("numbers %v: want 1..%d without gaps", got, len(got))
		}
	}
}

// TestLanesOfTwoCountersNeverFailARequest runs transactions that take the
// next numbers of two counters, half of them in one order and half in the
// other, so that runs deadlock on the counters' locks, and runs whose
// previous run failed take both lanes before they begin while others hold
// one of them. A deadlock met while taking a lane is one more reason to run
// again, never an error: every transaction gets its numbers, without gaps.
func TestLanesOfTwoCountersNeverFailARequest(t *testing.T) {
	t.Parallel()
	pgtest.Require(t)
	st := pgtest.Open(t, &pgstore.Options{MaxConns: 16})
	ctx := context.Background()
	const table = billing.Table("lane_test")
	counters := [2][]byte{[]byte("invoice numbers"), []byte("credit note numbers")}
	const workers, each = 6, 3
	var (
		mu   sync.Mutex
		got  [2][]uint64
		wg   sync.WaitGroup
		errs = make(chan error, workers*each)
	)
	for w := range workers {
		wg.Go(func() {
			for range each {
				var n [2]uint64
				err := st.Update(ctx, func(tx billing.Tx) error {
					for i := range 2 {
						c := (i + w) % 2
						var err error
						if n[c], err = tx.Increment(ctx, table, counters[c]); err != nil {
							return err
						}
						time.Sleep(5 * time.Millisecond)
					}
					return nil
				})
				if err != nil {
					errs <- err
					continue
				}
				mu.Lock()
				got[0], got[1] = append(got[0], n[0]), append(got[1], n[1])
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("a transaction taking two numbers failed: %v", err)
	}
	for c := range 2 {
		slices.Sort(got[c])
		for i, n := range got[c] {
			if n != uint64(i+1) {
				t.Fatalf("%s: %v, want 1..%d without gaps", counters[c], got[c], len(got[c]))
			}
		}
	}
}
