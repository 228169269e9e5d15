package billing

import (
	"context"
	"time"
)

// JournalSourceType is the kind of record a journal entry comes from.
type JournalSourceType string

// The journal source types.
const (
	JournalSourceInvoice    JournalSourceType = "INVOICE"
	JournalSourceCreditNote JournalSourceType = "CREDIT_NOTE"
	JournalSourcePayment    JournalSourceType = "PAYMENT"
)

// The ledger accounts of the journal.
const (
	LedgerAccountsReceivable = "accounts_receivable"
	LedgerRevenue            = "revenue"
	LedgerTaxPayable         = "tax_payable"
	LedgerCash               = "cash"
)

// JournalEntry is one line of the double-entry journal: exactly one of
// Debit and Credit is non-zero. For every source, the debits equal the
// credits.
type JournalEntry struct {
	ID               string            `json:"id"`
	ServiceAccountID string            `json:"serviceAccountId"`
	SourceType       JournalSourceType `json:"sourceType"`
	SourceID         string            `json:"sourceId"`
	// Account is the ledger account: accounts_receivable, revenue,
	// tax_payable or cash.
	Account   string    `json:"account"`
	Debit     Decimal   `json:"debit"`
	Credit    Decimal   `json:"credit"`
	Currency  Currency  `json:"currency"`
	CreatedAt time.Time `json:"createdAt"`
}

// JournalFilter selects journal entries. Empty fields match all.
type JournalFilter struct {
	// SourceID keeps the entries of one invoice, credit note or payment.
	SourceID string
	// SourceType keeps the entries of one kind of source.
	SourceType JournalSourceType
	// SortOrder orders by creation: ASC (oldest first, the default, the
	// order of a ledger) or DESC.
	SortOrder SortOrder
}

// ListJournalEntries lists the account's journal entries matching f, in
// creation order (ASC unless f.SortOrder says DESC). Returns
// validation_failed.
func (s *Service) ListJournalEntries(ctx context.Context, account string, f JournalFilter, p ListParams) (Page[JournalEntry], error) {
	return Page[JournalEntry]{}, errNotYet
}
