// Package stripe is billingd's Stripe adapter: the billing.PaymentProvider
// port over github.com/stripe/stripe-go, Stripe's official Go client.
//
// Amounts cross to Stripe in its integer minor units, per its currency
// rules: zero-decimal currencies (JPY, KRW, CLP, ISK, ...) in whole units,
// three-decimal ones (BHD, JOD, KWD, OMR, TND) in thousandths that end in
// 0, every other in hundredths. An amount that would need rounding is
// refused (conflict naming "currency"), never charged wrong; no float is
// ever involved. docs/payments.md is the guide.
package stripe

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	stripe "github.com/stripe/stripe-go/v82"

	"github.com/billingd/billing"
)

// Options configure the adapter.
type Options struct {
	// APIURL is Stripe's API base URL; empty: Stripe's own
	// (https://api.stripe.com). Tests point it at stripe-mock or a
	// recording fake.
	APIURL string
	// HTTPClient makes the requests; nil: a client with a 30s timeout.
	HTTPClient *http.Client
	// ReturnURL is where hosted pages send the customer back after paying
	// or saving a payment method; empty: https://billingd.invalid/return
	// (a page of the merchant's belongs here).
	ReturnURL string
	// WebhookTolerance is how old a signed webhook may be; zero: stripe-go's
	// default (5 minutes).
	WebhookTolerance time.Duration
}

// Provider is the STRIPE payment provider.
type Provider struct {
	opts Options
}

// New returns the Stripe adapter.
func New(opts Options) *Provider {
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{Timeout: 30 * time.Second}
	}
	if opts.ReturnURL == "" {
		opts.ReturnURL = "https://billingd.invalid/return"
	}
	return &Provider{opts: opts}
}

// Name is STRIPE.
func (p *Provider) Name() billing.PaymentProviderName { return billing.PaymentProviderStripe }

// Open returns a gateway acting with one account's credentials.
func (p *Provider) Open(creds billing.ProviderCredentials) (billing.PaymentGateway, error) {
	if creds.SecretKey == "" {
		return nil, errors.New("stripe: no secret key")
	}
	cfg := &stripe.BackendConfig{
		HTTPClient:        p.opts.HTTPClient,
		LeveledLogger:     &stripe.LeveledLogger{Level: stripe.LevelNull},
		MaxNetworkRetries: stripe.Int64(2),
	}
	if p.opts.APIURL != "" {
		cfg.URL = stripe.String(strings.TrimRight(p.opts.APIURL, "/"))
	}
	c := stripe.NewClient(creds.SecretKey, stripe.WithBackends(stripe.NewBackendsWithConfig(cfg)))
	return &gateway{c: c, opts: p.opts, secret: creds.SecretKey, webhookSecret: creds.WebhookSecret}, nil
}

// gateway is one account's Stripe client.
type gateway struct {
	c             *stripe.Client
	opts          Options
	secret        string // redacted from every error
	webhookSecret string
}

// zeroDecimal are the currencies Stripe counts in whole units.
var zeroDecimal = map[string]bool{
	"BIF": true, "CLP": true, "DJF": true, "GNF": true, "ISK": true, "JPY": true, "KMF": true, "KRW": true,
	"MGA": true, "PYG": true, "RWF": true, "UGX": true, "VND": true, "VUV": true, "XAF": true, "XOF": true, "XPF": true,
}

// threeDecimal are the currencies Stripe counts in thousandths, which must
// end in 0.
var threeDecimal = map[string]bool{"BHD": true, "JOD": true, "KWD": true, "OMR": true, "TND": true}

// Exponent returns how many decimal places Stripe's minor unit of cur has.
func Exponent(cur billing.Currency) int32 {
	switch c := string(cur); {
	case zeroDecimal[c]:
		return 0
	case threeDecimal[c]:
		return 3
	}
	return 2
}

