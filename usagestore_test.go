package billing_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
	"github.com/billingd/billing/storage/faultstore"
	"github.com/billingd/billing/storage/memstore"
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
	billingtest.AtOnce(t, 4, func(int) error {
		_, err := svc.CreateUsageEventBatch(context.Background(), acct, billing.UsageEventBatchParams{Events: batch("c4", 100, map[int]string{50: "conc"})})
		return err
	})
	checkCalc(t, svc, acct, m, []string{"c4"}, "2024-07-01", "2024-07-31", 4*100-3, 0, "397")
}

// TestSharedStoreSeriesCreatedBeforeTheBatch checks a batch on a shared
// store (Config.SeriesInOwnTransaction): its new series are committed by a transaction
// of their own before the batch's, so that concurrent batches do not re-run
// over one counter. Whichever of the two commits fails, the batch stores
// nothing, and a series left without events holds nothing: the events sent
// again later are counted alone.
func TestSharedStoreSeriesCreatedBeforeTheBatch(t *testing.T) {
	t.Parallel()
	fs := faultstore.New(billingtest.DurableStore(t))
	svc, _ := billingtest.NewService(t, billingtest.WithStore(fs), billingtest.WithConfig(billing.Config{SeriesInOwnTransaction: true}))
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

// blockService returns a Service whose ids come from
// billingtest.MillisecondIDs(perMs), its account "a", and the ids' ahead.
func blockService(tb testing.TB, perMs int, opts ...billingtest.Option) (*billing.Service, string, func(k int) string) {
	tb.Helper()
	newID, ahead := billingtest.MillisecondIDs(perMs)
	svc, _ := billingtest.NewService(tb, append(opts, billingtest.WithConfig(billing.Config{NewID: newID}))...)
	return svc, billingtest.Account(tb, svc, "a"), ahead
}

// listBothWays lists the events of acct passing f, limit per page, forward
// with after cursors and back again with before cursors; it checks that
// both ways give the same events and every page the same total, and
// returns the ids in list order.
func listBothWays(tb testing.TB, svc *billing.Service, acct string, f billing.UsageEventFilter, limit int) []string {
	tb.Helper()
	ctx := context.Background()
	ids := func(items []billing.UsageEvent) []string {
		out := make([]string, len(items))
		for i, e := range items {
			out[i] = e.ID
		}
		return out
	}
	var fwd []string
	var totals []int
	var last billing.Page[billing.UsageEvent]
	for p := (billing.ListParams{Limit: limit}); ; p.After = last.After {
		page, err := svc.ListUsageEvents(ctx, acct, f, p)
		if err != nil {
			tb.Fatalf("ListUsageEvents: %v", err)
		}
		fwd, totals, last = append(fwd, ids(page.Items)...), append(totals, page.TotalResultSize), page
		if page.After == "" {
			break
		}
	}
	back := ids(last.Items)
	for before := last.Before; before != ""; {
		page, err := svc.ListUsageEvents(ctx, acct, f, billing.ListParams{Limit: limit, Before: before})
		if err != nil {
			tb.Fatalf("ListUsageEvents before: %v", err)
		}
		back, totals, before = append(ids(page.Items), back...), append(totals, page.TotalResultSize), page.Before
	}
	if !slices.Equal(fwd, back) {
		tb.Errorf("forward %v\nback    %v", fwd, back)
	}
	for _, n := range totals {
		if n != len(fwd) {
			tb.Errorf("totalResultSize %d, listed %d", n, len(fwd))
		}
	}
	return fwd
}

// usageModel is what a per-event creation-order index lists: the live
// events in creation order.
type usageModel struct {
	ids     []string
	aliases map[string]string
	cevids  map[string]string // customerEventId by id
}

// newUsageModel returns an empty model.
func newUsageModel() *usageModel {
	return &usageModel{aliases: map[string]string{}, cevids: map[string]string{}}
}

// add records the events of an answer, each replacing the live event with
// its customerEventId.
func (m *usageModel) add(events []billing.UsageEvent) {
	for _, e := range events {
		m.ids = slices.DeleteFunc(m.ids, func(id string) bool { return m.cevids[id] == e.CustomerEventID })
		m.ids = append(m.ids, e.ID)
		m.aliases[e.ID] = e.CustomerAlias
		m.cevids[e.ID] = e.CustomerEventID
	}
}

// newestFirst returns the model's ids of alias ("": all), newest first.
func (m *usageModel) newestFirst(alias string) []string {
	var out []string
	for _, id := range slices.Backward(m.ids) {
		if alias == "" || m.aliases[id] == alias {
			out = append(out, id)
		}
	}
	return out
}

// TestUsageIDBlocksListLikeAPerEventIndex checks GET /usage-events over
// the creation-order index kept as one record per batch and millisecond:
// after batches of many sizes and single events whose ids share
// milliseconds, some superseding events by their plain ids (earlier
// batches' and their own), every list, forward and back, with and without
// a filter, is the list a per-event index gives.
func TestUsageIDBlocksListLikeAPerEventIndex(t *testing.T) {
	t.Parallel()
	onStores(t, func(t *testing.T, opts ...billingtest.Option) {
		svc, acct, ahead := blockService(t, 40, opts...)
		ctx := context.Background()
		m := newUsageModel()
		pick := func(r, j int) string { // a plain live event
			var plain []string
			for _, id := range m.ids {
				if m.cevids[id] == id {
					plain = append(plain, id)
				}
			}
			return plain[(r*13+j*7)%len(plain)]
		}
		for r := range 30 {
			alias := []string{"c1", "c2", "c3"}[r%3]
			if r%4 == 3 {
				e, err := svc.CreateUsageEvent(ctx, acct, withID(t, pick(r, 0), alias, `{"n":1}`))
				if err != nil {
					t.Fatal(err)
				}
				m.add([]billing.UsageEvent{*e})
				continue
			}
			events := make([]billing.UsageEventParams, (r*7)%37+1)
			for j := range events {
				events[j] = event(t, []string{"c1", "c2"}[j%2], "api", `{"n":1}`)
				switch {
				case r > 0 && r%5 == 0 && j%4 == 1:
					events[j].CustomerEventID = pick(r, j)
				case r%5 == 2 && j > 2 && j%3 == 0:
					events[j].CustomerEventID = ahead(j - 1) // an earlier event of this batch
				}
			}
			m.add(ingest(t, svc, acct, events...))
		}
		if got, want := listBothWays(t, svc, acct, billing.UsageEventFilter{}, 7), m.newestFirst(""); !slices.Equal(got, want) {
			t.Errorf("list\n%v\nwant\n%v", got, want)
		}
		if got, want := listBothWays(t, svc, acct, billing.UsageEventFilter{CustomerAlias: "c1"}, 5), m.newestFirst("c1"); !slices.Equal(got, want) {
			t.Errorf("list of c1\n%v\nwant\n%v", got, want)
		}
		listBothWays(t, svc, acct, billing.UsageEventFilter{CustomerAlias: "c1"}, 100)
	})
}

// TestUsageIDBlocksSupersedeByPlainID checks supersede by an event's own
// id inside the index records of batches: the first, a middle and the
// last entry of an earlier batch's record, and an event of the same batch,
// in one batch; an event that batch stored, replaced again within it by an
// explicit customerEventId; then the rest, until the first record is gone.
func TestUsageIDBlocksSupersedeByPlainID(t *testing.T) {
	t.Parallel()
	onStores(t, func(t *testing.T, opts ...billingtest.Option) {
		store := billingtest.Store(t)
		if len(opts) > 0 {
			store = billingtest.DurableStore(t)
		}
		svc, acct, ahead := blockService(t, 1000, billingtest.WithStore(store))
		metric := sumOfN(t, svc, acct)
		m := newUsageModel()
		batch := func(cevids ...string) []billing.UsageEvent {
			events := make([]billing.UsageEventParams, len(cevids))
			for j, id := range cevids {
				events[j] = withID(t, id, "c", `{"n":1}`)
			}
			got := ingest(t, svc, acct, events...)
			m.add(got)
			return got
		}
		check := func(what string) {
			t.Helper()
			if got, want := listBothWays(t, svc, acct, billing.UsageEventFilter{}, 3), m.newestFirst(""); !slices.Equal(got, want) {
				t.Errorf("%s: list\n%v\nwant\n%v", what, got, want)
			}
			n := len(m.ids)
			checkCalc(t, svc, acct, metric, []string{"c"}, "2024-07-01", "2024-07-31", int64(n), 0, fmt.Sprint(n))
		}
		b := batch(make([]string, 10)...)
		check("one batch")
		// x0, x1 plain; the first, a middle and the last of b; x0 (this
		// batch's); b[5] again: replaces x3, which holds it now.
		batch("", "", b[0].ID, b[5].ID, b[9].ID, ahead(1), b[5].ID)
		check("superseding b[0], b[5], b[9] and x0")
		// The new first of b's record, one of its middle, and alone.
		batch(b[1].ID, b[7].ID)
		e, err := svc.CreateUsageEvent(context.Background(), acct, withID(t, b[3].ID, "c", `{"n":1}`))
		if err != nil {
			t.Fatal(err)
		}
		m.add([]billing.UsageEvent{*e})
		check("superseding b[1], b[7] and b[3]")
		batch(b[2].ID, b[4].ID, b[6].ID, b[8].ID)
		check("superseding the rest of b")
		if recs := idIndexRecords(t, store); len(recs) != 4 {
			t.Errorf("%d index records, want 4 (one per later batch and the single; b's gone)", len(recs))
		}
	})
}

// idIndexRecords returns the records of the id index in store, by key.
func idIndexRecords(tb testing.TB, store billing.Store) map[string]string {
	tb.Helper()
	recs := map[string]string{}
	err := store.View(context.Background(), func(tx billing.Tx) error {
		return tx.Scan(context.Background(), "usage_event_ids", billing.Range{}, func(k, v []byte) error {
			recs[string(k)] = string(v)
			return nil
		})
	})
	if err != nil {
		tb.Fatal(err)
	}
	return recs
}

// toOldLayout rewrites every record of store's id index that holds several
// events as the records of the layout before records held several: one per
// event, account no | id → series no | timestamp.
func toOldLayout(tb testing.TB, store billing.Store) {
	tb.Helper()
	rewriteIDIndex(tb, store, func(tx billing.Tx, k, v string) error {
		ctx := context.Background()
		if err := tx.Put(ctx, "usage_event_ids", []byte(k), []byte(v[:12])); err != nil {
			return err
		}
		for e := v[12:]; len(e) > 0; e = e[28:] {
			if err := tx.Put(ctx, "usage_event_ids", []byte(k[:4]+"u"+e[:16]), []byte(e[16:28])); err != nil {
				return err
			}
		}
		return nil
	})
}

// toFixedLayout rewrites every record of store's id index that holds several
// events in the layout before records were compact: after the first
// entry's location, 28 bytes per entry (UUID 16 | series no | timestamp).
func toFixedLayout(tb testing.TB, store billing.Store) {
	tb.Helper()
	rewriteIDIndex(tb, store, func(tx billing.Tx, k, v string) error {
		return tx.Put(context.Background(), "usage_event_ids", []byte(k), []byte(v))
	})
}

// rewriteIDIndex calls put, in one transaction, with the key of every
// record of store's id index that holds several events and its value in
// the fixed layout (billing.FixedIDRecord).
func rewriteIDIndex(tb testing.TB, store billing.Store, put func(tx billing.Tx, k, v string) error) {
	tb.Helper()
	recs := idIndexRecords(tb, store)
	err := store.Update(context.Background(), func(tx billing.Tx) error {
		for k, v := range recs {
			if len(v) == 12 {
				continue
			}
			fixed, err := billing.FixedIDRecord([]byte(k[4:]), []byte(v))
			if err != nil {
				return err
			}
			if (len(fixed)-12)%28 != 0 || len(fixed) == len(v) {
				return fmt.Errorf("record %x: %d bytes in the fixed layout, %d compact", k, len(fixed), len(v))
			}
			if err := put(tx, k, string(fixed)); err != nil {
				return err
			}
		}
		// Those layouts are older than the index of each alias: a store
		// written then has none, and no marker of it.
		var keys [][]byte
		err := tx.Scan(context.Background(), "usage_alias_ids", billing.Range{}, func(k, _ []byte) error {
			keys = append(keys, slices.Clone(k))
			return nil
		})
		for _, k := range keys {
			err = errors.Join(err, tx.Delete(context.Background(), "usage_alias_ids", k))
		}
		return errors.Join(err, tx.Delete(context.Background(), "meta", []byte("usage_alias_ids")))
	})
	if err != nil {
		tb.Fatal(err)
	}
}

// TestUsageIDBlocksOldFormatRecords checks that an id index written in the
// layouts of earlier versions is read as it is: one 12-byte record per
// event (account no | id → series no | timestamp, before records held
// several), and records of 28-byte entries (before they were compact).
// Their events list, their cursors page on, their events are superseded by
// their ids, and new batches in the same millisecond list beside them.
func TestUsageIDBlocksOldFormatRecords(t *testing.T) {
	t.Parallel()
	for _, layout := range []struct {
		name    string
		rewrite func(testing.TB, billing.Store)
		records int
	}{{"one record per event", toOldLayout, 8}, {"fixed entries", toFixedLayout, 1}} {
		t.Run(layout.name, func(t *testing.T) {
			t.Parallel()
			store := billingtest.DurableStore(t)
			newID, _ := billingtest.MillisecondIDs(1000)
			cfg := billingtest.WithConfig(billing.Config{NewID: newID})
			svc, _ := billingtest.NewService(t, billingtest.WithStore(store), cfg)
			acct := billingtest.Account(t, svc, "a")
			m := newUsageModel()
			events := make([]billing.UsageEventParams, 8)
			for j := range events {
				events[j] = event(t, "c", "api", `{"n":1}`)
			}
			b := ingest(t, svc, acct, events...)
			m.add(b)
			layout.rewrite(t, store)
			// Opened again, as a store of those versions is: the index of
			// each alias is built from the records as they are.
			svc, _ = billingtest.NewService(t, billingtest.WithStore(store), cfg)
			if err := billing.CheckAliasIndex(context.Background(), store); err != nil {
				t.Fatal(err)
			}
			if recs := idIndexRecords(t, store); len(recs) != layout.records {
				t.Fatalf("%d records in the old layout, want %d", len(recs), layout.records)
			}
			checkOldLayout(t, svc, acct, m, b)
			if err := billing.CheckAliasIndex(context.Background(), store); err != nil {
				t.Fatalf("after supersedes: %v", err)
			}
			if got, want := listBothWays(t, svc, acct, billing.UsageEventFilter{CustomerAlias: "c"}, 3), m.newestFirst("c"); !slices.Equal(got, want) {
				t.Errorf("the alias's list\n%v\nwant\n%v", got, want)
			}
		})
	}
}

// checkOldLayout lists, pages and supersedes the events b (of model m),
// whose id index was rewritten in an older layout.
func checkOldLayout(t *testing.T, svc *billing.Service, acct string, m *usageModel, b []billing.UsageEvent) {
	ctx := context.Background()
	if got, want := listBothWays(t, svc, acct, billing.UsageEventFilter{}, 3), m.newestFirst(""); !slices.Equal(got, want) {
		t.Errorf("old layout lists\n%v\nwant\n%v", got, want)
	}
	page, err := svc.ListUsageEvents(ctx, acct, billing.UsageEventFilter{}, billing.ListParams{Limit: 3})
	if err != nil {
		t.Fatal(err)
	}
	// Superseded by their ids: a middle one alone, the first and the last
	// by a batch of the same millisecond.
	e, err := svc.CreateUsageEvent(ctx, acct, withID(t, b[4].ID, "c", `{"n":1}`))
	if err != nil {
		t.Fatal(err)
	}
	m.add([]billing.UsageEvent{*e})
	m.add(ingest(t, svc, acct, withID(t, b[0].ID, "c", `{"n":1}`), event(t, "c", "api", ""), withID(t, b[7].ID, "c", `{"n":1}`)))
	if got, want := listBothWays(t, svc, acct, billing.UsageEventFilter{}, 3), m.newestFirst(""); !slices.Equal(got, want) {
		t.Errorf("after supersede\n%v\nwant\n%v", got, want)
	}
	// The old layout's cursor pages on: after b[5] come b[3], b[2], b[1]
	// (b[4] is gone).
	next, err := svc.ListUsageEvents(ctx, acct, billing.UsageEventFilter{}, billing.ListParams{Limit: 3, After: page.After})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range next.Items {
		got = append(got, e.ID)
	}
	if want := []string{b[3].ID, b[2].ID, b[1].ID}; !slices.Equal(got, want) {
		t.Errorf("after the old cursor %v, want %v", got, want)
	}
}

// TestUsageIDRecordLayoutByStore checks which layout a batch's id index
// record is written in: compact on a store one process owns, the fixed
// layout of 28-byte entries on a shared one, which billingd instances of
// releases before the compact layout may share during a rolling upgrade.
func TestUsageIDRecordLayoutByStore(t *testing.T) {
	t.Parallel()
	for _, shared := range []bool{false, true} {
		store := billingtest.DurableStore(t)
		svc, _ := billingtest.NewService(t, billingtest.WithStore(store), billingtest.WithUUIDs(), billingtest.WithConfig(billing.Config{LegacyUsageIDRecords: shared}))
		acct := billingtest.Account(t, svc, "a")
		events := make([]billing.UsageEventParams, 100)
		for j := range events {
			events[j] = event(t, "c", "api", `{"n":1}`)
		}
		ingest(t, svc, acct, events...)
		recs := idIndexRecords(t, store)
		if len(recs) != 1 {
			t.Fatalf("shared %v: %d records, want 1", shared, len(recs))
		}
		for _, v := range recs {
			if fixed := len(v) == 12+28*99; fixed != shared {
				t.Errorf("shared %v: a record of 100 events takes %d bytes (the fixed layout: %d)", shared, len(v), 12+28*99)
			}
		}
	}
}

// TestUsageIDRecordsListedAcrossLayouts lists, again and again, an index
// holding a record in the fixed layout (read where the store keeps it) and a
// compact one of as many events (decoded into reused memory), each on bbolt
// and memstore: the reused memory must never be the store's.
func TestUsageIDRecordsListedAcrossLayouts(t *testing.T) {
	t.Parallel()
	for _, store := range []billing.Store{billingtest.DurableStore(t), memstore.New()} {
		svc, _ := billingtest.NewService(t, billingtest.WithStore(store), billingtest.WithUUIDs())
		acct := billingtest.Account(t, svc, "a")
		m := newUsageModel()
		batch := func() {
			events := make([]billing.UsageEventParams, 100)
			for j := range events {
				events[j] = event(t, "c", "api", `{"n":1}`)
			}
			m.add(ingest(t, svc, acct, events...))
		}
		batch()
		toFixedLayout(t, store)
		batch()
		for range 3 {
			if got, want := listBothWays(t, svc, acct, billing.UsageEventFilter{}, 100), m.newestFirst(""); !slices.Equal(got, want) {
				t.Fatalf("%T lists\n%v\nwant\n%v", store, got, want)
			}
		}
	}
}

// TestUsageIDBlocksConcurrentBatches checks batches ingested at once whose
// ids share milliseconds (index records of different batches overlap):
// every event is listed exactly once, and each is found by its id when a
// later batch supersedes them all.
func TestUsageIDBlocksConcurrentBatches(t *testing.T) {
	t.Parallel()
	onStores(t, func(t *testing.T, opts ...billingtest.Option) {
		svc, acct, _ := blockService(t, 1000, opts...)
		metric := sumOfN(t, svc, acct)
		var all []string
		ingestAtOnce(t, svc, acct, 8, 5, func(g, _ int) []billing.UsageEventParams {
			events := make([]billing.UsageEventParams, 10+g)
			for j := range events {
				events[j] = event(t, "c", "api", `{"n":1}`)
			}
			return events
		}, func(_, _ int, _ []billing.UsageEventParams, stored []billing.UsageEvent) {
			for _, e := range stored {
				all = append(all, e.ID)
			}
		})
		listed := listBothWays(t, svc, acct, billing.UsageEventFilter{}, 17)
		if !slices.Equal(slices.Sorted(slices.Values(listed)), slices.Sorted(slices.Values(all))) {
			t.Fatalf("listed %d events, stored %d (or not the same)", len(listed), len(all))
		}
		events := make([]billing.UsageEventParams, len(all))
		for j, id := range all {
			events[j] = withID(t, id, "c", `{"n":2}`)
		}
		ingest(t, svc, acct, events...)
		checkCalc(t, svc, acct, metric, []string{"c"}, "2024-07-01", "2024-07-31", int64(len(all)), 0, fmt.Sprint(2*len(all)))
		if n := len(listBothWays(t, svc, acct, billing.UsageEventFilter{}, 50)); n != len(all) {
			t.Errorf("listed %d events, want %d", n, len(all))
		}
	})
}

// TestUsageIDBlocksFailedBatch checks that a batch whose commit fails
// leaves the id index as it was: no record of its own, and the records of
// the events it superseded unchanged.
func TestUsageIDBlocksFailedBatch(t *testing.T) {
	t.Parallel()
	store := billingtest.DurableStore(t)
	fs := faultstore.New(store)
	svc, acct, _ := blockService(t, 1000, billingtest.WithStore(fs))
	events := make([]billing.UsageEventParams, 10)
	for j := range events {
		events[j] = event(t, "c", "api", `{"n":1}`)
	}
	b := ingest(t, svc, acct, events...)
	before := idIndexRecords(t, store)
	fs.Inject(faultstore.Fault{Op: faultstore.OpCommit})
	_, err := svc.CreateUsageEventBatch(context.Background(), acct, billing.UsageEventBatchParams{Events: []billing.UsageEventParams{
		withID(t, b[0].ID, "c", `{"n":5}`), withID(t, b[4].ID, "c", `{"n":5}`), event(t, "c", "api", "")}})
	fs.Clear()
	if err == nil {
		t.Fatal("a batch was acknowledged through a failed commit")
	}
	if after := idIndexRecords(t, store); !maps.Equal(before, after) {
		t.Errorf("index records %d before, %d after a failed batch", len(before), len(after))
	}
	if n := len(listBothWays(t, svc, acct, billing.UsageEventFilter{}, 4)); n != 10 {
		t.Errorf("listed %d events, want 10", n)
	}
}

// TestUsageIDBlocksCursorAcrossSupersede pages through one batch's events
// (one id-index record, billingd's own batch ids), supersedes the batch's
// first event between two pages, and checks that the next page holds
// exactly the events not yet listed: a supersede must not move the list
// positions of the record's other events.
func TestUsageIDBlocksCursorAcrossSupersede(t *testing.T) {
	t.Parallel()
	onStores(t, func(t *testing.T, opts ...billingtest.Option) {
		ctx := context.Background()
		svc, _ := billingtest.NewService(t, append(opts, billingtest.WithUUIDs())...)
		acct := billingtest.Account(t, svc, "a")
		b := ingest(t, svc, acct, withID(t, "", "c", `{"n":1}`), withID(t, "", "c", `{"n":1}`),
			withID(t, "", "c", `{"n":1}`), withID(t, "", "c", `{"n":1}`))
		page1, err := svc.ListUsageEvents(ctx, acct, billing.UsageEventFilter{}, billing.ListParams{Limit: 2})
		if err != nil {
			t.Fatal(err)
		}
		if len(page1.Items) != 2 || page1.Items[0].ID != b[3].ID || page1.Items[1].ID != b[2].ID {
			t.Fatalf("page 1 = %v, want events 3 and 2 of %v", page1.Items, b)
		}
		ingest(t, svc, acct, withID(t, b[0].ID, "c", `{"n":2}`)) // supersedes the record's first event
		page2, err := svc.ListUsageEvents(ctx, acct, billing.UsageEventFilter{}, billing.ListParams{Limit: 2, After: page1.After})
		if err != nil {
			t.Fatal(err)
		}
		if len(page2.Items) != 1 || page2.Items[0].ID != b[1].ID {
			t.Errorf("page 2 after superseding event 0 = %v, want event 1 (%s) alone", page2.Items, b[1].ID)
		}
		back, err := svc.ListUsageEvents(ctx, acct, billing.UsageEventFilter{}, billing.ListParams{Limit: 2, Before: page2.Before})
		if err != nil {
			t.Fatal(err)
		}
		if len(back.Items) != 2 || back.Items[0].ID != b[3].ID || back.Items[1].ID != b[2].ID {
			t.Errorf("back from page 2 = %v, want events 3 and 2", back.Items)
		}
	})
}

// TestBatchWriteMemoryReused: batches ingested at once, of different
// sizes, through Services that reuse the memory of finished writes
// (takeWrite, releaseWrite): every event is stored with its own
// properties, id and customerEventId, none with another batch's (fails when
// a write's memory is handed to the next batch before its transaction has
// ended; with -race, also as a race).
func TestBatchWriteMemoryReused(t *testing.T) {
	t.Parallel()
	onStores(t, func(t *testing.T, opts ...billingtest.Option) {
		svc, _ := billingtest.NewService(t, append(opts, billingtest.WithUUIDs())...)
		acct := billingtest.Account(t, svc, "a")
		ctx := context.Background()
		want := map[string]string{} // id → tag property / customerEventId
		ingestAtOnce(t, svc, acct, 6, 6, func(g, r int) []billing.UsageEventParams {
			events := make([]billing.UsageEventParams, 5+7*g+r)
			for j := range events {
				events[j] = event(t, fmt.Sprintf("c%d", g), "api", fmt.Sprintf(`{"tag":"g%d-r%d-e%d","n":%d}`, g, r, j, j))
				if j%3 == 0 {
					events[j].CustomerEventID = fmt.Sprintf("cev-%d-%d-%d", g, r, j)
				}
			}
			return events
		}, func(g, r int, sent []billing.UsageEventParams, stored []billing.UsageEvent) {
			for j, e := range stored {
				want[e.ID] = fmt.Sprintf("g%d-r%d-e%d/%s", g, r, j, sent[j].CustomerEventID)
			}
		})
		var listed []billing.UsageEvent
		for p := (billing.ListParams{Limit: 100}); ; {
			page, err := svc.ListUsageEvents(ctx, acct, billing.UsageEventFilter{}, p)
			if err != nil {
				t.Fatal(err)
			}
			listed = append(listed, page.Items...)
			if p.After = page.After; page.After == "" {
				break
			}
		}
		if len(listed) != len(want) {
			t.Fatalf("listed %d events, ingested %d", len(listed), len(want))
		}
		for _, e := range listed {
			cevid := e.CustomerEventID
			if cevid == e.ID {
				cevid = ""
			}
			if got := e.EventProperties["tag"].String() + "/" + cevid; got != want[e.ID] {
				t.Errorf("event %s stored as %q, want %q", e.ID, got, want[e.ID])
			}
		}
	})
}

// ingestAtOnce runs goroutines×rounds batch ingestions into acct at once:
// batch(g, r) is round r of goroutine g, and stored is called, one call
// at a time, with what each sent and what was stored.
func ingestAtOnce(t *testing.T, svc *billing.Service, acct string, goroutines, rounds int,
	batch func(g, r int) []billing.UsageEventParams, stored func(g, r int, sent []billing.UsageEventParams, got []billing.UsageEvent)) {
	t.Helper()
	var mu sync.Mutex
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for r := range rounds {
				events := batch(g, r)
				out, err := svc.CreateUsageEventBatch(context.Background(), acct, billing.UsageEventBatchParams{Events: events})
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				stored(g, r, events, out.Items)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
}
