package billing_test

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"testing"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
)

func TestMerchantLogo(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, _ := billingtest.NewService(t)
	acct := billingtest.Account(t, svc, "acme")
	if _, err := svc.GetMerchantLogo(ctx, acct); billing.CodeOf(err) != billing.CodeNotFound {
		t.Fatalf("GetMerchantLogo without a logo: %v, want not_found", err)
	}
	if _, err := svc.PutMerchantLogo(ctx, acct, []byte("<svg/>")); billing.CodeOf(err) != billing.CodeValidationFailed {
		t.Fatalf("PutMerchantLogo of SVG: %v, want validation_failed", err)
	}
	var src bytes.Buffer
	if err := png.Encode(&src, image.NewGray(image.Rect(0, 0, 900, 90))); err != nil {
		t.Fatal(err)
	}
	md, err := svc.PutMerchantLogo(ctx, acct, src.Bytes())
	if err != nil || md.LogoURL != billing.MerchantLogoPath {
		t.Fatalf("PutMerchantLogo: %+v, %v; want logoUrl %s", md, err, billing.MerchantLogoPath)
	}
	stored, err := svc.GetMerchantLogo(ctx, acct)
	if err != nil {
		t.Fatalf("GetMerchantLogo: %v", err)
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(stored))
	if err != nil || cfg.Width != 600 || cfg.Height != 60 {
		t.Fatalf("the stored logo is %+v (%v); want a 600x60 PNG", cfg, err)
	}
	// Replacing the details keeps pointing at the uploaded logo.
	md, err = svc.PutMerchantDetails(ctx, acct, billing.MerchantDetails{LegalCompanyName: "Acme", LogoURL: "https://elsewhere.test/x.png"})
	if err != nil || md.LogoURL != billing.MerchantLogoPath {
		t.Fatalf("PutMerchantDetails: %+v, %v; want logoUrl %s", md, err, billing.MerchantLogoPath)
	}
	if md, err = svc.DeleteMerchantLogo(ctx, acct); err != nil || md.LogoURL != "" || md.LegalCompanyName != "Acme" {
		t.Fatalf("DeleteMerchantLogo: %+v, %v; want the details without logoUrl", md, err)
	}
	if _, err := svc.GetMerchantLogo(ctx, acct); billing.CodeOf(err) != billing.CodeNotFound {
		t.Errorf("GetMerchantLogo after delete: %v, want not_found", err)
	}
	if _, err := svc.DeleteMerchantLogo(ctx, acct); billing.CodeOf(err) != billing.CodeNotFound {
		t.Errorf("DeleteMerchantLogo twice: %v, want not_found", err)
	}
}
