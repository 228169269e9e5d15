package billing

import (
	"context"
	"slices"
	"strings"
)

// AgeBuckets split an amount due by how long it has been past due on a
// date: Current is not yet due (or has no due date); the others are 1-30,
// 31-60, 61-90 and over 90 days past the due date. Total is their sum.
type AgeBuckets struct {
	// Current is the amount not yet due, or due today.
	Current Decimal `json:"current"`
	// Days1To30 is the amount 1 to 30 days past its due date.
	Days1To30 Decimal `json:"days1To30"`
	// Days31To60 is the amount 31 to 60 days past its due date.
	Days31To60 Decimal `json:"days31To60"`
	// Days61To90 is the amount 61 to 90 days past its due date.
	Days61To90 Decimal `json:"days61To90"`
	// Over90 is the amount more than 90 days past its due date.
	Over90 Decimal `json:"over90"`
	// Total is the sum of the buckets.
	Total Decimal `json:"total"`
}

// zeroBuckets are empty buckets of a currency: each 0 in its minor units.
func zeroBuckets(c Currency) AgeBuckets {
	z := c.Zero()
	return AgeBuckets{z, z, z, z, z, z}
}

// add counts amount, daysLate days past due, into b.
func (b *AgeBuckets) add(amount Decimal, daysLate int) {
	switch {
	case daysLate <= 0:
		b.Current = b.Current.Add(amount)
	case daysLate <= 30:
		b.Days1To30 = b.Days1To30.Add(amount)
	case daysLate <= 60:
		b.Days31To60 = b.Days31To60.Add(amount)
	case daysLate <= 90:
		b.Days61To90 = b.Days61To90.Add(amount)
	default:
		b.Over90 = b.Over90.Add(amount)
	}
	b.Total = b.Total.Add(amount)
}

// CustomerReceivables is what one customer owes in one currency.
type CustomerReceivables struct {
	// CustomerID is the customer who owes.
	CustomerID string `json:"customerId"`
	// CustomerName is the legal name on the customer's newest unpaid invoice.
	CustomerName string `json:"customerName"`
	// Invoices counts the customer's invoices with an amount due.
	Invoices int `json:"invoices"`
	AgeBuckets
}

// CurrencyReceivables is what is owed in one currency: the total and each
// customer's share (by name).
type CurrencyReceivables struct {
	// Currency of every amount.
	Currency Currency `json:"currency"`
	// Invoices counts the invoices with an amount due in the currency.
	Invoices int `json:"invoices"`
	// Total is what all the customers owe.
	Total AgeBuckets `json:"total"`
	// Customers are the customers who owe, by name.
	Customers []CustomerReceivables `json:"customers"`
}

// Receivables is the account's accounts receivable on Today, by age.
type Receivables struct {
	// Today is the date the ages are counted on: the account's day.
	Today Date `json:"today"`
	// Currencies are by code; [] when nothing is due.
	Currencies []CurrencyReceivables `json:"currencies"`
}

// AgeReceivables returns what the account's customers owe, per currency and
// customer, in age buckets by days past the due date. It counts the same
// invoices as InvoiceSummary.AmountDue (FINAL and SENT with an amount due,
// except UNCOLLECTIBLE ones), so the totals per currency agree with it and
// with the sum of amountDue of those invoices in the API's list. It reads
// the standings of the open invoices only, kept as invoices are written
// (invoicestanding.go). Today is the date of the Service's clock in
// the account's time zone.
func (s *Service) AgeReceivables(ctx context.Context, account string) (*Receivables, error) {
	var ag ager
	err := s.view(ctx, func(tx Tx) error {
		today, err := s.dateOf(ctx, tx, account, "", s.clock())
		if err != nil {
			return err
		}
		ag = ager{today: today, byCurrency: map[Currency]*owed{}, named: map[string]Date{}}
		return tx.Scan(ctx, tableOpenInvoices, Range{Prefix: prefix(account)}, func(_, v []byte) error {
			st, err := decodeStanding(v)
			if err == nil {
				ag.add(&Invoice{
					DocumentHeader: DocumentHeader{Status: StatusFinal, Currency: st.Currency, CustomerID: st.CustomerID, CustomerLegalCompanyName: st.CustomerName},
					IssueDate:      st.IssueDate, DueDate: st.DueDate, AmountDue: st.AmountDue,
				})
			}
			return err
		})
	})
	if err != nil {
		return nil, internal(err)
	}
	return ag.receivables(), nil
}

// ager adds up the invoices of AgeReceivables.
type ager struct {
	today      Date
	byCurrency map[Currency]*owed
	named      map[string]Date // the issue date of the invoice a customer's name is from
}

// owed is what is owed in one currency, in total and by customer id.
type owed struct {
	cur   *CurrencyReceivables
	byCus map[string]*CustomerReceivables
}

// add counts inv when it is issued and has an amount due that may be
// collected.
func (a *ager) add(inv *Invoice) {
	if !inv.Status.finalized() || inv.PaymentStatus == PaymentStatusUncollectible || inv.AmountDue.Sign() <= 0 {
		return
	}
	o := a.byCurrency[inv.Currency]
	if o == nil {
		o = &owed{cur: &CurrencyReceivables{Currency: inv.Currency, Total: zeroBuckets(inv.Currency)}, byCus: map[string]*CustomerReceivables{}}
		a.byCurrency[inv.Currency] = o
	}
	late := 0
	if !inv.DueDate.IsZero() {
		late = int(a.today.Time().Sub(inv.DueDate.Time()).Hours() / 24)
	}
	c := o.byCus[inv.CustomerID]
	if c == nil {
		c = &CustomerReceivables{CustomerID: inv.CustomerID, AgeBuckets: zeroBuckets(inv.Currency)}
		o.byCus[inv.CustomerID] = c
	}
	if at, ok := a.named[inv.CustomerID]; !ok || !inv.IssueDate.Before(at) {
		c.CustomerName, a.named[inv.CustomerID] = inv.CustomerLegalCompanyName, inv.IssueDate
	}
	c.Invoices++
	c.add(inv.AmountDue, late)
	o.cur.Invoices++
	o.cur.Total.add(inv.AmountDue, late)
}

// receivables returns what a added up, currencies by code and customers
// by name.
func (a *ager) receivables() *Receivables {
	out := &Receivables{Today: a.today, Currencies: []CurrencyReceivables{}}
	for _, o := range a.byCurrency {
		for _, c := range o.byCus {
			o.cur.Customers = append(o.cur.Customers, *c)
		}
		slices.SortFunc(o.cur.Customers, func(a, b CustomerReceivables) int {
			if n := strings.Compare(strings.ToLower(a.CustomerName), strings.ToLower(b.CustomerName)); n != 0 {
				return n
			}
			return strings.Compare(a.CustomerID, b.CustomerID)
		})
		out.Currencies = append(out.Currencies, *o.cur)
	}
	slices.SortFunc(out.Currencies, func(a, b CurrencyReceivables) int { return strings.Compare(string(a.Currency), string(b.Currency)) })
	return out
}
