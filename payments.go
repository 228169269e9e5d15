package billing

import (
	"context"
	"net/http"
	"time"
)

// This file is the payment-provider port: what billingd asks of a payment
// provider (Stripe, or one an embedding program brings) to collect what its
// invoices say. Adapters live in their own packages (payments/stripe); the
// Service works without any (payments are then recorded by hand, and every
// payment field reads NONE). docs/payments.md is the guide.

// PaymentProviderName names a payment provider: NONE or STRIPE (the
// upstream API's PaymentProvider values).
type PaymentProviderName string

// The payment providers.
const (
	PaymentProviderNone   PaymentProviderName = "NONE"
	PaymentProviderStripe PaymentProviderName = "STRIPE"
)

// PaymentProvider is an adapter of a payment provider, given to the Service
// in Config.PaymentProviders. Open returns the provider's client for one
// account's credentials; the Service opens one per operation that needs it
// (the credentials live encrypted in the store, per account).
type PaymentProvider interface {
	// Name is the provider the adapter serves (STRIPE).
	Name() PaymentProviderName
	// Open returns a gateway that acts with creds.
	Open(creds ProviderCredentials) (PaymentGateway, error)
}

// ProviderCredentials are an account's secrets at a provider, decrypted for
// one operation. They never leave the Service but to the adapter.
type ProviderCredentials struct {
	// SecretKey is the provider's API secret key (Stripe: sk_...).
	SecretKey string
	// WebhookSecret verifies the signatures of the provider's webhooks
	// (Stripe: whsec_...).
	WebhookSecret string
}

// PaymentGateway is one account's connection to its provider. Every amount
// crosses it as a Decimal in the invoice's currency; the adapter converts to
// and from the provider's integer minor units (never through a float) and
// refuses, with a conflict *Error naming "currency", a currency or an amount
// it cannot charge exactly.
type PaymentGateway interface {
	// CheckCurrency returns nil when the provider can charge amounts in
	// cur, else a conflict *Error naming "currency".
	CheckCurrency(cur Currency) error
	// CreateCustomer creates the provider's customer for a billingd
	// customer and returns its reference. IdempotencyKey makes a retry
	// return the customer the first call created.
	CreateCustomer(ctx context.Context, p ProviderCustomerParams) (string, error)
	// DefaultPaymentMethod returns the customer's default payment method
	// (empty when it has none).
	DefaultPaymentMethod(ctx context.Context, customerRef string) (string, error)
	// Charge charges a saved payment method off session. The provider
	// charges at most once per IdempotencyKey.
	Charge(ctx context.Context, c ChargeRequest) (*ChargeResult, error)
	// PaymentPage creates a hosted page where the customer pays an
	// invoice.
	PaymentPage(ctx context.Context, p PaymentPageRequest) (*HostedPage, error)
	// SetupPage creates a hosted page where the customer saves a payment
	// method for later charges.
	SetupPage(ctx context.Context, p SetupPageRequest) (*HostedPage, error)
	// SetupPaymentMethod returns the provider customer and the payment
	// method a completed set-up saved (Stripe: the SetupIntent's customer
	// and payment_method).
	SetupPaymentMethod(ctx context.Context, setupRef string) (customerRef, paymentMethod string, err error)
	// SetDefaultPaymentMethod makes paymentMethod the provider customer's
	// default for later charges (Stripe: its
	// invoice_settings.default_payment_method).
	SetDefaultPaymentMethod(ctx context.Context, customerRef, paymentMethod string) error
	// ClosePage closes a hosted payment page so that it takes no more
	// payment (Stripe: expires an open Checkout Session). A page already
	// completed, expired or closed is not an error.
	ClosePage(ctx context.Context, ref string) error
	// Refund gives back part or all of a charge.
	Refund(ctx context.Context, r RefundRequest) (*RefundResult, error)
	// ParseEvent verifies the signature of an inbound webhook (the
	// request's headers) and returns its event. A missing or bad
	// signature returns a validation_failed *Error naming the header.
	ParseEvent(payload []byte, header http.Header) (*ProviderEvent, error)
}

