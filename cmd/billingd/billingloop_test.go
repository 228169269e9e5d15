package main

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
)

func TestBillingLoopBillsAndStops(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, _ := billingtest.NewService(t, billingtest.WithBolt())
	account := billingtest.Account(t, svc, "acme")
	c, err := svc.CreateCustomer(ctx, account, billing.CustomerParams{LegalName: "C"})
	must(t, err)
	prod, err := svc.CreateProduct(ctx, account, billing.CreateProductParams{Name: "P"})
	must(t, err)
	amount := billing.MustDecimal("5.00")
	pr, err := svc.CreatePrice(ctx, account, billing.CreatePriceParams{ProductID: prod.ID, Name: "Plan", Currency: billing.CurrencyEUR,
		Structure:        billing.PriceStructure{PricingType: billing.PricingFixed, Price: &amount},
		BillingFrequency: billing.FrequencyMonthly, BillingType: billing.BillingTypeInAdvance})
	must(t, err)
	no, start := false, billing.DateOf(billingtest.Start)
	sc, err := svc.CreateBillingSchedule(ctx, account, billing.BillingScheduleParams{CustomerID: c.ID, StartDate: &start,
		AutoIssueInvoices: &no, IsDraft: &no, Phases: []billing.PhaseParams{{StartDate: &start, PriceIDs: []string{pr.ID}}}})
	must(t, err)

	loopCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		billingLoop(loopCtx, svc, slog.New(slog.DiscardHandler), time.Millisecond, func() time.Time { return billingtest.Start })
		close(done)
	}()
	deadline := time.After(10 * time.Second)
	for {
		got, err := svc.GetBillingSchedule(ctx, account, sc.ID)
		must(t, err)
		if got.LastInvoiceID != "" {
			break
		}
		select {
		case <-deadline:
			t.Fatal("the loop billed nothing within 10 s")
		case <-time.After(time.Millisecond):
		}
	}
	stop()
	<-done // the loop returns once its context is cancelled
	page, err := svc.ListInvoices(ctx, account, billing.InvoiceFilter{BillingScheduleID: sc.ID}, billing.ListParams{})
	must(t, err)
	if page.TotalResultSize != 1 {
		t.Errorf("%d invoices after many runs, want 1", page.TotalResultSize)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
