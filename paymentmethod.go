package billing

import (
	"context"
	"time"
)

// This file is the customer's saved payment method: the hosted set-up page
// (POST /customers/{id}/payment-method-setup), and what billingd does when
// the provider says a set-up completed. docs/payments.md is the guide.

// ensureProviderCustomer creates the provider customer of a billingd
// customer (idempotently) and links it in the customer's payment settings.
func (s *Service) ensureProviderCustomer(ctx context.Context, gw PaymentGateway, account string, c *Customer) (string, error) {
	email := ""
	if len(c.Contacts) > 0 {
		email = c.Contacts[0].Email
	}
	ref, err := gw.CreateCustomer(ctx, ProviderCustomerParams{CustomerID: c.ID, Name: c.LegalName, Email: email,
		IdempotencyKey: "billingd/customer/" + c.ID})
	if err != nil {
		return "", err
	}
	now, id := s.clock(), s.newID()
	err = s.store.Update(ctx, func(tx Tx) error {
		t, err := s.targetFor(ctx, tx, account, targetCustomer, c.ID)
		if err != nil {
			return err
		}
		if t == nil {
			t = &paymentTarget{Kind: targetCustomer, ID: id, ServiceAccountID: account, TargetID: c.ID, CreatedAt: now}
			if err := tx.Put(ctx, tablePaymentTargetIndex, key(account, string(targetCustomer), c.ID), []byte(id)); err != nil {
				return err
			}
		}
		if t.ProviderCustomerID != "" {
			ref = t.ProviderCustomerID
			return nil
		}
		t.PaymentProvider, t.ProviderCustomerID, t.UpdatedAt = PaymentProviderStripe, ref, now
		return putRecord(ctx, tx, tablePaymentTargets, key(account, t.ID), t)
	})
	return ref, err
}

// PaymentMethodSetupParams say where the set-up page sends the customer
// back; both optional.
type PaymentMethodSetupParams struct {
	// SuccessURL is where the page sends the customer after saving; empty: the adapter's return URL.
	SuccessURL string `json:"successUrl"`
	// CancelURL is where the page sends a customer who gives up; empty: none.
	CancelURL string `json:"cancelUrl"`
}

// PaymentMethodSetup answers a hosted page at the account's provider where
// the customer saves a payment method for automatic charges (POST
// /customers/{id}/payment-method-setup); the provider customer is created
// on the way when the customer has none. Returns not_found, and
// invalid_state without a provider.
func (s *Service) PaymentMethodSetup(ctx context.Context, account, customerID string, p PaymentMethodSetupParams) (*HostedPage, error) {
	var v validator
	s.checkString(&v, "successUrl", p.SuccessURL, false)
	s.checkString(&v, "cancelUrl", p.CancelURL, false)
	if err := v.err(); err != nil {
		return nil, err
	}
	var c *Customer
	var t *paymentTarget
	err := s.view(ctx, func(tx Tx) error {
		var err error
		if c, err = getOwned[Customer](ctx, tx, tableCustomers, account, customerID, "customer"); err != nil {
			return err
		}
		t, err = s.targetFor(ctx, tx, account, targetCustomer, customerID)
		return err
	})
	if err != nil {
		return nil, err
	}
	gw, _, err := s.openGateway(ctx, account)
	if err != nil {
		return nil, err
	}
	ref := ""
	if t != nil {
		ref = t.ProviderCustomerID
	}
	if ref == "" {
		if ref, err = s.ensureProviderCustomer(ctx, gw, account, c); err != nil {
			return nil, err
		}
	}
	return gw.SetupPage(ctx, SetupPageRequest{CustomerID: c.ID, CustomerRef: ref, Currency: CurrencyUSD, SuccessURL: p.SuccessURL, CancelURL: p.CancelURL})
}

// paymentMethodSaved records the payment method a completed set-up saved
// as the customer's default for automatic charges (in its payment
// settings), unless the customer saved another one since (events may come
// out of order). It returns the provider customer and the method when the
// default changed, for the caller to tell the provider; empty otherwise.
func (s *Service) paymentMethodSaved(ctx context.Context, tx Tx, account string, ev *ProviderEvent, now time.Time) (string, string, error) {
	t, err := s.eventCustomerTarget(ctx, tx, account, ev)
	if err != nil || t == nil || ev.PaymentMethod == "" {
		if err == nil {
			s.log.Warn("a completed payment method set-up names no known customer or method; ignored", "account", account, "event", ev.ID)
		}
		return "", "", err
	}
	if t.ProviderCustomerID != "" && ev.CustomerRef != "" && ev.CustomerRef != t.ProviderCustomerID {
		s.log.Warn("a payment method set-up of another provider customer; ignored", "account", account, "event", ev.ID)
		return "", "", nil
	}
	at := ev.Created
	if at.IsZero() {
		at = now
	}
	if t.PaymentMethodAt != nil && at.Before(*t.PaymentMethodAt) || t.DefaultPaymentMethod == ev.PaymentMethod {
		return "", "", nil // a later set-up saved another method, or this one is saved already
	}
	if t.ProviderCustomerID == "" {
		t.ProviderCustomerID = ev.CustomerRef
	}
	t.PaymentProvider, t.DefaultPaymentMethod, t.PaymentMethodAt, t.UpdatedAt = PaymentProviderStripe, ev.PaymentMethod, &at, now
	if err := putRecord(ctx, tx, tablePaymentTargets, key(account, t.ID), t); err != nil {
		return "", "", err
	}
	return t.ProviderCustomerID, t.DefaultPaymentMethod, nil
}

// eventCustomerTarget finds the payment settings of the customer an event
// is about: by billingd's customer id (metadata.customer_id), else by the
// provider customer. Nil when none matches.
func (s *Service) eventCustomerTarget(ctx context.Context, tx Tx, account string, ev *ProviderEvent) (*paymentTarget, error) {
	if ev.CustomerID != "" {
		if t, err := s.targetFor(ctx, tx, account, targetCustomer, ev.CustomerID); err != nil || t != nil {
			return t, err
		}
	}
	if ev.CustomerRef == "" {
		return nil, nil
	}
	ts, err := scanRecords[paymentTarget](ctx, tx, tablePaymentTargets, Range{Prefix: prefix(account)})
	if err != nil {
		return nil, err
	}
	for i := range ts {
		if ts[i].Kind == targetCustomer && ts[i].ProviderCustomerID == ev.CustomerRef {
			return &ts[i], nil
		}
	}
	return nil, nil
}
