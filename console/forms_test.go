package console

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/billingd/billing"
)

// formKeyInput finds the double-submit key of a page's form.
var formKeyInput = regexp.MustCompile(`name="formKey" value="([^"]+)"`)

// form returns the hidden fields of the form at path (CSRF token and form
// key) with values added.
func (b *browser) form(path string, values url.Values) url.Values {
	b.f.tb.Helper()
	_, body := b.get(path)
	csrf, key := csrfField.FindStringSubmatch(body), formKeyInput.FindStringSubmatch(body)
	if csrf == nil || key == nil {
		b.f.tb.Fatalf("no form on %s:\n%s", path, body)
	}
	values.Set("csrf", csrf[1])
	values.Set("formKey", key[1])
	return values
}

// refused fails unless the answer is status with message beside the field
// named field (its error element).
func refused(t *testing.T, what string, resp *http.Response, body string, status int, field, message string) {
	t.Helper()
	want := `id="e-f-` + field + `">` + message
	if resp.StatusCode != status || !strings.Contains(body, want) {
		t.Fatalf("%s: %d, want %d with %q in\n%s", what, resp.StatusCode, status, want, body)
	}
}

// apiJSON reads path over the REST API with the fixture's key into v.
func (f *fixture) apiJSON(t *testing.T, path string, v any) {
	t.Helper()
	req := must(http.NewRequest(http.MethodGet, f.srv.URL+path, nil))
	req.Header.Set("Authorization", f.key.Authorization())
	resp := must(http.DefaultClient.Do(req))
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(v) != nil {
		t.Fatalf("GET %s: %d", path, resp.StatusCode)
	}
}

func TestCustomerFormCreatesOnceAndShowsMessagesByTheirFields(t *testing.T) {
	f := newFixture(t)
	b := f.signedIn()
	const path = "/console/customers/new"
	form := b.form(path, url.Values{"legalName": {"Initech GmbH"}, "address.line1": {"Hauptstr. 1"}, "address.town": {"Berlin"},
		"address.postcode": {"10115"}, "address.country": {"Germany"}, "timeZone": {"Europe/Berlin"}, "taxStatus": {"TAXED"},
		"contacts[0].email": {"ap@initech.test"}, "customerAliases": {"initech, IT-1"}})
	resp, body := b.post(path, form)
	refused(t, "a country of more than 2 letters", resp, body, http.StatusBadRequest, "address.country", "country must be a 2-letter")
	contains(t, body, `value="Initech GmbH"`) // what was typed stays
	form.Set("address.country", "de")
	form.Set("formKey", formKeyInput.FindStringSubmatch(body)[1])
	resp, _ = b.post(path, form)
	loc := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, "/console/customers/") {
		t.Fatalf("create: %d %s", resp.StatusCode, loc)
	}
	// The same form again (a double click, a reload): the same customer, not a second.
	if again, _ := b.post(path, form); again.Header.Get("Location") != loc {
		t.Fatalf("a double submit went to %q, want %q", again.Header.Get("Location"), loc)
	}
	var list struct {
		Data []struct {
			ID, LegalName, TimeZone string
			Address                 struct{ Country string }
		} `json:"items"`
	}
	f.apiJSON(t, "/customers?limit=100", &list)
	var n int
	for _, c := range list.Data {
		if c.LegalName == "Initech GmbH" {
			n++
			if c.Address.Country != "DE" || c.TimeZone != "Europe/Berlin" || !strings.Contains(loc, c.ID) {
				t.Errorf("the API's customer: %+v (page %s)", c, loc)
			}
		}
	}
	if n != 1 {
		t.Fatalf("%d customers Initech GmbH, want 1", n)
	}
	_, page := b.get(loc)
	contains(t, page, "The customer was created.", "Hauptstr. 1", "Europe/Berlin")

	// Edit: an empty name is refused by its field; archive asks first.
	id := strings.TrimPrefix(strings.Split(loc, "?")[0], "/console/customers/")
	edit := "/console/customers/" + id + "/edit"
	resp, body = b.post(edit, b.form(edit, url.Values{"legalName": {""}, "taxStatus": {"TAXED"}}))
	refused(t, "an empty legal name", resp, body, http.StatusBadRequest, "legalName", "legalName")
}

