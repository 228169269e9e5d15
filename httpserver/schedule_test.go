package httpserver

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
)

// scheduleFixture creates a customer and a FIXED monthly EUR price over the
// library and returns their ids.
func (e *env) scheduleFixture() (customer, price string) {
	e.tb.Helper()
	ctx := context.Background()
	c, err := e.svc.CreateCustomer(ctx, e.account, billing.CustomerParams{LegalName: "C"})
	if err != nil {
		e.tb.Fatal(err)
	}
	p, err := e.svc.CreateProduct(ctx, e.account, billing.CreateProductParams{Name: "P"})
	if err != nil {
		e.tb.Fatal(err)
	}
	amount := billing.MustDecimal("10.00")
	pr, err := e.svc.CreatePrice(ctx, e.account, billing.CreatePriceParams{ProductID: p.ID, Name: "Plan", Currency: billing.CurrencyEUR,
		Structure: billing.PriceStructure{PricingType: billing.PricingFixed, Price: &amount}, BillingFrequency: billing.FrequencyMonthly,
		BillingType: billing.BillingTypeInAdvance})
	if err != nil {
		e.tb.Fatal(err)
	}
	return c.ID, pr.ID
}

func scheduleBody(customer, price, extra string) string {
	return fmt.Sprintf(`{"customerId":%q,"startDate":"2024-07-01","autoIssueInvoices":false%s,
		"phases":[{"startDate":"2024-07-01","priceIds":[%q],
		"discounts":[{"type":"PERCENTAGE","amount":12.5,"message":"Offer","separateLineItem":true}],
		"minimums":[{"amount":"100"}]}]}`, customer, extra, price)
}

