package billing

import (
	"context"
	"time"
)

func creditNoteView(cn *CreditNote) any { return cn }

// creditNoteLinesOp is linesOp for credit notes.
func creditNoteLinesOp[T any](ctx context.Context, s *Service, account, creditNoteID string, fn func(tx Tx, cn *CreditNote, now time.Time) (T, error)) (T, error) {
	return linesOp[T, CreditNote, CreditNoteLineItem, CreditNoteLineItemGroup](ctx, s, creditNoteKind, account, creditNoteID, creditNoteView, fn)
}

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
		strict: true, allowedRRM: creditNoteRRM,
	})
	if err != nil {
		return nil, err
	}
	if sp := p.ServicePeriod; sp != nil {
		v.check(!sp.Start.IsZero(), "servicePeriod.start", "servicePeriod.start is required")
		v.check(!sp.EndInclusive.IsZero(), "servicePeriod.endInclusive", "servicePeriod.endInclusive is required")
		v.check(!sp.EndInclusive.Before(sp.Start), "servicePeriod.endInclusive", "servicePeriod.endInclusive must not be before its start")
	}
	l := &CreditNoteLineItem{LineItem: core, CreditNoteID: cn.ID}
	if p.ServicePeriod != nil {
		sp := *p.ServicePeriod
		l.ServicePeriod = &sp
	}
	return l, nil
}

// CreateCreditNoteLineItem is op 13: it adds a line to a DRAFT or
// IN_PROGRESS credit note at the next index, recomputes the totals and emits
// CREDIT_NOTE_UPDATED. Returns not_found for the credit note,
// validation_failed (p.CreditNoteID not creditNoteID, an unknown groupId,
// lineItemId or productId included), and invalid_state when the credit note
// is not editable.
func (s *Service) CreateCreditNoteLineItem(ctx context.Context, account, creditNoteID string, p CreateCreditNoteLineItemParams) (*CreditNoteLineItem, error) {
	return creditNoteLinesOp(ctx, s, account, creditNoteID, func(tx Tx, cn *CreditNote, _ time.Time) (*CreditNoteLineItem, error) {
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
		if err := v.err(); err != nil {
			return nil, err
		}
		return l, putNewLine(ctx, s, tx, tableCreditNoteLines, account, cn.ID, l)
	})
}

// ListCreditNoteLineItems is op 12: a credit note's lines by index (ASC
// unless f.SortOrder says DESC). Returns not_found and validation_failed.
func (s *Service) ListCreditNoteLineItems(ctx context.Context, account, creditNoteID string, f LineItemFilter, p ListParams) (Page[CreditNoteLineItem], error) {
	return listDocItems[CreditNoteLineItem](ctx, s, creditNoteKind, tableCreditNoteLines, "credit_note_lines", account, creditNoteID, f, p)
}

// UpdateCreditNoteLineItem is op 14: it replaces the fields of p on a line
// (optional ones left out are cleared; groupId, lineItemId and the index are
// kept), recomputes the totals and emits CREDIT_NOTE_UPDATED. Returns
// not_found, validation_failed and invalid_state.
func (s *Service) UpdateCreditNoteLineItem(ctx context.Context, account, creditNoteID, lineID string, p CreditNoteLineItemParams) (*CreditNoteLineItem, error) {
	return creditNoteLinesOp(ctx, s, account, creditNoteID, func(tx Tx, cn *CreditNote, _ time.Time) (*CreditNoteLineItem, error) {
		old, err := getLine[CreditNoteLineItem](ctx, tx, tableCreditNoteLines, account, creditNoteID, lineID, "line item")
		if err != nil {
			return nil, err
		}
		var v validator
		l, err := s.buildCreditNoteLine(ctx, tx, &v, account, cn, &p, "")
		if err != nil {
			return nil, err
		}
		if err := v.err(); err != nil {
			return nil, err
		}
		l.ID, l.Index, l.GroupID, l.LineItemID = old.ID, old.Index, old.GroupID, old.LineItemID
		return l, putRecord(ctx, tx, tableCreditNoteLines, key(account, creditNoteID, lineID), l)
	})
}

