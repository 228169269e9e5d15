package billing_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
	"github.com/google/go-cmp/cmp"
)

func createSeatMetric(tb testing.TB, svc *billing.Service, account, seatType string) *billing.SeatMetric {
	tb.Helper()
	return must(svc.CreateSeatMetric(context.Background(), account, billing.CreateSeatMetricParams{SeatType: seatType, Label: seatType, CreatedBy: "test"})).of(tb, "CreateSeatMetric")
}

// seatEvent records an event of total seats at start + at.
func seatEvent(tb testing.TB, svc *billing.Service, account, alias, seatType string, at time.Duration, total int64, customerEventID string) *billing.SeatEvent {
	tb.Helper()
	e, err := svc.CreateSeatEvent(context.Background(), account, billing.CreateSeatEventParams{
		CustomerAlias: alias, SeatType: seatType, EventTimestamp: billingtest.Start.Add(at), Total: &total, CustomerEventID: customerEventID,
	})
	if err != nil {
		tb.Fatalf("CreateSeatEvent: %v", err)
	}
	return e
}

// Long on purpose: one scenario walked in order; each step starts from the state the previous steps
// left, so pieces would repeat the set-up.
func TestSeatMetricLifecycle(t *testing.T) {
	t.Parallel()
	stores(t, func(t *testing.T, svc *billing.Service, clock *billingtest.Clock) {
		ctx := context.Background()
		c := newCatalog(t, svc, "a")
		b := billingtest.Account(t, svc, "b")
		_, err := svc.CreateSeatMetric(ctx, c.account, billing.CreateSeatMetricParams{SeatType: "Editor-Seats", Description: "a\x00"})
		if diff := cmp.Diff([]string{"seatType", "label", "description"}, errFields(t, err, billing.CodeValidationFailed)); diff != "" {
			t.Fatalf("invalid fields (-want +got):\n%s", diff)
		}
		m := createSeatMetric(t, svc, c.account, "editor")
		if m.CreatedBy != "test" || !m.CreatedAt.Equal(billingtest.Start) {
			t.Fatalf("created = %+v", m)
		}
		if _, err := svc.CreateSeatMetric(ctx, c.account, billing.CreateSeatMetricParams{SeatType: "editor", Label: "x"}); billing.CodeOf(err) != billing.CodeConflict {
			t.Fatalf("duplicate seat type: %v, want conflict", err)
		}
		createSeatMetric(t, svc, b, "editor") // seat types are unique per account only
		clock.Advance(time.Hour)
		up, err := svc.UpdateSeatMetric(ctx, c.account, m.ID, billing.UpdateSeatMetricParams{Label: "Editors", Description: "People who edit"})
		if err != nil || up.Label != "Editors" || up.SeatType != "editor" || !up.UpdatedAt.Equal(clock.Now()) {
			t.Fatalf("UpdateSeatMetric = %+v, %v", up, err)
		}
		for _, op := range []func() error{
			func() error { _, err := svc.GetSeatMetric(ctx, b, m.ID); return err },
			func() error {
				_, err := svc.UpdateSeatMetric(ctx, b, m.ID, billing.UpdateSeatMetricParams{Label: "x"})
				return err
			},
			func() error { _, err := svc.DeleteSeatMetric(ctx, b, m.ID); return err },
		} {
			if err := op(); billing.CodeOf(err) != billing.CodeNotFound {
				t.Fatalf("B touches A's seat metric: %v, want not_found", err)
			}
		}
		price, err := svc.CreatePrice(ctx, c.account, billing.CreatePriceParams{
			ProductID: c.product, Name: "Seats", Currency: "USD", BillingFrequency: billing.FrequencyMonthly, BillingType: billing.BillingTypeInAdvance,
			Structure: billing.PriceStructure{PricingType: billing.PricingSeatBased, SeatMetricID: m.ID, PricePerSeat: dec("10")},
		})
		if err != nil || *price.Structure.ContractedMinimumSeats != 0 || price.UsageCalculationPeriod != nil {
			t.Fatalf("seat price = %+v, %v", price, err)
		}
		if _, err := svc.DeleteSeatMetric(ctx, c.account, m.ID); billing.CodeOf(err) != billing.CodeInvalidState {
			t.Fatalf("deleting a seat metric an ACTIVE price uses: %v, want invalid_state", err)
		}
		if _, err := svc.UpdatePrice(ctx, c.account, price.ID, billing.UpdatePriceParams{Name: "Seats", Status: billing.PriceStatusDraft}); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.DeleteSeatMetric(ctx, c.account, m.ID); err != nil {
			t.Fatalf("deleting a seat metric only a DRAFT price uses: %v", err)
		}
		if _, err := svc.GetSeatMetric(ctx, c.account, m.ID); billing.CodeOf(err) != billing.CodeNotFound {
			t.Fatalf("deleted seat metric still reads: %v", err)
		}
		createSeatMetric(t, svc, c.account, "editor") // the seat type is free again
		page, err := svc.ListSeatMetrics(ctx, c.account, "", billing.ListParams{})
		if err != nil || page.TotalResultSize != 1 {
			t.Fatalf("ListSeatMetrics = %+v, %v", page, err)
		}
	})
}