// MinorUnits converts amount in cur to Stripe's integer amount: 12.34 USD
// is 1234, 1234 JPY is 1234, 1.230 KWD is 1230. An amount Stripe cannot
// represent exactly (more decimals than its minor unit, a three-decimal
// amount not ending in 0, out of range) is a conflict naming "currency".
func MinorUnits(amount billing.Decimal, cur billing.Currency) (int64, error) {
	exp := Exponent(cur)
	n, ok := billing.MinorUnitsOf(amount, exp)
	if !ok {
		return 0, &billing.Error{Code: billing.CodeConflict, Field: "currency",
			Message: fmt.Sprintf("Stripe cannot charge %s %s exactly: it counts %s in units of 10^-%d", amount, cur, cur, exp)}
	}
	if exp == 3 && n%10 != 0 {
		return 0, &billing.Error{Code: billing.CodeConflict, Field: "currency",
			Message: fmt.Sprintf("Stripe charges %s in multiples of 0.010; %s %s is not one", cur, amount, cur)}
	}
	return n, nil
}

// FromMinorUnits converts Stripe's integer amount in cur back to a Decimal.
func FromMinorUnits(n int64, cur billing.Currency) billing.Decimal {
	return billing.FromMinorUnits(n, Exponent(cur))
}

// CheckCurrency accepts every currency billingd supports: Stripe charges
// them all (the zero- and three-decimal ones by their own rules).
func (g *gateway) CheckCurrency(cur billing.Currency) error {
	if !cur.Valid() {
		return &billing.Error{Code: billing.CodeConflict, Field: "currency", Message: fmt.Sprintf("Stripe cannot charge %s", cur)}
	}
	return nil
}

// nonEmpty is s for an optional parameter of Stripe's: nil (not sent)
// when empty.
func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return stripe.String(s)
}

func withKey(p *stripe.Params, key string) {
	if key != "" {
		p.SetIdempotencyKey(key)
	}
}

// CreateCustomer creates the Stripe customer of a billingd customer.
func (g *gateway) CreateCustomer(ctx context.Context, p billing.ProviderCustomerParams) (string, error) {
	params := &stripe.CustomerCreateParams{Name: nonEmpty(p.Name), Email: nonEmpty(p.Email)}
	params.AddMetadata("customer_id", p.CustomerID)
	withKey(&params.Params, p.IdempotencyKey)
	c, err := g.c.V1Customers.Create(ctx, params)
	if err != nil {
		return "", g.describe(err)
	}
	return c.ID, nil
}

// DefaultPaymentMethod returns the customer's invoice_settings.default_payment_method.
func (g *gateway) DefaultPaymentMethod(ctx context.Context, customerRef string) (string, error) {
	c, err := g.c.V1Customers.Retrieve(ctx, customerRef, nil)
	if err != nil {
		return "", g.describe(err)
	}
	if c.InvoiceSettings != nil && c.InvoiceSettings.DefaultPaymentMethod != nil {
		return c.InvoiceSettings.DefaultPaymentMethod.ID, nil
	}
	return "", nil
}

// Charge creates and confirms an off-session PaymentIntent with
// metadata.invoice_id, under the request's idempotency key.
func (g *gateway) Charge(ctx context.Context, r billing.ChargeRequest) (*billing.ChargeResult, error) {
	amount, err := MinorUnits(r.Amount, r.Currency)
	if err != nil {
		return nil, err
	}
	params := &stripe.PaymentIntentCreateParams{
		Amount:        stripe.Int64(amount),
		Currency:      stripe.String(strings.ToLower(string(r.Currency))),
		Customer:      stripe.String(r.CustomerRef),
		PaymentMethod: stripe.String(r.PaymentMethod),
		OffSession:    stripe.Bool(true),
		Confirm:       stripe.Bool(true),
		Description:   stripe.String("Invoice " + r.InvoiceNumber),
	}
	params.AddMetadata("invoice_id", r.InvoiceID)
	params.AddMetadata("attempt", fmt.Sprint(r.Attempt))
	withKey(&params.Params, r.IdempotencyKey)
	pi, err := g.c.V1PaymentIntents.Create(ctx, params)
	if err != nil {
		var se *stripe.Error
		if errors.As(err, &se) && se.Type == stripe.ErrorTypeCard {
			// A decline: the charge failed, not the call.
			res := &billing.ChargeResult{Status: billing.ChargeFailed, FailureMessage: declineMessage(se)}
			if se.PaymentIntent != nil {
				res.Reference = se.PaymentIntent.ID
			}
			return res, nil
		}
		return nil, g.describe(err)
	}
	return chargeResult(pi, r.Currency), nil
}

