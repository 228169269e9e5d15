package httpserver

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/billingd/billing"
)

// TestEntitlementsOverHTTP: a price's features answer GET
// /customers/{id}/entitlements[/{featureKey}] for now or ?at=, in the
// documented shape; bad input is a 400 naming the field.
func TestEntitlementsOverHTTP(t *testing.T) {
	t.Parallel()
	onEveryStore(t, func(t *testing.T, e *env) {
		e.clock.Set(time.Date(2024, 7, 20, 12, 0, 0, 0, time.UTC))
		cust := e.customer("Globex")
		metric := e.createMetric("calls").ID
		product := e.create("/products", `{"name":"Platform"}`)
		price := e.create("/prices", `{"productId":"`+product+`","name":"Plan","currency":"USD","billingFrequency":"MONTHLY",
			"billingType":"IN_ADVANCE","structure":{"pricingType":"FIXED","price":"60.00"},
			"features":[{"featureKey":"sso"},{"featureKey":"api_calls","usageMetricId":"`+metric+`","limit":"1000"}]}`)
		e.create("/billing-schedules", `{"customerId":"`+cust+`","startDate":"2024-07-01","autoIssueInvoices":false,"isDraft":false,
			"phases":[{"startDate":"2024-07-01","priceIds":["`+price+`"]}]}`)
		r := e.get("/customers/" + cust + "/entitlements")
		want := `{"items":[{"featureKey":"api_calls","hasAccess":true,"limit":"1000","usage":"0","remaining":"1000","resetsAt":"2024-08-01T00:00:00Z"},` +
			`{"featureKey":"sso","hasAccess":true,"limit":null,"usage":null,"remaining":null,"resetsAt":null}]}`
		if r.status != http.StatusOK || strings.TrimSpace(string(r.body)) != want {
			t.Errorf("entitlements: %d %s\nwant %s", r.status, r.body, want)
		}
		r = e.get("/customers/" + cust + "/entitlements/sso?at=2024-06-30T23:59:59Z")
		if r.status != http.StatusOK || !strings.Contains(string(r.body), `"hasAccess":false`) {
			t.Errorf("sso before the schedule: %d %s", r.status, r.body)
		}
		wantError(t, e.get("/customers/"+cust+"/entitlements?at=yesterday"), http.StatusBadRequest, billing.CodeValidationFailed, "at")
		wantError(t, e.get("/customers/nope/entitlements"), http.StatusNotFound, billing.CodeNotFound)
		wantError(t, e.post("/prices", `{"productId":"`+product+`","name":"Bad","currency":"USD","billingFrequency":"MONTHLY",
			"billingType":"IN_ADVANCE","structure":{"pricingType":"FIXED","price":"1.00"},"features":[{"featureKey":"x","limit":"5"}]}`),
			http.StatusBadRequest, billing.CodeValidationFailed, "features[0].limit")
	})
}
