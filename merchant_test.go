package billing_test

import (
	"context"
	"testing"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
	"github.com/google/go-cmp/cmp"
)

func TestMerchantDetails(t *testing.T) {
	t.Parallel()
	stores(t, func(t *testing.T, svc *billing.Service, _ *billingtest.Clock) {
		ctx, a, b := tenants(t, svc)
		empty, err := svc.GetMerchantDetails(ctx, a)
		if err != nil || empty.LegalCompanyName != "" || empty.CustomFields == nil {
			t.Fatalf("details before any PUT = %+v, %v", empty, err)
		}
		md := billing.MerchantDetails{
			LegalCompanyName: "Seller Ltd", Email: "billing@seller.test", PrimaryColour: "#1a2B3c",
			Address:       &billing.Address{Line1: "1 Way", Town: "Leeds", Postcode: "LS1", Country: "GB"},
			USWireDetails: &billing.USWireDetails{BankName: "Bank", BankAddress: &billing.Address{Line1: "2 St", Town: "NYC", Postcode: "10001", Country: "US"}},
			CustomFields:  []billing.KeyValue{{Key: "VAT no", Value: "GB1"}},
		}
		put, err := svc.PutMerchantDetails(ctx, a, md)
		if err != nil {
			t.Fatal(err)
		}
		got, err := svc.GetMerchantDetails(ctx, a)
		if diff := cmp.Diff(put, got); err != nil || diff != "" {
			t.Fatalf("read back (-put +got):\n%s %v", diff, err)
		}
		if other, err := svc.GetMerchantDetails(ctx, b); err != nil || other.LegalCompanyName != "" {
			t.Fatalf("B sees A's details: %+v, %v", other, err)
		}
		// PUT replaces: fields left out are cleared.
		if got, err := svc.PutMerchantDetails(ctx, a, billing.MerchantDetails{LegalCompanyName: "New"}); err != nil || got.Address != nil || got.Email != "" {
			t.Fatalf("replace = %+v, %v", got, err)
		}
	})
}

func TestMerchantDetailsValidation(t *testing.T) {
	t.Parallel()
	svc, _ := billingtest.NewService(t)
	a := billingtest.Account(t, svc, "a")
	_, err := svc.PutMerchantDetails(context.Background(), a, billing.MerchantDetails{
		Email: "nope", PrimaryColour: "red", LegalCompanyName: "a\x02",
		USWireDetails: &billing.USWireDetails{BankAddress: &billing.Address{Line1: "x", Town: "y", Postcode: "z", Country: "usa"}},
		CustomFields:  []billing.KeyValue{{Value: "v"}},
	})
	want := []string{"usWireDetails.bankAddress.country", "legalCompanyName", "email", "primaryColour", "customFields[0].key"}
	if diff := cmp.Diff(want, errFields(t, err, billing.CodeValidationFailed)); diff != "" {
		t.Fatalf("invalid fields (-want +got):\n%s", diff)
	}
}
