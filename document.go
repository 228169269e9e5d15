package billing

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Invoices and credit notes are the same kind of document: a header, line
// items, line item groups, totals, a number and a status. This file holds
// what both share: their types, the document core (loading, storing,
// editability, totals, numbering, header checks); printable.go holds what a
// rendering is made from, lines.go their lines and groups.

// DocumentStatus is the status of an invoice or a credit note.
type DocumentStatus string

// The document statuses. IN_PROGRESS and DRAFT documents are editable;
// FINAL ones are numbered and immutable; SENT ones have been issued to the
// customer; VOIDED ones are cancelled for good.
const (
	StatusInProgress DocumentStatus = "IN_PROGRESS"
	StatusDraft      DocumentStatus = "DRAFT"
	StatusFinal      DocumentStatus = "FINAL"
	StatusSent       DocumentStatus = "SENT"
	StatusVoided     DocumentStatus = "VOIDED"
)

// editable reports whether lines, groups and the header of a document in
// status st may change.
func (st DocumentStatus) editable() bool { return st == StatusDraft || st == StatusInProgress }

// finalized reports whether a document in status st is FINAL or SENT: it
// has a number and journal entries, and counts against its invoice.
func (st DocumentStatus) finalized() bool { return st == StatusFinal || st == StatusSent }

// PaymentStatus is how much of an invoice has been paid. UNPAID,
// PARTIALLY_PAID and PAID are derived from amountDue; UNCOLLECTIBLE is set
// by SetPaymentStatus.
type PaymentStatus string

// The payment statuses.
const (
	PaymentStatusUnpaid        PaymentStatus = "UNPAID"
	PaymentStatusPartiallyPaid PaymentStatus = "PARTIALLY_PAID"
	PaymentStatusPaid          PaymentStatus = "PAID"
	PaymentStatusUncollectible PaymentStatus = "UNCOLLECTIBLE"
)

// RateDisplay says how a line's rate is displayed; it never changes the
// arithmetic.
type RateDisplay string

// The rate displays.
const (
	RateDisplayAbsolute   RateDisplay = "ABSOLUTE"
	RateDisplayPercentage RateDisplay = "PERCENTAGE"
)

// RevenueRecognitionMethod says how a line's revenue is recognised.
type RevenueRecognitionMethod string

// The revenue recognition methods. Credit note lines accept only
// STRAIGHT_LINE and POINT_IN_TIME.
const (
	RevenueRecognitionStraightLine RevenueRecognitionMethod = "STRAIGHT_LINE"
	RevenueRecognitionUsage        RevenueRecognitionMethod = "USAGE"
	RevenueRecognitionMilestone    RevenueRecognitionMethod = "MILESTONE"
	RevenueRecognitionPointInTime  RevenueRecognitionMethod = "POINT_IN_TIME"
)

// RevenueClassification classifies a line's revenue.
type RevenueClassification string

// The revenue classifications.
const (
	RevenueClassificationPrepayment RevenueClassification = "PREPAYMENT"
	RevenueClassificationEarned     RevenueClassification = "EARNED"
	RevenueClassificationBurndown   RevenueClassification = "BURNDOWN"
)

// PaymentOption is a way an invoice may be paid.
type PaymentOption string

// The payment options.
const (
	PaymentOptionBankTransfer PaymentOption = "BANK_TRANSFER"
	PaymentOptionLink         PaymentOption = "LINK"
)

// LinkedService links a document to its copy in an external system.
type LinkedService struct {
	// ExternalID is the record's id in the external system.
	ExternalID string `json:"externalId"`
	// ExternalService names the external system.
	ExternalService string `json:"externalService"`
	// SyncTime is when the record was last synchronised; nil before.
	SyncTime *time.Time `json:"syncTime,omitempty"`
	// ExternalURL links to the record in the external system; empty when unknown.
	ExternalURL string `json:"externalUrl,omitempty"`
}

// DateRange is an inclusive range of calendar dates {start, endInclusive}:
// an invoice's billing period, a credit note line's service period.
type DateRange struct {
	// Start is the first day of the range.
	Start Date `json:"start"`
	// EndInclusive is the last day of the range, included.
	EndInclusive Date `json:"endInclusive"`
}

