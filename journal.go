package billing

import (
	"context"
	"encoding/json"
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
	// tax_payable, cash, or for credit deferred_revenue, breakage_income
	// and promotional_expense.
	Account   string    `json:"account"`
	Debit     Decimal   `json:"debit"`
	Credit    Decimal   `json:"credit"`
	Currency  Currency  `json:"currency"`
	CreatedAt time.Time `json:"createdAt"`
}

// JournalFilter selects journal entries. Empty fields match all.
type JournalFilter struct {
	// SourceID keeps the entries of one invoice, credit note, payment or
	// credit grant.
	SourceID string
	// SourceType keeps the entries of one kind of source.
	SourceType JournalSourceType
	// SortOrder orders by creation: ASC (oldest first, the default, the
	// order of a ledger) or DESC.
	SortOrder SortOrder
}

// ledgerLine is one side of a posting: amount to account, as a debit or a
// credit.
type ledgerLine struct {
	account string
	amount  Decimal
	debit   bool
}

// writeJournal posts lines for a source. A negative amount posts its
// absolute value to the other side (a document of negative total); zero
// amounts post nothing. Callers pass balanced lines (gross = net + tax), so
// the entries of a source always balance.
func (s *Service) writeJournal(ctx context.Context, tx Tx, account string, src JournalSourceType, srcID string, cur Currency, now time.Time, lines ...ledgerLine) error {
	for _, l := range lines {
		if l.amount.IsZero() {
			continue
		}
		debit, amount := l.debit, l.amount
		if amount.Sign() < 0 {
			debit, amount = !debit, amount.Neg()
		}
		e := JournalEntry{
			ID: s.newID(), ServiceAccountID: account, SourceType: src, SourceID: srcID, Account: l.account,
			Debit: cur.Zero(), Credit: cur.Zero(), Currency: cur, CreatedAt: now,
		}
		if debit {
			e.Debit = amount
		} else {
			e.Credit = amount
		}
		if err := s.putJournalEntry(ctx, tx, &e); err != nil {
			return err
		}
	}
	return nil
}

func (s *Service) putJournalEntry(ctx context.Context, tx Tx, e *JournalEntry) error {
	if err := putRecord(ctx, tx, tableJournal, key(e.ServiceAccountID, e.ID), e); err != nil {
		return err
	}
	return putRecord(ctx, tx, tableJournalBySource, key(e.ServiceAccountID, e.SourceID, e.ID), e)
}

// reverseJournal posts, for every entry of source srcID, an entry with
// debit and credit swapped (a voided document's reversal).
func (s *Service) reverseJournal(ctx context.Context, tx Tx, account, srcID string, now time.Time) error {
	var entries []JournalEntry
	err := tx.Scan(ctx, tableJournalBySource, Range{Prefix: prefix(account, srcID)}, func(_, v []byte) error {
		var e JournalEntry
		if err := json.Unmarshal(v, &e); err != nil {
			return err
		}
		entries = append(entries, e)
		return nil
	})
	if err != nil {
		return err
	}
	for _, e := range entries {
		e.ID, e.CreatedAt, e.Debit, e.Credit = s.newID(), now, e.Credit, e.Debit
		if err := s.putJournalEntry(ctx, tx, &e); err != nil {
			return err
		}
	}
	return nil
}

// ListJournalEntries lists the account's journal entries matching f, in
// creation order (ASC unless f.SortOrder says DESC). Returns
// validation_failed.
func (s *Service) ListJournalEntries(ctx context.Context, account string, f JournalFilter, p ListParams) (Page[JournalEntry], error) {
	order, err := ParseSortOrder(string(f.SortOrder), SortAsc)
	if err != nil {
		return Page[JournalEntry]{}, err
	}
	switch f.SourceType {
	case "", JournalSourceInvoice, JournalSourceCreditNote, JournalSourcePayment, JournalSourceCreditGrant:
	default:
		return Page[JournalEntry]{}, FieldError("sourceType", "sourceType must be INVOICE, CREDIT_NOTE, PAYMENT or CREDIT_GRANT")
	}
	q := listQuery[JournalEntry]{
		name: "journal", filter: f.SourceID + "\x00" + string(f.SourceType), table: tableJournal, prefix: prefix(account),
		desc: order == SortDesc,
		decode: decodeAll(func(e *JournalEntry) bool {
			return f.SourceType == "" || e.SourceType == f.SourceType
		}),
	}
	if f.SourceID != "" {
		q.table, q.prefix = tableJournalBySource, prefix(account, f.SourceID)
	}
	return read(ctx, s, func(tx Tx) (Page[JournalEntry], error) { return list(ctx, s, tx, q, p) })
}
