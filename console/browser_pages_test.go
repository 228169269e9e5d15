package console

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/billingd/billing"
)

// TestOverviewCreditNotesSchedulesAndRunsInABrowser walks the overview, a
// credit note, a schedule and the billing runs in headless chromium: the
// overview draws the revenue chart (one bar per month, the values in its
// table), a credit note is finalized through its confirmation (and the API
// agrees), a schedule shows its upcoming invoice, the runs page the
// failure of the last run, and another account's credit note is not found.
func TestOverviewCreditNotesSchedulesAndRunsInABrowser(t *testing.T) {
	f := newFixture(t)
	bl := f.billed()
	b := f.signedInTab(t)

	// The overview: the chart, its bars and its table.
	b.open("/console/")
	b.see("Overview", "Invoiced this month", "£433.80", "Invoiced per month (GBP)", "July 2024", "Billing failures", "Huge calls")
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	bars, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("figure.chart svg rect.chart-bar").length`))
	if err != nil {
		t.Fatal(err)
	}
	title, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("figure.chart svg > title").textContent`))
	if err != nil {
		t.Fatal(err)
	}
	if bars != overviewMonths || title != "Invoiced per month (GBP)" {
		t.Fatalf("the chart has %d bars (want %d) and the title %q", bars, overviewMonths, title)
	}
	b.shot("overview")

	// A credit note, finalized through its confirmation.
	b.click(`nav a[href="/console/credit-notes"]`)
	b.see("Credit notes", "Globex Ltd", "£10.00")
	b.click(`a[href="/console/credit-notes/` + bl.creditNote.ID + `"]`)
	b.see("Draft credit note", "Becomes credit")
	b.click(`.toolbar a[href$="/finalize"]`)
	b.see("Finalize credit note")
	b.click("main form button[type=submit]")
	b.see("The credit note was finalized.", "Credit note CN")
	if cn := must(f.svc.GetCreditNote(context.Background(), f.account, bl.creditNote.ID)); cn.Status != billing.StatusFinal {
		t.Fatalf("after finalize the credit note is %s", cn.Status)
	}
	b.shot("credit-note")

	// A schedule and its upcoming invoice.
	b.click(`nav a[href="/console/schedules"]`)
	b.click(`a[href="/console/schedules/` + bl.future.ID + `"]`)
	b.see("Upcoming invoice", "Billing date 1 Sep 2024", "Platform fee", "£49.00", "Phase 1")
	b.shot("schedule")

	editPhasesInABrowser(t, f, b)

	// The billing runs and the failure of the last one.
	b.click(`nav a[href="/console/billing-runs"]`)
	b.see("Billing runs", "Failing now", "Huge calls")
	b.shot("billing-runs")

	// Another account's credit note is not found.
	their := f.newBrowser()
	their.signIn(f.otherKey.ID, f.otherKey.Secret)
	if resp, _ := their.get("/console/credit-notes/" + bl.creditNote.ID); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("another account's credit note: %d", resp.StatusCode)
	}
}

// editPhasesInABrowser edits a draft schedule's phases in the tab b: a
// second phase from 1 November, checked in the Service.
func editPhasesInABrowser(t *testing.T, f *fixture, b *tab) {
	t.Helper()
	pro, plus := f.twoPrices(t)
	draft := f.draftSchedule(t, pro)
	b.open("/console/schedules/" + draft.ID)
	b.click(`.toolbar a[href$="/phases"]`)
	b.see("Phases · Pro plan", "Phase 1", "Phase 2")
	b.run("fill the phases", chromedp.SetValue(chromedp.CSS(`[id="f-phases[0].endDate"]`), "2024-10-31"),
		chromedp.SetValue(chromedp.CSS(`[id="f-phases[1].name"]`), "Growth"),
		chromedp.SetValue(chromedp.CSS(`[id="f-phases[1].priceIds[0]"]`), plus.ID))
	b.shot("schedule-phases")
	b.click("main form.form button[type=submit]")
	b.see("The phases of the billing schedule were saved.", "Growth 1 Nov 2024", "Pro plus")
	if sc := must(f.svc.GetBillingSchedule(context.Background(), f.account, draft.ID)); len(sc.Phases) != 2 ||
		sc.Phases[1].StartDate.String() != "2024-11-01" || sc.Phases[1].PriceIDs[0] != plus.ID {
		t.Fatalf("the API's phases after the form: %+v", sc.Phases)
	}
}
