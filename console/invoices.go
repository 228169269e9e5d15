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
	data := invoiceList{Status: q.Get("status"), PaymentStatus: q.Get("paymentStatus"), Statuses: invoiceStatuses, PaymentStatuses: paymentStatuses}
	list := func(p billing.ListParams) (billing.Page[billing.Invoice], error) {
		return c.svc.ListInvoices(rq.ctx, rq.account, billing.InvoiceFilter{Status: billing.DocumentStatus(data.Status)}, p)
	}
	var err error
	if data.PaymentStatus == "" {
		var page billing.Page[billing.Invoice]
		page, err = list(rq.list())
		data.Invoices, data.Pager = page.Items, rq.pager(page.Before, page.After, page.TotalResultSize)
	} else {
		want := billing.PaymentStatus(data.PaymentStatus)
		data.Invoices, data.Pager, err = filtered(rq, list, func(inv *billing.Invoice) bool { return inv.PaymentStatus == want })
	}
	if err != nil {
		return err
	}
	return rq.render(http.StatusOK, "invoices", "Invoices", data)
}

// invoicePage is the data of an invoice's page.
type invoicePage struct {
	Invoice  *billing.Invoice
	Actions  []string // the names of the actions its status allows
	Payments []billing.Payment
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
	data := invoicePage{Invoice: inv, Payments: payments.Items}
	for _, name := range actionOrder {
		if invoiceActions[name].allowed(inv) {
			data.Actions = append(data.Actions, name)
		}
	}
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

// invoiceAction is an action on an invoice: its confirmation and what it
// calls.
type invoiceAction struct {
	heading, question, button, done string
	danger                          bool
	allowed                         func(*billing.Invoice) bool
	// run calls the Service; form is the confirmation's submitted form.
	run func(ctx context.Context, svc billing.InvoiceService, account, id string, form map[string][]string) error
}

// actionOrder is the order of the invoice page's action buttons.
var actionOrder = []string{"finalize", "send", "pay", "void"}

// finalized reports whether an invoice is FINAL or SENT.
func finalized(inv *billing.Invoice) bool {
	return inv.Status == billing.StatusFinal || inv.Status == billing.StatusSent
}

// invoiceActions are the actions of the invoice page, by URL name.
var invoiceActions = map[string]invoiceAction{
	"finalize": {
		heading: "Finalize invoice", question: "Finalizing gives the invoice its number and freezes it: it can no longer be edited.",
		button: "Finalize", done: "finalized",
		allowed: func(inv *billing.Invoice) bool {
			return inv.Status == billing.StatusDraft || inv.Status == billing.StatusInProgress
		},
		run: statusChange(billing.InvoiceService.FinalizeInvoice),
	},
	"send": {
		heading: "Send invoice", question: "The invoice is e-mailed to the customer's billing contacts, with its PDF.",
		button: "Send", done: "sent", allowed: finalized,
		run: statusChange(billing.InvoiceService.SendInvoice),
	},
	"void": {
		heading: "Void invoice", question: "Voiding cancels the invoice for good. This cannot be undone.",
		button: "Void invoice", done: "voided", danger: true,
		allowed: func(inv *billing.Invoice) bool { return inv.Status != billing.StatusVoided },
		run:     statusChange(billing.InvoiceService.VoidInvoice),
	},
	"pay": {
		heading: "Record a payment", question: "Record a payment received for this invoice.",
		button: "Record payment", done: "paid",
		allowed: func(inv *billing.Invoice) bool { return finalized(inv) && inv.AmountDue.Sign() > 0 },
		run:     recordPayment,
	},
}

// statusChange is the run of an action that is one Service call on the
// invoice.
func statusChange(call func(billing.InvoiceService, context.Context, string, string) (*billing.Invoice, error)) func(context.Context, billing.InvoiceService, string, string, map[string][]string) error {
	return func(ctx context.Context, svc billing.InvoiceService, account, id string, _ map[string][]string) error {
		_, err := call(svc, ctx, account, id)
		return err
	}
}

// recordPayment records the payment of the pay form.
func recordPayment(ctx context.Context, svc billing.InvoiceService, account, id string, form map[string][]string) error {
	get := func(name string) string {
		if v := form[name]; len(v) > 0 {
			return strings.TrimSpace(v[0])
		}
		return ""
	}
	amount, err := billing.ParseDecimal(get("amount"))
	if err != nil {
		return billing.FieldError("amount", "amount must be a decimal number such as 120.50")
	}
	paidAt, err := billing.ParseDate(get("paidAt"))
	if err != nil {
		return billing.FieldError("paidAt", "the payment date must be a date such as 2026-11-24")
	}
	_, err = svc.RecordPayment(ctx, account, id, billing.PaymentParams{Amount: &amount, PaidAt: &paidAt, Method: get("method"), Reference: get("reference")})
	return err
}

// invoiceAction shows an action's confirmation (GET) or does it (POST).
func (c *Console) invoiceAction(rq *request) error {
	a, ok := invoiceActions[rq.r.PathValue("action")]
	if !ok {
		return notFound
	}
	inv, err := c.svc.GetInvoice(rq.ctx, rq.account, rq.r.PathValue("id"))
	if err != nil {
		return err
	}
	page := Prefix + "invoices/" + inv.ID
	cf := confirmation{Heading: a.heading + " · " + invoiceTitle(inv), Question: a.question, Action: page + "/" + rq.r.PathValue("action"),
		Button: a.button, Danger: a.danger, Back: page}
	if rq.r.PathValue("action") == "pay" {
		cf.Fields = paymentFields(inv, rq.r.PostForm, c.cfg.Now())
	}
	if rq.r.Method != http.MethodPost {
		return rq.confirm(cf, nil)
	}
	if err := a.run(rq.ctx, c.svc, rq.account, inv.ID, rq.r.PostForm); err != nil {
		return rq.confirm(cf, err)
	}
	return rq.done(page, a.done)
}

// paymentFields are the inputs of the payment form: what was submitted, or
// the amount due and today.
func paymentFields(inv *billing.Invoice, form map[string][]string, now time.Time) []field {
	value := func(name, def string) string {
		if v := form[name]; len(v) > 0 {
			return v[0]
		}
		return def
	}
	return []field{
		{Name: "amount", Label: "Amount (" + string(inv.Currency) + ")", Value: value("amount", inv.AmountDue.String()), Required: true,
			Hint: "At most the amount due, " + inv.AmountDue.String() + " " + string(inv.Currency) + "."},
		{Name: "paidAt", Label: "Paid on", Type: "date", Value: value("paidAt", now.UTC().Format(time.DateOnly)), Required: true},
		{Name: "method", Label: "Method", Value: value("method", "")},
		{Name: "reference", Label: "Reference", Value: value("reference", "")},
	}
}
