package stripe_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v82/webhook"

	"github.com/billingd/billing"
	"github.com/billingd/billing/internal/stripemock"
	bstripe "github.com/billingd/billing/payments/stripe"
)

const testSecret = "sk_test_adapter0000SECRET"

// openRecorded opens the adapter on a fresh stripe-mock behind a recorder
// of the requests it sends.
func openRecorded(t *testing.T) (billing.PaymentGateway, *stripemock.Recorder) {
	t.Helper()
	rec := stripemock.NewRecorder(t, stripemock.Start(t))
	return open(t, rec.URL), rec
}

func open(t *testing.T, url string) billing.PaymentGateway {
	t.Helper()
	g, err := bstripe.New(bstripe.Options{APIURL: url}).Open(billing.ProviderCredentials{SecretKey: testSecret, WebhookSecret: "whsec_test"})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestChargeMinorUnits charges through the real adapter against
// stripe-mock, through a recorder that sees the wire: the amount in
// Stripe's integer minor units for a two-, a zero- and a three-decimal
// currency, the idempotency key, metadata.invoice_id, off-session confirm.
func TestChargeMinorUnits(t *testing.T) {
	t.Parallel()
	g, rec := openRecorded(t)
	for _, c := range []struct {
		amount string
		cur    billing.Currency
		want   string
	}{{"12.34", "USD", "1234"}, {"1234", "JPY", "1234"}, {"1.230", "KWD", "1230"}, {"0.50", "USD", "50"}} {
		key := "inv_" + string(c.cur) + "/attempt/1"
		res, err := g.Charge(context.Background(), billing.ChargeRequest{
			InvoiceID: "inv_" + string(c.cur), InvoiceNumber: "INV00001", Attempt: 1, Amount: billing.MustDecimal(c.amount),
			Currency: c.cur, CustomerRef: "cus_123", PaymentMethod: "pm_123", IdempotencyKey: key,
		})
		if err != nil {
			t.Fatalf("%s %s: %v", c.amount, c.cur, err)
		}
		if res.Reference == "" {
			t.Errorf("%s %s: no PaymentIntent reference", c.amount, c.cur)
		}
		reqs := rec.Requests("/v1/payment_intents")
		last := reqs[len(reqs)-1]
		f := last.Form
		if f.Get("amount") != c.want || f.Get("currency") != strings.ToLower(string(c.cur)) {
			t.Errorf("%s %s sent amount=%s currency=%s, want %s", c.amount, c.cur, f.Get("amount"), f.Get("currency"), c.want)
		}
		if last.IdempotencyKey != key || f.Get("metadata[invoice_id]") != "inv_"+string(c.cur) ||
			f.Get("off_session") != "true" || f.Get("confirm") != "true" || f.Get("payment_method") != "pm_123" {
			t.Errorf("%s %s: request %+v", c.amount, c.cur, last)
		}
	}
}

// TestChargeRefusesInexact: an amount Stripe cannot represent is refused
// before any request, with a conflict naming currency.
func TestChargeRefusesInexact(t *testing.T) {
	t.Parallel()
	g, rec := openRecorded(t)
	for _, c := range []struct {
		amount string
		cur    billing.Currency
	}{{"1.234", "KWD"}, {"12.5", "JPY"}, {"0.001", "USD"}} {
		_, err := g.Charge(context.Background(), billing.ChargeRequest{InvoiceID: "i", Amount: billing.MustDecimal(c.amount),
			Currency: c.cur, CustomerRef: "cus_1", PaymentMethod: "pm_1", IdempotencyKey: "k"})
		var e *billing.Error
		if err == nil || !errorsAs(err, &e) || e.Code != billing.CodeConflict || e.Field != "currency" {
			t.Errorf("%s %s: err %v, want conflict on currency", c.amount, c.cur, err)
		}
	}
	if n := len(rec.Requests("")); n != 0 {
		t.Errorf("%d requests reached Stripe", n)
	}
}

func errorsAs(err error, e **billing.Error) bool {
	v, ok := err.(*billing.Error)
	*e = v
	return ok
}

// TestMinorUnitsRoundTrip: every conversion is exact both ways.
func TestMinorUnitsRoundTrip(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		amount string
		cur    billing.Currency
		n      int64
	}{{"12.34", "USD", 1234}, {"1234", "JPY", 1234}, {"0", "ISK", 0}, {"1.230", "KWD", 1230}, {"92233720368547758.07", "USD", 9223372036854775807}} {
		n, err := bstripe.MinorUnits(billing.MustDecimal(c.amount), c.cur)
		if err != nil || n != c.n {
			t.Errorf("MinorUnits(%s %s) = %d, %v; want %d", c.amount, c.cur, n, err, c.n)
		}
		if back := bstripe.FromMinorUnits(c.n, c.cur); back.Cmp(billing.MustDecimal(c.amount)) != 0 {
			t.Errorf("FromMinorUnits(%d %s) = %s", c.n, c.cur, back)
		}
	}
	if _, err := bstripe.MinorUnits(billing.MustDecimal("92233720368547758.08"), "USD"); err == nil {
		t.Error("an amount beyond int64 was accepted")
	}
}

