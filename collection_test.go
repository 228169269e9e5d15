package billing_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
)

var testMasterKey = []byte("0123456789abcdef0123456789abcdef")

// payEnv is a schedule fixture on a Service with the fake provider and a
// configured account.
type payEnv struct {
	*sched
	fake *billingtest.FakeProvider
}

func newPayEnv(t testing.TB, opts ...billingtest.Option) *payEnv {
	t.Helper()
	fake := billingtest.NewFakeProvider()
	opts = append(opts, billingtest.WithConfig(billing.Config{PaymentProviders: []billing.PaymentProvider{fake}, MasterKey: testMasterKey}))
	f := newSched(t, opts...)
	_, err := f.svc.ConfigurePaymentProvider(f.ctx, f.account, billing.ConfigurePaymentProviderParams{
		Provider: billing.PaymentProviderStripe, SecretKey: "sk_test_secretvalue1234", WebhookSecret: "whsec_value5678"})
	f.must(err)
	return &payEnv{sched: f, fake: fake}
}

// autoChargedInvoice makes a schedule with autoCharge and issues one
// invoice of amount cur on it.
func (e *payEnv) autoChargedInvoice(amount string, cur billing.Currency, autoCharge bool) *billing.Invoice {
	e.tb.Helper()
	sc := e.schedule(e.customer, "2024-07-01", nil, phase("2024-07-01", e.fixed("Plan", amount, cur)))
	_, err := e.svc.CreatePaymentSettings(e.ctx, e.account, "billing_schedule", billing.PaymentSettingsParams{
		BillingScheduleID: sc.ID, PaymentProvider: billing.PaymentProviderStripe, AutoCharge: &autoCharge})
	e.must(err)
	inv, err := e.svc.CreateInvoice(e.ctx, e.account, billing.InvoiceParams{Currency: cur, CustomerID: e.customer, BillingScheduleID: sc.ID})
	e.must(err)
	_, err = e.svc.CreateInvoiceLineItem(e.ctx, e.account, inv.ID, billing.InvoiceLineItemParams{Title: "Plan", Quantity: dec("1"), Rate: dec(amount), TaxRate: dec("0"), ExternalIDs: []billing.KeyValue{}})
	e.must(err)
	inv, err = e.svc.SendInvoice(e.ctx, e.account, inv.ID)
	e.must(err)
	return inv
}

func (e *payEnv) collect() *billing.CollectionRun {
	e.tb.Helper()
	run, err := e.svc.RunCollection(e.ctx, e.clock.Now())
	e.must(err)
	return run
}

func (e *payEnv) invoice(id string) *billing.Invoice {
	e.tb.Helper()
	inv, err := e.svc.GetInvoice(e.ctx, e.account, id)
	e.must(err)
	return inv
}

// invoiceIn reads an invoice and reports an error unless its payment and
// dunning statuses are the ones given; it returns the invoice for further
// checks.
func (e *payEnv) invoiceIn(id string, payment billing.PaymentStatus, dunning string) *billing.Invoice {
	e.tb.Helper()
	got := e.invoice(id)
	if got.PaymentStatus != payment || got.DunningStatus != dunning {
		e.tb.Errorf("invoice %s: %s %s, want %s %s", id, got.PaymentStatus, got.DunningStatus, payment, dunning)
	}
	return got
}

