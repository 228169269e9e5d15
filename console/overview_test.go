package console

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/billingd/billing"
)

// billed gives the fixture's account what the overview, schedule, credit
// note and billing run pages show: the fixture's invoice finalized (issued
// on the fixture's day, 30 July 2024), a credit note of it, a usage metric
// with events of the customer, a schedule that bills a monthly fee and one
// whose usage price cannot be billed (its amount has too many digits), and
// a billing run that recorded that failure.
type billed struct {
	creditNote  *billing.CreditNote
	bad, future *billing.BillingSchedule
	run         *billing.BillingRunRecord
}

func (f *fixture) billed() *billed {
	f.tb.Helper()
	ctx := context.Background()
	var out billed
	must(f.svc.FinalizeInvoice(ctx, f.account, f.invoice.ID))
	out.creditNote = must(f.svc.CreateCreditNote(ctx, f.account, billing.CreditNoteParams{
		Currency: billing.CurrencyGBP, CustomerID: f.customer.ID, InvoiceID: f.invoice.ID}))
	must(f.svc.CreateCreditNoteLineItem(ctx, f.account, out.creditNote.ID, billing.CreateCreditNoteLineItemParams{
		CreditNoteID: out.creditNote.ID, CreditNoteLineItemParams: billing.CreditNoteLineItemParams{
			Title: "Goodwill", Quantity: new(billing.MustDecimal("1")), Rate: new(billing.MustDecimal("10.00")),
			TaxRate: new(billing.MustDecimal("0")), ExternalIDs: []billing.KeyValue{}}}))
	metric := must(f.svc.CreateUsageMetric(ctx, f.account, billing.CreateUsageMetricParams{UsageMetricParams: billing.UsageMetricParams{
		Name: "API calls", MetricType: billing.MetricTypeSimple, EventType: "api_call", AggregationType: billing.AggregationCount}}))
	for _, at := range []string{"2024-05-03T10:00:00Z", "2024-06-10T10:00:00Z", "2024-06-11T10:00:00Z", "2024-07-02T10:00:00Z"} {
		ts := must(billing.ParseTimestamp(at))
		must(f.svc.CreateUsageEvent(ctx, f.account, billing.UsageEventParams{CustomerAlias: "globex", EventType: "api_call", EventTimestamp: &ts}))
	}
	product := must(f.svc.CreateProduct(ctx, f.account, billing.CreateProductParams{Name: "Platform"}))
	price := func(name string, st billing.PriceStructure, typ billing.BillingType) string {
		return must(f.svc.CreatePrice(ctx, f.account, billing.CreatePriceParams{ProductID: product.ID, Name: name, Currency: billing.CurrencyGBP,
			Structure: st, BillingFrequency: billing.FrequencyMonthly, BillingType: typ})).ID
	}
	fee := price("Platform fee", billing.PriceStructure{PricingType: billing.PricingFixed, Price: new(billing.MustDecimal("49.00"))}, billing.BillingTypeInAdvance)
	huge := price("Huge calls", billing.PriceStructure{PricingType: billing.PricingLinear, PricePerUnit: new(billing.MustDecimal("99999999999999999999")),
		UsageMetricID: metric.ID}, billing.BillingTypeInArrears)
	schedule := func(start string, prices ...string) *billing.BillingSchedule {
		no := false
		d := must(billing.ParseDate(start))
		return must(f.svc.CreateBillingSchedule(ctx, f.account, billing.BillingScheduleParams{CustomerID: f.customer.ID, StartDate: &d,
			AutoIssueInvoices: &no, IsDraft: &no, Phases: []billing.PhaseParams{{StartDate: &d, PriceIDs: prices}}}))
	}
	out.bad = schedule("2024-06-01", huge)
	out.future = schedule("2024-09-01", fee) // nothing billed yet: its upcoming invoice is September's
	must(f.svc.RunAccountBilling(ctx, f.account, nil))
	runs := must(f.svc.ListBillingRuns(ctx, f.account, billing.ListParams{Limit: 1}))
	out.run = &runs.Items[0]
	return &out
}

