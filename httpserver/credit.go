package httpserver

import "github.com/billingd/billing"

// creditRoutes mounts credit grants (/credits) and the application of
// credit to a manual invoice. The specification's {id} and {customerId}
// share the path position after /credits, so both are :id: GET
// /credits/{id} is a grant, GET /credits/{customerId}/grants and
// /balances are a customer's.
func (a api) creditRoutes() {
	a.post("/credits", 201, body(func(c *call, p *billing.CreditGrantParams) (any, error) {
		return a.svc.CreateCreditGrant(c.ctx, c.account, *p)
	}))
	getList(a, "/credits", a.svc.ListCreditGrants)
	a.get("/credits/:id", 200, func(c *call) (any, error) {
		return a.svc.GetCreditGrant(c.ctx, c.account, c.param("id"))
	})
	a.get("/credits/:id/grants", 200, paged(func(c *call, p billing.ListParams) (any, error) {
		return a.svc.ListCustomerCreditGrants(c.ctx, c.account, c.param("id"), grants.read(c), p)
	}), listed("type", "status", "sortOrder"))
	a.get("/credits/:id/balances", 200, func(c *call) (any, error) {
		var date *billing.Date
		if v, ok := c.query["date"]; ok {
			d, err := billing.ParseDate(v[0])
			if err != nil {
				return nil, billing.FieldError("date", "date %s", billing.Errors(err)[0].Message)
			}
			date = &d
		}
		return a.svc.GetCreditBalances(c.ctx, c.account, c.param("id"), date)
	}, accepts("date"))
	a.get("/credits/:id/transactions", 200, paged(func(c *call, p billing.ListParams) (any, error) {
		return a.svc.ListCreditTransactions(c.ctx, c.account, c.param("id"), sortOrder(c), p)
	}), listed("sortOrder"))
	a.post("/credits/:id/void", 200, func(c *call) (any, error) {
		return a.svc.VoidCreditGrant(c.ctx, c.account, c.param("id"))
	})
	a.post("/invoices/:id/apply-credits", 200, func(c *call) (any, error) {
		return a.svc.ApplyCredits(c.ctx, c.account, c.param("id"))
	})
}

// grants reads the type, status and sortOrder filters of a customer's
// grants (GET /credits/{id}/grants): the route does not accept customerId,
// so the filter's CustomerID stays empty; the path names the customer.
var grants = filterOf[billing.CreditGrantFilter]()