// TestChargedOnceWhenIssued: a CHARGE_AUTOMATICALLY invoice is charged once
// by the collection run after its issue, with the attempt's idempotency
// key, and is PAID with a payment and journal entries; runs after that
// charge nothing.
func TestChargedOnceWhenIssued(t *testing.T) {
	t.Parallel()
	e := newPayEnv(t)
	inv := e.autoChargedInvoice("49.99", billing.CurrencyUSD, true)
	if inv.DunningStatus != billing.DunningScheduled {
		t.Fatalf("dunningStatus at issue %q", inv.DunningStatus)
	}
	run := e.collect()
	e.collect()
	if run.Succeeded != 1 || len(e.fake.Charges) != 1 {
		t.Fatalf("run %+v, charges %+v", run, e.fake.Charges)
	}
	c := e.fake.Charges[0]
	if c.IdempotencyKey != "billingd/"+inv.ID+"/attempt/1" || c.InvoiceID != inv.ID || c.Amount.String() != "49.99" || c.CustomerRef != "cus_"+e.customer {
		t.Errorf("charge %+v", c)
	}
	if got := e.invoiceIn(inv.ID, billing.PaymentStatusPaid, billing.DunningCompleted); !got.AmountDue.IsZero() {
		t.Errorf("invoice after the charge: due %s", got.AmountDue)
	}
	pays, err := e.svc.ListPayments(e.ctx, e.account, inv.ID, "", billing.ListParams{})
	e.must(err)
	if len(pays.Items) != 1 || pays.Items[0].Reference != "pi_"+c.IdempotencyKey || pays.Items[0].Amount.String() != "49.99" {
		t.Errorf("payments %+v", pays.Items)
	}
	j, err := e.svc.ListJournalEntries(e.ctx, e.account, billing.JournalFilter{SourceID: pays.Items[0].ID}, billing.ListParams{})
	e.must(err)
	if len(j.Items) != 2 {
		t.Errorf("journal of the payment: %+v", j.Items)
	}
}

// TestSendInvoiceIsNotCharged: autoCharge false leaves the invoice to the
// customer: no charge, reminders planned.
func TestSendInvoiceIsNotCharged(t *testing.T) {
	t.Parallel()
	e := newPayEnv(t)
	inv := e.autoChargedInvoice("10.00", billing.CurrencyUSD, false)
	e.collect()
	if len(e.fake.Charges) != 0 || inv.DunningStatus != billing.DunningOverdueCheckScheduled {
		t.Errorf("charges %d, dunning %s", len(e.fake.Charges), inv.DunningStatus)
	}
}

// TestRetriesThenSuccess: a failed charge is retried on days 3, 5 and 7
// after the failure (not before), and the success ends dunning.
func TestRetriesThenSuccess(t *testing.T) {
	t.Parallel()
	e := newPayEnv(t)
	e.fake.Outcomes = []billing.ChargeStatus{billing.ChargeFailed, billing.ChargeFailed, billing.ChargeSucceeded}
	inv := e.autoChargedInvoice("20.00", billing.CurrencyUSD, true)
	e.collect()
	c, err := e.svc.GetInvoiceCollection(e.ctx, e.account, inv.ID)
	e.must(err)
	failedAt := e.clock.Now().UTC().Truncate(time.Second)
	if c.DunningStatus != billing.DunningScheduled || c.NextAt == nil || !c.NextAt.Equal(failedAt.AddDate(0, 0, 3)) {
		t.Fatalf("after the first failure: %+v", c)
	}
	e.clock.Advance(3*24*time.Hour - time.Minute)
	e.collect()
	if len(e.fake.Charges) != 1 {
		t.Fatalf("retried before day 3: %d charges", len(e.fake.Charges))
	}
	e.clock.Advance(time.Minute)
	e.collect() // day 3: fails
	e.clock.Advance(2 * 24 * time.Hour)
	e.collect() // day 5: succeeds
	if len(e.fake.Charges) != 3 {
		t.Fatalf("%d charges", len(e.fake.Charges))
	}
	keys := []string{}
	for _, ch := range e.fake.Charges {
		keys = append(keys, ch.IdempotencyKey[strings.LastIndex(ch.IdempotencyKey, "/")+1:])
	}
	if !slices.Equal(keys, []string{"1", "2", "3"}) {
		t.Errorf("attempt keys %v", keys)
	}
	e.invoiceIn(inv.ID, billing.PaymentStatusPaid, billing.DunningCompleted)
}

