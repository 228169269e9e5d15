package httpserver

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/billingd/billing"
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

// TestVoidedInvoiceOwesNothingOverHTTP: a voided invoice answers amountDue
// 0, leaves the receivables of the overview, and its journal nets to zero;
// one with payments or live credit notes is refused, saying what to do.
func TestVoidedInvoiceOwesNothingOverHTTP(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	cust := e.customer("Voided Ltd")
	id := e.sentInvoice(cust)
	got := decode[map[string]any](t, e.post("/invoices/"+id+"/void", ""))
	if got["status"] != "VOIDED" || got["amountDue"] != "0.00" || got["paymentStatus"] != "UNPAID" {
		t.Errorf("voided invoice %v", got)
	}
	for _, inv := range decode[page](t, e.get("/invoices?status=VOIDED")).Items {
		if inv["amountDue"] != "0.00" {
			t.Errorf("the list answers a voided invoice due %v", inv["amountDue"])
		}
	}
	sum, err := e.svc.SummarizeInvoices(t.Context(), e.account, 1)
	if err != nil || len(sum.Currencies) != 0 {
		t.Errorf("the overview counts a voided invoice: %+v %v", sum, err)
	}
	wantBalancedJournal(t, e, id, 6)
	if bal := journalNet(t, e, id); bal != "" {
		t.Errorf("the journal of a voided invoice does not net to zero: %s", bal)
	}

	// With a payment: refused, saying to credit it first.
	paid := e.sentInvoice(cust)
	wantStatus(t, e.post("/invoices/"+paid+"/payments", `{"amount":"1.00","paidAt":"2024-07-30"}`), http.StatusCreated)
	errs := wantError(t, e.post("/invoices/"+paid+"/void", ""), http.StatusConflict, "invalid_state")
	if !strings.Contains(errs[0].Message, "credit") {
		t.Errorf("the refusal does not say what to do: %q", errs[0].Message)
	}
}

// TestPaymentDatesOverHTTP: paidAt may not be after today in the account's
// time zone, nor before the invoice's issue date.
func TestPaymentDatesOverHTTP(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	wantStatus(t, e.put("/account-settings", `{"timeZone":"Pacific/Auckland"}`), http.StatusOK)
	cust := e.customer("Payer Ltd")
	id := e.sentInvoice(cust) // the clock says 2024-07-30T12:00Z: 2024-07-31 in Auckland
	for _, bad := range []string{"2199-12-31", "2024-08-01", "2024-07-30", "2020-01-01"} {
		wantError(t, e.post("/invoices/"+id+"/payments", `{"amount":"1.00","paidAt":"`+bad+`"}`), http.StatusBadRequest, "validation_failed", "paidAt")
	}
	// Today in Auckland, and the issue date (the customer has the account's zone).
	wantStatus(t, e.post("/invoices/"+id+"/payments", `{"amount":"1.00","paidAt":"2024-07-31"}`), http.StatusCreated)
}

// journalNet returns what the journal of source leaves on each ledger
// account that it does not net to zero ("" when every account nets to
// zero).
func journalNet(tb testing.TB, e *env, source string) string {
	tb.Helper()
	net := map[string]billing.Decimal{}
	for _, j := range decode[page](tb, e.get("/journal-entries?limit=100&sourceId="+source)).Items {
		d, c := billing.MustDecimal(j["debit"].(string)), billing.MustDecimal(j["credit"].(string))
		a := j["account"].(string)
		net[a] = net[a].Add(d).Sub(c)
	}
	var out []string
	for a, n := range net {
		if !n.IsZero() {
			out = append(out, fmt.Sprintf("%s %s", a, n))
		}
	}
	slices.Sort(out)
	return fmt.Sprint(out)[1 : len(fmt.Sprint(out))-1]
}

