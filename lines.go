package billing

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"
)

// This file holds the lines and groups of invoices and credit notes: the one
// implementation both documents share (storage, index assignment, totals,
// validation of line fields, the change of lines in one transaction), then
// the typed API of each document's lines and groups.

// scanAll decodes every record of table under the document's prefix, in
// key (index) order.
func scanAll[T any](ctx context.Context, tx Tx, t Table, account, docID string) ([]*T, error) {
	var out []*T
	err := eachRecord(ctx, tx, t, Range{Prefix: prefix(account, docID)}, func(item *T) error {
		out = append(out, item)
		return nil
	})
	return out, err
}

// recompute recomputes the totals of every group and of the document d
// from its stored lines, writing the groups whose totals changed, and
// stores d. Every change to a line or a group ends with it, in the same
// transaction.
func recompute[D, L, G any, PD interface {
	*D
	document
}, PL lineRecord[L], PG groupRecord[G]](ctx context.Context, s *Service, tx Tx, k docKind[D], account string, d PD, now time.Time) error {
	lines, err := scanAll[L](ctx, tx, k.lines, account, d.docID())
	if err != nil {
		return err
	}
	cores := lineCores[L, PL](lines)
	cur := d.docCurrency()
	total, byGroup := sumLines(cur, cores)
	if err := checkTotalsFit("quantity", "the "+k.name+"'s", d.docTotals(), total); err != nil {
		return err
	}
	groups, err := scanAll[G](ctx, tx, k.groups, account, d.docID())
	if err != nil {
		return err
	}
	for _, g := range groups {
		gc := PG(g).groupCore()
		t, ok := byGroup[gc.ID]
		if !ok {
			t = zeroTotals(cur)
		}
		if gc.Totals.equal(t) {
			continue
		}
		if err := checkTotalsFit("groupId", "the group's", gc.Totals, t); err != nil {
			return err
		}
		gc.Totals = t
		if err := putRecord(ctx, tx, k.groups, key(account, d.docID(), gc.ID), g); err != nil {
			return err
		}
	}
	d.setTotals(total, now)
	return saveDoc(ctx, tx, k, account, d)
}

// lineCores returns the shared part of each of a document's lines.
func lineCores[L any, PL lineRecord[L]](lines []*L) []*LineItem {
	cores := make([]*LineItem, len(lines))
	for i, l := range lines {
		cores[i] = PL(l).core()
	}
	return cores
}

// nextIndex returns the index of a new line or group of a document: one
// more than the last one's (key order is creation order), 0 for the first.
func nextIndex(ctx context.Context, tx Tx, t Table, account, docID string) (int, error) {
	next := 0
	err := tx.Scan(ctx, t, Range{Prefix: prefix(account, docID), Reverse: true}, func(_, v []byte) error {
		var last struct {
			Index int `json:"index"`
		}
		if err := json.Unmarshal(v, &last); err != nil {
			return err
		}
		next = last.Index + 1
		return ErrStopScan
	})
	return next, err
}

// countLines returns the number of lines of a document.
func countLines(ctx context.Context, tx Tx, t Table, account, docID string) (int, error) {
	n := 0
	err := tx.Scan(ctx, t, Range{Prefix: prefix(account, docID)}, func(_, _ []byte) error {
		n++
		return nil
	})
	return n, err
}

// maxLines bounds the line items of one document (docs/api-guide.md).
const maxLines = 1000

// groupHasLines reports whether any line of the document is in group.
func groupHasLines[L any, PL lineRecord[L]](ctx context.Context, tx Tx, t Table, account, docID, group string) (bool, error) {
	found := false
	err := tx.Scan(ctx, t, Range{Prefix: prefix(account, docID)}, func(_, v []byte) error {
		l := new(L)
		if err := json.Unmarshal(v, l); err != nil {
			return err
		}
		if PL(l).core().GroupID == group {
			found = true
			return ErrStopScan
		}
		return nil
	})
	return found, err
}

