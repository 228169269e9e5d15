package billing_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
)

func createMetrics(tb testing.TB, svc *billing.Service, account string, n int) []string {
	tb.Helper()
	ids := make([]string, n)
	for i := range n {
		m, err := svc.CreateUsageMetric(context.Background(), account, metricParams(fmt.Sprintf("metric %03d", i)))
		if err != nil {
			tb.Fatalf("CreateUsageMetric: %v", err)
		}
		ids[i] = m.ID
	}
	return ids
}

func metricParams(name string) billing.CreateUsageMetricParams {
	return billing.CreateUsageMetricParams{UsageMetricParams: billing.UsageMetricParams{
		Name: name, MetricType: billing.MetricTypeSimple, EventType: "api_call",
		AggregationType: billing.AggregationCount,
	}}
}

func pageIDs(p billing.Page[billing.UsageMetric]) []string {
	ids := make([]string, len(p.Items))
	for i, m := range p.Items {
		ids[i] = m.ID
	}
	return ids
}

func TestPaginationVisitsEveryItemOnceBothWays(t *testing.T) {
	t.Parallel()
	metricsBothWays(t, 45, func(t *testing.T, svc *billing.Service, acct string, f billing.UsageMetricFilter, want []string) {
		ctx, order := context.Background(), f.SortOrder
		var pages []billing.Page[billing.UsageMetric]
		p := billing.ListParams{Limit: 20}
		for {
			page, err := svc.ListUsageMetrics(ctx, acct, f, p)
			if err != nil {
				t.Fatalf("%s: ListUsageMetrics: %v", order, err)
			}
			if page.TotalResultSize != 45 {
				t.Fatalf("%s: totalResultSize = %d, want 45", order, page.TotalResultSize)
			}
			pages = append(pages, page)
			if page.After == "" {
				break
			}
			p = billing.ListParams{Limit: 20, After: page.After}
		}
		var got []string
		for _, pg := range pages {
			got = append(got, pageIDs(pg)...)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("%s: following after visited %v, want %v", order, got, want)
		}
		if len(pages) != 3 || pages[0].Before != "" || pages[1].Before == "" || pages[2].Before == "" {
			t.Fatalf("%s: before cursors on pages: %q %q %q", order, pages[0].Before, pages[1].Before, pages[2].Before)
		}
		// Back from the last page to the first with before.
		back := pages[2]
		for i := 1; i >= 0; i-- {
			page, err := svc.ListUsageMetrics(ctx, acct, f, billing.ListParams{Limit: 20, Before: back.Before})
			if err != nil {
				t.Fatalf("%s: before page: %v", order, err)
			}
			if fmt.Sprint(pageIDs(page)) != fmt.Sprint(pageIDs(pages[i])) {
				t.Fatalf("%s: before page %d = %v, want %v", order, i, pageIDs(page), pageIDs(pages[i]))
			}
			if page.After == "" {
				t.Fatalf("%s: a page reached with before has no after cursor", order)
			}
			back = page
		}
		if back.Before != "" {
			t.Fatalf("%s: the first page reached with before has a before cursor", order)
		}
	})
}

// metricsBothWays runs test on each store with n usage metrics in account
// "a", once per sort order (newest first, then oldest first): f lists in
// that order and ids are the metrics' ids in it.
func metricsBothWays(t *testing.T, n int, test func(t *testing.T, svc *billing.Service, acct string, f billing.UsageMetricFilter, ids []string)) {
	t.Helper()
	stores(t, func(t *testing.T, svc *billing.Service, _ *billingtest.Clock) {
		acct := billingtest.Account(t, svc, "a")
		created := createMetrics(t, svc, acct, n)
		newestFirst := slices.Clone(created)
		slices.Reverse(newestFirst)
		test(t, svc, acct, billing.UsageMetricFilter{SortOrder: billing.SortDesc}, newestFirst)
		test(t, svc, acct, billing.UsageMetricFilter{SortOrder: billing.SortAsc}, created)
	})
}