func TestInvoiceFormCreatesADraftWithItsLines(t *testing.T) {
	f := newFixture(t)
	b := f.signedIn()
	const path = "/console/invoices/new"
	values := url.Values{"customerId": {f.customer.ID}, "currency": {"EUR"},
		"lines.0.title": {"Audit"}, "lines.0.quantity": {"2"}, "lines.0.rate": {"1500.00"}, "lines.0.taxRate": {"0.19"},
		"lines.1.title": {"Travel"}, "lines.1.quantity": {"one"}, "lines.1.rate": {"80.10"}, "lines.1.taxRate": {"0.19"}}
	before := must(f.svc.ListInvoices(context.Background(), f.account, billing.InvoiceFilter{}, billing.ListParams{})).TotalResultSize
	resp, body := b.post(path, b.form(path, values))
	refused(t, "a quantity of words", resp, body, http.StatusBadRequest, "lines.1.quantity", "The quantity must be a decimal number")
	values.Set("lines.1.quantity", "1")
	values.Set("lines.1.taxRate", "1.5") // the Service refuses it: the draft is deleted again
	resp, body = b.post(path, b.form(path, values))
	refused(t, "a tax rate above 1", resp, body, http.StatusBadRequest, "lines.1.taxRate", "")
	if n := must(f.svc.ListInvoices(context.Background(), f.account, billing.InvoiceFilter{}, billing.ListParams{})).TotalResultSize; n != before {
		t.Fatalf("refused forms left %d invoices, want %d", n, before)
	}
	values.Set("lines.1.taxRate", "0.19")
	resp, _ = b.post(path, b.form(path, values))
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("create: %d", resp.StatusCode)
	}
	id := strings.TrimPrefix(strings.Split(resp.Header.Get("Location"), "?")[0], "/console/invoices/")
	var inv struct{ Status, Currency, GrossTotal string }
	f.apiJSON(t, "/invoices/"+id, &inv)
	if inv.Status != "DRAFT" || inv.Currency != "EUR" || inv.GrossTotal != "3665.32" { // (3000 + 80.10) × 1.19
		t.Fatalf("the API's invoice: %+v", inv)
	}
	_, page := b.get("/console/invoices/" + id)
	contains(t, page, "Audit", "Travel", "€3,665.32", "Add a line…", "Remove…")

	// Edit a line (a wrong quantity first), then remove the other.
	lines := must(f.svc.ListInvoiceLineItems(context.Background(), f.account, id, billing.LineItemFilter{}, billing.ListParams{})).Items
	edit := "/console/invoices/" + id + "/lines/" + lines[0].ID + "/edit"
	_, page = b.get(edit)
	contains(t, page, `value="Audit"`, `value="1500.00"`)
	resp, body = b.post(edit, b.form(edit, url.Values{"title": {"Audit"}, "quantity": {"3 days"}, "rate": {"1500.00"}, "taxRate": {"0.19"}}))
	refused(t, "an edited quantity of words", resp, body, http.StatusBadRequest, "quantity", "The quantity must be")
	if resp, _ = b.post(edit, b.form(edit, url.Values{"title": {"Audit"}, "quantity": {"3"}, "rate": {"1500.00"}, "taxRate": {"0.19"}})); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("edit: %d", resp.StatusCode)
	}
	remove := "/console/invoices/" + id + "/lines/" + lines[1].ID + "/remove"
	if resp, _ = b.post(remove, b.form(remove, url.Values{})); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("remove: %d", resp.StatusCode)
	}
	f.apiJSON(t, "/invoices/"+id, &inv)
	if inv.GrossTotal != "5355.00" { // 3 × 1500.00 × 1.19
		t.Fatalf("after edit and remove the API's invoice: %+v", inv)
	}
}

func TestPaymentFormShowsMessagesByTheFieldAndDefaultsToTheAccountsDay(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	must(f.svc.PutAccountSettings(ctx, f.account, billing.AccountSettings{TimeZone: "Pacific/Kiritimati"})) // UTC+14
	f.clock.Advance(24 * time.Hour)                                                                         // the zone is in force from the next day
	must(f.svc.FinalizeInvoice(ctx, f.account, f.invoice.ID))
	b := f.signedIn()
	path := "/console/invoices/" + f.invoice.ID + "/pay"
	_, page := b.get(path)
	contains(t, page, `value="2024-08-01"`) // 31 Jul 12:00 UTC is 1 Aug in Kiritimati
	for _, amount := range []string{"0", "-5"} {
		resp, body := b.post(path, b.form(path, url.Values{"amount": {amount}, "paidAt": {"2024-07-30"}}))
		refused(t, "a payment of "+amount, resp, body, http.StatusBadRequest, "amount", "amount")
	}
	resp, _ := b.post(path, b.form(path, url.Values{"amount": {"100.00"}, "paidAt": {"2024-08-01"}}))
	if resp.StatusCode != http.StatusSeeOther || f.apiStatus(t, f.invoice.ID) != "FINAL PARTIALLY_PAID" {
		t.Fatalf("a partial payment: %d, %s", resp.StatusCode, f.apiStatus(t, f.invoice.ID))
	}
}

