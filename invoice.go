package billing

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// RenderSettings say how an invoice is rendered.
type RenderSettings struct {
	// PaymentLinkDisplay is HIDE_PAYMENT_LINK (the only value so far).
	PaymentLinkDisplay string `json:"paymentLinkDisplay"`
}

// Invoice is a bill to a customer. Every field the specification marks
// "always" is present in its JSON: empty lists as [], unknown addresses with
// empty strings, totals "0.00" while it has no lines.
type Invoice struct {
	// DocumentHeader: the invoice's id, account, status, currency and
	// customer (CustomerID is the customer billed, fixed at creation;
	// CustomerEmails receive the invoice on send: the customer's billing
	// contacts unless given).
	DocumentHeader
	// CustomerTaxID is printed on the invoice: the customer's tax id unless given.
	CustomerTaxID string `json:"customerTaxId,omitempty"`
	// CustomerTaxStatus is the customer's tax status, copied with the other
	// customer fields; empty on invoices stored before it was recorded.
	CustomerTaxStatus TaxStatus `json:"customerTaxStatus,omitempty"`
	Totals
	// AmountPaid is the sum of the invoice's payments.
	AmountPaid Decimal `json:"amountPaid"`
	// AmountCredited is the gross total of its FINAL and SENT credit notes.
	AmountCredited Decimal `json:"amountCredited"`
	// CreditsApplied is the CASH credit applied to the invoice as money on
	// account, after tax (paid grants and grants from credit notes); "0.00"
	// when none. Free credit is not counted here: it is a discount, in the
	// invoice's BURNDOWN lines.
	CreditsApplied Decimal `json:"creditsApplied"`
	// CreditApplications are the grants of CreditsApplied, in the order
	// applied; always present, [] when none.
	CreditApplications []CreditApplication `json:"creditApplications"`
	// AmountDue is grossTotal − creditsApplied − amountCredited −
	// amountPaid, never below zero; zero on a VOIDED invoice.
	AmountDue Decimal `json:"amountDue"`
	// Metadata is free key-value data of the caller; always present, [] when none.
	Metadata []KeyValue `json:"metadata"`
	// PaymentStatus is derived from AmountDue (UNPAID, PARTIALLY_PAID, PAID)
	// unless set to UNCOLLECTIBLE with SetPaymentStatus.
	PaymentStatus PaymentStatus `json:"paymentStatus"`
	CreatedAt     time.Time     `json:"createdAt"`
	UpdatedAt     time.Time     `json:"updatedAt"`
	// CreditNoteIDs are the credit notes created against the invoice, oldest
	// first; always present.
	CreditNoteIDs []string `json:"creditNoteIds"`
	// LinkedServices are the invoice's records in external systems; always
	// present, [] (billingd syncs with none).
	LinkedServices []LinkedService `json:"linkedServices"`
	// AccountingDate is the date the invoice is booked on: its creation date until
	// finalization, then the issue date, unless set.
	AccountingDate Date `json:"accountingDate"`
	// RenderSettings say how the invoice is rendered for the customer.
	RenderSettings RenderSettings `json:"renderSettings"`
	// IsCustomerArchived is set on every invoice of a customer when the customer
	// is archived; display only.
	IsCustomerArchived bool `json:"isCustomerArchived"`
	// InvoiceNumber (INV00001, ...) is assigned at finalization, gapless per
	// account; empty before.
	InvoiceNumber string `json:"invoiceNumber,omitempty"`
	// DueDate is when payment is due: at finalization, unless set, the issue date
	// plus the schedule's defaultDueDateDays (else 30 days).
	DueDate Date `json:"dueDate,omitzero"`
	// IssueDate is set at finalization (today, unless set); zero, and absent in
	// JSON, before.
	IssueDate Date `json:"issueDate,omitzero"`
	// PurchaseOrderNumber is the customer's purchase order, printed on the
	// invoice; empty when not given.
	PurchaseOrderNumber string `json:"purchaseOrderNumber,omitempty"`
	// Reference is free text printed on the invoice; empty when not given.
	Reference string `json:"reference,omitempty"`
	Memo      string `json:"memo,omitempty"`
	// BuyerReference is the reference the buyer asked invoices to carry
	// (e-invoices: EN 16931 BT-10; a German public buyer's Leitweg-ID): the
	// customer's unless given; empty when neither has one.
	BuyerReference string `json:"buyerReference,omitempty"`
	// PaymentOptions are the ways the customer may pay, as printed.
	PaymentOptions []PaymentOption `json:"paymentOptions,omitempty"`
	// BillingPeriod is the period the invoice bills (inclusive dates); nil when
	// not given. The engine sets it to the period of its in-advance charges, else
	// of its in-arrears ones.
	BillingPeriod *DateRange `json:"billingPeriod,omitempty"`
	// BillingScheduleID is the schedule that created the invoice; empty for
	// invoices made by hand.
	BillingScheduleID string `json:"billingScheduleId,omitempty"`
	// MerchantDetails are the account's merchant details as they were at
	// finalization; nil before.
	MerchantDetails *MerchantDetails `json:"merchantDetails,omitempty"`
	// CreditBalances says, once the invoice is finalized, the credit its
	// customer has left ("Remaining credit: 40.00 USD"); absent when the
	// customer has no credit grants.
	CreditBalances string `json:"creditBalances,omitempty"`
	// DunningStatus is the collection's state on an account with a payment
	// provider (SCHEDULED, OVERDUE_CHECK_SCHEDULED, COMPLETED, FAILED,
	// NOT_REQUIRED; docs/payments.md); empty without one.
	DunningStatus string `json:"dunningStatus,omitempty"`
	// PaymentLink is the provider's hosted page where the customer pays
	// the invoice, once collection made one; empty otherwise.
	PaymentLink string `json:"paymentLink,omitempty"`
	// CalculatedAt is when the billing engine last computed the invoice; nil for
	// invoices made by hand. Engine-created invoices cannot be deleted.
	CalculatedAt *time.Time `json:"calculatedAt,omitempty"`
}

