package httpserver

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/billingd/billing"
)

// TestPhaseFeaturesOverHTTP: a schedule's phases grant features of their
// own (a metered one with a limit per period, and a boolean one from the
// second phase). A customer in Los Angeles (UTC-7 in summer): July ends
// at 2024-08-01T07:00Z, where the second phase starts and usage starts
// again from 0; an event at 06:30Z counts in July; a superseding event
// moves usage from one period to the other. Bad phase features answer 400
// naming the field.
func TestPhaseFeaturesOverHTTP(t *testing.T) {
	t.Parallel()
	onEveryStore(t, func(t *testing.T, e *env) {
		e.clock.Set(time.Date(2024, 8, 20, 12, 0, 0, 0, time.UTC))
		cust := e.create("/customers", `{"legalName":"Initech","timeZone":"America/Los_Angeles"}`)
		metric := e.createMetric("calls").ID // COUNT of api_call
		product := e.create("/products", `{"name":"Platform"}`)
		price := func(name string) string {
			return e.create("/prices", `{"productId":"`+product+`","name":"`+name+`","currency":"USD","billingFrequency":"MONTHLY",
				"billingType":"IN_ADVANCE","structure":{"pricingType":"FIXED","price":"10.00"}}`)
		}
		basic, pro := price("Basic"), price("Pro")
		phases := `"phases":[{"startDate":"2024-07-01","endDate":"2024-07-31","priceIds":["` + basic + `"],
				"features":[{"featureKey":"api_calls","usageMetricId":"` + metric + `","limit":"2"}]},
			{"startDate":"2024-08-01","priceIds":["` + pro + `"],
				"features":[{"featureKey":"sso"},{"featureKey":"api_calls","usageMetricId":"` + metric + `","limit":"1000"}]}]`
		sched := e.create("/billing-schedules", `{"customerId":"`+cust+`","startDate":"2024-07-01","autoIssueInvoices":false,"isDraft":false,`+phases+`}`)
		if r := e.get("/billing-schedules/" + sched); !strings.Contains(string(r.body), `"features":[{"featureKey":"sso"},{"featureKey":"api_calls","usageMetricId":"`+metric+`","limit":"1000"}]`) {
			t.Errorf("schedule does not echo the phase's features: %s", r.body)
		}
		event := func(id, at string) {
			t.Helper()
			wantStatus(t, e.post("/usage-events", `{"customerAlias":"`+cust+`","eventType":"api_call","customerEventId":"`+id+`","eventTimestamp":"`+at+`"}`), http.StatusCreated)
		}
		want := func(path, body string) {
			t.Helper()
			r := e.get("/customers/" + cust + "/entitlements" + path)
			if r.status != http.StatusOK || strings.TrimSpace(string(r.body)) != body {
				t.Errorf("%s: %d %s\nwant %s", path, r.status, r.body, body)
			}
		}
		event("a", "2024-07-10T12:00:00Z")
		event("b", "2024-08-01T06:30:00Z") // July 31, 23:30 in Los Angeles
		event("c", "2024-08-01T07:30:00Z") // August 1, 00:30
		want("/api_calls?at=2024-08-01T06:59:59Z",
			`{"featureKey":"api_calls","hasAccess":false,"limit":"2","usage":"2","remaining":"0","resetsAt":"2024-08-01T07:00:00Z"}`)
		want("/sso?at=2024-08-01T06:59:59Z", `{"featureKey":"sso","hasAccess":false,"limit":null,"usage":null,"remaining":null,"resetsAt":null}`)
		want("?at=2024-08-01T07:00:00Z",
			`{"items":[{"featureKey":"api_calls","hasAccess":true,"limit":"1000","usage":"1","remaining":"999","resetsAt":"2024-09-01T07:00:00Z"},`+
				`{"featureKey":"sso","hasAccess":true,"limit":null,"usage":null,"remaining":null,"resetsAt":null}]}`)
		event("b", "2024-08-02T00:00:00Z") // supersede: moves from July to August
		want("/api_calls?at=2024-07-15T00:00:00Z",
			`{"featureKey":"api_calls","hasAccess":true,"limit":"2","usage":"1","remaining":"1","resetsAt":"2024-08-01T07:00:00Z"}`)
		want("/api_calls", `{"featureKey":"api_calls","hasAccess":true,"limit":"1000","usage":"2","remaining":"998","resetsAt":"2024-09-01T07:00:00Z"}`)
		bad := func(features string, fields ...string) {
			t.Helper()
			wantError(t, e.post("/billing-schedules", `{"customerId":"`+cust+`","startDate":"2024-07-01","autoIssueInvoices":false,
				"phases":[{"startDate":"2024-07-01","priceIds":["`+basic+`"],"features":`+features+`}]}`),
				http.StatusBadRequest, billing.CodeValidationFailed, fields...)
		}
		bad(`[{"featureKey":"sso","limit":"5"}]`, "phases[0].features[0].limit")
		bad(`[{"featureKey":"x","usageMetricId":"nope"}]`, "phases[0].features[0].usageMetricId")
		bad(`[{"featureKey":"x"},{"featureKey":"x"}]`, "phases[0].features[1].featureKey")
		bad(`[{"featureKey":"x","usageMetricId":"`+metric+`","limit":"-1"}]`, "phases[0].features[0].limit")
	})
}
