package httpserver

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
)

// newCatalogEnv is an env on the store of stores[st], served by the
// Server's complete handler (New), catalog routes included.
func newCatalogEnv(t *testing.T, st int) *env {
	t.Helper()
	return newEnv(t, nil, stores[st].opts...)
}

// page is the wire shape of any list, items kept as objects.
type page struct {
	Items      []map[string]any `json:"items"`
	Pagination struct {
		After           string `json:"after"`
		Before          string `json:"before"`
		TotalResultSize int    `json:"totalResultSize"`
	} `json:"pagination"`
}

// ids lists path and returns the ids of its items, checking totalResultSize.
func (e *env) ids(path string) []string {
	e.tb.Helper()
	r := e.get(path)
	wantStatus(e.tb, r, http.StatusOK)
	p := decode[page](e.tb, r)
	out := []string{}
	for _, it := range p.Items {
		out = append(out, it["id"].(string))
	}
	if p.Pagination.TotalResultSize != len(out) && p.Pagination.After == "" && p.Pagination.Before == "" {
		e.tb.Errorf("%s: totalResultSize %d for %d items on the only page", path, p.Pagination.TotalResultSize, len(out))
	}
	return out
}

// create posts body to path, wants 201 and returns the created id.
func (e *env) create(path, body string) string {
	e.tb.Helper()
	return e.createAs("", path, body)
}

func wantIDs(t *testing.T, got []string, want ...string) {
	t.Helper()
	if want == nil {
		want = []string{}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("ids = %v, want %v", got, want)
	}
}

func TestCustomersOverHTTP(t *testing.T) {
	t.Parallel()
	onEveryStore(t, func(t *testing.T, e *env) {
		r := e.post("/customers", `{"legalName":"Acme","customerAliases":["acme"],
				"address":{"line1":"1 Road","town":"Leeds","postcode":"LS1","country":"GB"},
				"contacts":[{"name":"Ann","email":"ann@acme.test","billingPreference":"PRIMARY"}]}`)
		wantStatus(t, r, http.StatusCreated)
		c := decode[map[string]any](t, r)
		if c["taxStatus"] != "TAXED" || c["serviceAccountId"] != e.account || c["createdAt"] != "2024-07-30T12:00:00Z" {
			t.Fatalf("created = %v", c)
		}
		id := c["id"].(string)
		wantError(t, e.post("/customers", `{"legalName":"B","customerAliases":["acme"]}`), 409, billing.CodeConflict, "customerAliases[0]")
		wantError(t, e.post("/customers", `{"legalName":"B","customerAliases":["`+id+`"]}`), 409, billing.CodeConflict, "customerAliases[0]")
		wantError(t, e.post("/customers", `{"customerAliases":["a,b"],"address":{"line1":"x"},"id":"mine"}`), 400, billing.CodeValidationFailed, "id")
		wantError(t, e.post("/customers", `{"customerAliases":["a,b"],"address":{"line1":"x"}}`), 400, billing.CodeValidationFailed,
			"legalName", "customerAliases[0]", "address.town", "address.postcode", "address.country")

		r = e.put("/customers/"+id, `{"legalName":"Acme Inc","customerAliases":["acme-2"]}`)
		wantStatus(t, r, http.StatusOK)
		if up := decode[billing.Customer](t, r); up.LegalName != "Acme Inc" || up.Address != nil || !slices.Equal(up.CustomerAliases, []string{"acme-2"}) {
			t.Fatalf("updated = %+v", up)
		}
		e.create("/customers", `{"legalName":"Reuses the freed alias","customerAliases":["acme"]}`)
		r = e.post("/customers/"+id+"/archive", "")
		wantStatus(t, r, http.StatusOK)
		if decode[billing.Customer](t, r).ArchivedAt == nil {
			t.Fatal("archive did not set archivedAt")
		}
		if got := e.ids("/customers?sortOrder=ASC"); len(got) != 2 || got[0] != id {
			t.Fatalf("list = %v", got)
		}

		_, other := e.newAccount("other")
		for _, rq := range []req{
			{method: "GET", path: "/customers/" + id},
			{method: "PUT", path: "/customers/" + id, body: `{"legalName":"x"}`},
			{method: "POST", path: "/customers/" + id + "/archive"},
		} {
			rq.auth = other
			wantError(t, e.do(rq), 404, billing.CodeNotFound)
		}
	})
}

