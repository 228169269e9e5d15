package billing

import (
	"context"
	"time"
)

// CashCreditGrant says whether a credit note generates a cash credit grant.
type CashCreditGrant string

// The values of settings.generateCashCreditGrant.
const (
	CashCreditGrantEnabled  CashCreditGrant = "ENABLED"
	CashCreditGrantDisabled CashCreditGrant = "DISABLED"
)

// CreditNoteSettings are the settings of a credit note.
type CreditNoteSettings struct {
	// GenerateCashCreditGrant is DISABLED (the default: the credit note
	// reduces its invoice's amount due, a refund) or ENABLED: finalizing
	// the credit note creates a CASH credit grant of its gross total for
	// the customer instead.
	GenerateCashCreditGrant CashCreditGrant `json:"generateCashCreditGrant"`
}

// CreditNote reduces what a customer owes, usually against an invoice.
// Every field the specification marks "always" is present in its JSON.
type CreditNote struct {
	// DocumentHeader: the credit note's id, account, status, currency and
	// customer (the credited invoice's currency, customer, e-mails and
	// addresses when there is one, unless given).
	DocumentHeader
	Totals
	// Metadata is free key-value data of the caller; always present.
	Metadata []KeyValue `json:"metadata"`
	// LinkedServices are records in external systems; always [] (billingd syncs
	// with none).
	LinkedServices []LinkedService `json:"linkedServices"`
	// Settings are stored and echoed; GenerateCashCreditGrant is DISABLED by
	// default.
	Settings CreditNoteSettings `json:"settings"`
	// InvoiceID is the invoice credited; empty for a standalone credit note.
	InvoiceID string `json:"invoiceId,omitempty"`
	// InvoiceNumber is the credited invoice's number, copied at creation.
	InvoiceNumber string `json:"invoiceNumber,omitempty"`
	// BillingScheduleID is copied from the credited invoice.
	BillingScheduleID string `json:"billingScheduleId,omitempty"`
	// IssueDate is set at finalization; zero, and absent in JSON, before.
	IssueDate Date `json:"issueDate,omitzero"`
	// BillingPeriodStart is the start of the credited period (from the invoice's
	// billing period unless given); nil when none.
	BillingPeriodStart *time.Time `json:"billingPeriodStart,omitempty"`
	// BillingPeriodEnd is the end of the credited period, exclusive (the day after
	// the invoice's inclusive end, at 00:00Z); nil when none.
	BillingPeriodEnd *time.Time `json:"billingPeriodEnd,omitempty"`
	// CreditNoteNumber (CN00001, ...) is assigned at finalization, gapless per
	// account; empty before.
	CreditNoteNumber string `json:"creditNoteNumber,omitempty"`
	// PurchaseOrderNumber is the customer's purchase order, printed on the
	// credit note; empty when not given.
	PurchaseOrderNumber string `json:"purchaseOrderNumber,omitempty"`
	Memo                string `json:"memo,omitempty"`
	// CustomerTaxID is printed: from the invoice or customer unless given.
	CustomerTaxID string `json:"customerTaxId,omitempty"`
	// BuyerReference is the buyer's reference (e-invoices: EN 16931 BT-10):
	// from the invoice, else the customer, unless given; empty when none.
	BuyerReference string `json:"buyerReference,omitempty"`
	// MerchantDetails as they were at finalization; nil before.
	MerchantDetails *MerchantDetails `json:"merchantDetails,omitempty"`
	// AccountingDate is the booking date: the issue date unless set.
	AccountingDate Date `json:"accountingDate,omitzero"`
	// CreditGrantID is the CASH credit grant the credit note created when
	// finalized (settings.generateCashCreditGrant ENABLED).
	CreditGrantID string    `json:"creditGrantId,omitempty"`
	CreatedAt     time.Time `json:"createdAt"`
	UpdatedAt     time.Time `json:"updatedAt"`
}

// CreditNoteLineItem is a line of a credit note.
type CreditNoteLineItem struct {
	LineItem
	// CreditNoteID is the credit note the line belongs to.
	CreditNoteID string `json:"creditNoteId"`
	// LineItemID is the line of the credited invoice this line relates to.
	LineItemID string `json:"lineItemId,omitempty"`
	// ServicePeriod is the credited period (inclusive dates); nil when not given.
	ServicePeriod *DateRange `json:"servicePeriod,omitempty"`
}

// CreditNoteLineItemGroup groups lines of a credit note under a title.
type CreditNoteLineItemGroup struct {
	LineItemGroup
	// CreditNoteID is the credit note the group belongs to.
	CreditNoteID string `json:"creditNoteId"`
	// LineItemGroupID is the group of the credited invoice it mirrors.
	LineItemGroupID string `json:"lineItemGroupId,omitempty"`
}