// invoiceRecord is an invoice as stored: the invoice and whether its
// accountingDate was set by the client (finalization replaces a default
// one with the issue date). Lists decode it as an Invoice, ignoring the flag.
type invoiceRecord struct {
	Invoice
	AccountingDateSet bool `json:"_accountingDateSet,omitempty"`
	// CreditsRequested is set by ApplyCredits on an editable invoice: its
	// credit is applied again whenever its lines change.
	CreditsRequested bool `json:"_creditsRequested,omitempty"`
	// AutoTopUp marks the purchase invoice of an auto top-up
	// (credittopup.go): its collection charges the customer automatically.
	AutoTopUp bool `json:"_autoTopUp,omitempty"`
}

// UnmarshalJSON decodes an invoice record. An invoice voided before voids
// zeroed amountDue is read with amountDue 0, as it is voided today (lists,
// which decode an Invoice, zero it in ListInvoices).
func (r *invoiceRecord) UnmarshalJSON(b []byte) error {
	type plainInvoice Invoice
	var rec struct {
		plainInvoice
		AccountingDateSet bool `json:"_accountingDateSet,omitempty"`
		CreditsRequested  bool `json:"_creditsRequested,omitempty"`
		AutoTopUp         bool `json:"_autoTopUp,omitempty"`
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		return err
	}
	r.Invoice, r.AccountingDateSet, r.CreditsRequested = Invoice(rec.plainInvoice), rec.AccountingDateSet, rec.CreditsRequested
	r.AutoTopUp = rec.AutoTopUp
	r.normalize()
	return nil
}

// normalize reads a stored invoice as invoices are written today: a
// VOIDED one owes nothing, and one stored before credit could be money on
// account has creditsApplied "0.00" and no applications.
func (inv *Invoice) normalize() {
	if inv.Status == StatusVoided && !inv.AmountDue.IsZero() {
		inv.AmountDue = inv.Currency.Zero()
	}
	if inv.CreditApplications == nil {
		inv.CreditsApplied, inv.CreditApplications = inv.Currency.Zero(), []CreditApplication{}
	}
}

// InvoiceLineItem is a line of an invoice.
type InvoiceLineItem struct {
	LineItem
	// InvoiceID is the invoice the line belongs to.
	InvoiceID string `json:"invoiceId"`
	// ServicePeriodStart is the first instant of the period the line bills; nil
	// when not given.
	ServicePeriodStart *time.Time `json:"servicePeriodStart,omitempty"`
	// ServicePeriodEnd is the end of that period (exclusive); nil when not given.
	ServicePeriodEnd *time.Time `json:"servicePeriodEnd,omitempty"`
	// ServicePeriod is the same period as calendar dates (the engine sets it); nil
	// when not given.
	ServicePeriod *ServicePeriod `json:"servicePeriod,omitempty"`
	// CreditGrantID is the credit grant the line draws down or creates; empty for
	// other lines.
	CreditGrantID string `json:"creditGrantId,omitempty"`
}

// InvoiceLineItemGroup groups lines of an invoice under a title.
type InvoiceLineItemGroup struct {
	LineItemGroup
	// InvoiceID is the invoice the group belongs to.
	InvoiceID string `json:"invoiceId"`
}

// InvoiceParams are the fields of a new invoice (POST /invoices). Currency
// and CustomerID are required; Status may be DRAFT (the default) or
// IN_PROGRESS. Customer fields left out (emails, legal name, addresses, tax
// id) are copied from the customer.
type InvoiceParams struct {
	// Currency is required: an ISO 4217 code billingd supports.
	Currency Currency `json:"currency"`
	// CustomerID is required: a customer of the account that is not archived.
	CustomerID string `json:"customerId"`
	// Status may be DRAFT (the default) or IN_PROGRESS.
	Status DocumentStatus `json:"status"`
	// BillingScheduleID links the invoice to a schedule of the account; optional.
	BillingScheduleID string `json:"billingScheduleId"`
	InvoiceUpdateParams
}