func TestProductsTaxRatesMerchantOverHTTP(t *testing.T) {
	t.Parallel()
	e := newCatalogEnv(t, 0)
	prod := e.create("/products", `{"name":"Platform"}`)
	if got := e.ids("/products"); !slices.Equal(got, []string{prod}) {
		t.Fatalf("products = %v", got)
	}
	wantStatus(t, e.get("/products/"+prod), 200)
	wantError(t, e.get("/products/nope"), 404, billing.CodeNotFound)

	rate := e.create("/tax-rates", `{"name":"VAT","amount":"0.20"}`)
	if got := decode[map[string]any](t, e.get("/tax-rates/"+rate)); got["amount"] != "0.20" {
		t.Fatalf("tax rate = %v", got)
	}
	wantError(t, e.post("/tax-rates", `{"name":"VAT","amount":"1.5"}`), 400, billing.CodeValidationFailed, "amount")
	wantError(t, e.post("/tax-rates", `{"name":"VAT","amount":0.2}`), 400, billing.CodeValidationFailed, "amount")
	if got := e.ids("/tax-rates"); !slices.Equal(got, []string{rate}) {
		t.Fatalf("tax rates = %v", got)
	}

	r := e.put("/merchant-details", `{"legalCompanyName":"Seller","ukAccountDetails":{"sortCode":"00-00-00","accountNumber":"1"},"customFields":[{"key":"k","value":"v"}]}`)
	wantStatus(t, r, 200)
	got := decode[map[string]any](t, e.get("/merchant-details"))
	if got["legalCompanyName"] != "Seller" || got["ukAccountDetails"] == nil {
		t.Fatalf("merchant details = %v", got)
	}
	wantError(t, e.put("/merchant-details", `{"primaryColour":"blue","address":{"line1":"x","town":"y","postcode":"z","country":"G"}}`),
		400, billing.CodeValidationFailed, "primaryColour", "address.country")
	_, other := e.newAccount("other")
	if r := e.do(req{method: "GET", path: "/merchant-details", auth: other}); decode[map[string]any](t, r)["legalCompanyName"] != "" {
		t.Fatalf("another account sees the details: %s", r.body)
	}
}

// priceBody is a LINEAR price of product on metric.
func priceBody(name, currency, freq, product, metric string) string {
	return fmt.Sprintf(`{"productId":%q,"name":%q,"currency":%q,"billingFrequency":%q,"billingType":"IN_ARREARS",
		"structure":{"pricingType":"LINEAR","pricePerUnit":"0.01","usageMetricId":%q}}`, product, name, currency, freq, metric)
}