// CreditNoteParams are the fields of a new credit note (op 9). Currency and
// CustomerID are required; Status may be DRAFT (the default) or
// IN_PROGRESS. With InvoiceID, the invoice must be FINAL or SENT and of the
// same customer and currency; missing customer fields and the billing period
// come from it, otherwise from the customer.
type CreditNoteParams struct {
	// Currency is required; with InvoiceID it must be the invoice's.
	Currency Currency `json:"currency"`
	// CustomerID is required; with InvoiceID it must be the invoice's.
	CustomerID string `json:"customerId"`
	// InvoiceID names a FINAL or SENT invoice to credit; empty for a standalone
	// credit note.
	InvoiceID string `json:"invoiceId"`
	// Status may be DRAFT (the default) or IN_PROGRESS.
	Status DocumentStatus `json:"status"`
	// BillingPeriodStart: nil takes the invoice's.
	BillingPeriodStart *time.Time `json:"billingPeriodStart"`
	// BillingPeriodEnd (exclusive): nil takes the invoice's.
	BillingPeriodEnd *time.Time `json:"billingPeriodEnd"`
	// PurchaseOrderNumber is printed on the credit note; optional.
	PurchaseOrderNumber string `json:"purchaseOrderNumber"`
	// CustomerEmails: nil takes the invoice's, else the customer's billing
	// contacts.
	CustomerEmails []string `json:"customerEmails"`
	// CustomerLegalCompanyName: empty takes the invoice's or customer's.
	CustomerLegalCompanyName string `json:"customerLegalCompanyName"`
	// CustomerBillingAddress: nil takes the invoice's or customer's.
	CustomerBillingAddress *Address `json:"customerBillingAddress"`
	// CustomerShippingAddress: nil takes the invoice's or customer's.
	CustomerShippingAddress *Address `json:"customerShippingAddress"`
	Memo                    string   `json:"memo"`
	// Metadata are key-value pairs for the caller; may be empty.
	Metadata []KeyValue `json:"metadata"`
	// CustomerTaxID: empty takes the invoice's or customer's.
	CustomerTaxID string `json:"customerTaxId"`
	// BuyerReference: empty takes the invoice's or customer's.
	BuyerReference string `json:"buyerReference"`
	// AccountingDate: nil means the issue date.
	AccountingDate *Date `json:"accountingDate"`
}

// CreditNoteUpdateParams are the fields op 10 may change; absent fields are
// kept, null clears a field (settings cannot be cleared; customerEmails and
// metadata become []).
type CreditNoteUpdateParams struct {
	// BillingPeriodStart: absent keeps it, null clears it.
	BillingPeriodStart Optional[time.Time] `json:"billingPeriodStart,omitzero"`
	// BillingPeriodEnd: absent keeps it, null clears it.
	BillingPeriodEnd Optional[time.Time] `json:"billingPeriodEnd,omitzero"`
	// PurchaseOrderNumber: absent keeps it, null clears it.
	PurchaseOrderNumber Optional[string] `json:"purchaseOrderNumber,omitzero"`
	// CustomerEmails: absent keeps them, null clears them ([]).
	CustomerEmails Optional[[]string] `json:"customerEmails,omitzero"`
	// CustomerLegalCompanyName: absent keeps it, null clears it.
	CustomerLegalCompanyName Optional[string] `json:"customerLegalCompanyName,omitzero"`
	// CustomerBillingAddress: absent keeps it, null clears it.
	CustomerBillingAddress Optional[Address] `json:"customerBillingAddress,omitzero"`
	// CustomerShippingAddress: absent keeps it, null clears it.
	CustomerShippingAddress Optional[Address] `json:"customerShippingAddress,omitzero"`
	// Memo: absent keeps it, null clears it.
	Memo Optional[string] `json:"memo,omitzero"`
	// Metadata: absent keeps it, null clears it to [].
	Metadata Optional[[]KeyValue] `json:"metadata,omitzero"`
	// CustomerTaxID: absent keeps it, null clears it.
	CustomerTaxID Optional[string] `json:"customerTaxId,omitzero"`
	// BuyerReference: absent keeps it, null clears it.
	BuyerReference Optional[string] `json:"buyerReference,omitzero"`
	// Settings: absent keeps them; null is refused.
	Settings Optional[CreditNoteSettings] `json:"settings,omitzero"`
	// AccountingDate: absent keeps it, null clears it.
	AccountingDate Optional[Date] `json:"accountingDate,omitzero"`
}