func TestOverviewShowsRevenueChartDueAndFailures(t *testing.T) {
	f := newFixture(t)
	bl := f.billed()
	b := f.signedIn()
	resp, body := b.get("/console/")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /console/: %d\n%s", resp.StatusCode, body)
	}
	contains(t, body,
		`<svg class="chart-svg"`, `Invoiced per month (GBP)`, // the chart, its title
		`<title>July 2024: £433.80</title>`, `<title>August 2023: £0</title>`, // a bar's hover value, 12 months
		`<th scope="row">July 2024</th><td class="num">£433.80</td>`, // the table beside it
		"Invoiced this month", "Amount due", "1 unpaid invoice", "Overdue", "0 overdue invoices",
		"Billing failures", "Huge calls", "/console/schedules/"+bl.bad.ID, "No failed deliveries.",
		"Last billing run", "/console/billing-runs/"+bl.run.ID)
	if strings.Contains(body, "<script") {
		t.Error("the overview sends a script")
	}
	t.Run("EmptyAccount", func(t *testing.T) {
		other := f.newBrowser()
		other.signIn(f.otherKey.ID, f.otherKey.Secret)
		_, body := other.get("/console/")
		contains(t, body, "No invoices issued yet", "No failed deliveries.", "Every schedule was billed.", "No billing run recorded yet.")
		if strings.Contains(body, "Globex") || strings.Contains(body, "433.80") {
			t.Error("another account's figures on the overview")
		}
	})
}

func TestCreditNotePagesAndActions(t *testing.T) {
	f := newFixture(t)
	bl := f.billed()
	b := f.signedIn()
	path := "/console/credit-notes/" + bl.creditNote.ID
	for p, want := range map[string][]string{
		"/console/credit-notes":               {"Credit notes", path, "Globex Ltd", "£10.00"},
		"/console/credit-notes?status=FINAL":  {"No credit notes."},
		path:                                  {"Draft credit note", "Finalize…", "Send…", "Void…", "Download PDF", path + "/document", "£10.00"},
		path + "/finalize":                    {"Finalize credit note", `name="csrf"`},
		"/console/customers/" + f.customer.ID: {path},
	} {
		resp, body := b.get(p)
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s: %d", p, resp.StatusCode)
			continue
		}
		contains(t, body, want...)
	}
	if resp, body := b.get(path + "/document"); !strings.Contains(body, "Goodwill") || !strings.Contains(resp.Header.Get("Content-Security-Policy"), "sandbox") {
		t.Errorf("the framed credit note: %d", resp.StatusCode)
	}
	if resp, _ := b.get(path + "/pdf"); resp.Header.Get("Content-Type") != "application/pdf" {
		t.Errorf("PDF: %v", resp.Header)
	}
	resp, _ := b.post(path+"/finalize", url.Values{"csrf": {b.token(path)}})
	if resp.StatusCode != http.StatusSeeOther || !strings.HasSuffix(resp.Header.Get("Location"), "?done=cn-finalized") {
		t.Fatalf("finalize: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	cn := must(f.svc.GetCreditNote(context.Background(), f.account, bl.creditNote.ID))
	if cn.Status != billing.StatusFinal || cn.CreditNoteNumber == "" {
		t.Fatalf("after finalize: %s %q", cn.Status, cn.CreditNoteNumber)
	}
	_, body := b.get(path + "?done=cn-finalized")
	contains(t, body, "The credit note was finalized.", "Credit note "+cn.CreditNoteNumber)
	if strings.Contains(body, "Finalize…") {
		t.Error("a final credit note offers Finalize")
	}
	// A refusal of the Service is shown beside the form: finalizing again.
	resp, body = b.post(path+"/finalize", url.Values{"csrf": {b.token(path)}})
	if resp.StatusCode != http.StatusConflict || !strings.Contains(body, `class="error"`) {
		t.Errorf("finalizing a final credit note: %d", resp.StatusCode)
	}
	if resp, _ := b.post(path+"/void", url.Values{}); resp.StatusCode != http.StatusForbidden {
		t.Errorf("void without its CSRF token: %d", resp.StatusCode)
	}
}

func TestSchedulePagesShowPhasesAndTheUpcomingInvoice(t *testing.T) {
	f := newFixture(t)
	bl := f.billed()
	b := f.signedIn()
	for p, want := range map[string][]string{
		"/console/schedules":           {bl.future.ID, bl.bad.ID, "ACTIVE"},
		"/console/schedules?failing=1": {bl.bad.ID, "Huge calls"},
		"/console/schedules/" + bl.future.ID: {"Upcoming invoice", "Billing date <strong>1 Sep 2024</strong>", "Platform fee", "£49.00",
			"Phase 1", "FIXED", "MONTHLY", "Globex Ltd"},
		"/console/schedules/" + bl.bad.ID:     {"The last billing run could not bill this schedule", "The billing engine cannot bill the next invoice", "Huge calls"},
		"/console/customers/" + f.customer.ID: {"/console/schedules/" + bl.future.ID},
	} {
		resp, body := b.get(p)
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s: %d", p, resp.StatusCode)
			continue
		}
		contains(t, body, want...)
	}
	if _, body := b.get("/console/schedules?failing=1"); strings.Contains(body, bl.future.ID) {
		t.Error("the failing filter shows a schedule that bills")
	}
}

