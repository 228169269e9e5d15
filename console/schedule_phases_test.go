package console

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/billingd/billing"
)

// twoPrices creates a product with two monthly GBP prices, Pro (49.00) and
// Pro plus (99.00).
func (f *fixture) twoPrices(t *testing.T) (pro, plus *billing.Price) {
	t.Helper()
	ctx := context.Background()
	product := must(f.svc.CreateProduct(ctx, f.account, billing.CreateProductParams{Name: "Platform"}))
	price := func(name, amount string) *billing.Price {
		return must(f.svc.CreatePrice(ctx, f.account, billing.CreatePriceParams{ProductID: product.ID, Name: name, Currency: billing.CurrencyGBP,
			Structure:        billing.PriceStructure{PricingType: billing.PricingFixed, Price: new(billing.MustDecimal(amount))},
			BillingFrequency: billing.FrequencyMonthly, BillingType: billing.BillingTypeInAdvance}))
	}
	return price("Pro", "49.00"), price("Pro plus", "99.00")
}

// draftSchedule creates a DRAFT schedule of f's customer from 1 August
// 2024, one phase of price.
func (f *fixture) draftSchedule(t *testing.T, price *billing.Price) *billing.BillingSchedule {
	t.Helper()
	start, auto, draft := must(billing.ParseDate("2024-08-01")), false, true
	return must(f.svc.CreateBillingSchedule(context.Background(), f.account, billing.BillingScheduleParams{CustomerID: f.customer.ID, StartDate: &start,
		AutoIssueInvoices: &auto, IsDraft: &draft, Label: "Pro plan", Phases: []billing.PhaseParams{{PriceIDs: []string{price.ID}, StartDate: &start}}}))
}

// TestEditSchedulePhases edits a DRAFT schedule's phases in the console:
// the form's own refusal and the Service's by their fields, then two phases
// saved through UpdateBillingSchedule (the second starting the day after
// the first's last day), the same form again changing nothing, and an
// active schedule's refusal shown on the form.
func TestEditSchedulePhases(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	pro, plus := f.twoPrices(t)
	sc := f.draftSchedule(t, pro)
	b := f.signedIn()
	_, page := b.get("/console/schedules/" + sc.ID)
	contains(t, page, `href="/console/schedules/`+sc.ID+`/phases">Edit phases…</a>`)
	path := "/console/schedules/" + sc.ID + "/phases"
	_, page = b.get(path)
	contains(t, page, "Phase 1", "Phase 2", `<option value="`+pro.ID+`" selected>`)

	// Two phases, the first without a last day: the form's refusal.
	two := url.Values{"phases[0].name": {"Launch"}, "phases[0].priceIds[0]": {pro.ID}, "phases[1].name": {"Growth"}, "phases[1].priceIds[0]": {plus.ID}}
	resp, body := b.post(path, b.form(path, two))
	refused(t, "a first phase without a last day", resp, body, http.StatusBadRequest, "phases[0].endDate", "A phase followed by another needs its last day")
	// A last day before the schedule starts: the Service's refusal by its field.
	two.Set("phases[0].endDate", "2024-07-01")
	resp, body = b.post(path, b.form(path, two))
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, `id="e-f-phases[0].endDate"`) {
		t.Fatalf("a last day before the start: %d\n%s", resp.StatusCode, body)
	}
	if got := must(f.svc.GetBillingSchedule(ctx, f.account, sc.ID)); len(got.Phases) != 1 || got.Phases[0].ID != sc.Phases[0].ID {
		t.Fatalf("phases after the refusals: %+v", got.Phases)
	}

	two.Set("phases[0].endDate", "2024-10-31")
	form := b.form(path, two)
	resp, _ = b.post(path, form)
	if resp.StatusCode != http.StatusSeeOther || !strings.Contains(resp.Header.Get("Location"), "/console/schedules/"+sc.ID) {
		t.Fatalf("save: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	got := must(f.svc.GetBillingSchedule(ctx, f.account, sc.ID))
	if len(got.Phases) != 2 || got.Status != billing.ScheduleStatusDraft || got.Label != "Pro plan" ||
		got.Phases[0].Name != "Launch" || got.Phases[0].EndDate.String() != "2024-10-31" || got.Phases[0].PriceIDs[0] != pro.ID ||
		got.Phases[1].Name != "Growth" || got.Phases[1].StartDate.String() != "2024-11-01" || got.Phases[1].PriceIDs[0] != plus.ID {
		t.Fatalf("the schedule after the save: %+v", got)
	}
	// The same form again (a double click): no second update.
	resp, _ = b.post(path, form)
	if again := must(f.svc.GetBillingSchedule(ctx, f.account, sc.ID)); resp.StatusCode != http.StatusSeeOther || again.Phases[0].ID != got.Phases[0].ID {
		t.Fatalf("the same form again: %d, phases %s then %s", resp.StatusCode, got.Phases[0].ID, again.Phases[0].ID)
	}

	// An active schedule cannot be edited: the Service's message on the form.
	must(f.svc.ActivateBillingSchedule(ctx, f.account, sc.ID))
	resp, body = b.post(path, b.form(path, two))
	if resp.StatusCode != http.StatusConflict || !strings.Contains(body, `role="alert"`) || !strings.Contains(body, "only a DRAFT schedule") {
		t.Fatalf("editing an active schedule: %d\n%s", resp.StatusCode, body)
	}
}