// CreditNoteLineItemParams are the fields of a credit note line (op 14, a
// full replace; also the body of op 13 with CreateCreditNoteLineItemParams).
// Title, Quantity, Rate, TaxRate and ExternalIDs (may be empty, not nil) are
// required. RevenueRecognitionMethod accepts STRAIGHT_LINE and
// POINT_IN_TIME only.
type CreditNoteLineItemParams struct {
	// Title is required.
	Title       string `json:"title"`
	Description string `json:"description"`
	// Quantity is required; exact.
	Quantity *Decimal `json:"quantity"`
	// Rate is required: the credit per unit in the credit note's currency.
	Rate *Decimal `json:"rate"`
	// TaxRate is required: a fraction from 0 to 1.
	TaxRate *Decimal `json:"taxRate"`
	// ExternalIDs are required (they may be []).
	ExternalIDs []KeyValue `json:"externalIds"`
	// RateDisplay defaults to ABSOLUTE.
	RateDisplay RateDisplay `json:"rateDisplay"`
	// ServicePeriod is optional; both dates are then required.
	ServicePeriod *DateRange `json:"servicePeriod"`
	// RevenueRecognitionMethod accepts only STRAIGHT_LINE and POINT_IN_TIME on
	// credit notes.
	RevenueRecognitionMethod RevenueRecognitionMethod `json:"revenueRecognitionMethod"`
	// RevenueClassification is PREPAYMENT, EARNED or BURNDOWN; optional.
	RevenueClassification RevenueClassification `json:"revenueClassification"`
	// ProductID must name a product of the account; optional.
	ProductID string `json:"productId"`
	// UnitCode is a UN/ECE Recommendation 20 unit code; optional (see
	// LineItem.UnitCode).
	UnitCode string `json:"unitCode"`
	// TaxCategory is S, Z, E, AE, K, G or O; optional (see
	// LineItem.TaxCategory).
	TaxCategory TaxCategory `json:"taxCategory"`
}

// CreateCreditNoteLineItemParams are the body of op 13: the line's fields
// plus CreditNoteID (required, equal to the credit note of the path),
// GroupID (a group of the same credit note) and LineItemID (a line of the
// credited invoice).
type CreateCreditNoteLineItemParams struct {
	// CreditNoteID is required and must be the credit note of the path.
	CreditNoteID string `json:"creditNoteId"`
	// GroupID must name a group of the same credit note; kept on update.
	GroupID string `json:"groupId"`
	// LineItemID must name a line of the credited invoice; kept on update.
	LineItemID string `json:"lineItemId"`
	CreditNoteLineItemParams
}

// CreditNoteLineItemGroupParams are the fields of a credit note line item
// group (create, and update as a full replace). Title is required;
// LineItemGroupID, when given, must name a group of the credited invoice.
type CreditNoteLineItemGroupParams struct {
	// Title is required.
	Title       string `json:"title"`
	Description string `json:"description"`
	// LineItemGroupID, when given, must name a group of the credited invoice.
	LineItemGroupID string `json:"lineItemGroupId"`
}

// CreditNoteFilter selects credit notes in ListCreditNotes. Empty fields
// match all.
type CreditNoteFilter struct {
	// CustomerID keeps one customer's credit notes; empty keeps all.
	CustomerID string
	// InvoiceID keeps the credit notes of one invoice; empty keeps all.
	InvoiceID string
	// Status keeps the credit notes in one status; empty keeps all.
	Status DocumentStatus
	// SortOrder orders by creation: DESC (newest first, the default) or ASC.
	SortOrder SortOrder
}

// creditNoteKind describes credit notes to the document core.
var creditNoteKind = docKind[CreditNote]{
	name: "credit note", docs: tableCreditNotes, lines: tableCreditNoteLines, groups: tableCreditNoteGroups,
	number: "CN", updated: NotificationCreditNoteUpdated,
	kept: keptCreditNotes, values: creditNoteValues,
}

func (c *CreditNote) docTotals() Totals { return c.Totals }
func (c *CreditNote) setTotals(t Totals, now time.Time) {
	c.Totals, c.UpdatedAt = t, now
}

// checkSettings validates credit note settings.
func checkSettings(v *validator, st CreditNoteSettings) {
	switch st.GenerateCashCreditGrant {
	case CashCreditGrantEnabled, CashCreditGrantDisabled:
	default:
		v.add("settings.generateCashCreditGrant", "settings.generateCashCreditGrant must be ENABLED or DISABLED")
	}
}

// checkPeriod validates a billing period given as timestamps.
func checkPeriod(v *validator, start, end *time.Time) {
	if start != nil && end != nil && end.Before(*start) {
		v.add("billingPeriodEnd", "billingPeriodEnd must not be before billingPeriodStart")
	}
}

// CreateCreditNote is op 9: it creates a DRAFT (or IN_PROGRESS) credit note
// and emits CREDIT_NOTE_CREATED; with an invoice, the credit note's id is
// appended to the invoice's creditNoteIds. Returns validation_failed (all
// invalid fields at once; an unknown customer or invoice, or an invoice of
// another customer or currency), and invalid_state when the invoice is not
// FINAL or SENT or the customer is archived.
func (s *Service) CreateCreditNote(ctx context.Context, account string, p CreditNoteParams) (*CreditNote, error) {
	now := s.clock()
	return mutate(ctx, s, account, func(tx Tx) (*CreditNote, error) {
		cn, err := s.createCreditNoteTx(ctx, tx, account, p, now)
		if err != nil {
			return nil, err
		}
		return cn, s.emit(ctx, tx, account, NotificationCreditNoteCreated, cn)
	})
}