// DeleteCreditNoteLineItem removes a line, recomputes the totals and emits
// CREDIT_NOTE_UPDATED. Returns not_found and invalid_state.
func (s *Service) DeleteCreditNoteLineItem(ctx context.Context, account, creditNoteID, lineID string) error {
	_, err := creditNoteLinesOp(ctx, s, account, creditNoteID, func(tx Tx, _ *CreditNote, _ time.Time) (struct{}, error) {
		return struct{}{}, lookupErr(tx.Delete(ctx, tableCreditNoteLines, key(account, creditNoteID, lineID)), "line item")
	})
	return err
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
	return creditNoteLinesOp(ctx, s, account, creditNoteID, func(tx Tx, cn *CreditNote, _ time.Time) (*CreditNoteLineItemGroup, error) {
		var v validator
		s.checkGroupParams(&v, p.Title, p.Description)
		if err := s.checkInvoiceGroupRef(ctx, tx, &v, account, cn, p.LineItemGroupID); err != nil {
			return nil, err
		}
		if err := v.err(); err != nil {
			return nil, err
		}
		g := &CreditNoteLineItemGroup{
			LineItemGroup: LineItemGroup{Title: p.Title, Description: p.Description},
			CreditNoteID:  cn.ID, LineItemGroupID: p.LineItemGroupID,
		}
		return g, putNewGroup(ctx, s, tx, tableCreditNoteGroups, account, cn.ID, g, cn.Currency)
	})
}

// ListCreditNoteLineItemGroups is op 15: a credit note's groups by index
// (ASC unless f.SortOrder says DESC). Returns not_found and
// validation_failed.
func (s *Service) ListCreditNoteLineItemGroups(ctx context.Context, account, creditNoteID string, f LineItemFilter, p ListParams) (Page[CreditNoteLineItemGroup], error) {
	return listDocItems[CreditNoteLineItemGroup](ctx, s, creditNoteKind, tableCreditNoteGroups, "credit_note_groups", account, creditNoteID, f, p)
}

// UpdateCreditNoteLineItemGroup replaces a group's fields and emits
// CREDIT_NOTE_UPDATED. Returns not_found, validation_failed and
// invalid_state.
func (s *Service) UpdateCreditNoteLineItemGroup(ctx context.Context, account, creditNoteID, groupID string, p CreditNoteLineItemGroupParams) (*CreditNoteLineItemGroup, error) {
	return creditNoteLinesOp(ctx, s, account, creditNoteID, func(tx Tx, cn *CreditNote, _ time.Time) (*CreditNoteLineItemGroup, error) {
		return updateGroup(ctx, s, tx, tableCreditNoteGroups, account, creditNoteID, groupID, p.Title, p.Description,
			func(v *validator, g *CreditNoteLineItemGroup) error {
				g.LineItemGroupID = p.LineItemGroupID
				return s.checkInvoiceGroupRef(ctx, tx, v, account, cn, p.LineItemGroupID)
			})
	})
}

// DeleteCreditNoteLineItemGroup removes an empty group and emits
// CREDIT_NOTE_UPDATED. Returns not_found, and invalid_state when the credit
// note is not editable or the group still has lines.
func (s *Service) DeleteCreditNoteLineItemGroup(ctx context.Context, account, creditNoteID, groupID string) error {
	_, err := creditNoteLinesOp(ctx, s, account, creditNoteID, func(tx Tx, _ *CreditNote, _ time.Time) (struct{}, error) {
		return struct{}{}, deleteGroup[CreditNoteLineItem](ctx, tx, tableCreditNoteLines, tableCreditNoteGroups, account, creditNoteID, groupID)
	})
	return err
}
