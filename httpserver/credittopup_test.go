package httpserver

import (
	"net/http"
	"testing"
	"time"

	"github.com/billingd/billing"
)

// TestAutoTopUpOverHTTP: POST /credits takes an autoTopUp rule (each
// error naming its field), echoes it, and paying an invoice with the credit
// past the threshold buys one top-up: a grant linked to the rule, and an
// issued purchase invoice.
func TestAutoTopUpOverHTTP(t *testing.T) {
	t.Parallel()
	onEveryStore(t, func(t *testing.T, e *env) {
		e.clock.Set(time.Date(2024, 7, 1, 12, 0, 0, 0, time.UTC))
		cust := e.customer("Globex")
		body := func(rule string) string {
			return `{"customerId":"` + cust + `","name":"Wallet","creditUnitType":"CURRENCY","currency":"GBP","amount":"100.00",
				"costOfCredit":"100.00","autoTopUp":` + rule + `}`
		}
		wantError(t, e.post("/credits", body(`{"topUpAmount":"50.00"}`)), http.StatusBadRequest, billing.CodeValidationFailed, "autoTopUp.thresholdAmount")
		wantError(t, e.post("/credits", body(`{"thresholdAmount":"20.00","topUpAmount":"-1"}`)), http.StatusBadRequest, billing.CodeValidationFailed, "autoTopUp.topUpAmount")
		r := e.post("/credits", body(`{"thresholdAmount":"20.00","topUpAmount":"50.00"}`))
		grant := object(t, r, http.StatusCreated, nil)
		if rule, _ := grant["autoTopUp"].(map[string]any); rule["thresholdAmount"] != "20.00" || rule["topUpAmount"] != "50.00" || rule["armed"] != true {
			t.Fatalf("grant %s", r.body)
		}
		manual := e.invoice(cust, "")["id"].(string)
		wantStatus(t, e.post("/invoices/"+manual+"/line-items", lineBody("Fee", "1", "90.00", "0", "")), http.StatusCreated)
		wantStatus(t, e.post("/invoices/"+manual+"/send", ""), http.StatusOK)
		wantStatus(t, e.post("/invoices/"+manual+"/apply-credits", ""), http.StatusOK)
		if got := e.balanceOf(cust, "GBP"); got != "60.00" {
			t.Errorf("balance %s, want 60.00 (10.00 left and a top-up of 50.00)", got)
		}
		rule := decode[map[string]any](t, e.get("/credits/"+grant["id"].(string)))["autoTopUp"].(map[string]any)
		up := decode[map[string]any](t, e.get("/credits/"+rule["lastTopUpGrantId"].(string)))
		if up["topUpOfGrantId"] != grant["id"] || up["originalAmount"] != "50.00" || rule["armed"] != true {
			t.Fatalf("rule %v, top-up %v", rule, up)
		}
		inv := decode[map[string]any](t, e.get("/invoices/"+up["invoiceId"].(string)))
		if inv["status"] != "SENT" || inv["grossTotal"] != "50.00" {
			t.Errorf("purchase invoice %v", inv)
		}
	})
}