// createCreditNoteTx validates p and stores the new credit note inside tx
// (the billing engine's corrections use it too). Emits nothing: callers
// emit.
//
// Long on purpose: the checks of op 9 against the credited invoice and the
// customer run in the transaction of the insert, in the order the errors are
// reported.
func (s *Service) createCreditNoteTx(ctx context.Context, tx Tx, account string, p CreditNoteParams, now time.Time) (*CreditNote, error) {
	var v validator
	checkCurrency(&v, p.Currency)
	v.check(p.CustomerID != "", "customerId", "customerId is required")
	status := checkStatusOnCreate(&v, p.Status)
	s.checkHeader(&v, p.CustomerEmails, &p.CustomerLegalCompanyName, p.CustomerBillingAddress, p.CustomerShippingAddress,
		p.CustomerTaxID, p.Metadata, map[string]string{"purchaseOrderNumber": p.PurchaseOrderNumber, "memo": p.Memo,
			"buyerReference": p.BuyerReference})
	checkPeriod(&v, p.BillingPeriodStart, p.BillingPeriodEnd)
	var c *Customer
	if p.CustomerID != "" {
		var err error
		if c, err = s.getCustomer(ctx, tx, account, p.CustomerID); CodeOf(err) == CodeNotFound {
			v.add("customerId", "customerId does not name a customer of this account")
		} else if err != nil {
			return nil, err
		}
	}
	var inv *invoiceRecord
	if p.InvoiceID != "" {
		var err error
		inv, err = loadDoc(ctx, tx, invoiceKind, account, p.InvoiceID)
		switch {
		case CodeOf(err) == CodeNotFound:
			v.add("invoiceId", "invoiceId does not name an invoice of this account")
		case err != nil:
			return nil, err
		case inv.CustomerID != p.CustomerID:
			v.add("invoiceId", "the invoice belongs to another customer")
		case inv.Currency != p.Currency:
			v.add("invoiceId", "the invoice is in %s, not %s", inv.Currency, p.Currency)
		}
	}
	if err := v.err(); err != nil {
		return nil, err
	}
	if inv != nil && !inv.Status.finalized() {
		return nil, Errorf(CodeInvalidState, "only FINAL or SENT invoices can be credited; this one is %s", inv.Status)
	}
	cn := &CreditNote{
		DocumentHeader: DocumentHeader{ID: s.newID(), ServiceAccountID: account, Status: status, Currency: p.Currency, CustomerID: c.ID},
		Totals:         zeroTotals(p.Currency), Metadata: append([]KeyValue{}, p.Metadata...), LinkedServices: []LinkedService{},
		Settings:            CreditNoteSettings{GenerateCashCreditGrant: CashCreditGrantDisabled},
		PurchaseOrderNumber: p.PurchaseOrderNumber, Memo: p.Memo, CreatedAt: now, UpdatedAt: now,
		BillingPeriodStart: normalizedPtr(p.BillingPeriodStart), BillingPeriodEnd: normalizedPtr(p.BillingPeriodEnd),
	}
	if p.AccountingDate != nil {
		cn.AccountingDate = *p.AccountingDate
	}
	base := fromCustomer(c)
	if inv != nil {
		base = inv.customer(inv.CustomerTaxID)
		cn.InvoiceID, cn.InvoiceNumber, cn.BillingScheduleID = inv.ID, inv.InvoiceNumber, inv.BillingScheduleID
		if bp := inv.BillingPeriod; bp != nil && cn.BillingPeriodStart == nil && cn.BillingPeriodEnd == nil {
			cal, err := s.calendarFor(ctx, tx, account, c.ID)
			if err != nil {
				return nil, err
			}
			start, end := cal.Start(bp.Start), cal.Start(bp.EndInclusive.AddDays(1))
			cn.BillingPeriodStart, cn.BillingPeriodEnd = &start, &end
		}
		inv.CreditNoteIDs = append(inv.CreditNoteIDs, cn.ID)
		inv.UpdatedAt = now
		if err := saveDoc(ctx, tx, invoiceKind, account, inv); err != nil {
			return nil, err
		}
	}
	cf := base.fill(p.CustomerEmails, p.CustomerLegalCompanyName, p.CustomerBillingAddress, p.CustomerShippingAddress, p.CustomerTaxID)
	cn.setCustomer(cf)
	cn.CustomerTaxID = cf.TaxID
	switch {
	case p.BuyerReference != "":
		cn.BuyerReference = p.BuyerReference
	case inv != nil:
		cn.BuyerReference = inv.BuyerReference
	default:
		cn.BuyerReference = c.BuyerReference
	}
	if err := saveDoc(ctx, tx, creditNoteKind, account, cn); err != nil {
		return nil, err
	}
	if err := s.recordDocRounding(ctx, tx, account, cn.ID); err != nil {
		return nil, err
	}
	return cn, nil
}

