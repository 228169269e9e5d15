package console

import (
	"net/http"
	"strconv"

	"github.com/billingd/billing"
)

// runList is the data of the billing runs page.
type runList struct {
	Runs    []billing.BillingRunRecord
	Failing billing.Page[billing.BillingSchedule]
	Pager   pager
	CSV     string
	Names   *customerNames
}

// billingRuns lists the account's recorded billing runs, newest first, each
// with its failures, and the schedules failing now.
func (c *Console) billingRuns(rq *request) error {
	if rq.wantsCSV() {
		return exportCSV(rq, "billing-runs", runCSV, func(p billing.ListParams) (billing.Page[billing.BillingRunRecord], error) {
			return c.svc.ListBillingRuns(rq.ctx, rq.account, p)
		}, func(r *billing.BillingRunRecord) []string {
			return []string{r.ID, instant(r.StartedAt), instant(r.FinishedAt), strconv.FormatBool(r.Requested), strconv.Itoa(r.InvoicesCreated),
				strconv.Itoa(len(r.Failures)), text(r.Error)}
		})
	}
	data := runList{CSV: rq.csvLink(), Names: rq.customerNames()}
	page, err := c.svc.ListBillingRuns(rq.ctx, rq.account, rq.list())
	if data.Runs, data.Pager, err = listed(rq, page, err); err != nil {
		return err
	}
	if data.Failing, err = c.svc.ListBillingSchedules(rq.ctx, rq.account, billing.BillingScheduleFilter{Failing: true}, billing.ListParams{Limit: pageSize}); err != nil {
		return err
	}
	return rq.render(http.StatusOK, "runs", "Billing runs", data)
}

// billingRun shows one recorded run: what it did and every failure.
func (c *Console) billingRun(rq *request) error {
	run, err := c.svc.GetBillingRun(rq.ctx, rq.account, rq.r.PathValue("id"))
	if err != nil {
		return err
	}
	return rq.render(http.StatusOK, "run", "Billing run of "+moment(run.StartedAt), run)
}
