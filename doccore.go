package billing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
)

// This file is the one implementation of what invoices and credit notes
// share: line and group storage, index assignment, editability, totals,
// numbering and the validation of line and header fields. invoice*.go and
// creditnote*.go only describe their document (a docKind) and its own
// rules.

// document is what the core needs of a stored document (*invoiceRecord,
// *CreditNote).
type document interface {
	docID() string
	docStatus() DocumentStatus
	docCurrency() Currency
	// docTotals returns the stored totals.
	docTotals() Totals
	// setTotals stores recomputed totals and stamps the change.
	setTotals(t Totals, now time.Time)
}

// lineRecord is a stored line type (*InvoiceLineItem, *CreditNoteLineItem).
type lineRecord[L any] interface {
	*L
	core() *LineItem
}

// groupRecord is a stored group type.
type groupRecord[G any] interface {
	*G
	groupCore() *LineItemGroup
}

func (l *LineItem) core() *LineItem                { return l }
func (g *LineItemGroup) groupCore() *LineItemGroup { return g }

// docKind describes one kind of document to the core.
type docKind[D any] struct {
	name    string // "invoice", "credit note": messages and list names
	docs    Table
	lines   Table
	groups  Table
	number  string // number prefix and counter name: INV, CN
	updated NotificationType
}

// loadDoc reads document id of account; not_found names the kind.
func loadDoc[D any](ctx context.Context, tx Tx, k docKind[D], account, id string) (*D, error) {
	return getOwned[D](ctx, tx, k.docs, account, id, k.name)
}

// saveDoc writes a document.
func saveDoc[D any, PD interface {
	*D
	document
}](ctx context.Context, tx Tx, k docKind[D], account string, d PD) error {
	return putRecord(ctx, tx, k.docs, key(account, d.docID()), d)
}

// stateError is the invalid_state answer for an operation the status of a
// document does not allow.
func stateError(kind, op string, st DocumentStatus) *Error {
	return Errorf(CodeInvalidState, "cannot %s a %s %s", op, st, kind)
}

// requireEditable answers invalid_state unless the document is DRAFT or
// IN_PROGRESS.
func requireEditable(kind string, d document) error {
	if !d.docStatus().editable() {
		return Errorf(CodeInvalidState, "the %s is %s; only DRAFT and IN_PROGRESS %ss can be edited", kind, d.docStatus(), kind)
	}
	return nil
}

// computeLine sets a line's totals: net = round(quantity × rate), tax =
// round(net × taxRate), gross = net + tax, in cur's minor units.
func computeLine(l *LineItem, cur Currency, mode Rounding) {
	net := cur.Round(l.Quantity.Mul(l.Rate), mode)
	tax := cur.Round(net.Mul(l.TaxRate), mode)
	l.Totals = Totals{NetTotal: net, TotalTax: tax, GrossTotal: net.Add(tax)}
}

// checkNotNegative is the rule for negative amounts: a line may be
// negative (a discount, a correction, negative usage: an adjustment of the
// document), but a document whose gross total is negative cannot be
// finalized, so no FINAL or SENT document ever asks for a negative amount.
// Money goes back to a customer through a credit note of a positive total
// against the invoice. what is "an invoice" or "a credit note".
func checkNotNegative(what string, gross Decimal) error {
	if gross.Sign() < 0 {
		return Errorf(CodeInvalidState, "%s whose grossTotal is negative (%s) cannot be finalized: negative lines are adjustments of a positive total; to give money back, create a credit note", what, gross)
	}
	return nil
}

// checkTotalsFit refuses totals that could not be stored and rendered
// again: a money amount has at most 20 digits before the decimal point,
// like every decimal a client can send. Only a total that grows counts
// (|new| > |old|), so a document stored before this rule with an oversized
// total can still have lines deleted. what names the totals in the message
// ("the line's", "the invoice's").
func checkTotalsFit(field, what string, old, t Totals) *Error {
	for _, a := range []struct {
		name     string
		old, new Decimal
	}{{"netTotal", old.NetTotal, t.NetTotal}, {"totalTax", old.TotalTax, t.TotalTax}, {"grossTotal", old.GrossTotal, t.GrossTotal}} {
		if a.new.integerDigits() > maxIntegerDigits && a.new.Abs().Cmp(a.old.Abs()) > 0 {
			return FieldError(field, "%s %s would be %s, more than %d digits before the decimal point; lower quantity or rate",
				what, a.name, a.new, maxIntegerDigits)
		}
	}
	return nil
}

// recordDocRounding records, when a document is created, the rounding mode
// its lines are computed with: the Service's. A document keeps that mode
// for life, so a Service restarted with another mode computes only new
// documents with it.
func (s *Service) recordDocRounding(ctx context.Context, tx Tx, account, docID string) error {
	return tx.Put(ctx, tableDocumentRounding, key(account, docID), []byte(s.rounding.String()))
}