func TestCreateSeatEvent(t *testing.T) {
	t.Parallel()
	stores(t, func(t *testing.T, svc *billing.Service, _ *billingtest.Clock) {
		ctx, a, b := tenants(t, svc)
		neg := int64(-1)
		_, err := svc.CreateSeatEvent(ctx, a, billing.CreateSeatEventParams{CustomerAlias: "a,b", SeatType: "9x", Total: &neg, CustomerEventID: strings.Repeat("x", 256)})
		want := []string{"customerAlias", "seatType", "customerEventId", "eventTimestamp", "total"}
		if diff := cmp.Diff(want, errFields(t, err, billing.CodeValidationFailed)); diff != "" {
			t.Fatalf("invalid fields (-want +got):\n%s", diff)
		}
		e := seatEvent(t, svc, a, "acme", "editor", time.Hour, 3, "")
		if e.CustomerEventID != e.ID || e.Total != 3 {
			t.Fatalf("created = %+v", e)
		}
		got, err := svc.GetSeatEvent(ctx, a, e.ID)
		if diff := cmp.Diff(e, got); err != nil || diff != "" {
			t.Fatalf("read back (-created +read):\n%s %v", diff, err)
		}
		if _, err := svc.GetSeatEvent(ctx, b, e.ID); billing.CodeOf(err) != billing.CodeNotFound {
			t.Fatalf("B reads A's seat event: %v", err)
		}
		// Supersede: same customerEventId, the old event is gone everywhere.
		first := seatEvent(t, svc, a, "acme", "viewer", 0, 10, "evt-1")
		seatEvent(t, svc, b, "acme", "viewer", 0, 99, "evt-1") // other account, own namespace
		second := seatEvent(t, svc, a, "other", "viewer", time.Minute, 4, "evt-1")
		if second.ID == first.ID {
			t.Fatal("a superseding event kept the old id")
		}
		if _, err := svc.GetSeatEvent(ctx, a, first.ID); billing.CodeOf(err) != billing.CodeNotFound {
			t.Fatalf("superseded event still reads: %v", err)
		}
		for _, by := range []billing.SeatEventSortBy{billing.SeatEventSortByCreatedAt, billing.SeatEventSortByEventTimestamp} {
			page, err := svc.ListSeatEvents(ctx, a, billing.SeatEventFilter{SortBy: by}, billing.ListParams{})
			if err != nil || page.TotalResultSize != 2 {
				t.Fatalf("list by %s after supersede = %+v, %v", by, page, err)
			}
		}
		listsNothing(t, svc.ListSeatBalances, a, "balances without customers")
		acme := createCustomer(t, svc, a, "Acme", "acme")
		bal, err := svc.ListSeatBalances(ctx, a, billing.SeatBalanceFilter{AsOf: ptr(billingtest.Start.Add(2 * time.Hour))}, billing.ListParams{})
		if err != nil || len(bal.Items) != 1 || bal.Items[0].ID != acme.ID || bal.Items[0].Total != 3 {
			t.Fatalf("superseded viewer seats still count: %+v, %v", bal, err)
		}
	})
}

func ptr[T any](v T) *T { return &v }

