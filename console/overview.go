package console

import (
	"fmt"
	"html/template"
	"net/http"
	"strings"

	"github.com/billingd/billing"
	"github.com/billingd/billing/console/chart"
)

// overviewMonths is how many months the overview's revenue chart shows.
const overviewMonths = 12

// overviewPage is the data of the overview.
type overviewPage struct {
	Summary    *billing.InvoiceSummary
	Currencies []currencyOverview
	// FailedDeliveries and FailingSchedules are the first of each, with
	// their totals.
	FailedDeliveries billing.Page[billing.Delivery]
	FailingSchedules billing.Page[billing.BillingSchedule]
	Names            *customerNames // the failing schedules' customers
	// LastRun is the newest billing run record; nil when none.
	LastRun *billing.BillingRunRecord
}

// currencyOverview is the overview of one currency: its figures and the
// chart of what was invoiced per month.
type currencyOverview struct {
	billing.CurrencySummary
	ThisMonth billing.Decimal
	Chart     template.HTML
}

// overview shows what finance looks at first: revenue invoiced this month
// and over the last 12 months as a chart (per currency), the amount due and
// overdue, failed deliveries, schedules the engine could not bill, and the
// last billing run.
func (c *Console) overview(rq *request) error {
	sum, err := c.svc.SummarizeInvoices(rq.ctx, rq.account, overviewMonths)
	if err != nil {
		return err
	}
	data := overviewPage{Summary: sum, Names: rq.customerNames()}
	for _, cs := range sum.Currencies {
		co := currencyOverview{CurrencySummary: cs, ThisMonth: cs.Invoiced[len(cs.Invoiced)-1]}
		if co.Chart, err = revenueChart(sum.Months, cs); err != nil {
			return err
		}
		data.Currencies = append(data.Currencies, co)
	}
	few := billing.ListParams{Limit: 5}
	if data.FailedDeliveries, err = c.svc.ListDeliveries(rq.ctx, rq.account, billing.DeliveryFilter{Status: billing.DeliveryFailed}, few); err != nil {
		return err
	}
	if data.FailingSchedules, err = c.svc.ListBillingSchedules(rq.ctx, rq.account, billing.BillingScheduleFilter{Failing: true}, few); err != nil {
		return err
	}
	runs, err := c.svc.ListBillingRuns(rq.ctx, rq.account, billing.ListParams{Limit: 1})
	if err != nil {
		return err
	}
	if len(runs.Items) > 0 {
		data.LastRun = &runs.Items[0]
	}
	return rq.render(http.StatusOK, "overview", "Overview", data)
}

// revenueChart draws the invoiced amounts of one currency per month.
func revenueChart(months []billing.Date, cs billing.CurrencySummary) (template.HTML, error) {
	cur := string(cs.Currency)
	ch := chart.Chart{
		ID: "revenue-" + strings.ToLower(cur), Title: "Invoiced per month (" + cur + ")",
		Description: fmt.Sprintf("The gross total of the invoices issued in each of the last %d months, in %s; the table lists the same amounts.", len(months), cur),
		XLabel:      "Month", YLabel: "Invoiced (" + cur + ")",
	}
	for i, m := range months {
		t := m.Time()
		ch.Points = append(ch.Points, chart.Point{Label: t.Format("January 2006"), Short: t.Format("Jan"),
			Value: cs.Invoiced[i], Text: money(cs.Invoiced[i], cs.Currency)})
	}
	return chart.Render(ch)
}