// getLine reads a line (or group) of a document; not_found when the
// document has no such record.
func getLine[T any](ctx context.Context, tx Tx, t Table, account, docID, id, kind string) (*T, error) {
	v, err := getRecord[T](ctx, tx, t, key(account, docID, id))
	return v, lookupErr(err, kind)
}

// listItems is the list of a document's lines or groups, by index.
func listItems[T any](ctx context.Context, s *Service, tx Tx, t Table, name, account, docID string, f LineItemFilter, p ListParams) (Page[T], error) {
	order, err := ParseSortOrder(string(f.SortOrder), SortAsc)
	if err != nil {
		return Page[T]{}, err
	}
	q := listQuery[T]{
		name: name, filter: docID, table: t, prefix: prefix(account, docID),
		desc: order == SortDesc, decode: decodeAll[T](nil),
	}
	return list(ctx, s, tx, q, p)
}

// listDocItems is the list of the lines or groups (table t, list name) of
// a document of kind k, by index. Returns not_found for the document.
func listDocItems[T, D any](ctx context.Context, s *Service, k docKind[D], t Table, name, account, docID string, f LineItemFilter, p ListParams) (Page[T], error) {
	return read(ctx, s, func(tx Tx) (Page[T], error) {
		if _, err := loadDoc(ctx, tx, k, account, docID); err != nil {
			return Page[T]{}, err
		}
		return listItems[T](ctx, s, tx, t, name, account, docID, f, p)
	})
}

// lineInput is the shared part of line parameters, validated once for both
// documents.
type lineInput struct {
	Title, Description       string
	Quantity, Rate, TaxRate  *Decimal
	ExternalIDs              []KeyValue
	RateDisplay              RateDisplay
	RevenueRecognitionMethod RevenueRecognitionMethod
	RevenueClassification    RevenueClassification
	ProductID, PriceID       string
	GroupID                  string
	UnitCode                 string
	TaxCategory              TaxCategory
	// allowedRRM, when set, limits revenueRecognitionMethod.
	allowedRRM []RevenueRecognitionMethod
}

// checkLine validates in, its references included (group of the same
// document, product and price of the account), and returns the line's
// shared fields with its totals computed.
func (s *Service) checkLine(ctx context.Context, tx Tx, v *validator, groups Table, account, docID string, cur Currency, in lineInput) (LineItem, error) {
	s.checkName(v, "title", &in.Title, true)
	s.checkString(v, "description", in.Description, false)
	for _, d := range []struct {
		field string
		val   *Decimal
	}{{"quantity", in.Quantity}, {"rate", in.Rate}, {"taxRate", in.TaxRate}} {
		v.check(d.val != nil, d.field, "%s is required", d.field)
	}
	if in.TaxRate != nil && (in.TaxRate.Sign() < 0 || in.TaxRate.Cmp(DecimalFromInt(1)) > 0) {
		v.add("taxRate", "taxRate must be between 0 and 1 (\"0.2\" is 20%%)")
	}
	if in.ExternalIDs == nil {
		v.add("externalIds", "externalIds is required (it may be [])")
	}
	s.checkKeyValues(v, "externalIds", in.ExternalIDs)
	checkLineKinds(v, in)
	checkUnitCode(v, "unitCode", in.UnitCode)
	checkTaxCategory(v, "taxCategory", in.TaxCategory)
	if err := s.checkLineRefs(ctx, tx, v, groups, account, docID, in); err != nil {
		return LineItem{}, err
	}
	l := LineItem{
		GroupID: in.GroupID, Title: in.Title, Description: in.Description,
		PriceID: in.PriceID, ProductID: in.ProductID, RateDisplay: in.RateDisplay,
		ExternalIDs:              append([]KeyValue{}, in.ExternalIDs...),
		RevenueRecognitionMethod: in.RevenueRecognitionMethod, RevenueClassification: in.RevenueClassification,
		UnitCode: in.UnitCode, TaxCategory: in.TaxCategory,
	}
	if l.UnitCode == "" && l.PriceID != "" {
		var err error
		if l.UnitCode, err = s.priceUnitCode(ctx, tx, account, l.PriceID); err != nil {
			return LineItem{}, err
		}
	}
	if l.RateDisplay == "" {
		l.RateDisplay = RateDisplayAbsolute
	}
	if in.Quantity != nil && in.Rate != nil && in.TaxRate != nil {
		l.Quantity, l.Rate, l.TaxRate = *in.Quantity, *in.Rate, *in.TaxRate
		mode, err := s.docRounding(ctx, tx, account, docID)
		if err != nil {
			return LineItem{}, err
		}
		computeLine(&l, cur, mode)
		if err := checkTotalsFit("quantity", "the line's", Totals{}, l.Totals); err != nil {
			v.add(err.Field, "%s", err.Message)
		}
	}
	return l, nil
}