func TestCreditNoteCreditAndScheduleForms(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	inv := f.newInvoice(f.account, f.customer.ID, "2", "50.00")
	must(f.svc.CreateInvoiceLineItem(ctx, f.account, inv.ID, billing.InvoiceLineItemParams{Title: "Setup", Quantity: new(billing.MustDecimal("1")),
		Rate: new(billing.MustDecimal("30.00")), TaxRate: new(billing.MustDecimal("0")), ExternalIDs: []billing.KeyValue{}}))
	must(f.svc.FinalizeInvoice(ctx, f.account, inv.ID))
	b := f.signedIn()

	// A credit note prefilled from the invoice's lines; one line credited.
	cnPath := "/console/credit-notes/new?invoiceId=" + inv.ID
	_, page := b.get(cnPath)
	contains(t, page, "Consulting", "Setup", `name="lines.0.quantity" type="text" value="2"`, `value="50.00"`)
	resp, body := b.post(cnPath, b.form(cnPath, url.Values{"lines.0.quantity": {"x"}, "lines.0.rate": {"50.00"}, "lines.1.quantity": {"0"}, "lines.1.rate": {"30.00"}}))
	refused(t, "a credit note quantity of a letter", resp, body, http.StatusBadRequest, "lines.0.quantity", "The quantity must be")
	resp, _ = b.post(cnPath, b.form(cnPath, url.Values{"lines.0.quantity": {"1"}, "lines.0.rate": {"50.00"}, "lines.1.quantity": {"0"}, "lines.1.rate": {"30.00"}}))
	if resp.StatusCode != http.StatusSeeOther || !strings.Contains(resp.Header.Get("Location"), "/console/credit-notes/") {
		t.Fatalf("credit note: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	cns := must(f.svc.ListCreditNotes(ctx, f.account, billing.CreditNoteFilter{InvoiceID: inv.ID}, billing.ListParams{}))
	if len(cns.Items) != 1 || cns.Items[0].GrossTotal.String() != "60.00" { // 1 × 50.00 + 20% tax
		t.Fatalf("credit notes of the invoice: %+v", cns.Items)
	}

	// A credit grant: a missing amount by its field, then granted.
	crPath := "/console/credits/new?customerId=" + f.customer.ID
	_, page = b.get(crPath)
	contains(t, page, `<option value="`+f.customer.ID+`" selected>Globex Ltd</option>`)
	resp, body = b.post(crPath, b.form(crPath, url.Values{"customerId": {f.customer.ID}, "currency": {"GBP"}, "amount": {""}}))
	refused(t, "a grant without an amount", resp, body, http.StatusBadRequest, "amount", "The amount is required")
	resp, _ = b.post(crPath, b.form(crPath, url.Values{"customerId": {f.customer.ID}, "currency": {"GBP"}, "amount": {"25.00"}, "name": {"Goodwill"}}))
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("grant: %d", resp.StatusCode)
	}
	if bal := must(f.svc.GetCreditBalances(ctx, f.account, f.customer.ID, nil)); len(bal.Items) != 1 || bal.Items[0].Balance.String() != "25.00" {
		t.Fatalf("balances after the grant: %+v", bal.Items)
	}

	// A schedule: no price is refused by its field, then created active.
	product := must(f.svc.CreateProduct(ctx, f.account, billing.CreateProductParams{Name: "Platform"}))
	price := must(f.svc.CreatePrice(ctx, f.account, billing.CreatePriceParams{ProductID: product.ID, Name: "Pro", Currency: billing.CurrencyGBP,
		Structure:        billing.PriceStructure{PricingType: billing.PricingFixed, Price: new(billing.MustDecimal("49.00"))},
		BillingFrequency: billing.FrequencyMonthly, BillingType: billing.BillingTypeInAdvance}))
	const scPath = "/console/schedules/new"
	sc := url.Values{"customerId": {f.customer.ID}, "startDate": {"2024-08-01"}, "autoIssueInvoices": {"false"}, "isDraft": {"false"}, "label": {"Pro plan"}}
	resp, body = b.post(scPath, b.form(scPath, sc))
	refused(t, "a schedule without a price", resp, body, http.StatusBadRequest, "phases[0].priceIds[0]", "Choose at least one price")
	sc.Set("phases[0].priceIds[0]", price.ID)
	resp, _ = b.post(scPath, b.form(scPath, sc))
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("schedule: %d", resp.StatusCode)
	}
	scs := must(f.svc.ListBillingSchedules(ctx, f.account, billing.BillingScheduleFilter{CustomerID: f.customer.ID}, billing.ListParams{}))
	if len(scs.Items) != 1 || scs.Items[0].Label != "Pro plan" || scs.Items[0].Status != billing.ScheduleStatusActive {
		t.Fatalf("schedules: %+v", scs.Items)
	}
	_, page = b.get("/console/schedules")
	contains(t, page, "Pro plan", "Globex Ltd") // the customer's name, not its id
}

