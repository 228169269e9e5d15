package billing

import (
	"context"
	"encoding/json"
	"strconv"
	"time"
)

func invoiceView(r *invoiceRecord) any { return &r.Invoice }

// invoiceLinesOp is linesOp for invoices.
func invoiceLinesOp[T any](ctx context.Context, s *Service, account, invoiceID string, fn func(tx Tx, r *invoiceRecord, now time.Time) (T, error)) (T, error) {
	return linesOp[T, invoiceRecord, InvoiceLineItem, InvoiceLineItemGroup](ctx, s, invoiceKind, account, invoiceID, invoiceView, fn)
}

// buildInvoiceLine validates p for invoice r and returns the line it
// describes (no id or index yet). strict requires externalIds.
func (s *Service) buildInvoiceLine(ctx context.Context, tx Tx, account string, r *Invoice, p *InvoiceLineItemParams, strict bool) (*InvoiceLineItem, error) {
	var v validator
	core, err := s.checkLine(ctx, tx, &v, tableInvoiceGroups, account, r.ID, r.Currency, lineInput{
		Title: p.Title, Description: p.Description, Quantity: p.Quantity, Rate: p.Rate, TaxRate: p.TaxRate,
		ExternalIDs: p.ExternalIDs, RateDisplay: p.RateDisplay, RevenueRecognitionMethod: p.RevenueRecognitionMethod,
		RevenueClassification: p.RevenueClassification, ProductID: p.ProductID, PriceID: p.PriceID, GroupID: p.GroupID,
		strict: strict,
	})
	if err != nil {
		return nil, err
	}
	s.checkString(&v, "creditGrantId", p.CreditGrantID, false)
	if p.ServicePeriodStart != nil && p.ServicePeriodEnd != nil && p.ServicePeriodEnd.Before(*p.ServicePeriodStart) {
		v.add("servicePeriodEnd", "servicePeriodEnd must not be before servicePeriodStart")
	}
	if sp := p.ServicePeriod; sp != nil {
		v.check(!sp.StartDate.IsZero(), "servicePeriod.startDate", "servicePeriod.startDate is required")
		v.check(!sp.EndDate.IsZero(), "servicePeriod.endDate", "servicePeriod.endDate is required")
		v.check(!sp.EndDate.Before(sp.StartDate), "servicePeriod.endDate", "servicePeriod.endDate must not be before its startDate")
	}
	if err := v.err(); err != nil {
		return nil, err
	}
	l := &InvoiceLineItem{LineItem: core, InvoiceID: r.ID, CreditGrantID: p.CreditGrantID}
	if p.ServicePeriodStart != nil {
		t := NormalizeTime(*p.ServicePeriodStart)
		l.ServicePeriodStart = &t
	}
	if p.ServicePeriodEnd != nil {
		t := NormalizeTime(*p.ServicePeriodEnd)
		l.ServicePeriodEnd = &t
	}
	if p.ServicePeriod != nil {
		sp := *p.ServicePeriod
		l.ServicePeriod = &sp
	}
	return l, nil
}

// CreateInvoiceLineItem adds a line to a DRAFT or IN_PROGRESS invoice, at
// the next index, recomputes the totals of its group and of the invoice, and
// emits INVOICE_UPDATED. Returns not_found for the invoice, validation_failed
// (an unknown groupId, priceId or productId included), and invalid_state
// when the invoice is not editable.
func (s *Service) CreateInvoiceLineItem(ctx context.Context, account, invoiceID string, p InvoiceLineItemParams) (*InvoiceLineItem, error) {
	return invoiceLinesOp(ctx, s, account, invoiceID, func(tx Tx, r *invoiceRecord, _ time.Time) (*InvoiceLineItem, error) {
		l, err := s.buildInvoiceLine(ctx, tx, account, &r.Invoice, &p, true)
		if err != nil {
			return nil, err
		}
		return l, putNewLine(ctx, s, tx, tableInvoiceLines, account, r.ID, l)
	})
}

// ListInvoiceLineItems lists an invoice's lines by index (ASC unless
// f.SortOrder says DESC). Returns not_found for the invoice and
// validation_failed for a bad sort order, limit or cursor.
func (s *Service) ListInvoiceLineItems(ctx context.Context, account, invoiceID string, f LineItemFilter, p ListParams) (Page[InvoiceLineItem], error) {
	return listDocItems[InvoiceLineItem](ctx, s, invoiceKind, tableInvoiceLines, "invoice_lines", account, invoiceID, f, p)
}