// GetCreditNote returns a credit note. Returns not_found.
func (s *Service) GetCreditNote(ctx context.Context, account, id string) (*CreditNote, error) {
	return read(ctx, s, func(tx Tx) (*CreditNote, error) { return loadDoc(ctx, tx, creditNoteKind, account, id) })
}

// ListCreditNotes lists the account's credit notes matching f, newest first
// unless f.SortOrder says ASC. Returns validation_failed.
func (s *Service) ListCreditNotes(ctx context.Context, account string, f CreditNoteFilter, p ListParams) (Page[CreditNote], error) {
	order, err := ParseSortOrder(string(f.SortOrder), SortDesc)
	if err != nil {
		return Page[CreditNote]{}, err
	}
	if err := checkStatusFilter(f.Status); err != nil {
		return Page[CreditNote]{}, err
	}
	q := listQuery[CreditNote]{
		name: "credit_notes", filter: f.CustomerID + "\x00" + f.InvoiceID + "\x00" + string(f.Status),
		table: tableCreditNotes, prefix: prefix(account), desc: order == SortDesc,
		decode: decodeAll(func(cn *CreditNote) bool {
			return (f.CustomerID == "" || cn.CustomerID == f.CustomerID) && (f.InvoiceID == "" || cn.InvoiceID == f.InvoiceID) &&
				(f.Status == "" || cn.Status == f.Status)
		}),
	}
	given := []string{f.CustomerID, f.InvoiceID, string(f.Status)}
	return read(ctx, s, func(tx Tx) (Page[CreditNote], error) {
		return listKept(ctx, s, tx, keptCreditNotes, account, given, q, p)
	})
}

// creditNoteOp runs one mutating credit note operation: load, fn, store,
// emit typ (nothing when typ is ""). fn returns changed=false to leave the
// record as it is (no write, no notification).
func (s *Service) creditNoteOp(ctx context.Context, account, id string, typ NotificationType, fn func(tx Tx, cn *CreditNote, now time.Time) (changed bool, err error)) (*CreditNote, error) {
	now := s.clock()
	return mutate(ctx, s, account, func(tx Tx) (*CreditNote, error) {
		cn, err := loadDoc(ctx, tx, creditNoteKind, account, id)
		if err != nil {
			return nil, err
		}
		changed, err := fn(tx, cn, now)
		if err != nil || !changed {
			return cn, err
		}
		cn.UpdatedAt = now
		if err := saveDoc(ctx, tx, creditNoteKind, account, cn); err != nil {
			return nil, err
		}
		if typ == "" {
			return cn, nil
		}
		return cn, s.emit(ctx, tx, account, typ, cn)
	})
}

// UpdateCreditNote is op 10: it changes the fields present in p on a DRAFT
// or IN_PROGRESS credit note and emits CREDIT_NOTE_UPDATED. Returns
// not_found, validation_failed, and invalid_state for any other status.
func (s *Service) UpdateCreditNote(ctx context.Context, account, id string, p CreditNoteUpdateParams) (*CreditNote, error) {
	var v validator
	var billing, shipping *Address
	if !p.CustomerBillingAddress.Null && p.CustomerBillingAddress.Set {
		billing = &p.CustomerBillingAddress.Value
	}
	if !p.CustomerShippingAddress.Null && p.CustomerShippingAddress.Set {
		shipping = &p.CustomerShippingAddress.Value
	}
	s.checkHeader(&v, p.CustomerEmails.Value, &p.CustomerLegalCompanyName.Value, billing, shipping, p.CustomerTaxID.Value,
		p.Metadata.Value, map[string]string{"purchaseOrderNumber": p.PurchaseOrderNumber.Value, "memo": p.Memo.Value,
			"buyerReference": p.BuyerReference.Value})
	v.check(!p.Settings.Null, "settings", "settings cannot be null")
	if p.Settings.Set && !p.Settings.Null {
		checkSettings(&v, p.Settings.Value)
	}
	if err := v.err(); err != nil {
		return nil, err
	}
	return s.creditNoteOp(ctx, account, id, NotificationCreditNoteUpdated, func(_ Tx, cn *CreditNote, _ time.Time) (bool, error) {
		if err := requireEditable("credit note", cn); err != nil {
			return false, err
		}
		applyCreditNoteUpdate(cn, &p)
		var v validator
		checkPeriod(&v, cn.BillingPeriodStart, cn.BillingPeriodEnd)
		return true, v.err()
	})
}

