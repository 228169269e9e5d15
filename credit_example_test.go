package billing_test

import (
	"context"
	"fmt"
	"time"

	"github.com/billingd/billing"
	"github.com/billingd/billing/storage/memstore"
)

// Prepaid credit: grant a customer 100.00 USD, then finalize an invoice of
// 60.00 with the credit applied. The invoice gets a line for the credit
// used (BURNDOWN, with the grant's id) and nothing is due; 40.00 is left.
//
// Long on purpose: a godoc example is self-contained, so that it can be
// copied as is.
func ExampleService_ApplyCredits() {
	ctx := context.Background()
	store := memstore.New()
	defer store.Close()
	svc, err := billing.New(store, &billing.Config{
		Now: func() time.Time { return time.Date(2024, 7, 30, 12, 0, 0, 0, time.UTC) },
	})
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
	grant, err := svc.CreateCreditGrant(ctx, account.ID, billing.CreditGrantParams{
		CustomerID: customer.ID, Name: "Prepaid", CreditUnitType: billing.CreditUnitCurrency,
		Currency: billing.CurrencyUSD, Amount: new(billing.MustDecimal("100.00")),
	})
	if err != nil {
		panic(err)
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
	inv, err = svc.ApplyCredits(ctx, account.ID, inv.ID)
	if err != nil {
		panic(err)
	}
	lines, err := svc.ListInvoiceLineItems(ctx, account.ID, inv.ID, billing.LineItemFilter{}, billing.ListParams{})
	if err != nil {
		panic(err)
	}
	for _, l := range lines.Items {
		fmt.Println(l.Title, l.GrossTotal, l.CreditGrantID == grant.ID)
	}
	fmt.Println(inv.Status, "due", inv.AmountDue, inv.PaymentStatus)
	fmt.Println(inv.CreditBalances)
	grant, err = svc.GetCreditGrant(ctx, account.ID, grant.ID)
	if err != nil {
		panic(err)
	}
	fmt.Println(grant.Status, grant.CurrentBalance)
	// Output:
	// Platform 60.00 false
	// Credit applied: Prepaid -60.00 true
	// FINAL due 0.00 PAID
	// Remaining credit: 40.00 USD
	// ACTIVE 40.00
}
