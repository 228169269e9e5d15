package console

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/billingd/billing"
	"github.com/billingd/billing/httpserver"
)

// TestFormErrorsInABrowser submits each form of the console with a value
// the Service (or the form) refuses, in headless chromium at a phone's
// width (390 px): each answers with the API's status, the message beside
// the field it names (aria-invalid, described by the message), every input
// labelled, and nothing wider than the screen; and nothing was created.
//
// Long on purpose: its table names every form with the value it refuses,
// which reads best in one place.
func TestFormErrorsInABrowser(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	issued := f.finalInvoice("2", "50.00")
	product := must(f.svc.CreateProduct(ctx, f.account, billing.CreateProductParams{Name: "Platform"}))
	price := must(f.svc.CreatePrice(ctx, f.account, billing.CreatePriceParams{ProductID: product.ID, Name: "Pro", Currency: billing.CurrencyGBP,
		Structure:        billing.PriceStructure{PricingType: billing.PricingFixed, Price: new(billing.MustDecimal("49.00"))},
		BillingFrequency: billing.FrequencyMonthly, BillingType: billing.BillingTypeInAdvance}))
	start := must(billing.ParseDate("2024-07-01"))
	no := false
	sc := must(f.svc.CreateBillingSchedule(ctx, f.account, billing.BillingScheduleParams{CustomerID: f.customer.ID, StartDate: &start,
		AutoIssueInvoices: &no, IsDraft: &no, Phases: []billing.PhaseParams{{StartDate: &start, PriceIDs: []string{price.ID}}}}))
	draft := f.draftSchedule(t, price)
	b := f.signedInTab(t)
	b.run("a phone's width", chromedp.EmulateViewport(390, 844))
	invoices := func() int {
		return must(f.svc.ListInvoices(ctx, f.account, billing.InvoiceFilter{}, billing.ListParams{})).TotalResultSize
	}
	before := invoices()
	for _, c := range []struct {
		path   string
		fill   map[string]string
		field  string // the field the message is beside
		status int64
	}{
		{"/console/customers/new", map[string]string{"f-legalName": "Initech", "f-address.line1": "1 Road", "f-address.town": "Berlin",
			"f-address.postcode": "10115", "f-address.country": "Germany"}, "address.country", http.StatusBadRequest},
		{"/console/customers/" + f.customer.ID + "/edit", map[string]string{"f-timeZone": "Mars/Olympus_Mons"}, "timeZone", http.StatusBadRequest},
		{"/console/invoices/new", map[string]string{"f-customerId": f.customer.ID, "f-lines.0.title": "Audit", "f-lines.0.quantity": "ten",
			"f-lines.0.rate": "100"}, "lines.0.quantity", http.StatusBadRequest},
		{"/console/invoices/" + f.invoice.ID + "/lines/new", map[string]string{"f-title": "Extra", "f-quantity": "1", "f-rate": "5",
			"f-taxRate": "1.5"}, "taxRate", http.StatusBadRequest},
		{"/console/invoices/" + issued.ID + "/pay", map[string]string{"f-amount": "-5"}, "amount", http.StatusBadRequest},
		{"/console/credit-notes/new?invoiceId=" + issued.ID, map[string]string{"f-lines.0.quantity": "two"}, "lines.0.quantity", http.StatusBadRequest},
		{"/console/credits/new?customerId=" + f.customer.ID, map[string]string{"f-currency": "GBP", "f-amount": "-10"}, "amount", http.StatusBadRequest},
		{"/console/schedules/new", map[string]string{"f-customerId": f.customer.ID, "f-phases[0].priceIds[0]": price.ID,
			"f-startDate": "2024-08-01", "f-endDate": "2024-07-01"}, "endDate", http.StatusBadRequest},
		{"/console/schedules/" + sc.ID + "/cancel", map[string]string{"f-at": "2024-01-01"}, "at", http.StatusBadRequest},
		{"/console/schedules/" + draft.ID + "/phases", map[string]string{"f-phases[0].endDate": "2024-07-01"}, "phases[0].endDate", http.StatusBadRequest},
	} {
		b.open(c.path)
		var steps []chromedp.Action[chromedp.Void]
		for id, v := range c.fill {
			steps = append(steps, chromedp.SetValue(chromedp.CSS(`[id="`+id+`"]`), v))
		}
		b.run("fill "+c.path, steps...)
		st := b.click("main form.form button[type=submit]")
		msg, unlabelled, wide := b.formVerdict(c.field)
		if st != c.status || msg == "" || unlabelled != 0 || wide {
			t.Errorf("%s: status %d (want %d), message by %s %q, %d inputs without a label, wider than 390 px: %v\n%s",
				c.path, st, c.status, c.field, msg, unlabelled, wide, b.text())
		}
		if c.path == "/console/invoices/new" {
			b.shot("form-error-390px")
		}
	}
	if n := invoices(); n != before {
		t.Errorf("refused forms left %d invoices, want %d", n, before)
	}
	if n := must(f.svc.ListCustomers(ctx, f.account, billing.CustomerFilter{}, billing.ListParams{})).TotalResultSize; n != 1 {
		t.Errorf("refused forms left %d customers, want 1", n)
	}
}