// InvoiceUpdateParams replace the header of a DRAFT or IN_PROGRESS invoice
// (PUT /invoices/{id}): every field is replaced, fields left out are
// cleared, and cleared customer fields are copied from the customer again.
// Currency, customer, status and schedule cannot change.
type InvoiceUpdateParams struct {
	// PurchaseOrderNumber: empty clears it.
	PurchaseOrderNumber string `json:"purchaseOrderNumber"`
	// Reference: empty clears it.
	Reference string `json:"reference"`
	Memo      string `json:"memo"`
	// BuyerReference: empty copies the customer's buyer reference again.
	BuyerReference string `json:"buyerReference"`
	// CustomerEmails replace the invoice's; nil copies the customer's billing
	// contacts again.
	CustomerEmails []string `json:"customerEmails"`
	// CustomerLegalCompanyName: empty copies the customer's legal name again.
	CustomerLegalCompanyName string `json:"customerLegalCompanyName"`
	// CustomerBillingAddress: nil copies the customer's address again.
	CustomerBillingAddress *Address `json:"customerBillingAddress"`
	// CustomerShippingAddress: nil copies the customer's address again.
	CustomerShippingAddress *Address `json:"customerShippingAddress"`
	// CustomerTaxID: empty copies the customer's tax id again.
	CustomerTaxID string `json:"customerTaxId"`
	// DueDate: nil leaves it to be set at finalization.
	DueDate *Date `json:"dueDate"`
	// BillingPeriod (inclusive dates): nil clears it.
	BillingPeriod *DateRange `json:"billingPeriod"`
	// Metadata replaces the invoice's; nil clears it.
	Metadata []KeyValue `json:"metadata"`
	// PaymentOptions replace the invoice's; nil clears them.
	PaymentOptions []PaymentOption `json:"paymentOptions"`
	// AccountingDate: nil keeps the default (creation date, then issue date).
	AccountingDate *Date `json:"accountingDate"`
}

// InvoiceLineItemParams are the fields of an invoice line (create, and op 18
// as a full replace). Title, Quantity, Rate, TaxRate and ExternalIDs (may be
// empty, not nil) are required. RateDisplay defaults to ABSOLUTE.
type InvoiceLineItemParams struct {
	// Title is required.
	Title       string `json:"title"`
	Description string `json:"description"`
	// Quantity is required; any sign, exact.
	Quantity *Decimal `json:"quantity"`
	// Rate is required: the price of one unit in the invoice's currency (any
	// number of decimals; the line's totals are rounded).
	Rate *Decimal `json:"rate"`
	// TaxRate is required: a fraction from 0 to 1 ("0.2" is 20%).
	TaxRate *Decimal `json:"taxRate"`
	// ServicePeriodStart is optional; see InvoiceLineItem.
	ServicePeriodStart *time.Time `json:"servicePeriodStart"`
	// ServicePeriodEnd is optional and not before ServicePeriodStart.
	ServicePeriodEnd *time.Time `json:"servicePeriodEnd"`
	// ServicePeriod is optional; both its dates are then required.
	ServicePeriod *ServicePeriod `json:"servicePeriod"`
	// GroupID must name a group of the same invoice; empty for no group.
	GroupID string `json:"groupId"`
	// PriceID must name a price of the account; optional.
	PriceID string `json:"priceId"`
	// ProductID must name a product of the account; optional.
	ProductID string `json:"productId"`
	// RateDisplay says how Rate is shown; defaults to ABSOLUTE.
	RateDisplay RateDisplay `json:"rateDisplay"`
	// ExternalIDs are required on the API (they may be []): the line's ids in
	// other systems.
	ExternalIDs []KeyValue `json:"externalIds"`
	// RevenueClassification is PREPAYMENT, EARNED or BURNDOWN; optional.
	RevenueClassification RevenueClassification `json:"revenueClassification"`
	// CreditGrantID is set by billingd on credit lines; optional.
	CreditGrantID string `json:"creditGrantId"`
	// RevenueRecognitionMethod says how the line's revenue is recognised;
	// optional.
	RevenueRecognitionMethod RevenueRecognitionMethod `json:"revenueRecognitionMethod"`
	// UnitCode is a UN/ECE Recommendation 20 unit code; optional (see
	// LineItem.UnitCode).
	UnitCode string `json:"unitCode"`
	// TaxCategory is S, Z, E, AE, K, G or O; optional (see
	// LineItem.TaxCategory).
	TaxCategory TaxCategory `json:"taxCategory"`
}

// InvoiceLineItemGroupParams are the fields of an invoice line item group
// (create, and update as a full replace). Title is required.
type InvoiceLineItemGroupParams struct {
	// Title is required.
	Title       string `json:"title"`
	Description string `json:"description"`
}

// InvoiceFilter selects invoices in ListInvoices. Empty fields match all.
type InvoiceFilter struct {
	// CustomerID keeps one customer's invoices; empty keeps all.
	CustomerID string
	// Status keeps the invoices in one status; empty keeps all.
	Status DocumentStatus
	// BillingScheduleID keeps one schedule's invoices; empty keeps all.
	BillingScheduleID string
	// SortOrder orders by creation: DESC (newest first, the default) or ASC.
	SortOrder SortOrder
}

