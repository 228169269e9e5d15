package console

import (
	"encoding/csv"
	"strconv"
	"strings"
	"time"

	"github.com/billingd/billing"
)

// Every list page answers ?format=csv with the whole list (every page,
// the page's filters applied) as a CSV file for a spreadsheet: UTF-8, a
// header row, amounts as the exact decimal strings the API returns (no
// symbols, no grouping), dates in ISO 8601 (YYYY-MM-DD) and instants in
// RFC 3339 UTC. A text cell beginning with = + - or @ gets a leading '
// so that a spreadsheet does not run it as a formula.

// wantsCSV reports whether the list is asked for as CSV.
func (rq *request) wantsCSV() bool { return rq.r.URL.Query().Get("format") == "csv" }

// csvLink is the href of the CSV export of the page's list: the page's
// query (filters, search) with format=csv, without the page cursors.
func (rq *request) csvLink() string {
	q := rq.r.URL.Query()
	q.Del("after")
	q.Del("before")
	q.Del("done")
	q.Set("format", "csv")
	return rq.r.URL.Path + "?" + q.Encode()
}

// csvPage is the page size of the reads of an export.
const csvPage = 100

// exportCSV answers with the CSV of every item of list: header, then the
// row of each item (rows returning nil are left out: the console's own
// filters). name names the file (name-YYYY-MM-DD.csv).
func exportCSV[T any](rq *request, name string, header []string, list func(billing.ListParams) (billing.Page[T], error), row func(*T) []string) error {
	var rows [][]string
	p := billing.ListParams{Limit: csvPage}
	for {
		page, err := list(p)
		if err != nil {
			return err
		}
		for i := range page.Items {
			if r := row(&page.Items[i]); r != nil {
				rows = append(rows, r)
			}
		}
		if page.After == "" || len(page.Items) == 0 {
			break
		}
		p.After = page.After
	}
	return rq.writeCSV(name, header, rows)
}

// writeCSV answers with a CSV file of header and rows.
func (rq *request) writeCSV(name string, header []string, rows [][]string) error {
	h := rq.w.Header()
	h.Set("Content-Type", "text/csv; charset=utf-8")
	h.Set("Content-Disposition", `attachment; filename="`+name+"-"+rq.c.cfg.Now().UTC().Format(time.DateOnly)+`.csv"`)
	w := csv.NewWriter(rq.w)
	if err := w.Write(header); err != nil {
		return err
	}
	if err := w.WriteAll(rows); err != nil {
		return err
	}
	return w.Error()
}

// text is a text cell: s, with a leading ' when a spreadsheet would take
// it for a formula.
func text(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}

// isoDate is a date cell: YYYY-MM-DD, "" for none. It takes what day
// takes.
func isoDate(v any) string {
	if d, ok := dateOf(v); ok {
		return d.Format(time.DateOnly)
	}
	return ""
}

// instant is a timestamp cell: RFC 3339 in UTC, "" for none.
func instant(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// csvExport is the CSV form of a list: the file's name, the header, the
// row of an item; and how the list's page links its items.
type csvExport[T any] struct {
	name   string
	header []string
	row    func(*T) []string
	// links, when set, links the items of a page (statusList.Links).
	links func(*request, []T) (map[string]option, error)
}

// The columns and rows of each list's export.
var (
	customerCSV = []string{"id", "legalName", "customerAliases", "email", "taxStatus", "taxId", "timeZone", "country", "createdAt", "archivedAt"}
	invoiceCSV  = []string{"id", "invoiceNumber", "customerId", "customerName", "status", "paymentStatus", "currency", "issueDate", "dueDate",
		"netTotal", "totalTax", "grossTotal", "creditsApplied", "amountCredited", "amountPaid", "amountDue"}
	creditNoteCSV = []string{"id", "creditNoteNumber", "customerId", "customerName", "status", "invoiceId", "invoiceNumber", "currency", "issueDate",
		"netTotal", "totalTax", "grossTotal"}
	scheduleCSV = []string{"id", "label", "customerId", "customerName", "status", "startDate", "endDate", "phases", "lastBillingError"}
	deliveryCSV = []string{"id", "createdAt", "notificationType", "channel", "recipients", "status", "attempts", "lastAttemptAt", "lastError"}
	runCSV      = []string{"id", "startedAt", "finishedAt", "requested", "invoicesCreated", "failures", "error"}
	metricCSV   = []string{"id", "name", "metricType", "eventType", "aggregationType", "aggregationProperty", "createdAt"}
)

func customerRow(cu *billing.Customer) []string {
	var email, country string
	if len(cu.Contacts) > 0 {
		email = cu.Contacts[0].Email
	}
	if cu.Address != nil {
		country = cu.Address.Country
	}
	return []string{cu.ID, text(cu.LegalName), text(strings.Join(cu.CustomerAliases, ",")), text(email), string(cu.TaxStatus), text(cu.TaxID),
		cu.TimeZone, country, isoDate(cu.CreatedAt), isoDate(cu.ArchivedAt)}
}

func invoiceRow(inv *billing.Invoice) []string {
	return []string{inv.ID, inv.InvoiceNumber, inv.CustomerID, text(inv.CustomerLegalCompanyName), string(inv.Status), string(inv.PaymentStatus),
		string(inv.Currency), isoDate(inv.IssueDate), isoDate(inv.DueDate), inv.NetTotal.String(), inv.TotalTax.String(), inv.GrossTotal.String(),
		inv.CreditsApplied.String(), inv.AmountCredited.String(), inv.AmountPaid.String(), inv.AmountDue.String()}
}

func creditNoteRow(cn *billing.CreditNote) []string {
	return []string{cn.ID, cn.CreditNoteNumber, cn.CustomerID, text(cn.CustomerLegalCompanyName), string(cn.Status), cn.InvoiceID, cn.InvoiceNumber,
		string(cn.Currency), isoDate(cn.IssueDate), cn.NetTotal.String(), cn.TotalTax.String(), cn.GrossTotal.String()}
}

func deliveryRow(d *billing.Delivery) []string {
	var at, last string
	if n := len(d.Attempts); n > 0 {
		at, last = instant(d.Attempts[n-1].At), d.Attempts[n-1].Error
	}
	return []string{d.ID, instant(d.CreatedAt), string(d.NotificationType), string(d.Channel), text(strings.Join(d.Recipients, " ")),
		string(d.Status), strconv.Itoa(len(d.Attempts)), at, text(last)}
}
