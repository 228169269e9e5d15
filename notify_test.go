package billing_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
	"github.com/billingd/billing/webhook"
)

// notifyEnv is a Service on bbolt whose clock starts at the real time (so
// receivers can check webhook timestamps with VerifyWebhook) and one account.
type notifyEnv struct {
	t       *testing.T
	svc     *billing.Service
	clock   *billingtest.Clock
	account string
	// webhooks sends webhooks as billingd wires them, with the env's
	// WebhookAllowPrivate.
	webhooks billing.WebhookSender
}

func newNotifyEnv(t *testing.T, allowPrivate bool) *notifyEnv {
	t.Helper()
	svc, clock := billingtest.NewService(t, billingtest.WithBolt(),
		billingtest.WithConfig(billing.Config{WebhookAllowPrivate: allowPrivate}))
	clock.Set(time.Now().UTC().Truncate(time.Second))
	return &notifyEnv{t: t, svc: svc, clock: clock, account: billingtest.Account(t, svc, "acme"),
		webhooks: webhook.NewSender(allowPrivate)}
}

// policy creates a policy for the env's account.
func (e *notifyEnv) policy(channel billing.Channel, recipients []string, types ...billing.NotificationType) *billing.NotificationPolicy {
	e.t.Helper()
	p, err := e.svc.CreateNotificationPolicy(context.Background(), e.account, billing.CreateNotificationPolicyParams{
		Name: "hooks", Channel: channel, Recipients: recipients, NotificationTypes: types,
	})
	if err != nil {
		e.t.Fatalf("CreateNotificationPolicy: %v", err)
	}
	return p
}

func (e *notifyEnv) customer(name string) *billing.Customer {
	e.t.Helper()
	return must(e.svc.CreateCustomer(context.Background(), e.account, billing.CustomerParams{LegalName: name})).of(e.t, "CreateCustomer")
}

// runOnce runs d once and returns the number of attempts.
func (e *notifyEnv) runOnce(d *billing.Dispatcher) int {
	e.t.Helper()
	return must(d.RunOnce(context.Background())).of(e.t, "RunOnce")
}

// deliveries lists the account's deliveries matching f (one page of 100).
func (e *notifyEnv) deliveries(f billing.DeliveryFilter) []billing.Delivery {
	e.t.Helper()
	p, err := e.svc.ListDeliveries(context.Background(), e.account, f, billing.ListParams{Limit: 100})
	if err != nil {
		e.t.Fatalf("ListDeliveries: %v", err)
	}
	return p.Items
}

// hit is one webhook request a receiver got.
type hit struct {
	id      string
	body    []byte
	header  http.Header
	verify  error
	attempt int // 1 for the first request with this webhook-id
}

// receiver is a real webhook receiver on loopback. answer picks the status
// of the attempt-th request of a webhook-id.
type receiver struct {
	srv    *httptest.Server
	mu     sync.Mutex
	secret string
	hits   []hit
	answer func(attempt int, w http.ResponseWriter) int
}

func newReceiver(t *testing.T, answer func(attempt int, w http.ResponseWriter) int) *receiver {
	t.Helper()
	rc := &receiver{answer: answer}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		id := r.Header.Get("webhook-id")
		h := hit{id: id, body: body, header: r.Header.Clone(),
			verify: billing.VerifyWebhook(rc.secret, r.Header, body, 48*time.Hour)}
		for _, prev := range rc.hits {
			if prev.id == id {
				h.attempt++
			}
		}
		h.attempt++
		rc.hits = append(rc.hits, h)
		status := 200
		if rc.answer != nil {
			status = rc.answer(h.attempt, w)
		}
		rc.mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) setSecret(s string) { rc.mu.Lock(); rc.secret = s; rc.mu.Unlock() }

func (rc *receiver) got() []hit {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return slices.Clone(rc.hits)
}

