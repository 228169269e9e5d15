package billing

import (
	"context"
	"slices"
	"strings"
	"time"
)

// InvoiceSummary is what an account's issued invoices add up to, per
// currency: what was invoiced in each of the last months, what is due and
// what is overdue (SummarizeInvoices).
type InvoiceSummary struct {
	// Today is the date the summary was made on: its last month is Today's,
	// and an invoice is overdue when its due date is before Today.
	Today Date `json:"today"`
	// Months are the first days of the months summarized, oldest first; the
	// last is Today's month.
	Months []Date `json:"months"`
	// Currencies are the currencies of the account's issued invoices, by
	// code; [] when it has none.
	Currencies []CurrencySummary `json:"currencies"`
}

// CurrencySummary is the part of an InvoiceSummary in one currency. Every
// amount is a sum of stored invoice amounts, exact.
type CurrencySummary struct {
	// Currency of every amount of the summary.
	Currency Currency `json:"currency"`
	// Invoiced[i] is the gross total of the FINAL and SENT invoices issued in
	// Months[i] (voided invoices are not counted, nor are credit notes
	// deducted).
	Invoiced []Decimal `json:"invoiced"`
	// AmountDue is the amount due on the FINAL and SENT invoices, except the
	// UNCOLLECTIBLE ones.
	AmountDue Decimal `json:"amountDue"`
	// UnpaidInvoices counts the invoices of AmountDue (those with an amount due).
	UnpaidInvoices int `json:"unpaidInvoices"`
	// AmountOverdue is the part of AmountDue whose due date is before Today.
	AmountOverdue Decimal `json:"amountOverdue"`
	// OverdueInvoices counts the invoices of AmountOverdue.
	OverdueInvoices int `json:"overdueInvoices"`
}

// maxSummaryMonths bounds SummarizeInvoices' months (ten years).
const maxSummaryMonths = 120

// SummarizeInvoices adds up the account's issued invoices (FINAL and SENT)
// per currency: the gross total invoiced in each of the last months months
// (by issue date, the current month last), the amount due and the amount
// overdue. It reads the sums kept as invoices are written
// (invoicestanding.go): its cost grows with the months and due dates
// summed, not with the invoices; the console's overview uses it. Today is the date of the Service's clock in
// the account's time zone.
// Returns validation_failed when months is not between 1 and 120.
func (s *Service) SummarizeInvoices(ctx context.Context, account string, months int) (*InvoiceSummary, error) {
	if months < 1 || months > maxSummaryMonths {
		return nil, FieldError("months", "months must be between 1 and %d", maxSummaryMonths)
	}
	sum := &InvoiceSummary{Currencies: []CurrencySummary{}}
	byCurrency := map[Currency]*CurrencySummary{}
	err := s.view(ctx, func(tx Tx) error {
		today, err := s.dateOf(ctx, tx, account, "", s.clock())
		if err != nil {
			return err
		}
		sum.Today, sum.Months = today, nil
		for i := months - 1; i >= 0; i-- {
			sum.Months = append(sum.Months, DateOf(time.Date(today.Year, today.Month-time.Month(i), 1, 0, 0, 0, 0, time.UTC)))
		}
		of := func(cur Currency) *CurrencySummary {
			c := byCurrency[cur]
			if c == nil {
				c = &CurrencySummary{Currency: cur, Invoiced: make([]Decimal, months)}
				byCurrency[cur] = c
			}
			return c
		}
		err = eachSum(ctx, tx, func(cur Currency, month string, ks *keptSum) error {
			d, err := ParseDate(month + "-01")
			if err != nil {
				return err
			}
			c := of(cur)
			if back := (today.Year-d.Year)*12 + int(today.Month-d.Month); back >= 0 && back < months {
				c.Invoiced[months-1-back] = c.Invoiced[months-1-back].Add(ks.Amount)
			}
			return nil
		}, account, "invoiced")
		if err != nil {
			return err
		}
		return eachSum(ctx, tx, func(cur Currency, due string, ks *keptSum) error {
			c := of(cur)
			c.AmountDue, c.UnpaidInvoices = c.AmountDue.Add(ks.Amount), c.UnpaidInvoices+int(ks.Count)
			if due == "-" {
				return nil
			}
			d, err := ParseDate(due)
			if err == nil && d.Before(today) {
				c.AmountOverdue, c.OverdueInvoices = c.AmountOverdue.Add(ks.Amount), c.OverdueInvoices+int(ks.Count)
			}
			return err
		}, account, "due")
	})
	if err != nil {
		return nil, internal(err)
	}
	for _, c := range byCurrency {
		sum.Currencies = append(sum.Currencies, *c)
	}
	slices.SortFunc(sum.Currencies, func(a, b CurrencySummary) int { return strings.Compare(string(a.Currency), string(b.Currency)) })
	return sum, nil
}
