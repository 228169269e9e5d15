package billing_test

import (
	"context"
	"fmt"
	"time"

	"github.com/billingd/billing"
	"github.com/billingd/billing/storage/memstore"
)

// The invoice flow: create an invoice for a customer, add a line, send it.
// Sending finalizes the invoice (number, dates, journal) and queues the
// e-mail to the customer's billing contacts.
func ExampleService_SendInvoice() {
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
	customer, err := svc.CreateCustomer(ctx, account.ID, billing.CustomerParams{
		LegalName: "Globex Ltd",
		Contacts:  []billing.Contact{{Name: "Ann", Email: "ann@globex.test", BillingPreference: billing.BillingPreferencePrimary}},
	})
	if err != nil {
		panic(err)
	}
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
