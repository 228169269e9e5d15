package billing

import (
	"context"
	"testing"
	"time"
)

// CreateEngineInvoiceForTest stores an invoice as the billing engine does
// (createInvoiceTx with calculatedAt), for tests of engine-invoice rules.
func CreateEngineInvoiceForTest(tb testing.TB, s *Service, account string, p InvoiceParams, lines []InvoiceLineItemParams) *Invoice {
	tb.Helper()
	inv, err := mutate(context.Background(), s, account, func(tx Tx) (*Invoice, error) {
		return s.createInvoiceTx(context.Background(), tx, account, p, lines, time.Date(2024, 7, 30, 12, 0, 0, 0, time.UTC))
	})
	if err != nil {
		tb.Fatalf("createInvoiceTx: %v", err)
	}
	return inv
}