// checkLineKinds validates the enumerated fields of a line: rateDisplay,
// revenueRecognitionMethod (limited to in.allowedRRM when set) and
// revenueClassification.
func checkLineKinds(v *validator, in lineInput) {
	switch in.RateDisplay {
	case "", RateDisplayAbsolute, RateDisplayPercentage:
	default:
		v.add("rateDisplay", "rateDisplay must be ABSOLUTE or PERCENTAGE")
	}
	allowed := in.allowedRRM
	if allowed == nil {
		allowed = []RevenueRecognitionMethod{RevenueRecognitionStraightLine, RevenueRecognitionUsage, RevenueRecognitionMilestone, RevenueRecognitionPointInTime}
	}
	if in.RevenueRecognitionMethod != "" && !slices.Contains(allowed, in.RevenueRecognitionMethod) {
		v.add("revenueRecognitionMethod", "revenueRecognitionMethod must be one of %v", allowed)
	}
	switch in.RevenueClassification {
	case "", RevenueClassificationPrepayment, RevenueClassificationEarned, RevenueClassificationBurndown:
	default:
		v.add("revenueClassification", "revenueClassification must be PREPAYMENT, EARNED or BURNDOWN")
	}
}

// checkLineRefs checks the references of a line: its group (of the same
// document), product and price (of the account).
func (s *Service) checkLineRefs(ctx context.Context, tx Tx, v *validator, groups Table, account, docID string, in lineInput) error {
	refs := []struct {
		field, id string
		table     Table
		k         []byte
	}{
		{"groupId", in.GroupID, groups, key(account, docID, in.GroupID)},
		{"productId", in.ProductID, tableProducts, key(account, in.ProductID)},
		{"priceId", in.PriceID, tablePrices, key(account, in.PriceID)},
	}
	for _, r := range refs {
		if r.id == "" {
			continue
		}
		if err := s.checkRef(ctx, tx, v, r.table, r.k, r.field); err != nil {
			return err
		}
	}
	return nil
}

// checkRef records a validation error on field when k names no record of
// table.
func (s *Service) checkRef(ctx context.Context, tx Tx, v *validator, t Table, k []byte, field string) error {
	ok, err := exists(ctx, tx, t, k)
	if err != nil {
		return err
	}
	v.check(ok, field, "%s does not name a record of this account", field)
	return nil
}

// linesOp runs one change to the lines or groups of a document in one
// transaction: it loads the document, refuses unless it is editable, runs
// fn, recomputes every total from the stored lines (and applies again the
// credit of an invoice given credit by ApplyCredits), stores the document and
// emits the kind's "updated" notification about view(d).
func linesOp[T, D, L, G any, PD interface {
	*D
	document
}, PL lineRecord[L], PG groupRecord[G]](ctx context.Context, s *Service, k docKind[D], account, docID string, view func(PD) any, fn func(tx Tx, d PD) (T, error)) (T, error) {
	now := s.clock()
	return mutate(ctx, s, account, func(tx Tx) (T, error) {
		var zero T
		d, err := loadDoc(ctx, tx, k, account, docID)
		if err != nil {
			return zero, err
		}
		pd := PD(d)
		if err := requireEditable(k.name, pd); err != nil {
			return zero, err
		}
		out, err := fn(tx, pd)
		if err != nil {
			return zero, err
		}
		if err := recompute[D, L, G, PD, PL, PG](ctx, s, tx, k, account, pd, now); err != nil {
			return zero, err
		}
		if r, ok := any(pd).(*invoiceRecord); ok {
			// A draft given credit applies it again to its new lines.
			if err := s.reapplyCredits(ctx, tx, account, r, now); err != nil {
				return zero, err
			}
		}
		return out, s.emit(ctx, tx, account, k.updated, view(pd))
	})
}

