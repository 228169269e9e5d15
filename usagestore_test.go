package billing_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
	"github.com/billingd/billing/storage/faultstore"
)

// TestUsageEventSupersedeFreshAccount covers the shortcuts of batch
// storing: an account that has never sent a customerEventId skips its
// lookup until one is stored, within the same batch too, and a series is
// resolved once per batch even when a batch mixes series.
func TestUsageEventSupersedeFreshAccount(t *testing.T) {
	t.Parallel()
	stores(t, func(t *testing.T, svc *billing.Service, _ *billingtest.Clock) {
		acct := billingtest.Account(t, svc, "a")
		m := sumOfN(t, svc, acct)
		// No explicit customerEventId yet: a plain event is replaced by a
		// later one naming its id.
		plain := ingest(t, svc, acct, event(t, "c1", "api", `{"n":100}`), event(t, "c2", "api", `{"n":7}`))
		ingest(t, svc, acct, withID(t, plain[0].ID, "c1", `{"n":3}`))
		checkCalc(t, svc, acct, m, []string{"c1"}, "2024-07-01", "2024-07-31", 1, 0, "3")

		// The first explicit customerEventIds of a fresh account, twice in
		// one batch, among events of three series: the last wins.
		fresh := billingtest.Account(t, svc, "b")
		mb := sumOfN(t, svc, fresh)
		got := ingest(t, svc, fresh, event(t, "c1", "api", `{"n":1}`), withID(t, "z", "c1", `{"n":10}`), event(t, "c2", "api", `{"n":2}`),
			withID(t, "z", "c2", `{"n":20}`), event(t, "c1", "other", `{"n":4}`), event(t, "c1", "api", `{"n":5}`))
		if len(got) != 6 || got[1].CustomerEventID != "z" || got[0].CustomerEventID != got[0].ID {
			t.Fatalf("answer %+v", got)
		}
		checkCalc(t, svc, fresh, mb, []string{"c1"}, "2024-07-01", "2024-07-31", 2, 0, "6")
		checkCalc(t, svc, fresh, mb, []string{"c2"}, "2024-07-01", "2024-07-31", 2, 0, "22")
		if n := len(listAll(t, svc, fresh, billing.UsageEventFilter{})); n != 5 {
			t.Errorf("listed %d events, want 5", n)
		}
		// And now that the account has one, a later request replaces it.
		ingest(t, svc, fresh, withID(t, "z", "c2", `{"n":30}`))
		checkCalc(t, svc, fresh, mb, []string{"c2"}, "2024-07-01", "2024-07-31", 2, 0, "32")
	})
}

