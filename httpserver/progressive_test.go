package httpserver

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
)

// TestProgressiveBillingOverHTTP: a schedule's thresholdAmount is
// validated naming the field, echoed, and a billing run issues the interim
// invoice; the upcoming invoice then deducts it.
//
// Long on purpose: one scenario walked in order; each step starts from the
// state the previous steps left.
func TestProgressiveBillingOverHTTP(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil, billingtest.WithBolt())
	ctx := context.Background()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	e.clock.Set(time.Date(2024, 7, 10, 12, 0, 0, 0, time.UTC))
	c, err := e.svc.CreateCustomer(ctx, e.account, billing.CustomerParams{LegalName: "C"})
	must(err)
	m, err := e.svc.CreateUsageMetric(ctx, e.account, billing.CreateUsageMetricParams{UsageMetricParams: billing.UsageMetricParams{
		Name: "Calls", MetricType: billing.MetricTypeSimple, EventType: "call", AggregationType: billing.AggregationCount}})
	must(err)
	p, err := e.svc.CreateProduct(ctx, e.account, billing.CreateProductParams{Name: "P"})
	must(err)
	rate := billing.MustDecimal("1.25")
	pr, err := e.svc.CreatePrice(ctx, e.account, billing.CreatePriceParams{ProductID: p.ID, Name: "Calls", Currency: billing.CurrencyEUR,
		Structure:        billing.PriceStructure{PricingType: billing.PricingLinear, PricePerUnit: &rate, UsageMetricID: m.ID},
		BillingFrequency: billing.FrequencyMonthly, BillingType: billing.BillingTypeInArrears})
	must(err)
	body := func(threshold string) string {
		return fmt.Sprintf(`{"customerId":%q,"startDate":"2024-07-01","autoIssueInvoices":false,"isDraft":false,"thresholdAmount":%s,
			"phases":[{"startDate":"2024-07-01","priceIds":[%q]}]}`, c.ID, threshold, pr.ID)
	}
	wantError(t, e.post("/billing-schedules", body(`"0"`)), http.StatusBadRequest, billing.CodeValidationFailed, "thresholdAmount")
	wantError(t, e.post("/billing-schedules", body(`"5.001"`)), http.StatusBadRequest, billing.CodeValidationFailed, "thresholdAmount")
	r := e.post("/billing-schedules", body(`"5.00"`))
	wantStatus(t, r, http.StatusCreated)
	if !strings.Contains(string(r.body), `"thresholdAmount":"5.00"`) {
		t.Errorf("thresholdAmount not echoed: %s", r.body)
	}
	sc := decode[billing.BillingSchedule](t, r)

	at := time.Date(2024, 7, 5, 0, 0, 0, 0, time.UTC)
	var batch billing.UsageEventBatchParams
	for range 5 { // 6.25 EUR
		batch.Events = append(batch.Events, billing.UsageEventParams{CustomerAlias: c.ID, EventType: "call", EventTimestamp: &at})
	}
	_, err = e.svc.CreateUsageEventBatch(ctx, e.account, batch)
	must(err)
	r = e.post("/billing-runs", "")
	wantStatus(t, r, http.StatusOK)
	run := decode[billing.BillingRun](t, r)
	if run.InvoicesCreated != 1 {
		t.Fatalf("run: %s", r.body)
	}
	r = e.get("/invoices/" + run.InvoiceIDs[0])
	wantStatus(t, r, http.StatusOK)
	if inv := decode[billing.Invoice](t, r); inv.GrossTotal.String() != "6.25" || inv.BillingScheduleID != sc.ID {
		t.Errorf("interim invoice: %s", r.body)
	}
	r = e.get("/billing-schedules/" + sc.ID + "/upcoming-invoice?asOf=2024-07-31T00:00:00Z")
	wantStatus(t, r, http.StatusOK)
	up := decode[billing.UpcomingInvoice](t, r)
	if len(up.LineItems) != 2 || up.LineItems[1].Title != "Previously invoiced: Calls" || up.GrossTotal.String() != "0.00" {
		t.Errorf("upcoming invoice: %s", r.body)
	}
}
