package billing

import (
	"context"
	"time"
)

// Payment is money received against a FINAL or SENT invoice.
type Payment struct {
	ID string `json:"id"`
	// ServiceAccountID is the account that owns the invoice.
	ServiceAccountID string `json:"serviceAccountId"`
	// InvoiceID is the invoice paid.
	InvoiceID string `json:"invoiceId"`
	// Amount is the money received, in the invoice's currency, rounded to its
	// minor units.
	Amount Decimal `json:"amount"`
	// Currency is the invoice's.
	Currency Currency `json:"currency"`
	// PaidAt is the day the money was received, as the caller reports it.
	PaidAt Date `json:"paidAt"`
	// Method is free text ("bank transfer"); empty when not given.
	Method string `json:"method,omitempty"`
	// Reference is the payer's reference; empty when not given.
	Reference string `json:"reference,omitempty"`
	// AmountReversed is what the provider took back of this payment (a
	// dispute lost); absent when nothing was. amountPaid counts the
	// payment less it.
	AmountReversed *Decimal  `json:"amountReversed,omitempty"`
	CreatedAt      time.Time `json:"createdAt"`
}

// PaymentParams are the fields of a new payment. Amount (positive, with at
// most the currency's minor-unit digits, at most the amount due) and PaidAt
// are required.
type PaymentParams struct {
	// Amount is required: more than zero, in the invoice's currency.
	Amount *Decimal `json:"amount"`
	// PaidAt is required.
	PaidAt *Date `json:"paidAt"`
	// Method is optional free text.
	Method string `json:"method"`
	// Reference is optional.
	Reference string `json:"reference"`
}

// RecordPayment records a payment against a FINAL or SENT invoice, paid
// on a day from the invoice's issue date to today (checkMoneyDate); it updates
// amountPaid, amountDue and paymentStatus, writes the journal (debit cash,
// credit accounts receivable) and emits INVOICE_UPDATED. Returns not_found,
// validation_failed, and invalid_state for any other status or an amount
// above the amount due.
func (s *Service) RecordPayment(ctx context.Context, account, invoiceID string, p PaymentParams) (*Payment, error) {
	var v validator
	v.check(p.Amount != nil, "amount", "amount is required")
	v.check(p.PaidAt != nil && !p.PaidAt.IsZero(), "paidAt", "paidAt is required")
	if p.Amount != nil && p.Amount.Sign() <= 0 {
		v.add("amount", "amount must be positive")
	}
	s.checkString(&v, "method", p.Method, false)
	s.checkString(&v, "reference", p.Reference, false)
	if err := v.err(); err != nil {
		return nil, err
	}
	now := s.clock()
	return mutate(ctx, s, account, func(tx Tx) (*Payment, error) {
		return s.recordPaymentTx(ctx, tx, account, invoiceID, p, now)
	})
}

// recordPaymentTx is RecordPayment inside tx, on validated params (also
// the payments a provider collects, collection.go).
func (s *Service) recordPaymentTx(ctx context.Context, tx Tx, account, invoiceID string, p PaymentParams, now time.Time) (*Payment, error) {
	{
		r, err := loadDoc(ctx, tx, invoiceKind, account, invoiceID)
		if err != nil {
			return nil, err
		}
		if !r.Status.finalized() {
			return nil, Errorf(CodeInvalidState, "payments can be recorded on FINAL or SENT invoices; this one is %s", r.Status)
		}
		if err := s.checkMoneyDate(ctx, tx, account, "paidAt", *p.PaidAt, r.IssueDate, now); err != nil {
			return nil, err
		}
		if p.Amount.Cmp(r.Currency.Round(*p.Amount, RoundHalfUp)) != 0 {
			return nil, FieldError("amount", "amount has more than the %d decimal places of %s", r.Currency.MinorUnits(), r.Currency)
		}
		if p.Amount.Cmp(r.AmountDue) > 0 {
			return nil, Errorf(CodeInvalidState, "amount %s is above the amount due (%s %s)", p.Amount, r.AmountDue, r.Currency)
		}
		pay := &Payment{
			ID: s.newID(), ServiceAccountID: account, InvoiceID: r.ID, Amount: r.Currency.Round(*p.Amount, RoundHalfUp),
			Currency: r.Currency, PaidAt: *p.PaidAt, Method: p.Method, Reference: p.Reference, CreatedAt: now,
		}
		if err := putRecord(ctx, tx, tablePayments, key(account, r.ID, pay.ID), pay); err != nil {
			return nil, err
		}
		r.AmountPaid = r.AmountPaid.Add(pay.Amount)
		r.UpdatedAt = now
		r.refreshAmounts()
		if err := s.followCollection(ctx, tx, r, now); err != nil {
			return nil, err
		}
		if err := saveDoc(ctx, tx, invoiceKind, account, r); err != nil {
			return nil, err
		}
		err = s.writeJournal(ctx, tx, account, JournalSourcePayment, pay.ID, r.Currency, now,
			ledgerLine{LedgerCash, pay.Amount, true}, ledgerLine{LedgerAccountsReceivable, pay.Amount, false})
		if err != nil {
			return nil, err
		}
		return pay, s.emit(ctx, tx, account, NotificationInvoiceUpdated, &r.Invoice)
	}
}

