package console

import (
	"net/http"
	"strconv"
	"sync"

	"github.com/billingd/billing"
)

// receivables shows what the account's customers owe, per currency, in age
// buckets by days past the due date (current, 1-30, 31-60, 61-90, over
// 90): the totals of every customer, and a page of customers by name
// (?after= the next page's cursor), each linking to its unpaid invoices;
// ?format=csv is the same table for every customer as CSV (one row per
// currency and customer, and the currency's total).
func (c *Console) receivables(rq *request) error {
	p := billing.ReceivablesPage{Limit: pageSize, After: rq.r.URL.Query().Get("after")}
	if rq.wantsCSV() {
		p = billing.ReceivablesPage{}
	}
	rec, err := c.svc.AgeReceivablesPage(rq.ctx, rq.account, p)
	if err != nil {
		return err
	}
	if rq.wantsCSV() {
		header := []string{"currency", "customerId", "customerName", "invoices", "current", "days1To30", "days31To60", "days61To90", "over90", "total"}
		var rows [][]string
		row := func(cur billing.Currency, id, name string, n int, b billing.AgeBuckets) []string {
			return []string{string(cur), id, text(name), strconv.Itoa(n), b.Current.String(), b.Days1To30.String(), b.Days31To60.String(),
				b.Days61To90.String(), b.Over90.String(), b.Total.String()}
		}
		for _, cr := range rec.Currencies {
			for _, cu := range cr.Customers {
				rows = append(rows, row(cr.Currency, cu.CustomerID, cu.CustomerName, cu.Invoices, cu.AgeBuckets))
			}
			rows = append(rows, row(cr.Currency, "", "Total", cr.Invoices, cr.Total))
		}
		return rq.writeCSV("receivables", header, rows)
	}
	first := ""
	if p.After != "" {
		first = rq.r.URL.Path
	}
	return rq.render(http.StatusOK, "receivables", "Receivables", struct {
		*billing.Receivables
		CSV   string
		Pager pager
	}{rec, rq.csvLink(), pager{Prev: first, Next: rq.pager("", rec.Next, -1).Next, Total: -1}})
}

// scheduleRow is a schedule as the schedule tables show it: with its name
// and its customer's.
type scheduleRow struct {
	billing.BillingSchedule
	Name, CustomerName string
}

// scheduleRows are the rows of schedules, their customers named by names.
func scheduleRows(names *customerNames, schedules []billing.BillingSchedule) []scheduleRow {
	out := make([]scheduleRow, len(schedules))
	for i := range schedules {
		out[i] = scheduleRow{schedules[i], scheduleName(&schedules[i]), names.Name(schedules[i].CustomerID)}
	}
	return out
}

// customerNames finds customers' legal names by id for a list page,
// reading each customer once; a customer it cannot read is shown by id.
type customerNames struct {
	rq    *request
	mu    sync.Mutex
	names map[string]string
}

// customerNames returns an empty cache of the request's customers' names.
func (rq *request) customerNames() *customerNames {
	return &customerNames{rq: rq, names: map[string]string{}}
}

// Name returns the legal name of the customer id, or id.
func (n *customerNames) Name(id string) string {
	if n == nil || id == "" {
		return id
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if name, ok := n.names[id]; ok {
		return name
	}
	name := id
	if cu, err := n.rq.c.svc.GetCustomer(n.rq.ctx, n.rq.account, id); err == nil {
		name = cu.LegalName
	}
	n.names[id] = name
	return name
}
