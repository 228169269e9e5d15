package billing_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
	"github.com/billingd/billing/storage/pgstore/pgtest"
)

// BenchmarkListPageAtScale measures a page of 100 usage events and of 100
// invoices of one account at two sizes of the account, on bbolt and (under
// BILLINGD_TEST_POSTGRES) on PostgreSQL: the first page, the page after it
// (through its cursor) and a page of one customer's. A list costs its page
// (listcount.go) when the larger size costs no more than the smaller.
// With BILLINGD_LIST_BENCH_SCALE=full the sizes are 10,000 and 1,000,000
// events and 1,000 and 100,000 invoices (issue 33's); without it 10,000
// and 100,000 events and 1,000 and 10,000 invoices. Recorded in
// BENCHMARKS.md:
//
//	BILLINGD_LIST_BENCH_SCALE=full go test -run '^$' -bench ListPageAtScale -benchtime 200x -timeout 60m .
func BenchmarkListPageAtScale(b *testing.B) {
	events, invoices := []int{10_000, 100_000}, []int{1_000, 10_000}
	if os.Getenv("BILLINGD_LIST_BENCH_SCALE") == "full" {
		events, invoices = []int{10_000, 1_000_000}, []int{1_000, 100_000}
	}
	backends := []struct {
		name string
		open func(b *testing.B) billing.Store
	}{{"bbolt", func(b *testing.B) billing.Store { return benchStore(b, true) }}}
	if pgtest.Enabled() {
		backends = append(backends, struct {
			name string
			open func(b *testing.B) billing.Store
		}{"postgres", func(b *testing.B) billing.Store { return pgtest.Open(b, nil) }})
	}
	for _, be := range backends {
		for _, n := range events {
			b.Run(fmt.Sprintf("%s/events=%d", be.name, n), func(b *testing.B) {
				svc, acct := seedEvents(b, be.open(b), n)
				benchListPages(b, func(p billing.ListParams, one bool) (int, string, error) {
					f := billing.UsageEventFilter{}
					if one {
						f.CustomerAlias = "customer-0000000001"
					}
					page, err := svc.ListUsageEvents(context.Background(), acct, f, p)
					return len(page.Items), page.After, err
				})
			})
		}
		for _, n := range invoices {
			b.Run(fmt.Sprintf("%s/invoices=%d", be.name, n), func(b *testing.B) {
				svc, acct, cust := seedInvoices(b, be.open(b), n)
				benchListPages(b, func(p billing.ListParams, one bool) (int, string, error) {
					f := billing.InvoiceFilter{}
					if one {
						f.CustomerID = cust
					}
					page, err := svc.ListInvoices(context.Background(), acct, f, p)
					return len(page.Items), page.After, err
				})
			})
		}
	}
}

// benchListPages measures the first page of 100, the page after it and
// the first page of one customer's.
func benchListPages(b *testing.B, list func(p billing.ListParams, oneCustomer bool) (int, string, error)) {
	_, after, err := list(billing.ListParams{Limit: 100}, false)
	if err != nil || after == "" {
		b.Fatalf("first page: %v (after %q)", err, after)
	}
	for _, c := range []struct {
		name string
		p    billing.ListParams
		one  bool
	}{{"first", billing.ListParams{Limit: 100}, false}, {"next", billing.ListParams{Limit: 100, After: after}, false}, {"customer", billing.ListParams{Limit: 100}, true}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if n, _, err := list(c.p, c.one); err != nil || n != 100 {
					b.Fatalf("%d items, %v", n, err)
				}
			}
		})
	}
}

// seedEvents stores n events of one account, in batches of 1,000, over
// ten customers, the batches' events one second apart.
func seedEvents(b *testing.B, st billing.Store, n int) (*billing.Service, string) {
	b.Helper()
	svc, _ := billingtest.NewService(b, billingtest.WithStore(st), billingtest.WithUUIDs())
	acct := billingtest.Account(b, svc, "bench")
	ctx := context.Background()
	start := billingtest.Start.Add(-24 * time.Hour)
	batch := make([]billing.UsageEventParams, 1000)
	for i := 0; i < n; i += len(batch) {
		for j := range batch {
			batch[j] = referenceEvent(fmt.Sprintf("customer-%010d", (i+j)%10), "api_call", i+j, start.Add(time.Duration(i+j)*time.Millisecond))
		}
		if _, err := svc.CreateUsageEventBatch(ctx, acct, billing.UsageEventBatchParams{Events: batch}); err != nil {
			b.Fatal(err)
		}
	}
	return svc, acct
}

// seedInvoices stores n draft invoices of one account with a line each,
// over 10 customers; it returns one of the customers.
func seedInvoices(b *testing.B, st billing.Store, n int) (*billing.Service, string, string) {
	b.Helper()
	svc, _ := billingtest.NewService(b, billingtest.WithStore(st), billingtest.WithUUIDs())
	acct := billingtest.Account(b, svc, "bench")
	ctx := context.Background()
	customers := make([]string, 10)
	for i := range customers {
		customers[i] = must(svc.CreateCustomer(ctx, acct, billing.CustomerParams{LegalName: fmt.Sprintf("Customer %03d", i)})).of(b, "CreateCustomer").ID
	}
	for i := range n {
		inv := must(svc.CreateInvoice(ctx, acct, billing.InvoiceParams{Currency: "EUR", CustomerID: customers[i%len(customers)]})).of(b, "CreateInvoice")
		must(svc.CreateInvoiceLineItem(ctx, acct, inv.ID, invLine("Work", "1", "10", "0"))).of(b, "CreateInvoiceLineItem")
	}
	return svc, acct, customers[1]
}
