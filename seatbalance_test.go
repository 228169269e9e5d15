package billing_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
)

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
