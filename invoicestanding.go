package billing

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
)

// Kept sums of issued invoices: what SummarizeInvoices and AgeReceivables
// read instead of every invoice of the account (issue 34: the console's
// overview and receivables at 100,000 invoices).
//
// Every write of an invoice (saveDoc, DeleteInvoice) calls keepStanding in
// its transaction with the invoice as stored. An issued invoice (FINAL or
// SENT) has a standing: the few fields the two read. The standing of each
// issued invoice is kept in invoice_standing, and invoice_sums adds them
// up per currency: the gross total invoiced per month of issue, and of the
// open ones (an amount due that may be collected) the amount due per due
// date, in all and per customer. keepStanding subtracts the
// invoice's old standing and adds its new one, so the sums stay exact under
// payments, voids and corrections.

// standing is what the kept sums know of an issued invoice. It is stored
// as its fields joined by NUL (encode), read back without a JSON decoder.
type standing struct {
	Currency     Currency
	CustomerID   string
	CustomerName string
	IssueDate    Date
	DueDate      Date
	Gross        Decimal
	// AmountDue is set on open invoices only.
	AmountDue Decimal
	Open      bool
}

// encode is the stored form of st.
func (st *standing) encode() []byte {
	open := "0"
	if st.Open {
		open = "1"
	}
	return []byte(strings.Join([]string{string(st.Currency), st.CustomerID, st.CustomerName, st.IssueDate.String(),
		st.DueDate.String(), st.Gross.String(), st.AmountDue.String(), open}, "\x00"))
}

// decodeStanding reads encode's form back.
func decodeStanding(b []byte) (*standing, error) {
	f := strings.Split(string(b), "\x00")
	if len(f) != 8 {
		return nil, fmt.Errorf("billing: a standing of %d fields", len(f))
	}
	st := &standing{Currency: Currency(f[0]), CustomerID: f[1], CustomerName: f[2], Open: f[7] == "1"}
	var err error
	for i, d := range []*Date{&st.IssueDate, &st.DueDate} {
		if f[3+i] != "" {
			if *d, err = ParseDate(f[3+i]); err != nil {
				return nil, err
			}
		}
	}
	if st.Gross, err = ParseDecimal(f[5]); err != nil {
		return nil, err
	}
	if st.AmountDue, err = ParseDecimal(f[6]); err != nil {
		return nil, err
	}
	return st, nil
}

// keptSum is one sum of invoice_sums: an amount and how many invoices it
// adds up.
type keptSum struct {
	Amount Decimal `json:"amount"`
	Count  int64   `json:"count"`
}

// standingOf returns the standing of r, nil when it is not issued (or r is
// nil: deleted).
func standingOf(r *invoiceRecord) *standing {
	if r == nil || !r.Status.finalized() {
		return nil
	}
	st := &standing{
		Currency: r.Currency, CustomerID: r.CustomerID, CustomerName: r.CustomerLegalCompanyName,
		IssueDate: r.IssueDate, DueDate: r.DueDate, Gross: r.GrossTotal, AmountDue: r.Currency.Zero(),
	}
	if r.PaymentStatus != PaymentStatusUncollectible && r.AmountDue.Sign() > 0 {
		st.AmountDue, st.Open = r.AmountDue, true
	}
	return st
}

// sumKeys are the keys of invoice_sums that st adds to, with the amount.
func (st *standing) sums(account string) map[string]Decimal {
	month := fmt.Sprintf("%04d-%02d", st.IssueDate.Year, int(st.IssueDate.Month))
	out := map[string]Decimal{string(key(account, "invoiced", string(st.Currency), month)): st.Gross}
	if st.Open {
		due := st.DueDate.String()
		if due == "" {
			due = "-"
		}
		out[string(key(account, "due", string(st.Currency), due))] = st.AmountDue
		out[string(key(account, "cdue", st.CustomerID, string(st.Currency), due))] = st.AmountDue
	}
	return out
}

// keepStanding keeps the sums of invoice id of account after a write: r is
// the invoice as stored now, nil when it was deleted.
func keepStanding(ctx context.Context, tx Tx, account, id string, r *invoiceRecord) error {
	k := key(account, id)
	oldRaw, err := tx.Get(ctx, tableInvoiceStanding, k)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return err
	}
	now := standingOf(r)
	var nowRaw []byte
	if now != nil {
		nowRaw = now.encode()
	}
	if bytes.Equal(oldRaw, nowRaw) {
		return nil
	}
	type change struct {
		amount Decimal
		count  int64
	}
	changes := map[string]change{}
	if oldRaw != nil {
		old, err := decodeStanding(oldRaw)
		if err != nil {
			return err
		}
		for sk, a := range old.sums(account) {
			changes[sk] = change{a.Neg(), -1}
		}
	}
	if now != nil {
		for sk, a := range now.sums(account) {
			c := changes[sk]
			changes[sk] = change{c.amount.Add(a), c.count + 1}
		}
	}
	for sk, c := range changes {
		if err := addSum(ctx, tx, []byte(sk), c.amount, c.count); err != nil {
			return err
		}
	}
	return putStanding(ctx, tx, k, now, nowRaw)
}

// putStanding stores (or, for nil, deletes) the standing under k in
// invoice_standing.
func putStanding(ctx context.Context, tx Tx, k []byte, st *standing, raw []byte) error {
	if st == nil {
		return deleteIfPresent(ctx, tx, tableInvoiceStanding, k)
	}
	return tx.Put(ctx, tableInvoiceStanding, k, raw)
}

// eachSum calls fn with the currency, the last part of the key (a month or
// a due date) and the sum of each of the sums under prefix(parts...):
// account and kind ("invoiced", "due"), or account, "cdue" and a customer
// id.
func eachSum(ctx context.Context, tx Tx, fn func(c Currency, part string, s *keptSum) error, parts ...string) error {
	pfx := prefix(parts...)
	var order []string
	sums := map[string]*keptSum{}
	err := tx.Scan(ctx, tableInvoiceSums, Range{Prefix: pfx}, func(k, v []byte) error {
		base, _, _ := strings.Cut(string(k[len(pfx):]), string(rune(deltaSep)))
		s := sums[base]
		if s == nil {
			s = new(keptSum)
			sums[base] = s
			order = append(order, base)
		}
		return s.add(k, v)
	})
	if err != nil {
		return err
	}
	for _, base := range order {
		if s := sums[base]; s.Count != 0 {
			cur, part, _ := strings.Cut(base, string(rune(keySep)))
			if err := fn(Currency(cur), part, s); err != nil {
				return err
			}
		}
	}
	return nil
}
