package billing

import (
	"context"
	"errors"
	"net/http"
	"time"
)

// ProviderEventResult says what HandleProviderWebhook did with an event.
type ProviderEventResult struct {
	// EventID is the provider's event id.
	EventID string `json:"eventId"`
	// Type says what the event is.
	Type ProviderEventType `json:"type"`
	// Replay: the event was handled before; nothing changed.
	Replay bool `json:"replay"`
}

// HandleProviderWebhook verifies and handles an inbound webhook of the
// account's provider (POST /webhooks/stripe/{accountId}): the signature is
// checked with the account's signing secret (a bad or missing one is
// validation_failed naming the header, and changes nothing); the event is
// recorded by id in the transaction that handles it, so a replay changes
// nothing. Payment succeeded records the payment (once per provider
// payment, whichever of the charge's answer and the webhook comes first);
// payment failed fails a pending attempt (retries follow); a completed
// payment method set-up makes the method the customer's default
// (paymentMethodSaved; the provider is asked which method only when the
// event does not say, and told the new default after); disputes are noted,
// and a lost one takes its payment back (handleDispute); other events are
// acknowledged. A replay asks nothing of the provider. Returns not_found
// for an account without a provider, unavailable when the provider cannot
// say which method a set-up saved.
func (s *Service) HandleProviderWebhook(ctx context.Context, account string, payload []byte, header http.Header) (*ProviderEventResult, error) {
	gw, _, err := s.openGateway(ctx, account)
	if err != nil {
		if CodeOf(err) == CodeInvalidState {
			return nil, Errorf(CodeNotFound, "no payment provider is configured for account %s", account)
		}
		return nil, err
	}
	ev, err := gw.ParseEvent(payload, header)
	if err != nil {
		return nil, err
	}
	res := &ProviderEventResult{EventID: ev.ID, Type: ev.Type}
	seen, err := read(ctx, s, func(tx Tx) (bool, error) { return exists(ctx, tx, tableProviderEvents, key(account, ev.ID)) })
	if err != nil || seen {
		res.Replay = seen
		return res, err // a replay asks nothing of the provider either
	}
	if ev.Type == ProviderEventPaymentMethodSaved && ev.PaymentMethod == "" && ev.SetupRef != "" {
		custRef, pm, err := gw.SetupPaymentMethod(ctx, ev.SetupRef)
		if err != nil { // the provider sends the event again
			return nil, &Error{Code: CodeUnavailable, Message: "the provider did not say which payment method the set-up saved: " + err.Error()}
		}
		ev.PaymentMethod = pm
		if ev.CustomerRef == "" {
			ev.CustomerRef = custRef
		}
	}
	now := s.clock()
	var custRef, pm string
	err = s.store.Update(ctx, func(tx Tx) error {
		res.Replay, custRef, pm = false, "", ""
		err := tx.Insert(ctx, tableProviderEvents, key(account, ev.ID), []byte(FormatTimestamp(now)))
		if errors.Is(err, ErrConflict) {
			res.Replay = true
			return nil
		}
		if err != nil {
			return err
		}
		if ev.Type == ProviderEventPaymentMethodSaved {
			custRef, pm, err = s.paymentMethodSaved(ctx, tx, account, ev, now)
			return err
		}
		return s.handleEvent(ctx, tx, account, ev, now)
	})
	if err == nil && pm != "" && custRef != "" {
		// The provider customer's default follows, so that the provider's
		// dashboard agrees; billingd charges the method it recorded either way.
		if err := gw.SetDefaultPaymentMethod(ctx, custRef, pm); err != nil {
			s.log.Warn("the provider customer's default payment method was not updated", "account", account, "err", err)
		}
	}
	return res, err
}

func (s *Service) handleEvent(ctx context.Context, tx Tx, account string, ev *ProviderEvent, now time.Time) error {
	if ev.InvoiceID == "" && ev.PaymentRef != "" {
		// A dispute names the payment only: the payment names the invoice.
		inv, err := tx.Get(ctx, tableProviderPayment, key(account, ev.PaymentRef))
		if err != nil && !errors.Is(err, ErrNotFound) {
			return err
		}
		ev.InvoiceID = string(inv)
	}
	if ev.InvoiceID == "" {
		return nil
	}
	c, err := findRecord[collectionRecord](ctx, tx, tableCollections, key(account, ev.InvoiceID))
	if err != nil {
		return err
	}
	if c == nil {
		// An invoice issued before the provider was configured, paid
		// through a link made elsewhere: its collection starts now.
		r, err := loadDoc(ctx, tx, invoiceKind, account, ev.InvoiceID)
		if errors.Is(err, ErrNotFound) || CodeOf(err) == CodeNotFound {
			s.log.Warn("provider event for an unknown invoice ignored", "account", account, "event", ev.ID)
			return nil
		}
		if err != nil {
			return err
		}
		c = &collectionRecord{InvoiceCollection: InvoiceCollection{InvoiceID: r.ID, ServiceAccountID: account,
			Method: SendInvoice, Provider: PaymentProviderStripe, Attempts: []CollectionAttempt{}}, CustomerID: r.CustomerID}
	}
	switch ev.Type {
	case ProviderEventPaymentSucceeded:
		if ev.Currency != "" && ev.Amount.Sign() > 0 {
			return s.providerPaid(ctx, tx, c, ev.PaymentRef, ev.Amount, now)
		}
	case ProviderEventPaymentFailed:
		// Only a pending attempt of this payment fails here; a failure the
		// charge's answer reported, or one after the payment succeeded
		// (out of order), changes nothing.
		for i, a := range c.Attempts {
			if a.Reference == ev.PaymentRef && a.Status == ChargePending && c.DunningStatus != DunningCompleted {
				c.Attempts[i].Status, c.Attempts[i].FailureMessage = ChargeFailed, ev.FailureMessage
				return s.chargeFailed(ctx, tx, c, ev.FailureMessage, now)
			}
		}
	case ProviderEventDisputeOpened, ProviderEventDisputeClosed:
		return s.handleDispute(ctx, tx, c, ev, now)
	}
	return nil
}
