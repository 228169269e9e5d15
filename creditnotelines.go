package billing

import (
	"context"
)

// creditNoteRRM are the revenue recognition methods credit note lines
// accept (the field description of ops 13 and 14).
var creditNoteRRM = []RevenueRecognitionMethod{RevenueRecognitionStraightLine, RevenueRecognitionPointInTime}

// buildCreditNoteLine validates p (and groupID, lineItemID on create) for
// credit note cn and returns the line it describes (no id or index yet).
func (s *Service) buildCreditNoteLine(ctx context.Context, tx Tx, v *validator, account string, cn *CreditNote, p *CreditNoteLineItemParams, groupID string) (*CreditNoteLineItem, error) {
	core, err := s.checkLine(ctx, tx, v, tableCreditNoteGroups, account, cn.ID, cn.Currency, lineInput{
		Title: p.Title, Description: p.Description, Quantity: p.Quantity, Rate: p.Rate, TaxRate: p.TaxRate,
		ExternalIDs: p.ExternalIDs, RateDisplay: p.RateDisplay, RevenueRecognitionMethod: p.RevenueRecognitionMethod,
		RevenueClassification: p.RevenueClassification, ProductID: p.ProductID, GroupID: groupID,
		UnitCode: p.UnitCode, TaxCategory: p.TaxCategory, allowedRRM: creditNoteRRM,
	})
	if err != nil {
		return nil, err
	}
	st, err := s.creditNoteTaxStatus(ctx, tx, account, cn)
	if err != nil {
		return nil, err
	}
	checkLineTax(v, st, p.TaxRate)
	if sp := p.ServicePeriod; sp != nil {
		v.check(!sp.Start.IsZero(), "servicePeriod.start", "servicePeriod.start is required")
		v.check(!sp.EndInclusive.IsZero(), "servicePeriod.endInclusive", "servicePeriod.endInclusive is required")
		v.check(!sp.EndInclusive.Before(sp.Start), "servicePeriod.endInclusive", "servicePeriod.endInclusive must not be before its start")
	}
	return &CreditNoteLineItem{LineItem: core, CreditNoteID: cn.ID, ServicePeriod: copyOf(p.ServicePeriod)}, nil
}

// CreateCreditNoteLineItem is op 13: it adds a line to a DRAFT or
// IN_PROGRESS credit note at the next index, recomputes the totals and emits
// CREDIT_NOTE_UPDATED. Returns not_found for the credit note,
// validation_failed (p.CreditNoteID not creditNoteID, an unknown groupId,
// lineItemId or productId included), and invalid_state when the credit note
// is not editable.
func (s *Service) CreateCreditNoteLineItem(ctx context.Context, account, creditNoteID string, p CreateCreditNoteLineItemParams) (*CreditNoteLineItem, error) {
	return creditNoteLines.createLine(ctx, s, account, creditNoteID, func(tx Tx, cn *CreditNote) (*CreditNoteLineItem, error) {
		var v validator
		switch {
		case p.CreditNoteID == "":
			v.add("creditNoteId", "creditNoteId is required")
		case p.CreditNoteID != creditNoteID:
			v.add("creditNoteId", "creditNoteId must be the credit note of the path")
		}
		l, err := s.buildCreditNoteLine(ctx, tx, &v, account, cn, &p.CreditNoteLineItemParams, p.GroupID)
		if err != nil {
			return nil, err
		}
		if p.LineItemID != "" {
			if cn.InvoiceID == "" {
				v.add("lineItemId", "lineItemId needs a credit note that credits an invoice")
			} else if err := s.checkRef(ctx, tx, &v, tableInvoiceLines, key(account, cn.InvoiceID, p.LineItemID), "lineItemId"); err != nil {
				return nil, err
			}
			l.LineItemID = p.LineItemID
		}
		return l, v.err()
	})
}

// ListCreditNoteLineItems is op 12: a credit note's lines by index (ASC
// unless f.SortOrder says DESC). Returns not_found and validation_failed.
func (s *Service) ListCreditNoteLineItems(ctx context.Context, account, creditNoteID string, f LineItemFilter, p ListParams) (Page[CreditNoteLineItem], error) {
	return creditNoteLines.listLines(ctx, s, account, creditNoteID, f, p)
}