// formVerdict reads a refused form in the tab: the message beside field
// (when the field is marked invalid and described by it), how many inputs
// have no label, and whether the page is wider than the screen.
func (b *tab) formVerdict(field string) (msg string, unlabelled int, wide bool) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	msg, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => { const f = document.getElementById("f-`+field+`");
		const e = document.getElementById("e-f-`+field+`");
		return f && e && f.getAttribute("aria-invalid") === "true" && f.getAttribute("aria-describedby").includes(e.id) ? e.textContent : "" })()`))
	if err == nil {
		unlabelled, err = chromedp.Run(ctx, chromedp.Evaluate[int](`[...document.querySelectorAll("main input:not([type=hidden]), main select, main textarea")]
			.filter(i => !document.querySelector('label[for="' + i.id + '"]')).length`))
	}
	if err == nil {
		wide, err = chromedp.Run(ctx, chromedp.Evaluate[bool](`document.documentElement.scrollWidth > window.innerWidth`))
	}
	if err != nil {
		b.t.Fatalf("reading the form: %v", err)
	}
	return msg, unlabelled, wide
}

// TestConfirmationRefusalsInABrowser presses the button of each
// confirmation-only action (finalize, send and void an invoice, suspend and
// cancel a schedule) where the Service refuses it, in headless chromium:
// the confirmation comes back with the API's 4xx status and the Service's
// own message in its alert, never an error page; and the API's state is
// unchanged. Archiving a customer someone archived meanwhile is no refusal
// (the Service answers with the archived customer): it leads to the
// customer's page.
//
// Long on purpose: its table names every action with the state that
// refuses it, which reads best in one place.
func TestConfirmationRefusalsInABrowser(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	issued := f.finalInvoice("2", "50.00")
	voided := f.finalInvoice("1", "10.00")
	must(f.svc.VoidInvoice(ctx, f.account, voided.ID))
	pro, _ := f.twoPrices(t)
	draft := f.draftSchedule(t, pro)
	gone := f.newCustomer(f.account, "Hooli Inc", "hooli")
	b := f.signedInTab(t)
	for _, c := range []struct {
		path   string
		before func() // changes the state after the confirmation is shown (another person's action)
		call   func() error
	}{
		{"/console/invoices/" + issued.ID + "/finalize", nil, func() error { _, err := f.svc.FinalizeInvoice(ctx, f.account, issued.ID); return err }},
		{"/console/invoices/" + voided.ID + "/send", nil, func() error { _, err := f.svc.SendInvoice(ctx, f.account, voided.ID); return err }},
		{"/console/invoices/" + voided.ID + "/void", nil, func() error { _, err := f.svc.VoidInvoice(ctx, f.account, voided.ID); return err }},
		{"/console/customers/" + gone.ID + "/archive", func() { must(f.svc.ArchiveCustomer(ctx, f.account, gone.ID)) }, nil},
		{"/console/schedules/" + draft.ID + "/suspend", nil, func() error { _, err := f.svc.SuspendBillingSchedule(ctx, f.account, draft.ID); return err }},
		{"/console/schedules/" + draft.ID + "/cancel", nil, func() error {
			_, err := f.svc.CancelBillingSchedule(ctx, f.account, draft.ID, billing.CancelBillingScheduleParams{})
			return err
		}},
	} {
		b.open(c.path)
		if c.before != nil {
			c.before()
		}
		st := b.click("main form.form button[type=submit]")
		if c.call == nil {
			if st != http.StatusOK || b.alert() != "" {
				t.Errorf("%s: status %d, alert %q", c.path, st, b.alert())
			}
			b.see("Hooli Inc", "Archived")
			continue
		}
		refusal := c.call()
		errs := billing.Errors(refusal)
		if len(errs) == 0 {
			t.Fatalf("%s: the Service does not refuse it", c.path)
		}
		if want := int64(httpserver.StatusOf(errs[0].Code)); st != want || st >= 500 {
			t.Errorf("%s: status %d, want %d", c.path, st, want)
		}
		alert := b.alert()
		if !strings.Contains(alert, errs[0].Message) {
			t.Errorf("%s: the alert %q lacks the Service's message %q", c.path, alert, errs[0].Message)
		}
		if c.path == "/console/invoices/"+voided.ID+"/void" {
			b.shot("refused-void")
		}
	}
	if inv := must(f.svc.GetInvoice(ctx, f.account, f.invoice.ID)); inv.Status != billing.StatusDraft {
		t.Errorf("the draft invoice is %s after the refusals", inv.Status)
	}
	if sc := must(f.svc.GetBillingSchedule(ctx, f.account, draft.ID)); sc.Status != billing.ScheduleStatusDraft {
		t.Errorf("the draft schedule is %s after the refusals", sc.Status)
	}
}

// alert returns the text of the page's alert ("" when it has none).
func (b *tab) alert() string {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(document.querySelector('main [role="alert"]') || {textContent: ""}).textContent`))
	if err != nil {
		b.t.Fatalf("reading the alert: %v", err)
	}
	return s
}