// putNewLine assigns a new line of a document its id and next index and
// stores it. The document may hold at most maxLines lines.
func putNewLine[L any, PL lineRecord[L]](ctx context.Context, s *Service, tx Tx, t Table, account, docID string, l PL) error {
	n, err := countLines(ctx, tx, t, account, docID)
	if err != nil {
		return err
	}
	if n >= maxLines {
		return Errorf(CodeValidationFailed, "a document has at most %d line items", maxLines)
	}
	c := l.core()
	if c.Index, err = nextIndex(ctx, tx, t, account, docID); err != nil {
		return err
	}
	c.ID = s.newID()
	return putRecord(ctx, tx, t, key(account, docID, c.ID), l)
}

// putNewGroup assigns a new group its id and next index and stores it.
func putNewGroup[G any, PG groupRecord[G]](ctx context.Context, s *Service, tx Tx, t Table, account, docID string, g PG, cur Currency) error {
	c := g.groupCore()
	var err error
	if c.Index, err = nextIndex(ctx, tx, t, account, docID); err != nil {
		return err
	}
	c.ID, c.Totals = s.newID(), zeroTotals(cur)
	return putRecord(ctx, tx, t, key(account, docID, c.ID), g)
}

// checkGroupParams validates a group's title and description.
func (s *Service) checkGroupParams(v *validator, title *string, description string) {
	s.checkName(v, "title", title, true)
	s.checkString(v, "description", description, false)
}

// docLines is the line and group API of one kind of document, written once
// for both: each document's typed methods pass in only what is their own
// (how a line or a group is made from their parameters). Every change runs
// in linesOp: the document must be editable, totals are recomputed and the
// kind's updated notification carries view(d); the lists are plain reads.
type docLines[D, L, G any, PD interface {
	*D
	document
}, PL lineRecord[L], PG groupRecord[G]] struct {
	kind docKind[D]
	// lineList and groupList name the lists of lines and of groups (their
	// cursors are bound to the name).
	lineList, groupList string
	view                func(PD) any
}

// invoiceLines is the line and group API of invoices.
var invoiceLines = docLines[invoiceRecord, InvoiceLineItem, InvoiceLineItemGroup, *invoiceRecord, *InvoiceLineItem, *InvoiceLineItemGroup]{
	kind: invoiceKind, lineList: "invoice_lines", groupList: "invoice_groups",
	view: func(r *invoiceRecord) any { return &r.Invoice },
}

// creditNoteLines is the line and group API of credit notes.
var creditNoteLines = docLines[CreditNote, CreditNoteLineItem, CreditNoteLineItemGroup, *CreditNote, *CreditNoteLineItem, *CreditNoteLineItemGroup]{
	kind: creditNoteKind, lineList: "credit_note_lines", groupList: "credit_note_groups",
	view: func(cn *CreditNote) any { return cn },
}

// createLine stores the line build makes (validated, without id or index)
// at the next index.
func (k docLines[D, L, G, PD, PL, PG]) createLine(ctx context.Context, s *Service, account, docID string, build func(tx Tx, d PD) (PL, error)) (PL, error) {
	return linesOp[PL, D, L, G, PD, PL, PG](ctx, s, k.kind, account, docID, k.view, func(tx Tx, d PD) (PL, error) {
		l, err := build(tx, d)
		if err != nil {
			return nil, err
		}
		return l, putNewLine(ctx, s, tx, k.kind.lines, account, docID, l)
	})
}