// checkMoneyDate refuses (validation_failed on field) the date of money
// that moved (a payment's paidAt, a credit note's accounting date) when it
// is after today in the account's time zone or before issued, the issue
// date of the invoice it belongs to.
func (s *Service) checkMoneyDate(ctx context.Context, tx Tx, account, field string, d, issued Date, now time.Time) error {
	today, err := s.dateOf(ctx, tx, account, "", now)
	if err != nil {
		return err
	}
	switch {
	case d.After(today):
		return FieldError(field, "%s %s is after today (%s in the account's time zone)", field, d, today)
	case !issued.IsZero() && d.Before(issued):
		return FieldError(field, "%s %s is before the invoice's issue date %s", field, d, issued)
	}
	return nil
}

// ListPayments lists an invoice's payments, oldest first unless order says
// DESC. Returns not_found and validation_failed.
func (s *Service) ListPayments(ctx context.Context, account, invoiceID string, order SortOrder, p ListParams) (Page[Payment], error) {
	order, err := ParseSortOrder(string(order), SortAsc)
	if err != nil {
		return Page[Payment]{}, err
	}
	return read(ctx, s, func(tx Tx) (Page[Payment], error) {
		if _, err := loadDoc(ctx, tx, invoiceKind, account, invoiceID); err != nil {
			return Page[Payment]{}, err
		}
		q := listQuery[Payment]{
			name: "payments", filter: invoiceID, table: tablePayments, prefix: prefix(account, invoiceID),
			desc: order == SortDesc, decode: decodeAll[Payment](nil),
		}
		return list(ctx, s, tx, q, p)
	})
}

// SetPaymentStatus sets UNCOLLECTIBLE on a FINAL or SENT invoice, or clears
// it when st is the status derived from amountDue (UNPAID, PARTIALLY_PAID or
// PAID), and emits INVOICE_UPDATED. Returns not_found, validation_failed for
// any other value (a derived status that is not the invoice's included), and
// invalid_state for any other invoice status.
func (s *Service) SetPaymentStatus(ctx context.Context, account, invoiceID string, st PaymentStatus) (*Invoice, error) {
	switch st {
	case PaymentStatusUncollectible, PaymentStatusUnpaid, PaymentStatusPartiallyPaid, PaymentStatusPaid:
	default:
		return nil, FieldError("paymentStatus", "paymentStatus must be UNCOLLECTIBLE, or the derived UNPAID, PARTIALLY_PAID or PAID")
	}
	return s.invoiceOp(ctx, account, invoiceID, NotificationInvoiceUpdated, func(tx Tx, r *invoiceRecord, now time.Time) error {
		if !r.Status.finalized() {
			return Errorf(CodeInvalidState, "the payment status of a %s invoice cannot be set", r.Status)
		}
		if st == PaymentStatusUncollectible {
			r.PaymentStatus = st
			return s.followCollection(ctx, tx, r, now)
		}
		if derived := r.derivedPaymentStatus(); st != derived {
			return FieldError("paymentStatus", "paymentStatus is derived from the amount due; it can only go back to %s", derived)
		}
		r.PaymentStatus = st
		return nil
	})
}

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
	ID string `json:"id"`
	// ServiceAccountID is the account whose books the entry is in.
	ServiceAccountID string `json:"serviceAccountId"`
	// SourceType is the kind of record that made the entry: INVOICE, CREDIT_NOTE
	// or PAYMENT.
	SourceType JournalSourceType `json:"sourceType"`
	// SourceID is that record's id; the entries of one source always balance.
	SourceID string `json:"sourceId"`
	// Account is the ledger account: accounts_receivable, revenue,
	// tax_payable, cash, or for credit deferred_revenue, breakage_income
	// and promotional_expense.
	Account string `json:"account"`
	// Debit is the amount debited to Account; zero when the entry is a credit. An
	// entry has one positive side.
	Debit Decimal `json:"debit"`
	// Credit is the amount credited to Account; zero when the entry is a debit.
	Credit Decimal `json:"credit"`
	// Currency is the source document's.
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
	if err := putRecord(ctx, tx, tableJournalBySource, key(e.ServiceAccountID, e.SourceID, e.ID), e); err != nil {
		return err
	}
	return keptJournal.put(ctx, tx, e.ServiceAccountID, e.ID, journalValues(e))
}

// reverseJournal posts, for every entry of source srcID, an entry with
// debit and credit swapped (a voided document's reversal).
func (s *Service) reverseJournal(ctx context.Context, tx Tx, account, srcID string, now time.Time) error {
	entries, err := scanRecords[JournalEntry](ctx, tx, tableJournalBySource, Range{Prefix: prefix(account, srcID)})
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
	given := []string{f.SourceID, string(f.SourceType)}
	return read(ctx, s, func(tx Tx) (Page[JournalEntry], error) {
		return listKept(ctx, s, tx, keptJournal, account, given, q, p)
	})
}