func TestBillingRunPages(t *testing.T) {
	f := newFixture(t)
	bl := f.billed()
	b := f.signedIn()
	_, body := b.get("/console/billing-runs")
	contains(t, body, "Billing runs", "/console/billing-runs/"+bl.run.ID, "requested", "Huge calls", "Failing now")
	_, body = b.get("/console/billing-runs/" + bl.run.ID)
	contains(t, body, "Billing run of 30 Jul 2024 12:00 UTC", "1 failed", bl.bad.ID, "validation_failed", "Huge calls")
}

func TestCustomerPageChartsUsagePerMetric(t *testing.T) {
	f := newFixture(t)
	f.billed()
	f.clock.Set(time.Date(2024, 7, 30, 12, 0, 0, 0, time.UTC))
	b := f.signedIn()
	_, body := b.get("/console/customers/" + f.customer.ID)
	// The events: one in May, two in June, one in July; February to July.
	contains(t, body, "Usage per month", `<figure class="chart" id="usage-`, "API calls per month",
		`<circle class="chart-dot"`, "<title>June 2024: 2</title>", "<title>February 2024: 0</title>",
		`<th scope="row">July 2024</th><td class="num">1</td>`)
}

func TestMyPagesRefuseAnotherAccountsIDs(t *testing.T) {
	f := newFixture(t)
	bl := f.billed()
	other := f.newBrowser()
	other.signIn(f.otherKey.ID, f.otherKey.Secret)
	cn := "/console/credit-notes/" + bl.creditNote.ID
	for _, p := range []string{cn, cn + "/document", cn + "/pdf", cn + "/void", "/console/schedules/" + bl.future.ID,
		"/console/billing-runs/" + bl.run.ID, cn + "/no-such-action"} {
		if resp, body := other.get(p); resp.StatusCode != http.StatusNotFound || !strings.Contains(body, "Not found") {
			t.Errorf("GET %s as another account: %d", p, resp.StatusCode)
		}
	}
	resp, _ := other.post(cn+"/void", url.Values{"csrf": {other.token("/console/credit-notes")}})
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("voiding another account's credit note: %d", resp.StatusCode)
	}
	if got := must(f.svc.GetCreditNote(context.Background(), f.account, bl.creditNote.ID)); got.Status != billing.StatusDraft {
		t.Errorf("their credit note is %s", got.Status)
	}
	for _, p := range []string{"/console/credit-notes", "/console/schedules", "/console/billing-runs"} {
		if _, body := other.get(p); strings.Contains(body, "Globex") || strings.Contains(body, bl.future.ID) || strings.Contains(body, bl.run.ID) {
			t.Errorf("%s shows another account's records", p)
		}
	}
}