func TestReceivablesAgeTheAmountsDueAndAgreeWithTheAPI(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	// Invoices issued on 30 Jul 2024 (due 30 days later), then the clock
	// moves on: 45 days later the first is 15 days past due.
	f.finalInvoice("1", "100.00") // 15 days past due below
	paid := f.finalInvoice("1", "10.00")
	must(f.svc.RecordPayment(ctx, f.account, paid.ID, billing.PaymentParams{Amount: new(billing.MustDecimal("12.00")), PaidAt: new(must(billing.ParseDate("2024-07-30")))}))
	voided := f.finalInvoice("1", "999.00")
	must(f.svc.VoidInvoice(ctx, f.account, voided.ID))
	f.clock.Advance(45 * 24 * time.Hour)
	fresh := f.newInvoice(f.account, f.newCustomer(f.account, "Hooli Inc", "hooli").ID, "3", "1000.00")
	must(f.svc.FinalizeInvoice(ctx, f.account, fresh.ID))

	// The API's amounts due of the issued invoices.
	var list struct {
		Data []struct{ Status, PaymentStatus, AmountDue string } `json:"items"`
	}
	f.apiJSON(t, "/invoices?limit=100", &list)
	sum := billing.MustDecimal("0")
	for _, inv := range list.Data {
		if inv.Status == "FINAL" || inv.Status == "SENT" {
			sum = sum.Add(billing.MustDecimal(inv.AmountDue))
		}
	}
	b := f.signedIn()
	_, page := b.get("/console/receivables")
	contains(t, page, "Receivables", "GBP", "Globex Ltd", "Hooli Inc", "£120.00", "£3,600.00", money(sum, billing.CurrencyGBP))
	resp, body := b.get("/console/receivables?format=csv")
	rows := must(csv.NewReader(strings.NewReader(body)).ReadAll())
	if resp.Header.Get("Content-Type") != "text/csv; charset=utf-8" || len(rows) != 4 {
		t.Fatalf("receivables CSV: %s\n%s", resp.Header.Get("Content-Type"), body)
	}
	want := map[string]string{"Globex Ltd": "GBP,,Globex Ltd,1,0.00,120.00,0.00,0.00,0.00,120.00"[4:],
		"Hooli Inc": ",Hooli Inc,1,3600.00,0.00,0.00,0.00,0.00,3600.00", "Total": ",Total,2,3600.00,120.00,0.00,0.00,0.00," + sum.String()}
	for _, r := range rows[1:] {
		got := "," + strings.Join(r[2:], ",")
		if w := want[r[2]]; !strings.HasSuffix(w, got) && w != got {
			t.Errorf("row %v, want …%s", r, w)
		}
	}
	if sum.String() != "3720.00" {
		t.Fatalf("the API's sum %s", sum)
	}
}

// TestReceivablesPageTheCustomers lists 25 customers who owe a page of 20
// by name, then the other 5, the totals of all 25 on both pages.
func TestReceivablesPageTheCustomers(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	for i := range 25 {
		cu := f.newCustomer(f.account, fmt.Sprintf("Owing %02d", i), fmt.Sprintf("owing-%02d", i))
		must(f.svc.FinalizeInvoice(ctx, f.account, f.newInvoice(f.account, cu.ID, "1", "10.00").ID))
	}
	b := f.signedIn()
	_, page := b.get("/console/receivables")
	contains(t, page, "Owing 00", "Owing 19", "£300.00", `rel="next"`) // 25 invoices of £12.00
	if strings.Contains(page, "Owing 20") {
		t.Fatalf("the first page shows the 21st customer")
	}
	next := html.UnescapeString(regexp.MustCompile(`href="([^"]*)" rel="next"`).FindStringSubmatch(page)[1])
	_, page = b.get(next)
	contains(t, page, "Owing 20", "Owing 24", "£300.00", "First page")
	if strings.Contains(page, "Owing 19") || strings.Contains(page, `rel="next"`) {
		t.Fatalf("the second page:\n%s", page)
	}
	resp, _ := b.get("/console/receivables?after=nonsense")
	if resp.StatusCode != http.StatusBadRequest && resp.StatusCode != http.StatusUnprocessableEntity {
		t.Fatalf("a bad cursor: %d", resp.StatusCode)
	}
}

