package billing_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/billingd/billing"
	"github.com/billingd/billing/storage/memstore"
)

// A Service on the in-memory store: create an account, an API key and a usage
// metric, then list the account's metrics.
func Example() {
	ctx := context.Background()
	store := memstore.New()
	defer store.Close()
	svc, err := billing.New(store, &billing.Config{
		// Fixed clock for a deterministic example; leave Now unset in
		// production.
		Now: func() time.Time { return time.Date(2024, 7, 30, 12, 0, 0, 0, time.UTC) },
	})
	if err != nil {
		panic(err)
	}
	account, err := svc.CreateAccount(ctx, billing.CreateAccountParams{Name: "Acme"})
	if err != nil {
		panic(err)
	}
	key, err := svc.CreateAPIKey(ctx, account.ID)
	if err != nil {
		panic(err)
	}
	if _, err := svc.Authenticate(ctx, key.ID, key.Secret); err != nil {
		panic(err)
	}
	_, err = svc.CreateUsageMetric(ctx, account.ID, billing.CreateUsageMetricParams{
		UsageMetricParams: billing.UsageMetricParams{
			Name:                "Storage",
			MetricType:          billing.MetricTypeSimple,
			EventType:           "storage_used",
			AggregationType:     billing.AggregationSum,
			AggregationProperty: "gigabytes",
			Unit:                "GB",
		},
	})
	if err != nil {
		panic(err)
	}
	page, err := svc.ListUsageMetrics(ctx, account.ID, billing.UsageMetricFilter{}, billing.ListParams{})
	if err != nil {
		panic(err)
	}
	for _, m := range page.Items {
		fmt.Println(m.Name, m.AggregationType, m.AggregationProperty, m.CreatedAt.Format(time.RFC3339))
	}
	fmt.Println("total:", page.TotalResultSize)
	// Output:
	// Storage SUM gigabytes 2024-07-30T12:00:00Z
	// total: 1
}

// exampleCustomer is the start of the examples that bill a customer: the
// steps of the package example above (a Service on the in-memory store, its
// clock fixed at now, an account "Acme"), then a customer of that account
// made of p. Call done when finished: it closes the store.
func exampleCustomer(now time.Time, p billing.CustomerParams) (svc *billing.Service, account *billing.Account, customer *billing.Customer, done func()) {
	ctx := context.Background()
	store := memstore.New()
	svc, err := billing.New(store, &billing.Config{Now: func() time.Time { return now }})
	if err == nil {
		account, err = svc.CreateAccount(ctx, billing.CreateAccountParams{Name: "Acme"})
	}
	if err == nil {
		customer, err = svc.CreateCustomer(ctx, account.ID, p)
	}
	if err != nil {
		panic(err)
	}
	return svc, account, customer, func() { store.Close() }
}

// Invalid requests report every invalid field at once, with stable codes.
func ExampleCodeOf() {
	svc, _ := billing.New(memstore.New(), nil)
	_, err := svc.CreateUsageMetric(context.Background(), "any-account", billing.CreateUsageMetricParams{
		UsageMetricParams: billing.UsageMetricParams{Name: "Calls", MetricType: "SIMPLE", AggregationType: "SUM"},
	})
	fmt.Println(billing.CodeOf(err))
	for _, e := range billing.Errors(err) {
		fmt.Printf("%s: %s\n", e.Field, e.Message)
	}
	// Output:
	// validation_failed
	// eventType: eventType is required
	// aggregationProperty: aggregationProperty is required for SUM metrics
}