// TestNamesOverHTTP: legal names and titles are trimmed, may not be blank,
// and refuse bidirectional controls and other invisible format characters,
// naming the field; an emoji joined by U+200D stays allowed.
func TestNamesOverHTTP(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	for _, bad := range []string{`   `, `\t \n`, "😀 \u202eevil", "a\u2066b", "soft\u00adhyphen", "zero\u200bwidth"} {
		wantError(t, e.post("/customers", `{"legalName":"`+bad+`"}`), http.StatusBadRequest, "validation_failed", "legalName")
	}
	cust := decode[map[string]any](t, e.post("/customers", `{"legalName":"  Family 👨‍👩‍👧 Ltd  "}`))
	if cust["legalName"] != "Family 👨‍👩‍👧 Ltd" {
		t.Errorf("legalName = %q, want it trimmed", cust["legalName"])
	}
	id := cust["id"].(string)
	wantError(t, e.put("/customers/"+id, `{"legalName":" "}`), http.StatusBadRequest, "validation_failed", "legalName")
	wantError(t, e.post("/invoices", `{"currency":"GBP","customerId":"`+id+`","customerLegalCompanyName":"x\u202e"}`),
		http.StatusBadRequest, "validation_failed", "customerLegalCompanyName")
	inv := "/invoices/" + decode[map[string]any](t, e.post("/invoices", `{"currency":"GBP","customerId":"`+id+`","customerLegalCompanyName":" Billed Name "}`))["id"].(string)
	if got := decode[map[string]any](t, e.get(inv)); got["customerLegalCompanyName"] != "Billed Name" {
		t.Errorf("customerLegalCompanyName = %q", got["customerLegalCompanyName"])
	}
	wantError(t, e.post(inv+"/line-items", lineBody("  ", "1", "1", "0", "")), http.StatusBadRequest, "validation_failed", "title")
	wantError(t, e.post(inv+"/line-items", lineBody("Plan\u202e", "1", "1", "0", "")), http.StatusBadRequest, "validation_failed", "title")
	wantError(t, e.post(inv+"/line-item-groups", `{"title":" "}`), http.StatusBadRequest, "validation_failed", "title")
	line := decode[map[string]any](t, e.post(inv+"/line-items", lineBody(" Plan ", "1", "1", "0", "")))
	group := decode[map[string]any](t, e.post(inv+"/line-item-groups", `{"title":" Group "}`))
	if line["title"] != "Plan" || group["title"] != "Group" {
		t.Errorf("titles not trimmed: %q, %q", line["title"], group["title"])
	}
	wantError(t, e.post("/credits", `{"customerId":"`+id+`","name":" ","creditUnitType":"CURRENCY","currency":"GBP","amount":"1"}`),
		http.StatusBadRequest, "validation_failed", "name")
}