// invoiceKind describes invoices to the document core.
var invoiceKind = docKind[invoiceRecord]{
	name: "invoice", docs: tableInvoices, lines: tableInvoiceLines, groups: tableInvoiceGroups,
	number: "INV", updated: NotificationInvoiceUpdated,
	kept: keptInvoices, values: invoiceValues, sums: keepStanding,
}

func (r *invoiceRecord) docTotals() Totals { return r.Totals }
func (r *invoiceRecord) setTotals(t Totals, now time.Time) {
	r.Totals, r.UpdatedAt = t, now
	r.refreshAmounts()
}

// refreshAmounts derives amountDue (zero on a VOIDED invoice: nothing is
// owed on it) and, unless UNCOLLECTIBLE, the payment status: PAID when
// nothing is due on a FINAL or SENT invoice, UNPAID when nothing was paid
// (credit applied as money on account counts as paid once the invoice is
// issued), PARTIALLY_PAID otherwise.
func (inv *Invoice) refreshAmounts() {
	due := inv.GrossTotal.Sub(inv.CreditsApplied).Sub(inv.AmountCredited).Sub(inv.AmountPaid)
	if due.Sign() < 0 || inv.Status == StatusVoided {
		due = inv.Currency.Zero()
	}
	inv.AmountDue = inv.Currency.Round(due, RoundHalfUp)
	if inv.PaymentStatus != PaymentStatusUncollectible {
		inv.PaymentStatus = inv.derivedPaymentStatus()
	}
}

func (inv *Invoice) derivedPaymentStatus() PaymentStatus {
	switch {
	case inv.Status.finalized() && inv.AmountDue.IsZero():
		return PaymentStatusPaid
	case inv.AmountPaid.IsZero() && (inv.CreditsApplied.IsZero() || !inv.Status.finalized()):
		return PaymentStatusUnpaid // credit on account pays an issued invoice in part, like a payment
	}
	return PaymentStatusPartiallyPaid
}

// getInvoiceTx reads an invoice inside tx. Returns not_found.
func (s *Service) getInvoiceTx(ctx context.Context, tx Tx, account, id string) (*Invoice, error) {
	r, err := loadDoc(ctx, tx, invoiceKind, account, id)
	if err != nil {
		return nil, err
	}
	return &r.Invoice, nil
}

// listInvoiceLinesTx reads all lines of an invoice inside tx, by index.
func (s *Service) listInvoiceLinesTx(ctx context.Context, tx Tx, account, invoiceID string) ([]InvoiceLineItem, error) {
	lines, err := scanAll[InvoiceLineItem](ctx, tx, tableInvoiceLines, account, invoiceID)
	out := make([]InvoiceLineItem, len(lines))
	for i, l := range lines {
		out[i] = *l
	}
	return out, err
}

// checkInvoiceHeader validates the header fields shared by create and
// update.
func (s *Service) checkInvoiceHeader(v *validator, p *InvoiceUpdateParams) {
	s.checkHeader(v, p.CustomerEmails, &p.CustomerLegalCompanyName, p.CustomerBillingAddress, p.CustomerShippingAddress,
		p.CustomerTaxID, p.Metadata, map[string]string{
			"purchaseOrderNumber": p.PurchaseOrderNumber, "reference": p.Reference, "memo": p.Memo,
			"buyerReference": p.BuyerReference,
		})
	if bp := p.BillingPeriod; bp != nil {
		v.check(!bp.Start.IsZero(), "billingPeriod.start", "billingPeriod.start is required")
		v.check(!bp.EndInclusive.IsZero(), "billingPeriod.endInclusive", "billingPeriod.endInclusive is required")
		v.check(!bp.EndInclusive.Before(bp.Start), "billingPeriod.endInclusive", "billingPeriod.endInclusive must not be before its start")
	}
	for i, o := range p.PaymentOptions {
		v.check(o == PaymentOptionBankTransfer || o == PaymentOptionLink, fmt.Sprintf("paymentOptions[%d]", i),
			"paymentOptions entries must be BANK_TRANSFER or LINK")
	}
}

// applyInvoiceHeader sets the header of r from h, copying missing customer
// fields from c; created is the date of r's creation in c's calendar.
func applyInvoiceHeader(r *invoiceRecord, h *InvoiceUpdateParams, c *Customer, created Date) {
	cf := fromCustomer(c).fill(h.CustomerEmails, h.CustomerLegalCompanyName, h.CustomerBillingAddress, h.CustomerShippingAddress, h.CustomerTaxID)
	r.setCustomer(cf)
	r.CustomerTaxID = cf.TaxID
	r.CustomerTaxStatus, r.IsCustomerArchived = c.TaxStatus, c.ArchivedAt != nil
	r.PurchaseOrderNumber, r.Reference, r.Memo = h.PurchaseOrderNumber, h.Reference, h.Memo
	r.BuyerReference = h.BuyerReference
	if r.BuyerReference == "" {
		r.BuyerReference = c.BuyerReference
	}
	r.Metadata = append([]KeyValue{}, h.Metadata...)
	r.PaymentOptions = append([]PaymentOption(nil), h.PaymentOptions...)
	r.BillingPeriod = nil
	if h.BillingPeriod != nil {
		bp := *h.BillingPeriod
		r.BillingPeriod = &bp
	}
	r.DueDate = Date{}
	if h.DueDate != nil {
		r.DueDate = *h.DueDate
	}
	r.AccountingDate, r.AccountingDateSet = created, h.AccountingDate != nil
	if h.AccountingDate != nil {
		r.AccountingDate = *h.AccountingDate
	}
}