// docRounding returns the rounding mode of document docID: the one it was
// created with, else (a document created before modes were recorded, or
// one not stored: a preview) the Service's.
func (s *Service) docRounding(ctx context.Context, tx Tx, account, docID string) (Rounding, error) {
	v, err := tx.Get(ctx, tableDocumentRounding, key(account, docID))
	if errors.Is(err, ErrNotFound) {
		return s.rounding, nil
	}
	if err != nil {
		return s.rounding, err
	}
	mode, err := ParseRounding(string(v))
	if err != nil {
		return s.rounding, fmt.Errorf("document %s: stored rounding mode %q: %w", docID, v, err)
	}
	return mode, nil
}

// zeroTotals returns the totals of nothing in cur ("0.00", JPY "0").
func zeroTotals(cur Currency) Totals {
	z := cur.Zero()
	return Totals{NetTotal: z, TotalTax: z, GrossTotal: z}
}

// add returns t + o, field by field.
func (t Totals) add(o Totals) Totals {
	return Totals{NetTotal: t.NetTotal.Add(o.NetTotal), TotalTax: t.TotalTax.Add(o.TotalTax), GrossTotal: t.GrossTotal.Add(o.GrossTotal)}
}

// equal reports whether t and o print the same.
func (t Totals) equal(o Totals) bool {
	return t.NetTotal.String() == o.NetTotal.String() && t.TotalTax.String() == o.TotalTax.String() &&
		t.GrossTotal.String() == o.GrossTotal.String()
}

// sumLines returns the totals of the document and of each group from its
// lines: the only place document and group totals are computed.
func sumLines(cur Currency, lines []*LineItem) (doc Totals, groups map[string]Totals) {
	doc, groups = zeroTotals(cur), map[string]Totals{}
	for _, l := range lines {
		doc = doc.add(l.Totals)
		if l.GroupID != "" {
			g, ok := groups[l.GroupID]
			if !ok {
				g = zeroTotals(cur)
			}
			groups[l.GroupID] = g.add(l.Totals)
		}
	}
	return doc, groups
}