// TestFinalActionAfterLastFailure: after the last retry fails the
// account's final action (MARK_UNCOLLECTIBLE here) applies and dunning is
// FAILED.
func TestFinalActionAfterLastFailure(t *testing.T) {
	t.Parallel()
	e := newPayEnv(t)
	_, err := e.svc.UpdateAccountPaymentSettings(e.ctx, e.account, e.account, billing.UpdateAccountPaymentSettingsParams{
		RetryDays: []int{1, 2}, FinalAction: billing.FinalActionMarkUncollectible})
	e.must(err)
	e.fake.Outcomes = []billing.ChargeStatus{billing.ChargeFailed, billing.ChargeFailed, billing.ChargeFailed, billing.ChargeSucceeded}
	inv := e.autoChargedInvoice("20.00", billing.CurrencyUSD, true)
	for range 4 {
		e.collect()
		e.clock.Advance(24 * time.Hour)
	}
	if len(e.fake.Charges) != 3 {
		t.Errorf("%d charges, want 3 (the first and two retries)", len(e.fake.Charges))
	}
	e.invoiceIn(inv.ID, billing.PaymentStatusUncollectible, billing.DunningFailed)
}

// TestRemindersAroundDueDate: a SEND_INVOICE invoice gets its reminders 3
// days before, on and 7 days after the due date, as e-mails and
// PAYMENT_REMINDER_SENT / INVOICE_OVERDUE notifications.
func TestRemindersAroundDueDate(t *testing.T) {
	t.Parallel()
	e := newPayEnv(t)
	_, err := e.svc.CreateNotificationPolicy(e.ctx, e.account, billing.CreateNotificationPolicyParams{Name: "pay", Channel: billing.ChannelEmail,
		Recipients: []string{"ops@example.com"}, NotificationTypes: []billing.NotificationType{billing.NotificationPaymentReminderSent, billing.NotificationInvoiceOverdue}})
	e.must(err)
	inv := e.autoChargedInvoice("10.00", billing.CurrencyUSD, false)
	due := inv.DueDate.Time()
	sent := func() int {
		c, err := e.svc.GetInvoiceCollection(e.ctx, e.account, inv.ID)
		e.must(err)
		return c.RemindersSent
	}
	e.clock.Set(due.AddDate(0, 0, -4))
	e.collect()
	if sent() != 0 {
		t.Fatal("a reminder 4 days before the due date")
	}
	e.clock.Set(due.AddDate(0, 0, -3))
	e.collect()
	e.clock.Set(due)
	e.collect()
	if sent() != 2 {
		t.Fatalf("%d reminders by the due date", sent())
	}
	e.clock.Set(due.AddDate(0, 0, 7))
	e.collect()
	if sent() != 3 {
		t.Fatalf("%d reminders", sent())
	}
	types := deliveryTypes(t, e)
	if types[billing.NotificationPaymentReminderSent] != 3 || types[billing.NotificationInvoiceOverdue] != 1 {
		t.Errorf("notifications %v", types)
	}
}

func deliveryTypes(t *testing.T, e *payEnv) map[billing.NotificationType]int {
	t.Helper()
	ds, err := e.svc.ListDeliveries(e.ctx, e.account, billing.DeliveryFilter{}, billing.ListParams{Limit: 100})
	e.must(err)
	out := map[billing.NotificationType]int{}
	for _, d := range ds.Items {
		out[d.NotificationType]++
	}
	return out
}