// newInvoice validates p and builds the invoice record it describes (not
// stored), without lines.
func (s *Service) newInvoice(ctx context.Context, tx Tx, account string, p InvoiceParams, now time.Time) (*invoiceRecord, error) {
	var v validator
	checkCurrency(&v, p.Currency)
	v.check(p.CustomerID != "", "customerId", "customerId is required")
	status := checkStatusOnCreate(&v, p.Status)
	h := p.InvoiceUpdateParams
	s.checkInvoiceHeader(&v, &h)
	var c *Customer
	if p.CustomerID != "" {
		var err error
		c, err = s.getCustomer(ctx, tx, account, p.CustomerID)
		if CodeOf(err) == CodeNotFound {
			v.add("customerId", "customerId does not name a customer of this account")
		} else if err != nil {
			return nil, err
		}
	}
	if p.BillingScheduleID != "" {
		if err := s.checkRef(ctx, tx, &v, tableBillingSchedules, key(account, p.BillingScheduleID), "billingScheduleId"); err != nil {
			return nil, err
		}
	}
	if err := v.err(); err != nil {
		return nil, err
	}
	if c.ArchivedAt != nil {
		return nil, Errorf(CodeInvalidState, "the customer is archived; archived customers get no new invoices")
	}
	r := &invoiceRecord{Invoice: Invoice{
		DocumentHeader: DocumentHeader{ID: s.newID(), ServiceAccountID: account, Status: status, Currency: p.Currency, CustomerID: c.ID},
		CreatedAt:      now, UpdatedAt: now, CreditNoteIDs: []string{}, LinkedServices: []LinkedService{},
		RenderSettings: RenderSettings{PaymentLinkDisplay: "HIDE_PAYMENT_LINK"}, BillingScheduleID: p.BillingScheduleID,
		PaymentStatus: PaymentStatusUnpaid, AmountPaid: p.Currency.Zero(), AmountCredited: p.Currency.Zero(),
		CreditsApplied: p.Currency.Zero(), CreditApplications: []CreditApplication{},
	}}
	created, err := s.dateOf(ctx, tx, account, c.ID, now)
	if err != nil {
		return nil, err
	}
	applyInvoiceHeader(r, &h, c, created)
	r.setTotals(zeroTotals(p.Currency), now)
	return r, nil
}

// CreateInvoice creates a DRAFT (or IN_PROGRESS) invoice without lines and
// emits INVOICE_CREATED. Returns validation_failed for invalid fields (all
// at once), an unknown customer or billing schedule included, and
// invalid_state for an archived customer.
func (s *Service) CreateInvoice(ctx context.Context, account string, p InvoiceParams) (*Invoice, error) {
	inv, err := s.createInvoice(ctx, account, p)
	if err == nil && s.observer.InvoicesCreated != nil {
		s.observer.InvoicesCreated("api", 1)
	}
	return inv, err
}

// createInvoice is CreateInvoice without the Observer.
func (s *Service) createInvoice(ctx context.Context, account string, p InvoiceParams) (*Invoice, error) {
	now := s.clock()
	return mutate(ctx, s, account, func(tx Tx) (*Invoice, error) {
		r, err := s.newInvoice(ctx, tx, account, p, now)
		if err != nil {
			return nil, err
		}
		if err := saveDoc(ctx, tx, invoiceKind, account, r); err != nil {
			return nil, err
		}
		if err := s.recordDocRounding(ctx, tx, account, r.ID); err != nil {
			return nil, err
		}
		return &r.Invoice, s.emit(ctx, tx, account, NotificationInvoiceCreated, &r.Invoice)
	})
}

// GetInvoice returns an invoice. Returns not_found if the account has no
// such invoice.
func (s *Service) GetInvoice(ctx context.Context, account, id string) (*Invoice, error) {
	return read(ctx, s, func(tx Tx) (*Invoice, error) { return s.getInvoiceTx(ctx, tx, account, id) })
}

// ListInvoices lists the account's invoices matching f, newest first unless
// f.SortOrder says ASC. Returns validation_failed for a bad filter, limit or
// cursor.
func (s *Service) ListInvoices(ctx context.Context, account string, f InvoiceFilter, p ListParams) (Page[Invoice], error) {
	order, err := ParseSortOrder(string(f.SortOrder), SortDesc)
	if err != nil {
		return Page[Invoice]{}, err
	}
	if err := checkStatusFilter(f.Status); err != nil {
		return Page[Invoice]{}, err
	}
	q := listQuery[Invoice]{
		name: "invoices", filter: f.CustomerID + "\x00" + string(f.Status) + "\x00" + f.BillingScheduleID,
		table: tableInvoices, prefix: prefix(account), desc: order == SortDesc,
		decode: decodeAll(func(inv *Invoice) bool {
			inv.normalize()
			return (f.CustomerID == "" || inv.CustomerID == f.CustomerID) && (f.Status == "" || inv.Status == f.Status) &&
				(f.BillingScheduleID == "" || inv.BillingScheduleID == f.BillingScheduleID)
		}),
	}
	given := []string{f.CustomerID, string(f.Status), f.BillingScheduleID}
	return read(ctx, s, func(tx Tx) (Page[Invoice], error) { return listKept(ctx, s, tx, keptInvoices, account, given, q, p) })
}

