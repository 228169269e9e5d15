package billing

import (
	"bytes"
	"context"
	"encoding/base64"
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
	// CustomerName is the customer's legal name.
	CustomerName string `json:"customerName"`
	// Invoices counts the customer's invoices with an amount due.
	Invoices int `json:"invoices"`
	AgeBuckets
}

// CurrencyReceivables is what is owed in one currency: the total and the
// share of each customer of the page (by name).
type CurrencyReceivables struct {
	// Currency of every amount.
	Currency Currency `json:"currency"`
	// Invoices counts the invoices with an amount due in the currency.
	Invoices int `json:"invoices"`
	// Total is what all the customers owe, those of other pages too.
	Total AgeBuckets `json:"total"`
	// Customers are the page's customers who owe in the currency, by name.
	Customers []CustomerReceivables `json:"customers"`
}

// Receivables is the account's accounts receivable on Today, by age: the
// totals of every customer, and the shares of a page of them.
type Receivables struct {
	// Today is the date the ages are counted on: the account's day.
	Today Date `json:"today"`
	// Currencies are by code; [] when nothing is due.
	Currencies []CurrencyReceivables `json:"currencies"`
	// Next is the cursor of the next page of customers (ReceivablesPage.After),
	// "" on the last page.
	Next string `json:"next,omitempty"`
}

// ReceivablesPage chooses the customers whose shares AgeReceivablesPage
// returns: those who owe, by legal name, after the cursor After, at most
// Limit of them (0: all).
type ReceivablesPage struct {
	// After is a Receivables.Next; "" for the first page.
	After string
	// Limit is how many customers a page has at most; 0 for all.
	Limit int
}

// AgeReceivables returns what the account's customers owe, per currency and
// customer, in age buckets by days past the due date: AgeReceivablesPage
// with every customer on one page.
func (s *Service) AgeReceivables(ctx context.Context, account string) (*Receivables, error) {
	return s.AgeReceivablesPage(ctx, account, ReceivablesPage{})
}

// AgeReceivablesPage returns what the account's customers owe in age
// buckets by days past the due date: per currency in all, and per customer
// for a page of the customers who owe, by legal name. It counts the same
// invoices as InvoiceSummary.AmountDue (FINAL and SENT with an amount due,
// except UNCOLLECTIBLE ones), so the totals per currency agree with it and
// with the sum of amountDue of those invoices in the API's list. It reads
// the sums kept as invoices are written (invoicestanding.go): per currency
// and due date for the totals, per customer, currency and due date for the
// page, walking the customers by name until the page has Limit who owe (a
// page costs the customers it passes, few when most customers owe). Today is
// the date of the Service's clock in the account's time zone. A bad cursor
// is validation_failed.
func (s *Service) AgeReceivablesPage(ctx context.Context, account string, p ReceivablesPage) (*Receivables, error) {
	if p.Limit < 0 {
		return nil, FieldError("limit", "must not be negative")
	}
	var after []byte
	if p.After != "" {
		raw, err := base64.RawURLEncoding.DecodeString(p.After)
		if err != nil || !bytes.HasPrefix(raw, prefix(account)) {
			return nil, FieldError("after", "is not a cursor of this list")
		}
		after = raw
	}
	var out *Receivables
	err := s.view(ctx, func(tx Tx) error {
		today, err := s.dateOf(ctx, tx, account, "", s.clock())
		if err != nil {
			return err
		}
		ag := &ager{today: today, byCurrency: map[Currency]*CurrencyReceivables{}}
		err = eachSum(ctx, tx, func(cur Currency, due string, ks *keptSum) error {
			c := ag.currency(cur)
			c.Invoices += int(ks.Count)
			return ag.add(&c.Total, due, ks.Amount)
		}, account, "due")
		if err != nil {
			return err
		}
		if err := ag.page(ctx, tx, account, after, p.Limit); err != nil {
			return err
		}
		out = ag.receivables()
		return nil
	})
	if err != nil {
		return nil, internal(err)
	}
	return out, nil
}

