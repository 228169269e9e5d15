package console

import (
	"net/http"
	"strings"
	"time"

	"github.com/billingd/billing"
)

// customerList is the data of the customers page.
type customerList struct {
	Search    search
	CSV       string // the link to the list as CSV
	Customers []billing.Customer
	Pager     pager
}

// customers lists the account's customers; ?q= searches their names, ids,
// aliases, labels and contact e-mails (the API has no search, so the
// console reads the list and keeps the matches).
func (c *Console) customers(rq *request) error {
	q := strings.TrimSpace(rq.r.URL.Query().Get("q"))
	list := func(p billing.ListParams) (billing.Page[billing.Customer], error) {
		return c.svc.ListCustomers(rq.ctx, rq.account, billing.CustomerFilter{}, p)
	}
	needle := strings.ToLower(q)
	if rq.wantsCSV() {
		return exportCSV(rq, "customers", customerCSV, list, func(cu *billing.Customer) []string {
			if q != "" && !customerMatches(cu, needle) {
				return nil
			}
			return customerRow(cu)
		})
	}
	data := customerList{Search: search{Query: q, Placeholder: "Name, id, alias or e-mail"}, CSV: rq.csvLink()}
	var err error
	if q == "" {
		var page billing.Page[billing.Customer]
		page, err = list(rq.list())
		data.Customers, data.Pager = page.Items, rq.pager(page.Before, page.After, page.TotalResultSize)
	} else {
		data.Customers, data.Pager, err = filtered(rq, list, func(cu *billing.Customer) bool { return customerMatches(cu, needle) })
	}
	if err != nil {
		return err
	}
	return rq.render(http.StatusOK, "customers", "Customers", data)
}

// customerMatches reports whether a customer's name, id, label, aliases or
// contact e-mails contain needle (lower case).
func customerMatches(cu *billing.Customer, needle string) bool {
	texts := append([]string{cu.LegalName, cu.ID, cu.Label}, cu.CustomerAliases...)
	for _, ct := range cu.Contacts {
		texts = append(texts, ct.Email, ct.Name)
	}
	for _, t := range texts {
		if strings.Contains(strings.ToLower(t), needle) {
			return true
		}
	}
	return false
}

// customerPage is the data of a customer's page.
type customerPage struct {
	Customer    *billing.Customer
	Invoices    []billing.Invoice
	Pager       pager
	Schedules   billing.Page[billing.BillingSchedule]
	CreditNotes billing.Page[billing.CreditNote]
	Credits     *billing.CreditBalances
	Seats       []billing.SeatTypeBalance
	Usage       *customerUsage // the charts of the customerUsage block (usage.go)
	Names       *customerNames
}

// customer shows one customer: details, aliases, billing schedules,
// invoices (paged), credit notes, credit balances and seat balances.
func (c *Console) customer(rq *request) error {
	id := rq.r.PathValue("id")
	cu, err := c.svc.GetCustomer(rq.ctx, rq.account, id)
	if err != nil {
		return err
	}
	data := customerPage{Customer: cu, Names: rq.customerNames()}
	invoices, err := c.svc.ListInvoices(rq.ctx, rq.account, billing.InvoiceFilter{CustomerID: id}, rq.list())
	if err != nil {
		return err
	}
	data.Invoices, data.Pager = invoices.Items, rq.pager(invoices.Before, invoices.After, invoices.TotalResultSize)
	first := billing.ListParams{Limit: pageSize}
	if data.Schedules, err = c.svc.ListBillingSchedules(rq.ctx, rq.account, billing.BillingScheduleFilter{CustomerID: id}, first); err != nil {
		return err
	}
	if data.CreditNotes, err = c.svc.ListCreditNotes(rq.ctx, rq.account, billing.CreditNoteFilter{CustomerID: id}, first); err != nil {
		return err
	}
	if data.Credits, err = c.svc.GetCreditBalances(rq.ctx, rq.account, id, nil); err != nil {
		return err
	}
	seats, err := c.svc.GetSeatBalance(rq.ctx, rq.account, id, nil)
	if err != nil {
		return err
	}
	data.Seats = seats.Balances
	if data.Usage, err = c.customerUsage(rq, cu); err != nil {
		return err
	}
	return rq.render(http.StatusOK, "customer", cu.LegalName, data)
}

// scanLimit and scanBudget bound what one filtered page reads (the API's
// pages of 100): at most scanLimit items, and no further page once
// scanBudget has passed since the first, so that a search whose matches are
// rare still answers within the console's 100 ms (BENCHMARKS.md); a page
// that stopped early offers Next to read on.
const (
	scanLimit  = 2000
	scanBudget = 50 * time.Millisecond
)

// filtered returns a page of the items of list that keep accepts, for the
// filters the API does not have: it reads the API's pages of 100 from the
// request's after cursor until a console page is full, the list ends, or
// scanLimit items were read or scanBudget spent. It pages forward only.
func filtered[T any](rq *request, list func(billing.ListParams) (billing.Page[T], error), keep func(*T) bool) ([]T, pager, error) {
	began := time.Now()
	p := billing.ListParams{Limit: 100, After: rq.r.URL.Query().Get("after")}
	var out []T
	for read := 0; ; {
		page, err := list(p)
		if err != nil {
			return nil, pager{}, err
		}
		for i := range page.Items {
			if keep(&page.Items[i]) {
				out = append(out, page.Items[i])
			}
		}
		read += len(page.Items)
		if len(out) >= pageSize || page.After == "" || read >= scanLimit || time.Since(began) >= scanBudget {
			return out, rq.pager("", page.After, -1), nil
		}
		p.After = page.After
	}
}
