package httpserver

import (
	"time"

	"github.com/billingd/billing"
)

// catalogRoutes mounts the catalog (docs/concepts.md): customers, products, tax
// rates, prices (operation 5), seat metrics, events and balances
// (operations 6-8), merchant details and account settings.
func (a api) catalogRoutes() {
	a.customerRoutes()
	a.productRoutes()
	a.priceRoutes()
	a.seatMetricRoutes()
	a.seatEventRoutes()
	a.get("/merchant-details", 200, onAccount(a.svc.GetMerchantDetails))
	a.put("/merchant-details", 200, withBody(a.svc.PutMerchantDetails))
	a.get("/account-settings", 200, onAccount(a.svc.GetAccountSettings))
	a.put("/account-settings", 200, withBody(a.svc.PutAccountSettings))
}

func (a api) customerRoutes() {
	records(a, "/customers", a.svc.CreateCustomer, a.svc.ListCustomers, a.svc.GetCustomer, a.svc.UpdateCustomer)
	a.post("/customers/:id/archive", 200, func(c *call) (any, error) {
		var p billing.ArchiveCustomerParams
		switch c.query.Get("cancelSchedules") {
		case "", "false":
		case "true":
			p.CancelSchedules = true
		default:
			return nil, billing.FieldError("cancelSchedules", "cancelSchedules must be true or false")
		}
		return a.svc.ArchiveCustomerWith(c.ctx, c.account, c.param("id"), p)
	}, accepts("cancelSchedules"))
	a.get("/customers/:id/entitlements", 200, func(c *call) (any, error) {
		at, err := atParam(c)
		if err != nil {
			return nil, err
		}
		es, err := a.svc.Entitlements(c.ctx, c.account, c.param("id"), at)
		return billing.Items[billing.Entitlement]{Items: es}, err
	}, accepts("at"))
	a.get("/customers/:id/entitlements/:featureKey", 200, func(c *call) (any, error) {
		at, err := atParam(c)
		if err != nil {
			return nil, err
		}
		return a.svc.Entitlement(c.ctx, c.account, c.param("id"), c.param("featureKey"), at)
	}, accepts("at"))
}

// atParam is the optional "at" timestamp of the entitlement routes; zero
// (the Service's now) when absent.
func atParam(c *call) (time.Time, error) {
	if v, ok := c.query["at"]; ok {
		return parseTimestampParam("at", v[0])
	}
	return time.Time{}, nil
}

func (a api) productRoutes() {
	a.get("/products", 200, byCreation(a.svc.ListProducts), listed("sortOrder"))
	a.post("/products", 201, withBody(a.svc.CreateProduct))
	a.get("/products/:id", 200, onID(a.svc.GetProduct))
	a.get("/tax-rates", 200, byCreation(a.svc.ListTaxRates), listed("sortOrder"))
	a.post("/tax-rates", 201, withBody(a.svc.CreateTaxRate))
	a.get("/tax-rates/:id", 200, onID(a.svc.GetTaxRate))
}

// priceRoutes mounts operation 5 and the price endpoints of docs/concepts.md.
func (a api) priceRoutes() {
	records(a, "/prices", a.svc.CreatePrice, a.svc.ListPrices, a.svc.GetPrice, a.svc.UpdatePrice)
}

// seatMetricRoutes mounts operation 7 and the seat metric endpoints; a
// seat metric's createdBy is the id of the API key that created it.
func (a api) seatMetricRoutes() {
	a.get("/seat-metrics", 200, byCreation(a.svc.ListSeatMetrics), listed("sortOrder"))
	a.post("/seat-metrics", 201, body(func(c *call, p *billing.CreateSeatMetricParams) (any, error) {
		p.CreatedBy = c.keyID
		return a.svc.CreateSeatMetric(c.ctx, c.account, *p)
	}))
	a.get("/seat-metrics/:id", 200, onID(a.svc.GetSeatMetric))
	a.put("/seat-metrics/:id", 200, onIDWithBody(a.svc.UpdateSeatMetric))
	a.delete("/seat-metrics/:id", 200, onID(a.svc.DeleteSeatMetric))
}

