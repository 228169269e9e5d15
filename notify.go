package billing

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"net/textproto"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/billingd/billing/internal/iprange"
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

// Mailer sends e-mails for the Dispatcher. An error makes the delivery
// retry on the webhook schedule.
type Mailer interface {
	Send(ctx context.Context, e Email) error
}

// Email is an e-mail: plain text (and an HTML alternative), with the JSON
// payload attached for machines (notification e-mails) or files attached
// for people (a document's PDF). The outbox queues the e-mails of
// notifications and documents without words, as references (a
// notification delivery's NotificationID, Document): package render writes
// their subject and text when the Dispatcher sends them.
type Email struct {
	// To are the recipients' addresses.
	To []string `json:"to"`
	// Subject is the subject line, plain text. Empty in a queued e-mail of
	// a notification or a document: the edge writes it when sending.
	Subject string `json:"subject"`
	// Text is the plain-text body; empty when Subject is.
	Text string `json:"text"`
	// HTML, when set, is an alternative body to Text.
	HTML string `json:"html,omitempty"`
	// JSON is attached as notification.json; may be nil.
	JSON []byte `json:"json,omitempty"`
	// Attachments are files attached after the body.
	Attachments []Attachment `json:"attachments,omitempty"`
	// Document names the invoice or credit note the e-mail is about. The
	// Dispatcher's DocumentRenderer turns it, when the e-mail is sent,
	// into the message and its PDF; without one it goes as
	// render.SummaryEmail, a plain-text summary.
	Document *DocumentRef `json:"document,omitempty"`
	// Payment, when set, is what a payment e-mail to the customer is
	// about (a failed charge, a reminder); package render writes its words
	// when it is sent.
	Payment *PaymentNotice `json:"payment,omitempty"`
}

// PaymentNoticeKind says which payment e-mail a PaymentNotice is.
type PaymentNoticeKind string

// The payment e-mails billingd sends customers.
const (
	// PaymentNoticeFailed: a charge of the customer's saved payment method failed.
	PaymentNoticeFailed PaymentNoticeKind = "PAYMENT_FAILED"
	// PaymentNoticeReminder: a reminder of an unpaid invoice.
	PaymentNoticeReminder PaymentNoticeKind = "PAYMENT_REMINDER"
)

// PaymentNotice holds the facts of a payment e-mail, as they were when it
// was queued; the words are package render's (render.PaymentEmail).
type PaymentNotice struct {
	// Kind says which e-mail this is.
	Kind PaymentNoticeKind `json:"kind"`
	// InvoiceNumber is the invoice's number.
	InvoiceNumber string `json:"invoiceNumber"`
	// IssueDate is the invoice's issue date.
	IssueDate Date `json:"issueDate"`
	// DueDate is when the invoice is due.
	DueDate Date `json:"dueDate"`
	// AmountDue is what remains to be paid, in Currency.
	AmountDue Decimal `json:"amountDue"`
	// Currency is the invoice's currency.
	Currency Currency `json:"currency"`
	// Failure is the provider's reason a charge failed (PAYMENT_FAILED).
	Failure string `json:"failure,omitempty"`
	// NextAttempt is the day of the next charge, if one is scheduled
	// (PAYMENT_FAILED).
	NextAttempt *Date `json:"nextAttempt,omitempty"`
	// PaymentLink is where the customer can pay online (PAYMENT_REMINDER).
	PaymentLink string `json:"paymentLink,omitempty"`
}

// Attachment is a file attached to an e-mail.
type Attachment struct {
	// Filename is the name the file is attached under ("INV00001.pdf").
	Filename string `json:"filename"`
	// ContentType is the file's media type ("application/pdf").
	ContentType string `json:"contentType"`
	// Data is the file's content.
	Data []byte `json:"data"`
}

// DocumentRef names an invoice or a credit note of the e-mail's account.
type DocumentRef struct {
	// Kind is INVOICE or CREDIT_NOTE.
	Kind DocumentKind `json:"kind"`
	ID   string       `json:"id"`
}