// scanAll decodes every record of table under the document's prefix, in
// key (index) order.
func scanAll[T any](ctx context.Context, tx Tx, t Table, account, docID string) ([]*T, error) {
	var out []*T
	err := tx.Scan(ctx, t, Range{Prefix: prefix(account, docID)}, func(_, v []byte) error {
		item := new(T)
		if err := json.Unmarshal(v, item); err != nil {
			return fmt.Errorf("decoding %s record: %w", t, err)
		}
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
	cores := make([]*LineItem, len(lines))
	for i, l := range lines {
		cores[i] = PL(l).core()
	}
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

// nextNumber moves the account's counter of kind (INV, CN) in tx and
// returns the next document number: INV00001, ... (5 digits minimum). The
// counter rolls back with tx, so numbers are gapless.
func nextNumber(ctx context.Context, tx Tx, account, kind string) (string, error) {
	n, err := tx.Increment(ctx, tableDocumentNumbering, key(account, kind))
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s%05d", kind, n), nil
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
	// strict requires externalIds (client calls; the engine may omit them)
	// and limits revenueRecognitionMethod to allowedRRM when set.
	strict     bool
	allowedRRM []RevenueRecognitionMethod
}

// checkLine validates in, its references included (group of the same
// document, product and price of the account), and returns the line's
// shared fields with its totals computed.
func (s *Service) checkLine(ctx context.Context, tx Tx, v *validator, groups Table, account, docID string, cur Currency, in lineInput) (LineItem, error) {
	s.checkString(v, "title", in.Title, true)
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
	if in.strict && in.ExternalIDs == nil {
		v.add("externalIds", "externalIds is required (it may be [])")
	}
	s.checkKeyValues(v, "externalIds", in.ExternalIDs)
	checkLineKinds(v, in)
	if err := s.checkLineRefs(ctx, tx, v, groups, account, docID, in); err != nil {
		return LineItem{}, err
	}
	l := LineItem{
		GroupID: in.GroupID, Title: in.Title, Description: in.Description,
		PriceID: in.PriceID, ProductID: in.ProductID, RateDisplay: in.RateDisplay,
		ExternalIDs:              append([]KeyValue{}, in.ExternalIDs...),
		RevenueRecognitionMethod: in.RevenueRecognitionMethod, RevenueClassification: in.RevenueClassification,
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
	_, err := tx.Get(ctx, t, k)
	switch {
	case errors.Is(err, ErrNotFound):
		v.add(field, "%s does not name a record of this account", field)
	case err != nil:
		return err
	}
	return nil
}

// checkKeyValues validates metadata or external ids: at most MaxEntries,
// keys required, values free text.
func (s *Service) checkKeyValues(v *validator, field string, kvs []KeyValue) {
	if len(kvs) > s.limits.MaxEntries {
		v.add(field, "at most %d entries", s.limits.MaxEntries)
	}
	for i, kv := range kvs {
		s.checkString(v, fmt.Sprintf("%s[%d].key", field, i), kv.Key, true)
		s.checkString(v, fmt.Sprintf("%s[%d].value", field, i), kv.Value, false)
	}
}

// checkHeader validates the customer fields shared by both documents.
func (s *Service) checkHeader(v *validator, emails []string, legalName string, billing, shipping *Address, taxID string, metadata []KeyValue, texts map[string]string) {
	if len(emails) > s.limits.MaxEntries {
		v.add("customerEmails", "at most %d e-mails", s.limits.MaxEntries)
	}
	for i, e := range emails {
		checkEmail(v, fmt.Sprintf("customerEmails[%d]", i), e)
	}
	s.checkString(v, "customerLegalCompanyName", legalName, false)
	s.checkString(v, "customerTaxId", taxID, false)
	if billing != nil {
		s.checkAddress(v, "customerBillingAddress", billing)
	}
	if shipping != nil {
		s.checkAddress(v, "customerShippingAddress", shipping)
	}
	s.checkKeyValues(v, "metadata", metadata)
	for field, text := range texts {
		s.checkString(v, field, text, false)
	}
}

// customerFields are the customer details a document copies.
type customerFields struct {
	Emails    []string
	LegalName string
	Billing   Address
	Shipping  Address
	TaxID     string
}

// fromCustomer returns the details of customer c.
func fromCustomer(c *Customer) customerFields {
	f := customerFields{Emails: c.BillingEmails(), LegalName: c.LegalName, TaxID: c.TaxID}
	if c.Address != nil {
		f.Billing, f.Shipping = *c.Address, *c.Address
	}
	return f
}

// fill completes the given fields with def where they were not given.
func (f customerFields) fill(emails []string, legalName string, billing, shipping *Address, taxID string) customerFields {
	out := f
	if emails != nil {
		out.Emails = append([]string{}, emails...)
	}
	if out.Emails == nil {
		out.Emails = []string{}
	}
	if legalName != "" {
		out.LegalName = legalName
	}
	if billing != nil {
		out.Billing = *billing
	}
	if shipping != nil {
		out.Shipping = *shipping
	}
	if taxID != "" {
		out.TaxID = taxID
	}
	return out
}

// checkStatusOnCreate validates the optional status of a new document.
func checkStatusOnCreate(v *validator, st DocumentStatus) DocumentStatus {
	switch st {
	case "":
		return StatusDraft
	case StatusDraft, StatusInProgress:
		return st
	}
	v.add("status", "status must be DRAFT or IN_PROGRESS on create")
	return StatusDraft
}

// checkCurrency validates a required currency.
func checkCurrency(v *validator, c Currency) {
	switch {
	case c == "":
		v.add("currency", "currency is required")
	case !c.Valid():
		v.add("currency", "currency is not a supported currency code")
	}
}

// linesOp runs one change to the lines or groups of a document in one
// transaction: it loads the document, refuses unless it is editable, runs
// fn, recomputes every total from the stored lines, stores the document and
// emits the kind's "updated" notification about view(d).
func linesOp[T, D, L, G any, PD interface {
	*D
	document
}, PL lineRecord[L], PG groupRecord[G]](ctx context.Context, s *Service, k docKind[D], account, docID string, view func(PD) any, fn func(tx Tx, d PD, now time.Time) (T, error)) (T, error) {
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
		out, err := fn(tx, pd, now)
		if err != nil {
			return zero, err
		}
		if err := recompute[D, L, G, PD, PL, PG](ctx, s, tx, k, account, pd, now); err != nil {
			return zero, err
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

// deleteGroup removes a group that has no lines; invalid_state otherwise.
func deleteGroup[L any, PL lineRecord[L]](ctx context.Context, tx Tx, lines, groups Table, account, docID, groupID string) error {
	if _, err := tx.Get(ctx, groups, key(account, docID, groupID)); err != nil {
		return lookupErr(err, "line item group")
	}
	has, err := groupHasLines[L, PL](ctx, tx, lines, account, docID, groupID)
	if err != nil {
		return err
	}
	if has {
		return Errorf(CodeInvalidState, "the group still has line items; move or delete them first")
	}
	return tx.Delete(ctx, groups, key(account, docID, groupID))
}

// checkGroupParams validates a group's title and description.
func (s *Service) checkGroupParams(v *validator, title, description string) {
	s.checkString(v, "title", title, true)
	s.checkString(v, "description", description, false)
}

// updateGroup replaces a group's title and description (and, through
// more, fields of the document kind) after validating them.
func updateGroup[G any, PG groupRecord[G]](ctx context.Context, s *Service, tx Tx, t Table, account, docID, groupID, title, description string, more func(v *validator, g PG) error) (PG, error) {
	g, err := getLine[G](ctx, tx, t, account, docID, groupID, "line item group")
	if err != nil {
		return nil, err
	}
	var v validator
	s.checkGroupParams(&v, title, description)
	if more != nil {
		if err := more(&v, PG(g)); err != nil {
			return nil, err
		}
	}
	if err := v.err(); err != nil {
		return nil, err
	}
	c := PG(g).groupCore()
	c.Title, c.Description = title, description
	return PG(g), putRecord(ctx, tx, t, key(account, docID, groupID), g)
}
