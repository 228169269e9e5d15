package httpserver

import (
	"net/http"
	"testing"

	"github.com/billingd/billing"
)

// TestUsageAlertsOverHTTP: alerts are created, read, listed (filtered)
// and deleted over HTTP; bad fields are 400s naming each field.
func TestUsageAlertsOverHTTP(t *testing.T) {
	t.Parallel()
	onEveryStore(t, func(t *testing.T, e *env) {
		cust := e.customer("Globex")
		m := e.createMetric("calls")
		r := e.post("/usage-alerts", `{"name":"80%","kind":"USAGE","customerId":"`+cust+`","usageMetricId":"`+m.ID+`","threshold":"800.5"}`)
		usage := object(t, r, http.StatusCreated, []string{"id", "createdAt", "serviceAccountId", "name", "kind", "customerId", "usageMetricId", "threshold"})
		if usage["threshold"] != "800.5" || usage["kind"] != "USAGE" {
			t.Fatalf("alert %v", usage)
		}
		r = e.post("/usage-alerts", `{"kind":"SPEND","currency":"EUR","threshold":"100.00"}`)
		spend := object(t, r, http.StatusCreated, []string{"id", "createdAt", "serviceAccountId", "kind", "currency", "threshold"})

		for _, tc := range []struct {
			body   string
			fields []string
		}{
			{`{"threshold":"1"}`, []string{"kind"}},
			{`{"kind":"USAGE","threshold":"0"}`, []string{"usageMetricId", "threshold"}},
			{`{"kind":"USAGE","usageMetricId":"nope","currency":"EUR","threshold":"1"}`, []string{"usageMetricId", "currency"}},
			{`{"kind":"SPEND","currency":"EUR","usageMetricId":"` + m.ID + `","threshold":"1.001"}`, []string{"usageMetricId", "threshold"}},
			{`{"kind":"SPEND","currency":"XXX","threshold":"1"}`, []string{"currency"}},
			{`{"kind":"SPEND","currency":"EUR","threshold":"-1"}`, []string{"threshold"}},
			{`{"kind":"SPEND","currency":"EUR","customerId":"nobody"}`, []string{"customerId", "threshold"}},
			{`{"kind":"DAILY","threshold":"1"}`, []string{"kind"}},
			{`{"kind":"SPEND","currency":"EUR","threshold":12}`, []string{"threshold"}},
		} {
			wantError(t, e.post("/usage-alerts", tc.body), http.StatusBadRequest, billing.CodeValidationFailed, tc.fields...)
		}

		got := decode[page](t, e.get("/usage-alerts"))
		if len(got.Items) != 2 || got.Items[0]["id"] != spend["id"] {
			t.Fatalf("list %v", got.Items)
		}
		if got := decode[page](t, e.get("/usage-alerts?customerId="+cust)); len(got.Items) != 1 || got.Items[0]["id"] != usage["id"] {
			t.Fatalf("customer's list %v", got.Items)
		}
		if got := decode[page](t, e.get("/usage-alerts?kind=SPEND")); len(got.Items) != 1 || got.Items[0]["id"] != spend["id"] {
			t.Fatalf("SPEND list %v", got.Items)
		}
		wantError(t, e.get("/usage-alerts?kind=DAILY"), http.StatusBadRequest, billing.CodeValidationFailed, "kind")
		object(t, e.get("/usage-alerts/"+usage["id"].(string)), http.StatusOK, []string{"id", "createdAt", "serviceAccountId", "name", "kind", "customerId", "usageMetricId", "threshold"})
		wantStatus(t, e.del("/usage-alerts/"+usage["id"].(string)), http.StatusOK)
		wantError(t, e.get("/usage-alerts/"+usage["id"].(string)), http.StatusNotFound, billing.CodeNotFound)
	})
}
