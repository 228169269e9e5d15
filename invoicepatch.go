package billing

import (
	"context"
	"time"
)

// PatchSentInvoiceParams are the fields op 17 may change on a SENT invoice;
// absent fields are kept. PurchaseOrderNumber, Memo and Reference are
// cleared by null; CustomerBillingAddress and DueDate cannot be null.
type PatchSentInvoiceParams struct {
	// PurchaseOrderNumber: absent keeps it, null clears it.
	PurchaseOrderNumber Optional[string] `json:"purchaseOrderNumber,omitzero"`
	// CustomerBillingAddress: absent keeps it; null is refused.
	CustomerBillingAddress Optional[Address] `json:"customerBillingAddress,omitzero"`
	// Memo: absent keeps it, null clears it.
	Memo Optional[string] `json:"memo,omitzero"`
	// Reference: absent keeps it, null clears it.
	Reference Optional[string] `json:"reference,omitzero"`
	// DueDate: absent keeps it; null is refused.
	DueDate Optional[Date] `json:"dueDate,omitzero"`
}

// PatchSentInvoice is op 17: it changes the fields present in p on a SENT
// invoice (status stays SENT) and emits INVOICE_UPDATED. Returns not_found,
// validation_failed (a null dueDate or billing address included), and
// invalid_state when the invoice is not SENT.
func (s *Service) PatchSentInvoice(ctx context.Context, account, id string, p PatchSentInvoiceParams) (*Invoice, error) {
	var v validator
	for field, o := range map[string]Optional[string]{"purchaseOrderNumber": p.PurchaseOrderNumber, "memo": p.Memo, "reference": p.Reference} {
		s.checkString(&v, field, o.Value, false)
	}
	v.check(!p.DueDate.Null, "dueDate", "dueDate cannot be null")
	v.check(!p.DueDate.Set || p.DueDate.Null || !p.DueDate.Value.IsZero(), "dueDate", "dueDate must be a date")
	v.check(!p.CustomerBillingAddress.Null, "customerBillingAddress", "customerBillingAddress cannot be null")
	if a := p.CustomerBillingAddress; a.Set && !a.Null {
		s.checkAddress(&v, "customerBillingAddress", &a.Value)
	}
	if err := v.err(); err != nil {
		return nil, err
	}
	return s.invoiceOp(ctx, account, id, NotificationInvoiceUpdated, func(_ Tx, r *invoiceRecord, _ time.Time) error {
		if r.Status != StatusSent {
			return stateError("invoice", "patch", r.Status)
		}
		setOptional(&r.PurchaseOrderNumber, p.PurchaseOrderNumber)
		setOptional(&r.Memo, p.Memo)
		setOptional(&r.Reference, p.Reference)
		setOptional(&r.CustomerBillingAddress, p.CustomerBillingAddress)
		setOptional(&r.DueDate, p.DueDate)
		return nil
	})
}

// setOptional applies a presence-aware field: absent keeps *dst, null
// clears it, a value replaces it.
func setOptional[T any](dst *T, o Optional[T]) {
	switch {
	case !o.Set:
	case o.Null:
		var zero T
		*dst = zero
	default:
		*dst = o.Value
	}
}
