package billing_test

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"strings"
	"testing"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
	"github.com/billingd/billing/internal/pdftext"
	docrender "github.com/billingd/billing/render"
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

func TestThousandLineInvoicePaginates(t *testing.T) {
	t.Parallel()
	e := newDocEnv(t)
	inv := e.engineDraft(billing.CurrencyGBP, manyLines(1000, "1.00", func(i int) string { return fmt.Sprintf("Line %04d", i) }))
	e.finalize(inv.ID)
	d, err := e.svc.PrintableInvoice(e.ctx, e.acct, inv.ID)
	if err != nil || len(d.InvoiceLines) != 1000 {
		t.Fatalf("PrintableInvoice: %v, %d lines", err, len(d.InvoiceLines))
	}
	pdf, err := docrender.PDF(d)
	if err != nil {
		t.Fatalf("render.PDF: %v", err)
	}
	text := pdftext.Text(t, pdf)
	pages := pdftext.Pages(text)
	if len(pages) < 20 {
		t.Fatalf("1,000 lines on %d pages; want at least 20", len(pages))
	}
	for n, p := range pages {
		if want := fmt.Sprintf("Page %d of %d", n+1, len(pages)); !strings.Contains(p, want) || !strings.Contains(p, "INV00001") {
			t.Errorf("page %d lacks %q or the number", n+1, want)
		}
	}
	last := pages[len(pages)-1]
	if !pdftext.Row(last, "Line 1000", "1", "£1.00", "0%", "£1.00") || !pdftext.Row(last, "Amount due", "£1,000.00") {
		t.Errorf("the last page lacks the last line or the amount due:\n%s", last)
	}
	for i := 1; i <= 1000; i++ {
		if !strings.Contains(text, fmt.Sprintf("Line %04d ", i)) {
			t.Fatalf("line %d is missing from the PDF", i)
		}
	}
}