// Notification is the payload of every webhook and the attachment of every
// notification e-mail.
type Notification struct {
	ID string `json:"id"`
	// Type says what happened (INVOICE_CREATED, ...) and so what Data holds.
	Type      NotificationType `json:"type"`
	CreatedAt time.Time        `json:"createdAt"`
	// ServiceAccountID is the account the notification is about.
	ServiceAccountID string `json:"serviceAccountId"`
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
	err := eachRecord(ctx, tx, tableNotificationPolicies, Range{Prefix: prefix(account)}, func(p *policyRecord) error {
		if p.Matches(typ) {
			policies = append(policies, p)
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
				d.Email = &Email{To: []string{r}} // render.NotificationEmail writes it
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

// documentEmail is the e-mail of a sent invoice or credit note, as
// queued: its recipients and the document it carries. The words, and the
// PDF, are the edge's (package render), written when the Dispatcher sends
// it from the document as stored then. No JSON goes to an end customer.
func documentEmail(to []string, kind DocumentKind, id string) Email {
	return Email{To: slices.Clone(to), Document: &DocumentRef{Kind: kind, ID: id}}
}

// Channel is how a notification policy delivers: WEBHOOK or EMAIL.
type Channel string

// The channels.
const (
	ChannelWebhook Channel = "WEBHOOK"
	ChannelEmail   Channel = "EMAIL"
)

// maxPolicyRecipients bounds the recipients of one policy (docs/api-guide.md).
const maxPolicyRecipients = 100

// maxWebhookURLLength bounds a webhook recipient URL.
const maxWebhookURLLength = 2048

// secretOverlap is how long a rotated-out webhook secret still signs.
const secretOverlap = 24 * time.Hour

// webhookSecretPrefix starts every webhook secret (Standard Webhooks).
const webhookSecretPrefix = "whsec_"

// NotificationTypes returns the notification types: the specification's, in
// the order of its Events section, then those of credit grants.
func NotificationTypes() []NotificationType {
	return []NotificationType{
		NotificationCustomerCreated, NotificationCustomerUpdated, NotificationCustomerArchived,
		NotificationInvoiceCreated, NotificationInvoiceIssued, NotificationInvoiceUpdated,
		NotificationIntegrationSyncCompleted, NotificationIntegrationWebhookHandled,
		NotificationMerchantUpdated,
		NotificationBillingScheduleCreated, NotificationBillingScheduleUpdated, NotificationBillingScheduleArchived,
		NotificationCreditNoteCreated, NotificationCreditNoteUpdated, NotificationCreditNoteIssued,
		NotificationQuotePublished, NotificationQuoteAccepted,
		NotificationCreditGrantCreated, NotificationCreditGrantConsumed, NotificationCreditGrantExpired,
		NotificationPaymentSucceeded, NotificationPaymentFailed, NotificationInvoiceOverdue, NotificationPaymentReminderSent,
		NotificationPaymentDisputeOpened, NotificationPaymentDisputeWon, NotificationPaymentDisputeLost,
		NotificationUsageThresholdReached, NotificationSpendThresholdReached,
	}
}

// Valid reports whether t is one of the notification types.
func (t NotificationType) Valid() bool { return slices.Contains(NotificationTypes(), t) }

// notificationTypeList is the valid notification types for messages:
// "INVOICE_CREATED, INVOICE_ISSUED, ...".
func notificationTypeList() string {
	names := make([]string, 0, len(NotificationTypes()))
	for _, t := range NotificationTypes() {
		names = append(names, string(t))
	}
	return strings.Join(names, ", ")
}

// NotificationPolicy says where the notifications of an account go: to the
// webhook URLs or e-mail addresses of Recipients, for the types listed in
// NotificationTypes (every type when it is empty).
type NotificationPolicy struct {
	ID        string    `json:"id"`
	CreatedAt time.Time `json:"createdAt"`
	// ServiceAccountID is the account that owns the policy.
	ServiceAccountID string `json:"serviceAccountId"`
	Name             string `json:"name"`
	// Recipients are e-mail addresses (EMAIL) or webhook URLs (WEBHOOK), at
	// most 100. Each gets its own delivery.
	Recipients []string `json:"recipients"`
	// Channel is EMAIL or WEBHOOK; it cannot change.
	Channel Channel `json:"channel"`
	// NotificationTypes are the types the policy sends; empty: every type.
	NotificationTypes []NotificationType `json:"notificationTypes,omitempty"`
	// WebhookSecret signs the webhooks of a WEBHOOK policy: "whsec_" and
	// the base64 of the key. Empty for EMAIL policies.
	WebhookSecret string `json:"webhookSecret,omitempty"`
}

// Matches reports whether the policy covers notifications of type t.
func (p *NotificationPolicy) Matches(t NotificationType) bool {
	return len(p.NotificationTypes) == 0 || slices.Contains(p.NotificationTypes, t)
}

// policyRecord is a stored policy: the policy and the secret it replaced,
// which keeps signing until PreviousSecretUntil.
type policyRecord struct {
	NotificationPolicy
	PreviousSecret      string     `json:"previousSecret,omitempty"`
	PreviousSecretUntil *time.Time `json:"previousSecretUntil,omitempty"`
}

// signingSecrets returns the secrets that sign a webhook sent at now: the
// current one, and the previous one during the overlap after a rotation.
func (r *policyRecord) signingSecrets(now time.Time) []string {
	out := []string{r.WebhookSecret}
	if r.PreviousSecret != "" && r.PreviousSecretUntil != nil && now.Before(*r.PreviousSecretUntil) {
		out = append(out, r.PreviousSecret)
	}
	return out
}

// CreateNotificationPolicyParams are the fields of a new policy. An empty
// NotificationTypes covers every type. WebhookSecret is optional (WEBHOOK
// only): when empty, a secret is generated.
type CreateNotificationPolicyParams struct {
	Name string `json:"name"`
	// Channel is EMAIL or WEBHOOK; required.
	Channel Channel `json:"channel"`
	// Recipients are e-mail addresses (EMAIL) or webhook URLs (WEBHOOK);
	// required, at most 100.
	Recipients []string `json:"recipients"`
	// NotificationTypes are the types to send; empty: every type.
	NotificationTypes []NotificationType `json:"notificationTypes"`
	// WebhookSecret ("whsec_" and base64) signs a WEBHOOK policy's
	// webhooks; empty: one is generated. Refused for EMAIL.
	WebhookSecret string `json:"webhookSecret"`
}

// NotificationPolicyFilter selects policies in ListNotificationPolicies.
type NotificationPolicyFilter struct {
	// NotificationType keeps the policies that cover this type (policies
	// covering every type included). Empty keeps all.
	NotificationType NotificationType
}

// CreateNotificationPolicy creates a policy. Returns validation_failed for
// invalid fields, all at once.
func (s *Service) CreateNotificationPolicy(ctx context.Context, account string, p CreateNotificationPolicyParams) (*NotificationPolicy, error) {
	var v validator
	s.checkString(&v, "name", p.Name, true)
	switch p.Channel {
	case ChannelWebhook, ChannelEmail:
		s.checkRecipients(&v, "recipients", p.Channel, p.Recipients)
		if len(p.Recipients) == 0 {
			v.add("recipients", "recipients must list at least one recipient")
		}
	case "":
		v.add("channel", "channel is required")
	default:
		v.add("channel", "channel must be WEBHOOK or EMAIL")
	}
	checkTypes(&v, "notificationTypes", p.NotificationTypes)
	switch {
	case p.WebhookSecret != "" && p.Channel == ChannelEmail:
		v.add("webhookSecret", "webhookSecret is only for WEBHOOK policies")
	case p.WebhookSecret != "" && !validSecret(p.WebhookSecret):
		v.add("webhookSecret", "webhookSecret must be \"whsec_\" followed by the standard base64 of 24 to 64 bytes")
	}
	if err := v.err(); err != nil {
		return nil, err
	}
	rec := &policyRecord{NotificationPolicy: NotificationPolicy{
		ID: s.newID(), CreatedAt: s.clock(), ServiceAccountID: account, Name: p.Name,
		Channel: p.Channel, Recipients: dedupe(p.Recipients), NotificationTypes: dedupe(p.NotificationTypes),
	}}
	if p.Channel == ChannelWebhook {
		rec.WebhookSecret = p.WebhookSecret
		if rec.WebhookSecret == "" {
			secret, err := s.newWebhookSecret()
			if err != nil {
				return nil, internal(err)
			}
			rec.WebhookSecret = secret
		}
	}
	return mutate(ctx, s, account, func(tx Tx) (*NotificationPolicy, error) {
		return &rec.NotificationPolicy, putRecord(ctx, tx, tableNotificationPolicies, key(account, rec.ID), rec)
	})
}

// GetNotificationPolicy returns a policy (operation 21). Returns not_found.
func (s *Service) GetNotificationPolicy(ctx context.Context, account, id string) (*NotificationPolicy, error) {
	return read(ctx, s, func(tx Tx) (*NotificationPolicy, error) {
		rec, err := s.getPolicy(ctx, tx, account, id)
		if err != nil {
			return nil, err
		}
		return &rec.NotificationPolicy, nil
	})
}

func (s *Service) getPolicy(ctx context.Context, tx Tx, account, id string) (*policyRecord, error) {
	return getOwned[policyRecord](ctx, tx, tableNotificationPolicies, account, id, "notification policy")
}

// ListNotificationPolicies lists the account's policies, newest first.
// Returns validation_failed for an unknown notification type, a bad limit
// or cursor.
func (s *Service) ListNotificationPolicies(ctx context.Context, account string, f NotificationPolicyFilter, p ListParams) (Page[NotificationPolicy], error) {
	if f.NotificationType != "" && !f.NotificationType.Valid() {
		return Page[NotificationPolicy]{}, FieldError("notificationType", "notificationType must be one of %s", notificationTypeList())
	}
	q := listQuery[NotificationPolicy]{
		name: "notification_policies", filter: string(f.NotificationType),
		table: tableNotificationPolicies, prefix: prefix(account), desc: true,
		decode: decodeAll(func(p *NotificationPolicy) bool {
			return f.NotificationType == "" || p.Matches(f.NotificationType)
		}),
	}
	return read(ctx, s, func(tx Tx) (Page[NotificationPolicy], error) { return list(ctx, s, tx, q, p) })
}

// DeleteNotificationPolicy deletes a policy and returns it. Its pending
// deliveries are not sent any more (they fail with a note saying so).
// Returns not_found.
func (s *Service) DeleteNotificationPolicy(ctx context.Context, account, id string) (*NotificationPolicy, error) {
	return mutate(ctx, s, account, func(tx Tx) (*NotificationPolicy, error) {
		rec, err := s.getPolicy(ctx, tx, account, id)
		if err != nil {
			return nil, err
		}
		return &rec.NotificationPolicy, tx.Delete(ctx, tableNotificationPolicies, key(account, id))
	})
}

// AddNotificationPolicyRecipients adds recipients to a policy (operation
// 20) with set semantics: recipients already on the policy are not added
// twice, the original order is kept and new ones are appended. Returns
// not_found, and validation_failed for invalid recipients or more than 100
// in total.
func (s *Service) AddNotificationPolicyRecipients(ctx context.Context, account, id string, recipients []string) (*NotificationPolicy, error) {
	return s.updatePolicy(ctx, account, id, func(rec *policyRecord, _ time.Time) error {
		var v validator
		if len(recipients) == 0 {
			v.add("recipients", "recipients must list at least one recipient")
		}
		s.checkRecipients(&v, "recipients", rec.Channel, recipients)
		if err := v.err(); err != nil {
			return err
		}
		merged := dedupe(append(slices.Clone(rec.Recipients), recipients...))
		if len(merged) > maxPolicyRecipients {
			return FieldError("recipients", "a policy has at most %d recipients; it would have %d", maxPolicyRecipients, len(merged))
		}
		rec.Recipients = merged
		return nil
	})
}

// RemoveNotificationPolicyRecipient removes one recipient from a policy.
// Returns not_found when the policy or the recipient does not exist, and
// invalid_state when it is the policy's last recipient.
func (s *Service) RemoveNotificationPolicyRecipient(ctx context.Context, account, id, recipient string) (*NotificationPolicy, error) {
	return s.updatePolicy(ctx, account, id, func(rec *policyRecord, _ time.Time) error {
		i := slices.Index(rec.Recipients, recipient)
		switch {
		case i < 0:
			return notFound("recipient")
		case len(rec.Recipients) == 1:
			return Errorf(CodeInvalidState, "a policy needs at least one recipient; delete the policy instead")
		}
		rec.Recipients = slices.Delete(slices.Clone(rec.Recipients), i, i+1)
		return nil
	})
}

// AddNotificationPolicyTypes adds notification types to a policy that lists
// types (set semantics). A policy covering every type keeps covering every
// type. Returns not_found, and validation_failed for unknown types.
func (s *Service) AddNotificationPolicyTypes(ctx context.Context, account, id string, types []NotificationType) (*NotificationPolicy, error) {
	var v validator
	if len(types) == 0 {
		v.add("notificationTypes", "notificationTypes must list at least one type")
	}
	checkTypes(&v, "notificationTypes", types)
	if err := v.err(); err != nil {
		return nil, err
	}
	return s.updatePolicy(ctx, account, id, func(rec *policyRecord, _ time.Time) error {
		if len(rec.NotificationTypes) > 0 {
			rec.NotificationTypes = dedupe(append(slices.Clone(rec.NotificationTypes), types...))
		}
		return nil
	})
}

// RemoveNotificationPolicyType stops a policy matching typ. On a policy
// covering every type, the policy then lists every other type. Returns
// validation_failed for an unknown type, not_found when the policy does not
// cover typ, and invalid_state when typ is the last type listed (removing
// it would silently make the policy cover every type).
func (s *Service) RemoveNotificationPolicyType(ctx context.Context, account, id string, typ NotificationType) (*NotificationPolicy, error) {
	if !typ.Valid() {
		return nil, FieldError("type", "%q is not a notification type; the types are %s", typ, notificationTypeList())
	}
	return s.updatePolicy(ctx, account, id, func(rec *policyRecord, _ time.Time) error {
		types := rec.NotificationTypes
		if len(types) == 0 {
			types = NotificationTypes()
		}
		i := slices.Index(types, typ)
		switch {
		case i < 0:
			return Errorf(CodeNotFound, "the policy does not cover %s", typ)
		case len(types) == 1:
			return Errorf(CodeInvalidState, "%s is the policy's last notification type; a policy without types covers every type, so delete the policy instead", typ)
		}
		rec.NotificationTypes = slices.Delete(slices.Clone(types), i, i+1)
		return nil
	})
}

// RotateNotificationPolicySecret gives a WEBHOOK policy a new generated
// secret. For 24 hours webhooks carry signatures with both the old and the
// new secret, then only the new one. Returns not_found, and invalid_state
// for an EMAIL policy.
func (s *Service) RotateNotificationPolicySecret(ctx context.Context, account, id string) (*NotificationPolicy, error) {
	secret, err := s.newWebhookSecret()
	if err != nil {
		return nil, internal(err)
	}
	return s.updatePolicy(ctx, account, id, func(rec *policyRecord, now time.Time) error {
		if rec.Channel != ChannelWebhook {
			return Errorf(CodeInvalidState, "only WEBHOOK policies have a secret")
		}
		until := now.Add(secretOverlap)
		rec.PreviousSecret, rec.PreviousSecretUntil = rec.WebhookSecret, &until
		rec.WebhookSecret = secret
		return nil
	})
}

// updatePolicy is the read-change-write of every policy edit.
func (s *Service) updatePolicy(ctx context.Context, account, id string, change func(*policyRecord, time.Time) error) (*NotificationPolicy, error) {
	now := s.clock()
	return mutate(ctx, s, account, func(tx Tx) (*NotificationPolicy, error) {
		rec, err := s.getPolicy(ctx, tx, account, id)
		if err != nil {
			return nil, err
		}
		if err := change(rec, now); err != nil {
			return nil, err
		}
		return &rec.NotificationPolicy, putRecord(ctx, tx, tableNotificationPolicies, key(account, id), rec)
	})
}

// checkRecipients validates recipients for channel, naming each invalid one
// by its index in the request.
func (s *Service) checkRecipients(v *validator, field string, channel Channel, recipients []string) {
	if len(recipients) > maxPolicyRecipients {
		v.add(field, "a policy has at most %d recipients", maxPolicyRecipients)
	}
	for i, r := range recipients {
		f := fmt.Sprintf("%s[%d]", field, i)
		if channel == ChannelEmail {
			if strings.ContainsAny(r, "<>,;\"()") {
				v.add(f, "%s must be a plain address such as name@example.com, without a display name", f)
			} else {
				checkEmail(v, f, r)
			}
			continue
		}
		if msg := s.checkWebhookURL(r); msg != "" {
			v.add(f, "%s %s", f, msg)
		}
	}
}

// checkWebhookURL returns why u is not an acceptable webhook target, or "".
func (s *Service) checkWebhookURL(u string) string {
	if len(u) > maxWebhookURLLength {
		return fmt.Sprintf("must be at most %d characters", maxWebhookURLLength)
	}
	parsed, err := url.Parse(u)
	switch {
	case err != nil || !parsed.IsAbs() || parsed.Opaque != "":
		return "must be an absolute URL such as https://example.com/webhooks"
	case parsed.Scheme != "https" && !(parsed.Scheme == "http" && s.webhookAllowPrivate):
		if s.webhookAllowPrivate {
			return "must be an https:// or http:// URL"
		}
		return "must be an https:// URL"
	case parsed.Hostname() == "":
		return "must name a host"
	case parsed.User != nil:
		return "must not contain user information"
	case parsed.Fragment != "" || strings.Contains(u, "#"):
		return "must not contain a fragment"
	case strings.ContainsFunc(u, func(r rune) bool { return r <= ' ' || r == 0x7f }):
		return "must not contain spaces or control characters"
	}
	// An IP literal is checked now against the ranges the sender refuses
	// (a name is checked when it is resolved, at every delivery).
	if ip, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(parsed.Hostname(), "["), "]")); err == nil && !s.webhookAllowPrivate {
		if err := iprange.Check(ip.WithZone("")); err != nil {
			return "must not be a loopback, private, link-local, reserved or cloud metadata address (" + ip.String() + ")"
		}
	}
	return ""
}

// checkTypes validates a list of notification types.
func checkTypes(v *validator, field string, types []NotificationType) {
	for i, t := range types {
		if !t.Valid() {
			v.add(fmt.Sprintf("%s[%d]", field, i), "%q is not a notification type; the types are %s", t, notificationTypeList())
		}
	}
}

// validSecret reports whether secret is "whsec_" and the standard base64 of
// 24 to 64 bytes.
func validSecret(secret string) bool {
	k, ok := secretKey(secret)
	return ok && len(k) >= 24 && len(k) <= 64
}

// secretKey returns the HMAC key of a webhook secret.
func secretKey(secret string) ([]byte, bool) {
	enc, ok := strings.CutPrefix(secret, webhookSecretPrefix)
	if !ok {
		return nil, false
	}
	k, err := base64.StdEncoding.DecodeString(enc)
	return k, err == nil && len(k) > 0
}

// newWebhookSecret generates "whsec_" and the base64 of 32 random bytes.
func (s *Service) newWebhookSecret() (string, error) {
	b, err := s.randomBytes(32)
	if err != nil {
		return "", fmt.Errorf("generating a webhook secret: %w", err)
	}
	return webhookSecretPrefix + base64.StdEncoding.EncodeToString(b), nil
}

// dedupe returns vs without repeats, first occurrences kept in order; nil
// for an empty list.
func dedupe[T comparable](vs []T) []T {
	var out []T
	for _, x := range vs {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

// The Standard Webhooks headers of every webhook request.
const (
	HeaderWebhookID        = "webhook-id"
	HeaderWebhookTimestamp = "webhook-timestamp"
	HeaderWebhookSignature = "webhook-signature"
)

// DefaultWebhookTolerance is how far a webhook's timestamp may be from the
// receiver's clock when VerifyWebhook is given no tolerance.
const DefaultWebhookTolerance = 5 * time.Minute

// Errors of VerifyWebhook.
var (
	// ErrWebhookHeaders reports missing or malformed webhook headers.
	ErrWebhookHeaders = errors.New("billing: missing or malformed webhook headers")
	// ErrWebhookTimestamp reports a timestamp outside the tolerance.
	ErrWebhookTimestamp = errors.New("billing: webhook timestamp outside the tolerance")
	// ErrWebhookSignature reports that no signature matches the secret.
	ErrWebhookSignature = errors.New("billing: no webhook signature matches")
	// ErrWebhookSecret reports a secret that is not "whsec_" and base64.
	ErrWebhookSecret = errors.New("billing: malformed webhook secret")
)

// signWebhook returns the webhook-signature header value for a request with
// id, timestamp ts and body: one "v1,<base64 HMAC-SHA256>" per secret,
// space-separated.
func signWebhook(secrets []string, id string, ts int64, body []byte) (string, error) {
	sigs := make([]string, 0, len(secrets))
	for _, secret := range secrets {
		k, ok := secretKey(secret)
		if !ok {
			return "", ErrWebhookSecret
		}
		sigs = append(sigs, "v1,"+base64.StdEncoding.EncodeToString(webhookMAC(k, id, ts, body)))
	}
	return strings.Join(sigs, " "), nil
}

func webhookMAC(key []byte, id string, ts int64, body []byte) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(id))
	h.Write([]byte{'.'})
	h.Write([]byte(strconv.FormatInt(ts, 10)))
	h.Write([]byte{'.'})
	h.Write(body)
	return h.Sum(nil)
}

// VerifyWebhook checks a webhook received from billingd: that its
// webhook-timestamp is within tolerance of the local clock (0 means
// DefaultWebhookTolerance) and that one of the space-separated
// webhook-signature values is the v1 HMAC-SHA256 of "id.timestamp.body"
// under secret ("whsec_..."). Signatures are compared in constant time.
// It returns nil when the webhook is authentic, and otherwise an error
// matching ErrWebhookHeaders, ErrWebhookTimestamp, ErrWebhookSignature or
// ErrWebhookSecret. Receivers should also de-duplicate on webhook-id: a
// notification can arrive more than once. h is the request's header (an
// http.Header).
func VerifyWebhook(secret string, h map[string][]string, body []byte, tolerance time.Duration) error {
	return verifyWebhookAt(secret, h, body, tolerance, time.Now())
}

func verifyWebhookAt(secret string, h map[string][]string, body []byte, tolerance time.Duration, now time.Time) error {
	k, ok := secretKey(secret)
	if !ok {
		return ErrWebhookSecret
	}
	id, tsText, sigs := headerValue(h, HeaderWebhookID), headerValue(h, HeaderWebhookTimestamp), headerValue(h, HeaderWebhookSignature)
	ts, err := strconv.ParseInt(tsText, 10, 64)
	if id == "" || sigs == "" || err != nil {
		return ErrWebhookHeaders
	}
	if tolerance <= 0 {
		tolerance = DefaultWebhookTolerance
	}
	sent := time.Unix(ts, 0)
	if sent.Before(now.Add(-tolerance)) || sent.After(now.Add(tolerance)) {
		return ErrWebhookTimestamp
	}
	want := webhookMAC(k, id, ts, body)
	for sig := range strings.FieldsSeq(sigs) {
		version, value, ok := strings.Cut(sig, ",")
		if !ok || version != "v1" {
			continue
		}
		got, err := base64.StdEncoding.DecodeString(value)
		if err == nil && hmac.Equal(got, want) {
			return nil
		}
	}
	return ErrWebhookSignature
}

// headerValue is http.Header.Get: the first value of the canonical name.
func headerValue(h map[string][]string, name string) string {
	if v := h[textproto.CanonicalMIMEHeaderKey(name)]; len(v) > 0 {
		return v[0]
	}
	return ""
}