func TestPaginationStableUnderConcurrentInserts(t *testing.T) {
	t.Parallel()
	metricsBothWays(t, 30, func(t *testing.T, svc *billing.Service, acct string, f billing.UsageMetricFilter, created []string) {
		ctx, order := context.Background(), f.SortOrder
		seen := map[string]int{}
		p := billing.ListParams{Limit: 7}
		var wg sync.WaitGroup
		for i := 0; ; i++ {
			name := fmt.Sprintf("%s inserted %d", order, i)
			page, err := svc.ListUsageMetrics(ctx, acct, f, p)
			if err != nil {
				t.Fatal(err)
			}
			for _, id := range pageIDs(page) {
				seen[id]++
			}
			// Insert while paging, between every two pages.
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := svc.CreateUsageMetric(ctx, acct, metricParams(name)); err != nil {
					t.Errorf("CreateUsageMetric: %v", err)
				}
			}()
			wg.Wait()
			if page.After == "" {
				break
			}
			p.After = page.After
		}
		if len(seen) < len(created) {
			t.Fatalf("%s: saw %d items, want at least %d", order, len(seen), len(created))
		}
		for _, id := range created {
			if seen[id] != 1 {
				t.Fatalf("%s: item %s seen %d times while inserting", order, id, seen[id])
			}
		}
		for id, n := range seen {
			if n != 1 {
				t.Fatalf("%s: item %s seen %d times", order, id, n)
			}
		}
	})
}

