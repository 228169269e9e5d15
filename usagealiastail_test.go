package billing_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
)

// The alias index's tail (usagealiastail.go): on a store with one writer at
// a time the newest records of usage_event_ids get their alias records
// only once the tail passes a limit; a list of one alias reads the rest
// from usage_event_ids. These tests make the limit a few entries, so that
// the watermark moves many times and pages of 3 start below it and end
// above it.

// olderIDs returns a Config.NewID whose every fifth id is older than all
// the others (a millisecond long past): records written below the
// watermark, which get their alias records at once. (Lists of other
// records than usage events take their ids for their creation order.)
func olderIDs() func() string {
	older, _ := billingtest.MillisecondIDs(4)
	newer, _ := billingtest.MillisecondIDs(4)
	var mu sync.Mutex
	n := 0
	return func() string {
		mu.Lock()
		defer mu.Unlock()
		if n++; n%5 == 0 {
			return older()
		}
		id := newer()
		return "1" + id[1:] // a millisecond after every older id's
	}
}

func TestAliasListsAcrossTheWatermarkMatchAnOracle(t *testing.T) {
	t.Parallel()
	steps := billingtest.EnvCount(t, "BILLINGD_LISTCOUNT_STEPS", 120, 20)
	seed := billingtest.Seed(t, "BILLINGD_LISTCOUNT_SEED")
	for _, ids := range []struct {
		name  string
		newID func() string
	}{
		{"ascending", func() func() string { id, _ := billingtest.MillisecondIDs(4); return id }()},
		{"some older", olderIDs()},
	} {
		t.Run(ids.name, func(t *testing.T) {
			t.Parallel()
			onStores(t, func(t *testing.T, opts ...billingtest.Option) {
				svc, clock := billingtest.NewService(t, append(opts, billingtest.WithConfig(billing.Config{NewID: ids.newID}))...)
				billing.SetAliasTailEntries(svc, 4)
				sc := newListScenario(t, svc, clock, seed)
				marks := map[string]bool{}
				for i := range steps {
					sc.ingest() // only events: invoices take their ids in order
					from, ok, err := billing.AliasTail(sc.ctx, svc, sc.acct)
					if err != nil {
						t.Fatal(err)
					}
					if ok {
						marks[string(from)] = true
					}
					if i%10 == 9 {
						sc.check()
					}
				}
				sc.check()
				if _, ok, _ := billing.AliasTail(sc.ctx, svc, sc.acct); ok && len(marks) < 5 {
					t.Fatalf("the watermark took %d places: the test does not test lists across it", len(marks))
				}
			})
		})
	}
}

// A cursor handed out before the watermark moves past its position goes on
// where it was: the next page holds the events after it, the page before
// it the events of the first page.
func TestAliasListCursorsOutliveTheWatermark(t *testing.T) {
	t.Parallel()
	onStores(t, func(t *testing.T, opts ...billingtest.Option) {
		newID, _ := billingtest.MillisecondIDs(3)
		svc, _ := billingtest.NewService(t, append(opts, billingtest.WithConfig(billing.Config{NewID: newID}))...)
		billing.SetAliasTailEntries(svc, 10)
		ctx, acct := context.Background(), billingtest.Account(t, svc, "acme")
		ingest := func(n int) {
			events := make([]billing.UsageEventParams, n)
			for i := range events {
				ts := billingtest.Start.Add(time.Duration(i) * time.Minute)
				events[i] = billing.UsageEventParams{CustomerAlias: fmt.Sprintf("alias-%d", i%3), EventType: "api_call", EventTimestamp: &ts}
			}
			must(svc.CreateUsageEventBatch(ctx, acct, billing.UsageEventBatchParams{Events: events})).of(t, "CreateUsageEventBatch")
		}
		list := func(p billing.ListParams) ([]string, billing.Page[billing.UsageEvent]) {
			pg := must(svc.ListUsageEvents(ctx, acct, billing.UsageEventFilter{CustomerAlias: "alias-1"}, p)).of(t, "ListUsageEvents")
			return ids(pg.Items, func(e billing.UsageEvent) string { return e.ID }), pg
		}
		ingest(8) // all in the tail
		want, _ := list(billing.ListParams{Limit: 100})
		first, pg := list(billing.ListParams{Limit: 2})
		before, _, _ := billing.AliasTail(ctx, svc, acct)
		ingest(8) // past the limit: all of it indexed
		after, ok, _ := billing.AliasTail(ctx, svc, acct)
		if ok && bytes.Equal(before, after) {
			t.Fatalf("the watermark stayed at %x", after)
		}
		rest, pg2 := list(billing.ListParams{Limit: 100, After: pg.After})
		if got := slices.Concat(first, rest); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("paging across the watermark visited %v, want %v", got, want)
		}
		if back, _ := list(billing.ListParams{Limit: 2, Before: pg2.Before}); fmt.Sprint(back) != fmt.Sprint(first) {
			t.Fatalf("the page before %v, want %v", back, first)
		}
		if err := billing.CheckAliasIndex(ctx, svc.Store()); err != nil {
			t.Fatal(err)
		}
	})
}
