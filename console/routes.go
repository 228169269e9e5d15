package console

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

	c.handle("GET "+Prefix+"invoices", c.invoices)
	c.handle("GET "+Prefix+"invoices/{id}", c.invoice)
	c.handle("GET "+Prefix+"invoices/{id}/document", func(rq *request) error { return rq.document(c.svc.PrintableInvoice, false) })
	c.handle("GET "+Prefix+"invoices/{id}/pdf", func(rq *request) error { return rq.document(c.svc.PrintableInvoice, true) })
	c.handle("GET "+Prefix+"invoices/{id}/{action}", c.invoiceAction) // the confirmation
	c.handle("POST "+Prefix+"invoices/{id}/{action}", c.invoiceAction)

	c.handle("GET "+Prefix+"credit-notes", c.creditNotes)
	c.handle("GET "+Prefix+"credit-notes/{id}", c.creditNote)
	c.handle("GET "+Prefix+"credit-notes/{id}/document", func(rq *request) error { return rq.document(c.svc.PrintableCreditNote, false) })
	c.handle("GET "+Prefix+"credit-notes/{id}/pdf", func(rq *request) error { return rq.document(c.svc.PrintableCreditNote, true) })
	c.handle("GET "+Prefix+"credit-notes/{id}/{action}", c.creditNoteAction) // the confirmation
	c.handle("POST "+Prefix+"credit-notes/{id}/{action}", c.creditNoteAction)

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
