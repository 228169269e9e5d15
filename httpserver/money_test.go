package httpserver

import (
	"net/http"
	"testing"

	"github.com/billingd/billing"
)

// An oversized total is refused with 400 validation_failed on quantity, and
// the invoice stays readable, listable, finalizable and deletable over HTTP.
func TestOversizedTotalRefusedOverHTTP(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	customer := e.createAs(e.auth, "/customers", `{"legalName":"Acme"}`)
	inv := e.createAs(e.auth, "/invoices", `{"currency":"USD","customerId":"`+customer+`"}`)
	first := e.createAs(e.auth, "/invoices/"+inv+"/line-items", `{"title":"x","quantity":"99999999999999999999","rate":"1","taxRate":"0","externalIds":[]}`)
	wantError(t, e.post("/invoices/"+inv+"/line-items", `{"title":"x","quantity":"1","rate":"1","taxRate":"0","externalIds":[]}`),
		http.StatusBadRequest, billing.CodeValidationFailed, "quantity")
	for _, path := range []string{"/invoices/" + inv, "/invoices", "/invoices?status=DRAFT", "/invoices/" + inv + "/line-items"} {
		wantStatus(t, e.get(path), http.StatusOK)
	}
	wantStatus(t, e.del("/invoices/"+inv+"/line-items/"+first), http.StatusOK)
	e.createAs(e.auth, "/invoices/"+inv+"/line-items", `{"title":"x","quantity":"1","rate":"1","taxRate":"0","externalIds":[]}`)
	wantStatus(t, e.post("/invoices/"+inv+"/finalize", ""), http.StatusOK)
}
