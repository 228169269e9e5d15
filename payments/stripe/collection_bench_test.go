package stripe_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
	"github.com/billingd/billing/httpserver"
	"github.com/billingd/billing/internal/stripemock"
	bstripe "github.com/billingd/billing/payments/stripe"
)

// BenchmarkCollection1000 is a billing run's collection of 1,000
// CHARGE_AUTOMATICALLY invoices through the real adapter against
// stripe-mock, on a bbolt file, while a client lists invoices through the
// HTTP API: it reports the run's seconds and the p99 of those requests.
// stripe-mock's customers have no default payment method and its
// PaymentIntents stay requires_payment_method, so a proxy in front of it
// answers GET /v1/customers/{id} with one and turns stripe-mock's
// PaymentIntent answers into succeeded ones (amount_received = amount);
// every call still goes to stripe-mock, which validates it. BENCHMARKS.md has the command and numbers.
func BenchmarkCollection1000(b *testing.B) {
	mock, err := url.Parse(stripemock.Start(b))
	if err != nil {
		b.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(mock)
	proxy.ModifyResponse = succeed
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/v1/customers/") {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"id":%q,"object":"customer","invoice_settings":{"default_payment_method":"pm_card_visa"}}`, strings.TrimPrefix(r.URL.Path, "/v1/customers/"))
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	defer front.Close()
	for range b.N {
		collect1000(b, front.URL)
	}
}

// collect1000 sets up 1,000 issued invoices and measures one collection
// run of them.
//
// Long on purpose: the fixture, the load beside the run and the
// measurement of one benchmark.
func collect1000(b *testing.B, apiURL string) {
	b.StopTimer()
	ctx := context.Background()
	svc, clock := billingtest.NewService(b, billingtest.WithBolt(), billingtest.WithConfig(billing.Config{
		PaymentProviders: []billing.PaymentProvider{bstripe.New(bstripe.Options{APIURL: apiURL})},
		MasterKey:        []byte("0123456789abcdef0123456789abcdef")}))
	acct := billingtest.Account(b, svc, "bench")
	must := func(err error) {
		if err != nil {
			b.Fatal(err)
		}
	}
	_, err := svc.ConfigurePaymentProvider(ctx, acct, billing.ConfigurePaymentProviderParams{Provider: billing.PaymentProviderStripe,
		SecretKey: "sk_test_bench123", WebhookSecret: "whsec_bench"})
	must(err)
	key, err := svc.CreateAPIKey(ctx, acct)
	must(err)
	prod, err := svc.CreateProduct(ctx, acct, billing.CreateProductParams{Name: "Plan"})
	must(err)
	amount := billing.MustDecimal("19.99")
	price, err := svc.CreatePrice(ctx, acct, billing.CreatePriceParams{ProductID: prod.ID, Name: "Plan", Currency: billing.CurrencyUSD,
		Structure:        billing.PriceStructure{PricingType: billing.PricingFixed, Price: &amount},
		BillingFrequency: billing.FrequencyMonthly, BillingType: billing.BillingTypeInAdvance})
	must(err)
	start := billing.DateOf(clock.Now()).AddDays(-1)
	yes, no := true, false
	for i := range 1000 {
		c, err := svc.CreateCustomer(ctx, acct, billing.CustomerParams{LegalName: fmt.Sprintf("Customer %d", i), TaxStatus: billing.TaxStatusTaxExempt})
		must(err)
		_, err = svc.CreatePaymentSettings(ctx, acct, "customer", billing.PaymentSettingsParams{CustomerID: c.ID,
			PaymentProvider: billing.PaymentProviderStripe, ProviderCustomerID: ptr("cus_bench" + fmt.Sprint(i))})
		must(err)
		sc, err := svc.CreateBillingSchedule(ctx, acct, billing.BillingScheduleParams{CustomerID: c.ID, StartDate: &start,
			AutoIssueInvoices: &yes, IsDraft: &no, Phases: []billing.PhaseParams{{StartDate: &start, PriceIDs: []string{price.ID}}}})
		must(err)
		_, err = svc.CreatePaymentSettings(ctx, acct, "billing_schedule", billing.PaymentSettingsParams{BillingScheduleID: sc.ID,
			PaymentProvider: billing.PaymentProviderStripe, AutoCharge: &yes})
		must(err)
	}
	run, err := svc.RunBilling(ctx, clock.Now())
	must(err)
	if run.InvoicesIssued != 1000 {
		b.Fatalf("the billing run issued %d invoices", run.InvoicesIssued)
	}
	api := httptest.NewServer(httpserver.NewServer(svc, &httpserver.Config{RateLimit: -1}).Handler())
	defer api.Close()
	done := make(chan struct{})
	var lat []time.Duration
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			req, _ := http.NewRequest("GET", api.URL+"/invoices?limit=20", nil)
			req.Header.Set("Authorization", key.Authorization())
			t0 := time.Now()
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				b.Error(err)
				return
			}
			resp.Body.Close()
			lat = append(lat, time.Since(t0))
		}
	})
	b.StartTimer()
	t0 := time.Now()
	cr, err := svc.RunCollection(ctx, clock.Now())
	elapsed := time.Since(t0)
	b.StopTimer()
	close(done)
	wg.Wait()
	must(err)
	if cr.Steps != 1000 || cr.Succeeded != 1000 {
		b.Fatalf("collection run %+v", cr)
	}
	slices.Sort(lat)
	p99 := time.Duration(0)
	if len(lat) > 0 {
		p99 = lat[len(lat)*99/100]
	}
	b.ReportMetric(elapsed.Seconds(), "run-s")
	b.ReportMetric(float64(p99.Microseconds())/1000, "api-p99-ms")
	b.ReportMetric(float64(len(lat)), "api-requests")
	b.Logf("1000 invoices: run %v (%+v), %d API requests during it, p99 %v", elapsed, cr, len(lat), p99)
}

func ptr[T any](v T) *T { return &v }

// succeed rewrites a PaymentIntent answer of stripe-mock as succeeded.
func succeed(resp *http.Response) error {
	if resp.Request.URL.Path != "/v1/payment_intents" || resp.StatusCode != http.StatusOK {
		return nil
	}
	var pi map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&pi); err != nil {
		return err
	}
	resp.Body.Close()
	pi["status"], pi["amount_received"] = "succeeded", pi["amount"]
	body, err := json.Marshal(pi)
	if err != nil {
		return err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	resp.Header.Set("Content-Length", fmt.Sprint(len(body)))
	return nil
}