// TestWebhookPaymentSucceeded: a signed payment succeeded event marks the
// invoice PAID with a payment; its replay changes nothing; a bad signature
// is refused and changes nothing.
func TestWebhookPaymentSucceeded(t *testing.T) {
	t.Parallel()
	e := newPayEnv(t)
	e.fake.PaymentMethod = "" // nothing to charge: the customer pays through the link
	inv := e.autoChargedInvoice("30.00", billing.CurrencyUSD, false)
	ev, _ := json.Marshal(billing.ProviderEvent{ID: "evt_1", Type: billing.ProviderEventPaymentSucceeded, InvoiceID: inv.ID,
		PaymentRef: "pi_link", Amount: billing.MustDecimal("30.00"), Currency: billing.CurrencyUSD})
	bad := http.Header{"Fake-Signature": {"whsec_wrong"}}
	if _, err := e.svc.HandleProviderWebhook(e.ctx, e.account, ev, bad); billing.CodeOf(err) != billing.CodeValidationFailed {
		t.Fatalf("bad signature: %v", err)
	}
	if got := e.invoice(inv.ID); got.PaymentStatus != billing.PaymentStatusUnpaid {
		t.Fatalf("a refused event changed the invoice: %s", got.PaymentStatus)
	}
	good := http.Header{"Fake-Signature": {"whsec_value5678"}}
	for i := range 2 {
		res, err := e.svc.HandleProviderWebhook(e.ctx, e.account, ev, good)
		e.must(err)
		if res.Replay != (i == 1) {
			t.Errorf("delivery %d: replay %v", i, res.Replay)
		}
	}
	got := e.invoice(inv.ID)
	pays, err := e.svc.ListPayments(e.ctx, e.account, inv.ID, "", billing.ListParams{})
	e.must(err)
	if got.PaymentStatus != billing.PaymentStatusPaid || got.DunningStatus != billing.DunningCompleted || len(pays.Items) != 1 {
		t.Errorf("after the event: %s %s, %d payments", got.PaymentStatus, got.DunningStatus, len(pays.Items))
	}
	// The same payment under another event id is recorded once too.
	ev2, _ := json.Marshal(billing.ProviderEvent{ID: "evt_2", Type: billing.ProviderEventPaymentSucceeded, InvoiceID: inv.ID,
		PaymentRef: "pi_link", Amount: billing.MustDecimal("30.00"), Currency: billing.CurrencyUSD})
	_, err = e.svc.HandleProviderWebhook(e.ctx, e.account, ev2, good)
	e.must(err)
	pays, _ = e.svc.ListPayments(e.ctx, e.account, inv.ID, "", billing.ListParams{})
	if len(pays.Items) != 1 {
		t.Errorf("%d payments after a second event of the same payment", len(pays.Items))
	}
}

// TestProviderSecretsSealed: the configuration answers only the last 4
// characters, and the store holds no secret in the clear.
func TestProviderSecretsSealed(t *testing.T) {
	t.Parallel()
	e := newPayEnv(t)
	cfg, err := e.svc.GetPaymentProvider(e.ctx, e.account, billing.PaymentProviderStripe)
	e.must(err)
	b, _ := json.Marshal(cfg)
	if strings.Contains(string(b), "secretvalue") || cfg.SecretKeyLast4 != "1234" || cfg.WebhookSecretLast4 != "5678" {
		t.Errorf("configuration answer %s", b)
	}
	err = e.svc.Store().View(e.ctx, func(tx billing.Tx) error {
		return tx.Scan(e.ctx, "payment_providers", billing.Range{}, func(_, v []byte) error {
			if strings.Contains(string(v), "secretvalue") || strings.Contains(string(v), "whsec_value") {
				t.Errorf("a secret in the clear: %s", v)
			}
			return nil
		})
	})
	e.must(err)
	svc, _ := billingtest.NewService(t)
	acct := billingtest.Account(t, svc, "x")
	_, err = svc.ConfigurePaymentProvider(e.ctx, acct, billing.ConfigurePaymentProviderParams{Provider: "STRIPE", SecretKey: "a", WebhookSecret: "b"})
	if billing.CodeOf(err) != billing.CodeValidationFailed {
		t.Errorf("without an adapter: %v", err)
	}
}

