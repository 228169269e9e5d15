package billing

import (
	"context"
	"time"
)

// Payment is money received against a FINAL or SENT invoice.
type Payment struct {
	ID               string    `json:"id"`
	ServiceAccountID string    `json:"serviceAccountId"`
	InvoiceID        string    `json:"invoiceId"`
	Amount           Decimal   `json:"amount"`
	Currency         Currency  `json:"currency"`
	PaidAt           Date      `json:"paidAt"`
	Method           string    `json:"method,omitempty"`
	Reference        string    `json:"reference,omitempty"`
	CreatedAt        time.Time `json:"createdAt"`
}

// PaymentParams are the fields of a new payment. Amount (positive, with at
// most the currency's minor-unit digits, at most the amount due) and PaidAt
// are required.
type PaymentParams struct {
	Amount    *Decimal `json:"amount"`
	PaidAt    *Date    `json:"paidAt"`
	Method    string   `json:"method"`
	Reference string   `json:"reference"`
}

// RecordPayment records a payment against a FINAL or SENT invoice, updates
// amountPaid, amountDue and paymentStatus, writes the journal (debit cash,
// credit accounts receivable) and emits INVOICE_UPDATED. Returns not_found,
// validation_failed, and invalid_state for any other status or an amount
// above the amount due.
func (s *Service) RecordPayment(ctx context.Context, account, invoiceID string, p PaymentParams) (*Payment, error) {
	return nil, errNotYet
}

// ListPayments lists an invoice's payments, oldest first unless f says DESC.
// Returns not_found and validation_failed.
func (s *Service) ListPayments(ctx context.Context, account, invoiceID string, order SortOrder, p ListParams) (Page[Payment], error) {
	return Page[Payment]{}, errNotYet
}

// SetPaymentStatus sets UNCOLLECTIBLE on a FINAL or SENT invoice, or clears
// it when st is the status derived from amountDue, and emits
// INVOICE_UPDATED. Returns not_found, validation_failed for any other value,
// and invalid_state for any other invoice status.
func (s *Service) SetPaymentStatus(ctx context.Context, account, invoiceID string, st PaymentStatus) (*Invoice, error) {
	return nil, errNotYet
}
