package billingtest

import (
	"sync"
	"testing"
)

// AtOnce runs call(0), ..., call(n-1) at the same time, each in its own
// goroutine, waits for them all and reports each error, with the number of
// its call: the shape of the tests of concurrent callers (billing runs,
// collection runs, dispatchers, ingestion of the same events).
func AtOnce(tb testing.TB, n int, call func(i int) error) {
	tb.Helper()
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if err := call(i); err != nil {
				tb.Errorf("call %d of %d at once: %v", i, n, err)
			}
		})
	}
	wg.Wait()
}