// TestSharedStoreChargesEachAttemptOnce: two instances on one store (on
// PostgreSQL under BILLINGD_TEST_POSTGRES) run collection at once, round
// after round: every attempt is charged by one of them, exactly once.
func TestSharedStoreChargesEachAttemptOnce(t *testing.T) {
	t.Parallel()
	store := billingtest.Store(t)
	ids := billingtest.IDs()
	fake := billingtest.NewFakeProvider()
	cfg := billing.Config{ConcurrentBillingRuns: true, NewID: ids, PaymentProviders: []billing.PaymentProvider{fake}, MasterKey: testMasterKey}
	f := newSched(t, billingtest.WithStore(store), billingtest.WithConfig(cfg))
	cfg.Now = f.clock.Now
	other, err := billing.New(store, &cfg)
	f.must(err)
	e := &payEnv{sched: f, fake: fake}
	_, err = f.svc.ConfigurePaymentProvider(f.ctx, f.account, billing.ConfigurePaymentProviderParams{
		Provider: billing.PaymentProviderStripe, SecretKey: "sk_test_x1234", WebhookSecret: "whsec_y5678"})
	f.must(err)
	const n = 12
	fake.FailAttempts = 1
	var invs []string
	for range n {
		invs = append(invs, e.autoChargedInvoice("15.00", billing.CurrencyUSD, true).ID)
	}
	for round := range 3 {
		svcs := []*billing.Service{f.svc, other, f.svc, other}
		billingtest.AtOnce(t, len(svcs), func(i int) error {
			if _, err := svcs[i].RunCollection(f.ctx, f.clock.Now()); err != nil {
				return fmt.Errorf("round %d: %w", round, err)
			}
			return nil
		})
		f.clock.Advance(3 * 24 * time.Hour)
	}
	keys := map[string]int{}
	for _, c := range fake.Charges {
		keys[c.IdempotencyKey]++
	}
	for k, times := range keys {
		if times != 1 {
			t.Errorf("%s charged %d times", k, times)
		}
	}
	if len(fake.Charges) != 2*n {
		t.Errorf("%d charges, want %d (a failure and a retry per invoice)", len(fake.Charges), 2*n)
	}
	for _, id := range invs {
		if got := e.invoice(id); got.PaymentStatus != billing.PaymentStatusPaid {
			t.Errorf("invoice %s %s", id, got.PaymentStatus)
		}
	}
}

// TestTakeoverKeepsTheAttempt: an instance that claimed a charge and died
// (here: claimed and never performed) leaves it held until its claim
// expires; the instance that takes it over charges the same attempt, with
// the same idempotency key, so the provider charges once.
func TestTakeoverKeepsTheAttempt(t *testing.T) {
	t.Parallel()
	e := newPayEnv(t)
	inv := e.autoChargedInvoice("12.00", billing.CurrencyUSD, true)
	steps, err := e.svc.ClaimCollectionSteps(e.ctx, e.clock.Now(), "dead-instance", 10)
	e.must(err)
	if len(steps) != 1 || steps[0].Attempt != 1 {
		t.Fatalf("claimed %+v", steps)
	}
	// The dead instance had sent its charge before it died.
	gw, err := e.fake.Open(billing.ProviderCredentials{})
	e.must(err)
	if _, err := gw.Charge(e.ctx, billing.ChargeRequest{InvoiceID: inv.ID, Attempt: 1, Amount: billing.MustDecimal("12.00"),
		Currency: billing.CurrencyUSD, IdempotencyKey: "billingd/" + inv.ID + "/attempt/1"}); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Minute)
	if run := e.collect(); run.Steps != 0 {
		t.Fatalf("a held claim was taken over before it expired: %+v", run)
	}
	e.clock.Advance(2 * time.Minute)
	e.collect()
	if e.fake.DistinctCharges() != 1 || len(e.fake.Charges) != 2 || e.fake.Charges[1].IdempotencyKey != e.fake.Charges[0].IdempotencyKey {
		t.Errorf("charges %+v", e.fake.Charges)
	}
	pays, err := e.svc.ListPayments(e.ctx, e.account, inv.ID, "", billing.ListParams{})
	e.must(err)
	if got := e.invoice(inv.ID); got.PaymentStatus != billing.PaymentStatusPaid || len(pays.Items) != 1 {
		t.Errorf("invoice %s with %d payments", got.PaymentStatus, len(pays.Items))
	}
}

