package billing

import (
	"bytes"
	"context"
	"testing"
	"time"
)

// DueInvoice is an invoice the engine would create for one billing date:
// its parameters and lines, computed without the documents layer.
type DueInvoice struct {
	BillingDate Date
	Params      InvoiceParams
	Lines       []InvoiceLineItem
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

// RunnableSchedulesForTest lists the ids of account's schedules in the
// engine's index of runnable schedules.
func RunnableSchedulesForTest(tb testing.TB, s *Service, account string) []string {
	tb.Helper()
	var out []string
	err := s.store.View(context.Background(), func(tx Tx) error {
		out = nil
		return tx.Scan(context.Background(), tableBillingRunnable, Range{Prefix: prefix(account)}, func(k, _ []byte) error {
			parts := bytes.Split(k, []byte{keySep})
			out = append(out, string(parts[len(parts)-1]))
			return nil
		})
	})
	if err != nil {
		tb.Fatal(err)
	}
	return out
}
