package console

import "net/http"

// routes registers every page of the console, one line each: the one
// place to read what the console serves.
func (c *Console) routes() {
	c.mux.Handle("GET "+Prefix+"static/", c.static)
	c.mux.HandleFunc("GET "+Prefix+"sign-in", c.signInPage)
	c.mux.HandleFunc("POST "+Prefix+"sign-in", c.signIn)
	c.handle("POST "+Prefix+"sign-out", c.signOut)
	c.handle("GET "+Prefix+"{$}", func(rq *request) error {
		http.Redirect(rq.w, rq.r, Prefix+"customers", http.StatusSeeOther)
		return nil
	})

	c.handle("GET "+Prefix+"customers", c.customers)
	c.handle("GET "+Prefix+"customers/{id}", c.customer)

	c.handle("GET "+Prefix+"invoices", c.invoices)
	c.handle("GET "+Prefix+"invoices/{id}", c.invoice)
	c.handle("GET "+Prefix+"invoices/{id}/document", func(rq *request) error { return rq.document(c.svc.PrintableInvoice, false) })
	c.handle("GET "+Prefix+"invoices/{id}/pdf", func(rq *request) error { return rq.document(c.svc.PrintableInvoice, true) })
	c.handle("GET "+Prefix+"invoices/{id}/{action}", c.invoiceAction) // the confirmation
	c.handle("POST "+Prefix+"invoices/{id}/{action}", c.invoiceAction)

	c.handle("GET "+Prefix+"usage-metrics", c.usageMetrics)

	c.handle("GET "+Prefix+"deliveries", c.deliveries)
	c.handle("GET "+Prefix+"deliveries/{id}/retry", c.retryDelivery)
	c.handle("POST "+Prefix+"deliveries/{id}/retry", c.retryDelivery)

	// Anything else under the prefix is the console's 404 page.
	c.handle(Prefix, func(*request) error { return notFound })
}
