package console

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/billingd/billing"
)

// TestFinanceDayInABrowser walks a finance person's day in headless
// chromium, every step through the console's forms and every result read
// back over the REST API: create a customer, an invoice with two lines,
// finalize and send it, record a partial payment, issue a credit note for
// one line, grant credit and apply it, see the receivables and download
// the CSV. Long on purpose: one person's day, step after step.
func TestFinanceDayInABrowser(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	b := f.signedInTab(t)
	fill := func(what string, fields map[string]string) {
		t.Helper()
		var steps []chromedp.Action[chromedp.Void]
		for id, v := range fields {
			steps = append(steps, chromedp.SetValue(chromedp.CSS(`[id="`+id+`"]`), v))
		}
		b.run(what, steps...)
	}
	submit := func() int64 { t.Helper(); return b.click("main form.form button[type=submit]") }

	// A new customer: first refused by its field, then created.
	b.open("/console/customers")
	b.click(`a[href="/console/customers/new"]`)
	fill("the customer form", map[string]string{"f-legalName": "Northwind Traders", "f-contacts[0].email": "ap@northwind.test",
		"f-address.line1": "1 Harbour St", "f-address.town": "Leeds", "f-address.postcode": "LS1 1AA", "f-address.country": "Great Britain",
		"f-timeZone": "Europe/London"})
	if st := submit(); st != http.StatusBadRequest {
		t.Fatalf("a country's name: %d", st)
	}
	b.see("country must be a 2-letter")
	b.shot("customer-form-error")
	fill("the country", map[string]string{"f-address.country": "GB"})
	submit()
	b.see("The customer was created.", "Northwind Traders", "1 Harbour St", "Europe/London")
	customers := must(f.svc.ListCustomers(ctx, f.account, billing.CustomerFilter{}, billing.ListParams{Limit: 1}))
	cu := customers.Items[0]
	if cu.LegalName != "Northwind Traders" || cu.Address == nil || cu.Address.Town != "Leeds" {
		t.Fatalf("the API's newest customer: %+v", cu)
	}

	// An invoice with two lines, from the customer's page.
	b.click(`a[href="/console/invoices/new?customerId=` + cu.ID + `"]`)
	fill("the invoice form", map[string]string{"f-currency": "GBP",
		"f-lines.0.title": "Consulting", "f-lines.0.quantity": "10", "f-lines.0.rate": "150.00", "f-lines.0.taxRate": "0.2",
		"f-lines.1.title": "Licence", "f-lines.1.quantity": "1", "f-lines.1.rate": "1200.00", "f-lines.1.taxRate": "0.2"})
	b.shot("invoice-form")
	submit()
	b.see("The invoice was created.", "Draft invoice", "Consulting", "Licence", "£3,240.00")
	invs := must(f.svc.ListInvoices(ctx, f.account, billing.InvoiceFilter{CustomerID: cu.ID}, billing.ListParams{}))
	if len(invs.Items) != 1 || invs.Items[0].GrossTotal.String() != "3240.00" {
		t.Fatalf("the API's invoices of the customer: %+v", invs.Items)
	}
	id := invs.Items[0].ID

	// Finalize and send, each through its confirmation.
	for _, step := range []struct{ action, done, api string }{
		{"finalize", "The invoice was finalized.", "FINAL UNPAID"},
		{"send", "The invoice was sent.", "SENT UNPAID"},
	} {
		b.click(`.toolbar a[href$="/` + step.action + `"]`)
		submit()
		b.see(step.done)
		if got := f.apiStatus(t, id); got != step.api {
			t.Fatalf("after %s the API says %s, want %s", step.action, got, step.api)
		}
	}

	// A partial payment: a zero amount is refused by its field first.
	b.click(`.toolbar a[href$="/pay"]`)
	fill("the payment", map[string]string{"f-amount": "0"})
	if st := submit(); st != http.StatusBadRequest {
		t.Fatalf("a zero payment: %d", st)
	}
	b.see("Record a payment", "amount")
	fill("the payment", map[string]string{"f-amount": "1000.00", "f-method": "bank transfer"})
	submit()
	b.see("The payment was recorded.", "PARTIALLY PAID")
	if got := f.apiStatus(t, id); got != "SENT PARTIALLY_PAID" {
		t.Fatalf("after the payment the API says %s", got)
	}

	// A credit note for one line (the licence), prefilled from the invoice.
	b.click(`.toolbar a[href="/console/credit-notes/new?invoiceId=` + id + `"]`)
	b.see("Consulting", "Licence")
	fill("credit only the licence", map[string]string{"f-lines.0.quantity": "0"})
	b.shot("credit-note-form")
	submit()
	b.see("The credit note was created.", "Draft credit note")
	b.click(`.toolbar a[href$="/finalize"]`)
	submit()
	b.see("The credit note was finalized.")
	inv := must(f.svc.GetInvoice(ctx, f.account, id))
	if inv.AmountCredited.String() != "1440.00" || inv.AmountDue.String() != "800.00" {
		t.Fatalf("after the credit note the API's invoice: credited %s, due %s", inv.AmountCredited, inv.AmountDue)
	}

	// Grant credit and apply it to the invoice.
	b.open("/console/customers/" + cu.ID)
	b.click(`a[href="/console/credits/new?customerId=` + cu.ID + `"]`)
	fill("the grant", map[string]string{"f-name": "Prepaid", "f-currency": "GBP", "f-amount": "300.00", "f-costOfCredit": "300.00"})
	b.shot("credit-form")
	submit()
	b.see("The credit was granted.", "Prepaid", "£300.00")
	b.open("/console/invoices/" + id)
	b.click(`.toolbar a[href$="/apply-credits"]`)
	b.see("Available: £300.00")
	submit()
	b.see("The customer's credit was applied.")
	inv = must(f.svc.GetInvoice(ctx, f.account, id))
	if inv.CreditsApplied.String() != "300.00" || inv.AmountDue.String() != "500.00" {
		t.Fatalf("after applying credit the API's invoice: applied %s, due %s", inv.CreditsApplied, inv.AmountDue)
	}
	b.see("Credits applied", "£500.00")

	// The receivables, and the invoices as CSV.
	b.click(`nav a[href="/console/receivables"]`)
	b.see("Receivables", "Northwind Traders", "£500.00")
	b.shot("receivables")
	sum := must(f.svc.SummarizeInvoices(ctx, f.account, 1))
	if len(sum.Currencies) != 1 || !strings.Contains(b.text(), money(sum.Currencies[0].AmountDue, billing.CurrencyGBP)) {
		t.Fatalf("the receivables do not show the total due %+v", sum.Currencies)
	}
	br := f.signedIn()
	b.open("/console/invoices")
	href := must(chromedp.Run(b.ctx, chromedp.AttributeValue(chromedp.CSS(`a[download][href*="format=csv"]`), "href")))
	resp, body := br.get(href.Value)
	if resp.Header.Get("Content-Type") != "text/csv; charset=utf-8" || !strings.Contains(body, id) || !strings.Contains(body, "3240.00,300.00,1440.00,1000.00,500.00") {
		t.Fatalf("the invoices CSV (%s):\n%s", resp.Header.Get("Content-Type"), body)
	}
}