// Long on purpose: a table of cases, one line each; its length is the cases, not logic.
func TestListSeatEventsFilters(t *testing.T) {
	t.Parallel()
	svc, ctx, a, b := newTenants(t)
	acme := createCustomer(t, svc, a, "Acme", "acme", "acme-eu")
	foreign := createCustomer(t, svc, b, "Foreign", "zeta")
	// Created in this order; timestamps deliberately out of creation order.
	e1 := seatEvent(t, svc, a, "acme", "editor", 3*time.Hour, 1, "c1")
	e2 := seatEvent(t, svc, a, "acme-eu", "viewer", 1*time.Hour, 2, "c2")
	e3 := seatEvent(t, svc, a, acme.ID, "editor", 2*time.Hour, 3, "c3")
	e4 := seatEvent(t, svc, a, "zeta", "admin", 4*time.Hour, 4, "c4")
	at := func(h int) *time.Time { return ptr(billingtest.Start.Add(time.Duration(h) * time.Hour)) }
	ids := func(es ...*billing.SeatEvent) []string {
		out := make([]string, len(es))
		for i, e := range es {
			out[i] = e.ID
		}
		return out
	}
	filterTable(t, svc.ListSeatEvents, a, func(e billing.SeatEvent) string { return e.ID }, []filterCase[billing.SeatEventFilter]{
		{"DefaultNewestCreatedFirst", billing.SeatEventFilter{}, ids(e4, e3, e2, e1)},
		{"CreatedAtAscending", billing.SeatEventFilter{SortOrder: billing.SortAsc}, ids(e1, e2, e3, e4)},
		{"EventTimestampDescending", billing.SeatEventFilter{SortBy: billing.SeatEventSortByEventTimestamp}, ids(e4, e1, e3, e2)},
		{"EventTimestampAscending", billing.SeatEventFilter{SortBy: billing.SeatEventSortByEventTimestamp, SortOrder: billing.SortAsc}, ids(e2, e3, e1, e4)},
		{"CustomerAlias", billing.SeatEventFilter{CustomerAlias: "acme"}, ids(e1)},
		{"CustomerIDsCoverEveryAlias", billing.SeatEventFilter{CustomerIDs: []string{acme.ID}}, ids(e3, e2, e1)},
		{"OtherAccountsCustomerIsMissing", billing.SeatEventFilter{CustomerIDs: []string{foreign.ID}}, nil},
		{"SeatTypes", billing.SeatEventFilter{SeatTypes: []string{"viewer", "admin"}}, ids(e4, e2)},
		{"CustomerEventID", billing.SeatEventFilter{CustomerEventID: "c3"}, ids(e3)},
		{"TimestampBeforeIsStrict", billing.SeatEventFilter{EventTimestampBefore: at(2)}, ids(e2)},
		{"TimestampAfterIsStrict", billing.SeatEventFilter{EventTimestampAfter: at(3)}, ids(e4)},
		{"Combined", billing.SeatEventFilter{CustomerIDs: []string{acme.ID}, SeatTypes: []string{"editor"}, EventTimestampAfter: at(2)}, ids(e1)},
	})
	t.Run("PagesByEventTimestamp", func(t *testing.T) {
		t.Parallel()
		f := billing.SeatEventFilter{SortBy: billing.SeatEventSortByEventTimestamp, SortOrder: billing.SortAsc}
		got := ids(slicesPtr(pages(t, func(p billing.ListParams) (billing.Page[billing.SeatEvent], error) {
			p.Limit = 3 // four events: two pages
			return svc.ListSeatEvents(ctx, a, f, p)
		}))...)
		if want := ids(e2, e3, e1, e4); !slices.Equal(got, want) {
			t.Fatalf("paged ids = %v, want %v", got, want)
		}
	})
	many := make([]string, 101)
	for i := range many {
		many[i] = fmt.Sprint(i)
	}
	for _, f := range []billing.SeatEventFilter{{CustomerIDs: many}, {SortBy: "total"}, {SeatTypes: []string{"Bad"}}, {SortOrder: "UP"}} {
		if _, err := svc.ListSeatEvents(ctx, a, f, billing.ListParams{}); billing.CodeOf(err) != billing.CodeValidationFailed {
			t.Fatalf("filter %+v: %v, want validation_failed", f, err)
		}
	}
}

