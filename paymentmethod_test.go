package billing_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/billingd/billing"
)

// webhook delivers a provider event to the account, signed for the fake.
func (e *payEnv) webhook(ev billing.ProviderEvent) *billing.ProviderEventResult {
	e.tb.Helper()
	if ev.Currency == "" {
		ev.Currency = billing.CurrencyUSD
	}
	b, err := json.Marshal(ev)
	e.must(err)
	res, err := e.svc.HandleProviderWebhook(e.ctx, e.account, b, http.Header{"Fake-Signature": {"whsec_value5678"}})
	e.must(err)
	return res
}

// TestPaymentMethodSetupCharged: a customer without a payment method
// fails its automatic charge; it saves one through the set-up page; the
// provider's completed set-up (the payment method read from the set-up, as
// checkout.session.completed carries only its id) makes it the customer's
// default, at billingd and at the provider; the next attempt charges it.
// A replay and an older set-up arriving late change nothing.
func TestPaymentMethodSetupCharged(t *testing.T) {
	t.Parallel()
	e := newPayEnv(t)
	e.fake.PaymentMethod = ""
	e.fake.SetupMethods = map[string]string{"seti_1": "pm_saved"}
	inv := e.autoChargedInvoice("25.00", billing.CurrencyUSD, true)
	if run := e.collect(); run.Failed != 1 || len(e.fake.Charges) != 0 {
		t.Fatalf("without a payment method: run %+v, charges %d", run, len(e.fake.Charges))
	}
	page, err := e.svc.PaymentMethodSetup(e.ctx, e.account, e.customer, billing.PaymentMethodSetupParams{})
	e.must(err)
	if !strings.Contains(page.URL, e.customer) {
		t.Errorf("set-up page %+v", page)
	}
	saved := e.clock.Now()
	e.webhook(billing.ProviderEvent{ID: "evt_setup", Type: billing.ProviderEventPaymentMethodSaved, CustomerID: e.customer, SetupRef: "seti_1", Created: saved})
	if res := e.webhook(billing.ProviderEvent{ID: "evt_setup", Type: billing.ProviderEventPaymentMethodSaved, CustomerID: e.customer, SetupRef: "seti_1", Created: saved}); !res.Replay {
		t.Error("the replay was not one")
	}
	// A set-up older than the one recorded arrives late: the newer method stays.
	e.webhook(billing.ProviderEvent{ID: "evt_old", Type: billing.ProviderEventPaymentMethodSaved, CustomerRef: "cus_" + e.customer,
		PaymentMethod: "pm_old", Created: saved.Add(-time.Hour)})
	st, err := e.svc.GetPaymentSettingsFor(e.ctx, e.account, "customer", e.customer)
	e.must(err)
	if got := st.(*billing.CustomerPaymentSettings); got.DefaultPaymentMethod != "pm_saved" {
		t.Errorf("customer payment settings %+v", got)
	}
	if _, _, defaults := e.fake.Snapshot(); !slices.Equal(defaults, []string{"cus_" + e.customer + "/pm_saved"}) {
		t.Errorf("provider defaults set %v", defaults)
	}
	_, err = e.svc.RetryCollectionNow(e.ctx, e.account, inv.ID)
	e.must(err)
	e.collect()
	if len(e.fake.Charges) != 1 || e.fake.Charges[0].PaymentMethod != "pm_saved" || e.fake.Charges[0].Attempt != 2 {
		t.Fatalf("charges %+v", e.fake.Charges)
	}
	if got := e.invoice(inv.ID); got.PaymentStatus != billing.PaymentStatusPaid {
		t.Errorf("invoice %s", got.PaymentStatus)
	}
}