// UpdateInvoiceLineItem is op 18: it replaces every field of a line
// (optional fields left out are cleared; the index is kept), recomputes the
// totals of the line, its groups and the invoice, and emits INVOICE_UPDATED.
// Returns not_found (invoice, or a line not of that invoice),
// validation_failed, and invalid_state when the invoice is not editable.
func (s *Service) UpdateInvoiceLineItem(ctx context.Context, account, invoiceID, lineID string, p InvoiceLineItemParams) (*InvoiceLineItem, error) {
	return invoiceLinesOp(ctx, s, account, invoiceID, func(tx Tx, r *invoiceRecord, _ time.Time) (*InvoiceLineItem, error) {
		old, err := getLine[InvoiceLineItem](ctx, tx, tableInvoiceLines, account, invoiceID, lineID, "line item")
		if err != nil {
			return nil, err
		}
		l, err := s.buildInvoiceLine(ctx, tx, account, &r.Invoice, &p, true)
		if err != nil {
			return nil, err
		}
		l.ID, l.Index = old.ID, old.Index
		return l, putRecord(ctx, tx, tableInvoiceLines, key(account, invoiceID, lineID), l)
	})
}

// DeleteInvoiceLineItem removes a line, recomputes the totals and emits
// INVOICE_UPDATED. Returns not_found and invalid_state as
// UpdateInvoiceLineItem.
func (s *Service) DeleteInvoiceLineItem(ctx context.Context, account, invoiceID, lineID string) error {
	_, err := invoiceLinesOp(ctx, s, account, invoiceID, func(tx Tx, _ *invoiceRecord, _ time.Time) (struct{}, error) {
		return struct{}{}, lookupErr(tx.Delete(ctx, tableInvoiceLines, key(account, invoiceID, lineID)), "line item")
	})
	return err
}

// CreateInvoiceLineItemGroup adds a group to a DRAFT or IN_PROGRESS invoice
// at the next group index and emits INVOICE_UPDATED. Returns not_found,
// validation_failed and invalid_state.
func (s *Service) CreateInvoiceLineItemGroup(ctx context.Context, account, invoiceID string, p InvoiceLineItemGroupParams) (*InvoiceLineItemGroup, error) {
	return invoiceLinesOp(ctx, s, account, invoiceID, func(tx Tx, r *invoiceRecord, _ time.Time) (*InvoiceLineItemGroup, error) {
		var v validator
		s.checkGroupParams(&v, p.Title, p.Description)
		if err := v.err(); err != nil {
			return nil, err
		}
		g := &InvoiceLineItemGroup{LineItemGroup: LineItemGroup{Title: p.Title, Description: p.Description}, InvoiceID: r.ID}
		return g, putNewGroup(ctx, s, tx, tableInvoiceGroups, account, r.ID, g, r.Currency)
	})
}

// ListInvoiceLineItemGroups lists an invoice's groups by index (ASC unless
// f.SortOrder says DESC). Returns not_found and validation_failed.
func (s *Service) ListInvoiceLineItemGroups(ctx context.Context, account, invoiceID string, f LineItemFilter, p ListParams) (Page[InvoiceLineItemGroup], error) {
	return listDocItems[InvoiceLineItemGroup](ctx, s, invoiceKind, tableInvoiceGroups, "invoice_groups", account, invoiceID, f, p)
}

// UpdateInvoiceLineItemGroup replaces a group's title and description and
// emits INVOICE_UPDATED. Returns not_found, validation_failed and
// invalid_state.
func (s *Service) UpdateInvoiceLineItemGroup(ctx context.Context, account, invoiceID, groupID string, p InvoiceLineItemGroupParams) (*InvoiceLineItemGroup, error) {
	// A new title leaves the group's totals as they are, so the group
	// returned is the one stored after the recomputation.
	return invoiceLinesOp(ctx, s, account, invoiceID, func(tx Tx, _ *invoiceRecord, _ time.Time) (*InvoiceLineItemGroup, error) {
		return updateGroup[InvoiceLineItemGroup](ctx, s, tx, tableInvoiceGroups, account, invoiceID, groupID, p.Title, p.Description, nil)
	})
}

// DeleteInvoiceLineItemGroup removes an empty group and emits
// INVOICE_UPDATED. Returns not_found, and invalid_state when the invoice is
// not editable or the group still has lines.
func (s *Service) DeleteInvoiceLineItemGroup(ctx context.Context, account, invoiceID, groupID string) error {
	_, err := invoiceLinesOp(ctx, s, account, invoiceID, func(tx Tx, _ *invoiceRecord, _ time.Time) (struct{}, error) {
		return struct{}{}, deleteGroup[InvoiceLineItem](ctx, tx, tableInvoiceLines, tableInvoiceGroups, account, invoiceID, groupID)
	})
	return err
}

// Entry points of the billing engine (schedule.go). They run inside the
// engine's own transaction and emit nothing: the engine emits.

// draftInvoice builds, without storing, the invoice p with lines as create
// would store it (customer fields copied, indexes, line/group/document
// totals), for previews.
func (s *Service) draftInvoice(ctx context.Context, tx Tx, account string, p InvoiceParams, lines []InvoiceLineItemParams, now time.Time) (*Invoice, []InvoiceLineItem, error) {
	r, err := s.newInvoice(ctx, tx, account, p, NormalizeTime(now))
	if err != nil {
		return nil, nil, err
	}
	built, err := s.buildEngineLines(ctx, tx, account, &r.Invoice, lines)
	if err != nil {
		return nil, nil, err
	}
	cores := make([]*LineItem, len(built))
	out := make([]InvoiceLineItem, len(built))
	for i, l := range built {
		l.ID, l.Index = s.newID(), i
		cores[i], out[i] = &built[i].LineItem, *l
	}
	total, _ := sumLines(r.Currency, cores)
	// The refusal recompute makes when the run stores the same invoice.
	if err := checkTotalsFit("quantity", "the invoice's", r.Totals, total); err != nil {
		return nil, nil, err
	}
	r.setTotals(total, r.CreatedAt)
	return &r.Invoice, out, nil
}

