package billing

import "context"

// CreateCreditNoteLineItem is op 13: it adds a line to a DRAFT or
// IN_PROGRESS credit note at the next index, recomputes the totals and emits
// CREDIT_NOTE_UPDATED. Returns not_found for the credit note,
// validation_failed (p.CreditNoteID not creditNoteID, an unknown groupId,
// lineItemId or productId included), and invalid_state when the credit note
// is not editable.
func (s *Service) CreateCreditNoteLineItem(ctx context.Context, account, creditNoteID string, p CreateCreditNoteLineItemParams) (*CreditNoteLineItem, error) {
	return nil, errNotYet
}

// ListCreditNoteLineItems is op 12: a credit note's lines by index (ASC
// unless f.SortOrder says DESC). Returns not_found and validation_failed.
func (s *Service) ListCreditNoteLineItems(ctx context.Context, account, creditNoteID string, f LineItemFilter, p ListParams) (Page[CreditNoteLineItem], error) {
	return Page[CreditNoteLineItem]{}, errNotYet
}

// UpdateCreditNoteLineItem is op 14: it replaces the fields of p on a line
// (optional ones left out are cleared; groupId, lineItemId and the index are
// kept), recomputes the totals and emits CREDIT_NOTE_UPDATED. Returns
// not_found, validation_failed and invalid_state.
func (s *Service) UpdateCreditNoteLineItem(ctx context.Context, account, creditNoteID, lineID string, p CreditNoteLineItemParams) (*CreditNoteLineItem, error) {
	return nil, errNotYet
}

// DeleteCreditNoteLineItem removes a line, recomputes the totals and emits
// CREDIT_NOTE_UPDATED. Returns not_found and invalid_state.
func (s *Service) DeleteCreditNoteLineItem(ctx context.Context, account, creditNoteID, lineID string) error {
	return errNotYet
}

// CreateCreditNoteLineItemGroup adds a group to a DRAFT or IN_PROGRESS
// credit note and emits CREDIT_NOTE_UPDATED. Returns not_found,
// validation_failed and invalid_state.
func (s *Service) CreateCreditNoteLineItemGroup(ctx context.Context, account, creditNoteID string, p CreditNoteLineItemGroupParams) (*CreditNoteLineItemGroup, error) {
	return nil, errNotYet
}

// ListCreditNoteLineItemGroups is op 15: a credit note's groups by index
// (ASC unless f.SortOrder says DESC). Returns not_found and
// validation_failed.
func (s *Service) ListCreditNoteLineItemGroups(ctx context.Context, account, creditNoteID string, f LineItemFilter, p ListParams) (Page[CreditNoteLineItemGroup], error) {
	return Page[CreditNoteLineItemGroup]{}, errNotYet
}

// UpdateCreditNoteLineItemGroup replaces a group's fields and emits
// CREDIT_NOTE_UPDATED. Returns not_found, validation_failed and
// invalid_state.
func (s *Service) UpdateCreditNoteLineItemGroup(ctx context.Context, account, creditNoteID, groupID string, p CreditNoteLineItemGroupParams) (*CreditNoteLineItemGroup, error) {
	return nil, errNotYet
}

// DeleteCreditNoteLineItemGroup removes an empty group and emits
// CREDIT_NOTE_UPDATED. Returns not_found, and invalid_state when the credit
// note is not editable or the group still has lines.
func (s *Service) DeleteCreditNoteLineItemGroup(ctx context.Context, account, creditNoteID, groupID string) error {
	return errNotYet
}
