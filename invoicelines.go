package billing

import "context"

// CreateInvoiceLineItem adds a line to a DRAFT or IN_PROGRESS invoice, at
// the next index, recomputes the totals of its group and of the invoice, and
// emits INVOICE_UPDATED. Returns not_found for the invoice, validation_failed
// (an unknown groupId, priceId or productId included), and invalid_state
// when the invoice is not editable.
func (s *Service) CreateInvoiceLineItem(ctx context.Context, account, invoiceID string, p InvoiceLineItemParams) (*InvoiceLineItem, error) {
	return nil, errNotYet
}

// ListInvoiceLineItems lists an invoice's lines by index (ASC unless
// f.SortOrder says DESC). Returns not_found for the invoice and
// validation_failed for a bad sort order, limit or cursor.
func (s *Service) ListInvoiceLineItems(ctx context.Context, account, invoiceID string, f LineItemFilter, p ListParams) (Page[InvoiceLineItem], error) {
	return Page[InvoiceLineItem]{}, errNotYet
}

// UpdateInvoiceLineItem is op 18: it replaces every field of a line
// (optional fields left out are cleared; the index is kept), recomputes the
// totals of the line, its groups and the invoice, and emits INVOICE_UPDATED.
// Returns not_found (invoice, or a line not of that invoice),
// validation_failed, and invalid_state when the invoice is not editable.
func (s *Service) UpdateInvoiceLineItem(ctx context.Context, account, invoiceID, lineID string, p InvoiceLineItemParams) (*InvoiceLineItem, error) {
	return nil, errNotYet
}

// DeleteInvoiceLineItem removes a line, recomputes the totals and emits
// INVOICE_UPDATED. Returns not_found and invalid_state as
// UpdateInvoiceLineItem.
func (s *Service) DeleteInvoiceLineItem(ctx context.Context, account, invoiceID, lineID string) error {
	return errNotYet
}

// CreateInvoiceLineItemGroup adds a group to a DRAFT or IN_PROGRESS invoice
// at the next group index and emits INVOICE_UPDATED. Returns not_found,
// validation_failed and invalid_state.
func (s *Service) CreateInvoiceLineItemGroup(ctx context.Context, account, invoiceID string, p InvoiceLineItemGroupParams) (*InvoiceLineItemGroup, error) {
	return nil, errNotYet
}

// ListInvoiceLineItemGroups lists an invoice's groups by index (ASC unless
// f.SortOrder says DESC). Returns not_found and validation_failed.
func (s *Service) ListInvoiceLineItemGroups(ctx context.Context, account, invoiceID string, f LineItemFilter, p ListParams) (Page[InvoiceLineItemGroup], error) {
	return Page[InvoiceLineItemGroup]{}, errNotYet
}

// UpdateInvoiceLineItemGroup replaces a group's title and description and
// emits INVOICE_UPDATED. Returns not_found, validation_failed and
// invalid_state.
func (s *Service) UpdateInvoiceLineItemGroup(ctx context.Context, account, invoiceID, groupID string, p InvoiceLineItemGroupParams) (*InvoiceLineItemGroup, error) {
	return nil, errNotYet
}

// DeleteInvoiceLineItemGroup removes an empty group and emits
// INVOICE_UPDATED. Returns not_found, and invalid_state when the invoice is
// not editable or the group still has lines.
func (s *Service) DeleteInvoiceLineItemGroup(ctx context.Context, account, invoiceID, groupID string) error {
	return errNotYet
}