func declineMessage(se *stripe.Error) string {
	msg := se.Msg
	if se.DeclineCode != "" {
		msg += " (" + string(se.DeclineCode) + ")"
	}
	return msg
}

func chargeResult(pi *stripe.PaymentIntent, cur billing.Currency) *billing.ChargeResult {
	res := &billing.ChargeResult{Reference: pi.ID}
	switch pi.Status {
	case stripe.PaymentIntentStatusSucceeded:
		res.Status, res.Amount = billing.ChargeSucceeded, FromMinorUnits(pi.AmountReceived, cur)
	case stripe.PaymentIntentStatusProcessing, stripe.PaymentIntentStatusRequiresCapture:
		res.Status = billing.ChargePending
	default:
		res.Status = billing.ChargeFailed
		res.FailureMessage = "the payment needs the customer: " + string(pi.Status)
		if pi.LastPaymentError != nil && pi.LastPaymentError.Msg != "" {
			res.FailureMessage = pi.LastPaymentError.Msg
		}
	}
	return res
}

// PaymentPage creates a Checkout Session in payment mode for the amount
// due, its PaymentIntent carrying metadata.invoice_id.
func (g *gateway) PaymentPage(ctx context.Context, r billing.PaymentPageRequest) (*billing.HostedPage, error) {
	amount, err := MinorUnits(r.Amount, r.Currency)
	if err != nil {
		return nil, err
	}
	params := &stripe.CheckoutSessionCreateParams{
		Mode:       stripe.String(string(stripe.CheckoutSessionModePayment)),
		SuccessURL: stripe.String(g.opts.ReturnURL),
		LineItems: []*stripe.CheckoutSessionCreateLineItemParams{{
			Quantity: stripe.Int64(1),
			PriceData: &stripe.CheckoutSessionCreateLineItemPriceDataParams{
				Currency:    stripe.String(strings.ToLower(string(r.Currency))),
				UnitAmount:  stripe.Int64(amount),
				ProductData: &stripe.CheckoutSessionCreateLineItemPriceDataProductDataParams{Name: stripe.String("Invoice " + r.InvoiceNumber)},
			},
		}},
		PaymentIntentData: &stripe.CheckoutSessionCreatePaymentIntentDataParams{
			Metadata: map[string]string{"invoice_id": r.InvoiceID},
		},
		Customer: nonEmpty(r.CustomerRef),
	}
	params.AddMetadata("invoice_id", r.InvoiceID)
	withKey(&params.Params, r.IdempotencyKey)
	s, err := g.c.V1CheckoutSessions.Create(ctx, params)
	if err != nil {
		return nil, g.describe(err)
	}
	return hosted(s), nil
}

func hosted(s *stripe.CheckoutSession) *billing.HostedPage {
	page := &billing.HostedPage{Reference: s.ID, URL: s.URL}
	if s.ExpiresAt > 0 {
		t := time.Unix(s.ExpiresAt, 0).UTC()
		page.ExpiresAt = &t
	}
	return page
}

// SetupPage creates a Checkout Session in setup mode for the customer.
func (g *gateway) SetupPage(ctx context.Context, r billing.SetupPageRequest) (*billing.HostedPage, error) {
	success, cancel := r.SuccessURL, r.CancelURL
	if success == "" {
		success = g.opts.ReturnURL
	}
	params := &stripe.CheckoutSessionCreateParams{
		Mode:       stripe.String(string(stripe.CheckoutSessionModeSetup)),
		Customer:   stripe.String(r.CustomerRef),
		Currency:   stripe.String(strings.ToLower(string(r.Currency))),
		SuccessURL: stripe.String(success),
		CancelURL:  nonEmpty(cancel),
	}
	params.AddMetadata("customer_id", r.CustomerID)
	// The SetupIntent carries the customer too, so that
	// setup_intent.succeeded names billingd's customer.
	params.SetupIntentData = &stripe.CheckoutSessionCreateSetupIntentDataParams{Metadata: map[string]string{"customer_id": r.CustomerID}}
	s, err := g.c.V1CheckoutSessions.Create(ctx, params)
	if err != nil {
		return nil, g.describe(err)
	}
	return hosted(s), nil
}