// ServicePeriod is an invoice line's service period {startDate, endDate},
// both days included.
type ServicePeriod struct {
	// StartDate is the first day of the period.
	StartDate Date `json:"startDate"`
	// EndDate is the last day of the period, included.
	EndDate Date `json:"endDate"`
}

// DocumentHeader is what an invoice and a credit note both begin with:
// the document, its account and status, its currency and the customer it
// is issued to, with the customer's details as the document prints them
// (copied at creation, changeable while the document is editable). Its
// fields are the first of both documents' JSON.
type DocumentHeader struct {
	ID string `json:"id"`
	// ServiceAccountID is the account that owns the document.
	ServiceAccountID string `json:"serviceAccountId"`
	// Status is IN_PROGRESS or DRAFT while editable, then FINAL, SENT or VOIDED.
	Status DocumentStatus `json:"status"`
	// Currency of every amount of the document and its lines; fixed at
	// creation.
	Currency Currency `json:"currency"`
	// CustomerID is the customer billed or credited; fixed at creation.
	CustomerID string `json:"customerId"`
	// CustomerEmails are the addresses the document is e-mailed to on send:
	// the customer's billing contacts unless given; always present, []
	// when none.
	CustomerEmails []string `json:"customerEmails"`
	// CustomerLegalCompanyName is printed on the document: the customer's
	// legal name unless given.
	CustomerLegalCompanyName string `json:"customerLegalCompanyName,omitempty"`
	// CustomerBillingAddress is printed on the document: the customer's
	// address unless given; empty strings where unknown.
	CustomerBillingAddress Address `json:"customerBillingAddress"`
	// CustomerShippingAddress: as CustomerBillingAddress.
	CustomerShippingAddress Address `json:"customerShippingAddress"`
}

// customer returns the customer details the header prints, with taxID.
func (h *DocumentHeader) customer(taxID string) customerFields {
	return customerFields{Emails: h.CustomerEmails, LegalName: h.CustomerLegalCompanyName,
		Billing: h.CustomerBillingAddress, Shipping: h.CustomerShippingAddress, TaxID: taxID}
}

// setCustomer makes the header print f (all but its TaxID, which each
// document keeps in its own place).
func (h *DocumentHeader) setCustomer(f customerFields) {
	h.CustomerEmails, h.CustomerLegalCompanyName = f.Emails, f.LegalName
	h.CustomerBillingAddress, h.CustomerShippingAddress = f.Billing, f.Shipping
}

func (h *DocumentHeader) docID() string             { return h.ID }
func (h *DocumentHeader) docStatus() DocumentStatus { return h.Status }
func (h *DocumentHeader) docCurrency() Currency     { return h.Currency }

// Totals are the money totals of a line, a group or a document, in the
// document's currency with exactly its minor-unit digits.
type Totals struct {
	// NetTotal is before tax: for a line round(quantity × rate) in the currency's
	// minor units, for a group or document the sum of its lines.
	NetTotal Decimal `json:"netTotal"`
	// TotalTax: for a line round(NetTotal × taxRate), else the sum of the lines'.
	TotalTax Decimal `json:"totalTax"`
	// GrossTotal is NetTotal + TotalTax.
	GrossTotal Decimal `json:"grossTotal"`
}

