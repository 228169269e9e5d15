package billing

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// NotificationType names a kind of notification (the spec's Events).
type NotificationType string

// The notification types of the specification.
const (
	NotificationCustomerCreated           NotificationType = "CUSTOMER_CREATED"
	NotificationCustomerUpdated           NotificationType = "CUSTOMER_UPDATED"
	NotificationCustomerArchived          NotificationType = "CUSTOMER_ARCHIVED"
	NotificationInvoiceCreated            NotificationType = "INVOICE_CREATED"
	NotificationInvoiceIssued             NotificationType = "INVOICE_ISSUED"
	NotificationInvoiceUpdated            NotificationType = "INVOICE_UPDATED"
	NotificationIntegrationSyncCompleted  NotificationType = "INTEGRATION_SYNC_COMPLETED"
	NotificationIntegrationWebhookHandled NotificationType = "INTEGRATION_WEBHOOK_HANDLED"
	NotificationMerchantUpdated           NotificationType = "MERCHANT_UPDATED"
	NotificationBillingScheduleCreated    NotificationType = "BILLING_SCHEDULE_CREATED"
	NotificationBillingScheduleUpdated    NotificationType = "BILLING_SCHEDULE_UPDATED"
	NotificationBillingScheduleArchived   NotificationType = "BILLING_SCHEDULE_ARCHIVED"
	NotificationCreditNoteCreated         NotificationType = "CREDIT_NOTE_CREATED"
	NotificationCreditNoteUpdated         NotificationType = "CREDIT_NOTE_UPDATED"
	NotificationCreditNoteIssued          NotificationType = "CREDIT_NOTE_ISSUED"
	NotificationQuotePublished            NotificationType = "QUOTE_PUBLISHED"
	NotificationQuoteAccepted             NotificationType = "QUOTE_ACCEPTED"
)

// The notification types of credit grants, beyond the specification's
// list: a grant created (POST /credits, or a credit note that generates
// one), consumed (by an invoice's finalization, once per grant used) and
// expired (by the billing run).
const (
	NotificationCreditGrantCreated  NotificationType = "CREDIT_GRANT_CREATED"
	NotificationCreditGrantConsumed NotificationType = "CREDIT_GRANT_CONSUMED"
	NotificationCreditGrantExpired  NotificationType = "CREDIT_GRANT_EXPIRED"
)

// Email is an e-mail queued through the outbox: plain text, with the
// JSON payload attached for machines.
type Email struct {
	To      []string `json:"to"`
	Subject string   `json:"subject"`
	Text    string   `json:"text"`
	JSON    []byte   `json:"json,omitempty"` // attached as a .json file; may be nil
}

// Notification is the payload of every webhook and the attachment of every
// notification e-mail.
type Notification struct {
	ID               string           `json:"id"`
	Type             NotificationType `json:"type"`
	CreatedAt        time.Time        `json:"createdAt"`
	ServiceAccountID string           `json:"serviceAccountId"`
	// Data is the resource exactly as its GET returns it.
	Data json.RawMessage `json:"data"`
}

// emit is the one emission point: it records the notification typ about
// data (the resource exactly as its GET returns it) in the outbox of
// account, inside tx, with one delivery per matching policy recipient. An
// operation calls it once, after its change, in the same transaction, so the
// notification commits or rolls back with the change. When no policy
// matches, nothing is recorded.
func (s *Service) emit(ctx context.Context, tx Tx, account string, typ NotificationType, data any) error {
	var policies []*policyRecord
	err := tx.Scan(ctx, tableNotificationPolicies, Range{Prefix: prefix(account)}, func(_, v []byte) error {
		var p policyRecord
		if err := json.Unmarshal(v, &p); err != nil {
			return err
		}
		if p.Matches(typ) {
			policies = append(policies, &p)
		}
		return nil
	})
	if err != nil || len(policies) == 0 {
		return err
	}
	raw, err := json.Marshal(data)
	if err != nil {
		return fmt.Errorf("encoding the %s notification: %w", typ, err)
	}
	now := s.clock()
	n := Notification{ID: s.newID(), Type: typ, CreatedAt: now, ServiceAccountID: account, Data: raw}
	payload, err := json.Marshal(n)
	if err != nil {
		return err
	}
	for _, p := range policies {
		for _, r := range p.Recipients {
			d := &deliveryRecord{Delivery: Delivery{
				ServiceAccountID: account, NotificationID: n.ID, NotificationType: typ,
				PolicyID: p.ID, Channel: p.Channel, Recipients: []string{r},
			}, Payload: payload}
			if p.Channel == ChannelEmail {
				d.Email = notificationEmail(&n, r)
			}
			if err := s.enqueue(ctx, tx, d, now); err != nil {
				return err
			}
		}
	}
	return nil
}

// queueEmail records e in the outbox of account inside tx (the e-mails of
// invoice and credit note sending); the dispatcher sends it after commit,
// as one delivery to all of e.To.
func (s *Service) queueEmail(ctx context.Context, tx Tx, account string, e Email) error {
	if len(e.To) == 0 {
		return nil
	}
	d := &deliveryRecord{Delivery: Delivery{
		ServiceAccountID: account, Channel: ChannelEmail, Recipients: append([]string(nil), e.To...),
	}, Email: &e}
	return s.enqueue(ctx, tx, d, s.clock())
}

// notificationEmail is the e-mail of a notification for an EMAIL policy
// recipient: the key facts of the resource in plain text, and the payload
// attached.
func notificationEmail(n *Notification, to string) *Email {
	var b strings.Builder
	fmt.Fprintf(&b, "Notification %s\n\n", n.Type)
	fmt.Fprintf(&b, "Notification id: %s\nAccount: %s\nCreated at: %s\n", n.ID, n.ServiceAccountID, FormatTimestamp(n.CreatedAt))
	var fields map[string]json.RawMessage
	if json.Unmarshal(n.Data, &fields) == nil {
		for _, f := range keyFacts {
			var v string
			if raw, ok := fields[f.field]; ok && json.Unmarshal(raw, &v) == nil && v != "" {
				fmt.Fprintf(&b, "%s: %s\n", f.label, v)
			}
		}
	}
	b.WriteString("\nThe notification is attached as JSON.\n")
	return &Email{To: []string{to}, Subject: "billingd: " + string(n.Type), Text: b.String()}
}

// keyFacts are the fields of a resource a notification e-mail shows.
var keyFacts = []struct{ field, label string }{
	{"id", "Resource id"}, {"legalName", "Legal name"}, {"number", "Number"},
	{"invoiceNumber", "Invoice number"}, {"creditNoteNumber", "Credit note number"},
	{"status", "Status"}, {"currency", "Currency"}, {"netTotal", "Net total"},
	{"totalTax", "Total tax"}, {"grossTotal", "Gross total"}, {"dueDate", "Due date"},
}
