package console

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/billingd/billing"
	"github.com/billingd/billing/render"
)

// invoiceStatuses and paymentStatuses are the choices of the invoice
// list's filters.
var (
	invoiceStatuses = []billing.DocumentStatus{billing.StatusInProgress, billing.StatusDraft, billing.StatusFinal, billing.StatusSent, billing.StatusVoided}
	paymentStatuses = []billing.PaymentStatus{billing.PaymentStatusUnpaid, billing.PaymentStatusPartiallyPaid, billing.PaymentStatusPaid, billing.PaymentStatusUncollectible}
)

// invoiceList is the data of the invoices page.
type invoiceList struct {
	Status, PaymentStatus string
	CustomerID            string // ?customerId=: one customer's invoices
	Search                search // ?q=: a document number, customer name or amount
	CSV                   string
	Statuses              []billing.DocumentStatus
	PaymentStatuses       []billing.PaymentStatus
	Invoices              []billing.Invoice
	Pager                 pager
}

// invoices lists the account's invoices, filtered by status (the API's
// filter) and payment status (kept by the console: the API has no such
// filter).
func (c *Console) invoices(rq *request) error {
	q := rq.r.URL.Query()
	data := invoiceList{Status: q.Get("status"), PaymentStatus: q.Get("paymentStatus"), Statuses: invoiceStatuses, PaymentStatuses: paymentStatuses,
		CustomerID: q.Get("customerId"), CSV: rq.csvLink(),
		Search: search{Query: strings.TrimSpace(q.Get("q")), Placeholder: "Number, customer or amount"}}
	list := func(p billing.ListParams) (billing.Page[billing.Invoice], error) {
		return c.svc.ListInvoices(rq.ctx, rq.account, billing.InvoiceFilter{Status: billing.DocumentStatus(data.Status), CustomerID: data.CustomerID}, p)
	}
	want, needle := billing.PaymentStatus(data.PaymentStatus), strings.ToLower(data.Search.Query)
	keep := func(inv *billing.Invoice) bool {
		return (want == "" || inv.PaymentStatus == want) && (needle == "" || invoiceMatches(inv, needle))
	}
	if rq.wantsCSV() {
		return exportCSV(rq, "invoices", invoiceCSV, list, func(inv *billing.Invoice) []string {
			if !keep(inv) {
				return nil
			}
			return invoiceRow(inv)
		})
	}
	var err error
	if data.PaymentStatus == "" && needle == "" {
		var page billing.Page[billing.Invoice]
		page, err = list(rq.list())
		data.Invoices, data.Pager = page.Items, rq.pager(page.Before, page.After, page.TotalResultSize)
	} else {
		data.Invoices, data.Pager, err = filtered(rq, list, keep)
	}
	if err != nil {
		return err
	}
	return rq.render(http.StatusOK, "invoices", "Invoices", data)
}

// invoiceMatches reports whether an invoice's number, id, customer name or
// an amount (total or due, as stored or as shown: "1,234.50") contains
// needle (lower case).
func invoiceMatches(inv *billing.Invoice, needle string) bool {
	for _, t := range []string{inv.InvoiceNumber, inv.ID, inv.CustomerLegalCompanyName, inv.GrossTotal.String(), inv.AmountDue.String(),
		money(inv.GrossTotal, inv.Currency), money(inv.AmountDue, inv.Currency)} {
		if strings.Contains(strings.ToLower(t), needle) {
			return true
		}
	}
	return false
}

// invoicePage is the data of an invoice's page.
type invoicePage struct {
	Invoice  *billing.Invoice
	Actions  []option // the actions its status allows: URL name and button
	Lines    []billing.InvoiceLineItem
	Groups   []billing.InvoiceLineItemGroup
	Editable bool // DRAFT or IN_PROGRESS: lines may be added and removed
	Payments []billing.Payment
	// Collection is the invoice's collection through the account's
	// payment provider; nil without one.
	Collection *billing.InvoiceCollection
}

// invoice shows one invoice: its facts, its actions, its payments and the
// rendered document (framed from invoiceDocument).
func (c *Console) invoice(rq *request) error {
	inv, err := c.svc.GetInvoice(rq.ctx, rq.account, rq.r.PathValue("id"))
	if err != nil {
		return err
	}
	payments, err := c.svc.ListPayments(rq.ctx, rq.account, inv.ID, billing.SortAsc, billing.ListParams{Limit: 100})
	if err != nil {
		return err
	}
	data := invoicePage{Invoice: inv, Payments: payments.Items, Editable: editable(inv.Status)}
	if data.Editable {
		lines, err := c.svc.ListInvoiceLineItems(rq.ctx, rq.account, inv.ID, billing.LineItemFilter{}, billing.ListParams{Limit: 100})
		if err != nil {
			return err
		}
		data.Lines = lines.Items
		if data.Groups, _, err = rq.groupOptions(inv.ID); err != nil {
			return err
		}
	}
	if inv.DunningStatus != "" { // issued on an account with a payment provider
		if data.Collection, err = c.svc.GetInvoiceCollection(rq.ctx, rq.account, inv.ID); err != nil {
			return err
		}
	}
	data.Actions = actionOptions(invoiceActions, actionOrder, inv)
	return rq.render(http.StatusOK, "invoice", invoiceTitle(inv), data)
}