// TestWebhookEndToEnd: every committed notification reaches a receiver
// that fails the first attempts, signed, with one webhook-id per
// notification on every retry; rolled-back changes send nothing.
//
// Long on purpose: a real receiver, dispatcher and Service wired together and observed in order.
func TestWebhookEndToEnd(t *testing.T) {
	t.Parallel()
	e := newNotifyEnv(t, true)
	ctx := context.Background()
	rc := newReceiver(t, func(attempt int, _ http.ResponseWriter) int {
		if attempt <= 2 {
			return http.StatusInternalServerError
		}
		return http.StatusNoContent
	})
	p := e.policy(billing.ChannelWebhook, []string{rc.srv.URL + "/hook"})
	rc.setSecret(p.WebhookSecret)

	c := e.customer("Initech")
	if _, err := e.svc.UpdateCustomer(ctx, e.account, c.ID, billing.CustomerParams{LegalName: "Initech Ltd", CustomerAliases: []string{"ini"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.ArchiveCustomer(ctx, e.account, c.ID); err != nil {
		t.Fatal(err)
	}
	// Archiving again changes nothing and emits nothing.
	if _, err := e.svc.ArchiveCustomer(ctx, e.account, c.ID); err != nil {
		t.Fatal(err)
	}
	// Rolled back: a validation failure, an alias conflict, and a change
	// whose transaction fails after emit ran (the idempotency record
	// cannot be rendered).
	if _, err := e.svc.CreateCustomer(ctx, e.account, billing.CustomerParams{}); billing.CodeOf(err) != billing.CodeValidationFailed {
		t.Fatalf("invalid customer: %v", err)
	}
	if _, err := e.svc.CreateCustomer(ctx, e.account, billing.CustomerParams{LegalName: "Dup", CustomerAliases: []string{"ini"}}); billing.CodeOf(err) != billing.CodeConflict {
		t.Fatalf("alias conflict: %v", err)
	}
	boom := errors.New("render failed")
	failing := billing.WithIdempotency(ctx, &billing.IdempotencyRequest{Key: "k", Fingerprint: "f",
		Render: func(any) (int, []byte, error) { return 0, nil, boom }})
	if _, err := e.svc.CreateCustomer(failing, e.account, billing.CustomerParams{LegalName: "Ghost"}); !errors.Is(err, boom) {
		t.Fatalf("failing transaction: %v", err)
	}

	d := billing.NewDispatcher(e.svc, billing.DispatcherConfig{Webhooks: e.webhooks})
	for round := 0; round < 3; round++ {
		if n := e.runOnce(d); n != 3 {
			t.Fatalf("round %d: %d attempts, want 3", round, n)
		}
		if n := e.runOnce(d); n != 0 {
			t.Fatalf("round %d: %d attempts before the retry is due, want 0", round, n)
		}
		e.clock.Advance(6 * time.Second) // the first retry waits 5 s + up to 10%
		if round == 1 {
			e.clock.Advance(6 * time.Minute) // the second waits 5 min + up to 10%
		}
	}

	hits := rc.got()
	if len(hits) != 9 {
		t.Fatalf("receiver got %d requests, want 9 (3 notifications × 3 attempts)", len(hits))
	}
	byID := map[string][]hit{}
	for _, h := range hits {
		if h.verify != nil {
			t.Errorf("VerifyWebhook: %v", h.verify)
		}
		byID[h.id] = append(byID[h.id], h)
	}
	var types []billing.NotificationType
	for id, hs := range byID {
		if len(hs) != 3 {
			t.Errorf("webhook-id %s: %d attempts, want 3", id, len(hs))
		}
		var n billing.Notification
		if err := json.Unmarshal(hs[0].body, &n); err != nil {
			t.Fatal(err)
		}
		if n.ID != id || n.ServiceAccountID != e.account {
			t.Errorf("payload id %s account %s, want %s %s", n.ID, n.ServiceAccountID, id, e.account)
		}
		for _, h := range hs[1:] {
			if string(h.body) != string(hs[0].body) {
				t.Errorf("retry body differs: %s vs %s", h.body, hs[0].body)
			}
		}
		types = append(types, n.Type)
	}
	slices.Sort(types)
	want := []billing.NotificationType{billing.NotificationCustomerArchived, billing.NotificationCustomerCreated, billing.NotificationCustomerUpdated}
	if !slices.Equal(types, want) {
		t.Errorf("types %v, want %v", types, want)
	}
	for _, dl := range e.deliveries(billing.DeliveryFilter{}) {
		if dl.Status != billing.DeliverySucceeded || len(dl.Attempts) != 3 || dl.Attempts[0].StatusCode != 500 || !dl.Attempts[2].Succeeded {
			t.Errorf("delivery %+v, want SUCCEEDED after 500, 500, 204", dl)
		}
	}
}

// onlyWebhookOf subscribes a receiver to typ alone, creates a customer
// named customer and puts merchant details (one CUSTOMER_CREATED and one
// MERCHANT_UPDATED), runs the dispatcher once and returns the one request
// the receiver got, and the customer.
func (e *notifyEnv) onlyWebhookOf(t *testing.T, typ billing.NotificationType, customer string) (hit, *billing.Customer) {
	t.Helper()
	rc := newReceiver(t, nil)
	p := e.policy(billing.ChannelWebhook, []string{rc.srv.URL}, typ)
	rc.setSecret(p.WebhookSecret)
	c := e.customer(customer)
	if _, err := e.svc.PutMerchantDetails(context.Background(), e.account, billing.MerchantDetails{LegalCompanyName: "Acme"}); err != nil {
		t.Fatal(err)
	}
	e.runOnce(billing.NewDispatcher(e.svc, billing.DispatcherConfig{Webhooks: e.webhooks}))
	hits := rc.got()
	if len(hits) != 1 {
		t.Fatalf("%d requests, want 1 (the policy lists %s only)", len(hits), typ)
	}
	return hits[0], c
}

// TestWebhookPayloadIsTheResource: data is the resource as its GET returns
// it; the headers follow Standard Webhooks.
func TestWebhookPayloadIsTheResource(t *testing.T) {
	t.Parallel()
	e := newNotifyEnv(t, true)
	h, c := e.onlyWebhookOf(t, billing.NotificationCustomerCreated, "Globex")
	if h.header.Get("Content-Type") != "application/json" || h.header.Get("webhook-timestamp") != itoa(e.clock.Now().Unix()) {
		t.Errorf("headers %v", h.header)
	}
	got, _ := e.svc.GetCustomer(context.Background(), e.account, c.ID)
	wantData, _ := json.Marshal(got)
	var n billing.Notification
	if err := json.Unmarshal(h.body, &n); err != nil {
		t.Fatal(err)
	}
	if string(n.Data) != string(wantData) || n.Type != billing.NotificationCustomerCreated || !n.CreatedAt.Equal(e.clock.Now()) {
		t.Errorf("payload %s, want data %s", h.body, wantData)
	}
	var raw map[string]json.RawMessage
	_ = json.Unmarshal(h.body, &raw)
	if len(raw) != 5 {
		t.Errorf("payload members %v, want id, type, createdAt, serviceAccountId, data", raw)
	}
}

// TestMerchantUpdatedIsEmitted: PUT merchant details emits MERCHANT_UPDATED.
func TestMerchantUpdatedIsEmitted(t *testing.T) {
	t.Parallel()
	e := newNotifyEnv(t, true)
	h, _ := e.onlyWebhookOf(t, billing.NotificationMerchantUpdated, "not listed")
	var n struct {
		Type billing.NotificationType `json:"type"`
		Data billing.MerchantDetails  `json:"data"`
	}
	if err := json.Unmarshal(h.body, &n); err != nil || n.Type != billing.NotificationMerchantUpdated || n.Data.LegalCompanyName != "Acme" {
		t.Errorf("payload %s (%v)", h.body, err)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// TestWebhookDocumentsEndToEnd: document operations reach a receiver once
// each, in order of emission; op 11 (mark-as-sent)
// sends nothing, and neither does a refused operation.
//
// Long on purpose: a real receiver, dispatcher and Service wired together and observed in order.
func TestWebhookDocumentsEndToEnd(t *testing.T) {
	t.Parallel()
	e := newNotifyEnv(t, true)
	ctx := context.Background()
	rc := newReceiver(t, nil)
	p := e.policy(billing.ChannelWebhook, []string{rc.srv.URL + "/hook"},
		billing.NotificationInvoiceCreated, billing.NotificationInvoiceUpdated, billing.NotificationInvoiceIssued,
		billing.NotificationCreditNoteCreated, billing.NotificationCreditNoteUpdated, billing.NotificationCreditNoteIssued)
	rc.setSecret(p.WebhookSecret)
	c := e.customer("Initech")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	d := func(s string) *billing.Decimal { v := billing.MustDecimal(s); return &v }

	inv, err := e.svc.CreateInvoice(ctx, e.account, billing.InvoiceParams{Currency: billing.CurrencyGBP, CustomerID: c.ID})
	must(err)
	_, err = e.svc.CreateInvoiceLineItem(ctx, e.account, inv.ID, billing.InvoiceLineItemParams{
		Title: "Fee", Quantity: d("1"), Rate: d("100.00"), TaxRate: d("0.2"), ExternalIDs: []billing.KeyValue{}})
	must(err)
	_, err = e.svc.SendInvoice(ctx, e.account, inv.ID)
	must(err)
	// Refused: a second send changes nothing and emits nothing.
	if _, err := e.svc.SendInvoice(ctx, e.account, inv.ID); billing.CodeOf(err) != billing.CodeInvalidState {
		t.Fatalf("second send: %v", err)
	}
	cn, err := e.svc.CreateCreditNote(ctx, e.account, billing.CreditNoteParams{Currency: billing.CurrencyGBP, CustomerID: c.ID, InvoiceID: inv.ID})
	must(err)
	_, err = e.svc.CreateCreditNoteLineItem(ctx, e.account, cn.ID, billing.CreateCreditNoteLineItemParams{CreditNoteID: cn.ID,
		CreditNoteLineItemParams: billing.CreditNoteLineItemParams{Title: "Refund", Quantity: d("1"), Rate: d("10.00"), TaxRate: d("0.2"), ExternalIDs: []billing.KeyValue{}}})
	must(err)
	_, err = e.svc.MarkCreditNoteSent(ctx, e.account, cn.ID)
	must(err)
	_, err = e.svc.MarkCreditNoteSent(ctx, e.account, cn.ID) // already SENT: unchanged, nothing emitted
	must(err)

	dsp := billing.NewDispatcher(e.svc, billing.DispatcherConfig{Webhooks: e.webhooks})
	for e.runOnce(dsp) > 0 {
	}
	var got []billing.NotificationType
	for _, h := range rc.got() {
		if h.verify != nil {
			t.Errorf("VerifyWebhook: %v", h.verify)
		}
		var n billing.Notification
		must(json.Unmarshal(h.body, &n))
		got = append(got, n.Type)
	}
	slices.Sort(got)
	want := []billing.NotificationType{
		billing.NotificationCreditNoteCreated, billing.NotificationCreditNoteUpdated,
		billing.NotificationInvoiceCreated, billing.NotificationInvoiceIssued, billing.NotificationInvoiceUpdated,
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("receiver got %v, want %v (nothing for mark-as-sent or refused operations)", got, want)
	}
}
