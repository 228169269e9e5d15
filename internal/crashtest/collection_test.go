package crashtest

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/billingd/billing"
	"github.com/billingd/billing/payments/stripe"
	"github.com/billingd/billing/storage/boltstore"
)

// The collection crash child: it opens the database file named by
// collectionChildEnv and runs collection through the Stripe adapter at
// collectionStripeEnv in a loop, its clock ahead of the wall clock by
// collectionOffsetEnv seconds (so that each round sees the claims of the
// killed one expired), until it is killed.
const (
	collectionChildEnv  = "CRASHTEST_COLLECTION_DB"
	collectionStripeEnv = "CRASHTEST_COLLECTION_STRIPE"
	collectionOffsetEnv = "CRASHTEST_COLLECTION_OFFSET"
)

var collectionMasterKey = []byte("0123456789abcdef0123456789abcdef")

func collectionService(db, stripeURL string, offset time.Duration) (*billing.Service, *boltstore.Store, error) {
	st, err := boltstore.Open(db, nil)
	if err != nil {
		return nil, nil, err
	}
	svc, err := billing.New(st, &billing.Config{Now: func() time.Time { return time.Now().Add(offset) },
		PaymentProviders: []billing.PaymentProvider{stripe.New(stripe.Options{APIURL: stripeURL})}, MasterKey: collectionMasterKey})
	if err != nil {
		st.Close()
	}
	return svc, st, err
}

// fakeStripe is a loopback stand-in for Stripe's API that keeps what
// matters here: a PaymentIntent per idempotency key (a key sent again
// answers the same PaymentIntent, as Stripe does), each charge counted.
type fakeStripe struct {
	mu       sync.Mutex
	byKey    map[string]string // idempotency key → PaymentIntent id
	charges  int               // POST /v1/payment_intents received
	onCharge func(n int)
}

func (f *fakeStripe) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	if r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/v1/customers/") {
		fmt.Fprintf(w, `{"id":%q,"object":"customer","invoice_settings":{"default_payment_method":"pm_card_visa"}}`, strings.TrimPrefix(r.URL.Path, "/v1/customers/"))
		return
	}
	if r.Method != http.MethodPost || r.URL.Path != "/v1/payment_intents" {
		http.Error(w, `{"error":{"message":"unexpected"}}`, 400)
		return
	}
	_ = r.ParseForm()
	key := r.Header.Get("Idempotency-Key")
	f.mu.Lock()
	f.charges++
	n := f.charges
	id, ok := f.byKey[key]
	if !ok {
		id = fmt.Sprintf("pi_%d", len(f.byKey)+1)
		f.byKey[key] = id
	}
	on := f.onCharge
	f.mu.Unlock()
	time.Sleep(2 * time.Millisecond) // a window for the kill between the charge and its record
	if on != nil {
		on(n)
	}
	fmt.Fprintf(w, `{"id":%q,"object":"payment_intent","status":"succeeded","amount":%s,"amount_received":%s,"currency":%q,"metadata":{"invoice_id":%q}}`,
		id, r.Form.Get("amount"), r.Form.Get("amount"), r.Form.Get("currency"), r.Form.Get("metadata[invoice_id]"))
}

