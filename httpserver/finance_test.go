package httpserver

import (
	"net/http"
	"strings"
	"testing"

	"github.com/billingd/billing/internal/pdftext"
)

// This file walks the defects finance found in issued documents, each
// through the HTTP server: tax by customer status, voids, credits, dates
// of money, names, and what a document says.

// taxedCustomer creates a customer of tax status st and returns its id.
func (e *env) taxedCustomer(name, st string) string {
	e.tb.Helper()
	return e.create("/customers", `{"legalName":"`+name+`","taxStatus":"`+st+`",
		"address":{"line1":"1 Road","town":"Leeds","postcode":"LS1 1AA","country":"GB"}}`)
}

// pdfText downloads a document's PDF and returns its text.
func (e *env) pdfText(path string) string {
	e.tb.Helper()
	r := e.get(path + "/download")
	wantStatus(e.tb, r, http.StatusOK)
	return pdftext.Text(e.tb, r.body)
}

// TestUntaxedCustomersOverHTTP: a REVERSE_CHARGED or TAX_EXEMPT customer's
// manual line with a tax rate is refused on taxRate; a document whose
// customer became untaxed after its lines were added is refused at
// finalization, naming the lines; the reason text is printed only on a
// document without tax.
func TestUntaxedCustomersOverHTTP(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	for _, st := range []string{"REVERSE_CHARGED", "TAX_EXEMPT"} {
		cust := e.taxedCustomer("Untaxed "+st, st)
		inv := "/invoices/" + e.invoice(cust, "")["id"].(string)
		errs := wantError(t, e.post(inv+"/line-items", lineBody("Consulting", "1", "100", "0.19", "")), http.StatusBadRequest, "validation_failed", "taxRate")
		if !strings.Contains(errs[0].Message, st) {
			t.Errorf("%s: the refusal does not say why: %q", st, errs[0].Message)
		}
		wantStatus(t, e.post(inv+"/line-items", lineBody("Consulting", "1", "100", "0", "")), http.StatusCreated)
		got := decode[map[string]any](t, e.post(inv+"/finalize", ""))
		wantTotals(t, st, got, "100.00", "0.00", "100.00")
		text := e.pdfText(inv)
		want := map[string]string{"REVERSE_CHARGED": "Reverse charge", "TAX_EXEMPT": "Tax exempt"}[st]
		if !strings.Contains(text, want) {
			t.Errorf("%s: the PDF does not say %q:\n%s", st, want, text)
		}

		// A standalone credit note follows the same rule.
		cn := "/credit-notes/" + e.creditNote(cust, "")["id"].(string)
		wantError(t, e.post(cn+"/line-items", `{"creditNoteId":"`+strings.TrimPrefix(cn, "/credit-notes/")+`","title":"Refund","quantity":"1","rate":"5","taxRate":"0.2","externalIds":[]}`),
			http.StatusBadRequest, "validation_failed", "taxRate")
	}

	// The status changes after the lines were added: finalization refuses,
	// naming the line, and nothing is numbered.
	cust := e.taxedCustomer("Changes Ltd", "TAXED")
	inv := "/invoices/" + e.invoice(cust, "")["id"].(string)
	wantStatus(t, e.post(inv+"/line-items", lineBody("Plan", "1", "169", "0.19", "")), http.StatusCreated)
	wantStatus(t, e.post(inv+"/line-items", lineBody("Setup", "1", "10", "0", "")), http.StatusCreated)
	wantStatus(t, e.put("/customers/"+cust, `{"legalName":"Changes Ltd","taxStatus":"REVERSE_CHARGED"}`), http.StatusOK)
	for _, op := range []string{"/finalize", "/send"} {
		errs := wantError(t, e.post(inv+op, ""), http.StatusConflict, "invalid_state")
		if msg := errs[0].Message; !strings.Contains(msg, `0 ("Plan", taxRate 0.19)`) || strings.Contains(msg, "Setup") {
			t.Errorf("%s: the refusal does not name the taxed line: %q", op, msg)
		}
	}
	if got := decode[map[string]any](t, e.get(inv)); got["status"] != "DRAFT" || got["invoiceNumber"] != nil {
		t.Errorf("a refused finalization changed the invoice: %v", got)
	}

	// A taxed customer's document carries tax and no reverse charge text.
	taxed := e.taxedCustomer("Taxed GmbH", "TAXED")
	id := e.sentInvoice(taxed)
	if text := e.pdfText("/invoices/" + id); strings.Contains(text, "Reverse charge") || strings.Contains(text, "Tax exempt") {
		t.Errorf("a taxed invoice prints an exemption:\n%s", text)
	}
}
