package httpserver

import (
	"fmt"
	"net/http"
	"testing"
	"time"
)

// balanceOf returns the balance of unit in GET /credits/{customer}/balances.
func (e *env) balanceOf(customer, unit string) string {
	e.tb.Helper()
	r := e.get("/credits/" + customer + "/balances")
	wantStatus(e.tb, r, http.StatusOK)
	for _, b := range decode[map[string]any](e.tb, r)["items"].([]any) {
		if b := b.(map[string]any); b["id"] == unit {
			return b["balance"].(string)
		}
	}
	return "none"
}

// engineInvoices runs the billing engine and returns the invoices it
// created, with their lines.
func (e *env) billingRun() []map[string]any {
	e.tb.Helper()
	r := e.post("/billing-runs", `{}`)
	wantStatus(e.tb, r, http.StatusOK)
	var out []map[string]any
	for _, id := range decode[map[string]any](e.tb, r)["invoiceIds"].([]any) {
		inv := decode[map[string]any](e.tb, e.get("/invoices/"+id.(string)))
		inv["lines"] = decode[page](e.tb, e.get("/invoices/"+id.(string)+"/line-items")).Items
		out = append(out, inv)
	}
	return out
}

// TestCreditDrawdownOverHTTP is the end-to-end story: a grant of 100.00
// USD, an engine invoice of 60.00 due 0.00 with a BURNDOWN line, 40.00
// left, the next invoice of 60.00 due 20.00, nothing left.
//
// Long on purpose: one scenario walked in order; each step starts from the state the previous steps
// left, so pieces would repeat the set-up.
func TestCreditDrawdownOverHTTP(t *testing.T) {
	t.Parallel()
	onEveryStore(t, func(t *testing.T, e *env) {
		e.clock.Set(time.Date(2024, 7, 1, 12, 0, 0, 0, time.UTC))
		cust := e.customer("Globex")
		product := e.create("/products", `{"name":"Platform"}`)
		price := e.create("/prices", `{"productId":"`+product+`","name":"Plan","currency":"USD","billingFrequency":"MONTHLY",
			"billingType":"IN_ADVANCE","structure":{"pricingType":"FIXED","price":"60.00"}}`)
		e.create("/billing-schedules", `{"customerId":"`+cust+`","startDate":"2024-07-01","autoIssueInvoices":true,"isDraft":false,
			"phases":[{"startDate":"2024-07-01","priceIds":["`+price+`"]}]}`)
		r := e.post("/credits", `{"customerId":"`+cust+`","name":"Prepaid","creditUnitType":"CURRENCY","currency":"USD","amount":"100.00"}`)
		grant := object(t, r, http.StatusCreated, []string{"id", "customerId", "name", "type", "currency", "originalAmount",
			"currentBalance", "effectiveDate", "status", "createdAt", "updatedAt"})
		if grant["type"] != "CASH" || grant["currentBalance"] != "100.00" || grant["status"] != "ACTIVE" || grant["effectiveDate"] != "2024-07-01" {
			t.Fatalf("grant %v", grant)
		}
		gid := grant["id"].(string)

		invs := e.billingRun()
		if len(invs) != 1 {
			t.Fatalf("first run: %d invoices", len(invs))
		}
		inv := invs[0]
		lines := inv["lines"].([]map[string]any)
		if inv["status"] != "SENT" || inv["grossTotal"] != "0.00" || inv["amountDue"] != "0.00" || inv["paymentStatus"] != "PAID" ||
			inv["creditBalances"] != "Remaining credit: 40.00 USD" || len(lines) != 2 {
			t.Fatalf("first invoice %v", inv)
		}
		if l := lines[1]; l["revenueClassification"] != "BURNDOWN" || l["creditGrantId"] != gid || l["grossTotal"] != "-60.00" ||
			l["title"] != "Credit applied: Prepaid" || lines[0]["grossTotal"] != "60.00" {
			t.Errorf("lines %v", lines)
		}
		if got := e.balanceOf(cust, "USD"); got != "40.00" {
			t.Errorf("balance after the first invoice: %s", got)
		}

		e.clock.Set(time.Date(2024, 8, 1, 12, 0, 0, 0, time.UTC))
		invs = e.billingRun()
		if len(invs) != 1 {
			t.Fatalf("second run: %d invoices", len(invs))
		}
		if inv := invs[0]; inv["grossTotal"] != "20.00" || inv["amountDue"] != "20.00" || inv["creditBalances"] != "Remaining credit: 0.00 USD" {
			t.Errorf("second invoice %v", inv)
		}
		if got := e.balanceOf(cust, "USD"); got != "0.00" {
			t.Errorf("balance after the second invoice: %s", got)
		}
		g := decode[map[string]any](t, e.get("/credits/"+gid))
		if g["status"] != "DEPLETED" || g["currentBalance"] != "0.00" {
			t.Errorf("grant %v", g)
		}
		txs := decode[page](t, e.get("/credits/"+gid+"/transactions")).Items
		var types []string
		for _, tx := range txs {
			types = append(types, fmt.Sprint(tx["type"], " ", tx["amount"]))
		}
		if fmt.Sprint(types) != "[GRANT 100.00 CONSUMPTION -60.00 CONSUMPTION -40.00]" {
			t.Errorf("transactions %v", types)
		}
		wantBalancedJournal(t, e, gid, 4)
		grants := decode[page](t, e.get("/credits/"+cust+"/grants"))
		if len(grants.Items) != 1 || grants.Items[0]["id"] != gid {
			t.Errorf("customer grants %v", grants.Items)
		}
	})
}