func TestPaginationEmptyPageAfterTheEnd(t *testing.T) {
	t.Parallel()
	svc, _ := billingtest.NewService(t)
	ctx := context.Background()
	acct := billingtest.Account(t, svc, "a")
	ids := createMetrics(t, svc, acct, 3)
	first, err := svc.ListUsageMetrics(ctx, acct, billing.UsageMetricFilter{}, billing.ListParams{Limit: 3})
	if err != nil {
		t.Fatal(err)
	}
	if first.After != "" {
		t.Fatalf("a complete first page has an after cursor")
	}
	// An after cursor whose items were all deleted leads to an empty page
	// that still leads back.
	two, err := svc.ListUsageMetrics(ctx, acct, billing.UsageMetricFilter{}, billing.ListParams{Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.DeleteUsageMetric(ctx, acct, ids[0]); err != nil {
		t.Fatal(err)
	}
	empty, err := svc.ListUsageMetrics(ctx, acct, billing.UsageMetricFilter{}, billing.ListParams{Limit: 2, After: two.After})
	if err != nil {
		t.Fatal(err)
	}
	if len(empty.Items) != 0 || empty.After != "" || empty.Before == "" || empty.TotalResultSize != 2 {
		t.Fatalf("empty page = %+v", empty)
	}
	back, err := svc.ListUsageMetrics(ctx, acct, billing.UsageMetricFilter{}, billing.ListParams{Limit: 2, Before: empty.Before})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(pageIDs(back)) != fmt.Sprint([]string{ids[2], ids[1]}) {
		t.Fatalf("back from the empty page = %v, want %v", pageIDs(back), []string{ids[2], ids[1]})
	}
}

func TestPaginationRejectsBadParameters(t *testing.T) {
	t.Parallel()
	svc, _ := billingtest.NewService(t)
	other, _ := billingtest.NewService(t)
	ctx := context.Background()
	acct := billingtest.Account(t, svc, "a")
	createMetrics(t, svc, acct, 5)
	page, err := svc.ListUsageMetrics(ctx, acct, billing.UsageMetricFilter{}, billing.ListParams{Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	otherAcct := billingtest.Account(t, other, "b")
	createMetrics(t, other, otherAcct, 5)
	foreign, err := other.ListUsageMetrics(ctx, otherAcct, billing.UsageMetricFilter{}, billing.ListParams{Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		f     billing.UsageMetricFilter
		p     billing.ListParams
		field string
	}{
		{"ErrLimitZero", billing.UsageMetricFilter{}, billing.ListParams{Limit: -1}, "limit"},
		{"ErrLimitTooLarge", billing.UsageMetricFilter{}, billing.ListParams{Limit: 101}, "limit"},
		{"ErrBothCursors", billing.UsageMetricFilter{}, billing.ListParams{After: page.After, Before: page.After}, "before"},
		{"ErrGarbageCursor", billing.UsageMetricFilter{}, billing.ListParams{After: "not-a-cursor"}, "after"},
		{"ErrTamperedCursor", billing.UsageMetricFilter{}, billing.ListParams{After: tampered(page.After)}, "after"},
		{"ErrCursorOfAnotherServer", billing.UsageMetricFilter{}, billing.ListParams{After: foreign.After}, "after"},
		{"ErrCursorWithOtherFilters", billing.UsageMetricFilter{Name: "metric"}, billing.ListParams{After: page.After}, "after"},
		{"ErrCursorWithOtherOrder", billing.UsageMetricFilter{SortOrder: billing.SortAsc}, billing.ListParams{After: page.After}, "after"},
		{"ErrAfterCursorAsBefore", billing.UsageMetricFilter{}, billing.ListParams{Before: page.After}, "before"},
		{"ErrSortOrder", billing.UsageMetricFilter{SortOrder: "UP"}, billing.ListParams{}, "sortOrder"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := svc.ListUsageMetrics(ctx, acct, tc.f, tc.p)
			errs := billing.Errors(err)
			if billing.CodeOf(err) != billing.CodeValidationFailed || len(errs) == 0 || errs[0].Field != tc.field {
				t.Fatalf("err = %v, want validation_failed on %s", err, tc.field)
			}
		})
	}
}

// TestListUsageMetricsMemo: lists reuse decoded records only while their
// stored bytes are unchanged. Changes made through this Service, through
// another Service on the same store (which this Service's memo never
// heard of), and by the caller to the items it got all leave the next list
// exact.
//
// Long on purpose: one scenario walked in order; each step starts from the state the previous steps
// left, so pieces would repeat the set-up.
func TestListUsageMetricsMemo(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := billingtest.DurableStore(t)
	svc, _ := billingtest.NewService(t, billingtest.WithStore(store))
	other, _ := billingtest.NewService(t, billingtest.WithStore(store))
	acct := billingtest.Account(t, svc, "a")
	params := func(name string) billing.UsageMetricParams {
		return billing.UsageMetricParams{
			Name: name, MetricType: billing.MetricTypeSimple, EventType: "api", AggregationType: billing.AggregationSum,
			AggregationProperty: "n", PropertyFilters: map[string][]string{"region": {"eu"}},
			Parameters: []billing.UsageMetricParameterParam{{Name: "p", Type: billing.ParameterInteger, DefaultValue: "1"}},
		}
	}
	var ids []string
	for _, name := range []string{"one", "two", "three"} {
		m, err := svc.CreateUsageMetric(ctx, acct, billing.CreateUsageMetricParams{UsageMetricParams: params(name)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, m.ID)
	}
	list := func() (names []string, total int) {
		t.Helper()
		page, err := svc.ListUsageMetrics(ctx, acct, billing.UsageMetricFilter{SortOrder: billing.SortAsc}, billing.ListParams{})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range page.Items {
			if len(m.PropertyFilters["region"]) != 1 || m.PropertyFilters["region"][0] != "eu" || len(m.Parameters) != 1 || m.Parameters[0].Name != "p" {
				t.Fatalf("metric %s came back changed: %+v", m.Name, m)
			}
			names = append(names, m.Name)
		}
		// Scribble over everything the caller owns: the memo must not see it.
		for i := range page.Items {
			page.Items[i].PropertyFilters["region"][0] = "scribbled"
			page.Items[i].PropertyFilters["new"] = nil
			page.Items[i].Parameters[0].Name = "scribbled"
			page.Items[i].Name = "scribbled"
		}
		return names, page.TotalResultSize
	}
	check := func(step string, want ...string) {
		t.Helper()
		for range 2 { // the second list answers from the memo
			names, total := list()
			if len(names) != len(want) || total != len(want) {
				t.Fatalf("%s: names %v (total %d), want %v", step, names, total, want)
			}
			for i := range want {
				if names[i] != want[i] {
					t.Fatalf("%s: names %v, want %v", step, names, want)
				}
			}
		}
	}
	check("created", "one", "two", "three")
	if _, err := svc.UpdateUsageMetric(ctx, acct, ids[1], params("deux")); err != nil {
		t.Fatal(err)
	}
	check("renamed here", "one", "deux", "three")
	if _, err := other.UpdateUsageMetric(ctx, acct, ids[0], params("un")); err != nil {
		t.Fatal(err)
	}
	check("renamed by another Service on the store", "un", "deux", "three")
	if _, err := other.DeleteUsageMetric(ctx, acct, ids[2]); err != nil {
		t.Fatal(err)
	}
	check("deleted by another Service on the store", "un", "deux")
}

// tampered changes one character in the middle of cursor, where every bit
// of a base64 character is data: changing its last characters can change
// only padding bits, which decode to the same bytes.
func tampered(cursor string) string {
	i := len(cursor) / 2
	c := byte('A')
	if cursor[i] == c {
		c = 'B'
	}
	return cursor[:i] + string(c) + cursor[i+1:]
}
