package billing_test

import (
	"context"
	"testing"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
)

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