// Long on purpose: a table of cases, one line each; its length is the cases, not logic.
func TestPricesOverHTTP(t *testing.T) {
	t.Parallel()
	onEveryStore(t, func(t *testing.T, e *env) {
		metric := e.createMetric("calls").ID
		prod := e.create("/products", `{"name":"Platform"}`)
		prod2 := e.create("/products", `{"name":"Support"}`)
		r := e.post("/prices", `{"productId":"`+prod+`","name":"Tiered","currency":"JPY","billingFrequency":"MONTHLY","billingType":"IN_ARREARS",
				"structure":{"pricingType":"GRADUATED","usageMetricId":"`+metric+`","tiers":[{"upperBound":"100","price":"1","fee":"0","isPricePercentage":false},{"price":"0.5","fee":"10","isPricePercentage":false}]}}`)
		wantStatus(t, r, 201)
		tiered := decode[map[string]any](t, r)
		if tiered["status"] != "ACTIVE" || tiered["structure"].(map[string]any)["usageCalculationMode"] != "BILLING_PERIOD" ||
			fmt.Sprint(tiered["usageCalculationPeriod"]) != "map[frequency:MONTHLY interval:1]" ||
			fmt.Sprint(tiered["integrationIds"]) != "[]" || fmt.Sprint(tiered["customMetricParameters"]) != "[]" {
			t.Fatalf("created = %v", tiered)
		}
		a := tiered["id"].(string)
		b := e.create("/prices", priceBody("Basic API", "USD", "MONTHLY", prod, metric))
		c := e.create("/prices", priceBody("Support", "USD", "YEARLY", prod2, metric))
		wantError(t, e.post("/prices", `{"productId":"`+prod+`","name":"x","currency":"USD","billingFrequency":"MONTHLY","billingType":"IN_ADVANCE",
				"structure":{"pricingType":"PACKAGE","usageMetricId":"`+metric+`","packageSize":"0","pricePerPackage":"1"}}`),
			400, billing.CodeValidationFailed, "billingType", "structure.packageSize")
		wantError(t, e.post("/prices", `{"productId":"`+prod+`","name":"x","currency":"USD","billingFrequency":"MONTHLY","billingType":"IN_ARREARS",
				"structure":{"pricingType":"SEAT_BASED","seatMetricId":"s","pricePerSeat":"1","contractedMinimumSeats":"2"}}`),
			400, billing.CodeValidationFailed, "structure.contractedMinimumSeats")

		for _, tc := range []struct {
			query string
			want  []string
		}{
			{"", []string{c, b, a}},
			{"?sortOrder=ASC", []string{a, b, c}},
			{"?currency=JPY", []string{a}},
			{"?name=API", []string{b}},
			{"?name=api", []string{b}},
			{"?billingFrequency=YEARLY", []string{c}},
			{"?productId=" + prod, []string{b, a}},
			{"?productId=" + prod + "&currency=USD", []string{b}},
		} {
			wantIDs(t, e.ids("/prices"+tc.query), tc.want...)
		}
		wantError(t, e.get("/prices?currency=usd"), 400, billing.CodeValidationFailed, "currency")
		wantError(t, e.get("/prices?sortOrder=UP"), 400, billing.CodeValidationFailed, "sortOrder")

		r = e.put("/prices/"+b, `{"name":"Basic","status":"DRAFT"}`)
		wantStatus(t, r, 200)
		if p := decode[map[string]any](t, r); p["name"] != "Basic" || p["status"] != "DRAFT" {
			t.Fatalf("updated = %v", p)
		}
		wantError(t, e.put("/prices/"+b, `{"name":"Basic","status":"DRAFT","currency":"EUR"}`), 400, billing.CodeValidationFailed, "currency")
		wantError(t, e.del("/usage-metrics/"+metric), 409, billing.CodeInvalidState)

		// Another account: its references are missing, its prices not found.
		otherAcct, other := e.newAccount("other")
		otherMetric, err := e.svc.CreateUsageMetric(t.Context(), otherAcct, billing.CreateUsageMetricParams{UsageMetricParams: billing.UsageMetricParams{
			Name: "m", MetricType: billing.MetricTypeSimple, EventType: "e", AggregationType: billing.AggregationCount}})
		if err != nil {
			t.Fatal(err)
		}
		wantError(t, e.post("/prices", priceBody("x", "USD", "MONTHLY", prod, otherMetric.ID)), 400, billing.CodeValidationFailed, "structure.usageMetricId")
		wantError(t, e.do(req{method: "POST", path: "/prices", body: priceBody("x", "USD", "MONTHLY", prod, otherMetric.ID), auth: other}),
			400, billing.CodeValidationFailed, "productId")
		wantError(t, e.do(req{method: "GET", path: "/prices/" + a, auth: other}), 404, billing.CodeNotFound)
		if r := e.do(req{method: "GET", path: "/prices?productId=" + prod, auth: other}); decode[page](t, r).Pagination.TotalResultSize != 0 {
			t.Fatalf("another account lists the prices: %s", r.body)
		}
	})
}

func TestSeatMetricsOverHTTP(t *testing.T) {
	t.Parallel()
	e := newCatalogEnv(t, 1)
	keyID, _, _ := billing.ParseBasicAuthorization(e.auth)
	r := e.post("/seat-metrics", `{"seatType":"editor","label":"Editors"}`)
	wantStatus(t, r, 201)
	m := decode[billing.SeatMetric](t, r)
	if m.CreatedBy != keyID || m.SeatType != "editor" {
		t.Fatalf("created = %+v (key %s)", m, keyID)
	}
	wantError(t, e.post("/seat-metrics", `{"seatType":"editor","label":"Again"}`), 409, billing.CodeConflict, "seatType")
	wantError(t, e.post("/seat-metrics", `{"seatType":"Editor","label":"x","createdBy":"me"}`), 400, billing.CodeValidationFailed, "createdBy")
	r = e.put("/seat-metrics/"+m.ID, `{"label":"People","description":"who edit"}`)
	if wantStatus(t, r, 200); decode[billing.SeatMetric](t, r).Description != "who edit" {
		t.Fatalf("updated = %s", r.body)
	}
	wantIDs(t, e.ids("/seat-metrics"), m.ID)
	_, other := e.newAccount("other")
	wantError(t, e.do(req{method: "DELETE", path: "/seat-metrics/" + m.ID, auth: other}), 404, billing.CodeNotFound)
	wantStatus(t, e.del("/seat-metrics/"+m.ID), 200)
	wantError(t, e.get("/seat-metrics/"+m.ID), 404, billing.CodeNotFound)
}

// seatEventBody is a seat event body at hour h after 2024-07-30T12:00:00Z.
func seatEventBody(alias, seatType string, h, total int, customerEventID string) string {
	at := billingtest.Start.Add(time.Duration(h) * time.Hour)
	return fmt.Sprintf(`{"customerAlias":%q,"seatType":%q,"eventTimestamp":%q,"total":%d,"customerEventId":%q}`,
		alias, seatType, billing.FormatTimestamp(at), total, customerEventID)
}

