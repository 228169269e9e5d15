package httpserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/billingd/billing"
)

// This file is the route coverage kit of the reliability suites (hostile
// input, tenancy, storage failure): they iterate over every route the real
// handler registers (gin's Routes), so a route added to routes() is covered
// without editing them. Two small tables let a suite go deeper than
// "unknown id": fixtureSegments names which fixture fills a path's :id, and
// validBodies gives a valid body per route. A route missing from both is
// still covered, with a random id and an empty body.

// apiRoute is one registered API route.
type apiRoute struct{ method, path string }

func (r apiRoute) String() string { return r.method + " " + r.path }

// apiRoutes returns every route of the handler except health, readiness
// and metrics, in a stable order with DELETE routes last (so deleting a
// fixture does not starve the other routes of it).
func apiRoutes(tb testing.TB, e *env) []apiRoute {
	tb.Helper()
	var out []apiRoute
	for _, ri := range e.srv.engine.Routes() {
		switch ri.Path {
		case "/healthz", "/readyz", "/metrics", "/openapi.json":
			continue
		case "/webhooks/stripe/:accountId": // the provider's, signed, no API key (payments_test.go)
			continue
		}
		out = append(out, apiRoute{ri.Method, ri.Path})
	}
	slices.SortFunc(out, func(a, b apiRoute) int {
		if (a.method == http.MethodDelete) != (b.method == http.MethodDelete) {
			if a.method == http.MethodDelete {
				return 1
			}
			return -1
		}
		return strings.Compare(a.String(), b.String())
	})
	if len(out) < 20 {
		tb.Fatalf("only %d API routes registered: %v", len(out), out)
	}
	return out
}

// isPreview reports whether a GET route computes a document at every call
// (stamped with the current time), so its answers are not compared across
// calls.
func isPreview(rt apiRoute) bool {
	return strings.HasSuffix(rt.path, "/upcoming-invoice")
}

// missingID is a well-formed id that names nothing.
const missingID = "0190ffff-ffff-7fff-bfff-ffffffffffff"

// fixtures are records created through the API for one account: the ids by
// the fixture key of the path parameter that takes them (fixtureKey), and
// every id created, which other accounts' lists must never show.
type fixtures struct {
	// ids: "usage-metrics" → a metric id, "invoices/line-items" → a line
	// of the "invoices" fixture, "notifications/policies" → a policy id, ...
	// Keys that name no route ("invoices/sent") are records bodies refer to.
	ids map[string]string
	// values fill path parameters that are not record ids (a recipient,
	// a notification type), by fixture key.
	values map[string]string
	all    []string // every id created
}

// fixtureKey is the key of the path parameter at index i of the split path
// parts: the literal segments before it, joined by "/"
// ("/invoices/:id/line-items/:item", index 4 → "invoices/line-items").
func fixtureKey(parts []string, i int) string {
	var lit []string
	for _, p := range parts[1:i] {
		if !strings.HasPrefix(p, ":") && !strings.HasPrefix(p, "*") {
			lit = append(lit, p)
		}
	}
	return strings.Join(lit, "/")
}

// routeFixtures names the fixture of a route's first path parameter where
// it is not the route's own (fixtureKey): operations on sent invoices.
var routeFixtures = map[string]string{
	"/invoices/:id/sent":           "invoices/sent",
	"/invoices/:id/payments":       "invoices/sent",
	"/invoices/:id/payment-status": "invoices/sent",

	"/invoices/:id/send-payment-reminder": "invoices/sent",
	"/invoices/:id/collection":            "invoices/sent",
	"/invoices/:id/collection/retry":      "invoices/sent",
	"/credits/:id/grants":                 "customers",
	"/credits/:id/balances":               "customers",
}

// path fills the path parameters of p from f (missingID when f has no
// fixture for the parameter).
func (f fixtures) path(p string) string {
	parts := strings.Split(p, "/")
	filled := slices.Clone(parts)
	first := true
	for i, part := range parts {
		if !strings.HasPrefix(part, ":") && !strings.HasPrefix(part, "*") {
			continue
		}
		k := fixtureKey(parts, i)
		if rk := routeFixtures[p]; first && rk != "" {
			k = rk
		}
		first = false
		switch {
		case f.ids[k] != "":
			filled[i] = f.ids[k]
		case f.values[k] != "":
			filled[i] = f.values[k]
		default:
			filled[i] = missingID
		}
	}
	return strings.Join(filled, "/")
}

// has reports whether every path parameter of p has a fixture.
func (f fixtures) has(p string) bool {
	return !strings.Contains(f.path(p), missingID)
}

// seatTypeOf and similar fixture values shared by bodies.
const (
	fixtureAlias    = "acme"
	fixtureSeatType = "editor"
)