// TestCustomerPagesRefund runs the other calls of the port against
// stripe-mock: customers, the hosted pages, a refund.
func TestCustomerPagesRefund(t *testing.T) {
	t.Parallel()
	g, rec := openRecorded(t)
	ctx := context.Background()
	id, err := g.CreateCustomer(ctx, billing.ProviderCustomerParams{CustomerID: "c1", Name: "Acme", Email: "a@example.com", IdempotencyKey: "customer/c1"})
	if err != nil || id == "" {
		t.Fatalf("CreateCustomer: %q %v", id, err)
	}
	if r := rec.Requests("/v1/customers"); len(r) != 1 || r[0].Form.Get("metadata[customer_id]") != "c1" || r[0].IdempotencyKey != "customer/c1" {
		t.Errorf("customer request %+v", r)
	}
	if _, err := g.DefaultPaymentMethod(ctx, id); err != nil {
		t.Errorf("DefaultPaymentMethod: %v", err)
	}
	page, err := g.PaymentPage(ctx, billing.PaymentPageRequest{InvoiceID: "inv1", InvoiceNumber: "INV1", Amount: billing.MustDecimal("99.99"), Currency: "EUR", IdempotencyKey: "inv1/link/1"})
	if err != nil || page.URL == "" {
		t.Fatalf("PaymentPage: %+v %v", page, err)
	}
	r := rec.Requests("/v1/checkout/sessions")
	if f := r[0].Form; f.Get("line_items[0][price_data][unit_amount]") != "9999" || f.Get("payment_intent_data[metadata][invoice_id]") != "inv1" || f.Get("mode") != "payment" {
		t.Errorf("checkout form %v", f)
	}
	if _, err := g.SetupPage(ctx, billing.SetupPageRequest{CustomerID: "c1", CustomerRef: id, Currency: "USD"}); err != nil {
		t.Errorf("SetupPage: %v", err)
	}
	if _, err := g.Refund(ctx, billing.RefundRequest{PaymentRef: "pi_1", Amount: billing.MustDecimal("5.00"), Currency: "USD", CreditNoteID: "cn1", IdempotencyKey: "cn1/refund"}); err != nil {
		t.Errorf("Refund: %v", err)
	}
	if r := rec.Requests("/v1/refunds"); len(r) != 1 || r[0].Form.Get("amount") != "500" || r[0].IdempotencyKey != "cn1/refund" {
		t.Errorf("refund request %+v", r)
	}
}

