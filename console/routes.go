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

	c.documentRoutes("invoices", c.invoices, c.invoice, c.invoiceAction, c.svc.PrintableInvoice)
	c.documentRoutes("credit-notes", c.creditNotes, c.creditNote, c.creditNoteAction, c.svc.PrintableCreditNote)

	c.handle("GET "+Prefix+"schedules", c.schedules)
	c.handle("GET "+Prefix+"schedules/{id}", c.schedule)

	c.handle("GET "+Prefix+"billing-runs", c.billingRuns)
	c.handle("GET "+Prefix+"billing-runs/{id}", c.billingRun)

	c.handle("GET "+Prefix+"usage-metrics", c.usageMetrics)

	c.handle("GET "+Prefix+"deliveries", c.deliveries)
	c.handle("GET "+Prefix+"deliveries/{id}/retry", c.retryDelivery)
	c.handle("POST "+Prefix+"deliveries/{id}/retry", c.retryDelivery)

	// Anything else under the prefix is the console's 404 page.
	c.handle(Prefix, func(*request) error { return notFound })
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
