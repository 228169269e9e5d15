package billing

import (
	"context"
	"time"
)

// This file is refunds: a finalized credit note against an invoice paid
// through the provider gives the money back through the provider.

// The tables of refunds.
const (
	tableRefunds Table = "refunds" // account id / invoice id / refund id → Refund
)

// Refund is money given back through the provider for a credit note.
type Refund struct {
	ID string `json:"id"`
	// ServiceAccountID is the account that owns it.
	ServiceAccountID string `json:"serviceAccountId"`
	// CreditNoteID is the credit note that asked for the refund.
	CreditNoteID string `json:"creditNoteId"`
	// InvoiceID is billingd's invoice.
	InvoiceID string `json:"invoiceId"`
	// Amount is what is refunded, in Currency.
	Amount Decimal `json:"amount"`
	// Currency is the credit note's.
	Currency Currency `json:"currency"`
	// PaymentReference is the provider payment refunded; Reference the
	// provider's refund.
	PaymentReference string `json:"paymentReference"`
	// Reference is the provider's refund; empty until it answered.
	Reference string `json:"reference,omitempty"`
	// Status is PENDING until the provider answered, then SUCCEEDED or
	// FAILED.
	Status    ChargeStatus `json:"status"`
	CreatedAt time.Time    `json:"createdAt"`
	UpdatedAt time.Time    `json:"updatedAt"`
}

// RefundCreditNote refunds a FINAL or SENT credit note through the
// account's provider (POST /credit-notes/{id}/refund): at most the credit
// note's gross less what was refunded for it already, at most what the
// invoice's provider payments hold less what was refunded from them, and
// at most what the invoice is overpaid by (refundable). A credit note that
// became customer credit is not refunded. The
// refund is recorded before the provider is called (with an idempotency key
// derived from it) and its outcome after; a successful refund posts Dr
// accounts_receivable / Cr cash. Returns not_found, and invalid_state when
// nothing can be refunded or the account has no provider.
//
// Long on purpose: the three phases (record, provider call, outcome)
// of one refund in order.
func (s *Service) RefundCreditNote(ctx context.Context, account, creditNoteID string) (*Refund, error) {
	if _, err := read(ctx, s, func(tx Tx) (*CreditNote, error) { return loadDoc(ctx, tx, creditNoteKind, account, creditNoteID) }); err != nil {
		return nil, err // not_found before anything about the provider
	}
	gw, _, err := s.openGateway(ctx, account)
	if err != nil {
		return nil, err
	}
	now, id := s.clock(), s.newID()
	ref, err := mutate(ctx, s, account, func(tx Tx) (*Refund, error) {
		cn, err := loadDoc(ctx, tx, creditNoteKind, account, creditNoteID)
		if err != nil {
			return nil, err
		}
		if !cn.Status.finalized() || cn.InvoiceID == "" {
			return nil, Errorf(CodeInvalidState, "a refund needs a FINAL or SENT credit note of an invoice; this one is %s", cn.Status)
		}
		if cn.Settings.GenerateCashCreditGrant == CashCreditGrantEnabled {
			return nil, Errorf(CodeInvalidState, "this credit note's amount became the customer's credit (generateCashCreditGrant); it is not refunded")
		}
		amount, best, err := s.refundable(ctx, tx, account, cn)
		if err != nil {
			return nil, err
		}
		r := &Refund{ID: id, ServiceAccountID: account, CreditNoteID: cn.ID, InvoiceID: cn.InvoiceID, Amount: amount, Currency: cn.Currency,
			PaymentReference: best, Status: ChargePending, CreatedAt: now, UpdatedAt: now}
		return r, putRecord(ctx, tx, tableRefunds, key(account, cn.InvoiceID, id), r)
	})
	if err != nil {
		return nil, err
	}
	res, perr := gw.Refund(ctx, RefundRequest{PaymentRef: ref.PaymentReference, Amount: ref.Amount, Currency: ref.Currency,
		CreditNoteID: ref.CreditNoteID, IdempotencyKey: "billingd/refund/" + ref.ID})
	if perr != nil {
		res = &RefundResult{Status: ChargeFailed}
	}
	done := s.clock()
	err = s.store.Update(ctx, func(tx Tx) error {
		r, err := getRecord[Refund](ctx, tx, tableRefunds, key(account, ref.InvoiceID, ref.ID))
		if err != nil {
			return err
		}
		r.Status, r.Reference, r.UpdatedAt = res.Status, res.Reference, done
		if err := putRecord(ctx, tx, tableRefunds, key(account, ref.InvoiceID, ref.ID), r); err != nil {
			return err
		}
		*ref = *r
		if r.Status == ChargeFailed {
			return nil
		}
		return s.writeJournal(ctx, tx, account, JournalSourcePayment, r.ID, r.Currency, done,
			ledgerLine{LedgerAccountsReceivable, r.Amount, true}, ledgerLine{LedgerCash, r.Amount, false})
	})
	if err == nil && perr != nil {
		err = &Error{Code: CodeUnavailable, Message: "the provider did not refund (the refund is recorded FAILED; ask again): " + perr.Error()}
	}
	return ref, err
}