// TestParseEvent verifies signatures with stripe-go's webhook package and
// maps the events billingd handles.
func TestParseEvent(t *testing.T) {
	t.Parallel()
	g := open(t, "http://127.0.0.1:1")
	payload := []byte(`{"id":"evt_1","object":"event","type":"payment_intent.succeeded","created":1700000000,"api_version":"2020-08-27",
		"data":{"object":{"id":"pi_1","object":"payment_intent","amount_received":1230,"currency":"kwd","customer":"cus_1","metadata":{"invoice_id":"inv_9"}}}}`)
	signed := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: payload, Secret: "whsec_test", Timestamp: time.Now()})
	h := http.Header{}
	h.Set("Stripe-Signature", signed.Header)
	ev, err := g.ParseEvent(payload, h)
	if err != nil {
		t.Fatal(err)
	}
	if ev.Type != billing.ProviderEventPaymentSucceeded || ev.InvoiceID != "inv_9" || ev.PaymentRef != "pi_1" ||
		ev.Amount.String() != "1.230" || ev.Currency != "KWD" || ev.CustomerRef != "cus_1" {
		t.Errorf("event %+v", ev)
	}
	for name, hdr := range map[string]string{
		"missing": "", "bad": "t=1,v1=00", "other secret": webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: payload, Secret: "whsec_other", Timestamp: time.Now()}).Header,
		"stale": webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: payload, Secret: "whsec_test", Timestamp: time.Now().Add(-time.Hour)}).Header,
	} {
		h := http.Header{}
		if hdr != "" {
			h.Set("Stripe-Signature", hdr)
		}
		_, err := g.ParseEvent(payload, h)
		var e *billing.Error
		if !errorsAs(err, &e) || e.Code != billing.CodeValidationFailed || e.Field != "Stripe-Signature" {
			t.Errorf("%s signature: %v", name, err)
		}
	}
	var raw map[string]any
	_ = json.Unmarshal(payload, &raw)
	_ = fmt.Sprint(raw)
}