// SetupPaymentMethod reads a SetupIntent: its customer and the payment
// method it saved.
func (g *gateway) SetupPaymentMethod(ctx context.Context, setupRef string) (string, string, error) {
	si, err := g.c.V1SetupIntents.Retrieve(ctx, setupRef, nil)
	if err != nil {
		return "", "", g.describe(err)
	}
	cust, pm := "", ""
	if si.Customer != nil {
		cust = si.Customer.ID
	}
	if si.PaymentMethod != nil {
		pm = si.PaymentMethod.ID
	}
	return cust, pm, nil
}

// SetDefaultPaymentMethod sets the customer's
// invoice_settings.default_payment_method.
func (g *gateway) SetDefaultPaymentMethod(ctx context.Context, customerRef, paymentMethod string) error {
	params := &stripe.CustomerUpdateParams{InvoiceSettings: &stripe.CustomerUpdateInvoiceSettingsParams{DefaultPaymentMethod: stripe.String(paymentMethod)}}
	if _, err := g.c.V1Customers.Update(ctx, customerRef, params); err != nil {
		return g.describe(err)
	}
	return nil
}

// ClosePage expires a Checkout Session while it is open; a session already
// complete or expired is left as it is.
func (g *gateway) ClosePage(ctx context.Context, ref string) error {
	s, err := g.c.V1CheckoutSessions.Retrieve(ctx, ref, nil)
	if err != nil {
		return g.describe(err)
	}
	if s.Status != "" && s.Status != stripe.CheckoutSessionStatusOpen {
		return nil
	}
	if _, err := g.c.V1CheckoutSessions.Expire(ctx, ref, nil); err != nil {
		return g.describe(err)
	}
	return nil
}

// Refund refunds part of a PaymentIntent.
func (g *gateway) Refund(ctx context.Context, r billing.RefundRequest) (*billing.RefundResult, error) {
	amount, err := MinorUnits(r.Amount, r.Currency)
	if err != nil {
		return nil, err
	}
	params := &stripe.RefundCreateParams{PaymentIntent: stripe.String(r.PaymentRef), Amount: stripe.Int64(amount)}
	params.AddMetadata("credit_note_id", r.CreditNoteID)
	withKey(&params.Params, r.IdempotencyKey)
	ref, err := g.c.V1Refunds.Create(ctx, params)
	if err != nil {
		return nil, g.describe(err)
	}
	res := &billing.RefundResult{Reference: ref.ID, Status: billing.ChargePending}
	switch ref.Status {
	case stripe.RefundStatusSucceeded:
		res.Status = billing.ChargeSucceeded
	case stripe.RefundStatusFailed, stripe.RefundStatusCanceled:
		res.Status = billing.ChargeFailed
	}
	return res, nil
}

// describe turns a stripe-go error into one that names no secret: Stripe's
// message and code, or the transport's failure, with the secret key (which
// a mock may echo) replaced by its last 4 characters.
func (g *gateway) describe(err error) error {
	var se *stripe.Error
	msg := ""
	if errors.As(err, &se) {
		msg = fmt.Sprintf("stripe: %s (%s, HTTP %d)", se.Msg, se.Code, se.HTTPStatusCode)
	} else {
		msg = "stripe: " + err.Error()
	}
	return errors.New(redact(msg, g.secret, g.webhookSecret))
}

// redact replaces each secret in s by "****" and its last 4 characters.
func redact(s string, secrets ...string) string {
	for _, sec := range secrets {
		if len(sec) >= 8 {
			s = strings.ReplaceAll(s, sec, "****"+sec[len(sec)-4:])
		}
	}
	return s
}