// applyCreditNoteUpdate applies the present fields of p to cn.
func applyCreditNoteUpdate(cn *CreditNote, p *CreditNoteUpdateParams) {
	for _, f := range []struct {
		o   Optional[time.Time]
		dst **time.Time
	}{{p.BillingPeriodStart, &cn.BillingPeriodStart}, {p.BillingPeriodEnd, &cn.BillingPeriodEnd}} {
		switch {
		case f.o.Null:
			*f.dst = nil
		case f.o.Set:
			t := NormalizeTime(f.o.Value)
			*f.dst = &t
		}
	}
	setOptional(&cn.PurchaseOrderNumber, p.PurchaseOrderNumber)
	setOptional(&cn.CustomerEmails, p.CustomerEmails)
	setOptional(&cn.CustomerLegalCompanyName, p.CustomerLegalCompanyName)
	setOptional(&cn.CustomerBillingAddress, p.CustomerBillingAddress)
	setOptional(&cn.CustomerShippingAddress, p.CustomerShippingAddress)
	setOptional(&cn.Memo, p.Memo)
	setOptional(&cn.Metadata, p.Metadata)
	setOptional(&cn.CustomerTaxID, p.CustomerTaxID)
	setOptional(&cn.BuyerReference, p.BuyerReference)
	setOptional(&cn.Settings, p.Settings)
	setOptional(&cn.AccountingDate, p.AccountingDate)
	if cn.CustomerEmails == nil {
		cn.CustomerEmails = []string{}
	}
	if cn.Metadata == nil {
		cn.Metadata = []KeyValue{}
	}
}

// MarkCreditNoteSent is op 11: a DRAFT, IN_PROGRESS or FINAL credit note
// becomes SENT, finalized on the way (number, dates, merchant details,
// journal). No e-mail, no notification. A SENT credit note is returned
// unchanged. Returns not_found, and invalid_state when it is VOIDED or its
// finalization is refused (see FinalizeCreditNote).
func (s *Service) MarkCreditNoteSent(ctx context.Context, account, id string) (*CreditNote, error) {
	return s.creditNoteOp(ctx, account, id, "", func(tx Tx, cn *CreditNote, now time.Time) (bool, error) {
		switch cn.Status {
		case StatusSent:
			return false, nil
		case StatusVoided:
			return false, stateError("credit note", "mark as sent", cn.Status)
		}
		return true, s.toSentCreditNote(ctx, tx, account, cn, now)
	})
}

// toSentCreditNote finalizes cn if needed and makes it SENT.
func (s *Service) toSentCreditNote(ctx context.Context, tx Tx, account string, cn *CreditNote, now time.Time) error {
	if cn.Status.editable() {
		if err := s.finalizeCreditNote(ctx, tx, account, cn, now); err != nil {
			return err
		}
	}
	cn.Status = StatusSent
	return nil
}

// SendCreditNote is MarkCreditNoteSent plus the e-mail to customerEmails and
// CREDIT_NOTE_ISSUED. Returns not_found, and invalid_state when it is SENT or
// VOIDED or its finalization is refused.
func (s *Service) SendCreditNote(ctx context.Context, account, id string) (*CreditNote, error) {
	return s.creditNoteOp(ctx, account, id, NotificationCreditNoteIssued, func(tx Tx, cn *CreditNote, now time.Time) (bool, error) {
		if cn.Status == StatusSent || cn.Status == StatusVoided {
			return false, stateError("credit note", "send", cn.Status)
		}
		if err := s.toSentCreditNote(ctx, tx, account, cn, now); err != nil {
			return false, err
		}
		cn.UpdatedAt = now
		if len(cn.CustomerEmails) == 0 {
			return true, nil
		}
		return true, s.queueEmail(ctx, tx, account, documentEmail(cn.CustomerEmails, DocumentCreditNote, cn.ID))
	})
}

// DraftCreditNote turns an IN_PROGRESS credit note into a DRAFT and emits
// CREDIT_NOTE_UPDATED. Returns not_found, and invalid_state for any other
// status.
func (s *Service) DraftCreditNote(ctx context.Context, account, id string) (*CreditNote, error) {
	return s.creditNoteOp(ctx, account, id, NotificationCreditNoteUpdated, func(_ Tx, cn *CreditNote, _ time.Time) (bool, error) {
		if cn.Status != StatusInProgress {
			return false, stateError("credit note", "draft", cn.Status)
		}
		cn.Status = StatusDraft
		return true, nil
	})
}