// updateLine replaces line lineID by the line build makes (validated; old
// is the stored line), which keeps the stored line's id and index. Returns
// not_found when the document has no such line.
func (k docLines[D, L, G, PD, PL, PG]) updateLine(ctx context.Context, s *Service, account, docID, lineID string, build func(tx Tx, d PD, old PL) (PL, error)) (PL, error) {
	return linesOp[PL, D, L, G, PD, PL, PG](ctx, s, k.kind, account, docID, k.view, func(tx Tx, d PD) (PL, error) {
		old, err := getLine[L](ctx, tx, k.kind.lines, account, docID, lineID, "line item")
		if err != nil {
			return nil, err
		}
		l, err := build(tx, d, old)
		if err != nil {
			return nil, err
		}
		c, was := l.core(), PL(old).core()
		c.ID, c.Index = was.ID, was.Index
		return l, putRecord(ctx, tx, k.kind.lines, key(account, docID, lineID), l)
	})
}

// deleteLine removes line lineID; not_found when the document has none.
func (k docLines[D, L, G, PD, PL, PG]) deleteLine(ctx context.Context, s *Service, account, docID, lineID string) error {
	_, err := linesOp[struct{}, D, L, G, PD, PL, PG](ctx, s, k.kind, account, docID, k.view, func(tx Tx, _ PD) (struct{}, error) {
		return struct{}{}, lookupErr(tx.Delete(ctx, k.kind.lines, key(account, docID, lineID)), "line item")
	})
	return err
}

// listLines lists the document's lines by index.
func (k docLines[D, L, G, PD, PL, PG]) listLines(ctx context.Context, s *Service, account, docID string, f LineItemFilter, p ListParams) (Page[L], error) {
	return listDocItems[L](ctx, s, k.kind, k.kind.lines, k.lineList, account, docID, f, p)
}

// listGroups lists the document's groups by index.
func (k docLines[D, L, G, PD, PL, PG]) listGroups(ctx context.Context, s *Service, account, docID string, f LineItemFilter, p ListParams) (Page[G], error) {
	return listDocItems[G](ctx, s, k.kind, k.kind.groups, k.groupList, account, docID, f, p)
}

// createGroup stores a group with title and description at the next index.
// build makes the group with the kind's own fields, recording on v what is
// wrong with them.
func (k docLines[D, L, G, PD, PL, PG]) createGroup(ctx context.Context, s *Service, account, docID, title, description string, build func(tx Tx, d PD, v *validator) (PG, error)) (PG, error) {
	return linesOp[PG, D, L, G, PD, PL, PG](ctx, s, k.kind, account, docID, k.view, func(tx Tx, d PD) (PG, error) {
		var v validator
		s.checkGroupParams(&v, &title, description)
		g, err := build(tx, d, &v)
		if err != nil {
			return nil, err
		}
		if err := v.err(); err != nil {
			return nil, err
		}
		c := g.groupCore()
		c.Title, c.Description = title, description
		return g, putNewGroup(ctx, s, tx, k.kind.groups, account, docID, g, d.docCurrency())
	})
}

// updateGroup replaces group groupID's title and description and, through
// more (nil when the kind has none), its fields of the document kind, after
// validating them. A new title leaves the group's totals as they are, so
// the group returned is the one stored after the recomputation.
func (k docLines[D, L, G, PD, PL, PG]) updateGroup(ctx context.Context, s *Service, account, docID, groupID, title, description string, more func(tx Tx, d PD, v *validator, g PG) error) (PG, error) {
	return linesOp[PG, D, L, G, PD, PL, PG](ctx, s, k.kind, account, docID, k.view, func(tx Tx, d PD) (PG, error) {
		g, err := getLine[G](ctx, tx, k.kind.groups, account, docID, groupID, "line item group")
		if err != nil {
			return nil, err
		}
		var v validator
		s.checkGroupParams(&v, &title, description)
		if more != nil {
			if err := more(tx, d, &v, PG(g)); err != nil {
				return nil, err
			}
		}
		if err := v.err(); err != nil {
			return nil, err
		}
		c := PG(g).groupCore()
		c.Title, c.Description = title, description
		return PG(g), putRecord(ctx, tx, k.kind.groups, key(account, docID, groupID), g)
	})
}