// buildFixtures creates two records of every kind through the API with auth
// (the second of each is the one routes use), and returns their ids: the
// catalog and usage records, then a webhook policy (so the documents after
// it queue deliveries), a SENT invoice, a DRAFT invoice with a line and a
// group, a DRAFT credit note of the sent invoice with a line and a group,
// and a DRAFT billing schedule.
//
// Long on purpose: it creates one fixture of every kind, in dependency order; the list is the
// length.
func buildFixtures(tb testing.TB, e *env, auth, tag string) fixtures {
	tb.Helper()
	f := fixtures{ids: map[string]string{}, values: map[string]string{}}
	create := func(segment, path, body string) string {
		tb.Helper()
		id := e.createAs(auth, path, body)
		f.all = append(f.all, id)
		if segment != "" {
			f.ids[segment] = id
		}
		return id
	}
	for i := range 2 {
		n := fmt.Sprintf("%s-%d", tag, i)
		metric := create("usage-metrics", "/usage-metrics", metricBody("calls "+n))
		product := create("products", "/products", `{"name":"Platform `+n+`"}`)
		create("tax-rates", "/tax-rates", `{"name":"VAT `+n+`","amount":"0.20"}`)
		create("customers", "/customers", fmt.Sprintf(`{"legalName":"Acme %s","customerAliases":[%q]}`, n, fixtureAlias+n))
		create("prices", "/prices", priceBody("Basic "+n, "USD", "MONTHLY", product, metric))
		create("seat-metrics", "/seat-metrics", fmt.Sprintf(`{"seatType":"%s_%d","label":"Editors"}`, fixtureSeatType, i))
		create("seat-events", "/seat-events", seatEventBody(fixtureAlias+n, fmt.Sprintf("%s_%d", fixtureSeatType, i), i, 1+i, "ce-"+n))
		create("usage-events", "/usage-events", usageEventBody(fixtureAlias+n, "ue-"+n))
		create("", "/usage-events/batch", `{"events":[`+usageEventBody(fixtureAlias+n, "ub-"+n)+`]}`)

		hook := "https://hooks.example.com/" + n
		policy := create("notifications/policies", "/notifications/policies", `{"name":"ops `+n+`","channel":"WEBHOOK","recipients":["`+hook+`"]}`)
		f.values["notifications/policies/recipients"] = url.PathEscape(hook)
		f.values["notifications/policies/notification-types"] = string(billing.NotificationInvoiceCreated)
		f.values["customers/entitlements"] = "sso"
		customer := f.ids["customers"]
		sent := create("invoices/sent", "/invoices", `{"currency":"GBP","customerId":"`+customer+`","memo":"sent `+n+`"}`)
		create("", "/invoices/"+sent+"/line-items", lineBody("Plan "+n, "1", "10", "0.2", ""))
		if r := e.do(req{method: "POST", path: "/invoices/" + sent + "/send", auth: auth}); r.status != http.StatusOK {
			tb.Fatalf("fixture send: %d %s", r.status, r.body)
		}
		inv := create("invoices", "/invoices", `{"currency":"GBP","customerId":"`+customer+`","memo":"draft `+n+`"}`)
		create("invoices/line-item-groups", "/invoices/"+inv+"/line-item-groups", `{"title":"Group `+n+`"}`)
		create("invoices/line-items", "/invoices/"+inv+"/line-items", lineBody("Seat "+n, "2", "5", "0.2", ""))
		cn := create("credit-notes", "/credit-notes", `{"currency":"GBP","customerId":"`+customer+`","invoiceId":"`+sent+`","memo":"credit `+n+`"}`)
		create("credit-notes/line-item-groups", "/credit-notes/"+cn+"/line-item-groups", `{"title":"Refunds `+n+`"}`)
		create("credit-notes/line-items", "/credit-notes/"+cn+"/line-items", cnLine(cn, "Refund "+n, "1", "1", "0.2", ""))
		create("billing-schedules", "/billing-schedules", scheduleBody(customer, f.ids["prices"], ""))
		create("credits", "/credits", grantBody(customer, "Prepaid "+n))
		create("usage-alerts", "/usage-alerts", `{"kind":"USAGE","customerId":"`+customer+`","usageMetricId":"`+metric+`","threshold":"10"}`)
		r := e.do(req{method: "GET", path: "/notifications/deliveries?policyId=" + policy, auth: auth})
		deliveries := decode[page](tb, r)
		if len(deliveries.Items) == 0 {
			tb.Fatalf("fixture: no delivery queued for policy %s: %s", policy, r.body)
		}
		id, _ := deliveries.Items[0]["id"].(string)
		f.ids["notifications/deliveries"] = id
		f.all = append(f.all, id)
	}
	// Payment settings: the account's (its id is the account's) and one of
	// each target kind.
	settings := decode[map[string]any](tb, e.do(req{method: "GET", path: "/payments/settings", auth: auth}))
	account, _ := settings["id"].(string)
	f.values["payments/settings"], f.values["invoices/render-settings"] = account, account
	create("payments/settings/customers", "/payments/settings/customers", `{"customerId":"`+f.ids["customers"]+`","paymentProvider":"STRIPE"}`)
	create("payments/settings/billing-schedules", "/payments/settings/billing-schedules", `{"billingScheduleId":"`+f.ids["billing-schedules"]+`","paymentProvider":"STRIPE"}`)
	create("payments/settings/invoices", "/payments/settings/invoices", `{"invoiceId":"`+f.ids["invoices/sent"]+`","paymentProvider":"STRIPE"}`)
	f.values["payments/settings/billing-schedules/for-billing-schedule"] = f.ids["billing-schedules"]
	f.values["payments/settings/invoices/for-invoice"] = f.ids["invoices/sent"]
	r := e.do(req{method: "PUT", path: "/merchant-details", body: merchantBody, auth: auth})
	if r.status != http.StatusOK {
		tb.Fatalf("fixture PUT /merchant-details: %d %s", r.status, r.body)
	}
	return f
}