// Long on purpose: one scenario walked in order; each step starts from the state the previous steps
// left, so pieces would repeat the set-up.
func TestScheduleRoutes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil, billingtest.WithBolt())
	customer, price := e.scheduleFixture()

	r := e.post("/billing-schedules", scheduleBody(customer, price, ""))
	wantStatus(t, r, http.StatusCreated)
	if !strings.Contains(string(r.body), `"amount":12.5,`) || !strings.Contains(string(r.body), `"amount":100,`) {
		t.Errorf("amounts are not JSON numbers from the decimal text: %s", r.body)
	}
	sc := decode[billing.BillingSchedule](t, r)
	if sc.Status != billing.ScheduleStatusDraft || len(sc.Prices) != 1 || sc.RecurrenceDayOfMonth != 1 || sc.DefaultDueDateDays != 30 {
		t.Errorf("created: %+v", sc)
	}

	t.Run("ValidationReportsEveryField", func(t *testing.T) {
		r := e.post("/billing-schedules", `{"customerId":"nope","startDate":"2024-07-01","autoIssueInvoices":true,"recurrenceDayOfMonth":32,
			"phases":[{"startDate":"2024-07-02","priceIds":["nope"],"discounts":[{"type":"PERCENTAGE","amount":101}]},
			{"startDate":"2024-08-01","priceIds":[]}]}`)
		wantError(t, r, http.StatusBadRequest, billing.CodeValidationFailed, "recurrenceDayOfMonth", "phases[0].startDate",
			"phases[0].endDate", "phases[0].discounts[0].amount", "phases[1].priceIds")
		r = e.post("/billing-schedules", `{"customerId":"nope","startDate":"2024-07-01","autoIssueInvoices":true,"phases":[{"startDate":"2024-07-01","priceIds":["nope"]}]}`)
		wantError(t, r, http.StatusBadRequest, billing.CodeValidationFailed, "customerId", "phases[0].priceIds[0]")
		r = e.post("/billing-schedules", `{"customerId":"x","startDate":"2024-07-01","autoIssueInvoices":true,"status":"ACTIVE","phases":[{"startDate":"2024-07-01","priceIds":["p"],"discounts":[{"type":"NOMINAL","amount":true}]}]}`)
		wantError(t, r, http.StatusBadRequest, billing.CodeValidationFailed, "status", "phases[0].discounts[0].amount")
	})
	t.Run("ActivateIsIdempotentAndGuarded", func(t *testing.T) {
		r := e.put("/billing-schedules/"+sc.ID+"/activate", "")
		wantStatus(t, r, http.StatusOK)
		got := decode[billing.BillingSchedule](t, r)
		if got.Status != billing.ScheduleStatusActive || got.FirstBillingDate == nil || got.FirstBillingDate.String() != "2024-07-01" {
			t.Errorf("activated: %s %v", got.Status, got.FirstBillingDate)
		}
		wantStatus(t, e.put("/billing-schedules/"+sc.ID+"/activate", ""), http.StatusOK)
		wantError(t, e.put("/billing-schedules/"+sc.ID, scheduleBody(customer, price, "")), http.StatusConflict, billing.CodeInvalidState)
		wantError(t, e.put("/prices/"+price, `{"name":"Plan","status":"DRAFT"}`), http.StatusConflict, billing.CodeInvalidState)
		wantError(t, e.get("/billing-schedules/00000000-0000-7000-8000-000000000000"), http.StatusNotFound, billing.CodeNotFound)
	})
	t.Run("ListFilters", func(t *testing.T) {
		r := e.get("/billing-schedules?customerId=" + customer + "&status=ACTIVE")
		wantStatus(t, r, http.StatusOK)
		type page struct {
			Items      []billing.BillingSchedule `json:"items"`
			Pagination billing.Pagination        `json:"pagination"`
		}
		if p := decode[page](t, r); p.Pagination.TotalResultSize != 1 || len(p.Items) != 1 || len(p.Items[0].Prices) != 1 {
			t.Errorf("ACTIVE schedules of the customer: %s", r.body)
		}
		wantError(t, e.get("/billing-schedules?status=NOPE"), http.StatusBadRequest, billing.CodeValidationFailed, "status")
	})
	t.Run("BillingRunsAndUpcomingInvoice", func(t *testing.T) {
		wantError(t, e.post("/billing-runs", `{"asOf":"2030-01-01T00:00:00Z"}`), http.StatusBadRequest, billing.CodeValidationFailed, "asOf")
		r := e.get("/billing-schedules/" + sc.ID + "/upcoming-invoice?asOf=2024-07-30T12:00:00Z")
		wantStatus(t, r, http.StatusOK)
		if up := decode[billing.UpcomingInvoice](t, r); up.BillingDate.String() != "2024-07-01" || len(up.LineItems) != 3 {
			t.Errorf("upcoming: %s", r.body)
		}
		r = e.post("/billing-runs", `{}`)
		wantStatus(t, r, http.StatusOK)
		if run := decode[billing.BillingRun](t, r); run.InvoicesCreated != 1 {
			t.Errorf("run: %s", r.body)
		}
		// Plan 10.00, offer -1.25, minimum top-up 91.25.
		r = e.get("/billing-schedules/" + sc.ID + "/upcoming-invoice")
		wantStatus(t, r, http.StatusOK)
		if up := decode[billing.UpcomingInvoice](t, r); up.BillingDate.String() != "2024-08-01" || up.NetTotal.String() != "100.00" {
			t.Errorf("next upcoming: %s", r.body)
		}
		wantStatus(t, e.get("/billing-schedules/"+sc.ID+"/late-usage"), http.StatusOK)
	})
	t.Run("SuspendCancelArchive", func(t *testing.T) {
		wantStatus(t, e.post("/billing-schedules/"+sc.ID+"/suspend", ""), http.StatusOK)
		wantError(t, e.post("/billing-schedules/"+sc.ID+"/suspend", ""), http.StatusConflict, billing.CodeInvalidState)
		r := e.post("/billing-schedules/"+sc.ID+"/cancel", `{"at":"2024-09-15"}`)
		wantStatus(t, r, http.StatusOK)
		if got := decode[billing.BillingSchedule](t, r); got.Status != billing.ScheduleStatusCancelled || got.EndDate.String() != "2024-09-15" {
			t.Errorf("cancelled: %s", r.body)
		}
		r = e.post("/billing-schedules/"+sc.ID+"/archive", "")
		wantStatus(t, r, http.StatusOK)
		if got := decode[billing.BillingSchedule](t, r); got.ArchivedAt == nil || got.Status != billing.ScheduleStatusCancelled {
			t.Errorf("archived: %s", r.body)
		}
		wantError(t, e.put("/billing-schedules/"+sc.ID+"/activate", ""), http.StatusConflict, billing.CodeInvalidState)
	})
}