// ager adds up the kept sums of AgeReceivablesPage.
type ager struct {
	today      Date
	byCurrency map[Currency]*CurrencyReceivables
	next       []byte // the customer_names key of the page's last customer when there are more
}

// currency returns the receivables of cur, made empty when new.
func (a *ager) currency(cur Currency) *CurrencyReceivables {
	c := a.byCurrency[cur]
	if c == nil {
		c = &CurrencyReceivables{Currency: cur, Total: zeroBuckets(cur), Customers: []CustomerReceivables{}}
		a.byCurrency[cur] = c
	}
	return c
}

// add counts amount, due on due (a date, or "-" for none), into b.
func (a *ager) add(b *AgeBuckets, due string, amount Decimal) error {
	late := 0
	if due != "-" {
		d, err := ParseDate(due)
		if err != nil {
			return err
		}
		late = int(a.today.Time().Sub(d.Time()).Hours() / 24)
	}
	b.add(amount, late)
	return nil
}

// namesChunk is how many customers' names page reads at a time.
const namesChunk = 64

// page adds the shares of up to limit (0: every) customers who owe, by
// name after the customer_names key after, and sets a.next when more
// customers follow. It reads the names a chunk at a time and each
// customer's sums after the chunk's scan, not inside it.
func (a *ager) page(ctx context.Context, tx Tx, account string, after []byte, limit int) error {
	shown := 0
	start := after
	for {
		type named struct {
			k        []byte
			id, name string
		}
		var chunk []named
		r := Range{Prefix: prefix(account), Expect: namesChunk}
		if start != nil {
			r.Start = append(slices.Clip(start), 0)
		}
		err := tx.Scan(ctx, tableCustomerNames, r, func(k, v []byte) error {
			name, _, _ := strings.Cut(string(k[len(r.Prefix):]), string(rune(keySep)))
			chunk = append(chunk, named{slices.Clone(k), string(v), name})
			if len(chunk) == namesChunk {
				return ErrStopScan
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, n := range chunk {
			owes, err := a.customer(ctx, tx, account, n.id, n.name, limit > 0 && shown == limit)
			if err != nil {
				return err
			}
			if owes && limit > 0 && shown == limit {
				return nil
			}
			if owes {
				shown++
				a.next = n.k
			}
		}
		if len(chunk) < namesChunk {
			a.next = nil
			return nil
		}
		start = chunk[len(chunk)-1].k
	}
}

// customer adds the shares of customer id (named name) to a, or with probe
// only reports whether it owes anything.
func (a *ager) customer(ctx context.Context, tx Tx, account, id, name string, probe bool) (bool, error) {
	owes := false
	err := eachSum(ctx, tx, func(cur Currency, due string, ks *keptSum) error {
		owes = true
		if probe {
			return nil
		}
		c := a.currency(cur)
		i := len(c.Customers) - 1
		if i < 0 || c.Customers[i].CustomerID != id {
			c.Customers = append(c.Customers, CustomerReceivables{CustomerID: id, CustomerName: name, AgeBuckets: zeroBuckets(cur)})
			i++
		}
		c.Customers[i].Invoices += int(ks.Count)
		return a.add(&c.Customers[i].AgeBuckets, due, ks.Amount)
	}, account, "cdue", id)
	return owes, err
}

// receivables returns what a added up, currencies by code.
func (a *ager) receivables() *Receivables {
	out := &Receivables{Today: a.today, Currencies: []CurrencyReceivables{}}
	if a.next != nil {
		out.Next = base64.RawURLEncoding.EncodeToString(a.next)
	}
	for _, c := range a.byCurrency {
		out.Currencies = append(out.Currencies, *c)
	}
	slices.SortFunc(out.Currencies, func(a, b CurrencyReceivables) int { return strings.Compare(string(a.Currency), string(b.Currency)) })
	return out
}
