package billing_test

import (
	"context"
	"testing"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
)

func createProduct(tb testing.TB, svc *billing.Service, account, name string) *billing.Product {
	tb.Helper()
	return must(svc.CreateProduct(context.Background(), account, billing.CreateProductParams{Name: name})).of(tb, "CreateProduct")
}

func TestProducts(t *testing.T) {
	t.Parallel()
	stores(t, func(t *testing.T, svc *billing.Service, _ *billingtest.Clock) {
		ctx, a, b := tenants(t, svc)
		if _, err := svc.CreateProduct(ctx, a, billing.CreateProductParams{}); billing.CodeOf(err) != billing.CodeValidationFailed {
			t.Fatalf("product without a name: %v", err)
		}
		p1 := createProduct(t, svc, a, "Platform")
		p2 := createProduct(t, svc, a, "Support")
		got, err := svc.GetProduct(ctx, a, p1.ID)
		if err != nil || got.Name != "Platform" || !got.CreatedAt.Equal(billingtest.Start) {
			t.Fatalf("GetProduct = %+v, %v", got, err)
		}
		if _, err := svc.GetProduct(ctx, b, p1.ID); billing.CodeOf(err) != billing.CodeNotFound {
			t.Fatalf("B reads A's product: %v", err)
		}
		page, err := svc.ListProducts(ctx, a, "", billing.ListParams{})
		if err != nil || page.TotalResultSize != 2 || page.Items[0].ID != p2.ID {
			t.Fatalf("ListProducts = %+v, %v", page, err)
		}
		page, err = svc.ListProducts(ctx, a, billing.SortAsc, billing.ListParams{Limit: 1})
		if err != nil || len(page.Items) != 1 || page.Items[0].ID != p1.ID || page.After == "" {
			t.Fatalf("ListProducts ASC = %+v, %v", page, err)
		}
		if page, err := svc.ListProducts(ctx, b, "", billing.ListParams{}); err != nil || page.TotalResultSize != 0 {
			t.Fatalf("B lists A's products: %+v, %v", page, err)
		}
	})
}

func TestTaxRates(t *testing.T) {
	t.Parallel()
	svc, _ := billingtest.NewService(t)
	ctx, a, b := tenants(t, svc)
	for _, tc := range []struct {
		name, amount string
		ok           bool
	}{{"Zero", "0", true}, {"One", "1", true}, {"Fraction", "0.20", true}, {"ErrNegative", "-0.01", false}, {"ErrAboveOne", "1.0001", false}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			amount := billing.MustDecimal(tc.amount)
			r, err := svc.CreateTaxRate(ctx, a, billing.CreateTaxRateParams{Name: "VAT", Amount: &amount})
			if !tc.ok {
				if billing.CodeOf(err) != billing.CodeValidationFailed || billing.Errors(err)[0].Field != "amount" {
					t.Fatalf("amount %s: %v, want validation_failed on amount", tc.amount, err)
				}
				return
			}
			if err != nil || r.Amount.String() != tc.amount {
				t.Fatalf("CreateTaxRate = %+v, %v", r, err)
			}
			if got, err := svc.GetTaxRate(ctx, a, r.ID); err != nil || got.Amount.String() != tc.amount {
				t.Fatalf("GetTaxRate = %+v, %v", got, err)
			}
			if _, err := svc.GetTaxRate(ctx, b, r.ID); billing.CodeOf(err) != billing.CodeNotFound {
				t.Fatalf("B reads A's tax rate: %v", err)
			}
		})
	}
	if _, err := svc.CreateTaxRate(ctx, a, billing.CreateTaxRateParams{Name: "VAT"}); billing.CodeOf(err) != billing.CodeValidationFailed {
		t.Fatalf("tax rate without amount: %v", err)
	}
}