// FinalizeCreditNote turns a DRAFT or IN_PROGRESS credit note into a FINAL
// one: next credit note number, issue and accounting dates (today unless
// set), merchant details, journal entries, and the credited invoice's
// amounts updated (or, with settings.generateCashCreditGrant ENABLED, a CASH
// credit grant of its gross total created instead), then
// CREDIT_NOTE_UPDATED. Returns not_found, and invalid_state for any other
// status, for a credit note without lines, when its invoice is VOIDED, when
// the invoice's FINAL and SENT credit notes, this one included, would exceed
// its gross total (less its payments not made through the payment
// provider, for those that are not credit: checkCreditingLimit), or
// when a grant is asked of a gross total that is not positive, or when its
// gross total is negative (checkNotNegative). A refused
// finalization burns no number.
func (s *Service) FinalizeCreditNote(ctx context.Context, account, id string) (*CreditNote, error) {
	return s.creditNoteOp(ctx, account, id, NotificationCreditNoteUpdated, func(tx Tx, cn *CreditNote, now time.Time) (bool, error) {
		if !cn.Status.editable() {
			return false, stateError("credit note", "finalize", cn.Status)
		}
		return true, s.finalizeCreditNote(ctx, tx, account, cn, now)
	})
}

// finalizeCreditNote is the one finalization of a credit note (finalize,
// send, mark-as-sent): the guards first, then the number, so a refusal
// writes nothing.
//
// Long on purpose: the guards, the numbering, the journal and the crediting of
// the invoice must happen in one transaction and in this order.
func (s *Service) finalizeCreditNote(ctx context.Context, tx Tx, account string, cn *CreditNote, now time.Time) error {
	n, err := countLines(ctx, tx, tableCreditNoteLines, account, cn.ID)
	if err != nil {
		return err
	}
	if n == 0 {
		return Errorf(CodeInvalidState, "a credit note needs at least one line item to be finalized")
	}
	if err := checkNotNegative("a credit note", cn.GrossTotal); err != nil {
		return err
	}
	if err := s.checkUntaxedCreditNote(ctx, tx, account, cn); err != nil {
		return err
	}
	var inv *invoiceRecord
	if cn.InvoiceID != "" {
		if inv, err = loadDoc(ctx, tx, invoiceKind, account, cn.InvoiceID); err != nil {
			return err
		}
		if inv.Status == StatusVoided {
			return Errorf(CodeInvalidState, "the credited invoice is VOIDED")
		}
		if err := s.checkCreditingLimit(ctx, tx, account, inv, cn); err != nil {
			return err
		}
	}
	if cn.Settings.GenerateCashCreditGrant == CashCreditGrantEnabled && cn.GrossTotal.Sign() <= 0 {
		return Errorf(CodeInvalidState, "a credit note that generates a cash credit grant needs a positive gross total; this one is %s", cn.GrossTotal)
	}
	// A credit note's own date, when set, follows the rule of payments: not
	// after today, not before the credited invoice's issue date.
	if !cn.AccountingDate.IsZero() {
		issued := Date{}
		if inv != nil {
			issued = inv.IssueDate
		}
		if err := s.checkMoneyDate(ctx, tx, account, "accountingDate", cn.AccountingDate, issued, now); err != nil {
			return err
		}
	}
	number, md, err := s.issue(ctx, tx, account, creditNoteKind.number, cn.CustomerID, &cn.IssueDate, now)
	if err != nil {
		return err
	}
	cn.Status, cn.CreditNoteNumber, cn.MerchantDetails = StatusFinal, number, md
	if cn.AccountingDate.IsZero() {
		cn.AccountingDate = cn.IssueDate
	}
	// A credit note that generates a grant becomes credit instead of a
	// refund: the invoice's amount due stays, and what it credits is owed
	// as deferred revenue rather than taken off receivables.
	counter := LedgerAccountsReceivable
	tax, err := s.creditNoteTaxStatus(ctx, tx, account, cn)
	if err != nil {
		return err
	}
	if cn.Settings.GenerateCashCreditGrant == CashCreditGrantEnabled {
		if err := s.grantFromCreditNote(ctx, tx, account, cn, now); err != nil {
			return err
		}
		counter = LedgerDeferredRevenue
	} else if inv != nil {
		if err := s.creditInvoice(ctx, tx, account, inv, cn.GrossTotal, now); err != nil {
			return err
		}
	}
	if err := s.freezeRendering(ctx, tx, account, cn.ID, cn.CustomerID, tax, now); err != nil {
		return err
	}
	return s.writeJournal(ctx, tx, account, JournalSourceCreditNote, cn.ID, cn.Currency, now,
		ledgerLine{LedgerRevenue, cn.NetTotal, true},
		ledgerLine{LedgerTaxPayable, cn.TotalTax, true},
		ledgerLine{counter, cn.GrossTotal, false})
}