func TestSeatEventsOverHTTP(t *testing.T) {
	t.Parallel()
	onEveryStore(t, func(t *testing.T, e *env) {
		acme := e.create("/customers", `{"legalName":"Acme","customerAliases":["acme","acme-eu"]}`)
		otherAcct, other := e.newAccount("other")
		foreign, err := e.svc.CreateCustomer(t.Context(), otherAcct, billing.CustomerParams{LegalName: "F", CustomerAliases: []string{"zeta"}})
		if err != nil {
			t.Fatal(err)
		}
		e1 := e.create("/seat-events", seatEventBody("acme", "editor", 3, 1, "c1"))
		e2 := e.create("/seat-events", seatEventBody("acme-eu", "viewer", 1, 2, "c2"))
		e3 := e.create("/seat-events", seatEventBody(acme, "editor", 2, 3, "c3"))
		e4 := e.create("/seat-events", seatEventBody("zeta", "admin", 4, 4, "c4"))
		r := e.get("/seat-events/" + e1)
		if wantStatus(t, r, 200); decode[map[string]any](t, r)["eventTimestamp"] != "2024-07-30T15:00:00Z" {
			t.Fatalf("event = %s", r.body)
		}
		wantError(t, e.do(req{method: "GET", path: "/seat-events/" + e1, auth: other}), 404, billing.CodeNotFound)
		wantError(t, e.post("/seat-events", `{"customerAlias":"","seatType":"X","eventTimestamp":"yesterday","total":-1}`),
			400, billing.CodeValidationFailed, "eventTimestamp")
		wantError(t, e.post("/seat-events", `{"customerAlias":"","seatType":"X","eventTimestamp":"2024-07-30T12:00:00Z","total":-1}`),
			400, billing.CodeValidationFailed, "customerAlias", "seatType", "total")
		wantError(t, e.post("/seat-events", `{"customerAlias":"a","seatType":"x","eventTimestamp":"2024-07-30T12:00:00Z","total":1.5}`),
			400, billing.CodeValidationFailed, "total")

		q := url.QueryEscape
		for _, tc := range []struct {
			query string
			want  []string
		}{
			{"", []string{e4, e3, e2, e1}},
			{"?sortOrder=ASC", []string{e1, e2, e3, e4}},
			{"?sortBy=eventTimestamp", []string{e4, e1, e3, e2}},
			{"?sortBy=eventTimestamp&sortOrder=ASC", []string{e2, e3, e1, e4}},
			{"?customerAlias=acme", []string{e1}},
			{"?customerIds=" + acme, []string{e3, e2, e1}},
			{"?customerIds=" + foreign.ID, nil},
			{"?seatType=viewer,admin", []string{e4, e2}},
			{"?customerEventId=c3", []string{e3}},
			{"?eventTimestampBefore=" + q("2024-07-30T14:00:00Z"), []string{e2}},
			{"?eventTimestampAfter=" + q("2024-07-30T17:00:00+02:00"), []string{e4}},
		} {
			wantIDs(t, e.ids("/seat-events"+tc.query), tc.want...)
		}
		wantError(t, e.get("/seat-events?sortBy=total&eventTimestampAfter=soon"), 400, billing.CodeValidationFailed, "eventTimestampAfter")
		wantError(t, e.get("/seat-events?sortBy=total"), 400, billing.CodeValidationFailed, "sortBy")
		wantError(t, e.get("/seat-events?customerIds="+strings.Repeat("x,", 101)), 400, billing.CodeValidationFailed, "customerIds")

		// Supersede: the same customerEventId replaces the event.
		e5 := e.create("/seat-events", seatEventBody("acme", "editor", 3, 9, "c1"))
		wantError(t, e.get("/seat-events/"+e1), 404, billing.CodeNotFound)
		wantIDs(t, e.ids("/seat-events?customerEventId=c1"), e5)
	})
}