// TestCreditsOverHTTP is the credit model finance signs off: €169 + 19%.
// Paid credit (€100 bought) is money on account after tax: the totals stay
// those of the supplies, creditsApplied 100.00, due 101.11, and the PDF
// says "Credit applied". Free credit (€100 promotion) is a discount before
// tax: a BURNDOWN line at 19%, net 69.00, tax 13.11 (19% of net). Credit
// bought after invoicing is applied to the SENT invoice. A draft stays a
// draft. The credit purchase invoice carries no tax. Voiding gives the
// credit back.
//
// Long on purpose: one scenario walked in order; each step starts from the
// state the previous steps left.
func TestCreditsOverHTTP(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	vat := e.create("/tax-rates", `{"name":"VAT","amount":"0.19"}`)
	cust := e.customer("Credit GmbH")
	draftOf := func() string {
		id := decode[map[string]any](t, e.post("/invoices", `{"currency":"EUR","customerId":"`+cust+`"}`))["id"].(string)
		wantStatus(t, e.post("/invoices/"+id+"/line-items", lineBody("Platform", "1", "169", "0.19", "")), http.StatusCreated)
		return "/invoices/" + id
	}

	// Paid credit: bought with an invoice that carries no tax.
	bought := decode[map[string]any](t, e.post("/credits", `{"customerId":"`+cust+`","name":"Prepaid","creditUnitType":"CURRENCY",
		"currency":"EUR","amount":"100.00","costOfCredit":"100.00","createInvoice":true,"taxRateId":"`+vat+`"}`))
	purchase := decode[map[string]any](t, e.get("/invoices/"+bought["invoiceId"].(string)))
	wantTotals(t, "credit purchase", purchase, "100.00", "0.00", "100.00")
	wantStatus(t, e.post("/invoices/"+bought["invoiceId"].(string)+"/send", ""), http.StatusOK)

	inv := draftOf()
	got := decode[map[string]any](t, e.post(inv+"/apply-credits", ""))
	wantTotals(t, "paid credit", got, "169.00", "32.11", "201.11")
	apps, _ := got["creditApplications"].([]any)
	if got["status"] != "DRAFT" || got["creditsApplied"] != "100.00" || got["amountDue"] != "101.11" || len(apps) != 1 ||
		apps[0].(map[string]any)["amount"] != "100.00" || apps[0].(map[string]any)["name"] != "Prepaid" {
		t.Fatalf("paid credit applied: %v", got)
	}
	if b := e.balanceOf(cust, "EUR"); b != "0.00" {
		t.Errorf("balance after paid credit %s", b)
	}
	sent := decode[map[string]any](t, e.post(inv+"/send", ""))
	if sent["amountDue"] != "101.11" || sent["creditsApplied"] != "100.00" || sent["paymentStatus"] != "PARTIALLY_PAID" {
		t.Errorf("sent %v", sent)
	}
	text := e.pdfText(inv)
	for _, want := range []string{"Credit applied: Prepaid", "-€100.00", "€201.11", "€101.11", "€32.11"} {
		if !strings.Contains(text, want) {
			t.Errorf("the PDF lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "0%") {
		t.Errorf("the PDF has a 0%% row:\n%s", text)
	}
	if bal := journalNet(t, e, bought["id"].(string)); bal == "" {
		t.Error("the paid grant's consumption wrote no journal")
	}

	// Credit bought after the invoice was sent pays what is still due,
	// never more.
	wantStatus(t, e.post("/credits", `{"customerId":"`+cust+`","name":"Top-up","creditUnitType":"CURRENCY","currency":"EUR",
		"amount":"500.00","costOfCredit":"500.00"}`), http.StatusCreated)
	got = decode[map[string]any](t, e.post(inv+"/apply-credits", ""))
	if got["status"] != "SENT" || got["creditsApplied"] != "201.11" || got["amountDue"] != "0.00" || got["paymentStatus"] != "PAID" {
		t.Errorf("credit applied to the SENT invoice: %v", got)
	}
	if b := e.balanceOf(cust, "EUR"); b != "398.89" {
		t.Errorf("balance after the top-up was applied: %s, want 398.89", b)
	}
	wantError(t, e.post(inv+"/apply-credits", ""), http.StatusConflict, "invalid_state") // nothing due
	wantStatus(t, e.post(inv+"/void", ""), http.StatusOK)
	if b := e.balanceOf(cust, "EUR"); b != "600.00" { // both grants whole again
		t.Errorf("balance after the void: %s, want 600.00", b)
	}

	// Free credit: a discount before tax at the rate it offsets.
	other := e.customer("Promo GmbH")
	wantStatus(t, e.post("/credits", `{"customerId":"`+other+`","name":"Welcome","creditUnitType":"CURRENCY","currency":"EUR","amount":"100.00"}`), http.StatusCreated)
	cust = other
	inv = draftOf()
	got = decode[map[string]any](t, e.post(inv+"/apply-credits", ""))
	wantTotals(t, "free credit", got, "69.00", "13.11", "82.11")
	if got["creditsApplied"] != "0.00" || got["amountDue"] != "82.11" || got["status"] != "DRAFT" {
		t.Errorf("free credit applied: %v", got)
	}
	lines := decode[page](t, e.get(inv+"/line-items")).Items
	if len(lines) != 2 || lines[1]["revenueClassification"] != "BURNDOWN" || lines[1]["taxRate"] != "0.19" || lines[1]["netTotal"] != "-100.00" {
		t.Errorf("lines %v", lines)
	}
	// The draft changes: the credit follows it (never more than the net).
	wantStatus(t, e.del(inv+"/line-items/"+lines[0]["id"].(string)), http.StatusOK)
	wantStatus(t, e.post(inv+"/line-items", lineBody("Small", "1", "40", "0.19", "")), http.StatusCreated)
	got = decode[map[string]any](t, e.get(inv))
	wantTotals(t, "free credit after the change", got, "0.00", "0.00", "0.00")
	if b := e.balanceOf(cust, "EUR"); b != "60.00" {
		t.Errorf("balance after the draft changed: %s, want 60.00", b)
	}
	wantStatus(t, e.del(inv), http.StatusOK)
	if b := e.balanceOf(cust, "EUR"); b != "100.00" {
		t.Errorf("balance after the draft was deleted: %s, want 100.00", b)
	}
}

// TestArchiveCustomerWithSchedulesOverHTTP: archiving a customer whose
// schedules would still bill is refused, naming them; with
// cancelSchedules=true they are cancelled and archived in the same
// request, and the engine bills them no more (and reports nothing
// failing, where it used to fail at the next billing date).
func TestArchiveCustomerWithSchedulesOverHTTP(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	cust, price := e.scheduleFixture()
	active := e.create("/billing-schedules", `{"customerId":"`+cust+`","startDate":"2024-07-01","isDraft":false,"autoIssueInvoices":false,
		"phases":[{"startDate":"2024-07-01","priceIds":["`+price+`"]}]}`)
	draft := e.create("/billing-schedules", `{"customerId":"`+cust+`","startDate":"2024-08-01","isDraft":true,"autoIssueInvoices":false,
		"phases":[{"startDate":"2024-08-01","priceIds":["`+price+`"]}]}`)
	errs := wantError(t, e.post("/customers/"+cust+"/archive", ""), http.StatusConflict, "invalid_state")
	if !strings.Contains(errs[0].Message, active) || !strings.Contains(errs[0].Message, draft) || !strings.Contains(errs[0].Message, "cancelSchedules") {
		t.Errorf("the refusal does not list the schedules and what to do: %q", errs[0].Message)
	}
	if c := decode[map[string]any](t, e.get("/customers/"+cust)); c["archivedAt"] != nil {
		t.Fatalf("a refused archive archived the customer: %v", c)
	}
	wantError(t, e.post("/customers/"+cust+"/archive?cancelSchedules=maybe", ""), http.StatusBadRequest, "validation_failed", "cancelSchedules")

	// Bill what is due first.
	e.clock.Set(e.clock.Now().Add(24 * time.Hour))
	run := decode[map[string]any](t, e.post("/billing-runs", `{}`))
	if f, _ := run["failures"].([]any); len(f) != 0 {
		t.Fatalf("failures before archiving: %v", f)
	}

	c := decode[map[string]any](t, e.post("/customers/"+cust+"/archive?cancelSchedules=true", ""))
	if c["archivedAt"] == nil {
		t.Fatalf("not archived: %v", c)
	}
	for id, want := range map[string]string{active: "CANCELLED", draft: "DRAFT"} {
		sc := decode[map[string]any](t, e.get("/billing-schedules/"+id))
		if sc["status"] != want || sc["archivedAt"] == nil {
			t.Errorf("schedule %s after archiving its customer: %v %v", id, sc["status"], sc["archivedAt"])
		}
	}
	e.clock.Set(e.clock.Now().Add(40 * 24 * time.Hour))
	run = decode[map[string]any](t, e.post("/billing-runs", `{}`))
	if f, _ := run["failures"].([]any); len(f) != 0 || run["invoicesCreated"] != float64(0) {
		t.Errorf("the engine still bills the archived customer's schedules: %v", run)
	}
}

// TestEngineLinesSayWhatTheyBillOverHTTP: a SEAT_BASED line in arrears
// says it bills the period's peak; a minimum is prorated like the fees of
// a short first period and says so; a late usage correction shows the
// usage that changed at its unit price ("3 × 0.05", not "1 × 0.15").
//
// Long on purpose: one scenario walked in order; each step starts from the
// state the previous steps left.
func TestEngineLinesSayWhatTheyBillOverHTTP(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.clock.Set(time.Date(2024, 7, 10, 9, 0, 0, 0, time.UTC))
	cust := e.create("/customers", `{"legalName":"Seats Ltd","customerAliases":["seats"]}`)
	e.create("/seat-metrics", `{"seatType":"editor","label":"Editors"}`)
	seatMetric := decode[page](t, e.get("/seat-metrics")).Items[0]["id"].(string)
	metric := e.createMetric("calls").ID
	product := e.create("/products", `{"name":"Platform"}`)
	seatPrice := e.create("/prices", `{"productId":"`+product+`","name":"Editors","currency":"EUR","billingFrequency":"MONTHLY",
		"billingType":"IN_ARREARS","structure":{"pricingType":"SEAT_BASED","seatMetricId":"`+seatMetric+`","pricePerSeat":"10.00"}}`)
	usagePrice := e.create("/prices", `{"productId":"`+product+`","name":"Calls","currency":"EUR","billingFrequency":"MONTHLY",
		"billingType":"IN_ARREARS","structure":{"pricingType":"LINEAR","pricePerUnit":"0.05","usageMetricId":"`+metric+`"}}`)
	for i, total := range []int{3, 7, 2} {
		at := time.Date(2024, 7, 12+4*i, 0, 0, 0, 0, time.UTC)
		e.create("/seat-events", fmt.Sprintf(`{"customerAlias":"seats","seatType":"editor","eventTimestamp":%q,"total":%d}`,
			billing.FormatTimestamp(at), total))
	}
	e.create("/billing-schedules", `{"customerId":"`+cust+`","startDate":"2024-07-10","autoIssueInvoices":true,"isDraft":false,"recurrenceDayOfMonth":1,
		"phases":[{"startDate":"2024-07-10","priceIds":["`+seatPrice+`","`+usagePrice+`"],
		"minimums":[{"amount":"310.00","restrictToPrices":["`+seatPrice+`"]}]}]}`)

	e.clock.Set(time.Date(2024, 8, 1, 9, 0, 0, 0, time.UTC))
	invs := e.billingRun()
	if len(invs) != 1 {
		t.Fatalf("%d invoices", len(invs))
	}
	byTitle := map[string]map[string]any{}
	for _, l := range invs[0]["lines"].([]map[string]any) {
		byTitle[l["title"].(string)] = l
	}
	seats, minimum := byTitle["Editors"], byTitle["Minimum commitment"]
	if seats == nil || !strings.Contains(seats["description"].(string), "peak seats in the period: 7") {
		t.Errorf("seat line %v", seats)
	}
	// 22 of 31 days: the minimum is 310.00 × 22/31 = 220.00, so the seat
	// line and the minimum line add up to 220.00.
	if minimum == nil || !strings.Contains(fmt.Sprint(minimum["description"]), "prorated: 22 of 31 days") {
		t.Fatalf("minimum line %v", minimum)
	}
	sum := billing.MustDecimal(seats["netTotal"].(string)).Add(billing.MustDecimal(minimum["netTotal"].(string)))
	if sum.String() != "220.00" {
		t.Errorf("seats %v + minimum %v = %s, want the prorated minimum 220.00", seats["netTotal"], minimum["netTotal"], sum)
	}

	// Three calls of July arrive after its invoice was issued.
	for i := range 3 {
		wantStatus(t, e.post("/usage-events", fmt.Sprintf(`{"customerAlias":"seats","eventType":"api_call","customerEventId":"late-%d",
			"eventTimestamp":"2024-07-20T10:00:00Z"}`, i)), http.StatusCreated)
	}
	e.clock.Set(time.Date(2024, 8, 2, 9, 0, 0, 0, time.UTC))
	run := decode[map[string]any](t, e.post("/billing-runs", `{}`))
	var correction map[string]any
	for _, id := range run["invoiceIds"].([]any) {
		for _, l := range decode[page](t, e.get("/invoices/"+id.(string)+"/line-items")).Items {
			if strings.HasPrefix(l["title"].(string), "Late usage correction") {
				correction = l
			}
		}
	}
	if correction == nil || correction["quantity"] != "3" || correction["rate"] != "0.05" || correction["netTotal"] != "0.15" {
		t.Errorf("correction line %v (run %v)", correction, run)
	}
}

// TestCreditNoteDatesOverHTTP: a credit note's accounting date follows the
// rule of payments when it is finalized: not after today, not before the
// credited invoice's issue date.
func TestCreditNoteDatesOverHTTP(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	cust := e.customer("Dates Ltd")
	inv := e.sentInvoice(cust) // issued 2024-07-30
	for _, c := range []struct {
		date   string
		status int
	}{{"2199-12-31", 400}, {"2024-07-29", 400}, {"2024-07-30", 200}} {
		cn := e.creditNote(cust, `"invoiceId":"`+inv+`","accountingDate":"`+c.date+`"`)["id"].(string)
		wantStatus(t, e.post("/credit-notes/"+cn+"/line-items", cnLine(cn, "Refund", "1", "1", "0", "")), http.StatusCreated)
		r := e.post("/credit-notes/"+cn+"/finalize", "")
		if c.status == 400 {
			wantError(t, r, http.StatusBadRequest, "validation_failed", "accountingDate")
			wantStatus(t, e.post("/credit-notes/"+cn+"/void", ""), http.StatusOK)
			continue
		}
		wantStatus(t, r, c.status)
	}
}
