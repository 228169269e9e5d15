package httpserver

import (
	"bytes"
	"image"
	"image/png"
	"net/http"
	"strings"
	"testing"

	"github.com/billingd/billing"
	"github.com/billingd/billing/internal/pdftext"
)

// wantFile checks a file answer's Content-Type and Content-Disposition.
func wantFile(tb testing.TB, r response, contentType, disposition string) {
	tb.Helper()
	wantStatus(tb, r, http.StatusOK)
	if got := r.header.Get("Content-Type"); got != contentType {
		tb.Errorf("Content-Type = %q, want %q", got, contentType)
	}
	if got := r.header.Get("Content-Disposition"); got != disposition {
		tb.Errorf("Content-Disposition = %q, want %q", got, disposition)
	}
}

func TestDownloadInvoice(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	cust := e.customer("Müller GmbH")
	id := e.invoice(cust, `"purchaseOrderNumber":"PO-7"`)["id"].(string)
	e.create("/invoices/"+id+"/line-items", lineBody("Plan", "1", "10", "0.2", ""))

	t.Run("DraftIsNamedAfterItsID", func(t *testing.T) {
		r := e.get("/invoices/" + id + "/download")
		wantFile(t, r, "application/pdf", `attachment; filename="`+id+`.pdf"`)
		pdftext.Contains(t, pdftext.Text(t, r.body), "DRAFT", "Müller GmbH", "PO-7", "£12.00")
	})
	wantStatus(t, e.post("/invoices/"+id+"/finalize", ""), http.StatusOK)
	t.Run("FinalIsNamedAfterItsNumber", func(t *testing.T) {
		r := e.get("/invoices/" + id + "/download?format=pdf")
		wantFile(t, r, "application/pdf", `attachment; filename="INV00001.pdf"`)
		text := pdftext.Text(t, r.body)
		pdftext.Contains(t, text, "INV00001", "Müller GmbH", "£12.00")
		if strings.Contains(text, "DRAFT") {
			t.Error("the finalized invoice carries the DRAFT mark")
		}
	})
	t.Run("HTML", func(t *testing.T) {
		r := e.get("/invoices/" + id + "/download?format=html")
		wantFile(t, r, "text/html; charset=utf-8", "")
		if !bytes.Contains(r.body, []byte("INV00001")) || !bytes.Contains(r.body, []byte("Müller GmbH")) {
			t.Errorf("the HTML lacks the number or the customer")
		}
	})
	t.Run("ErrBadFormat", func(t *testing.T) {
		wantError(t, e.get("/invoices/"+id+"/download?format=docx"), http.StatusBadRequest, billing.CodeValidationFailed, "format")
		wantError(t, e.get("/invoices/"+id+"/download?fromat=pdf"), http.StatusBadRequest, billing.CodeValidationFailed, "fromat")
	})
	t.Run("ErrOtherAccount", func(t *testing.T) {
		_, other := e.newAccount("other")
		wantError(t, e.do(req{method: "GET", path: "/invoices/" + id + "/download", auth: other}), http.StatusNotFound, billing.CodeNotFound)
		wantError(t, e.get("/invoices/01939a3e-0000-7000-8000-000000000000/download"), http.StatusNotFound, billing.CodeNotFound)
		wantError(t, e.do(req{method: "GET", path: "/invoices/" + id + "/download", auth: "-"}), http.StatusUnauthorized, billing.CodeUnauthorized)
	})
}

func TestDownloadCreditNote(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	inv := e.sentInvoice(e.customer("ООО Ромашка"))
	cn := e.newDocument("/credit-notes", decode[map[string]any](t, e.get("/invoices/"+inv))["customerId"].(string),
		`"invoiceId":"`+inv+`"`, creditNoteAlways)["id"].(string)
	e.create("/credit-notes/"+cn+"/line-items", `{"creditNoteId":"`+cn+`","title":"Refund","quantity":"1","rate":"5","taxRate":"0.2","externalIds":[]}`)
	wantStatus(t, e.post("/credit-notes/"+cn+"/finalize", ""), http.StatusOK)
	r := e.get("/credit-notes/" + cn + "/download")
	wantFile(t, r, "application/pdf", `attachment; filename="CN00001.pdf"`)
	text := pdftext.Text(t, r.body)
	pdftext.Contains(t, text, "Credit note", "CN00001", "INV00001", "ООО Ромашка", "Refund")
	if !pdftext.Row(text, "Total credited", "£6.00") {
		t.Errorf("the credit note does not read Total credited £6.00:\n%s", text)
	}
	_, other := e.newAccount("other")
	wantError(t, e.do(req{method: "GET", path: "/credit-notes/" + cn + "/download", auth: other}), http.StatusNotFound, billing.CodeNotFound)
}

func TestMerchantLogoOverHTTP(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	var img bytes.Buffer
	if err := png.Encode(&img, image.NewGray(image.Rect(0, 0, 30, 10))); err != nil {
		t.Fatal(err)
	}
	wantError(t, e.get("/merchant-details/logo"), http.StatusNotFound, billing.CodeNotFound)
	wantError(t, e.do(req{method: "PUT", path: "/merchant-details/logo", body: img.String(), contentType: "text/plain"}),
		http.StatusUnsupportedMediaType, CodeUnsupportedMediaType)
	wantError(t, e.do(req{method: "PUT", path: "/merchant-details/logo", body: "not an image", contentType: "image/png"}),
		http.StatusBadRequest, billing.CodeValidationFailed)
	wantError(t, e.do(req{method: "PUT", path: "/merchant-details/logo", body: strings.Repeat("x", 1<<20+1), contentType: "image/jpeg"}),
		http.StatusRequestEntityTooLarge, CodePayloadTooLarge)

	r := e.do(req{method: "PUT", path: "/merchant-details/logo", body: img.String(), contentType: "image/png"})
	wantStatus(t, r, http.StatusOK)
	if md := decode[billing.MerchantDetails](t, r); md.LogoURL != billing.MerchantLogoPath {
		t.Errorf("logoUrl = %q, want %q", md.LogoURL, billing.MerchantLogoPath)
	}
	got := e.get("/merchant-details/logo")
	wantFile(t, got, "image/png", "")
	if cfg, err := png.DecodeConfig(bytes.NewReader(got.body)); err != nil || cfg.Width != 30 || cfg.Height != 10 {
		t.Errorf("GET logo: %+v, %v; want the 30x10 PNG", cfg, err)
	}
	_, other := e.newAccount("other")
	wantError(t, e.do(req{method: "GET", path: "/merchant-details/logo", auth: other}), http.StatusNotFound, billing.CodeNotFound)

	wantStatus(t, e.del("/merchant-details/logo"), http.StatusOK)
	wantError(t, e.get("/merchant-details/logo"), http.StatusNotFound, billing.CodeNotFound)
	wantError(t, e.del("/merchant-details/logo"), http.StatusNotFound, billing.CodeNotFound)
}
