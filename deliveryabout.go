package billing

import (
	"context"
	"encoding/json"
	"strings"
)

// DeliveryAbout is what a delivery is about, so that a person can open it:
// the resource its notification carries (an invoice for INVOICE_ISSUED, a
// customer for CUSTOMER_UPDATED, ...) or the document its e-mail sends.
type DeliveryAbout struct {
	// Kind is INVOICE, CREDIT_NOTE, CUSTOMER, BILLING_SCHEDULE or
	// CREDIT_GRANT (the prefix of the notification's type).
	Kind string `json:"kind"`
	// ID is the resource's id.
	ID string `json:"id"`
	// CustomerID is the customer of the resource, when it has one.
	CustomerID string `json:"customerId,omitempty"`
}

// aboutKinds are the kinds of resource a delivery may be about, by the
// prefix of their notification types.
var aboutKinds = []string{"INVOICE", "CREDIT_NOTE", "CUSTOMER", "BILLING_SCHEDULE", "CREDIT_GRANT"}

// DeliveriesAbout returns what each of the account's deliveries ids is
// about, by delivery id, read in one transaction; a delivery about nothing
// a person opens (or not found) has no entry. The console links its
// deliveries with it.
func (s *Service) DeliveriesAbout(ctx context.Context, account string, ids []string) (map[string]DeliveryAbout, error) {
	out := make(map[string]DeliveryAbout, len(ids))
	err := s.view(ctx, func(tx Tx) error {
		for _, id := range ids {
			d, err := getRecord[deliveryRecord](ctx, tx, tableDeliveries, key(account, id))
			if err != nil {
				if CodeOf(err) == CodeNotFound {
					continue
				}
				return err
			}
			if a, ok := d.about(); ok {
				out[id] = a
			}
		}
		return nil
	})
	if err != nil {
		return nil, internal(err)
	}
	return out, nil
}

// about is what d is about: the document of a document e-mail, or the
// resource of its notification.
func (d *deliveryRecord) about() (DeliveryAbout, bool) {
	if d.Email != nil && d.Email.Document != nil {
		return DeliveryAbout{Kind: string(d.Email.Document.Kind), ID: d.Email.Document.ID}, true
	}
	var n struct {
		Type NotificationType `json:"type"`
		Data struct {
			ID         string `json:"id"`
			CustomerID string `json:"customerId"`
		} `json:"data"`
	}
	if len(d.Payload) == 0 || json.Unmarshal(d.Payload, &n) != nil || n.Data.ID == "" {
		return DeliveryAbout{}, false
	}
	for _, k := range aboutKinds {
		if strings.HasPrefix(string(n.Type), k+"_") {
			return DeliveryAbout{Kind: k, ID: n.Data.ID, CustomerID: n.Data.CustomerID}, true
		}
	}
	return DeliveryAbout{}, false
}
