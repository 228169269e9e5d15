package console

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
	"github.com/billingd/billing/httpserver"
)

// fixture is a real server: the Service on bbolt (the test kit's durable
// store), the REST API and the console mounted as billingd serve mounts
// them, one account with a customer and a draft invoice, and a second
// account.
type fixture struct {
	tb       testing.TB
	svc      *billing.Service
	clock    *billingtest.Clock
	con      *Console
	api      *httpserver.Server // the API the console is mounted in
	srv      *httptest.Server
	account  string
	key      *billing.NewAPIKey
	customer *billing.Customer
	invoice  *billing.Invoice // a DRAFT with one line
	other    string           // another account
	otherKey *billing.NewAPIKey
}

// newFixture starts a fixture.
func newFixture(tb testing.TB, opts ...billingtest.Option) *fixture {
	tb.Helper()
	return newFixtureWith(tb, nil, nil, opts...)
}

// newFixtureWith starts a fixture whose API has the configuration api (nil:
// no rate limit) and whose console's configuration is changed by con (nil:
// as billingd serve's defaults on loopback).
func newFixtureWith(tb testing.TB, api *httpserver.Config, con func(*Config), opts ...billingtest.Option) *fixture {
	tb.Helper()
	st := billingtest.DurableStore(tb) // bbolt, as billingd serve; PostgreSQL when BILLINGD_TEST_POSTGRES is set
	svc, clock := billingtest.NewService(tb, append(opts, billingtest.WithStore(st))...)
	if api == nil {
		api = &httpserver.Config{RateLimit: -1}
	}
	srv := httpserver.NewServer(svc, api)
	cfg := &Config{Store: st, Now: clock.Now, Guard: srv}
	if con != nil {
		con(cfg)
	}
	c, err := New(svc, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	f := &fixture{tb: tb, svc: svc, clock: clock, con: c, api: srv}
	srv.Mount(Prefix, c) // as billingd serve mounts it
	f.srv = httptest.NewServer(srv.Handler())
	tb.Cleanup(f.srv.Close)
	f.account, f.key = f.newAccount("Acme")
	f.other, f.otherKey = f.newAccount("Other")
	f.customer = f.newCustomer(f.account, "Globex Ltd", "globex")
	f.invoice = f.newInvoice(f.account, f.customer.ID, "3", "120.50")
	return f
}

// must returns v, and panics (failing the test) on err: for the set-up
// calls that cannot fail unless something else is broken.
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// newAccount creates an account and an API key of it.
func (f *fixture) newAccount(name string) (string, *billing.NewAPIKey) {
	account := billingtest.Account(f.tb, f.svc, name)
	return account, must(f.svc.CreateAPIKey(context.Background(), account))
}

// newCustomer creates a customer with an alias and a billing contact.
func (f *fixture) newCustomer(account, name, alias string) *billing.Customer {
	return must(f.svc.CreateCustomer(context.Background(), account, billing.CustomerParams{
		LegalName: name, CustomerAliases: []string{alias},
		Contacts: []billing.Contact{{Name: "Ann", Email: "ann@" + alias + ".test", BillingPreference: billing.BillingPreferencePrimary}},
	}))
}

// newInvoice creates a draft GBP invoice with one taxed line.
func (f *fixture) newInvoice(account, customerID, quantity, rate string) *billing.Invoice {
	ctx := context.Background()
	inv := must(f.svc.CreateInvoice(ctx, account, billing.InvoiceParams{Currency: billing.CurrencyGBP, CustomerID: customerID}))
	must(f.svc.CreateInvoiceLineItem(ctx, account, inv.ID, billing.InvoiceLineItemParams{
		Title: "Consulting", Quantity: new(billing.MustDecimal(quantity)), Rate: new(billing.MustDecimal(rate)),
		TaxRate: new(billing.MustDecimal("0.2")), ExternalIDs: []billing.KeyValue{},
	}))
	return must(f.svc.GetInvoice(ctx, account, inv.ID))
}

// finalInvoice is newInvoice of the fixture's customer, finalized.
func (f *fixture) finalInvoice(quantity, rate string) *billing.Invoice {
	inv := f.newInvoice(f.account, f.customer.ID, quantity, rate)
	return must(f.svc.FinalizeInvoice(context.Background(), f.account, inv.ID))
}

// browser is a plain HTTP client of the console with its own cookies,
// for the tests that look at status codes and headers.
type browser struct {
	f      *fixture
	client *http.Client
}

// newBrowser returns a client that does not follow redirects.
func (f *fixture) newBrowser() *browser {
	jar := must(cookiejar.New(nil))
	return &browser{f: f, client: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}}
}

// get fetches path and returns the answer with its body read.
func (b *browser) get(path string) (*http.Response, string) {
	b.f.tb.Helper()
	return b.read(b.client.Get(b.f.srv.URL + path))
}

// post submits form to path.
func (b *browser) post(path string, form url.Values) (*http.Response, string) {
	b.f.tb.Helper()
	return b.read(b.client.PostForm(b.f.srv.URL+path, form))
}

// read reads an answer's body.
func (b *browser) read(resp *http.Response, err error) (*http.Response, string) {
	b.f.tb.Helper()
	if err != nil {
		b.f.tb.Fatal(err)
	}
	defer resp.Body.Close()
	body := must(io.ReadAll(resp.Body))
	return resp, string(body)
}

// csrfField finds the CSRF token of a page's form.
var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// token returns the CSRF token of the page at path.
func (b *browser) token(path string) string {
	b.f.tb.Helper()
	_, body := b.get(path)
	m := csrfField.FindStringSubmatch(body)
	if m == nil {
		b.f.tb.Fatalf("no CSRF token on %s:\n%s", path, body)
	}
	return m[1]
}

// signIn signs in with key id and secret and returns the answer.
func (b *browser) signIn(keyID, secret string) (*http.Response, string) {
	b.f.tb.Helper()
	return b.post("/console/sign-in", url.Values{"csrf": {b.token("/console/sign-in")}, "keyId": {keyID}, "secret": {secret}})
}

// signedIn returns a browser signed in with the fixture's key.
func (f *fixture) signedIn() *browser {
	f.tb.Helper()
	b := f.newBrowser()
	if resp, body := b.signIn(f.key.ID, f.key.Secret); resp.StatusCode != http.StatusSeeOther {
		f.tb.Fatalf("sign-in: %d\n%s", resp.StatusCode, body)
	}
	return b
}

// contains fails unless body contains every want.
func contains(tb testing.TB, body string, want ...string) {
	tb.Helper()
	for _, w := range want {
		if !strings.Contains(body, w) {
			tb.Errorf("the page lacks %q", w)
		}
	}
}