// UpdateCreditNoteLineItem is op 14: it replaces the fields of p on a line
// (optional ones left out are cleared; groupId, lineItemId and the index are
// kept), recomputes the totals and emits CREDIT_NOTE_UPDATED. Returns
// not_found, validation_failed and invalid_state.
func (s *Service) UpdateCreditNoteLineItem(ctx context.Context, account, creditNoteID, lineID string, p CreditNoteLineItemParams) (*CreditNoteLineItem, error) {
	return creditNoteLines.updateLine(ctx, s, account, creditNoteID, lineID, func(tx Tx, cn *CreditNote, old *CreditNoteLineItem) (*CreditNoteLineItem, error) {
		var v validator
		l, err := s.buildCreditNoteLine(ctx, tx, &v, account, cn, &p, "")
		if err != nil {
			return nil, err
		}
		l.GroupID, l.LineItemID = old.GroupID, old.LineItemID
		return l, v.err()
	})
}

// DeleteCreditNoteLineItem removes a line, recomputes the totals and emits
// CREDIT_NOTE_UPDATED. Returns not_found and invalid_state.
func (s *Service) DeleteCreditNoteLineItem(ctx context.Context, account, creditNoteID, lineID string) error {
	return creditNoteLines.deleteLine(ctx, s, account, creditNoteID, lineID)
}

// checkInvoiceGroupRef validates lineItemGroupId: a group of the credited
// invoice.
func (s *Service) checkInvoiceGroupRef(ctx context.Context, tx Tx, v *validator, account string, cn *CreditNote, groupID string) error {
	if groupID == "" {
		return nil
	}
	if cn.InvoiceID == "" {
		v.add("lineItemGroupId", "lineItemGroupId needs a credit note that credits an invoice")
		return nil
	}
	return s.checkRef(ctx, tx, v, tableInvoiceGroups, key(account, cn.InvoiceID, groupID), "lineItemGroupId")
}

// CreateCreditNoteLineItemGroup adds a group to a DRAFT or IN_PROGRESS
// credit note and emits CREDIT_NOTE_UPDATED. Returns not_found,
// validation_failed and invalid_state.
func (s *Service) CreateCreditNoteLineItemGroup(ctx context.Context, account, creditNoteID string, p CreditNoteLineItemGroupParams) (*CreditNoteLineItemGroup, error) {
	return creditNoteLines.createGroup(ctx, s, account, creditNoteID, p.Title, p.Description, func(tx Tx, cn *CreditNote, v *validator) (*CreditNoteLineItemGroup, error) {
		g := &CreditNoteLineItemGroup{CreditNoteID: cn.ID, LineItemGroupID: p.LineItemGroupID}
		return g, s.checkInvoiceGroupRef(ctx, tx, v, account, cn, p.LineItemGroupID)
	})
}

// ListCreditNoteLineItemGroups is op 15: a credit note's groups by index
// (ASC unless f.SortOrder says DESC). Returns not_found and
// validation_failed.
func (s *Service) ListCreditNoteLineItemGroups(ctx context.Context, account, creditNoteID string, f LineItemFilter, p ListParams) (Page[CreditNoteLineItemGroup], error) {
	return creditNoteLines.listGroups(ctx, s, account, creditNoteID, f, p)
}

// UpdateCreditNoteLineItemGroup replaces a group's fields and emits
// CREDIT_NOTE_UPDATED. Returns not_found, validation_failed and
// invalid_state.
func (s *Service) UpdateCreditNoteLineItemGroup(ctx context.Context, account, creditNoteID, groupID string, p CreditNoteLineItemGroupParams) (*CreditNoteLineItemGroup, error) {
	return creditNoteLines.updateGroup(ctx, s, account, creditNoteID, groupID, p.Title, p.Description,
		func(tx Tx, cn *CreditNote, v *validator, g *CreditNoteLineItemGroup) error {
			g.LineItemGroupID = p.LineItemGroupID
			return s.checkInvoiceGroupRef(ctx, tx, v, account, cn, p.LineItemGroupID)
		})
}

// DeleteCreditNoteLineItemGroup removes an empty group and emits
// CREDIT_NOTE_UPDATED. Returns not_found, and invalid_state when the credit
// note is not editable or the group still has lines.
func (s *Service) DeleteCreditNoteLineItemGroup(ctx context.Context, account, creditNoteID, groupID string) error {
	return creditNoteLines.deleteGroup(ctx, s, account, creditNoteID, groupID)
}
