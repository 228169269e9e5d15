package httpserver

import (
	"bytes"
	"encoding/xml"
	"net/http"
	"testing"

	"github.com/billingd/billing"
	"github.com/billingd/billing/internal/pdftext"
)

// TestDownloadEInvoice downloads a finalized invoice and credit note as
// UBL, CII and Factur-X, and checks the refusals: a DRAFT is 409, so is a
// document whose merchant details lack what EN 16931 requires.
//
// Long on purpose: one scenario walked in order; each step starts from the
// documents the previous steps left.
func TestDownloadEInvoice(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	wantStatus(t, e.put("/merchant-details", `{"legalCompanyName":"Acme Widgets Ltd","taxId":"GB123456789",
		"address":{"line1":"1 Market Street","town":"Leeds","postcode":"LS1 1AA","country":"GB"},
		"iban":"GB33BUKB20201555555555","bic":"BUKBGB22","legalRegistrationId":"01234567"}`), http.StatusOK)
	cust := e.create("/customers", `{"legalName":"Northwind Traders Ltd","taxId":"GB987654321","buyerReference":"NW-ACCOUNTS",
		"address":{"line1":"22 Harbour Road","town":"Bristol","postcode":"BS1 5TY","country":"GB"},
		"contacts":[{"name":"Ann","email":"ap@northwind.test","billingPreference":"PRIMARY"}]}`)
	inv := e.invoice(cust, `"purchaseOrderNumber":"PO-7"`)
	id := inv["id"].(string)
	if inv["buyerReference"] != "NW-ACCOUNTS" {
		t.Errorf("the invoice's buyerReference is %v, want the customer's", inv["buyerReference"])
	}
	e.create("/invoices/"+id+"/line-items", lineBody("Plan", "2", "10", "0.2", `"unitCode":"MON"`))

	t.Run("ErrDraftIs409", func(t *testing.T) {
		for _, f := range []string{"ubl", "cii", "facturx"} {
			wantError(t, e.get("/invoices/"+id+"/download?format="+f), http.StatusConflict, billing.CodeInvalidState)
		}
	})
	wantStatus(t, e.post("/invoices/"+id+"/finalize", ""), http.StatusOK)
	t.Run("UBL", func(t *testing.T) {
		r := e.get("/invoices/" + id + "/download?format=ubl")
		wantFile(t, r, "application/xml", `attachment; filename="INV00001-ubl.xml"`)
		var doc struct {
			XMLName  xml.Name
			ID       string
			BuyerRef string `xml:"BuyerReference"`
			Payable  string `xml:"LegalMonetaryTotal>PayableAmount"`
		}
		if err := xml.Unmarshal(r.body, &doc); err != nil {
			t.Fatal(err)
		}
		if doc.XMLName.Local != "Invoice" || doc.ID != "INV00001" || doc.BuyerRef != "NW-ACCOUNTS" || doc.Payable != "24.00" {
			t.Errorf("the UBL says %+v", doc)
		}
	})
	t.Run("CII", func(t *testing.T) {
		r := e.get("/invoices/" + id + "/download?format=cii")
		wantFile(t, r, "application/xml", `attachment; filename="INV00001-cii.xml"`)
		if !bytes.Contains(r.body, []byte("<ram:GrandTotalAmount>24.00</ram:GrandTotalAmount>")) ||
			!bytes.Contains(r.body, []byte(`<ram:BilledQuantity unitCode="MON">2</ram:BilledQuantity>`)) {
			t.Errorf("the CII lacks the total or the line:\n%s", r.body)
		}
	})
	t.Run("FacturX", func(t *testing.T) {
		r := e.get("/invoices/" + id + "/download?format=facturx")
		wantFile(t, r, "application/pdf", `attachment; filename="INV00001-facturx.pdf"`)
		pdftext.Contains(t, pdftext.Text(t, r.body), "INV00001", "Northwind Traders Ltd", "£24.00")
		if !bytes.Contains(r.body, []byte("factur-x.xml")) {
			t.Error("the Factur-X PDF names no factur-x.xml")
		}
	})
	t.Run("CreditNote", func(t *testing.T) {
		cn := e.newDocument("/credit-notes", cust, `"invoiceId":"`+id+`"`, creditNoteAlways)
		if cn["buyerReference"] != "NW-ACCOUNTS" {
			t.Errorf("the credit note's buyerReference is %v, want the invoice's", cn["buyerReference"])
		}
		cnID := cn["id"].(string)
		e.create("/credit-notes/"+cnID+"/line-items", `{"creditNoteId":"`+cnID+`","title":"Refund","quantity":"1","rate":"5","taxRate":"0.2","externalIds":[]}`)
		wantError(t, e.get("/credit-notes/"+cnID+"/download?format=ubl"), http.StatusConflict, billing.CodeInvalidState)
		wantStatus(t, e.post("/credit-notes/"+cnID+"/finalize", ""), http.StatusOK)
		r := e.get("/credit-notes/" + cnID + "/download?format=ubl")
		wantFile(t, r, "application/xml", `attachment; filename="CN00001-ubl.xml"`)
		if !bytes.Contains(r.body, []byte("<CreditNote")) || !bytes.Contains(r.body, []byte("<cbc:CreditNoteTypeCode>381</cbc:CreditNoteTypeCode>")) ||
			!bytes.Contains(r.body, []byte("<cbc:ID>INV00001</cbc:ID>")) {
			t.Errorf("the credit note's UBL is not a 381 crediting INV00001:\n%s", r.body)
		}
		wantFile(t, e.get("/credit-notes/"+cnID+"/download?format=cii"), "application/xml", `attachment; filename="CN00001-cii.xml"`)
		wantFile(t, e.get("/credit-notes/"+cnID+"/download?format=facturx"), "application/pdf", `attachment; filename="CN00001-facturx.pdf"`)
	})
	t.Run("ErrMissingMerchantAddress", func(t *testing.T) {
		wantStatus(t, e.put("/merchant-details", `{"legalCompanyName":"Acme Widgets Ltd","taxId":"GB123456789"}`), http.StatusOK)
		other := e.invoice(cust, "")["id"].(string)
		e.create("/invoices/"+other+"/line-items", lineBody("Plan", "1", "10", "0.2", ""))
		wantStatus(t, e.post("/invoices/"+other+"/finalize", ""), http.StatusOK)
		wantError(t, e.get("/invoices/"+other+"/download?format=ubl"), http.StatusConflict, billing.CodeInvalidState, "merchantDetails")
		// The invoice finalized earlier kept the merchant details it was
		// finalized with.
		wantStatus(t, e.get("/invoices/"+id+"/download?format=ubl"), http.StatusOK)
	})
	t.Run("ErrBadFormat", func(t *testing.T) {
		wantError(t, e.get("/invoices/"+id+"/download?format=xrechnung"), http.StatusBadRequest, billing.CodeValidationFailed, "format")
	})
}
