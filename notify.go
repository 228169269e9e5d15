package billing

import "context"

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

// Email is an e-mail queued through the outbox: plain text, with the
// JSON payload attached for machines.
type Email struct {
	To      []string
	Subject string
	Text    string
	JSON    []byte // attached as a .json file; may be nil
}

// emit is the one emission point: it records the notification typ about
// data (the resource exactly as its GET returns it) in the outbox of
// account, inside tx, with one delivery per matching policy recipient. An
// operation calls it once, after its change, in the same transaction.
//
// Until the notifications feature lands it records nothing.
func (s *Service) emit(ctx context.Context, tx Tx, account string, typ NotificationType, data any) error {
	return nil
}

// queueEmail records e in the outbox of account inside tx (the e-mails of
// invoice and credit note sending); the dispatcher sends it after commit.
//
// Until the notifications feature lands it records nothing.
func (s *Service) queueEmail(ctx context.Context, tx Tx, account string, e Email) error {
	return nil
}
