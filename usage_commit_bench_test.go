package billing_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
	"github.com/billingd/billing/storage/boltstore"
)

// BenchmarkCreateUsageEventCommit is P1's single-event ingestion in
// process, measured per group commit: 64 goroutines send P1's events (1,000
// events of 100 customers over the month before, sent again and again) to a bbolt
// store with fsync whose group commit takes exactly 64 events (MaxBatchSize
// 64, a long MaxBatchDelay), so that what a commit writes does not depend
// on the machine's load. One op is one commit; on Linux it reports the
// bytes the commit wrote to the file in 4 KiB pages (pages/commit) and its
// write calls (writes/commit), from /proc/self/io (BENCHMARKS.md, "P1: where
// the time went").
//
//	go test -run '^$' -bench CreateUsageEventCommit -benchtime 200x .
func BenchmarkCreateUsageEventCommit(b *testing.B) { benchUsageCommit(b, nil) }

// benchUsageCommit is BenchmarkCreateUsageEventCommit, with prepare (when
// not nil) run on the Service and account before the first event.
func benchUsageCommit(b *testing.B, prepare func(svc *billing.Service, acct string)) {
	const perCommit = 64
	store, err := boltstore.Open(filepath.Join(b.TempDir(), "bench.db"),
		&boltstore.Options{MaxBatchSize: perCommit, MaxBatchDelay: 10 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { store.Close() })
	svc, _ := billingtest.NewService(b, billingtest.WithStore(store))
	acct := billingtest.Account(b, svc, "bench")
	if prepare != nil {
		prepare(svc, acct)
	}
	events := make([]billing.UsageEventParams, 1000)
	for i := range events {
		at := billingtest.Start.Add(time.Duration(i-len(events)) * (31 * 24 * time.Hour / time.Duration(len(events))))
		events[i] = referenceEvent(fmt.Sprintf("customer-alias-%05d", i%100), "api_calls0", i, at)
	}
	send := func(n int) {
		var next atomic.Int64
		var wg sync.WaitGroup
		for range perCommit {
			wg.Go(func() {
				for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
					if _, err := svc.CreateUsageEvent(context.Background(), acct, events[i%len(events)]); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
	}
	send(32 * perCommit) // the series and the first pages
	written, writes, ok := processWrites()
	b.ResetTimer()
	send(b.N * perCommit)
	b.StopTimer()
	if w, c, ok2 := processWrites(); ok && ok2 {
		b.ReportMetric(float64(w-written)/4096/float64(b.N), "pages/commit")
		b.ReportMetric(float64(c-writes)/float64(b.N), "writes/commit")
	}
}

// processWrites returns the bytes this process wrote and its write calls
// so far (wchar and syscw of /proc/self/io); ok is false where there is no
// such file.
func processWrites() (bytes, calls int64, ok bool) {
	f, err := os.Open("/proc/self/io")
	if err != nil {
		return 0, 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, v, _ := strings.Cut(sc.Text(), ": ")
		n, err := strconv.ParseInt(v, 10, 64)
		switch {
		case err != nil:
		case name == "wchar":
			bytes = n
		case name == "syscw":
			calls = n
		}
	}
	return bytes, calls, sc.Err() == nil
}