// The invoice flow: create an invoice for a customer, add a line, send it.
// Sending finalizes the invoice (number, dates, journal) and queues the
// e-mail to the customer's billing contacts.
func ExampleService_SendInvoice() {
	ctx := context.Background()
	svc, account, customer, done := exampleCustomer(time.Date(2024, 7, 30, 12, 0, 0, 0, time.UTC), billing.CustomerParams{
		LegalName: "Globex Ltd",
		Contacts:  []billing.Contact{{Name: "Ann", Email: "ann@globex.test", BillingPreference: billing.BillingPreferencePrimary}},
	})
	defer done()
	inv, err := svc.CreateInvoice(ctx, account.ID, billing.InvoiceParams{Currency: billing.CurrencyGBP, CustomerID: customer.ID})
	if err != nil {
		panic(err)
	}
	_, err = svc.CreateInvoiceLineItem(ctx, account.ID, inv.ID, billing.InvoiceLineItemParams{
		Title:       "Consulting",
		Quantity:    new(billing.MustDecimal("3")),
		Rate:        new(billing.MustDecimal("0.335")),
		TaxRate:     new(billing.MustDecimal("0.2")),
		ExternalIDs: []billing.KeyValue{},
	})
	if err != nil {
		panic(err)
	}
	inv, err = svc.SendInvoice(ctx, account.ID, inv.ID)
	if err != nil {
		panic(err)
	}
	fmt.Println(inv.Status, inv.InvoiceNumber, inv.CustomerEmails)
	fmt.Println("net", inv.NetTotal, "tax", inv.TotalTax, "gross", inv.GrossTotal, inv.Currency)
	fmt.Println("issued", inv.IssueDate, "due", inv.DueDate, inv.PaymentStatus)
	// Output:
	// SENT INV00001 [ann@globex.test]
	// net 1.01 tax 0.20 gross 1.21 GBP
	// issued 2024-07-30 due 2024-08-29 UNPAID
}

// Prepaid credit: grant a customer 100.00 USD, then finalize an invoice of
// 60.00 with the credit applied. The invoice gets a line for the credit
// used (BURNDOWN, with the grant's id) and nothing is due; 40.00 is left.

func ExampleService_ApplyCredits() {
	ctx := context.Background()
	svc, account, customer, done := exampleCustomer(time.Date(2024, 7, 30, 12, 0, 0, 0, time.UTC), billing.CustomerParams{LegalName: "Globex Ltd"})
	defer done()
	// Free credit is a discount before tax; paid credit is money on account.
	for _, g := range []billing.CreditGrantParams{
		{Name: "Welcome", Amount: new(billing.MustDecimal("20.00"))},
		{Name: "Prepaid", Amount: new(billing.MustDecimal("100.00")), CostOfCredit: new(billing.MustDecimal("100.00"))},
	} {
		g.CustomerID, g.CreditUnitType, g.Currency = customer.ID, billing.CreditUnitCurrency, billing.CurrencyUSD
		if _, err := svc.CreateCreditGrant(ctx, account.ID, g); err != nil {
			panic(err)
		}
	}
	inv, err := svc.CreateInvoice(ctx, account.ID, billing.InvoiceParams{Currency: billing.CurrencyUSD, CustomerID: customer.ID})
	if err != nil {
		panic(err)
	}
	_, err = svc.CreateInvoiceLineItem(ctx, account.ID, inv.ID, billing.InvoiceLineItemParams{
		Title: "Platform", Quantity: new(billing.MustDecimal("1")), Rate: new(billing.MustDecimal("50.00")),
		TaxRate: new(billing.MustDecimal("0.2")), ExternalIDs: []billing.KeyValue{},
	})
	if err != nil {
		panic(err)
	}
	inv, err = svc.ApplyCredits(ctx, account.ID, inv.ID) // the draft stays a draft
	if err != nil {
		panic(err)
	}
	lines, err := svc.ListInvoiceLineItems(ctx, account.ID, inv.ID, billing.LineItemFilter{}, billing.ListParams{})
	if err != nil {
		panic(err)
	}
	for _, l := range lines.Items {
		fmt.Println(l.Title, l.NetTotal, l.TotalTax, l.GrossTotal)
	}
	fmt.Println(inv.Status, "net", inv.NetTotal, "tax", inv.TotalTax, "total", inv.GrossTotal)
	for _, a := range inv.CreditApplications {
		fmt.Println("Credit applied:", a.Name, a.Amount)
	}
	fmt.Println("due", inv.AmountDue)
	inv, err = svc.FinalizeInvoice(ctx, account.ID, inv.ID)
	if err != nil {
		panic(err)
	}
	fmt.Println(inv.Status, inv.PaymentStatus, inv.CreditBalances)
	// Output:
	// Platform 50.00 10.00 60.00
	// Credit applied: Welcome -20.00 -4.00 -24.00
	// DRAFT net 30.00 tax 6.00 total 36.00
	// Credit applied: Prepaid 36.00
	// due 0.00
	// FINAL PAID Remaining credit: 64.00 USD
}