// TestCollectionCrash: a process collecting CHARGE_AUTOMATICALLY invoices
// through the Stripe adapter is SIGKILLed at random moments, between a
// charge and its record among them, and restarted on the same file: in
// the end every invoice is PAID with exactly one payment, and the provider
// made one PaymentIntent per invoice (a step taken over after the dead
// process's claim expired repeats its idempotency key).
//
// Long on purpose: the child's loop, the kill rounds and the checks of
// one crash scenario.
func TestCollectionCrash(t *testing.T) {
	if db := os.Getenv(collectionChildEnv); db != "" {
		offset, _ := strconv.Atoi(os.Getenv(collectionOffsetEnv))
		svc, _, err := collectionService(db, os.Getenv(collectionStripeEnv), time.Duration(offset)*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		for {
			if _, err := svc.RunCollection(context.Background(), time.Now().Add(time.Duration(offset)*time.Second)); err != nil {
				fmt.Fprintln(os.Stderr, "collection:", err)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	t.Parallel()
	fake := &fakeStripe{byKey: map[string]string{}}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	db := t.TempDir() + "/billing.db"
	const n = 40
	invoices := seedCollection(t, db, srv.URL, n)

	for round := range 6 {
		done := make(chan struct{})
		var once sync.Once
		cmd := exec.Command(os.Args[0], "-test.run", "^TestCollectionCrash$")
		cmd.Env = append(os.Environ(), collectionChildEnv+"="+db, collectionStripeEnv+"="+srv.URL,
			collectionOffsetEnv+"="+strconv.Itoa(round*200))
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Armed once the child runs: a request of the previous child
		// answered late must not kill a process not yet started.
		proc := cmd.Process
		fake.mu.Lock()
		killAt := fake.charges + 3 + round
		fake.onCharge = func(c int) {
			if c >= killAt {
				once.Do(func() { _ = proc.Kill(); close(done) })
			}
		}
		fake.mu.Unlock()
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			_ = cmd.Process.Kill()
			t.Fatalf("round %d: no charge reached the provider in 60s", round)
		}
		_ = cmd.Wait()
	}
	fake.mu.Lock()
	fake.onCharge = nil
	fake.mu.Unlock()

	// A last run after every claim expired collects the rest.
	svc, st, err := collectionService(db, srv.URL, 2*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	if _, err := svc.RunCollection(ctx, time.Now().Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := st.Check(); err != nil {
		t.Errorf("bbolt consistency check: %v", err)
	}
	for _, inv := range invoices {
		got, err := svc.GetInvoice(ctx, inv[0], inv[1])
		if err != nil {
			t.Fatal(err)
		}
		pays, err := svc.ListPayments(ctx, inv[0], inv[1], "", billing.ListParams{})
		if err != nil {
			t.Fatal(err)
		}
		if got.PaymentStatus != billing.PaymentStatusPaid || len(pays.Items) != 1 {
			t.Errorf("invoice %s: %s with %d payments", inv[1], got.PaymentStatus, len(pays.Items))
		}
	}
	fake.mu.Lock()
	defer fake.mu.Unlock()
	if len(fake.byKey) != n {
		t.Errorf("%d PaymentIntents for %d invoices (charges sent: %d)", len(fake.byKey), n, fake.charges)
	}
	t.Logf("%d charges sent for %d invoices over 6 kills", fake.charges, n)
}

// seedCollection creates, on a new file, an account with Stripe
// configured and n issued CHARGE_AUTOMATICALLY invoices of linked Stripe
// customers; it returns each invoice's account and id.
func seedCollection(t *testing.T, db, stripeURL string, n int) [][2]string {
	t.Helper()
	svc, st, err := collectionService(db, stripeURL, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	acct, err := svc.CreateAccount(ctx, billing.CreateAccountParams{Name: "collect"})
	must(err)
	_, err = svc.ConfigurePaymentProvider(ctx, acct.ID, billing.ConfigurePaymentProviderParams{Provider: billing.PaymentProviderStripe,
		SecretKey: "sk_test_crash", WebhookSecret: "whsec_crash"})
	must(err)
	prod, err := svc.CreateProduct(ctx, acct.ID, billing.CreateProductParams{Name: "Plan"})
	must(err)
	amount := billing.MustDecimal("9.99")
	price, err := svc.CreatePrice(ctx, acct.ID, billing.CreatePriceParams{ProductID: prod.ID, Name: "Plan", Currency: billing.CurrencyUSD,
		Structure:        billing.PriceStructure{PricingType: billing.PricingFixed, Price: &amount},
		BillingFrequency: billing.FrequencyMonthly, BillingType: billing.BillingTypeInAdvance})
	must(err)
	start := billing.DateOf(time.Now()).AddDays(-1)
	yes, no := true, false
	var out [][2]string
	for i := range n {
		c, err := svc.CreateCustomer(ctx, acct.ID, billing.CustomerParams{LegalName: fmt.Sprintf("Customer %d", i), TaxStatus: billing.TaxStatusTaxExempt})
		must(err)
		ref := fmt.Sprintf("cus_%d", i)
		_, err = svc.CreatePaymentSettings(ctx, acct.ID, "customer", billing.PaymentSettingsParams{CustomerID: c.ID,
			PaymentProvider: billing.PaymentProviderStripe, ProviderCustomerID: &ref})
		must(err)
		sc, err := svc.CreateBillingSchedule(ctx, acct.ID, billing.BillingScheduleParams{CustomerID: c.ID, StartDate: &start,
			AutoIssueInvoices: &yes, IsDraft: &no, Phases: []billing.PhaseParams{{StartDate: &start, PriceIDs: []string{price.ID}}}})
		must(err)
		_, err = svc.CreatePaymentSettings(ctx, acct.ID, "billing_schedule", billing.PaymentSettingsParams{BillingScheduleID: sc.ID,
			PaymentProvider: billing.PaymentProviderStripe, AutoCharge: &yes})
		must(err)
	}
	run, err := svc.RunBilling(ctx, time.Now())
	must(err)
	if run.InvoicesIssued != n {
		t.Fatalf("issued %d invoices", run.InvoicesIssued)
	}
	invs, err := svc.ListInvoices(ctx, acct.ID, billing.InvoiceFilter{}, billing.ListParams{Limit: 100})
	must(err)
	for _, inv := range invs.Items {
		out = append(out, [2]string{acct.ID, inv.ID})
	}
	return out
}