// creditNote finalizes a credit note of amount (no tax) against invoiceID.
func (e *payEnv) creditNote(invoiceID, amount string) *billing.CreditNote {
	e.tb.Helper()
	cn, err := e.finalizeCreditNote(invoiceID, amount)
	e.must(err)
	return cn
}

// finalizeCreditNote makes a credit note of amount (no tax) against
// invoiceID and returns what finalizing it answers.
func (e *payEnv) finalizeCreditNote(invoiceID, amount string) (*billing.CreditNote, error) {
	e.tb.Helper()
	cn, err := e.svc.CreateCreditNote(e.ctx, e.account, billing.CreditNoteParams{Currency: billing.CurrencyUSD, CustomerID: e.customer, InvoiceID: invoiceID})
	e.must(err)
	_, err = e.svc.CreateCreditNoteLineItem(e.ctx, e.account, cn.ID, cnLine(cn.ID, "Refund", "1", amount, "0"))
	e.must(err)
	return e.svc.FinalizeCreditNote(e.ctx, e.account, cn.ID)
}

// TestRefundBoundedByWhatWasPaid: an invoice paid 10.00 through the
// provider and 20.00 by hand can be credited up to the provider's 10.00
// (money paid by hand cannot be given back through the provider, so the
// rule "credits at most the gross less payments" holds for it); each
// credit note's refund goes through the provider for its amount, once;
// the journal moves cash back.
func TestRefundBoundedByWhatWasPaid(t *testing.T) {
	t.Parallel()
	e := newPayEnv(t)
	e.fake.PaymentMethod = ""
	inv := e.autoChargedInvoice("30.00", billing.CurrencyUSD, false)
	e.webhook(billing.ProviderEvent{ID: "evt_p", Type: billing.ProviderEventPaymentSucceeded, InvoiceID: inv.ID,
		PaymentRef: "pi_part", Amount: billing.MustDecimal("10.00"), Currency: billing.CurrencyUSD})
	e.pay(inv.ID, "20.00")

	small := e.creditNote(inv.ID, "4.00")
	r, err := e.svc.RefundCreditNote(e.ctx, e.account, small.ID)
	e.must(err)
	if r.Amount.String() != "4.00" || r.PaymentReference != "pi_part" || r.Status != billing.ChargeSucceeded {
		t.Errorf("first refund %+v", r)
	}
	if _, err := e.svc.RefundCreditNote(e.ctx, e.account, small.ID); billing.CodeOf(err) != billing.CodeInvalidState {
		t.Errorf("a second refund of the same credit note: %v", err)
	}
	if _, err := e.finalizeCreditNote(inv.ID, "16.00"); billing.CodeOf(err) != billing.CodeInvalidState {
		t.Errorf("crediting 16.00 more than the provider's 10.00 less 4.00: %v", err)
	}
	rest := e.creditNote(inv.ID, "6.00")
	r, err = e.svc.RefundCreditNote(e.ctx, e.account, rest.ID)
	e.must(err)
	if r.Amount.String() != "6.00" {
		t.Errorf("refund of the last 6.00: %s", r.Amount)
	}
	j, err := e.svc.ListJournalEntries(e.ctx, e.account, billing.JournalFilter{SourceID: r.ID}, billing.ListParams{})
	e.must(err)
	if len(j.Items) != 2 || j.Items[0].Account != billing.LedgerAccountsReceivable || j.Items[0].Debit.String() != "6.00" ||
		j.Items[1].Account != billing.LedgerCash || j.Items[1].Credit.String() != "6.00" {
		t.Errorf("journal of the refund %+v", j.Items)
	}
}