// A subscription that invoices itself: a monthly fixed fee billed in
// advance from 15 July, activated at once. One run of the engine on 2
// September bills every period that has started (catch-up): a prorated
// first period, then the full months. Running it again bills nothing twice.

func ExampleService_RunBilling() {
	ctx := context.Background()
	now := time.Date(2024, 9, 2, 9, 0, 0, 0, time.UTC)
	svc, account, customer, done := exampleCustomer(now, billing.CustomerParams{LegalName: "Globex Ltd"})
	defer done()
	product, err := svc.CreateProduct(ctx, account.ID, billing.CreateProductParams{Name: "Platform"})
	if err != nil {
		panic(err)
	}
	fee := billing.MustDecimal("31.00")
	price, err := svc.CreatePrice(ctx, account.ID, billing.CreatePriceParams{
		ProductID: product.ID, Name: "Platform fee", Currency: billing.CurrencyGBP,
		BillingFrequency: billing.FrequencyMonthly, BillingType: billing.BillingTypeInAdvance,
		Structure: billing.PriceStructure{PricingType: billing.PricingFixed, Price: &fee},
	})
	if err != nil {
		panic(err)
	}
	start, _ := billing.ParseDate("2024-07-15")
	no, day := false, 1
	_, err = svc.CreateBillingSchedule(ctx, account.ID, billing.BillingScheduleParams{
		CustomerID: customer.ID, StartDate: &start, AutoIssueInvoices: &no, IsDraft: &no,
		RecurrenceDayOfMonth: &day,
		Phases:               []billing.PhaseParams{{StartDate: &start, PriceIDs: []string{price.ID}}},
	})
	if err != nil {
		panic(err)
	}
	run, err := svc.RunBilling(ctx, now)
	if err != nil {
		panic(err)
	}
	again, err := svc.RunBilling(ctx, now)
	if err != nil {
		panic(err)
	}
	fmt.Println("created", run.InvoicesCreated, "then", again.InvoicesCreated)
	page, err := svc.ListInvoices(ctx, account.ID, billing.InvoiceFilter{SortOrder: billing.SortAsc}, billing.ListParams{})
	if err != nil {
		panic(err)
	}
	for _, inv := range page.Items {
		fmt.Println(inv.Status, inv.BillingPeriod.Start, inv.BillingPeriod.EndInclusive, inv.GrossTotal)
	}
	// Output:
	// created 3 then 0
	// DRAFT 2024-07-15 2024-07-31 17.00
	// DRAFT 2024-08-01 2024-08-31 31.00
	// DRAFT 2024-09-01 2024-09-30 31.00
}

// A receiver checks each webhook with VerifyWebhook before trusting it, and
// de-duplicates on the webhook-id header (a notification may arrive twice).
func ExampleVerifyWebhook() {
	secret := "whsec_" + base64.StdEncoding.EncodeToString([]byte("a secret of at least 24 bytes"))
	body := []byte(`{"id":"n1","type":"INVOICE_ISSUED"}`)

	// What billingd sends (computed here to make the example self-contained).
	ts := time.Now().Unix()
	key, _ := base64.StdEncoding.DecodeString(secret[len("whsec_"):])
	mac := hmac.New(sha256.New, key)
	fmt.Fprintf(mac, "%s.%d.%s", "n1", ts, body)
	h := http.Header{}
	h.Set("webhook-id", "n1")
	h.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
	h.Set("webhook-signature", "v1,"+base64.StdEncoding.EncodeToString(mac.Sum(nil)))

	fmt.Println(billing.VerifyWebhook(secret, h, body, 0))
	fmt.Println(billing.VerifyWebhook(secret, h, []byte(`{"id":"n1","type":"forged"}`), 0))
	// Output:
	// <nil>
	// billing: no webhook signature matches
}
