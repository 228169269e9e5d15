package httpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v82/webhook"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
	"github.com/billingd/billing/payments/stripe"
)

const (
	testStripeKey     = "sk_test_PaySecretKeyValue9911"
	testWebhookSecret = "whsec_PayWebhookSecretValue7722"
)

// payEnv is an env whose Service has the Stripe adapter and a master key,
// its account configured with Stripe, and everything logged into logs.
func newPayEnv(t *testing.T) (*env, *billingtest.LogBuffer) {
	t.Helper()
	logs := &billingtest.LogBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	e := newEnv(t, &Config{Logger: log}, billingtest.WithConfig(billing.Config{Logger: log,
		PaymentProviders: []billing.PaymentProvider{stripe.New(stripe.Options{APIURL: "http://127.0.0.1:1"})},
		MasterKey:        []byte("0123456789abcdef0123456789abcdef")}))
	_, err := e.svc.ConfigurePaymentProvider(context.Background(), e.account, billing.ConfigurePaymentProviderParams{
		Provider: billing.PaymentProviderStripe, SecretKey: testStripeKey, WebhookSecret: testWebhookSecret})
	if err != nil {
		t.Fatal(err)
	}
	return e, logs
}

// sentUSDInvoice creates and sends an invoice of 30.00 USD through the API.
func (e *env) sentUSDInvoice() string {
	e.tb.Helper()
	cust := e.createAs(e.auth, "/customers", `{"legalName":"Payer Ltd","customerAliases":["payer"]}`)
	inv := e.createAs(e.auth, "/invoices", `{"currency":"USD","customerId":"`+cust+`"}`)
	e.createAs(e.auth, "/invoices/"+inv+"/line-items", `{"title":"Plan","quantity":"1","rate":"30.00","taxRate":"0","externalIds":[]}`)
	wantStatus(e.tb, e.post("/invoices/"+inv+"/send", ""), http.StatusOK)
	return inv
}

func stripeEvent(id, typ, invoiceID string, amount int64) []byte {
	return []byte(fmt.Sprintf(`{"id":%q,"object":"event","type":%q,"created":1722340000,"api_version":"2024-06-20","data":{"object":`+
		`{"id":"pi_3Pay","object":"payment_intent","amount":%d,"amount_received":%d,"currency":"usd","customer":"cus_1","metadata":{"invoice_id":%q}}}}`,
		id, typ, amount, amount, invoiceID))
}

func (e *env) webhook(payload []byte, signature string) response {
	e.tb.Helper()
	h := map[string]string{}
	if signature != "" {
		h["Stripe-Signature"] = signature
	}
	return e.do(req{method: "POST", path: "/webhooks/stripe/" + e.account, body: string(payload), auth: "-", header: h})
}

func sign(payload []byte, secret string) string {
	return webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: payload, Secret: secret, Timestamp: time.Now()}).Header
}

// TestStripeWebhookPaysInvoice: a signed payment_intent.succeeded marks
// the invoice PAID with a payment (the PaymentIntent as reference) and its
// journal; the same event again answers 200 and changes nothing; a bad or
// missing signature answers 400 naming the header and changes nothing.
func TestStripeWebhookPaysInvoice(t *testing.T) {
	t.Parallel()
	e, _ := newPayEnv(t)
	inv := e.sentUSDInvoice()
	ev := stripeEvent("evt_1", "payment_intent.succeeded", inv, 3000)

	for name, sig := range map[string]string{"missing": "", "wrong secret": sign(ev, "whsec_other"), "garbage": "t=1,v1=abc"} {
		r := e.webhook(ev, sig)
		wantError(t, r, http.StatusBadRequest, billing.CodeValidationFailed, "Stripe-Signature")
		if got := decode[map[string]any](t, e.get("/invoices/"+inv)); got["paymentStatus"] != "UNPAID" {
			t.Fatalf("%s signature changed the invoice: %v", name, got["paymentStatus"])
		}
	}
	for i := range 2 {
		r := e.webhook(ev, sign(ev, testWebhookSecret))
		wantStatus(t, r, http.StatusOK)
		if res := decode[map[string]any](t, r); res["replay"] != (i == 1) {
			t.Errorf("delivery %d: %s", i, r.body)
		}
	}
	got := decode[map[string]any](t, e.get("/invoices/"+inv))
	if got["paymentStatus"] != "PAID" || got["amountDue"] != "0.00" || got["dunningStatus"] != "COMPLETED" {
		t.Errorf("invoice after the event: %v %v %v", got["paymentStatus"], got["amountDue"], got["dunningStatus"])
	}
	pays := decode[page](t, e.get("/invoices/"+inv+"/payments"))
	if len(pays.Items) != 1 || pays.Items[0]["reference"] != "pi_3Pay" || pays.Items[0]["amount"] != "30.00" {
		t.Fatalf("payments %v", pays.Items)
	}
	journal := decode[page](t, e.get("/journal-entries?sourceId="+pays.Items[0]["id"].(string)))
	if len(journal.Items) != 2 {
		t.Errorf("journal of the payment: %v", journal.Items)
	}
	// An unknown account's endpoint is not found, never a 5xx.
	wantError(t, e.do(req{method: "POST", path: "/webhooks/stripe/nope", body: string(ev), auth: "-",
		header: map[string]string{"Stripe-Signature": sign(ev, testWebhookSecret)}}), http.StatusNotFound, billing.CodeNotFound)
}