// deleteGroup removes a group that has no lines; invalid_state otherwise.
func (k docLines[D, L, G, PD, PL, PG]) deleteGroup(ctx context.Context, s *Service, account, docID, groupID string) error {
	_, err := linesOp[struct{}, D, L, G, PD, PL, PG](ctx, s, k.kind, account, docID, k.view, func(tx Tx, _ PD) (struct{}, error) {
		if _, err := tx.Get(ctx, k.kind.groups, key(account, docID, groupID)); err != nil {
			return struct{}{}, lookupErr(err, "line item group")
		}
		has, err := groupHasLines[L, PL](ctx, tx, k.kind.lines, account, docID, groupID)
		if err != nil {
			return struct{}{}, err
		}
		if has {
			return struct{}{}, Errorf(CodeInvalidState, "the group still has line items; move or delete them first")
		}
		return struct{}{}, tx.Delete(ctx, k.kind.groups, key(account, docID, groupID))
	})
	return err
}

// buildInvoiceLine validates p for invoice r and returns the line it
// describes (no id or index yet).
func (s *Service) buildInvoiceLine(ctx context.Context, tx Tx, account string, r *Invoice, p *InvoiceLineItemParams) (*InvoiceLineItem, error) {
	var v validator
	core, err := s.checkLine(ctx, tx, &v, tableInvoiceGroups, account, r.ID, r.Currency, lineInput{
		Title: p.Title, Description: p.Description, Quantity: p.Quantity, Rate: p.Rate, TaxRate: p.TaxRate,
		ExternalIDs: p.ExternalIDs, RateDisplay: p.RateDisplay, RevenueRecognitionMethod: p.RevenueRecognitionMethod,
		RevenueClassification: p.RevenueClassification, ProductID: p.ProductID, PriceID: p.PriceID, GroupID: p.GroupID,
		UnitCode: p.UnitCode, TaxCategory: p.TaxCategory,
	})
	if err != nil {
		return nil, err
	}
	st, err := s.customerTaxStatus(ctx, tx, account, r.CustomerID)
	if err != nil {
		return nil, err
	}
	checkLineTax(&v, st, p.TaxRate)

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
	return &InvoiceLineItem{
		LineItem: core, InvoiceID: r.ID, CreditGrantID: p.CreditGrantID,
		ServicePeriodStart: normalizedPtr(p.ServicePeriodStart), ServicePeriodEnd: normalizedPtr(p.ServicePeriodEnd),
		ServicePeriod: copyOf(p.ServicePeriod),
	}, nil
}

// CreateInvoiceLineItem adds a line to a DRAFT or IN_PROGRESS invoice, at
// the next index, recomputes the totals of its group and of the invoice, and
// emits INVOICE_UPDATED. Returns not_found for the invoice, validation_failed
// (an unknown groupId, priceId or productId included), and invalid_state
// when the invoice is not editable.
func (s *Service) CreateInvoiceLineItem(ctx context.Context, account, invoiceID string, p InvoiceLineItemParams) (*InvoiceLineItem, error) {
	return invoiceLines.createLine(ctx, s, account, invoiceID, func(tx Tx, r *invoiceRecord) (*InvoiceLineItem, error) {
		return s.buildInvoiceLine(ctx, tx, account, &r.Invoice, &p)
	})
}

// ListInvoiceLineItems lists an invoice's lines by index (ASC unless
// f.SortOrder says DESC). Returns not_found for the invoice and
// validation_failed for a bad sort order, limit or cursor.
func (s *Service) ListInvoiceLineItems(ctx context.Context, account, invoiceID string, f LineItemFilter, p ListParams) (Page[InvoiceLineItem], error) {
	return invoiceLines.listLines(ctx, s, account, invoiceID, f, p)
}

