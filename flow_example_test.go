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

// A subscription that invoices itself: a monthly fixed fee billed in
// advance from 15 July, activated at once. One run of the engine on 2
// September bills every period that has started (catch-up): a prorated
// first period, then the full months. Running it again bills nothing twice.
//
// Long on purpose: a godoc example is self-contained, so that it can be copied as is.
func ExampleService_RunBilling() {
	ctx := context.Background()
	store := memstore.New()
	defer store.Close()
	now := time.Date(2024, 9, 2, 9, 0, 0, 0, time.UTC)
	svc, err := billing.New(store, &billing.Config{Now: func() time.Time { return now }})
	if err != nil {
		panic(err)
	}
	account, err := svc.CreateAccount(ctx, billing.CreateAccountParams{Name: "Acme"})
	if err != nil {
		panic(err)
	}
	customer, err := svc.CreateCustomer(ctx, account.ID, billing.CustomerParams{LegalName: "Globex Ltd"})
	if err != nil {
		panic(err)
	}
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