// refundable returns how much of credit note cn can be refunded now, and
// from which provider payment: the least of what the credit note has left
// to refund, what that payment holds (less what refunds and disputes took
// from it) and what the invoice is overpaid by (its payments, credit notes
// and credit applied beyond its gross total, less the refunds made):
// a refund gives back only money the customer no longer owes. Returns
// invalid_state when nothing can be refunded.
//
// Long on purpose: the three bounds, each a scan, read best side by side.
func (s *Service) refundable(ctx context.Context, tx Tx, account string, cn *CreditNote) (Decimal, string, error) {
	inv, err := loadDoc(ctx, tx, invoiceKind, account, cn.InvoiceID)
	if err != nil {
		return Decimal{}, "", err
	}
	pays, err := scanRecords[Payment](ctx, tx, tablePayments, Range{Prefix: prefix(account, cn.InvoiceID)})
	if err != nil {
		return Decimal{}, "", err
	}
	refunds, err := scanRecords[Refund](ctx, tx, tableRefunds, Range{Prefix: prefix(account, cn.InvoiceID)})
	if err != nil {
		return Decimal{}, "", err
	}
	forNote, all, fromPay := cn.Currency.Zero(), cn.Currency.Zero(), map[string]Decimal{}
	for _, r := range refunds {
		if r.Status == ChargeFailed {
			continue
		}
		if r.CreditNoteID == cn.ID {
			forNote = forNote.Add(r.Amount)
		}
		all = all.Add(r.Amount)
		fromPay[r.PaymentReference] = fromPay[r.PaymentReference].Add(r.Amount)
	}
	left := cn.GrossTotal.Sub(forNote)
	overpaid := inv.AmountPaid.Add(inv.AmountCredited).Add(inv.CreditsApplied).Sub(inv.GrossTotal).Sub(all)
	best, bestLeft := "", cn.Currency.Zero()
	for _, p := range pays {
		ok, err := isProviderPayment(ctx, tx, account, &p)
		if err != nil {
			return Decimal{}, "", err
		}
		if !ok {
			continue // a payment recorded by hand: not the provider's to refund
		}
		l := p.Amount.Sub(fromPay[p.Reference])
		if p.AmountReversed != nil {
			l = l.Sub(*p.AmountReversed) // a dispute lost took it back already
		}
		if best == "" || l.Cmp(bestLeft) > 0 {
			best, bestLeft = p.Reference, l
		}
	}
	amount := left
	for _, bound := range []Decimal{bestLeft, overpaid} {
		if bound.Cmp(amount) < 0 {
			amount = bound
		}
	}
	if best == "" || amount.Sign() <= 0 {
		return Decimal{}, "", Errorf(CodeInvalidState, "nothing to refund: the credit note has %s %s left to refund, the invoice's provider payments %s, and the invoice is overpaid by %s",
			left, cn.Currency, bestLeft, overpaid)
	}
	return amount, best, nil
}

// isProviderPayment reports whether p was collected by the payment
// provider (its reference is a provider payment billingd recorded).
func isProviderPayment(ctx context.Context, tx Tx, account string, p *Payment) (bool, error) {
	if p.Reference == "" {
		return false, nil
	}
	return exists(ctx, tx, tableProviderPayment, key(account, p.Reference))
}

// providerHeld returns what the invoice's provider payments hold, less
// what lost disputes took back of them.
func providerHeld(ctx context.Context, tx Tx, account, invoiceID string) (Decimal, error) {
	pays, err := scanRecords[Payment](ctx, tx, tablePayments, Range{Prefix: prefix(account, invoiceID)})
	if err != nil {
		return Decimal{}, err
	}
	var sum Decimal
	for _, p := range pays {
		ok, err := isProviderPayment(ctx, tx, account, &p)
		if err != nil {
			return Decimal{}, err
		}
		if ok {
			sum = sum.Add(p.Amount)
			if p.AmountReversed != nil {
				sum = sum.Sub(*p.AmountReversed)
			}
		}
	}
	return sum, nil
}
