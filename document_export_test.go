package billing

import (
	"context"
	"encoding/json"
	"testing"
	"time"
)

// CreateEngineInvoiceForTest stores an invoice as the billing engine does
// (createInvoiceTx with calculatedAt, lines of the domain's own type made
// from lines' fields), for tests of engine-invoice rules.
func CreateEngineInvoiceForTest(tb testing.TB, s *Service, account string, p InvoiceParams, lines []InvoiceLineItemParams) *Invoice {
	tb.Helper()
	inv, err := mutate(context.Background(), s, account, func(tx Tx) (*Invoice, error) {
		items := make([]InvoiceLineItem, len(lines))
		for i, l := range lines {
			items[i] = InvoiceLineItem{LineItem: LineItem{
				Title: l.Title, Description: l.Description, Quantity: *l.Quantity, Rate: *l.Rate, TaxRate: *l.TaxRate,
				PriceID: l.PriceID, ProductID: l.ProductID, RateDisplay: l.RateDisplay, ExternalIDs: []KeyValue{},
				RevenueClassification: l.RevenueClassification, RevenueRecognitionMethod: l.RevenueRecognitionMethod,
				UnitCode: l.UnitCode, TaxCategory: l.TaxCategory,
			}, CreditGrantID: l.CreditGrantID, ServicePeriod: l.ServicePeriod}
			if items[i].RateDisplay == "" {
				items[i].RateDisplay = RateDisplayAbsolute
			}
		}
		return s.createInvoiceTx(context.Background(), tx, account, p, items, time.Date(2024, 7, 30, 12, 0, 0, 0, time.UTC))
	})
	if err != nil {
		tb.Fatalf("createInvoiceTx: %v", err)
	}
	return inv
}

// SetStoredInvoiceTotalsForTest overwrites the stored totals of an invoice
// and of its lines with gross (tax 0), as a database written before totals
// were bounded may hold them.
func SetStoredInvoiceTotalsForTest(tb testing.TB, s *Service, account, invoiceID, gross string) {
	tb.Helper()
	ctx := context.Background()
	err := s.store.Update(ctx, func(tx Tx) error {
		r, err := loadDoc(ctx, tx, invoiceKind, account, invoiceID)
		if err != nil {
			return err
		}
		big, err := parseStoredDecimal(gross)
		if err != nil {
			return err
		}
		t := Totals{NetTotal: big, TotalTax: r.Currency.Zero(), GrossTotal: big}
		lines, err := scanAll[InvoiceLineItem](ctx, tx, tableInvoiceLines, account, invoiceID)
		if err != nil {
			return err
		}
		for _, l := range lines {
			l.Totals, l.Quantity = t, big
			if err := putRecord(ctx, tx, tableInvoiceLines, key(account, invoiceID, l.ID), l); err != nil {
				return err
			}
		}
		r.setTotals(t, r.UpdatedAt)
		return saveDoc(ctx, tx, invoiceKind, account, r)
	})
	if err != nil {
		tb.Fatal(err)
	}
}

// RewriteStoredInvoiceForTest rewrites the stored JSON of an invoice with
// edit, as a database written by an earlier release may hold it.
func RewriteStoredInvoiceForTest(tb testing.TB, s *Service, account, invoiceID string, edit func(map[string]any)) {
	tb.Helper()
	ctx := context.Background()
	err := s.store.Update(ctx, func(tx Tx) error {
		k := key(account, invoiceID)
		raw, err := tx.Get(ctx, tableInvoices, k)
		if err != nil {
			return err
		}
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			return err
		}
		edit(m)
		out, err := json.Marshal(m)
		if err != nil {
			return err
		}
		return tx.Put(ctx, tableInvoices, k, out)
	})
	if err != nil {
		tb.Fatal(err)
	}
}