func slicesPtr[T any](items []T) []*T {
	out := make([]*T, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}

// renderBalances writes balances as "name:total[type=n@h,...]" with hours
// after billingtest.Start, so expectations read like a ledger.
func renderBalances(items []billing.SeatBalance) []string {
	out := []string{}
	for _, b := range items {
		s := fmt.Sprintf("%s:%d[", b.LegalName, b.Total)
		for i, tb := range b.Balances {
			if i > 0 {
				s += ","
			}
			s += fmt.Sprintf("%s=%d@%v", tb.SeatType, tb.Total, tb.ChangeTimestamp.Sub(billingtest.Start))
		}
		s += "]"
		if b.ChangeTimestamp != nil {
			s += fmt.Sprintf("@%v", b.ChangeTimestamp.Sub(billingtest.Start))
		}
		out = append(out, s)
	}
	return out
}

// Long on purpose: one scenario walked in order; each step starts from the state the previous steps
// left, so pieces would repeat the set-up.
func TestSeatBalances(t *testing.T) {
	t.Parallel()
	stores(t, func(t *testing.T, svc *billing.Service, clock *billingtest.Clock) {
		ctx, a, b := tenants(t, svc)
		acme := createCustomer(t, svc, a, "Acme", "acme", "acme-eu")
		beta := createCustomer(t, svc, a, "Beta", "beta")
		createCustomer(t, svc, a, "Zed") // no events
		foreign := createCustomer(t, svc, b, "Foreign", "acme")
		clock.Set(billingtest.Start.Add(10 * time.Hour))

		// Acme editor: the latest timestamp wins, across aliases and the id.
		seatEvent(t, svc, a, "acme", "editor", 1*time.Hour, 5, "")
		seatEvent(t, svc, a, acme.ID, "editor", 3*time.Hour, 7, "")
		seatEvent(t, svc, a, "acme-eu", "editor", 2*time.Hour, 9, "")
		// Same timestamp: the later created wins.
		seatEvent(t, svc, a, "acme-eu", "viewer", 4*time.Hour, 2, "")
		seatEvent(t, svc, a, "acme", "viewer", 4*time.Hour, 1, "")
		// A future event does not count yet.
		seatEvent(t, svc, a, "acme", "editor", 20*time.Hour, 50, "")
		// Beta: a superseded event is replaced.
		seatEvent(t, svc, a, "beta", "editor", 1*time.Hour, 8, "b-1")
		seatEvent(t, svc, a, "beta", "editor", 1*time.Hour, 0, "b-1")
		// An unclaimed alias, and another account's events for "acme".
		seatEvent(t, svc, a, "gamma", "editor", 1*time.Hour, 6, "")
		seatEvent(t, svc, b, "acme", "editor", 5*time.Hour, 100, "")

		list := func(f billing.SeatBalanceFilter, p billing.ListParams) ([]string, billing.Page[billing.SeatBalance]) {
			t.Helper()
			page, err := svc.ListSeatBalances(ctx, a, f, p)
			if err != nil {
				t.Fatal(err)
			}
			return renderBalances(page.Items), page
		}
		all := []string{"Acme:8[editor=7@3h0m0s,viewer=1@4h0m0s]@4h0m0s", "Beta:0[editor=0@1h0m0s]@1h0m0s", "Zed:0[]@0s"}
		for _, tc := range []struct {
			name string
			f    billing.SeatBalanceFilter
			want []string
		}{
			{"All", billing.SeatBalanceFilter{}, all},
			{"ExcludeZeroQuantity", billing.SeatBalanceFilter{ExcludeZeroQuantity: true}, all[:1]},
			{"CustomerAliases", billing.SeatBalanceFilter{CustomerAliases: []string{"beta", "nobody"}}, all[1:2]},
			{"CustomerAliasesByID", billing.SeatBalanceFilter{CustomerAliases: []string{acme.ID}}, all[:1]},
			{"CustomerIDs", billing.SeatBalanceFilter{CustomerIDs: []string{beta.ID, acme.ID}}, all[:2]},
			{"OtherAccountsCustomerIsMissing", billing.SeatBalanceFilter{CustomerIDs: []string{foreign.ID}}, []string{}},
			{"AsOfPast", billing.SeatBalanceFilter{AsOf: ptr(billingtest.Start.Add(2 * time.Hour)), CustomerIDs: []string{acme.ID}},
				[]string{"Acme:9[editor=9@2h0m0s]@2h0m0s"}},
			{"AsOfFuture", billing.SeatBalanceFilter{AsOf: ptr(billingtest.Start.Add(30 * time.Hour)), CustomerIDs: []string{acme.ID}},
				[]string{"Acme:51[editor=50@20h0m0s,viewer=1@4h0m0s]@20h0m0s"}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				got, page := list(tc.f, billing.ListParams{})
				if !slices.Equal(got, tc.want) || page.TotalResultSize != len(tc.want) {
					t.Fatalf("balances = %q (total %d), want %q", got, page.TotalResultSize, tc.want)
				}
			})
		}

		t.Run("OneCustomer", func(t *testing.T) {
			for _, tc := range []struct {
				id   string
				asOf *time.Time
				want string
			}{
				{acme.ID, nil, all[0]}, {beta.ID, nil, all[1]},
				{acme.ID, ptr(billingtest.Start.Add(2 * time.Hour)), "Acme:9[editor=9@2h0m0s]@2h0m0s"},
			} {
				b, err := svc.GetSeatBalance(ctx, a, tc.id, tc.asOf)
				if err != nil {
					t.Fatal(err)
				}
				if got := renderBalances([]billing.SeatBalance{*b}); !slices.Equal(got, []string{tc.want}) {
					t.Errorf("GetSeatBalance(%s) = %q, want %q", tc.id, got, tc.want)
				}
			}
			if _, err := svc.GetSeatBalance(ctx, a, foreign.ID, nil); billing.CodeOf(err) != billing.CodeNotFound {
				t.Errorf("another account's customer: %v, want not_found", err)
			}
		})

		t.Run("Paginated", func(t *testing.T) {
			got, page := list(billing.SeatBalanceFilter{}, billing.ListParams{Limit: 2})
			if !slices.Equal(got, all[:2]) || page.After == "" || page.TotalResultSize != 3 {
				t.Fatalf("page 1 = %q, %+v", got, page)
			}
			got, page = list(billing.SeatBalanceFilter{}, billing.ListParams{Limit: 2, After: page.After})
			if !slices.Equal(got, all[2:]) || page.After != "" || page.Before == "" {
				t.Fatalf("page 2 = %q, %+v", got, page)
			}
			if _, err := svc.ListSeatBalances(ctx, a, billing.SeatBalanceFilter{ExcludeZeroQuantity: true}, billing.ListParams{After: page.Before}); billing.CodeOf(err) != billing.CodeValidationFailed {
				t.Fatalf("a cursor reused with other filters: %v", err)
			}
		})

		t.Run("LateClaimedAlias", func(t *testing.T) {
			g := createCustomer(t, svc, a, "Gamma")
			if got, _ := list(billing.SeatBalanceFilter{CustomerIDs: []string{g.ID}}, billing.ListParams{}); !slices.Equal(got, []string{"Gamma:0[]@10h0m0s"}) {
				t.Fatalf("before the claim: %q", got)
			}
			if _, err := svc.UpdateCustomer(ctx, a, g.ID, billing.CustomerParams{LegalName: "Gamma", CustomerAliases: []string{"gamma"}}); err != nil {
				t.Fatal(err)
			}
			if got, _ := list(billing.SeatBalanceFilter{CustomerIDs: []string{g.ID}}, billing.ListParams{}); !slices.Equal(got, []string{"Gamma:6[editor=6@1h0m0s]@1h0m0s"}) {
				t.Fatalf("after the claim: %q", got)
			}
		})

		t.Run("OrderedByLegalNameThenID", func(t *testing.T) {
			twin := createCustomer(t, svc, a, "Acme")
			_, page := list(billing.SeatBalanceFilter{CustomerAliases: []string{"acme", twin.ID}}, billing.ListParams{})
			if len(page.Items) != 2 || page.Items[0].ID != acme.ID || page.Items[1].ID != twin.ID {
				t.Fatalf("same legal name not ordered by id: %+v", page.Items)
			}
			if _, err := svc.UpdateCustomer(ctx, a, twin.ID, billing.CustomerParams{LegalName: "Aardvark"}); err != nil {
				t.Fatal(err)
			}
			_, page = list(billing.SeatBalanceFilter{CustomerAliases: []string{"acme", twin.ID}}, billing.ListParams{})
			if len(page.Items) != 2 || page.Items[0].ID != twin.ID {
				t.Fatalf("a renamed customer keeps its old place: %+v", page.Items)
			}
		})
	})
}

func TestSeatBalancesLimits(t *testing.T) {
	t.Parallel()
	svc, _ := billingtest.NewService(t)
	a := billingtest.Account(t, svc, "a")
	many := make([]string, 101)
	for i := range many {
		many[i] = fmt.Sprint(i)
	}
	for _, f := range []billing.SeatBalanceFilter{{CustomerIDs: many}, {CustomerAliases: many}} {
		if _, err := svc.ListSeatBalances(context.Background(), a, f, billing.ListParams{}); billing.CodeOf(err) != billing.CodeValidationFailed {
			t.Fatalf("101 customers in a filter: %v, want validation_failed", err)
		}
	}
	if _, err := svc.ListSeatBalances(context.Background(), a, billing.SeatBalanceFilter{CustomerIDs: many[:100]}, billing.ListParams{}); err != nil {
		t.Fatalf("100 customer ids: %v", err)
	}
}