// seatEventRoutes mounts operations 6 and 8 and the seat event endpoints.
func (a api) seatEventRoutes() {
	a.get("/seat-events", 200, paged(func(c *call, p billing.ListParams) (any, error) {
		f := billing.SeatEventFilter{
			CustomerAlias:   c.query.Get("customerAlias"),
			CustomerIDs:     c.csv("customerIds"),
			SeatTypes:       c.csv("seatType"),
			CustomerEventID: c.query.Get("customerEventId"),
			SortBy:          billing.SeatEventSortBy(c.query.Get("sortBy")),
			SortOrder:       sortOrder(c),
		}
		var v timestampParams
		f.EventTimestampBefore = v.parse(c, "eventTimestampBefore")
		f.EventTimestampAfter = v.parse(c, "eventTimestampAfter")
		if err := v.err(); err != nil {
			return nil, err
		}
		return a.svc.ListSeatEvents(c.ctx, c.account, f, p)
	}), listed("customerAlias", "customerIds", "seatType", "customerEventId", "sortBy", "sortOrder",
		"eventTimestampBefore", "eventTimestampAfter"))
	a.post("/seat-events", 201, withBody(a.svc.CreateSeatEvent))
	a.get("/seat-events/:id", 200, onID(a.svc.GetSeatEvent))
	a.get("/seat-balances", 200, paged(func(c *call, p billing.ListParams) (any, error) {
		f := billing.SeatBalanceFilter{CustomerAliases: c.csv("customerAliases"), CustomerIDs: c.csv("customerIds")}
		var v timestampParams
		if d := c.query.Get("asOf"); len(d) == len(time.DateOnly) {
			f.AsOfDate = v.parseDate(c, "asOf")
		} else {
			f.AsOf = v.parse(c, "asOf")
		}
		switch c.query.Get("excludeZeroQuantity") {
		case "", "false":
		case "true":
			f.ExcludeZeroQuantity = true
		default:
			v.errs = append(v.errs, billing.FieldError("excludeZeroQuantity", "excludeZeroQuantity must be true or false"))
		}
		if err := v.err(); err != nil {
			return nil, err
		}
		return a.svc.ListSeatBalances(c.ctx, c.account, f, p)
	}), listed("customerAliases", "customerIds", "asOf", "excludeZeroQuantity"))
}

// timestampParams parses timestamp query parameters, collecting every
// error so a request learns about all bad parameters at once.
type timestampParams struct{ errs billing.ValidationErrors }

// parse returns the timestamp in query parameter name, nil when absent.
func (v *timestampParams) parse(c *call, name string) *time.Time {
	s, ok := c.query[name]
	if !ok {
		return nil
	}
	t, err := parseTimestampParam(name, s[0])
	if err != nil {
		v.errs = append(v.errs, billing.Errors(err)...)
		return nil
	}
	return &t
}

// parseTimestampParam parses the value of timestamp query parameter name;
// its error (an error, so that no nil *billing.Error becomes a non-nil
// error) names the parameter and says what is wrong (format or bounds).
func parseTimestampParam(name, value string) (time.Time, error) {
	t, err := billing.ParseTimestamp(value)
	if err != nil {
		return t, billing.FieldError(name, "%s %s", name, billing.Errors(err)[0].Message)
	}
	return t, nil
}

// parseDate parses the date query parameter name (YYYY-MM-DD).
func (v *timestampParams) parseDate(c *call, name string) *billing.Date {
	d, err := billing.ParseDate(c.query.Get(name))
	if err != nil {
		v.errs = append(v.errs, billing.FieldError(name, "%s %s", name, billing.Errors(err)[0].Message))
		return nil
	}
	return &d
}

func (v *timestampParams) err() error {
	if len(v.errs) == 0 {
		return nil
	}
	return v.errs
}