// LineItem holds the fields invoice and credit note line items share.
// Index is assigned in creation order from 0 per document; the totals are
// computed, never given.
type LineItem struct {
	ID string `json:"id"`
	// GroupID is the line's group in the same document; empty for none.
	GroupID     string `json:"groupId,omitempty"`
	Title       string `json:"title"`
	Description string `json:"description,omitempty"`
	// Quantity is exact (any scale, any sign).
	Quantity Decimal `json:"quantity"`
	// Rate is the amount per unit in the document's currency, exact; the totals
	// are rounded, not the rate.
	Rate Decimal `json:"rate"`
	// TaxRate is a fraction from 0 to 1 ("0.2" is 20%).
	TaxRate Decimal `json:"taxRate"`
	// Index is the line's position in its document, from 0 in creation order; kept
	// on update.
	Index int `json:"index"`
	Totals
	// PriceID is the price the line bills; empty for lines made by hand without
	// one.
	PriceID string `json:"priceId,omitempty"`
	// ProductID is the product the line is for; empty when not given.
	ProductID string `json:"productId,omitempty"`
	// RateDisplay says how Rate is shown (ABSOLUTE or PERCENTAGE); it does not
	// change the arithmetic.
	RateDisplay RateDisplay `json:"rateDisplay"`
	// ExternalIDs are the line's ids in other systems; always present, [] when
	// none.
	ExternalIDs []KeyValue `json:"externalIds"`
	// RevenueRecognitionMethod is stored and echoed for revenue reporting; empty
	// when not given.
	RevenueRecognitionMethod RevenueRecognitionMethod `json:"revenueRecognitionMethod,omitempty"`
	// RevenueClassification is stored and echoed for revenue reporting; empty when
	// not given.
	RevenueClassification RevenueClassification `json:"revenueClassification,omitempty"`
	// UnitCode is the UN/ECE Recommendation 20 code of Quantity's unit, for
	// e-invoices (EN 16931 BT-130): as given, else the unit of the line's
	// price (UnitCode of its usage metric's unit, for a LINEAR price); empty
	// means C62 ("one").
	UnitCode string `json:"unitCode,omitempty"`
	// TaxCategory is the line's VAT category for e-invoices (BT-151): as
	// given, else empty, and the category follows from the tax rate and the
	// customer's tax status (docs/e-invoicing.md).
	TaxCategory TaxCategory `json:"taxCategory,omitempty"`
}

// LineItemGroup holds the fields invoice and credit note line item groups
// share. Its totals are the sums of its lines.
type LineItemGroup struct {
	ID          string `json:"id"`
	Title       string `json:"title"`
	Description string `json:"description,omitempty"`
	// Index is the group's position in its document, from 0 in creation order.
	Index int `json:"index"`
	Totals
}

// LineItemFilter orders the line items or groups of a document.
type LineItemFilter struct {
	// SortOrder orders by index: ASC (the default) or DESC.
	SortOrder SortOrder
}

// Optional is a presence-aware field of a partial update (op 10, op 17): a
// field absent from the body leaves Set false and is kept; a field given as
// null sets Set and Null and clears the value (where the field allows it);
// any other value sets Set and Value.
type Optional[T any] struct {
	// Set says the field was given (as null or as a value).
	Set bool
	// Null says the field was given as null: clear it.
	Null bool
	// Value is the given value when Set and not Null.
	Value T
}

// Some returns an Optional holding v.
func Some[T any](v T) Optional[T] { return Optional[T]{Set: true, Value: v} }

// Null returns an Optional that clears its field.
func Null[T any]() Optional[T] { return Optional[T]{Set: true, Null: true} }

// IsZero reports whether o is absent, so `omitzero` leaves it out.
func (o Optional[T]) IsZero() bool { return !o.Set }

// MarshalJSON writes the value, or null when o is null or absent.
func (o Optional[T]) MarshalJSON() ([]byte, error) {
	if !o.Set || o.Null {
		return []byte("null"), nil
	}
	return json.Marshal(o.Value)
}

// UnmarshalJSON records that the field is present: null, or a value decoded
// strictly (unknown fields of an object are refused). Errors are
// validation_failed *Error values without a Field; the decoder adds the
// path.
func (o *Optional[T]) UnmarshalJSON(b []byte) error {
	*o = Optional[T]{Set: true}
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		o.Null = true
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&o.Value); err != nil {
		var e *Error
		if errors.As(err, &e) {
			return e
		}
		return validationError("is not a valid value: %s", optionalMessage(err))
	}
	return nil
}

// optionalMessage describes a decoding error of an Optional without Go
// internals.
func optionalMessage(err error) string {
	switch e := err.(type) {
	case *json.UnmarshalTypeError:
		if e.Field != "" {
			return e.Field + " must be " + jsonTypeName(e.Type.Kind().String())
		}
		return "must be " + jsonTypeName(e.Type.Kind().String())
	case *time.ParseError:
		return `must be an RFC 3339 timestamp such as "2024-07-30T12:00:00Z"`
	}
	if s := err.Error(); len(s) > 0 && bytes.HasPrefix([]byte(s), []byte("json: unknown field ")) {
		return "unknown field " + s[len("json: unknown field "):]
	}
	return "wrong type"
}

func jsonTypeName(kind string) string {
	switch kind {
	case "string":
		return "a string"
	case "slice", "array":
		return "an array"
	case "struct", "map":
		return "an object"
	case "bool":
		return "a boolean"
	}
	return "a " + kind
}