// checkStatusFilter validates a status filter.
func checkStatusFilter(st DocumentStatus) error {
	switch st {
	case "", StatusInProgress, StatusDraft, StatusFinal, StatusSent, StatusVoided:
		return nil
	}
	return FieldError("status", "status must be IN_PROGRESS, DRAFT, FINAL, SENT or VOIDED")
}

// invoiceOp runs one mutating invoice operation: it loads the invoice, lets
// fn change it, stores it and emits typ about it (nothing when typ is "").
func (s *Service) invoiceOp(ctx context.Context, account, id string, typ NotificationType, fn func(tx Tx, r *invoiceRecord, now time.Time) error) (*Invoice, error) {
	now := s.clock()
	return mutate(ctx, s, account, func(tx Tx) (*Invoice, error) {
		r, err := loadDoc(ctx, tx, invoiceKind, account, id)
		if err != nil {
			return nil, err
		}
		if err := fn(tx, r, now); err != nil {
			return nil, err
		}
		r.UpdatedAt = now
		if err := saveDoc(ctx, tx, invoiceKind, account, r); err != nil {
			return nil, err
		}
		if typ == "" {
			return &r.Invoice, nil
		}
		return &r.Invoice, s.emit(ctx, tx, account, typ, &r.Invoice)
	})
}

// UpdateInvoice replaces the header of a DRAFT or IN_PROGRESS invoice (see
// InvoiceUpdateParams) and emits INVOICE_UPDATED. Returns not_found,
// validation_failed, and invalid_state for any other status.
func (s *Service) UpdateInvoice(ctx context.Context, account, id string, p InvoiceUpdateParams) (*Invoice, error) {
	return s.invoiceOp(ctx, account, id, NotificationInvoiceUpdated, func(tx Tx, r *invoiceRecord, now time.Time) error {
		if err := requireEditable("invoice", r); err != nil {
			return err
		}
		var v validator
		s.checkInvoiceHeader(&v, &p)
		if err := v.err(); err != nil {
			return err
		}
		c, err := s.getCustomer(ctx, tx, account, r.CustomerID)
		if err != nil {
			return err
		}
		created, err := s.dateOf(ctx, tx, account, c.ID, r.CreatedAt)
		if err != nil {
			return err
		}
		applyInvoiceHeader(r, &p, c, created)
		return nil
	})
}

// DeleteInvoice deletes a DRAFT or IN_PROGRESS invoice with its lines and
// groups. Returns not_found, and invalid_state for any other status or for
// an invoice computed by the billing engine (void it instead).
func (s *Service) DeleteInvoice(ctx context.Context, account, id string) error {
	_, err := mutate(ctx, s, account, func(tx Tx) (struct{}, error) {
		r, err := loadDoc(ctx, tx, invoiceKind, account, id)
		if err != nil {
			return struct{}{}, err
		}
		if !r.Status.editable() {
			return struct{}{}, stateError("invoice", "delete", r.Status)
		}
		if r.CalculatedAt != nil {
			return struct{}{}, Errorf(CodeInvalidState, "the invoice was computed by the billing engine; void it instead of deleting it")
		}
		if err := s.revokePrepaidGrants(ctx, tx, account, id, s.clock()); err != nil {
			return struct{}{}, err
		}
		if err := s.reverseInvoiceCredits(ctx, tx, account, id, "invoice deleted", s.clock()); err != nil {
			return struct{}{}, err
		}
		for _, t := range []Table{tableInvoiceLines, tableInvoiceGroups} {
			if err := deleteUnder(ctx, tx, t, prefix(account, id)); err != nil {
				return struct{}{}, err
			}
		}
		if err := deleteIfPresent(ctx, tx, tableDocumentRounding, key(account, id)); err != nil {
			return struct{}{}, err
		}
		if err := keepStanding(ctx, tx, account, id, nil); err != nil {
			return struct{}{}, err
		}
		if err := keptInvoices.put(ctx, tx, account, id, nil); err != nil {
			return struct{}{}, err
		}
		return struct{}{}, tx.Delete(ctx, tableInvoices, key(account, id))
	})
	return err
}

// deleteUnder deletes every key of table t under pre.
func deleteUnder(ctx context.Context, tx Tx, t Table, pre []byte) error {
	return deleteRange(ctx, tx, t, Range{Prefix: pre}, 0)
}