// ProviderCustomerParams describe a provider customer to create.
type ProviderCustomerParams struct {
	// CustomerID is billingd's customer id (kept in the provider's
	// metadata as customer_id).
	CustomerID string
	// Name and Email are the customer's, when it has them.
	Name, Email string
	// IdempotencyKey is derived from the customer id.
	IdempotencyKey string
}

// ChargeRequest is one off-session charge of an invoice's attempt.
type ChargeRequest struct {
	// InvoiceID is billingd's invoice id (metadata.invoice_id), and
	// InvoiceNumber its number (the description).
	InvoiceID, InvoiceNumber string
	// Attempt is the attempt's number, 1 for the charge at issue.
	Attempt int
	// Amount is what to charge, in Currency.
	Amount Decimal
	// Currency is the currency of the amount.
	Currency Currency
	// CustomerRef and PaymentMethod are the provider's references.
	CustomerRef, PaymentMethod string
	// IdempotencyKey is "invoice id/attempt n": the provider makes at
	// most one charge for it, however often it is sent.
	IdempotencyKey string
}

// ChargeStatus is the outcome of a charge.
type ChargeStatus string

// The charge outcomes.
const (
	// ChargeSucceeded: the money is collected.
	ChargeSucceeded ChargeStatus = "SUCCEEDED"
	// ChargePending: the provider is still working (a bank debit); its
	// webhook says how it ends.
	ChargePending ChargeStatus = "PENDING"
	// ChargeFailed: declined, or no usable payment method.
	ChargeFailed ChargeStatus = "FAILED"
)

// ChargeResult is what a charge did.
type ChargeResult struct {
	// Reference is the provider's payment reference (Stripe: the
	// PaymentIntent id).
	Reference string
	// Status is SUCCEEDED, PENDING or FAILED.
	Status ChargeStatus
	// Amount is what the provider says it collected (SUCCEEDED).
	Amount Decimal
	// FailureMessage says why a FAILED charge failed, as the provider
	// tells it (never a secret).
	FailureMessage string
}

// PaymentPageRequest asks for a hosted page to pay one invoice.
type PaymentPageRequest struct {
	// InvoiceID and InvoiceNumber are billingd's invoice and its number.
	InvoiceID, InvoiceNumber string
	// Amount is the amount, in Currency (exact; the adapter converts it to minor units).
	Amount Decimal
	// Currency is the currency of the amount.
	Currency Currency
	// CustomerRef is the provider customer, when there is one.
	CustomerRef string
	// IdempotencyKey is derived from the invoice id and the page's
	// generation.
	IdempotencyKey string
}

// SetupPageRequest asks for a hosted page to save a payment method.
type SetupPageRequest struct {
	// CustomerID is billingd's customer, CustomerRef the provider's.
	CustomerID, CustomerRef string
	// Currency is the customer's (some methods depend on it).
	Currency Currency
	// SuccessURL and CancelURL are where the page sends the customer back.
	SuccessURL, CancelURL string
}

// HostedPage is a page at the provider.
type HostedPage struct {
	// Reference is the provider's id of the page (Stripe: the Checkout
	// Session or Payment Link id).
	Reference string `json:"reference"`
	// URL is where the customer goes.
	URL string `json:"url"`
	// ExpiresAt is when the page stops working; nil when it does not.
	ExpiresAt *time.Time `json:"expiresAt,omitempty"`
}

// RefundRequest gives back money of one provider payment.
type RefundRequest struct {
	// PaymentRef is the provider payment to refund.
	PaymentRef string
	// Amount is the amount, in Currency (exact; the adapter converts it to minor units).
	Amount Decimal
	// Currency is the currency of the amount.
	Currency Currency
	// CreditNoteID is billingd's credit note that asked for the refund.
	CreditNoteID string
	// IdempotencyKey is derived from the credit note and payment.
	IdempotencyKey string
}