// The one implementation of what invoices and credit notes share: loading
// and storing a document, editability, totals, numbering and the validation
// of header fields. invoice.go and creditnote.go only describe their
// document (a docKind) and its own rules; lines.go holds their lines and
// groups.

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
	// kept is the kind's list, whose counts and indexes saveDoc keeps
	// with a document's filter values.
	kept   keptList
	values func(*D) []string
	// sums, when set, keeps what else is kept of a document (invoices:
	// keepStanding) as saveDoc stores it.
	sums func(ctx context.Context, tx Tx, account, id string, d *D) error
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
	if err := putRecord(ctx, tx, k.docs, key(account, d.docID()), d); err != nil {
		return err
	}
	if k.sums != nil {
		if err := k.sums(ctx, tx, account, d.docID(), (*D)(d)); err != nil {
			return err
		}
	}
	return k.kept.put(ctx, tx, account, d.docID(), k.values((*D)(d)))
}

// normalizedPtr returns a copy of the instant t points to, normalized
// (NormalizeTime); nil for nil. Documents take their optional timestamps
// from their parameters with it.
func normalizedPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	n := NormalizeTime(*t)
	return &n
}

// copyOf returns a pointer to a copy of *p, nil for nil: a record keeps its
// own copy of an optional value of its parameters, not the caller's.
func copyOf[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
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

// issue stamps what finalization gives every document, in tx: its number
// (nextNumber of series: INV, CN), the account's merchant details as they are now,
// and the issue date *issued unless it is set: today in the calendar of
// the document's customer.
func (s *Service) issue(ctx context.Context, tx Tx, account, series, customerID string, issued *Date, now time.Time) (number string, md *MerchantDetails, err error) {
	if number, err = nextNumber(ctx, tx, account, series); err != nil {
		return "", nil, err
	}
	if md, err = s.merchantDetails(ctx, tx, account); err != nil {
		return "", nil, err
	}
	if issued.IsZero() {
		*issued, err = s.dateOf(ctx, tx, account, customerID, now)
	}
	return number, md, err
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
func (s *Service) checkHeader(v *validator, emails []string, legalName *string, billing, shipping *Address, taxID string, metadata []KeyValue, texts map[string]string) {
	if len(emails) > s.limits.MaxEntries {
		v.add("customerEmails", "at most %d e-mails", s.limits.MaxEntries)
	}
	for i, e := range emails {
		checkEmail(v, fmt.Sprintf("customerEmails[%d]", i), e)
	}
	s.checkName(v, "customerLegalCompanyName", legalName, false)
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

// untaxed reports whether a customer of tax status st is billed without
// tax: TAX_EXEMPT and REVERSE_CHARGED customers are, on every document.
func (st TaxStatus) untaxed() bool { return st == TaxStatusTaxExempt || st == TaxStatusReverseCharged }

// untaxedReason says why a customer of tax status st is billed without
// tax, in the words of the refusals.
func (st TaxStatus) untaxedReason() string {
	if st == TaxStatusReverseCharged {
		return "the customer is REVERSE_CHARGED: the customer accounts for the tax (reverse charge)"
	}
	return "the customer is TAX_EXEMPT"
}

// checkLineTax refuses, on taxRate, a taxed line on a document of a
// customer billed without tax.
func checkLineTax(v *validator, st TaxStatus, taxRate *Decimal) {
	if st.untaxed() && taxRate != nil && !taxRate.IsZero() {
		v.add("taxRate", "taxRate must be 0: %s", st.untaxedReason())
	}
}

// checkNoTaxedLines refuses (invalid_state) to finalize a document of a
// customer billed without tax that still holds taxed lines (the customer's
// status changed after they were added), naming them.
func checkNoTaxedLines(what string, st TaxStatus, lines []*LineItem) error {
	if !st.untaxed() {
		return nil
	}
	var taxed []string
	for _, l := range lines {
		if !l.TaxRate.IsZero() {
			taxed = append(taxed, fmt.Sprintf("%d (%q, taxRate %s)", l.Index, l.Title, l.TaxRate))
		}
	}
	if len(taxed) == 0 {
		return nil
	}
	return Errorf(CodeInvalidState, "%s of a customer billed without tax cannot carry tax (%s); set taxRate to 0 on line items %s",
		what, st.untaxedReason(), strings.Join(taxed, ", "))
}
