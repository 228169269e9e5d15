package billing

import (
	"context"
	"time"
)

// This file is disputes (chargebacks): a customer's bank contests a
// payment the provider collected. billingd notes each dispute on the
// invoice's collection and notifies it; a dispute lost takes the payment
// back: the invoice is due again and the journal moves the cash back to
// receivables. docs/payments.md says what a finance person sees.

// The notification types of disputes.
const (
	NotificationPaymentDisputeOpened NotificationType = "PAYMENT_DISPUTE_OPENED"
	NotificationPaymentDisputeWon    NotificationType = "PAYMENT_DISPUTE_WON"
	NotificationPaymentDisputeLost   NotificationType = "PAYMENT_DISPUTE_LOST"
)

// The states of a dispute.
const (
	// DisputeOpen: the provider's dispute is under way.
	DisputeOpen = "OPEN"
	// DisputeWon: closed in the merchant's favour; the payment stands.
	DisputeWon = "WON"
	// DisputeLost: closed in the customer's favour; the payment was taken back.
	DisputeLost = "LOST"
	// DisputeClosed: closed otherwise (an inquiry that became no dispute);
	// the payment stands.
	DisputeClosed = "CLOSED"
)

// CollectionDispute is a dispute of one of the invoice's provider
// payments.
type CollectionDispute struct {
	// ID is the provider's dispute (Stripe: dp_...).
	ID string `json:"id"`
	// PaymentReference is the provider payment disputed.
	PaymentReference string `json:"paymentReference"`
	// Amount is the amount disputed, in Currency.
	Amount Decimal `json:"amount"`
	// Currency is the currency of the amount.
	Currency Currency `json:"currency"`
	// Status is OPEN, WON, LOST or CLOSED.
	Status string `json:"status"`
	// ProviderStatus is the provider's last word on it (NEEDS_RESPONSE,
	// UNDER_REVIEW, WON, LOST, ...).
	ProviderStatus string `json:"providerStatus,omitempty"`
	// OpenedAt is when the provider opened it; ClosedAt when it closed.
	OpenedAt time.Time `json:"openedAt"`
	// ClosedAt is when it closed; nil while OPEN.
	ClosedAt *time.Time `json:"closedAt,omitempty"`
	// AmountReversed is what a LOST dispute took back from the invoice's
	// payments, and ReversalID the journal source of it (PAYMENT entries
	// Dr accounts_receivable / Cr cash).
	AmountReversed *Decimal `json:"amountReversed,omitempty"`
	// ReversalID is the journal source id of the reversal; empty unless LOST.
	ReversalID string `json:"reversalId,omitempty"`
}

// handleDispute records a dispute event on c (its invoice r): opened
// once, closed once, whatever order the provider's events come in (a
// closed dispute never opens again; a close before the open records both).
func (s *Service) handleDispute(ctx context.Context, tx Tx, c *collectionRecord, ev *ProviderEvent, now time.Time) error {
	if ev.DisputeRef == "" {
		return nil
	}
	at := ev.Created
	if at.IsZero() {
		at = now
	}
	i := -1
	for j := range c.Disputes {
		if c.Disputes[j].ID == ev.DisputeRef {
			i = j
		}
	}
	var note NotificationType
	if i < 0 {
		c.Disputes = append(c.Disputes, CollectionDispute{ID: ev.DisputeRef, PaymentReference: ev.PaymentRef, Amount: ev.Amount,
			Currency: ev.Currency, Status: DisputeOpen, ProviderStatus: ev.DisputeStatus, OpenedAt: at})
		i, note = len(c.Disputes)-1, NotificationPaymentDisputeOpened
	} else if ev.Type == ProviderEventDisputeOpened || c.Disputes[i].Status != DisputeOpen {
		return nil // known already, or closed already
	}
	d := &c.Disputes[i]
	r, err := loadDoc(ctx, tx, invoiceKind, c.ServiceAccountID, c.InvoiceID)
	if err != nil {
		return err
	}
	if ev.Type == ProviderEventDisputeClosed {
		d.ProviderStatus, d.ClosedAt = ev.DisputeStatus, &at
		switch ev.DisputeStatus {
		case DisputeWon:
			d.Status, note = DisputeWon, NotificationPaymentDisputeWon
		case DisputeLost:
			d.Status, note = DisputeLost, NotificationPaymentDisputeLost
			if err := s.reverseDisputed(ctx, tx, c, d, r, now); err != nil {
				return err
			}
		default:
			d.Status = DisputeClosed
		}
	}
	if err := c.save(ctx, tx, now); err != nil {
		return err
	}
	if note == "" {
		return nil
	}
	return s.emit(ctx, tx, c.ServiceAccountID, note, &r.Invoice)
}

// reverseDisputed takes a lost dispute's money back from the invoice r:
// at most the disputed payment's amount less what earlier disputes took;
// amountPaid falls by it (amountDue and paymentStatus follow), the
// payment records it, the journal posts Dr accounts_receivable / Cr cash,
// and dunning is FAILED with nothing planned (charging again a payment
// method whose holder disputed a charge is for a person to decide).
func (s *Service) reverseDisputed(ctx context.Context, tx Tx, c *collectionRecord, d *CollectionDispute, r *invoiceRecord, now time.Time) error {
	account := c.ServiceAccountID
	pays, err := scanRecords[Payment](ctx, tx, tablePayments, Range{Prefix: prefix(account, r.ID)})
	if err != nil {
		return err
	}
	for _, p := range pays {
		if p.Reference != d.PaymentReference || d.PaymentReference == "" {
			continue
		}
		left := p.Amount
		if p.AmountReversed != nil {
			left = left.Sub(*p.AmountReversed)
		}
		amount := d.Amount
		if amount.Cmp(left) > 0 || amount.Sign() <= 0 {
			amount = left
		}
		if amount.Sign() <= 0 {
			return nil
		}
		reversed := amount
		if p.AmountReversed != nil {
			reversed = reversed.Add(*p.AmountReversed)
		}
		p.AmountReversed = &reversed
		if err := putRecord(ctx, tx, tablePayments, key(account, r.ID, p.ID), &p); err != nil {
			return err
		}
		d.AmountReversed, d.ReversalID = &amount, s.newID()
		r.AmountPaid, r.UpdatedAt = r.AmountPaid.Sub(amount), now
		r.refreshAmounts()
		c.DunningStatus = DunningFailed
		if err := c.schedule(ctx, tx, "", nil); err != nil {
			return err
		}
		r.DunningStatus = c.DunningStatus
		if err := saveDoc(ctx, tx, invoiceKind, account, r); err != nil {
			return err
		}
		return s.writeJournal(ctx, tx, account, JournalSourcePayment, d.ReversalID, r.Currency, now,
			ledgerLine{LedgerAccountsReceivable, amount, true}, ledgerLine{LedgerCash, amount, false})
	}
	s.log.Warn("a lost dispute of a payment billingd did not record; nothing reversed", "account", account, "invoice", r.ID, "dispute", d.ID)
	return nil
}
