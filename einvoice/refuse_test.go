package einvoice_test

import (
	"strings"
	"testing"

	"github.com/billingd/billing"
	"github.com/billingd/billing/einvoice"
)

// TestRefusals checks that a document that cannot be an e-invoice is
// refused with invalid_state naming the field to fill, for every format.
//
// Long on purpose: a table of cases, each a few lines of set-up.
func TestRefusals(t *testing.T) {
	cases := []struct {
		name      string
		prepare   func(e *env) *billing.PrintableDocument
		field     string
		inMessage string
		formats   []einvoice.Format
	}{
		{name: "draft", field: "", inMessage: "DRAFT", prepare: func(e *env) *billing.PrintableDocument {
			inv := e.Invoice("GBP", e.Customer(gbCustomer).ID, billing.InvoiceUpdateParams{})
			e.Line(inv, billing.InvoiceLineItemParams{Title: "x", Quantity: dec("1"), Rate: dec("1"), TaxRate: dec("0.2")})
			return e.Printable(inv)
		}},
		{name: "merchant without address", field: "merchantDetails", inMessage: "BT-40", prepare: func(e *env) *billing.PrintableDocument {
			md := merchant
			md.Address = nil
			if _, err := e.Svc.PutMerchantDetails(e.Ctx, e.Account, md); err != nil {
				e.TB.Fatal(err)
			}
			inv := e.Invoice("GBP", e.Customer(gbCustomer).ID, billing.InvoiceUpdateParams{})
			e.Line(inv, billing.InvoiceLineItemParams{Title: "x", Quantity: dec("1"), Rate: dec("1"), TaxRate: dec("0.2")})
			return e.Finalize(inv)
		}},
		{name: "buyer without address", field: "customerBillingAddress", inMessage: "BT-55", prepare: func(e *env) *billing.PrintableDocument {
			c := gbCustomer
			c.Address, c.LegalName = nil, "Nameless"
			cust := e.Customer(c)
			inv := e.Invoice("GBP", cust.ID, billing.InvoiceUpdateParams{CustomerLegalCompanyName: ""})
			e.Line(inv, billing.InvoiceLineItemParams{Title: "x", Quantity: dec("1"), Rate: dec("1"), TaxRate: dec("0.2")})
			return e.Finalize(inv)
		}},
		{name: "reverse charge without buyer VAT id", field: "customerTaxId", inMessage: "BT-48", prepare: func(e *env) *billing.PrintableDocument {
			c := gbCustomer
			c.TaxID, c.TaxStatus = "", billing.TaxStatusReverseCharged
			inv := e.Invoice("EUR", e.Customer(c).ID, billing.InvoiceUpdateParams{})
			e.Line(inv, billing.InvoiceLineItemParams{Title: "x", Quantity: dec("1"), Rate: dec("1"), TaxRate: dec("0")})
			return e.Finalize(inv)
		}},
		{name: "standard category at zero", field: "taxCategory", inMessage: "category S needs a positive tax rate", prepare: func(e *env) *billing.PrintableDocument {
			inv := e.Invoice("GBP", e.Customer(gbCustomer).ID, billing.InvoiceUpdateParams{})
			e.Line(inv, billing.InvoiceLineItemParams{Title: "x", Quantity: dec("1"), Rate: dec("1"), TaxRate: dec("0"), TaxCategory: "S"})
			return e.Finalize(inv)
		}},
		// A TAX_EXEMPT customer's taxed line never reaches an e-invoice:
		// the line itself is refused (400 on taxRate; httpserver's
		// finance tests).
		{name: "tax rounded per line strays a unit", field: "lines", inMessage: "BR-CO-17", prepare: func(e *env) *billing.PrintableDocument {
			// 300 lines of 0.03 at 20%: each line's tax 0.006 rounds to
			// 0.01, 3.00 in all, while 20% of 9.00 is 1.80.
			inv := e.Invoice("GBP", e.Customer(gbCustomer).ID, billing.InvoiceUpdateParams{})
			for range 300 {
				e.Line(inv, billing.InvoiceLineItemParams{Title: "x", Quantity: dec("1"), Rate: dec("0.03"), TaxRate: dec("0.2")})
			}
			return e.Finalize(inv)
		}},
		{name: "XRechnung without the seller's phone", field: "format", inMessage: "BR-DE-6", formats: []einvoice.Format{einvoice.CII},
			prepare: func(e *env) *billing.PrintableDocument {
				md := merchant
				md.PhoneNumber = ""
				if _, err := e.Svc.PutMerchantDetails(e.Ctx, e.Account, md); err != nil {
					e.TB.Fatal(err)
				}
				c := gbCustomer
				c.Address = &billing.Address{Line1: "Karl-Marx-Allee 31", Town: "Berlin", Postcode: "10178", Country: "DE"}
				c.BuyerReference = "991-12345-67"
				inv := e.Invoice("EUR", e.Customer(c).ID, billing.InvoiceUpdateParams{})
				e.Line(inv, billing.InvoiceLineItemParams{Title: "x", Quantity: dec("1"), Rate: dec("1"), TaxRate: dec("0.19")})
				return e.Finalize(inv)
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := c.prepare(newEnv(t))
			formats := c.formats
			if formats == nil {
				formats = []einvoice.Format{einvoice.UBL, einvoice.CII, einvoice.FacturX}
			}
			for _, f := range formats {
				_, _, err := einvoice.Write(d, f)
				e, ok := err.(*billing.Error)
				if !ok || e.Code != billing.CodeInvalidState || e.Field != c.field || !strings.Contains(e.Message, c.inMessage) {
					t.Fatalf("%s: got %v, want invalid_state on %q mentioning %q", f, err, c.field, c.inMessage)
				}
			}
		})
	}
}