// TestCreditNoteGrantOverHTTP: a credit note with generateCashCreditGrant
// ENABLED creates one grant, whatever is retried; voiding a grant stops it
// being applied.
func TestCreditNoteGrantOverHTTP(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	cust := e.customer("Initech")
	inv := e.sentInvoice(cust) // GBP 12.00
	cn := e.create("/credit-notes", `{"currency":"GBP","customerId":"`+cust+`","invoiceId":"`+inv+`"}`)
	wantStatus(t, e.post("/credit-notes/"+cn+"/line-items", `{"creditNoteId":"`+cn+`","title":"Refund","quantity":"1","rate":"5","taxRate":"0.2","externalIds":[]}`), http.StatusCreated)
	wantStatus(t, e.put("/credit-notes/"+cn, `{"settings":{"generateCashCreditGrant":"ENABLED"}}`), http.StatusOK)
	for range 2 {
		wantStatus(t, e.post("/credit-notes/"+cn+"/mark-as-sent", ""), http.StatusOK)
	}
	wantError(t, e.post("/credit-notes/"+cn+"/finalize", ""), http.StatusConflict, "invalid_state")
	note := decode[map[string]any](t, e.get("/credit-notes/"+cn))
	grants := decode[page](t, e.get("/credits?customerId="+cust)).Items
	if len(grants) != 1 || grants[0]["sourceCreditNoteId"] != cn || note["creditGrantId"] != grants[0]["id"] ||
		grants[0]["originalAmount"] != "6.00" || grants[0]["currency"] != "GBP" {
		t.Fatalf("grants %v, credit note %v", grants, note)
	}
	if got := decode[map[string]any](t, e.get("/invoices/"+inv)); got["amountDue"] != "12.00" {
		t.Errorf("the credited invoice is due %v", got["amountDue"])
	}
	gid := grants[0]["id"].(string)
	wantError(t, e.post("/credits/"+gid+"/void", ""), http.StatusConflict, "invalid_state") // void the credit note instead
	wantStatus(t, e.post("/credit-notes/"+cn+"/void", ""), http.StatusOK)
	if g := decode[map[string]any](t, e.get("/credits/"+gid)); g["status"] != "VOIDED" {
		t.Errorf("grant of a voided credit note %v", g)
	}

	// A voided grant stops being applied (apply-credits on a manual invoice).
	r := e.post("/credits", `{"customerId":"`+cust+`","name":"Promo","creditUnitType":"CURRENCY","currency":"GBP","amount":"50.00"}`)
	promo := object(t, r, http.StatusCreated, nil)["id"].(string)
	wantStatus(t, e.post("/credits/"+promo+"/void", ""), http.StatusOK)
	wantError(t, e.post("/credits/"+promo+"/void", ""), http.StatusConflict, "invalid_state")
	manual := e.invoice(cust, "")["id"].(string)
	wantStatus(t, e.post("/invoices/"+manual+"/line-items", lineBody("Fee", "1", "10", "0", "")), http.StatusCreated)
	applied := decode[map[string]any](t, e.post("/invoices/"+manual+"/apply-credits", ""))
	if applied["status"] != "DRAFT" || applied["amountDue"] != "10.00" {
		t.Errorf("a voided grant was applied: %v", applied)
	}
	wantStatus(t, e.post("/invoices/"+manual+"/finalize", ""), http.StatusOK)
	if applied := decode[map[string]any](t, e.post("/invoices/"+manual+"/apply-credits", "")); applied["amountDue"] != "10.00" {
		t.Errorf("a voided grant was applied to the issued invoice: %v", applied)
	}
	if got := e.balanceOf(cust, "GBP"); got != "0.00" {
		t.Errorf("balance %s", got)
	}
}

func TestCreditBadRequestsOverHTTP(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	cust := e.customer("Hooli")
	wantError(t, e.post("/credits", `{}`), http.StatusBadRequest, "validation_failed", "name", "creditUnitType", "amount", "customerId")
	wantError(t, e.post("/credits", `{"customerId":"`+cust+`","name":"x","creditUnitType":"CURRENCY","currency":"USD","amount":12}`),
		http.StatusBadRequest, "validation_failed", "amount")
	wantError(t, e.post("/credits", `{"customerId":"`+cust+`","name":"x","creditUnitType":"CURRENCY","currency":"USD","amount":"1","extra":1}`),
		http.StatusBadRequest, "validation_failed", "extra")
	wantError(t, e.get("/credits/"+cust+"/balances?date=tomorrow"), http.StatusBadRequest, "validation_failed", "date")
	wantError(t, e.get("/credits/"+cust+"/balances?date=2200-01-01"), http.StatusBadRequest, "validation_failed", "date")
	wantError(t, e.post("/credits", `{"customerId":"`+cust+`","name":"x","creditUnitType":"CURRENCY","currency":"USD","amount":"1","expiryDate":"1999-12-31"}`),
		http.StatusBadRequest, "validation_failed", "expiryDate")
	wantError(t, e.get("/credits?status=GONE"), http.StatusBadRequest, "validation_failed", "status")
	wantError(t, e.get("/credits/"+missingID), http.StatusNotFound, "not_found")
	wantError(t, e.get("/credits/"+missingID+"/balances"), http.StatusNotFound, "not_found")
	wantError(t, e.get("/credits/"+missingID+"/grants"), http.StatusNotFound, "not_found")
}
