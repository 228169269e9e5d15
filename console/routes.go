package console

import (
	"context"

	"github.com/billingd/billing"
)

// routes registers every page of the console, one line each (one line a
// kind of document: documentPages): the one place to read what the
// console serves.
func (c *Console) routes() {
	c.mux.Handle("GET "+Prefix+"static/", c.static)
	c.mux.HandleFunc("GET "+Prefix+"sign-in", c.signInPage)
	c.mux.HandleFunc("POST "+Prefix+"sign-in", c.signIn)
	c.handle("POST "+Prefix+"sign-out", c.signOut)
	c.handle("GET "+Prefix+"{$}", c.overview)

	c.handle("GET "+Prefix+"customers", c.customers)
	c.handle("GET "+Prefix+"customers/{id}", c.customer)

	c.documentPages("invoices", c.invoices, c.invoice, c.svc.PrintableInvoice, c.invoiceAction)
	c.documentPages("credit-notes", c.creditNotes, c.creditNote, c.svc.PrintableCreditNote, c.creditNoteAction)

	c.handle("GET "+Prefix+"schedules", c.schedules)
	c.handle("GET "+Prefix+"schedules/{id}", c.schedule)

	c.handle("GET "+Prefix+"billing-runs", c.billingRuns)
	c.handle("GET "+Prefix+"billing-runs/{id}", c.billingRun)

	c.handle("GET "+Prefix+"deliveries", c.deliveries)
	c.handle("GET "+Prefix+"deliveries/{id}/retry", c.retryDelivery)
	c.handle("POST "+Prefix+"deliveries/{id}/retry", c.retryDelivery)

	// Anything else under the prefix is the console's 404 page.
	c.handle(Prefix, func(*request) error { return notFound })
}

// documentPages registers the pages of one kind of document (invoices,
// credit notes) under Prefix+path: the list, a document's page, its
// rendering as HTML (document) and as PDF (pdf), and its actions (GET
// confirms, POST does it).
func (c *Console) documentPages(path string, list, page func(*request) error,
	printable func(ctx context.Context, account, id string) (*billing.PrintableDocument, error),
	action func(*request) error) {
	c.handle("GET "+Prefix+path, list)
	c.handle("GET "+Prefix+path+"/{id}", page)
	c.handle("GET "+Prefix+path+"/{id}/document", func(rq *request) error { return rq.document(printable, false) })
	c.handle("GET "+Prefix+path+"/{id}/pdf", func(rq *request) error { return rq.document(printable, true) })
	c.handle("GET "+Prefix+path+"/{id}/{action}", action) // the confirmation
	c.handle("POST "+Prefix+path+"/{id}/{action}", action)
}