// TestUsageEventBatchErrorPaths checks that an invalid event of a batch,
// validated first without field paths, is reported with its full paths in
// fields and messages, and that valid events around it add nothing.
func TestUsageEventBatchErrorPaths(t *testing.T) {
	t.Parallel()
	svc, _ := billingtest.NewService(t)
	acct := billingtest.Account(t, svc, "a")
	bad := []billing.UsageEventParams{
		event(t, "c", "t", `{"n":1}`),
		{CustomerAlias: "c", EventType: "t", EventProperties: billing.EventProperties{"x": {}, "": billing.StringProperty("v")}},
		{EventType: "t\x01"},
		event(t, "c", "t", `{"s":"ok"}`),
	}
	_, err := svc.CreateUsageEventBatch(context.Background(), acct, billing.UsageEventBatchParams{Events: bad})
	var got []string
	for _, e := range billing.Errors(err) {
		got = append(got, e.Field+": "+e.Message)
	}
	want := []string{
		"events[1].eventProperties: property names must be 1 to 128 characters",
		"events[1].eventProperties.x: events[1].eventProperties.x must be a string, number or boolean",
		"events[2].customerAlias: events[2].customerAlias is required",
		"events[2].eventType: events[2].eventType must contain printable characters only",
	}
	if !slices.Equal(got, want) {
		t.Errorf("errors:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestUsageNumbersAfterFailedCommit checks that the series and account
// numbers a failed commit assigned are not remembered: the numbers are
// handed out again by later transactions, and every series keeps its own
// events, by single events and by batches.
func TestUsageNumbersAfterFailedCommit(t *testing.T) {
	t.Parallel()
	fs := faultstore.New(billingtest.DurableStore(t))
	svc, _ := billingtest.NewService(t, billingtest.WithStore(fs))
	ctx := context.Background()
	acct := billingtest.Account(t, svc, "a")
	m := sumOfN(t, svc, acct)
	for _, single := range []bool{true, false} {
		a, b := "a-single", "b-single"
		if !single {
			a, b = "a-batch", "b-batch"
		}
		put := func(alias, js string) error {
			if single {
				_, err := svc.CreateUsageEvent(ctx, acct, event(t, alias, "api", js))
				return err
			}
			_, err := svc.CreateUsageEventBatch(ctx, acct, billing.UsageEventBatchParams{Events: []billing.UsageEventParams{
				event(t, alias, "api", js), event(t, alias, "api", `{"n":0}`)}})
			return err
		}
		// The first event of the account (single) or of series a (batch)
		// assigns numbers in a transaction whose commit fails.
		fs.Inject(faultstore.Fault{Op: faultstore.OpCommit})
		if err := put(a, `{"n":1}`); err == nil {
			t.Fatal("ingestion succeeded through a failed commit")
		}
		fs.Clear()
		// Series b now gets the number a had been given, then a a new one.
		if err := put(b, `{"n":10}`); err != nil {
			t.Fatal(err)
		}
		if err := put(a, `{"n":100}`); err != nil {
			t.Fatal(err)
		}
		if err := put(b, `{"n":1000}`); err != nil {
			t.Fatal(err)
		}
		checkCalc(t, svc, acct, m, []string{a}, "2024-07-01", "2024-07-31", map[bool]int64{true: 1, false: 2}[single], 0, "100")
		checkCalc(t, svc, acct, m, []string{b}, "2024-07-01", "2024-07-31", map[bool]int64{true: 2, false: 4}[single], 0, "1010")
	}
}

// TestUsageExplicitIDsKnown checks supersede across single events: an
// account that had no explicit customerEventId still finds the first one it
// stores when a later event's new id equals it (ids are predictable here),
// and a batch and a single event after it.
func TestUsageExplicitIDsKnown(t *testing.T) {
	t.Parallel()
	onStores(t, func(t *testing.T, opts ...billingtest.Option) {
		var mu sync.Mutex
		n := 0
		id := func(i int) string { return fmt.Sprintf("%08x-0000-7000-8000-000000000000", i) }
		newID := func() string {
			mu.Lock()
			defer mu.Unlock()
			n++
			return id(n)
		}
		svc, _ := billingtest.NewService(t, append(opts, billingtest.WithConfig(billing.Config{NewID: newID}))...)
		ctx := context.Background()
		acct := billingtest.Account(t, svc, "a")
		m := sumOfN(t, svc, acct)
		single := func(p billing.UsageEventParams) *billing.UsageEvent {
			t.Helper()
			e, err := svc.CreateUsageEvent(ctx, acct, p)
			if err != nil {
				t.Fatal(err)
			}
			return e
		}
		single(event(t, "c", "api", `{"n":1}`)) // the account has no explicit id
		single(event(t, "c", "api", `{"n":2}`)) // and is known to have none
		mu.Lock()
		next := id(n + 2) // the id of the event after the next
		mu.Unlock()
		p := event(t, "c", "api", `{"n":10}`)
		p.CustomerEventID = next
		single(p)
		if e := single(event(t, "c", "api", `{"n":100}`)); e.ID != next {
			t.Fatalf("id %s, want %s", e.ID, next)
		}
		// The explicit event was replaced by the one whose id is its
		// customerEventId.
		checkCalc(t, svc, acct, m, []string{"c"}, "2024-07-01", "2024-07-31", 3, 0, "103")
		// A batch after it too.
		p.CustomerEventID = "x"
		ingest(t, svc, acct, p, event(t, "c", "api", `{"n":1000}`))
		p.EventProperties = props(t, `{"n":20}`)
		single(p)
		checkCalc(t, svc, acct, m, []string{"c"}, "2024-07-01", "2024-07-31", 5, 0, "1123")
	})
}

// TestUsageEventLargeBatches checks supersede and all-or-nothing for
// batches large enough to commit in a transaction of their own rather than
// through group commit: the last of two equal customerEventIds in a batch
// wins, a later batch replaces an explicit customerEventId and a plain
// event named by its id, and a batch whose commit fails (one of a new
// series among them) stores nothing and leaves the series numbers free.
func TestUsageEventLargeBatches(t *testing.T) {
	t.Parallel()
	fs := faultstore.New(billingtest.DurableStore(t))
	svc, _ := billingtest.NewService(t, billingtest.WithStore(fs))
	acct := billingtest.Account(t, svc, "a")
	m := createMetric(t, svc, acct, billing.UsageMetricParams{Name: "n", MetricType: billing.MetricTypeSimple,
		EventType: "api", AggregationType: billing.AggregationSum, AggregationProperty: "n"})
	batch := func(alias string, n int, ids map[int]string) []billing.UsageEventParams {
		events := make([]billing.UsageEventParams, n)
		for i := range events {
			events[i] = event(t, alias, "api", `{"n":1}`)
			events[i].CustomerEventID = ids[i]
		}
		return events
	}
	// 150 events of which two share "dup": 149 stored.
	first := ingest(t, svc, acct, batch("c1", 150, map[int]string{10: "dup", 20: "dup"})...)
	checkCalc(t, svc, acct, m, []string{"c1"}, "2024-07-01", "2024-07-31", 149, 0, "149")
	// 120 more, one replacing "dup" and one replacing first[0] by its id.
	ingest(t, svc, acct, batch("c1", 120, map[int]string{5: "dup", 6: first[0].ID})...)
	checkCalc(t, svc, acct, m, []string{"c1"}, "2024-07-01", "2024-07-31", 149+120-2, 0, "267")

	fs.Inject(faultstore.Fault{Op: faultstore.OpCommit})
	_, err := svc.CreateUsageEventBatch(context.Background(), acct, billing.UsageEventBatchParams{
		Events: append(batch("c2", 100, map[int]string{0: "dup"}), batch("c1", 100, nil)...)})
	if err == nil {
		t.Fatal("a batch was acknowledged through a failed commit")
	}
	fs.Clear()
	checkCalc(t, svc, acct, m, []string{"c1"}, "2024-07-01", "2024-07-31", 267, 0, "267")
	checkCalc(t, svc, acct, m, []string{"c2"}, "2024-07-01", "2024-07-31", 0, 0, "0")
	// The failed batch's series number is handed out again, to c3.
	ingest(t, svc, acct, batch("c3", 100, nil)...)
	ingest(t, svc, acct, batch("c2", 100, map[int]string{0: "dup"})...)
	checkCalc(t, svc, acct, m, []string{"c3"}, "2024-07-01", "2024-07-31", 100, 0, "100")
	checkCalc(t, svc, acct, m, []string{"c2"}, "2024-07-01", "2024-07-31", 100, 0, "100")
	checkCalc(t, svc, acct, m, []string{"c1"}, "2024-07-01", "2024-07-31", 266, 0, "266")

	// Concurrent large batches (sharing commits, or one on its own), each
	// with the same customerEventId: one of them keeps it.
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			_, err := svc.CreateUsageEventBatch(context.Background(), acct, billing.UsageEventBatchParams{Events: batch("c4", 100, map[int]string{50: "conc"})})
			if err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	checkCalc(t, svc, acct, m, []string{"c4"}, "2024-07-01", "2024-07-31", 4*100-3, 0, "397")
}

// TestSharedStoreSeriesCreatedBeforeTheBatch checks a batch on a shared
// store (Config.SharedStore): its new series are committed by a transaction
// of their own before the batch's, so that concurrent batches do not re-run
// over one counter. Whichever of the two commits fails, the batch stores
// nothing, and a series left without events holds nothing: the events sent
// again later are counted alone.
func TestSharedStoreSeriesCreatedBeforeTheBatch(t *testing.T) {
	t.Parallel()
	fs := faultstore.New(billingtest.DurableStore(t))
	svc, _ := billingtest.NewService(t, billingtest.WithStore(fs), billingtest.WithConfig(billing.Config{SharedStore: true}))
	ctx := context.Background()
	acct := billingtest.Account(t, svc, "a")
	m := sumOfN(t, svc, acct)
	batch := func(alias string, first, second string) error {
		_, err := svc.CreateUsageEventBatch(ctx, acct, billing.UsageEventBatchParams{Events: []billing.UsageEventParams{
			event(t, alias, "api", first), event(t, alias, "api", second)}})
		return err
	}
	// After 0: the series' own commit fails; after 1: the series are
	// committed and the batch's commit fails.
	for after, alias := range []string{"series-commit-fails", "batch-commit-fails"} {
		fs.Inject(faultstore.Fault{Op: faultstore.OpCommit, After: after})
		if err := batch(alias, `{"n":1}`, `{"n":2}`); err == nil {
			t.Fatalf("%s: ingestion succeeded through a failed commit", alias)
		}
		fs.Clear()
		if err := batch(alias, `{"n":10}`, `{"n":20}`); err != nil {
			t.Fatal(err)
		}
		checkCalc(t, svc, acct, m, []string{alias}, "2024-07-01", "2024-07-31", 2, 0, "30")
	}
}