// grantBody is a valid CASH credit grant for customer.
func grantBody(customer, name string) string {
	return `{"customerId":"` + customer + `","name":"` + name + `","creditUnitType":"CURRENCY","currency":"USD","amount":"100.00","effectiveDate":"2024-07-01","expiryDate":"2025-06-30"}`
}

// usageEventBody is a valid usage event.
func usageEventBody(alias, customerEventID string) string {
	return fmt.Sprintf(`{"customerAlias":%q,"eventType":"api_call","customerEventId":%q,"eventTimestamp":"2024-07-30T10:00:00Z","eventProperties":{"n":"1.5","s":"x","b":true}}`,
		alias, customerEventID)
}

const merchantBody = `{"legalCompanyName":"Seller","ukAccountDetails":{"sortCode":"00-00-00","accountNumber":"1"},"customFields":[{"key":"k","value":"v"}]}`

// validBodies returns a valid body for the routes that take one, using
// the fixtures of f. A route that takes a body and is missing here gets
// "{}" and the whole-body hostile set, but no per-field mutations.
func validBodies(f fixtures) map[string]string {
	return map[string]string{
		"POST /usage-metrics":      metricBody("another"),
		"PUT /usage-metrics/:id":   metricBody("renamed"),
		"POST /usage-events":       usageEventBody(fixtureAlias, "ue-new"),
		"POST /usage-events/batch": `{"events":[` + usageEventBody(fixtureAlias, "ub-new") + `]}`,
		"POST /customers":          `{"legalName":"Other","customerAliases":["other"]}`,
		"PUT /customers/:id":       `{"legalName":"Acme","customerAliases":["acme-x"]}`,
		"POST /products":           `{"name":"Support"}`,
		"POST /tax-rates":          `{"name":"GST","amount":"0.1"}`,
		"POST /prices":             priceBody("New", "USD", "MONTHLY", f.ids["products"], f.ids["usage-metrics"]),
		"PUT /prices/:id":          `{"name":"Basic","status":"DRAFT"}`,
		"POST /seat-metrics":       `{"seatType":"viewer","label":"Viewers"}`,
		"PUT /seat-metrics/:id":    `{"label":"People","description":"who edit"}`,
		"POST /seat-events":        seatEventBody(fixtureAlias, fixtureSeatType+"_1", 5, 3, "ce-new"),
		"PUT /merchant-details":    merchantBody,

		"POST /invoices":                                      `{"currency":"GBP","customerId":"` + f.ids["customers"] + `","memo":"new"}`,
		"PUT /invoices/:id":                                   `{"memo":"updated","purchaseOrderNumber":"PO-9"}`,
		"PATCH /invoices/:id/sent":                            `{"memo":"patched"}`,
		"POST /invoices/:id/line-items":                       lineBody("Extra", "3", "2.50", "0.2", `"groupId":"`+f.ids["invoices/line-item-groups"]+`"`),
		"PUT /invoices/:id/line-items/:item":                  lineBody("Seat", "4", "5", "0.2", ""),
		"POST /invoices/:id/line-item-groups":                 `{"title":"More","description":"extra lines"}`,
		"PUT /invoices/:id/line-item-groups/:item":            `{"title":"Renamed"}`,
		"POST /invoices/:id/payments":                         `{"amount":"1.00","paidAt":"2024-07-30","method":"bank","reference":"r"}`,
		"PUT /invoices/:id/payment-status":                    `{"paymentStatus":"PAID"}`,
		"POST /credit-notes":                                  `{"currency":"GBP","customerId":"` + f.ids["customers"] + `","invoiceId":"` + f.ids["invoices/sent"] + `"}`,
		"PUT /credit-notes/:id":                               `{"memo":"updated"}`,
		"POST /credit-notes/:id/line-items":                   cnLine(f.ids["credit-notes"], "More", "1", "0.50", "0.2", `"groupId":"`+f.ids["credit-notes/line-item-groups"]+`"`),
		"PUT /credit-notes/:id/line-items/:item":              lineBody("Refund", "1", "2", "0.2", ""),
		"POST /credit-notes/:id/line-item-groups":             `{"title":"More refunds"}`,
		"PUT /credit-notes/:id/line-item-groups/:item":        `{"title":"Renamed"}`,
		"POST /billing-schedules":                             scheduleBody(f.ids["customers"], f.ids["prices"], ""),
		"PUT /billing-schedules/:id":                          scheduleBody(f.ids["customers"], f.ids["prices"], ""),
		"POST /billing-schedules/:id/cancel":                  `{"at":"2024-09-15"}`,
		"POST /billing-runs":                                  `{"asOf":"2024-07-30T00:00:00Z"}`,
		"POST /credits":                                       grantBody(f.ids["customers"], "Promo"),
		"POST /usage-alerts":                                  `{"kind":"SPEND","currency":"EUR","threshold":"50.00"}`,
		"POST /notifications/policies":                        `{"name":"new","channel":"WEBHOOK","recipients":["https://hooks.example.com/new"],"notificationTypes":["INVOICE_CREATED"]}`,
		"POST /notifications/policies/:id/recipients":         `{"recipients":["https://hooks.example.com/more"]}`,
		"POST /notifications/policies/:id/notification-types": `{"notificationTypes":["CREDIT_NOTE_ISSUED"]}`,

		"PUT /payments/settings/:id":                   `{"retryDays":[1,2]}`,
		"POST /payments/settings/customers":            `{"customerId":"` + f.ids["customers"] + `","paymentProvider":"STRIPE"}`,
		"PUT /payments/settings/customers/:id":         `{"paymentProvider":"STRIPE"}`,
		"POST /payments/settings/billing-schedules":    `{"billingScheduleId":"` + f.ids["billing-schedules"] + `","paymentProvider":"STRIPE","autoCharge":true}`,
		"PUT /payments/settings/billing-schedules/:id": `{"paymentProvider":"STRIPE","autoCharge":false}`,
		"POST /payments/settings/invoices":             `{"invoiceId":"` + f.ids["invoices/sent"] + `","paymentProvider":"STRIPE"}`,
		"PUT /payments/settings/invoices/:id":          `{"paymentProvider":"NONE"}`,
		"PUT /invoices/render-settings/:id":            `{"paymentLinkDisplay":"SHOW_PAYMENT_LINK"}`,
		"POST /customers/:id/payment-method-setup":     `{}`,
	}
}