// buildEngineLines validates the engine's lines for invoice inv; errors name
// the line (lineItems[i].field).
func (s *Service) buildEngineLines(ctx context.Context, tx Tx, account string, inv *Invoice, lines []InvoiceLineItemParams) ([]*InvoiceLineItem, error) {
	var v validator
	out := make([]*InvoiceLineItem, 0, len(lines))
	for i := range lines {
		l, err := s.buildInvoiceLine(ctx, tx, account, inv, &lines[i], false)
		if CodeOf(err) == CodeValidationFailed {
			v.merge("lineItems["+strconv.Itoa(i)+"]", err)
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	if len(lines) > maxLines {
		v.add("lineItems", "a document has at most %d line items", maxLines)
	}
	return out, v.err()
}

// createInvoiceTx stores a new DRAFT invoice with its lines inside tx
// (calculatedAt set when non-zero). Emits nothing: callers emit.
func (s *Service) createInvoiceTx(ctx context.Context, tx Tx, account string, p InvoiceParams, lines []InvoiceLineItemParams, calculatedAt time.Time) (*Invoice, error) {
	now := s.clock()
	r, err := s.newInvoice(ctx, tx, account, p, now)
	if err != nil {
		return nil, err
	}
	if !calculatedAt.IsZero() {
		t := NormalizeTime(calculatedAt)
		r.CalculatedAt = &t
	}
	if err := saveDoc(ctx, tx, invoiceKind, account, r); err != nil {
		return nil, err
	}
	if err := s.recordDocRounding(ctx, tx, account, r.ID); err != nil {
		return nil, err
	}
	if err := s.storeEngineLines(ctx, tx, account, &r.Invoice, lines); err != nil {
		return nil, err
	}
	if err := recompute[invoiceRecord, InvoiceLineItem, InvoiceLineItemGroup](ctx, s, tx, invoiceKind, account, r, now); err != nil {
		return nil, err
	}
	return &r.Invoice, nil
}

// storeEngineLines validates and stores lines as the invoice's lines, at
// indexes from 0.
func (s *Service) storeEngineLines(ctx context.Context, tx Tx, account string, inv *Invoice, lines []InvoiceLineItemParams) error {
	built, err := s.buildEngineLines(ctx, tx, account, inv, lines)
	if err != nil {
		return err
	}
	for i, l := range built {
		l.ID, l.Index = s.newID(), i
		if err := putRecord(ctx, tx, tableInvoiceLines, key(account, inv.ID, l.ID), l); err != nil {
			return err
		}
	}
	return nil
}

// replaceInvoiceLinesTx replaces all lines of a DRAFT/IN_PROGRESS invoice
// and recomputes totals (the engine's recomputation); it reports whether
// anything changed. When nothing changed, nothing is written. Emits nothing.
func (s *Service) replaceInvoiceLinesTx(ctx context.Context, tx Tx, account, invoiceID string, lines []InvoiceLineItemParams, calculatedAt time.Time) (*Invoice, bool, error) {
	now := s.clock()
	r, err := loadDoc(ctx, tx, invoiceKind, account, invoiceID)
	if err != nil {
		return nil, false, err
	}
	if err := requireEditable("invoice", r); err != nil {
		return nil, false, err
	}
	built, err := s.buildEngineLines(ctx, tx, account, &r.Invoice, lines)
	if err != nil {
		return nil, false, err
	}
	old, err := s.listInvoiceLinesTx(ctx, tx, account, invoiceID)
	if err != nil {
		return nil, false, err
	}
	if sameLines(old, built) {
		return &r.Invoice, false, nil
	}
	if err := deleteUnder(ctx, tx, tableInvoiceLines, prefix(account, invoiceID)); err != nil {
		return nil, false, err
	}
	if err := s.storeEngineLines(ctx, tx, account, &r.Invoice, lines); err != nil {
		return nil, false, err
	}
	if !calculatedAt.IsZero() {
		t := NormalizeTime(calculatedAt)
		r.CalculatedAt = &t
	}
	err = recompute[invoiceRecord, InvoiceLineItem, InvoiceLineItemGroup](ctx, s, tx, invoiceKind, account, r, now)
	return &r.Invoice, true, err
}

// sameLines reports whether built lines equal the stored ones but for ids.
func sameLines(old []InvoiceLineItem, built []*InvoiceLineItem) bool {
	if len(old) != len(built) {
		return false
	}
	for i := range old {
		a, b := old[i], *built[i]
		a.ID, b.ID, a.Index, b.Index = "", "", 0, 0
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		if string(ja) != string(jb) {
			return false
		}
	}
	return true
}
