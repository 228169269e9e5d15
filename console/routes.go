package console

import (
	"context"

	"github.com/billingd/billing"
)

// routes registers every page of the console, one line each: the one
// place to read what the console serves.
func (c *Console) routes() {
	c.mux.Handle("GET "+Prefix+"static/", c.static)
	c.mux.HandleFunc("GET "+Prefix+"sign-in", c.signInPage)
	c.mux.HandleFunc("POST "+Prefix+"sign-in", c.signIn)
	c.handle("POST "+Prefix+"sign-out", c.signOut)
	c.handle("GET "+Prefix+"{$}", c.overview)

	c.handle("GET "+Prefix+"customers", c.customers)
	c.handle("GET "+Prefix+"customers/{id}", c.customer)
	c.form("customers/new", c.newCustomer)
	c.form("customers/{id}/edit", c.editCustomer)
	c.form("customers/{id}/archive", c.archiveCustomer)

	c.form("invoices/new", c.newInvoice)
	c.form("invoices/{id}/lines/new", c.addInvoiceLine)
	c.form("invoices/{id}/lines/{line}/edit", c.editInvoiceLine)
	c.form("invoices/{id}/lines/{line}/remove", c.removeInvoiceLine)
	c.form("invoices/{id}/groups/new", c.addInvoiceGroup)
	c.form("invoices/{id}/groups/{group}/remove", c.removeInvoiceGroup)
	c.form("credit-notes/new", c.newCreditNote)
	c.form("credits/new", c.newCredit)
	c.form("schedules/new", c.newSchedule)
	c.handle("GET "+Prefix+"receivables", c.receivables)

	c.documentRoutes("invoices", c.invoices, c.invoice, c.invoiceAction, c.svc.PrintableInvoice)
	c.documentRoutes("credit-notes", c.creditNotes, c.creditNote, c.creditNoteAction, c.svc.PrintableCreditNote)

	c.handle("GET "+Prefix+"schedules", c.schedules)
	c.handle("GET "+Prefix+"schedules/{id}", c.schedule)
	c.form("schedules/{id}/phases", c.editSchedulePhases)
	c.form("schedules/{id}/{action}", c.scheduleAction)

	c.handle("GET "+Prefix+"billing-runs", c.billingRuns)
	c.handle("GET "+Prefix+"billing-runs/{id}", c.billingRun)

	c.handle("GET "+Prefix+"usage-metrics", c.usageMetrics)

	c.handle("GET "+Prefix+"deliveries", c.deliveries)
	c.handle("GET "+Prefix+"deliveries/{id}/retry", c.retryDelivery)
	c.handle("POST "+Prefix+"deliveries/{id}/retry", c.retryDelivery)

	// Anything else under the prefix is the console's 404 page.
	c.handle(Prefix, func(*request) error { return notFound })
}

// form registers a form at Prefix+path: GET shows it, POST submits it.
func (c *Console) form(path string, h func(*request) error) {
	c.handle("GET "+Prefix+path, h)
	c.handle("POST "+Prefix+path, h)
}

// documentRoutes registers the pages of a kind of document under
// Prefix+kind: the list, a document's page, its rendering framed
// (/document) and as a PDF (/pdf), and its actions: the confirmation (GET)
// and the action itself (POST) at /{action}.
func (c *Console) documentRoutes(kind string, list, page, action func(*request) error,
	printable func(ctx context.Context, account, id string) (*billing.PrintableDocument, error)) {
	base := Prefix + kind
	c.handle("GET "+base, list)
	c.handle("GET "+base+"/{id}", page)
	c.handle("GET "+base+"/{id}/document", func(rq *request) error { return rq.document(printable, false) })
	c.handle("GET "+base+"/{id}/pdf", func(rq *request) error { return rq.document(printable, true) })
	c.handle("GET "+base+"/{id}/{action}", action)
	c.handle("POST "+base+"/{id}/{action}", action)
}
