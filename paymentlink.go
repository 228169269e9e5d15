package billing

import (
	"context"
	"time"
)

// This file keeps an invoice's payment link true: made by the collection
// run after issue, made anew when the provider's page expires while the
// invoice is still due, and when the amount due changed; closed when the
// invoice no longer needs it (paid otherwise, credited, voided,
// uncollectible). docs/payments.md says the same for users.

// recordLink stores a payment link (for amount) on the invoice and queues
// the next reminder or the link's own refresh.
func (s *Service) recordLink(ctx context.Context, t CollectionStep, page *HostedPage, amount Decimal, now time.Time) error {
	return s.store.Update(ctx, func(tx Tx) error {
		c, r, err := claimedInvoice(ctx, tx, t)
		if err != nil || c == nil {
			return err
		}
		c.Claim, c.PaymentLink, c.LinkGen = nil, page.URL, c.LinkGen+1
		c.LinkRef, c.LinkExpiresAt, c.LinkAmount = page.Reference, page.ExpiresAt, &amount
		r.PaymentLink, r.UpdatedAt = page.URL, now
		if _, err := s.scheduleReminder(ctx, tx, c, &r.Invoice); err != nil {
			return err
		}
		if err := saveDoc(ctx, tx, invoiceKind, t.Account, r); err != nil {
			return err
		}
		if err := c.save(ctx, tx, now); err != nil {
			return err
		}
		return s.emit(ctx, tx, t.Account, NotificationInvoiceUpdated, &r.Invoice)
	})
}

// follow brings c in line with its invoice r after r's amount due changed:
// nothing left to collect ends the plan (dunning COMPLETED when paid,
// NOT_REQUIRED otherwise) and, when a payment page is open, makes closing
// it the next step, due now; a page asking for another amount than the one
// due is made anew now. The caller stores r and c.
func (c *collectionRecord) follow(ctx context.Context, tx Tx, r *invoiceRecord, now time.Time) error {
	switch {
	case r.Status == StatusVoided || r.AmountDue.Sign() <= 0 || r.PaymentStatus == PaymentStatusUncollectible:
		c.DunningStatus = DunningNotRequired
		if r.PaymentStatus == PaymentStatusPaid {
			c.DunningStatus = DunningCompleted
		}
		r.DunningStatus = c.DunningStatus
		if c.LinkRef != "" {
			return c.schedule(ctx, tx, stepLink, &now) // the next run closes the page
		}
		return c.schedule(ctx, tx, "", nil)
	case c.LinkRef != "" && c.LinkAmount != nil && c.LinkAmount.Cmp(r.AmountDue) != 0:
		return c.schedule(ctx, tx, stepLink, &now)
	}
	return nil
}

// followCollection is follow for the changes of an invoice's amount due
// made outside collection (a payment recorded by hand, a credit note,
// credit applied, a void, UNCOLLECTIBLE), in the transaction that made
// them, before the invoice r is stored. An invoice without a collection is
// left alone.
func (s *Service) followCollection(ctx context.Context, tx Tx, r *invoiceRecord, now time.Time) error {
	c, err := findRecord[collectionRecord](ctx, tx, tableCollections, key(r.ServiceAccountID, r.ID))
	if err != nil || c == nil {
		return err
	}
	if err := c.follow(ctx, tx, r, now); err != nil {
		return err
	}
	return c.save(ctx, tx, now)
}