// checkCreditingLimit refuses (invalid_state) to finalize cn when the
// invoice would be credited twice over: its FINAL and SENT credit notes,
// cn included, may not exceed its gross total, and those that reduce what
// is due (no grant) not its gross total less payments and credit applied
// as money on account. Payments the provider collected (less what
// disputes took back) do not count against that limit: what a credit note
// credits of them can be refunded through the provider
// (RefundCreditNote), so a fully paid invoice can be credited and refunded.
func (s *Service) checkCreditingLimit(ctx context.Context, tx Tx, account string, inv *invoiceRecord, cn *CreditNote) error {
	if cn.Settings.GenerateCashCreditGrant != CashCreditGrantEnabled {
		refundable, err := providerHeld(ctx, tx, account, inv.ID)
		if err != nil {
			return err
		}
		limit := inv.GrossTotal.Sub(inv.AmountPaid).Sub(inv.CreditsApplied).Add(refundable)
		if after := inv.AmountCredited.Add(cn.GrossTotal); after.Cmp(limit) > 0 {
			return Errorf(CodeInvalidState, "crediting %s %s would bring the invoice's credits to %s, above its gross total less payments not made through the payment provider (%s)",
				cn.GrossTotal, cn.Currency, after, limit)
		}
	}
	total := cn.GrossTotal
	for _, id := range inv.CreditNoteIDs {
		if id == cn.ID {
			continue
		}
		other, err := loadDoc(ctx, tx, creditNoteKind, account, id)
		if err != nil {
			return err
		}
		if other.Status.finalized() {
			total = total.Add(other.GrossTotal)
		}
	}
	if total.Cmp(inv.GrossTotal) > 0 {
		return Errorf(CodeInvalidState, "crediting %s %s would bring the invoice's credit notes to %s, above its gross total (%s)",
			cn.GrossTotal, cn.Currency, total, inv.GrossTotal)
	}
	return nil
}

// creditInvoice adds amount to the invoice's credited amount (a negative
// amount takes it back) and stores the invoice.
func (s *Service) creditInvoice(ctx context.Context, tx Tx, account string, inv *invoiceRecord, amount Decimal, now time.Time) error {
	inv.AmountCredited = inv.AmountCredited.Add(amount)
	inv.UpdatedAt = now
	inv.refreshAmounts()
	if err := s.followCollection(ctx, tx, inv, now); err != nil {
		return err
	}
	return saveDoc(ctx, tx, invoiceKind, account, inv)
}

// VoidCreditNote voids a credit note in any status but VOIDED, reverses its
// journal entries (if it had any), gives its amount back to the credited
// invoice, or voids the credit grant it created, and emits
// CREDIT_NOTE_UPDATED. Returns not_found, and invalid_state when it is
// already VOIDED or its grant was already used.
func (s *Service) VoidCreditNote(ctx context.Context, account, id string) (*CreditNote, error) {
	return s.creditNoteOp(ctx, account, id, NotificationCreditNoteUpdated, func(tx Tx, cn *CreditNote, now time.Time) (bool, error) {
		if cn.Status == StatusVoided {
			return false, stateError("credit note", "void", cn.Status)
		}
		wasFinal := cn.Status.finalized()
		cn.Status = StatusVoided
		if !wasFinal {
			return true, nil
		}
		if cn.CreditGrantID != "" {
			if err := s.voidCreditNoteGrant(ctx, tx, account, cn, now); err != nil {
				return false, err
			}
		} else if cn.InvoiceID != "" {
			inv, err := loadDoc(ctx, tx, invoiceKind, account, cn.InvoiceID)
			if err != nil {
				return false, err
			}
			if err := s.creditInvoice(ctx, tx, account, inv, cn.GrossTotal.Neg(), now); err != nil {
				return false, err
			}
		}
		return true, s.reverseJournal(ctx, tx, account, cn.ID, now)
	})
}

// creditNoteTaxStatus is the tax status a credit note follows: that of the
// invoice it credits as issued (it gives back the tax that invoice
// charged), else its customer's; "" when neither is known.
func (s *Service) creditNoteTaxStatus(ctx context.Context, tx Tx, account string, cn *CreditNote) (TaxStatus, error) {
	if cn.InvoiceID != "" {
		inv, err := findRecord[invoiceRecord](ctx, tx, tableInvoices, key(account, cn.InvoiceID))
		if err != nil || inv != nil {
			if inv == nil {
				return "", err
			}
			return inv.CustomerTaxStatus, nil
		}
	}
	return s.customerTaxStatus(ctx, tx, account, cn.CustomerID)
}

// checkUntaxedCreditNote refuses to finalize a credit note of a customer
// billed without tax that holds taxed lines (checkNoTaxedLines).
func (s *Service) checkUntaxedCreditNote(ctx context.Context, tx Tx, account string, cn *CreditNote) error {
	st, err := s.creditNoteTaxStatus(ctx, tx, account, cn)
	if err != nil || !st.untaxed() {
		return err
	}
	lines, err := scanAll[CreditNoteLineItem](ctx, tx, tableCreditNoteLines, account, cn.ID)
	if err != nil {
		return err
	}
	return checkNoTaxedLines("a credit note", st, lineCores(lines))
}