// TestErrorsNameNoSecret: stripe-mock echoes a key it refuses; the
// adapter's error carries only its last 4 characters.
func TestErrorsNameNoSecret(t *testing.T) {
	t.Parallel()
	url := stripemock.Start(t)
	const secret = "not_a_key_but_SECRET_VALUE_7781"
	g, err := bstripe.New(bstripe.Options{APIURL: url}).Open(billing.ProviderCredentials{SecretKey: secret, WebhookSecret: "whsec_x"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = g.CreateCustomer(context.Background(), billing.ProviderCustomerParams{CustomerID: "c"})
	if err == nil || strings.Contains(err.Error(), secret) || !strings.Contains(err.Error(), "7781") {
		t.Errorf("error %v", err)
	}
}

// TestPaymentMethodSetupWire runs the calls of a payment method set-up
// against stripe-mock and checks what reached the wire: the Checkout
// Session in setup mode (the customer, metadata.customer_id on the session
// and on its SetupIntent), the SetupIntent read back, the customer's
// invoice_settings.default_payment_method set.
func TestPaymentMethodSetupWire(t *testing.T) {
	t.Parallel()
	g, rec := openRecorded(t)
	ctx := context.Background()
	page, err := g.SetupPage(ctx, billing.SetupPageRequest{CustomerID: "c1", CustomerRef: "cus_1", Currency: "EUR", SuccessURL: "https://shop.example/saved"})
	if err != nil || page.URL == "" || page.Reference == "" {
		t.Fatalf("SetupPage: %+v %v", page, err)
	}
	f := rec.Requests("/v1/checkout/sessions")[0].Form
	if f.Get("mode") != "setup" || f.Get("customer") != "cus_1" || f.Get("metadata[customer_id]") != "c1" ||
		f.Get("setup_intent_data[metadata][customer_id]") != "c1" || f.Get("success_url") != "https://shop.example/saved" || f.Get("currency") != "eur" {
		t.Errorf("set-up session form %v", f)
	}
	if _, _, err := g.SetupPaymentMethod(ctx, "seti_123"); err != nil {
		t.Errorf("SetupPaymentMethod: %v", err)
	}
	if r := rec.Requests("/v1/setup_intents/seti_123"); len(r) != 1 || r[0].Method != http.MethodGet {
		t.Errorf("set-up read %+v", r)
	}
	if err := g.SetDefaultPaymentMethod(ctx, "cus_1", "pm_saved"); err != nil {
		t.Fatal(err)
	}
	if r := rec.Requests("/v1/customers/cus_1"); len(r) != 1 || r[0].Method != http.MethodPost || r[0].Form.Get("invoice_settings[default_payment_method]") != "pm_saved" {
		t.Errorf("default payment method update %+v", r)
	}
}

// TestClosePageWire: closing a payment page reads the Checkout Session and
// expires it while it is open.
func TestClosePageWire(t *testing.T) {
	t.Parallel()
	g, rec := openRecorded(t)
	if err := g.ClosePage(context.Background(), "cs_123"); err != nil {
		t.Fatal(err)
	}
	if r := rec.Requests("/v1/checkout/sessions/cs_123"); len(r) != 1 || r[0].Method != http.MethodGet {
		t.Errorf("session read %+v", r)
	}
	if r := rec.Requests("/v1/checkout/sessions/cs_123/expire"); len(r) != 1 || r[0].Method != http.MethodPost {
		t.Errorf("session expire %+v (stripe-mock's session is open)", r)
	}
}

// TestParseSetupAndDisputeEvents maps the set-up and dispute events.
func TestParseSetupAndDisputeEvents(t *testing.T) {
	t.Parallel()
	g := open(t, "http://127.0.0.1:1")
	for _, c := range []struct {
		body string
		want billing.ProviderEvent
	}{
		{`{"id":"evt_a","object":"event","type":"checkout.session.completed","created":1700000000,"data":{"object":{"id":"cs_1","object":"checkout.session","mode":"setup","customer":"cus_1","setup_intent":"seti_1","metadata":{"customer_id":"c1"}}}}`,
			billing.ProviderEvent{Type: billing.ProviderEventPaymentMethodSaved, SetupRef: "seti_1", CustomerRef: "cus_1", CustomerID: "c1"}},
		{`{"id":"evt_b","object":"event","type":"setup_intent.succeeded","created":1700000000,"data":{"object":{"id":"seti_1","object":"setup_intent","customer":"cus_1","payment_method":"pm_1","metadata":{"customer_id":"c1"}}}}`,
			billing.ProviderEvent{Type: billing.ProviderEventPaymentMethodSaved, SetupRef: "seti_1", CustomerRef: "cus_1", CustomerID: "c1", PaymentMethod: "pm_1"}},
		{`{"id":"evt_c","object":"event","type":"charge.dispute.created","created":1700000000,"data":{"object":{"id":"dp_1","object":"dispute","amount":1999,"currency":"usd","payment_intent":"pi_1","status":"needs_response"}}}`,
			billing.ProviderEvent{Type: billing.ProviderEventDisputeOpened, DisputeRef: "dp_1", PaymentRef: "pi_1", DisputeStatus: "NEEDS_RESPONSE", Amount: billing.MustDecimal("19.99")}},
		{`{"id":"evt_d","object":"event","type":"charge.dispute.closed","created":1700000000,"data":{"object":{"id":"dp_1","object":"dispute","amount":1999,"currency":"usd","payment_intent":"pi_1","status":"lost"}}}`,
			billing.ProviderEvent{Type: billing.ProviderEventDisputeClosed, DisputeRef: "dp_1", PaymentRef: "pi_1", DisputeStatus: "LOST", Amount: billing.MustDecimal("19.99")}},
	} {
		payload := []byte(c.body)
		h := http.Header{}
		h.Set("Stripe-Signature", webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: payload, Secret: "whsec_test", Timestamp: time.Now()}).Header)
		ev, err := g.ParseEvent(payload, h)
		if err != nil {
			t.Fatal(err)
		}
		w := c.want
		if ev.Type != w.Type || ev.SetupRef != w.SetupRef || ev.CustomerRef != w.CustomerRef || ev.CustomerID != w.CustomerID ||
			ev.PaymentMethod != w.PaymentMethod || ev.DisputeRef != w.DisputeRef || ev.DisputeStatus != w.DisputeStatus ||
			ev.PaymentRef != w.PaymentRef || (w.Amount != billing.Decimal{} && ev.Amount.Cmp(w.Amount) != 0) {
			t.Errorf("%s: %+v", ev.RawType, ev)
		}
	}
}
