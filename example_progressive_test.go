package billing_test

import (
	"context"
	"fmt"
	"time"

	"github.com/billingd/billing"
)

// Progressive billing: with a thresholdAmount, a run in the middle of the
// month issues an interim invoice for the usage so far, and the month's
// final invoice deducts it line by line.
//
// Long on purpose: an example reads top to bottom; the set-up of a metric,
// a price, a schedule and usage is part of what it shows.
func ExampleBillingScheduleParams_progressive() {
	ctx := context.Background()
	now := time.Date(2024, 8, 2, 9, 0, 0, 0, time.UTC)
	svc, account, customer, done := exampleCustomer(now, billing.CustomerParams{LegalName: "Globex Ltd"})
	defer done()
	metric, err := svc.CreateUsageMetric(ctx, account.ID, billing.CreateUsageMetricParams{UsageMetricParams: billing.UsageMetricParams{
		Name: "API calls", MetricType: billing.MetricTypeSimple, EventType: "call", AggregationType: billing.AggregationCount}})
	if err != nil {
		panic(err)
	}
	product, err := svc.CreateProduct(ctx, account.ID, billing.CreateProductParams{Name: "API"})
	if err != nil {
		panic(err)
	}
	rate := billing.MustDecimal("0.50")
	price, err := svc.CreatePrice(ctx, account.ID, billing.CreatePriceParams{
		ProductID: product.ID, Name: "API calls", Currency: billing.CurrencyGBP,
		BillingFrequency: billing.FrequencyMonthly, BillingType: billing.BillingTypeInArrears,
		Structure: billing.PriceStructure{PricingType: billing.PricingLinear, PricePerUnit: &rate, UsageMetricID: metric.ID},
	})
	if err != nil {
		panic(err)
	}
	start, _ := billing.ParseDate("2024-07-01")
	no, threshold := false, billing.MustDecimal("10.00")
	sc, err := svc.CreateBillingSchedule(ctx, account.ID, billing.BillingScheduleParams{
		CustomerID: customer.ID, StartDate: &start, AutoIssueInvoices: &no, IsDraft: &no, ThresholdAmount: &threshold,
		Phases: []billing.PhaseParams{{StartDate: &start, PriceIDs: []string{price.ID}}},
	})
	if err != nil {
		panic(err)
	}
	calls := func(n int, at time.Time) {
		var batch billing.UsageEventBatchParams
		for range n {
			batch.Events = append(batch.Events, billing.UsageEventParams{CustomerAlias: customer.ID, EventType: "call", EventTimestamp: &at})
		}
		if _, err := svc.CreateUsageEventBatch(ctx, account.ID, batch); err != nil {
			panic(err)
		}
	}
	calls(25, time.Date(2024, 7, 10, 0, 0, 0, 0, time.UTC)) // 12.50: past the threshold
	if _, err := svc.RunBilling(ctx, time.Date(2024, 7, 11, 0, 0, 0, 0, time.UTC)); err != nil {
		panic(err)
	}
	calls(5, time.Date(2024, 7, 20, 0, 0, 0, 0, time.UTC)) // 2.50 more: below it
	if _, err := svc.RunBilling(ctx, now); err != nil {
		panic(err)
	}
	page, err := svc.ListInvoices(ctx, account.ID, billing.InvoiceFilter{BillingScheduleID: sc.ID, SortOrder: billing.SortAsc}, billing.ListParams{})
	if err != nil {
		panic(err)
	}
	for _, inv := range page.Items {
		lines, err := svc.ListInvoiceLineItems(ctx, account.ID, inv.ID, billing.LineItemFilter{}, billing.ListParams{})
		if err != nil {
			panic(err)
		}
		fmt.Println("invoice", inv.GrossTotal)
		for _, l := range lines.Items {
			fmt.Printf("  %s: %s × %s = %s\n", l.Title, l.Quantity, l.Rate, l.NetTotal)
		}
	}
	// Output:
	// invoice 12.50
	//   API calls: 25 × 0.50 = 12.50
	// invoice 2.50
	//   API calls: 30 × 0.50 = 15.00
	//   Previously invoiced: API calls: -25 × 0.50 = -12.50
}

// Auto top-up: when paying an invoice takes the customer's credit below
// the threshold, a top-up grant is bought with an issued purchase invoice.
func ExampleAutoTopUpParams() {
	ctx := context.Background()
	now := time.Date(2024, 8, 2, 9, 0, 0, 0, time.UTC)
	svc, account, customer, done := exampleCustomer(now, billing.CustomerParams{LegalName: "Globex Ltd"})
	defer done()
	amount, threshold, topUp := billing.MustDecimal("100.00"), billing.MustDecimal("20.00"), billing.MustDecimal("50.00")
	wallet, err := svc.CreateCreditGrant(ctx, account.ID, billing.CreditGrantParams{
		CustomerID: customer.ID, Name: "Wallet", CreditUnitType: billing.CreditUnitCurrency, Currency: billing.CurrencyGBP,
		Amount: &amount, CostOfCredit: &amount,
		AutoTopUp: &billing.AutoTopUpParams{ThresholdAmount: &threshold, TopUpAmount: &topUp},
	})
	if err != nil {
		panic(err)
	}
	inv, err := svc.CreateInvoice(ctx, account.ID, billing.InvoiceParams{Currency: billing.CurrencyGBP, CustomerID: customer.ID})
	if err != nil {
		panic(err)
	}
	one, fee, zero := billing.MustDecimal("1"), billing.MustDecimal("90.00"), billing.MustDecimal("0")
	if _, err := svc.CreateInvoiceLineItem(ctx, account.ID, inv.ID, billing.InvoiceLineItemParams{
		Title: "Services", Quantity: &one, Rate: &fee, TaxRate: &zero, ExternalIDs: []billing.KeyValue{}}); err != nil {
		panic(err)
	}
	if _, err := svc.SendInvoice(ctx, account.ID, inv.ID); err != nil {
		panic(err)
	}
	if _, err := svc.ApplyCredits(ctx, account.ID, inv.ID); err != nil {
		panic(err)
	}
	rule, err := svc.GetCreditGrant(ctx, account.ID, wallet.ID)
	if err != nil {
		panic(err)
	}
	up, err := svc.GetCreditGrant(ctx, account.ID, rule.AutoTopUp.LastTopUpGrantID)
	if err != nil {
		panic(err)
	}
	purchase, err := svc.GetInvoice(ctx, account.ID, up.InvoiceID)
	if err != nil {
		panic(err)
	}
	balances, err := svc.GetCreditBalances(ctx, account.ID, customer.ID, nil)
	if err != nil {
		panic(err)
	}
	fmt.Println(up.Name, up.OriginalAmount, purchase.Status, purchase.GrossTotal)
	fmt.Println("balance", balances.Items[0].Balance, "armed", rule.AutoTopUp.Armed)
	// Output:
	// Wallet (top-up) 50.00 SENT 50.00
	// balance 60.00 armed true
}
