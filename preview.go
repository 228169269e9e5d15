package billing

import (
	"context"
	"time"
)

// PreviewInvoice computes, without storing anything, the next invoice of a
// schedule as the engine creates it (the "upcoming invoice"): the earliest
// billing date whose charges are not yet billed and would make an invoice
// with lines, computed by the same code as the billing run (planDate) from
// the usage and seats recorded so far. Billing dates the run would not
// invoice (nothing to charge) are skipped, as the run skips them, up to 13
// months past asOf. A zero asOf means now. Returns not_found for an unknown
// schedule or when no invoice is coming, and the error the run would
// record (invalid_state, validation_failed) when the run could not bill it.
func (s *Service) PreviewInvoice(ctx context.Context, account, scheduleID string, asOf time.Time) (*UpcomingInvoice, error) {
	now := s.clock()
	asOf = NormalizeTime(asOf)
	if asOf.IsZero() {
		asOf = now
	}
	return read(ctx, s, func(tx Tx) (*UpcomingInvoice, error) {
		sc, err := s.getSchedule(ctx, tx, account, scheduleID)
		if err != nil {
			return nil, err
		}
		if sc.ArchivedAt != nil || sc.Status == ScheduleStatusCompleted {
			return nil, Errorf(CodeNotFound, "the schedule has no upcoming invoice")
		}
		prices, err := s.schedulePrices(ctx, tx, sc)
		if err != nil {
			return nil, Errorf(CodeInvalidState, "a price of the schedule no longer exists")
		}
		lc, err := s.newLineContext(ctx, tx, sc, prices)
		if err != nil {
			return nil, err
		}
		for _, group := range byBillingDate(scheduleCharges(sc, prices, lc.cal.DateOf(asOf).AddDays(400))) {
			plan, err := s.planDate(ctx, tx, lc, group)
			if err != nil {
				return nil, err
			}
			if plan == nil || len(plan.lines) == 0 {
				continue
			}
			inv, items, err := s.draftInvoice(ctx, tx, account, plan.params, plan.lines, now)
			if err != nil {
				return nil, err
			}
			// Nothing is stored, so nothing gets an id: the same state and
			// asOf give the same preview, byte for byte.
			inv.ID = ""
			for i := range items {
				items[i].ID, items[i].InvoiceID = "", ""
			}
			return &UpcomingInvoice{Invoice: inv, BillingDate: plan.date, LineItems: items}, nil
		}
		return nil, Errorf(CodeNotFound, "the schedule has no upcoming invoice")
	})
}

// UpcomingInvoice is a computed, unstored invoice with its lines and the
// billing date the engine would create it for. Its id and its lines' ids
// are empty: nothing is stored.
type UpcomingInvoice struct {
	*Invoice
	// BillingDate is the date the invoice would be created for.
	BillingDate Date `json:"billingDate"`
	// LineItems are the invoice's lines as the engine would store them now (ids
	// minted per call).
	LineItems []InvoiceLineItem `json:"lineItems"`
}

// byBillingDate splits charges (ordered by billing date) into one group
// per billing date.
func byBillingDate(charges []charge) [][]charge {
	var out [][]charge
	for i := 0; i < len(charges); {
		j := i
		for j < len(charges) && charges[j].BillingDate == charges[i].BillingDate {
			j++
		}
		out = append(out, charges[i:j])
		i = j
	}
	return out
}