func TestSeatBalancesOverHTTP(t *testing.T) {
	t.Parallel()
	onEveryStore(t, func(t *testing.T, e *env) {
		e.clock.Advance(10 * 3600e9)
		beta := e.create("/customers", `{"legalName":"Beta","customerAliases":["beta"]}`)
		acme := e.create("/customers", `{"legalName":"Acme","customerAliases":["acme"]}`)
		zed := e.create("/customers", `{"legalName":"Zed"}`)
		e.create("/seat-events", seatEventBody("acme", "editor", 1, 5, ""))
		e.create("/seat-events", seatEventBody(acme, "viewer", 2, 2, ""))
		e.create("/seat-events", seatEventBody("beta", "editor", 1, 3, ""))
		e.create("/seat-events", seatEventBody("beta", "editor", 20, 0, "")) // future: not yet counted

		r := e.get("/seat-balances")
		wantStatus(t, r, 200)
		items := decode[page](t, r).Items
		if len(items) != 3 || items[0]["id"] != acme || items[0]["total"] != 7.0 || items[0]["changeTimestamp"] != "2024-07-30T14:00:00Z" ||
			fmt.Sprint(items[0]["balances"]) != "[map[changeTimestamp:2024-07-30T13:00:00Z seatType:editor total:5] map[changeTimestamp:2024-07-30T14:00:00Z seatType:viewer total:2]]" ||
			items[2]["id"] != zed || items[2]["total"] != 0.0 || items[2]["changeTimestamp"] != "2024-07-30T22:00:00Z" || fmt.Sprint(items[2]["balances"]) != "[]" {
			t.Fatalf("balances = %s", r.body)
		}
		_, other := e.newAccount("other")
		for _, tc := range []struct {
			query string
			want  []string
		}{
			{"", []string{acme, beta, zed}},
			{"?excludeZeroQuantity=true", []string{acme, beta}},
			{"?excludeZeroQuantity=false", []string{acme, beta, zed}},
			{"?customerAliases=beta,nobody", []string{beta}},
			{"?customerIds=" + zed + "," + beta, []string{beta, zed}},
			{"?asOf=" + url.QueryEscape("2024-07-30T20:00:00Z") + "&excludeZeroQuantity=true", []string{acme, beta}},
			{"?asOf=" + url.QueryEscape("2024-07-31T09:00:00Z") + "&excludeZeroQuantity=true", []string{acme}},
			{"?asOf=" + url.QueryEscape("2024-07-30T13:30:00Z") + "&customerIds=" + acme, []string{acme}},
		} {
			wantIDs(t, e.ids("/seat-balances"+tc.query), tc.want...)
		}
		r = e.get("/seat-balances?asOf=" + url.QueryEscape("2024-07-30T13:30:00Z") + "&customerIds=" + acme)
		if got := decode[page](t, r).Items[0]["total"]; got != 5.0 {
			t.Fatalf("asOf total = %v, want 5", got)
		}
		if r := e.do(req{method: "GET", path: "/seat-balances?customerIds=" + acme, auth: other}); decode[page](t, r).Pagination.TotalResultSize != 0 {
			t.Fatalf("another account sees balances: %s", r.body)
		}

		p1 := decode[page](t, e.get("/seat-balances?limit=2"))
		if len(p1.Items) != 2 || p1.Pagination.After == "" || p1.Pagination.TotalResultSize != 3 {
			t.Fatalf("page 1 = %+v", p1)
		}
		wantIDs(t, e.ids("/seat-balances?limit=2&after="+url.QueryEscape(p1.Pagination.After)), zed)

		wantError(t, e.get("/seat-balances?customerIds="+strings.Repeat("x,", 101)), 400, billing.CodeValidationFailed, "customerIds")
		wantError(t, e.get("/seat-balances?excludeZeroQuantity=yes&asOf=now"), 400, billing.CodeValidationFailed, "excludeZeroQuantity", "asOf")
		wantError(t, e.get("/seat-balances?limit=0"), 400, billing.CodeValidationFailed, "limit")
	})
}

func TestCatalogWritesAreIdempotent(t *testing.T) {
	t.Parallel()
	e := newCatalogEnv(t, 1)
	for _, rq := range []req{
		{method: "POST", path: "/customers", body: `{"legalName":"Acme","customerAliases":["acme"]}`},
		{method: "POST", path: "/seat-events", body: seatEventBody("acme", "editor", 0, 3, "")},
		{method: "PUT", path: "/merchant-details", body: `{"legalCompanyName":"Seller"}`},
	} {
		rq.header = map[string]string{"Idempotency-Key": "k-" + rq.path}
		first := e.do(rq)
		again := e.do(rq)
		if first.status/100 != 2 || string(first.body) != string(again.body) || again.header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("%s %s: first %d %s, replay %s (%q)", rq.method, rq.path, first.status, first.body, again.body, again.header.Get("Idempotent-Replayed"))
		}
	}
	// The replayed create did not create a second customer or event.
	if got := e.ids("/customers"); len(got) != 1 {
		t.Fatalf("customers = %v", got)
	}
	if got := e.ids("/seat-events"); len(got) != 1 {
		t.Fatalf("seat events = %v", got)
	}
}