// checkAnswer fails unless r is a success or a documented error answer: a
// status below 500, and an error body of exactly {"errors":[...]} whose
// codes map to that status in the one status table.
func checkAnswer(tb testing.TB, what string, r response) {
	tb.Helper()
	if r.status >= 500 {
		tb.Errorf("%s: %d %.300s", what, r.status, r.body)
		return
	}
	if r.status < 400 {
		switch r.header.Get("Content-Type") {
		case "application/pdf", "text/html; charset=utf-8", "image/png": // rendered documents, the logo
			if len(r.body) == 0 {
				tb.Errorf("%s: %d with an empty file", what, r.status)
			}
			return
		}
		if !json.Valid(r.body) {
			tb.Errorf("%s: %d with a body that is not JSON: %.300q", what, r.status, r.body)
		}
		return
	}
	dec := json.NewDecoder(bytes.NewReader(r.body))
	dec.DisallowUnknownFields()
	var body errorBody
	if err := dec.Decode(&body); err != nil || len(body.Errors) == 0 {
		tb.Errorf("%s: %d with a body that is not the error shape (%v): %.300s", what, r.status, err, r.body)
		return
	}
	for _, e := range body.Errors {
		if statusOf[e.Code] != r.status || e.Message == "" {
			tb.Errorf("%s: %d with error %+v", what, r.status, e)
		}
	}
}

// healthy fails the test unless the handler still answers /healthz.
func healthy(tb testing.TB, e *env, after string) {
	tb.Helper()
	if r := e.do(req{method: "GET", path: "/healthz", auth: "-"}); r.status != http.StatusOK {
		tb.Fatalf("after %s: GET /healthz = %d %s", after, r.status, r.body)
	}
}