// invoiceTitle names an invoice by its number, or as a draft.
func invoiceTitle(inv *billing.Invoice) string {
	if inv.InvoiceNumber != "" {
		return "Invoice " + inv.InvoiceNumber
	}
	return "Draft invoice"
}

// documentPolicy is the Content-Security-Policy of a framed document: the
// render package's page has inline CSS and a data: logo, and nothing else;
// it is sandboxed and may only be framed by the console.
const documentPolicy = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; frame-ancestors 'self'; sandbox"

// document serves the printable document of the path's id that read
// returns, as the customer sees it: the render package's HTML (to be
// framed: the same rendering as the PDF and the API's ?format=html), or
// the PDF as a download.
func (rq *request) document(read func(ctx context.Context, account, id string) (*billing.PrintableDocument, error), pdf bool) error {
	d, err := read(rq.ctx, rq.account, rq.r.PathValue("id"))
	if err != nil {
		return err
	}
	h := rq.w.Header()
	pool := rq.c.cfg.Renders
	draw, contentType := pool.HTML, "text/html; charset=utf-8"
	if pdf {
		draw, contentType = pool.PDF, "application/pdf"
		h.Set("Content-Disposition", `attachment; filename="`+strings.NewReplacer(`"`, "", `\`, "").Replace(render.Filename(d))+`"`)
	} else {
		h.Set("Content-Security-Policy", documentPolicy)
		h.Set("X-Frame-Options", "SAMEORIGIN")
	}
	b, err := draw(rq.ctx, d)
	if secs, busy := render.RetryAfter(err); busy {
		h.Set("Retry-After", strconv.Itoa(secs))
	}
	if err != nil {
		h.Del("Content-Disposition")
		return err
	}
	h.Set("Content-Type", contentType)
	_, err = rq.w.Write(b)
	return err
}

// actionOrder is the order of the invoice page's action buttons.
var actionOrder = []string{"finalize", "send", "pay", "apply-credits", "retry-collection", "send-reminder", "void"}

// collecting reports whether an issued invoice with money due is being
// collected through the account's payment provider.
func collecting(inv *billing.Invoice) bool {
	return finalized(inv) && inv.DunningStatus != "" && inv.AmountDue.Sign() > 0
}

// finalized reports whether an invoice is FINAL or SENT.
func finalized(inv *billing.Invoice) bool {
	return inv.Status == billing.StatusFinal || inv.Status == billing.StatusSent
}

// invoiceActions are the actions of the invoice page, by URL name.
var invoiceActions = map[string]pageAction[*billing.Invoice]{
	"finalize": {
		label: "Finalize…", heading: "Finalize invoice", question: "Finalizing gives the invoice its number and freezes it: it can no longer be edited.",
		button: "Finalize", done: "finalized",
		allowed: func(inv *billing.Invoice) bool { return editable(inv.Status) },
		run:     statusChange(billing.InvoiceService.FinalizeInvoice),
	},
	"send": {
		label: "Send…", heading: "Send invoice", question: "The invoice is e-mailed to the customer's billing contacts, with its PDF.",
		button: "Send", done: "sent", allowed: finalized,
		run: statusChange(billing.InvoiceService.SendInvoice),
	},
	"void": {
		label: "Void…", heading: "Void invoice", question: "Voiding cancels the invoice for good. This cannot be undone.",
		button: "Void invoice", done: "voided", danger: true,
		allowed: func(inv *billing.Invoice) bool { return inv.Status != billing.StatusVoided },
		run:     statusChange(billing.InvoiceService.VoidInvoice),
	},
	"pay": {
		label: "Record a payment…", heading: "Record a payment", question: "Record a payment received for this invoice.",
		button: "Record payment", done: "paid",
		allowed: func(inv *billing.Invoice) bool { return finalized(inv) && inv.AmountDue.Sign() > 0 },
		run:     recordPayment,
	},
	"retry-collection": {
		label: "Retry now…", heading: "Retry the collection now", question: "The collection's next step (a charge of the saved payment method, a payment link or a reminder) is made due now instead of when it is planned: the next collection run (every minute in billingd serve) takes it.",
		button: "Retry now", done: "collection-retried", allowed: collecting,
		run: func(ctx context.Context, rq *request, inv *billing.Invoice) (any, error) {
			return rq.c.svc.RetryCollectionNow(ctx, rq.account, inv.ID)
		},
	},
	"send-reminder": {
		label: "Send a reminder…", heading: "Send a payment reminder", question: "The customer's billing contacts are e-mailed a reminder of the amount due, with the payment link when there is one.",
		button: "Send reminder", done: "reminder-sent", allowed: collecting,
		run: func(ctx context.Context, rq *request, inv *billing.Invoice) (any, error) {
			return rq.c.svc.SendPaymentReminder(ctx, rq.account, inv.ID)
		},
	},
	"apply-credits": {
		label: "Apply credits…", heading: "Apply credits", question: "The customer's cash credit in the invoice's currency, usable today, is applied: to a draft all of it (free credit as lines before tax), to an issued invoice the paid credit and credit note credit only, as money on account.",
		button: "Apply credits", done: "credits-applied",
		allowed: func(inv *billing.Invoice) bool { return inv.Status != billing.StatusVoided && inv.AmountDue.Sign() > 0 },
		run: func(ctx context.Context, rq *request, inv *billing.Invoice) (any, error) {
			return rq.c.svc.ApplyCredits(ctx, rq.account, inv.ID)
		},
	},
}

// statusChange is the run of an action that is one Service call on the
// invoice.
func statusChange(call func(billing.InvoiceService, context.Context, string, string) (*billing.Invoice, error)) func(context.Context, *request, *billing.Invoice) (any, error) {
	return func(ctx context.Context, rq *request, inv *billing.Invoice) (any, error) {
		return call(rq.c.svc, ctx, rq.account, inv.ID)
	}
}

// recordPayment records the payment of the pay form; a wrong amount or date
// is shown beside its field, as the Service's own refusals are.
func recordPayment(ctx context.Context, rq *request, inv *billing.Invoice) (any, error) {
	amount, aerr := decimalField(rq, "amount", "The amount", true)
	paidAt, derr := dateField(rq, "paidAt", "The payment date", true)
	if err := joinErrors(aerr, derr); err != nil {
		return nil, err
	}
	return rq.c.svc.RecordPayment(ctx, rq.account, inv.ID, billing.PaymentParams{Amount: amount, PaidAt: paidAt,
		Method: rq.formValue("method"), Reference: rq.formValue("reference")})
}

// invoiceAction shows an action's confirmation (GET) or does it (POST).
func (c *Console) invoiceAction(rq *request) error {
	a, inv, err := requestedAction(rq, invoiceActions, c.svc.GetInvoice)
	if err != nil {
		return err
	}
	return a.confirm(rq, inv, Prefix+"invoices/"+inv.ID, invoiceTitle(inv), func(cf *confirmation) error {
		var err error
		switch rq.r.PathValue("action") {
		case "pay":
			var today billing.Date
			if today, err = rq.today(); err == nil {
				cf.Fields = paymentFields(rq, inv, today)
			}
		case "apply-credits":
			cf.Question, err = rq.creditsQuestion(inv, a.question)
		}
		return err
	})
}

// today is the account's date now: the day in its time zone.
func (rq *request) today() (billing.Date, error) {
	set, err := rq.c.svc.GetAccountSettings(rq.ctx, rq.account)
	if err != nil {
		return billing.Date{}, err
	}
	loc := time.UTC
	if l, err := billing.LoadTimeZone(set.TimeZone); err == nil {
		loc = l
	}
	now := rq.c.cfg.Now().In(loc)
	return billing.Date{Year: now.Year(), Month: now.Month(), Day: now.Day()}, nil
}

// creditsQuestion adds the customer's cash balance in the invoice's
// currency to the apply-credits question.
func (rq *request) creditsQuestion(inv *billing.Invoice, q string) (string, error) {
	bal, err := rq.c.svc.GetCreditBalances(rq.ctx, rq.account, inv.CustomerID, nil)
	if err != nil {
		return "", err
	}
	for _, b := range bal.Items {
		if b.Type == billing.CreditCash && b.ID == string(inv.Currency) {
			return q + " Available: " + money(b.Balance, inv.Currency) + "; due: " + money(inv.AmountDue, inv.Currency) + ".", nil
		}
	}
	return q + " The customer has no cash credit in " + string(inv.Currency) + ".", nil
}

// paymentFields are the inputs of the payment form: what was submitted, or
// the amount due and today (the account's day in its time zone).
func paymentFields(rq *request, inv *billing.Invoice, today billing.Date) []field {
	return []field{
		{Name: "amount", Label: "Amount (" + string(inv.Currency) + ")", Value: rq.value("amount", inv.AmountDue.String()), Required: true,
			Hint: "At most the amount due, " + money(inv.AmountDue, inv.Currency) + "."},
		{Name: "paidAt", Label: "Paid on", Type: "date", Value: rq.value("paidAt", today.String()), Required: true},
		{Name: "method", Label: "Method", Value: rq.value("method", ""), Hint: "For example: bank transfer."},
		{Name: "reference", Label: "Reference", Value: rq.value("reference", "")},
	}
}
