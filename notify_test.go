package billing_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
	"github.com/billingd/billing/dispatch"
	"github.com/billingd/billing/webhook"
	"github.com/google/go-cmp/cmp"
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
func (e *notifyEnv) runOnce(d *dispatch.Dispatcher) int {
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

// TestWebhookEndToEnd: every committed notification reaches a receiver
// that fails the first attempts, signed, with one webhook-id per
// notification on every retry; rolled-back changes send nothing.
//
// Long on purpose: a real receiver, dispatcher and Service wired together and observed in order.
func TestWebhookEndToEnd(t *testing.T) {
	t.Parallel()
	e := newNotifyEnv(t, true)
	ctx := context.Background()
	rc := billingtest.NewWebhookReceiver(t, func(attempt int, _ http.ResponseWriter) int {
		if attempt <= 2 {
			return http.StatusInternalServerError
		}
		return http.StatusNoContent
	})
	p := e.policy(billing.ChannelWebhook, []string{rc.URL + "/hook"})

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
	// whose transaction fails after emit ran (its commit hook fails).
	if _, err := e.svc.CreateCustomer(ctx, e.account, billing.CustomerParams{}); billing.CodeOf(err) != billing.CodeValidationFailed {
		t.Fatalf("invalid customer: %v", err)
	}
	if _, err := e.svc.CreateCustomer(ctx, e.account, billing.CustomerParams{LegalName: "Dup", CustomerAliases: []string{"ini"}}); billing.CodeOf(err) != billing.CodeConflict {
		t.Fatalf("alias conflict: %v", err)
	}
	boom := errors.New("hook failed")
	failing := billing.WithCommitHook(ctx, func(context.Context, billing.Tx, any) error { return boom })
	if _, err := e.svc.CreateCustomer(failing, e.account, billing.CustomerParams{LegalName: "Ghost"}); !errors.Is(err, boom) {
		t.Fatalf("failing transaction: %v", err)
	}

	d := dispatch.New(e.svc, dispatch.Config{Webhooks: e.webhooks})
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

	hits := rc.Received()
	if len(hits) != 9 {
		t.Fatalf("receiver got %d requests, want 9 (3 notifications × 3 attempts)", len(hits))
	}
	byID := map[string][]billingtest.Webhook{}
	for _, h := range hits {
		if err := billing.VerifyWebhook(p.WebhookSecret, h.Header, h.Body, 48*time.Hour); err != nil {
			t.Errorf("VerifyWebhook: %v", err)
		}
		id := h.Header.Get(billing.HeaderWebhookID)
		byID[id] = append(byID[id], h)
	}
	var types []billing.NotificationType
	for id, hs := range byID {
		if len(hs) != 3 {
			t.Errorf("webhook-id %s: %d attempts, want 3", id, len(hs))
		}
		var n billing.Notification
		if err := json.Unmarshal(hs[0].Body, &n); err != nil {
			t.Fatal(err)
		}
		if n.ID != id || n.ServiceAccountID != e.account {
			t.Errorf("payload id %s account %s, want %s %s", n.ID, n.ServiceAccountID, id, e.account)
		}
		for _, h := range hs[1:] {
			if string(h.Body) != string(hs[0].Body) {
				t.Errorf("retry body differs: %s vs %s", h.Body, hs[0].Body)
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
func (e *notifyEnv) onlyWebhookOf(t *testing.T, typ billing.NotificationType, customer string) (billingtest.Webhook, *billing.Customer) {
	t.Helper()
	rc := billingtest.NewWebhookReceiver(t, nil)
	e.policy(billing.ChannelWebhook, []string{rc.URL}, typ)
	c := e.customer(customer)
	if _, err := e.svc.PutMerchantDetails(context.Background(), e.account, billing.MerchantDetails{LegalCompanyName: "Acme"}); err != nil {
		t.Fatal(err)
	}
	e.runOnce(dispatch.New(e.svc, dispatch.Config{Webhooks: e.webhooks}))
	hits := rc.Received()
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
	if h.Header.Get("Content-Type") != "application/json" || h.Header.Get("webhook-timestamp") != itoa(e.clock.Now().Unix()) {
		t.Errorf("headers %v", h.Header)
	}
	got, _ := e.svc.GetCustomer(context.Background(), e.account, c.ID)
	wantData, _ := json.Marshal(got)
	var n billing.Notification
	if err := json.Unmarshal(h.Body, &n); err != nil {
		t.Fatal(err)
	}
	if string(n.Data) != string(wantData) || n.Type != billing.NotificationCustomerCreated || !n.CreatedAt.Equal(e.clock.Now()) {
		t.Errorf("payload %s, want data %s", h.Body, wantData)
	}
	var raw map[string]json.RawMessage
	_ = json.Unmarshal(h.Body, &raw)
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
	if err := json.Unmarshal(h.Body, &n); err != nil || n.Type != billing.NotificationMerchantUpdated || n.Data.LegalCompanyName != "Acme" {
		t.Errorf("payload %s (%v)", h.Body, err)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// TestWebhookDocumentsEndToEnd: document operations reach a receiver once
// each, in order of emission; marking a credit note as sent sends nothing,
// and neither does a refused operation.
//
// Long on purpose: a real receiver, dispatcher and Service wired together and observed in order.
func TestWebhookDocumentsEndToEnd(t *testing.T) {
	t.Parallel()
	e := newNotifyEnv(t, true)
	ctx := context.Background()
	rc := billingtest.NewWebhookReceiver(t, nil)
	p := e.policy(billing.ChannelWebhook, []string{rc.URL + "/hook"},
		billing.NotificationInvoiceCreated, billing.NotificationInvoiceUpdated, billing.NotificationInvoiceIssued,
		billing.NotificationCreditNoteCreated, billing.NotificationCreditNoteUpdated, billing.NotificationCreditNoteIssued)
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

	dsp := dispatch.New(e.svc, dispatch.Config{Webhooks: e.webhooks})
	for e.runOnce(dsp) > 0 {
	}
	var got []billing.NotificationType
	for _, h := range rc.Received() {
		if err := billing.VerifyWebhook(p.WebhookSecret, h.Header, h.Body, 48*time.Hour); err != nil {
			t.Errorf("VerifyWebhook: %v", err)
		}
		var n billing.Notification
		must(json.Unmarshal(h.Body, &n))
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

// recorder returns a function that reports the notification types and
// document e-mails recorded in account's outbox since its last call
// (oldest first; e-mails as "EMAIL to <first recipient>"). The account
// needs a policy covering every type for notifications to be recorded.
func recorder(t *testing.T, svc *billing.Service, account string) func() []string {
	seen := 0
	return func() []string {
		t.Helper()
		page, err := svc.ListDeliveries(context.Background(), account, billing.DeliveryFilter{}, billing.ListParams{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for i := len(page.Items) - 1 - seen; i >= 0; i-- { // newest first
			d := page.Items[i]
			if d.NotificationType == "" {
				out = append(out, "EMAIL to "+d.Recipients[0])
				continue
			}
			out = append(out, string(d.NotificationType))
		}
		seen = page.TotalResultSize
		return out
	}
}

// recordAll gives account an EMAIL policy covering every type and returns
// its recorder.
func recordAll(t *testing.T, svc *billing.Service, account string) func() []string {
	t.Helper()
	if _, err := svc.CreateNotificationPolicy(context.Background(), account, billing.CreateNotificationPolicyParams{
		Name: "ops", Channel: billing.ChannelEmail, Recipients: []string{"ops@acme.test"},
	}); err != nil {
		t.Fatal(err)
	}
	return recorder(t, svc, account)
}

// TestDocumentNotifications runs every document operation once and checks
// the notifications each one records (docs/concepts.md, "Notifications"):
// exactly one per operation, none for marking a credit note as sent or a
// refused operation, and the send e-mails to customerEmails.
//
// Long on purpose: a table of cases, one line each; its length is the cases, not logic.
func TestDocumentNotifications(t *testing.T) {
	t.Parallel()
	e := newDocEnv(t)
	emitted := recordAll(t, e.svc, e.acct)
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	inv := e.invoice(billing.CurrencyGBP, "")
	steps := []struct {
		name string
		run  func()
		want []string
	}{
		{"CreateInvoice", func() {}, []string{"INVOICE_CREATED"}},
		{"CreateLine", func() { e.line(inv.ID, invLine("x", "1", "100", "0.2")) }, []string{"INVOICE_UPDATED"}},
		{"CreateGroup", func() {
			must(e.svc.CreateInvoiceLineItemGroup(e.ctx, e.acct, inv.ID, billing.InvoiceLineItemGroupParams{Title: "g"}))
		}, []string{"INVOICE_UPDATED"}},
		{"UpdateInvoice", func() {
			must(e.svc.UpdateInvoice(e.ctx, e.acct, inv.ID, billing.InvoiceUpdateParams{Memo: "m"}))
		}, []string{"INVOICE_UPDATED"}},
		{"Send", func() { must(e.svc.SendInvoice(e.ctx, e.acct, inv.ID)) }, []string{"EMAIL to ann@globex.test", "INVOICE_ISSUED"}},
		{"SendAgainRefused", func() {
			if _, err := e.svc.SendInvoice(e.ctx, e.acct, inv.ID); billing.CodeOf(err) != billing.CodeInvalidState {
				t.Fatal(err)
			}
		}, nil},
		{"PatchSent", func() {
			must(e.svc.PatchSentInvoice(e.ctx, e.acct, inv.ID, billing.PatchSentInvoiceParams{Reference: billing.Some("r")}))
		}, []string{"INVOICE_UPDATED"}},
		{"RecordPayment", func() {
			must(e.svc.RecordPayment(e.ctx, e.acct, inv.ID, billing.PaymentParams{Amount: dec("1"), PaidAt: &billing.Date{Year: 2024, Month: 7, Day: 30}}))
		}, []string{"INVOICE_UPDATED"}},
		{"SetPaymentStatus", func() {
			must(e.svc.SetPaymentStatus(e.ctx, e.acct, inv.ID, billing.PaymentStatusUncollectible))
		}, []string{"INVOICE_UPDATED"}},
	}
	var cn *billing.CreditNote
	steps = append(steps, []struct {
		name string
		run  func()
		want []string
	}{
		{"CreateCreditNote", func() {
			cn = e.creditNote(e.getInvoice(inv.ID), "", "", "")
		}, []string{"CREDIT_NOTE_CREATED"}},
		{"CreateCreditNoteLine", func() {
			must(e.svc.CreateCreditNoteLineItem(e.ctx, e.acct, cn.ID, cnLine(cn.ID, "r", "1", "1", "0")))
		}, []string{"CREDIT_NOTE_UPDATED"}},
		{"UpdateCreditNote", func() {
			must(e.svc.UpdateCreditNote(e.ctx, e.acct, cn.ID, billing.CreditNoteUpdateParams{Memo: billing.Some("m")}))
		}, []string{"CREDIT_NOTE_UPDATED"}},
		{"MarkAsSent", func() { must(e.svc.MarkCreditNoteSent(e.ctx, e.acct, cn.ID)) }, nil},
		{"MarkAsSentAgain", func() { must(e.svc.MarkCreditNoteSent(e.ctx, e.acct, cn.ID)) }, nil},
		{"VoidCreditNote", func() { must(e.svc.VoidCreditNote(e.ctx, e.acct, cn.ID)) }, []string{"CREDIT_NOTE_UPDATED"}},
		{"SendCreditNote", func() {
			cn2 := e.creditNote(e.getInvoice(inv.ID), "1", "2", "0")
			emitted() // created and line added
			must(e.svc.SendCreditNote(e.ctx, e.acct, cn2.ID))
		}, []string{"EMAIL to ann@globex.test", "CREDIT_NOTE_ISSUED"}},
	}...)
	for _, s := range steps {
		s.run()
		if diff := cmp.Diff(s.want, emitted()); diff != "" {
			t.Errorf("%s: notifications (-want +got):\n%s", s.name, diff)
		}
	}
}

// TestScheduleNotifications runs the schedule operations and the engine and
// checks the notifications each records (docs/concepts.md, "Notifications"): one per operation, none for a no-op, and the
// engine's INVOICE_CREATED then INVOICE_ISSUED (with the e-mail) when it
// auto-issues.
func TestScheduleNotifications(t *testing.T) {
	t.Parallel()
	f := newSched(t)
	emitted := recordAll(t, f.svc, f.account)
	emitted() // the customer's creation
	price := f.fixed("Plan", "10.00", billing.CurrencyGBP)
	var sc *billing.BillingSchedule
	yes := true
	steps := []struct {
		name string
		run  func() error
		want []string
	}{
		{"Create", func() error {
			sc = f.schedule(f.customer, "2024-07-01", func(p *billing.BillingScheduleParams) { p.IsDraft, p.AutoIssueInvoices = &yes, &yes },
				phase("2024-07-01", price))
			return nil
		}, []string{"BILLING_SCHEDULE_CREATED"}},
		{"Activate", func() error { _, err := f.svc.ActivateBillingSchedule(f.ctx, f.account, sc.ID); return err },
			[]string{"BILLING_SCHEDULE_UPDATED"}},
		{"ActivateAgain", func() error { _, err := f.svc.ActivateBillingSchedule(f.ctx, f.account, sc.ID); return err }, nil},
		{"Run", func() error { _, err := f.svc.RunBilling(f.ctx, ts("2024-07-30T12:00:00Z")); return err },
			[]string{"INVOICE_CREATED", "EMAIL to ann@example.com", "INVOICE_ISSUED"}},
		{"RunAgain", func() error { _, err := f.svc.RunBilling(f.ctx, ts("2024-07-30T12:00:00Z")); return err }, nil},
		{"Suspend", func() error { _, err := f.svc.SuspendBillingSchedule(f.ctx, f.account, sc.ID); return err },
			[]string{"BILLING_SCHEDULE_UPDATED"}},
		{"SuspendRefused", func() error {
			if _, err := f.svc.SuspendBillingSchedule(f.ctx, f.account, sc.ID); billing.CodeOf(err) != billing.CodeInvalidState {
				t.Errorf("second suspend: %v", err)
			}
			return nil
		}, nil},
		{"Cancel", func() error {
			_, err := f.svc.CancelBillingSchedule(f.ctx, f.account, sc.ID, billing.CancelBillingScheduleParams{At: date("2024-07-31")})
			return err
		}, []string{"BILLING_SCHEDULE_UPDATED"}},
		{"Archive", func() error { _, err := f.svc.ArchiveBillingSchedule(f.ctx, f.account, sc.ID); return err },
			[]string{"BILLING_SCHEDULE_ARCHIVED"}},
		{"ArchiveAgain", func() error { _, err := f.svc.ArchiveBillingSchedule(f.ctx, f.account, sc.ID); return err }, nil},
	}
	for _, st := range steps {
		if err := st.run(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if diff := cmp.Diff(st.want, emitted()); diff != "" {
			t.Errorf("%s: notifications (-want +got):\n%s", st.name, diff)
		}
	}
}

// TestWebhookIPLiteralsAreRefusedAtCreation: a webhook URL whose host is
// an IP literal of a range the sender would refuse (loopback, private,
// link-local and cloud metadata, unspecified, IPv4-compatible) is refused
// when the policy is created, naming recipients[i], instead of failing at
// every delivery for days; with WebhookAllowPrivate it is accepted. Names
// are left to the sender, which checks what they resolve to.
func TestWebhookIPLiteralsAreRefusedAtCreation(t *testing.T) {
	t.Parallel()
	refused := []string{"https://127.0.0.1/hook", "https://169.254.169.254/latest", "https://[::]/hook",
		"https://10.1.2.3:8443/hook", "https://[::ffff:127.0.0.1]/hook", "https://[::127.0.0.1]/hook", "https://[fe80::1%25eth0]/hook"}
	e := newNotifyEnv(t, false)
	for _, u := range refused {
		_, err := e.svc.CreateNotificationPolicy(context.Background(), e.account, billing.CreateNotificationPolicyParams{
			Name: "hooks", Channel: billing.ChannelWebhook, Recipients: []string{"https://hooks.example.com/ok", u},
			NotificationTypes: []billing.NotificationType{billing.NotificationCustomerCreated},
		})
		if billing.CodeOf(err) != billing.CodeValidationFailed || !strings.Contains(err.Error(), "recipients[1]") {
			t.Errorf("%s: %v, want validation_failed naming recipients[1]", u, err)
		}
	}
	e.policy(billing.ChannelWebhook, []string{"https://8.8.8.8/hook", "https://[2001:4860:4860::8888]/hook", "https://localhost.example/hook"},
		billing.NotificationCustomerCreated)
	private := newNotifyEnv(t, true)
	private.policy(billing.ChannelWebhook, refused, billing.NotificationCustomerCreated)
}