// TestPaymentSecretsNeverAnswered: no answer, log line or metric carries
// the Stripe secret key or the webhook secret.
func TestPaymentSecretsNeverAnswered(t *testing.T) {
	t.Parallel()
	e, logs := newPayEnv(t)
	inv := e.sentUSDInvoice()
	var bodies []string
	for _, p := range []string{"/payments/settings", "/invoices/render-settings", "/invoices/" + inv, "/invoices/" + inv + "/collection", "/metrics"} {
		r := e.get(p)
		wantStatus(t, r, http.StatusOK)
		bodies = append(bodies, string(r.body))
	}
	ev := stripeEvent("evt_2", "payment_intent.succeeded", inv, 3000)
	bodies = append(bodies, string(e.webhook(ev, sign(ev, testWebhookSecret)).body), string(e.webhook(ev, "t=1,v1=00").body))
	// The collection run calls Stripe (unreachable here): its errors are logged.
	if _, err := e.svc.RunCollection(context.Background(), e.clock.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	bodies = append(bodies, logs.String())
	for _, b := range bodies {
		for _, secret := range []string{testStripeKey, testWebhookSecret, "PaySecretKeyValue", "PayWebhookSecretValue"} {
			if strings.Contains(b, secret) {
				t.Errorf("a secret in %.200s", b)
			}
		}
	}
	settings := decode[map[string]any](t, e.get("/payments/settings"))
	if settings["paymentProvider"] != "STRIPE" {
		t.Errorf("settings %v", settings)
	}
}

// TestPaymentSettingsSurface walks the upstream's payment settings: the
// customer's providerCustomerId and the schedule's autoCharge are
// answered, one settings record per target, fields named in 4xx.
func TestPaymentSettingsSurface(t *testing.T) {
	t.Parallel()
	e, _ := newPayEnv(t)
	cust := e.createAs(e.auth, "/customers", `{"legalName":"Linked Ltd","customerAliases":["linked"]}`)
	r := e.post("/payments/settings/customers", `{"customerId":"`+cust+`","paymentProvider":"STRIPE","providerCustomerId":"cus_Existing"}`)
	wantStatus(t, r, http.StatusCreated)
	cs := decode[map[string]any](t, r)
	if cs["providerCustomerId"] != "cus_Existing" || cs["serviceAccountId"] != e.account {
		t.Errorf("customer settings %s", r.body)
	}
	wantError(t, e.post("/payments/settings/customers", `{"customerId":"`+cust+`","paymentProvider":"STRIPE"}`), http.StatusConflict, billing.CodeConflict, "customerId")
	wantError(t, e.post("/payments/settings/customers", `{"customerId":"`+cust+`","paymentProvider":"PAYPAL"}`), http.StatusBadRequest, billing.CodeValidationFailed, "paymentProvider")
	r = e.put("/payments/settings/customers/"+cs["id"].(string), `{"paymentProvider":"STRIPE","providerCustomerId":"cus_Other"}`)
	if got := decode[map[string]any](t, r); got["providerCustomerId"] != "cus_Other" {
		t.Errorf("update %s", r.body)
	}
	wantError(t, e.put("/payments/settings/"+e.account, `{"retryDays":[5,3]}`), http.StatusBadRequest, billing.CodeValidationFailed, "retryDays")
	wantError(t, e.put("/invoices/render-settings/"+e.account, `{"paymentLinkDisplay":"MAYBE"}`), http.StatusBadRequest, billing.CodeValidationFailed, "paymentLinkDisplay")
	rs := decode[map[string]any](t, e.put("/invoices/render-settings/"+e.account, `{"paymentLinkDisplay":"SHOW_PAYMENT_LINK"}`))
	if rs["paymentLinkDisplay"] != "SHOW_PAYMENT_LINK" {
		t.Errorf("render settings %v", rs)
	}
	inv := e.sentUSDInvoice()
	col := decode[map[string]any](t, e.get("/invoices/"+inv+"/collection"))
	if col["method"] != "SEND_INVOICE" || col["nextStep"] != "PAYMENT_LINK" || col["dunningStatus"] != "OVERDUE_CHECK_SCHEDULED" {
		t.Errorf("collection %v", col)
	}
	body, _ := json.Marshal(col)
	_ = body
}

// TestStripeSetupAndDisputeWebhooks: signed Stripe events end to end. A
// setup_intent.succeeded names the customer's saved payment method: the
// customer's payment settings answer it as defaultPaymentMethod. A
// charge.dispute.closed (lost) of the PaymentIntent that paid an invoice
// makes it due again; the collection answers the dispute and the payment
// what was taken back.
func TestStripeSetupAndDisputeWebhooks(t *testing.T) {
	t.Parallel()
	e, _ := newPayEnv(t)
	cust := e.createAs(e.auth, "/customers", `{"legalName":"Saver Ltd","customerAliases":["saver"]}`)
	cs := decode[map[string]any](t, e.post("/payments/settings/customers", `{"customerId":"`+cust+`","paymentProvider":"STRIPE","providerCustomerId":"cus_Saver"}`))
	setup := []byte(`{"id":"evt_setup","object":"event","type":"setup_intent.succeeded","created":1722340000,"data":{"object":` +
		`{"id":"seti_1","object":"setup_intent","customer":"cus_Saver","payment_method":"pm_Saved","metadata":{"customer_id":"` + cust + `"}}}}`)
	wantStatus(t, e.webhook(setup, sign(setup, testWebhookSecret)), http.StatusOK)
	if got := decode[map[string]any](t, e.get("/payments/settings/customers/"+cs["id"].(string))); got["defaultPaymentMethod"] != "pm_Saved" {
		t.Errorf("customer payment settings after the set-up: %v", got)
	}

	inv := e.sentUSDInvoice()
	paid := stripeEvent("evt_paid", "payment_intent.succeeded", inv, 3000)
	wantStatus(t, e.webhook(paid, sign(paid, testWebhookSecret)), http.StatusOK)
	lost := []byte(`{"id":"evt_lost","object":"event","type":"charge.dispute.closed","created":1722350000,"data":{"object":` +
		`{"id":"dp_1","object":"dispute","amount":3000,"currency":"usd","payment_intent":"pi_3Pay","status":"lost"}}}`)
	wantStatus(t, e.webhook(lost, sign(lost, testWebhookSecret)), http.StatusOK)
	got := decode[map[string]any](t, e.get("/invoices/"+inv))
	if got["paymentStatus"] != "UNPAID" || got["amountDue"] != "30.00" || got["dunningStatus"] != "FAILED" {
		t.Errorf("invoice after the lost dispute: %v %v %v", got["paymentStatus"], got["amountDue"], got["dunningStatus"])
	}
	col := decode[map[string]any](t, e.get("/invoices/"+inv+"/collection"))
	ds, _ := col["disputes"].([]any)
	if len(ds) != 1 || ds[0].(map[string]any)["status"] != "LOST" || ds[0].(map[string]any)["amountReversed"] != "30.00" {
		t.Errorf("collection %v", col)
	}
	pays := decode[page](t, e.get("/invoices/"+inv+"/payments"))
	if len(pays.Items) != 1 || pays.Items[0]["amountReversed"] != "30.00" {
		t.Errorf("payments %v", pays.Items)
	}
}
