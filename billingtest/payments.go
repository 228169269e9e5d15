package billingtest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/billingd/billing"
)

// FakeProvider is the recording test double of the payment-provider port
// for stateful flows: it answers each charge with the next programmed
// outcome, records every call, and honours idempotency keys (a key
// charged before answers its first result again, as Stripe does).
type FakeProvider struct {
	mu sync.Mutex
	// Outcomes are the next charges' outcomes; SUCCEEDED when empty.
	Outcomes []billing.ChargeStatus
	// Charges are the charges asked for, in order (repeats included).
	Charges []billing.ChargeRequest
	byKey   map[string]*billing.ChargeResult
	// PaymentMethod is the customers' default payment method.
	PaymentMethod string
	// FailAttempts makes every invoice's first FailAttempts attempts fail
	// (Outcomes aside).
	FailAttempts int
	// Pages are the payment pages made, in order.
	Pages []billing.PaymentPageRequest
	// Closed are the references of the pages closed, in order.
	Closed []string
	// Defaults are the default payment methods set, "customer ref/method".
	Defaults []string
	// SetupMethods answer SetupPaymentMethod: set-up reference → payment
	// method (the customer is left to the event to name).
	SetupMethods map[string]string
	// LinkTTL, with Now, gives payment pages an expiry (none when zero).
	LinkTTL time.Duration
	// Now is the clock of LinkTTL.
	Now func() time.Time
}

// NewFakeProvider returns a FakeProvider whose customers pay with
// "pm_fake" and whose charges succeed.
func NewFakeProvider() *FakeProvider {
	return &FakeProvider{byKey: map[string]*billing.ChargeResult{}, PaymentMethod: "pm_fake"}
}

// Name is STRIPE: the fake stands in for the Stripe adapter.
func (f *FakeProvider) Name() billing.PaymentProviderName { return billing.PaymentProviderStripe }

// Open returns the fake's gateway; its webhook secret signs events
// (ParseEvent).
func (f *FakeProvider) Open(creds billing.ProviderCredentials) (billing.PaymentGateway, error) {
	return &fakeGateway{f: f, secret: creds.WebhookSecret}, nil
}

// DistinctCharges counts the charges made (idempotency keys seen).
func (f *FakeProvider) DistinctCharges() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.byKey)
}

// fakeGateway is FakeProvider's gateway for one account's credentials.
type fakeGateway struct {
	f      *FakeProvider
	secret string
}

// CheckCurrency implements billing.PaymentGateway.
func (g *fakeGateway) CheckCurrency(billing.Currency) error { return nil }

// CreateCustomer implements billing.PaymentGateway.
func (g *fakeGateway) CreateCustomer(_ context.Context, p billing.ProviderCustomerParams) (string, error) {
	return "cus_" + p.CustomerID, nil
}

// DefaultPaymentMethod implements billing.PaymentGateway.
func (g *fakeGateway) DefaultPaymentMethod(context.Context, string) (string, error) {
	return g.f.PaymentMethod, nil
}

// Charge implements billing.PaymentGateway.
func (g *fakeGateway) Charge(_ context.Context, c billing.ChargeRequest) (*billing.ChargeResult, error) {
	f := g.f
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Charges = append(f.Charges, c)
	if r, ok := f.byKey[c.IdempotencyKey]; ok {
		return r, nil
	}
	st := billing.ChargeSucceeded
	if c.Attempt <= f.FailAttempts {
		st = billing.ChargeFailed
	} else if len(f.Outcomes) > 0 {
		st, f.Outcomes = f.Outcomes[0], f.Outcomes[1:]
	}
	r := &billing.ChargeResult{Reference: "pi_" + c.IdempotencyKey, Status: st}
	if st == billing.ChargeSucceeded {
		r.Amount = c.Amount
	} else if st == billing.ChargeFailed {
		r.FailureMessage = "card declined"
	}
	f.byKey[c.IdempotencyKey] = r
	return r, nil
}

// PaymentPage implements billing.PaymentGateway: page n of an invoice is
// cs_<invoice id>_<n>.
func (g *fakeGateway) PaymentPage(_ context.Context, p billing.PaymentPageRequest) (*billing.HostedPage, error) {
	f := g.f
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Pages = append(f.Pages, p)
	n := 0
	for _, q := range f.Pages {
		if q.InvoiceID == p.InvoiceID {
			n++
		}
	}
	page := &billing.HostedPage{Reference: fmt.Sprintf("cs_%s_%d", p.InvoiceID, n), URL: fmt.Sprintf("https://pay.example/%s/%d", p.InvoiceID, n)}
	if f.LinkTTL > 0 {
		at := f.Now().Add(f.LinkTTL).UTC().Truncate(time.Second)
		page.ExpiresAt = &at
	}
	return page, nil
}

// ClosePage implements billing.PaymentGateway.
func (g *fakeGateway) ClosePage(_ context.Context, ref string) error {
	g.f.mu.Lock()
	defer g.f.mu.Unlock()
	g.f.Closed = append(g.f.Closed, ref)
	return nil
}

// SetupPaymentMethod implements billing.PaymentGateway.
func (g *fakeGateway) SetupPaymentMethod(_ context.Context, setupRef string) (string, string, error) {
	g.f.mu.Lock()
	defer g.f.mu.Unlock()
	return "", g.f.SetupMethods[setupRef], nil
}

// SetDefaultPaymentMethod implements billing.PaymentGateway.
func (g *fakeGateway) SetDefaultPaymentMethod(_ context.Context, customerRef, pm string) error {
	g.f.mu.Lock()
	defer g.f.mu.Unlock()
	g.f.Defaults = append(g.f.Defaults, customerRef+"/"+pm)
	return nil
}

// Snapshot returns copies of what the fake recorded: pages made, pages
// closed, defaults set.
func (f *FakeProvider) Snapshot() (pages []billing.PaymentPageRequest, closed, defaults []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]billing.PaymentPageRequest(nil), f.Pages...), append([]string(nil), f.Closed...), append([]string(nil), f.Defaults...)
}

// SetupPage implements billing.PaymentGateway.
func (g *fakeGateway) SetupPage(_ context.Context, p billing.SetupPageRequest) (*billing.HostedPage, error) {
	return &billing.HostedPage{Reference: "cs_setup", URL: "https://pay.example/setup/" + p.CustomerID}, nil
}

// Refund implements billing.PaymentGateway.
func (g *fakeGateway) Refund(_ context.Context, r billing.RefundRequest) (*billing.RefundResult, error) {
	return &billing.RefundResult{Reference: "re_" + r.IdempotencyKey, Status: billing.ChargeSucceeded}, nil
}

// ParseEvent accepts a JSON ProviderEvent signed by its Fake-Signature
// header holding the webhook secret.
func (g *fakeGateway) ParseEvent(payload []byte, h http.Header) (*billing.ProviderEvent, error) {
	if h.Get("Fake-Signature") != g.secret {
		return nil, billing.FieldError("Fake-Signature", "bad signature")
	}
	var ev billing.ProviderEvent
	if err := json.Unmarshal(payload, &ev); err != nil {
		return nil, billing.FieldError("body", "%v", err)
	}
	return &ev, nil
}