// DraftInvoice turns an IN_PROGRESS invoice into a DRAFT and emits
// INVOICE_UPDATED. Returns not_found, and invalid_state for any other
// status.
func (s *Service) DraftInvoice(ctx context.Context, account, id string) (*Invoice, error) {
	return s.invoiceOp(ctx, account, id, NotificationInvoiceUpdated, func(_ Tx, r *invoiceRecord, _ time.Time) error {
		if r.Status != StatusInProgress {
			return stateError("invoice", "draft", r.Status)
		}
		r.Status = StatusDraft
		return nil
	})
}

// FinalizeInvoice turns a DRAFT or IN_PROGRESS invoice into a FINAL one: it
// assigns the next invoice number, the issue date (today unless set), the
// due date (issue date + the schedule's defaultDueDateDays, else 30 days,
// unless set) and the accounting date (the issue date unless set), copies the
// merchant details, writes the journal and emits INVOICE_UPDATED, all in one
// transaction. Returns not_found, and invalid_state for any other status
// or when the invoice's grossTotal is negative (checkNotNegative).
func (s *Service) FinalizeInvoice(ctx context.Context, account, id string) (*Invoice, error) {
	return s.invoiceOp(ctx, account, id, NotificationInvoiceUpdated, func(tx Tx, r *invoiceRecord, now time.Time) error {
		if !r.Status.editable() {
			return stateError("invoice", "finalize", r.Status)
		}
		return s.finalizeInvoice(ctx, tx, account, r, now)
	})
}

// finalizeInvoice is the one finalization of an invoice (finalize, send,
// apply-credits, the engine's auto-issue). The invoices of the billing
// engine, and manual ones through ApplyCredits, are paid with the
// customer's CASH credit on the way (credit.go).
func (s *Service) finalizeInvoice(ctx context.Context, tx Tx, account string, r *invoiceRecord, now time.Time) error {
	if err := checkNotNegative("an invoice", r.GrossTotal); err != nil {
		return err
	}
	if err := s.checkUntaxedInvoice(ctx, tx, account, r); err != nil {
		return err
	}
	number, md, err := s.issue(ctx, tx, account, invoiceKind.number, r.CustomerID, &r.IssueDate, now)
	if err != nil {
		return err
	}
	r.Status, r.InvoiceNumber, r.MerchantDetails = StatusFinal, number, md
	if r.CalculatedAt != nil {
		if err := s.drawUsage(ctx, tx, account, r, r.IssueDate, now); err != nil {
			return err
		}
	}
	// The engine's invoices are paid with credit as they are issued; a
	// draft given credit by ApplyCredits has it already.
	if r.CalculatedAt != nil && !r.CreditsRequested {
		if err := s.applyCash(ctx, tx, account, r, r.IssueDate, true, now); err != nil {
			return err
		}
		if err := checkNotNegative("an invoice", r.GrossTotal); err != nil {
			return err // free credit never takes a rate's tax below zero; a guard
		}
	}
	if r.CreditBalances, err = s.creditBalancesText(ctx, tx, account, r.CustomerID, r.IssueDate); err != nil {
		return err
	}
	if r.DueDate.IsZero() {
		days, err := s.dueDays(ctx, tx, account, r.BillingScheduleID)
		if err != nil {
			return err
		}
		r.DueDate = r.IssueDate.AddDays(days)
	}
	if !r.AccountingDateSet {
		r.AccountingDate = r.IssueDate
	}
	r.UpdatedAt = now
	r.refreshAmounts()
	if err := s.freezeRendering(ctx, tx, account, r.ID, r.CustomerID, r.CustomerTaxStatus, now); err != nil {
		return err
	}
	lines, prepaid, err := s.invoiceJournal(ctx, tx, account, r)
	if err != nil {
		return err
	}
	if err := s.writeJournal(ctx, tx, account, JournalSourceInvoice, r.ID, r.Currency, now, lines...); err != nil {
		return err
	}
	if err := s.fundPrepaidGrants(ctx, tx, account, r.ID, prepaid, now); err != nil {
		return err
	}
	return s.startCollection(ctx, tx, account, r, now)
}

// dueDays returns the schedule's defaultDueDateDays, or 30 when the invoice
// has no schedule, the schedule is gone or sets none. A stored schedule
// that cannot be read is an error: finalization fails rather than guess.
func (s *Service) dueDays(ctx context.Context, tx Tx, account, scheduleID string) (int, error) {
	if scheduleID == "" {
		return 30, nil
	}
	sc, err := findRecord[struct {
		DefaultDueDateDays *int `json:"defaultDueDateDays"`
	}](ctx, tx, tableBillingSchedules, key(account, scheduleID))
	if err != nil || sc == nil || sc.DefaultDueDateDays == nil {
		return 30, err
	}
	return *sc.DefaultDueDateDays, nil
}

// SendInvoice is op 16: a DRAFT, IN_PROGRESS or FINAL invoice becomes SENT,
// finalized on the way when needed; the invoice e-mail is queued to
// customerEmails (none when empty) and INVOICE_ISSUED emitted. Returns
// not_found, and invalid_state when it is already SENT or VOIDED.
func (s *Service) SendInvoice(ctx context.Context, account, id string) (*Invoice, error) {
	return mutate(ctx, s, account, func(tx Tx) (*Invoice, error) {
		inv, err := s.sendInvoiceTx(ctx, tx, account, id)
		if err != nil {
			return nil, err
		}
		return inv, s.emit(ctx, tx, account, NotificationInvoiceIssued, inv)
	})
}