// UpdateInvoiceLineItem is op 18: it replaces every field of a line
// (optional fields left out are cleared; the index is kept), recomputes the
// totals of the line, its groups and the invoice, and emits INVOICE_UPDATED.
// Returns not_found (invoice, or a line not of that invoice),
// validation_failed, and invalid_state when the invoice is not editable.
func (s *Service) UpdateInvoiceLineItem(ctx context.Context, account, invoiceID, lineID string, p InvoiceLineItemParams) (*InvoiceLineItem, error) {
	return invoiceLines.updateLine(ctx, s, account, invoiceID, lineID, func(tx Tx, r *invoiceRecord, _ *InvoiceLineItem) (*InvoiceLineItem, error) {
		return s.buildInvoiceLine(ctx, tx, account, &r.Invoice, &p)
	})
}

// DeleteInvoiceLineItem removes a line, recomputes the totals and emits
// INVOICE_UPDATED. Returns not_found and invalid_state as
// UpdateInvoiceLineItem.
func (s *Service) DeleteInvoiceLineItem(ctx context.Context, account, invoiceID, lineID string) error {
	return invoiceLines.deleteLine(ctx, s, account, invoiceID, lineID)
}

// CreateInvoiceLineItemGroup adds a group to a DRAFT or IN_PROGRESS invoice
// at the next group index and emits INVOICE_UPDATED. Returns not_found,
// validation_failed and invalid_state.
func (s *Service) CreateInvoiceLineItemGroup(ctx context.Context, account, invoiceID string, p InvoiceLineItemGroupParams) (*InvoiceLineItemGroup, error) {
	return invoiceLines.createGroup(ctx, s, account, invoiceID, p.Title, p.Description, func(_ Tx, r *invoiceRecord, _ *validator) (*InvoiceLineItemGroup, error) {
		return &InvoiceLineItemGroup{InvoiceID: r.ID}, nil
	})
}

// ListInvoiceLineItemGroups lists an invoice's groups by index (ASC unless
// f.SortOrder says DESC). Returns not_found and validation_failed.
func (s *Service) ListInvoiceLineItemGroups(ctx context.Context, account, invoiceID string, f LineItemFilter, p ListParams) (Page[InvoiceLineItemGroup], error) {
	return invoiceLines.listGroups(ctx, s, account, invoiceID, f, p)
}

// UpdateInvoiceLineItemGroup replaces a group's title and description and
// emits INVOICE_UPDATED. Returns not_found, validation_failed and
// invalid_state.
func (s *Service) UpdateInvoiceLineItemGroup(ctx context.Context, account, invoiceID, groupID string, p InvoiceLineItemGroupParams) (*InvoiceLineItemGroup, error) {
	return invoiceLines.updateGroup(ctx, s, account, invoiceID, groupID, p.Title, p.Description, nil)
}

// DeleteInvoiceLineItemGroup removes an empty group and emits
// INVOICE_UPDATED. Returns not_found, and invalid_state when the invoice is
// not editable or the group still has lines.
func (s *Service) DeleteInvoiceLineItemGroup(ctx context.Context, account, invoiceID, groupID string) error {
	return invoiceLines.deleteGroup(ctx, s, account, invoiceID, groupID)
}

// Entry points of the billing engine (schedule.go). They run inside the
// engine's own transaction and emit nothing: the engine emits.

