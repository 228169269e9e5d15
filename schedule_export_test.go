package billing

import (
	"context"
	"time"
)

// DueInvoice is an invoice the engine would create for one billing date:
// its parameters and lines, computed without the documents layer.
type DueInvoice struct {
	BillingDate Date
	Params      InvoiceParams
	Lines       []InvoiceLineItemParams
}

// DueInvoices exposes the engine's charge and line computation to the
// external tests: every invoice due at asOf for the schedule, billed or not.
func (s *Service) DueInvoices(ctx context.Context, account, id string, asOf time.Time) ([]DueInvoice, error) {
	var out []DueInvoice
	err := s.view(ctx, func(tx Tx) error {
		sc, err := s.getSchedule(ctx, tx, account, id)
		if err != nil {
			return err
		}
		prices, err := s.schedulePrices(ctx, tx, sc)
		if err != nil {
			return err
		}
		lc, err := s.newLineContext(ctx, tx, sc, prices)
		if err != nil {
			return err
		}
		for _, group := range s.dueDates(lc.cal, scheduleCharges(sc, prices, lc.cal.DateOf(asOf).AddDays(1)), asOf) {
			p, lines, _, err := s.invoiceFor(ctx, tx, lc, group)
			if err != nil {
				return err
			}
			out = append(out, DueInvoice{BillingDate: group[0].BillingDate, Params: p, Lines: lines})
		}
		return nil
	})
	return out, err
}
