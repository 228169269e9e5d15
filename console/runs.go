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
	data := runPage{BillingRunRecord: run, Names: rq.customerNames(), Schedules: map[string]string{}}
	for _, f := range run.Failures {
		if sc, err := c.svc.GetBillingSchedule(rq.ctx, rq.account, f.BillingScheduleID); err == nil {
			data.Schedules[f.BillingScheduleID] = scheduleName(sc)
		}
	}
	for i, id := range run.InvoiceIDs {
		label := id
		if i < maxNamedDocuments {
			if inv, err := c.svc.GetInvoice(rq.ctx, rq.account, id); err == nil {
				label = invoiceTitle(inv) + " · " + inv.CustomerLegalCompanyName + " · " + money(inv.GrossTotal, inv.Currency)
			}
		}
		data.Invoices = append(data.Invoices, option{id, label})
	}
	return rq.render(http.StatusOK, "run", "Billing run of "+moment(run.StartedAt), data)
}

// maxNamedDocuments bounds how many of a run's invoices its page names (the
// others are listed by id).
const maxNamedDocuments = 100

// runPage is the data of a billing run's page: the run, with its
// schedules, customers and invoices named.
type runPage struct {
	*billing.BillingRunRecord
	Names     *customerNames
	Schedules map[string]string // schedule id → name
	Invoices  []option          // id → number, customer and total
}