// draftInvoice builds, without storing, the invoice p with lines as create
// would store it (customer fields copied, indexes, line/group/document
// totals), for previews.
func (s *Service) draftInvoice(ctx context.Context, tx Tx, account string, p InvoiceParams, lines []InvoiceLineItem, now time.Time) (*Invoice, []InvoiceLineItem, error) {
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

// engineInvoiceLine is a line the engine bills for period: core's fields,
// with the period as the customer's instants (cal) and as dates, no
// external ids, and an ABSOLUTE rate unless core says otherwise. Its
// totals are computed for its document (buildEngineLines).
func engineInvoiceLine(cal Calendar, period billingPeriod, core LineItem) InvoiceLineItem {
	start, end := NormalizeTime(cal.Start(period.Start)), NormalizeTime(cal.Start(period.End))
	core.Title = strings.TrimSpace(core.Title)
	core.ExternalIDs = []KeyValue{}
	if core.RateDisplay == "" {
		core.RateDisplay = RateDisplayAbsolute
	}
	return InvoiceLineItem{LineItem: core, ServicePeriodStart: &start, ServicePeriodEnd: &end,
		ServicePeriod: &ServicePeriod{StartDate: period.Start, EndDate: period.EndInclusive()}}
}

// buildEngineLines returns the engine's lines as lines of invoice inv, with
// their totals (completeEngineLines).
func (s *Service) buildEngineLines(ctx context.Context, tx Tx, account string, inv *Invoice, lines []InvoiceLineItem) ([]*InvoiceLineItem, error) {
	out := make([]*InvoiceLineItem, len(lines))
	cores := make([]*LineItem, len(lines))
	for i := range lines {
		l := lines[i]
		l.InvoiceID = inv.ID
		out[i], cores[i] = &l, &l.LineItem
	}
	return out, s.completeEngineLines(ctx, tx, account, inv.ID, inv.Currency, cores)
}

// completeEngineLines completes the lines the engine made for document
// docID of currency cur: the unit code of a line's price when it has none,
// and its totals by the document's rounding. Engine lines are made from
// stored prices, products and tax rates, so nothing is validated again;
// what remains is the refusal of amounts that do not fit (validation_failed
// naming the line, lineItems[i].quantity) and of more than maxLines lines.
func (s *Service) completeEngineLines(ctx context.Context, tx Tx, account, docID string, cur Currency, lines []*LineItem) error {
	mode, err := s.docRounding(ctx, tx, account, docID)
	if err != nil {
		return err
	}
	var v validator
	for i, l := range lines {
		if l.UnitCode == "" && l.PriceID != "" {
			if l.UnitCode, err = s.priceUnitCode(ctx, tx, account, l.PriceID); err != nil {
				return err
			}
		}
		computeLine(l, cur, mode)
		if err := checkTotalsFit("quantity", "the line's", Totals{}, l.Totals); err != nil {
			v.add(joinField("lineItems["+strconv.Itoa(i)+"]", err.Field), "%s", err.Message)
		}
	}
	if len(lines) > maxLines {
		v.add("lineItems", "a document has at most %d line items", maxLines)
	}
	return v.err()
}

// createInvoiceTx stores a new DRAFT invoice with its lines inside tx
// (calculatedAt set when non-zero). Emits nothing: callers emit.
func (s *Service) createInvoiceTx(ctx context.Context, tx Tx, account string, p InvoiceParams, lines []InvoiceLineItem, calculatedAt time.Time) (*Invoice, error) {
	now := s.clock()
	r, err := s.newInvoice(ctx, tx, account, p, now)
	if err != nil {
		return nil, err
	}
	if err := s.prefetchNewInvoice(ctx, tx, account, r.ID); err != nil {
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

// storeEngineLines stores the engine's lines as the invoice's lines, at
// indexes from 0.
func (s *Service) storeEngineLines(ctx context.Context, tx Tx, account string, inv *Invoice, lines []InvoiceLineItem) error {
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
func (s *Service) replaceInvoiceLinesTx(ctx context.Context, tx Tx, account, invoiceID string, lines []InvoiceLineItem, calculatedAt time.Time) (*Invoice, bool, error) {
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
	if sameLines(withoutCreditLines(old), built) {
		return &r.Invoice, false, nil
	}
	if r.CreditsRequested {
		if err := s.releaseCredits(ctx, tx, account, r, "invoice changed", now); err != nil {
			return nil, false, err
		}
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
	if err := recompute[invoiceRecord, InvoiceLineItem, InvoiceLineItemGroup](ctx, s, tx, invoiceKind, account, r, now); err != nil {
		return nil, false, err
	}
	if err := s.reapplyCredits(ctx, tx, account, r, now); err != nil {
		return nil, false, err
	}
	return &r.Invoice, true, saveDoc(ctx, tx, invoiceKind, account, r)
}

// withoutCreditLines returns lines without the BURNDOWN lines of credit
// applied (isCreditLine).
func withoutCreditLines(lines []InvoiceLineItem) []InvoiceLineItem {
	out := lines[:0:0]
	for _, l := range lines {
		if !isCreditLine(&l) {
			out = append(out, l)
		}
	}
	return out
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
