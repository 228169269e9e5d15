package stripe

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	stripe "github.com/stripe/stripe-go/v82"
	"github.com/stripe/stripe-go/v82/webhook"

	"github.com/billingd/billing"
)

// SignatureHeader is the header Stripe signs its webhooks in.
const SignatureHeader = "Stripe-Signature"

// ParseEvent verifies the Stripe-Signature of a webhook with the account's
// signing secret (stripe-go's webhook package, with its timestamp
// tolerance; events of any API version are accepted) and maps the event.
func (g *gateway) ParseEvent(payload []byte, header http.Header) (*billing.ProviderEvent, error) {
	sig := header.Get(SignatureHeader)
	if sig == "" {
		return nil, billing.FieldError(SignatureHeader, "the %s header is missing", SignatureHeader)
	}
	ev, err := webhook.ConstructEventWithOptions(payload, sig, g.webhookSecret, webhook.ConstructEventOptions{
		Tolerance: g.opts.WebhookTolerance, IgnoreAPIVersionMismatch: true,
	})
	if err != nil {
		return nil, billing.FieldError(SignatureHeader, "the webhook's signature does not verify: %v", err)
	}
	return mapEvent(&ev)
}

// object is the part of an event's object billingd reads.
type object struct {
	ID             string            `json:"id"`
	Object         string            `json:"object"`
	Amount         int64             `json:"amount"`
	AmountReceived int64             `json:"amount_received"`
	Currency       string            `json:"currency"`
	Customer       json.RawMessage   `json:"customer"`
	Metadata       map[string]string `json:"metadata"`
	PaymentIntent  json.RawMessage   `json:"payment_intent"`
	SetupIntent    json.RawMessage   `json:"setup_intent"`
	PaymentMethod  json.RawMessage   `json:"payment_method"`
	Status         string            `json:"status"`
	Mode           string            `json:"mode"`
	LastError      *struct {
		Message string `json:"message"`
	} `json:"last_payment_error"`
	Refunds *struct {
		Data []object `json:"data"`
	} `json:"refunds"`
}

// ref reads an expandable field: an id, or an object with one.
func ref(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var o struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(raw, &o)
	return o.ID
}

func mapEvent(ev *stripe.Event) (*billing.ProviderEvent, error) {
	out := &billing.ProviderEvent{ID: ev.ID, RawType: string(ev.Type), Type: billing.ProviderEventOther,
		Created: time.Unix(ev.Created, 0).UTC()}
	if ev.Data == nil {
		return out, nil
	}
	var o object
	if err := json.Unmarshal(ev.Data.Raw, &o); err != nil {
		return nil, billing.FieldError("data.object", "the event's object does not decode: %v", err)
	}
	cur := billing.Currency(strings.ToUpper(o.Currency))
	out.InvoiceID, out.CustomerID = o.Metadata["invoice_id"], o.Metadata["customer_id"]
	out.CustomerRef, out.Currency = ref(o.Customer), cur
	switch ev.Type {
	case "payment_intent.succeeded":
		out.Type, out.PaymentRef, out.Amount = billing.ProviderEventPaymentSucceeded, o.ID, FromMinorUnits(o.AmountReceived, cur)
	case "payment_intent.payment_failed":
		out.Type, out.PaymentRef = billing.ProviderEventPaymentFailed, o.ID
		if o.LastError != nil {
			out.FailureMessage = o.LastError.Message
		}
	case "charge.refunded", "refund.created", "refund.updated":
		out.Type, out.PaymentRef = billing.ProviderEventRefundSucceeded, ref(o.PaymentIntent)
		out.RefundRef, out.Amount = o.ID, FromMinorUnits(o.Amount, cur)
		out.CreditNoteID = o.Metadata["credit_note_id"]
		if o.Object == "charge" && o.Refunds != nil && len(o.Refunds.Data) > 0 {
			r := o.Refunds.Data[0]
			out.RefundRef, out.Amount, out.CreditNoteID = r.ID, FromMinorUnits(r.Amount, cur), r.Metadata["credit_note_id"]
		}
	case "checkout.session.completed":
		out.Type, out.PaymentRef = billing.ProviderEventCheckoutCompleted, ref(o.PaymentIntent)
		out.SetupRef = ref(o.SetupIntent)
		if o.Mode == "setup" {
			out.Type = billing.ProviderEventPaymentMethodSaved
		}
	case "setup_intent.succeeded":
		out.Type, out.SetupRef, out.PaymentMethod = billing.ProviderEventPaymentMethodSaved, o.ID, ref(o.PaymentMethod)
	case "charge.dispute.created", "charge.dispute.closed":
		out.Type, out.PaymentRef, out.Amount = billing.ProviderEventDisputeOpened, ref(o.PaymentIntent), FromMinorUnits(o.Amount, cur)
		out.DisputeRef, out.DisputeStatus = o.ID, strings.ToUpper(o.Status)
		if ev.Type == "charge.dispute.closed" {
			out.Type = billing.ProviderEventDisputeClosed
		}
	}
	return out, nil
}
