package console

import "net/http"

// routes registers every page of the console. Each area registers its own
// routes in one function of its file.
func (c *Console) routes() {
	c.mux.Handle("GET "+Prefix+"static/", c.static)
	c.mux.HandleFunc("GET "+Prefix+"sign-in", c.signInPage)
	c.mux.HandleFunc("POST "+Prefix+"sign-in", c.signIn)
	c.handle("POST "+Prefix+"sign-out", c.signOut)
	c.handle("GET "+Prefix+"{$}", func(rq *request) error {
		http.Redirect(rq.w, rq.r, Prefix+"customers", http.StatusSeeOther)
		return nil
	})
	c.customerRoutes()
	c.invoiceRoutes()
	c.deliveryRoutes()
	// Anything else under the prefix is the console's 404 page.
	c.handle(Prefix, func(*request) error { return notFound })
}