// RefundResult is what a refund did.
type RefundResult struct {
	// Reference is the provider's id of it.
	Reference string
	// Status is SUCCEEDED, PENDING or FAILED.
	Status ChargeStatus
}

// ProviderEventType is the kind of an inbound provider event, as billingd
// understands it.
type ProviderEventType string

// The provider event types billingd handles; every other event is
// ProviderEventOther (acknowledged, ignored).
const (
	ProviderEventPaymentSucceeded  ProviderEventType = "PAYMENT_SUCCEEDED"
	ProviderEventPaymentFailed     ProviderEventType = "PAYMENT_FAILED"
	ProviderEventRefundSucceeded   ProviderEventType = "REFUND_SUCCEEDED"
	ProviderEventCheckoutCompleted ProviderEventType = "CHECKOUT_COMPLETED"
	ProviderEventDisputeOpened     ProviderEventType = "DISPUTE_OPENED"
	// ProviderEventDisputeClosed: a dispute ended; DisputeStatus says how
	// (WON or LOST, or another of the provider's closing states).
	ProviderEventDisputeClosed ProviderEventType = "DISPUTE_CLOSED"
	// ProviderEventPaymentMethodSaved: a set-up page was completed (Stripe:
	// checkout.session.completed in setup mode, setup_intent.succeeded).
	ProviderEventPaymentMethodSaved ProviderEventType = "PAYMENT_METHOD_SAVED"
	ProviderEventOther              ProviderEventType = "OTHER"
)

// ProviderEvent is an inbound provider event, verified and parsed by the
// adapter.
type ProviderEvent struct {
	// ID is the provider's event id: an event is handled once.
	ID string
	// Type says what the event is.
	Type ProviderEventType
	// RawType is the provider's own name ("payment_intent.succeeded").
	RawType string
	// InvoiceID is billingd's invoice the event is about (the
	// PaymentIntent's metadata.invoice_id), when it has one.
	InvoiceID string
	// CustomerID is billingd's customer (metadata.customer_id), when known.
	CustomerID string
	// PaymentRef is the provider payment (PaymentIntent id).
	PaymentRef string
	// Amount and Currency: the amount received, refunded or disputed.
	Amount Decimal
	// Currency is the currency of the amount.
	Currency Currency
	// CustomerRef and PaymentMethod: the provider customer and, for a
	// completed set-up, the payment method saved.
	CustomerRef, PaymentMethod string
	// RefundRef is the provider refund (REFUND_SUCCEEDED), and
	// CreditNoteID the credit note that asked for it (its metadata).
	RefundRef, CreditNoteID string
	// SetupRef is the provider's set-up of a payment method (a completed
	// set-up page).
	SetupRef string
	// FailureMessage says why a payment failed.
	FailureMessage string
	// DisputeRef is the provider's dispute (DISPUTE_OPENED, DISPUTE_CLOSED).
	DisputeRef string
	// DisputeStatus is the dispute's state in upper case (WON, LOST,
	// NEEDS_RESPONSE, ...).
	DisputeStatus string
	// Created is when the provider made the event.
	Created time.Time
}

// MinorUnitsOf returns amount as an integer count of 10^-exp units (the
// provider's minor units: 1234 cents for 12.34 USD at exp 2), or false when
// amount has more digits than exp or does not fit an int64. No float is
// involved.
func MinorUnitsOf(amount Decimal, exp int32) (int64, bool) {
	scaled := amount.Mul(DecimalFromInt(1).scaleBy(exp))
	if !scaled.IsInteger() {
		return 0, false
	}
	return scaled.Int64()
}

// FromMinorUnits is the inverse of MinorUnitsOf: n units of 10^-exp.
func FromMinorUnits(n int64, exp int32) Decimal {
	d := DecimalFromInt(n)
	d.d.Exponent -= exp
	return d
}

// scaleBy returns d × 10^exp.
func (d Decimal) scaleBy(exp int32) Decimal {
	var r Decimal
	r.d.Set(&d.d)
	r.d.Exponent += exp
	return r
}