func TestEveryListAnswersCSV(t *testing.T) {
	f := newFixture(t)
	f.sampleData()
	b := f.signedIn()
	for path, want := range map[string][]string{
		"/console/customers?format=csv":                             {customerCSV[0] + "," + customerCSV[1], "Hooli Inc", "Globex Ltd"},
		"/console/customers?format=csv&q=hooli":                     {"Hooli Inc"},
		"/console/invoices?format=csv&status=FINAL":                 {"invoiceNumber", "2024-07-30", "1425.60", "2880.00"},
		"/console/invoices?format=csv&paymentStatus=PARTIALLY_PAID": {"2880.00,0.00,0.00,1000.00,1880.00"},
		"/console/credit-notes?format=csv":                          {"creditNoteNumber"},
		"/console/schedules?format=csv":                             {"lastBillingError"},
		"/console/deliveries?format=csv":                            {"recipients"},
		"/console/billing-runs?format=csv":                          {"invoicesCreated"},
		"/console/usage-metrics?format=csv":                         {"aggregationType"},
		"/console/receivables?format=csv":                           {"days1To30"},
	} {
		resp, body := b.get(path)
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/csv; charset=utf-8" {
			t.Errorf("%s: %d %s", path, resp.StatusCode, resp.Header.Get("Content-Type"))
			continue
		}
		if _, err := csv.NewReader(strings.NewReader(body)).ReadAll(); err != nil {
			t.Errorf("%s: not CSV: %v", path, err)
		}
		contains(t, body, want...)
		switch {
		case strings.Contains(path, "q=hooli") && strings.Contains(body, "Globex"),
			strings.Contains(path, "status=FINAL") && strings.Contains(body, "DRAFT"),
			strings.Contains(path, "PARTIALLY_PAID") && strings.Count(body, "\n") != 2:
			t.Errorf("%s: the filter is not applied:\n%s", path, body)
		}
	}
}

func TestInvoiceGroupForms(t *testing.T) {
	f := newFixture(t)
	b := f.signedIn()
	ctx := context.Background()
	path := "/console/invoices/" + f.invoice.ID + "/groups/new"
	resp, body := b.post(path, b.form(path, url.Values{"title": {""}}))
	refused(t, "a group without a title", resp, body, http.StatusBadRequest, "title", "")
	if resp, _ = b.post(path, b.form(path, url.Values{"title": {"Travel"}})); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("add group: %d", resp.StatusCode)
	}
	groups := must(f.svc.ListInvoiceLineItemGroups(ctx, f.account, f.invoice.ID, billing.LineItemFilter{}, billing.ListParams{})).Items
	if len(groups) != 1 || groups[0].Title != "Travel" {
		t.Fatalf("groups: %+v", groups)
	}
	add := "/console/invoices/" + f.invoice.ID + "/lines/new"
	_, page := b.get(add)
	contains(t, page, `<option value="`+groups[0].ID+`">Travel</option>`)
	if resp, _ = b.post(add, b.form(add, url.Values{"title": {"Train"}, "quantity": {"1"}, "rate": {"80"}, "taxRate": {"0"}, "groupId": {groups[0].ID}})); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("add line: %d", resp.StatusCode)
	}
	lines := must(f.svc.ListInvoiceLineItems(ctx, f.account, f.invoice.ID, billing.LineItemFilter{}, billing.ListParams{})).Items
	if len(lines) != 2 || lines[1].GroupID != groups[0].ID {
		t.Fatalf("lines: %+v", lines)
	}
	remove := "/console/invoices/" + f.invoice.ID + "/groups/" + groups[0].ID + "/remove"
	resp, body = b.post(remove, b.form(remove, url.Values{}))
	if resp.StatusCode != http.StatusConflict || !strings.Contains(body, `role="alert"`) {
		t.Fatalf("removing a group with a line: %d\n%s", resp.StatusCode, body)
	}
	must(0, f.svc.DeleteInvoiceLineItem(ctx, f.account, f.invoice.ID, lines[1].ID))
	resp, _ = b.post(remove, b.form(remove, url.Values{}))
	if n := len(must(f.svc.ListInvoiceLineItemGroups(ctx, f.account, f.invoice.ID, billing.LineItemFilter{}, billing.ListParams{})).Items); resp.StatusCode != http.StatusSeeOther || n != 0 {
		t.Fatalf("remove group: %d, %d groups left", resp.StatusCode, n)
	}
}