// sendInvoiceTx is op 16 inside tx (finalize if needed, journal, e-mail
// queued); emits nothing.
func (s *Service) sendInvoiceTx(ctx context.Context, tx Tx, account, id string) (*Invoice, error) {
	now := s.clock()
	r, err := loadDoc(ctx, tx, invoiceKind, account, id)
	if err != nil {
		return nil, err
	}
	switch {
	case r.Status.editable():
		if err := s.finalizeInvoice(ctx, tx, account, r, now); err != nil {
			return nil, err
		}
	case r.Status != StatusFinal:
		return nil, stateError("invoice", "send", r.Status)
	}
	r.Status, r.UpdatedAt = StatusSent, now
	if err := saveDoc(ctx, tx, invoiceKind, account, r); err != nil {
		return nil, err
	}
	inv := &r.Invoice
	if len(inv.CustomerEmails) > 0 {
		if err := s.queueEmail(ctx, tx, account, documentEmail(inv.CustomerEmails, DocumentInvoice, inv.ID)); err != nil {
			return nil, err
		}
	}
	return inv, nil
}

// VoidInvoice voids an invoice in any status but VOIDED, reverses its
// journal entries, gives back the credit it consumed (REVERSAL
// transactions) and emits INVOICE_UPDATED. Returns not_found, and
// invalid_state when it is VOIDED, when it has FINAL or SENT credit notes,
// or when payments were recorded and its paymentStatus is PARTIALLY_PAID or
// PAID.
func (s *Service) VoidInvoice(ctx context.Context, account, id string) (*Invoice, error) {
	return s.invoiceOp(ctx, account, id, NotificationInvoiceUpdated, func(tx Tx, r *invoiceRecord, now time.Time) error {
		if r.Status == StatusVoided {
			return stateError("invoice", "void", r.Status)
		}
		// PAID with no payment is an invoice credit paid (or of zero
		// total): voiding it gives the credit back.
		if (r.PaymentStatus == PaymentStatusPartiallyPaid || r.PaymentStatus == PaymentStatusPaid) && r.AmountPaid.Sign() > 0 {
			return Errorf(CodeInvalidState, "the invoice is %s; credit it instead of voiding it", r.PaymentStatus)
		}
		for _, cnID := range r.CreditNoteIDs {
			cn, err := loadDoc(ctx, tx, creditNoteKind, account, cnID)
			if err != nil {
				return err
			}
			if cn.Status.finalized() {
				return Errorf(CodeInvalidState, "the invoice has FINAL or SENT credit notes; void them first")
			}
		}
		if err := s.revokePrepaidGrants(ctx, tx, account, r.ID, now); err != nil {
			return err
		}
		wasFinal := r.Status.finalized()
		r.Status = StatusVoided
		r.CreditsApplied, r.CreditApplications = r.Currency.Zero(), []CreditApplication{}
		r.refreshAmounts()
		if err := s.followCollection(ctx, tx, r, now); err != nil {
			return err
		}
		if wasFinal {
			if err := s.reverseJournal(ctx, tx, account, r.ID, now); err != nil {
				return err
			}
		}
		// A draft given credit by ApplyCredits gives it back too.
		return s.reverseInvoiceCredits(ctx, tx, account, r.ID, "invoice voided", now)
	})
}

// markInvoicesCustomerArchived sets isCustomerArchived on every invoice of
// the customer, inside the transaction that archives it. The flag is a
// display field: updatedAt stays and nothing is emitted.
func (s *Service) markInvoicesCustomerArchived(ctx context.Context, tx Tx, account, customerID string) error {
	var marked []*invoiceRecord
	err := eachRecord(ctx, tx, tableInvoices, Range{Prefix: prefix(account)}, func(r *invoiceRecord) error {
		if r.CustomerID == customerID && !r.IsCustomerArchived {
			r.IsCustomerArchived = true
			marked = append(marked, r)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, r := range marked {
		if err := saveDoc(ctx, tx, invoiceKind, account, r); err != nil {
			return err
		}
	}
	return nil
}

// checkUntaxedInvoice takes the customer's tax status as it is at
// finalization onto the invoice, and refuses (checkNoTaxedLines) an
// invoice of a customer billed without tax that still holds taxed lines.
func (s *Service) checkUntaxedInvoice(ctx context.Context, tx Tx, account string, r *invoiceRecord) error {
	st, err := s.customerTaxStatus(ctx, tx, account, r.CustomerID)
	if err != nil || st == "" {
		return err
	}
	r.CustomerTaxStatus = st
	if !st.untaxed() {
		return nil
	}
	lines, err := scanAll[InvoiceLineItem](ctx, tx, tableInvoiceLines, account, r.ID)
	if err != nil {
		return err
	}
	return checkNoTaxedLines("an invoice", st, lineCores(lines))
}
