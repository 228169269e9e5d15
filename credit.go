package billing

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Credit grants are prepaid or promotional credit a customer holds: CASH
// credit (an amount in a currency) pays engine invoices, USAGE credit (units
// of one usage metric) reduces the billed usage of that metric. Every change
// to a grant's balance is a transaction of its append-only ledger, written in
// the transaction that changes the balance, so a grant's currentBalance is
// always the sum of its transactions. This file holds the grants, their
// ledger and balances, then the drawdown, expiry and reversal.

// CreditType is the kind of a credit grant.
type CreditType string

// The credit types.
const (
	// CreditCash is an amount of money in one currency; it pays invoices in
	// that currency.
	CreditCash CreditType = "CASH"
	// CreditUsage is a number of units of one usage metric; it reduces the
	// billed usage of prices on that metric.
	CreditUsage CreditType = "USAGE"
)

// CreditUnitType is how a new grant is counted (the create body's
// creditUnitType): CURRENCY makes a CASH grant, METRIC a USAGE grant.
type CreditUnitType string

// The credit unit types.
const (
	CreditUnitCurrency CreditUnitType = "CURRENCY"
	CreditUnitMetric   CreditUnitType = "METRIC"
)

// CreditGrantStatus is the state of a credit grant.
type CreditGrantStatus string

// The credit grant statuses. ACTIVE grants are applied (once effective);
// DEPLETED ones have nothing left (a voided invoice may give some back);
// EXPIRED and VOIDED ones are done for good.
const (
	CreditGrantActive   CreditGrantStatus = "ACTIVE"
	CreditGrantDepleted CreditGrantStatus = "DEPLETED"
	CreditGrantExpired  CreditGrantStatus = "EXPIRED"
	CreditGrantVoided   CreditGrantStatus = "VOIDED"
)

// CreditTransactionType is the kind of a ledger transaction.
type CreditTransactionType string

// The credit transaction types. GRANT and REVERSAL add to the balance;
// CONSUMPTION, EXPIRY and VOID take from it.
const (
	CreditTxGrant       CreditTransactionType = "GRANT"
	CreditTxConsumption CreditTransactionType = "CONSUMPTION"
	CreditTxExpiry      CreditTransactionType = "EXPIRY"
	CreditTxVoid        CreditTransactionType = "VOID"
	CreditTxReversal    CreditTransactionType = "REVERSAL"
)

// CreditGrant is credit granted to a customer. CASH amounts are in the
// currency's minor units; USAGE amounts are units of the metric, with up to
// 12 decimals. CurrentBalance is always the sum of the grant's transactions
// and never negative.
type CreditGrant struct {
	ID string `json:"id"`
	// ServiceAccountID is the account that owns the grant.
	ServiceAccountID string `json:"serviceAccountId"`
	// CustomerID is the customer the credit is granted to.
	CustomerID string `json:"customerId"`
	Name       string `json:"name"`
	// Type is CASH (money in Currency) or USAGE (units of MetricID).
	Type CreditType `json:"type"`
	// Currency is the CASH credit's currency; for USAGE credit, the
	// currency of CostOfCredit (empty without one).
	Currency Currency `json:"currency,omitempty"`
	// MetricID is the usage metric of USAGE credit.
	MetricID string `json:"metricId,omitempty"`
	// OriginalAmount is the amount granted, positive.
	OriginalAmount Decimal `json:"originalAmount"`
	// CurrentBalance is what is left: the sum of the grant's transactions,
	// never negative.
	CurrentBalance Decimal `json:"currentBalance"`
	// CostOfCredit is what the customer pays for the grant, if anything.
	CostOfCredit *Decimal `json:"costOfCredit,omitempty"`
	// TaxRateID is the tax rate of that purchase.
	TaxRateID string `json:"taxRateId,omitempty"`
	// InvoiceID is the DRAFT invoice created for CostOfCredit
	// (createInvoice).
	InvoiceID string `json:"invoiceId,omitempty"`
	// EffectiveDate is the first day the credit can be used.
	EffectiveDate Date `json:"effectiveDate"`
	// ExpiryDate is the last day the credit can be used; nil: never expires.
	ExpiryDate *Date `json:"expiryDate,omitempty"`
	// Status is ACTIVE, DEPLETED, EXPIRED or VOIDED.
	Status CreditGrantStatus `json:"status"`
	// SourceCreditNoteID is the credit note that created the grant.
	SourceCreditNoteID string    `json:"sourceCreditNoteId,omitempty"`
	CreatedAt          time.Time `json:"createdAt"`
	UpdatedAt          time.Time `json:"updatedAt"`
}

// grantRecord is a grant as stored: the grant and its journal basis. Basis
// is the money recorded as deferred revenue for it (the invoiced cost, or a
// credit note's gross total; zero for free credit), DeferredLeft the part
// of the basis not yet released by consumption, expiry or void.
type grantRecord struct {
	CreditGrant
	Basis        Decimal `json:"_basis"`
	DeferredLeft Decimal `json:"_deferredLeft"`
}

// CreditTransaction is one entry of a grant's ledger. Amount is positive
// for GRANT and REVERSAL, negative otherwise.
type CreditTransaction struct {
	ID string `json:"id"`
	// ServiceAccountID is the account that owns the grant.
	ServiceAccountID string `json:"serviceAccountId"`
	// GrantID is the grant whose ledger the transaction is in.
	GrantID string `json:"grantId"`
	// CustomerID is the grant's customer.
	CustomerID string `json:"customerId"`
	// Type is GRANT, CONSUMPTION, EXPIRY, VOID or REVERSAL.
	Type CreditTransactionType `json:"type"`
	// Amount is the change of the grant's balance, in the grant's units:
	// positive for GRANT and REVERSAL, negative otherwise.
	Amount Decimal `json:"amount"`
	// Date is the day the change applies to (a consumption's invoice date,
	// an expiry's day).
	Date Date `json:"date"`
	// InvoiceID is the invoice a CONSUMPTION paid (or a REVERSAL gave back).
	InvoiceID string `json:"invoiceId,omitempty"`
	// Reason says why, in words ("invoice voided", ...); may be empty.
	Reason    string    `json:"reason,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
}

// txRecord is a stored transaction with the deferred revenue it released
// (consumption), so a reversal puts back exactly that.
type txRecord struct {
	CreditTransaction
	Deferred Decimal `json:"_deferred"`
	// Discount marks the consumption of free credit as a discount before
	// tax (BURNDOWN lines): its journal is promotional expense against
	// revenue. Unset on consumptions of money on account, and on those
	// stored before the distinction (their journal is reversed as written).
	Discount bool `json:"_discount,omitempty"`
}

// CreditGrantParams are the fields of a new grant (POST /credits).
// CustomerID, Name, CreditUnitType and Amount are required; Currency is
// required for CURRENCY credit and for a CostOfCredit, MetricID for METRIC
// credit. CreateInvoice (needs a positive CostOfCredit) creates a DRAFT
// invoice for the cost with a PREPAYMENT line, taxed at TaxRateID.
// EffectiveDate defaults to today; ExpiryDate (the last usable day) must
// not be before it.
type CreditGrantParams struct {
	// CustomerID is the customer to grant to; required.
	CustomerID string `json:"customerId"`
	Name       string `json:"name"`
	// CreditUnitType is CURRENCY (a CASH grant) or METRIC (a USAGE grant);
	// required.
	CreditUnitType CreditUnitType `json:"creditUnitType"`
	// Currency is required for CURRENCY credit and with a CostOfCredit.
	Currency Currency `json:"currency"`
	// MetricID is the usage metric of METRIC credit; required for it.
	MetricID string `json:"metricId"`
	// Amount is the credit granted; required, positive.
	Amount *Decimal `json:"amount"`
	// CostOfCredit is what the customer pays for the grant; nil: free.
	CostOfCredit *Decimal `json:"costOfCredit"`
	// CreateInvoice creates a DRAFT invoice for CostOfCredit (which must then
	// be positive).
	CreateInvoice bool `json:"createInvoice"`
	// TaxRateID is the tax rate of that invoice's PREPAYMENT line; empty: none.
	TaxRateID string `json:"taxRateId"`
	// EffectiveDate is the first usable day; nil: today.
	EffectiveDate *Date `json:"effectiveDate"`
	// ExpiryDate is the last usable day, not before EffectiveDate; nil: never
	// expires.
	ExpiryDate *Date `json:"expiryDate"`
}

// CreditGrantFilter selects grants in ListCreditGrants. Empty fields match
// all.
type CreditGrantFilter struct {
	// CustomerID keeps the grants of this customer.
	CustomerID string
	// Type keeps CASH or USAGE grants.
	Type CreditType
	// Status keeps grants in this status.
	Status CreditGrantStatus
	// SortOrder orders by creation: DESC (newest first, the default) or ASC.
	SortOrder SortOrder
}

// CreditBalance is a customer's credit in one currency (CASH) or of one
// metric (USAGE).
type CreditBalance struct {
	// ID is the currency code or the metric id.
	ID string `json:"id"`
	// Name is the currency code or the metric's name.
	Name string `json:"name"`
	// Type is CASH (a currency's balance) or USAGE (a metric's).
	Type CreditType `json:"type"`
	// Balance sums the current balances of the ACTIVE grants usable on
	// the balance's date (effective, not expired).
	Balance Decimal `json:"balance"`
	// Grants are every grant of this currency or metric, oldest first.
	Grants []CreditGrant `json:"grants"`
	// Transactions are the most recent transactions of those grants,
	// newest first, at most maxBalanceTransactions.
	Transactions []CreditTransaction `json:"transactions"`
}

// CreditBalances are a customer's balances on one date.
type CreditBalances struct {
	// CustomerID is the customer whose credit this is.
	CustomerID string `json:"customerId"`
	// Date is the day the balances are computed for.
	Date Date `json:"date"`
	// Items hold one balance per currency and per metric the customer has
	// grants in.
	Items []CreditBalance `json:"items"`
}

// maxBalanceTransactions bounds the transactions of one balance.
const maxBalanceTransactions = 50

// maxUsageDecimals bounds the decimals of USAGE credit amounts.
const maxUsageDecimals = 12

// usable reports whether the grant can be applied on date d: ACTIVE, with
// something left, effective, and not past its last day.
func (g *CreditGrant) usable(d Date) bool {
	return g.Status == CreditGrantActive && g.CurrentBalance.Sign() > 0 && !g.EffectiveDate.After(d) &&
		(g.ExpiryDate == nil || !d.After(*g.ExpiryDate))
}

// unitsOf returns the grant's unit: its currency (CASH) or metric (USAGE).
func (g *CreditGrant) unit() string {
	if g.Type == CreditCash {
		return string(g.Currency)
	}
	return g.MetricID
}

// checkCreditAmount validates a grant amount: positive, with at most the
// currency's digits (CASH) or 12 decimals (USAGE).
func checkCreditAmount(v *validator, field string, amount *Decimal, typ CreditType, cur Currency) {
	switch {
	case amount == nil:
		v.add(field, "%s is required", field)
	case amount.Sign() <= 0:
		v.add(field, "%s must be positive", field)
	case typ == CreditCash && cur.Valid() && cur.Round(*amount, RoundHalfUp).Cmp(*amount) != 0:
		v.add(field, "%s has more than the %d decimal places of %s", field, cur.MinorUnits(), cur)
	case typ == CreditUsage && amount.Round(maxUsageDecimals, RoundHalfUp).Cmp(*amount) != 0:
		v.add(field, "%s has more than %d decimal places", field, maxUsageDecimals)
	}
}

// checkGrantParams validates p inside tx and returns the grant's type, the
// customer, and the tax rate (nil without one).
//
// Long on purpose: the field checks of a grant depend on its type and on
// records read in the same transaction; they are listed in the order of the
// fields.
func (s *Service) checkGrantParams(ctx context.Context, tx Tx, account string, p *CreditGrantParams) (CreditType, *Customer, *TaxRate, error) {
	var v validator
	typ := s.checkGrantFields(&v, p)
	v.check(p.CustomerID != "", "customerId", "customerId is required")
	var c *Customer
	var err error
	if p.CustomerID != "" {
		if c, err = s.getCustomer(ctx, tx, account, p.CustomerID); CodeOf(err) == CodeNotFound {
			v.add("customerId", "customerId does not name a customer of this account")
		} else if err != nil {
			return "", nil, nil, err
		}
	}
	if typ == CreditUsage && p.MetricID != "" {
		if err := s.checkRef(ctx, tx, &v, tableUsageMetrics, key(account, p.MetricID), "metricId"); err != nil {
			return "", nil, nil, err
		}
	}
	var tr *TaxRate
	if p.TaxRateID != "" {
		if tr, err = getOwned[TaxRate](ctx, tx, tableTaxRates, account, p.TaxRateID, "tax rate"); CodeOf(err) == CodeNotFound {
			v.add("taxRateId", "taxRateId does not name a tax rate of this account")
		} else if err != nil {
			return "", nil, nil, err
		}
	}
	if err := v.err(); err != nil {
		return "", nil, nil, err
	}
	if p.CreateInvoice && c.ArchivedAt != nil {
		return "", nil, nil, Errorf(CodeInvalidState, "the customer is archived; archived customers get no new invoices")
	}
	return typ, c, tr, nil
}

// checkGrantFields validates the fields of p that need no store, and
// returns the grant's type ("" when creditUnitType is invalid).
func (s *Service) checkGrantFields(v *validator, p *CreditGrantParams) CreditType {
	s.checkName(v, "name", &p.Name, true)
	var typ CreditType
	switch p.CreditUnitType {
	case CreditUnitCurrency:
		typ = CreditCash
		checkCurrency(v, p.Currency)
		v.check(p.MetricID == "", "metricId", "metricId is only for METRIC credit")
	case CreditUnitMetric:
		typ = CreditUsage
		v.check(p.MetricID != "", "metricId", "metricId is required for METRIC credit")
		if p.Currency != "" || p.CostOfCredit != nil {
			checkCurrency(v, p.Currency)
		}
	case "":
		v.add("creditUnitType", "creditUnitType is required")
	default:
		v.add("creditUnitType", "creditUnitType must be CURRENCY or METRIC")
	}
	checkCreditAmount(v, "amount", p.Amount, typ, p.Currency)
	if c := p.CostOfCredit; c != nil {
		switch {
		case c.Sign() < 0:
			v.add("costOfCredit", "costOfCredit must not be negative")
		case p.Currency.Valid() && p.Currency.Round(*c, RoundHalfUp).Cmp(*c) != 0:
			v.add("costOfCredit", "costOfCredit has more than the %d decimal places of %s", p.Currency.MinorUnits(), p.Currency)
		}
	}
	v.check(!p.CreateInvoice || (p.CostOfCredit != nil && p.CostOfCredit.Sign() > 0), "createInvoice",
		"createInvoice needs a positive costOfCredit")
	v.check(p.TaxRateID == "" || p.CostOfCredit != nil, "taxRateId", "taxRateId is the tax of costOfCredit; give costOfCredit too")
	checkDate(v, "effectiveDate", p.EffectiveDate)
	checkDate(v, "expiryDate", p.ExpiryDate)
	if p.EffectiveDate != nil && p.ExpiryDate != nil {
		v.check(!p.ExpiryDate.Before(*p.EffectiveDate), "expiryDate", "expiryDate must not be before effectiveDate")
	}
	return typ
}

// CreateCreditGrant grants credit to a customer: the grant, its GRANT
// transaction and, with CreateInvoice, a DRAFT invoice for CostOfCredit with
// a PREPAYMENT line, all in one transaction, then CREDIT_GRANT_CREATED.
// Returns validation_failed for invalid fields (all at once; unknown
// customer, metric or tax rate included), and invalid_state when an
// invoice is asked for an archived customer.
func (s *Service) CreateCreditGrant(ctx context.Context, account string, p CreditGrantParams) (*CreditGrant, error) {
	now := s.clock()
	return mutate(ctx, s, account, func(tx Tx) (*CreditGrant, error) {
		typ, c, _, err := s.checkGrantParams(ctx, tx, account, &p)
		if err != nil {
			return nil, err
		}
		g := &grantRecord{CreditGrant: CreditGrant{
			ID: s.newID(), ServiceAccountID: account, CustomerID: c.ID, Name: p.Name, Type: typ,
			Currency: p.Currency, MetricID: p.MetricID, OriginalAmount: *p.Amount, TaxRateID: p.TaxRateID,
			CostOfCredit: copyOf(p.CostOfCredit), ExpiryDate: p.ExpiryDate, Status: CreditGrantActive,
			CreatedAt: now, UpdatedAt: now,
		}}
		if g.EffectiveDate, err = s.dateOf(ctx, tx, account, c.ID, now); err != nil {
			return nil, err
		}
		if p.EffectiveDate != nil {
			g.EffectiveDate = *p.EffectiveDate
		}
		if g.ExpiryDate != nil && g.ExpiryDate.Before(g.EffectiveDate) {
			return nil, FieldError("expiryDate", "expiryDate must not be before effectiveDate (%s)", g.EffectiveDate)
		}
		if p.CreateInvoice {
			if err := s.createPrepaymentInvoice(ctx, tx, account, g); err != nil {
				return nil, err
			}
		}
		if err := s.insertGrant(ctx, tx, g, "", now); err != nil {
			return nil, err
		}
		return &g.CreditGrant, s.emit(ctx, tx, account, NotificationCreditGrantCreated, &g.CreditGrant)
	})
}

// insertGrant stores a new grant with its GRANT transaction and indexes.
func (s *Service) insertGrant(ctx context.Context, tx Tx, g *grantRecord, reason string, now time.Time) error {
	cur := g.Currency
	if cur == "" {
		cur = CurrencyUSD // no money basis: only used for a zero
	}
	if g.Basis.IsZero() {
		g.Basis = cur.Zero()
	}
	g.DeferredLeft = g.Basis
	g.CurrentBalance = g.OriginalAmount.Sub(g.OriginalAmount) // zero with the amount's digits
	a := g.ServiceAccountID
	if err := tx.Put(ctx, tableCreditGrantsByCustomer, key(a, g.CustomerID, g.ID), nil); err != nil {
		return err
	}
	if g.ExpiryDate != nil {
		if err := tx.Put(ctx, tableCreditExpiries, key(g.ExpiryDate.String(), a, g.ID), nil); err != nil {
			return err
		}
	}
	_, err := s.appendCreditTx(ctx, tx, g, creditEntry{typ: CreditTxGrant, amount: g.OriginalAmount, date: g.EffectiveDate, reason: reason}, now)
	return err
}

// createPrepaymentInvoice creates the DRAFT invoice of a grant's cost: one
// PREPAYMENT line linked to the grant, without tax (credit bought is money
// on account: tax is charged once, on the supplies it later pays for).
// Finalizing that invoice credits the cost to deferred revenue and makes it
// the grant's basis (fundPrepaidGrants).
func (s *Service) createPrepaymentInvoice(ctx context.Context, tx Tx, account string, g *grantRecord) error {
	cost := *g.CostOfCredit
	tax := DecimalFromInt(0)
	one := DecimalFromInt(1)
	inv, err := s.createInvoiceTx(ctx, tx, account, InvoiceParams{Currency: g.Currency, CustomerID: g.CustomerID},
		[]InvoiceLineItemParams{{
			Title: "Credit purchase: " + g.Name, Quantity: &one, Rate: &cost, TaxRate: &tax, ExternalIDs: []KeyValue{},
			RevenueClassification: RevenueClassificationPrepayment, CreditGrantID: g.ID,
		}}, time.Time{})
	if err != nil {
		return err
	}
	g.InvoiceID = inv.ID
	return nil
}

// creditEntry is a transaction to append: its type, signed amount, date,
// invoice and reason, and the deferred revenue it releases.
type creditEntry struct {
	typ       CreditTransactionType
	amount    Decimal
	date      Date
	invoiceID string
	reason    string
	deferred  Decimal
	discount  bool
}

// appendCreditTx appends e to the grant's ledger, moves its balance and
// status, and stores the grant. It refuses, as an internal error, to take
// the balance below zero: callers never ask for more than is left.
func (s *Service) appendCreditTx(ctx context.Context, tx Tx, g *grantRecord, e creditEntry, now time.Time) (*txRecord, error) {
	typ := e.typ
	bal := g.CurrentBalance.Add(e.amount)
	if bal.Sign() < 0 {
		return nil, fmt.Errorf("credit grant %s: %s of %s would leave %s", g.ID, typ, e.amount, bal)
	}
	t := &txRecord{CreditTransaction: CreditTransaction{
		ID: s.newID(), ServiceAccountID: g.ServiceAccountID, GrantID: g.ID, CustomerID: g.CustomerID, Type: typ,
		Amount: e.amount, Date: e.date, InvoiceID: e.invoiceID, Reason: e.reason, CreatedAt: now,
	}, Deferred: e.deferred, Discount: e.discount}
	g.CurrentBalance, g.UpdatedAt = bal, now
	switch {
	case typ == CreditTxExpiry:
		g.Status = CreditGrantExpired
	case typ == CreditTxVoid:
		g.Status = CreditGrantVoided
	case g.Status == CreditGrantActive && bal.IsZero():
		g.Status = CreditGrantDepleted
	case g.Status == CreditGrantDepleted && bal.Sign() > 0:
		g.Status = CreditGrantActive
	}
	return t, s.putGrantTx(ctx, tx, g, t)
}

// putGrantTx stores a grant and one of its transactions.
func (s *Service) putGrantTx(ctx context.Context, tx Tx, g *grantRecord, t *txRecord) error {
	a := g.ServiceAccountID
	if err := putRecord(ctx, tx, tableCreditGrants, key(a, g.ID), g); err != nil {
		return err
	}
	return putRecord(ctx, tx, tableCreditTransactions, key(a, g.ID, t.ID), t)
}

// loadGrant reads grant id of account. Returns not_found.
func loadGrant(ctx context.Context, tx Tx, account, id string) (*grantRecord, error) {
	return getOwned[grantRecord](ctx, tx, tableCreditGrants, account, id, "credit grant")
}

// GetCreditGrant returns a grant. Returns not_found.
func (s *Service) GetCreditGrant(ctx context.Context, account, id string) (*CreditGrant, error) {
	return read(ctx, s, func(tx Tx) (*CreditGrant, error) {
		g, err := loadGrant(ctx, tx, account, id)
		if err != nil {
			return nil, err
		}
		return &g.CreditGrant, nil
	})
}

// checkGrantFilter validates the enumerations of f.
func checkGrantFilter(f CreditGrantFilter) error {
	var v validator
	v.check(f.Type == "" || f.Type == CreditCash || f.Type == CreditUsage, "type", "type must be CASH or USAGE")
	switch f.Status {
	case "", CreditGrantActive, CreditGrantDepleted, CreditGrantExpired, CreditGrantVoided:
	default:
		v.add("status", "status must be ACTIVE, DEPLETED, EXPIRED or VOIDED")
	}
	return v.err()
}

// ListCreditGrants lists the account's grants matching f, newest first
// unless f.SortOrder says ASC. Returns validation_failed for a bad filter,
// limit or cursor.
func (s *Service) ListCreditGrants(ctx context.Context, account string, f CreditGrantFilter, p ListParams) (Page[CreditGrant], error) {
	return read(ctx, s, func(tx Tx) (Page[CreditGrant], error) { return s.listGrants(ctx, tx, account, f, p) })
}

// ListCustomerCreditGrants is ListCreditGrants for one customer
// (GET /credits/{customerId}/grants). Returns not_found for an unknown
// customer, and validation_failed.
func (s *Service) ListCustomerCreditGrants(ctx context.Context, account, customerID string, f CreditGrantFilter, p ListParams) (Page[CreditGrant], error) {
	f.CustomerID = customerID
	return read(ctx, s, func(tx Tx) (Page[CreditGrant], error) {
		if _, err := s.getCustomer(ctx, tx, account, customerID); err != nil {
			return Page[CreditGrant]{}, err
		}
		return s.listGrants(ctx, tx, account, f, p)
	})
}

func (s *Service) listGrants(ctx context.Context, tx Tx, account string, f CreditGrantFilter, p ListParams) (Page[CreditGrant], error) {
	order, err := ParseSortOrder(string(f.SortOrder), SortDesc)
	if err != nil {
		return Page[CreditGrant]{}, err
	}
	if err := checkGrantFilter(f); err != nil {
		return Page[CreditGrant]{}, err
	}
	q := listQuery[CreditGrant]{
		name: "credit_grants", filter: f.CustomerID + "\x00" + string(f.Type) + "\x00" + string(f.Status),
		table: tableCreditGrants, prefix: prefix(account), desc: order == SortDesc,
		decode: decodeAll(func(g *CreditGrant) bool {
			return (f.CustomerID == "" || g.CustomerID == f.CustomerID) && (f.Type == "" || g.Type == f.Type) &&
				(f.Status == "" || g.Status == f.Status)
		}),
	}
	return list(ctx, s, tx, q, p)
}

// ListCreditTransactions lists a grant's ledger in order (ASC, the order of
// a ledger, unless order says DESC). Returns not_found and
// validation_failed.
func (s *Service) ListCreditTransactions(ctx context.Context, account, grantID string, order SortOrder, p ListParams) (Page[CreditTransaction], error) {
	order, err := ParseSortOrder(string(order), SortAsc)
	if err != nil {
		return Page[CreditTransaction]{}, err
	}
	return read(ctx, s, func(tx Tx) (Page[CreditTransaction], error) {
		if _, err := loadGrant(ctx, tx, account, grantID); err != nil {
			return Page[CreditTransaction]{}, err
		}
		q := listQuery[CreditTransaction]{
			name: "credit_transactions", filter: grantID, table: tableCreditTransactions,
			prefix: prefix(account, grantID), desc: order == SortDesc, decode: decodeAll[CreditTransaction](nil),
		}
		return list(ctx, s, tx, q, p)
	})
}

// customerGrants reads every grant of a customer, oldest first.
func customerGrants(ctx context.Context, tx Tx, account, customerID string) ([]*grantRecord, error) {
	pre := prefix(account, customerID)
	var ids []string
	err := tx.Scan(ctx, tableCreditGrantsByCustomer, Range{Prefix: pre}, func(k, _ []byte) error {
		ids = append(ids, string(k[len(pre):]))
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]*grantRecord, 0, len(ids))
	for _, id := range ids {
		g, err := getRecord[grantRecord](ctx, tx, tableCreditGrants, key(account, id))
		if err != nil {
			return nil, err
		}
		out = append(out, g)
	}
	return out, nil
}

// grantTransactions reads a grant's ledger in order.
func grantTransactions(ctx context.Context, tx Tx, account, grantID string) ([]CreditTransaction, error) {
	return scanRecords[CreditTransaction](ctx, tx, tableCreditTransactions, Range{Prefix: prefix(account, grantID)})
}

// GetCreditBalances returns a customer's credit on date (nil: today): one
// balance per currency (CASH) and per metric (USAGE), ordered by type then
// id. Returns not_found for an unknown customer, validation_failed for a
// date out of bounds.
func (s *Service) GetCreditBalances(ctx context.Context, account, customerID string, date *Date) (*CreditBalances, error) {
	var v validator
	checkDate(&v, "date", date)
	if err := v.err(); err != nil {
		return nil, err
	}
	now := s.clock()
	return read(ctx, s, func(tx Tx) (*CreditBalances, error) {
		if _, err := s.getCustomer(ctx, tx, account, customerID); err != nil {
			return nil, err
		}
		d, err := s.dateOf(ctx, tx, account, customerID, now)
		if err != nil {
			return nil, err
		}
		if date != nil {
			d = *date
		}
		items, err := s.balancesTx(ctx, tx, account, customerID, d, true)
		if err != nil {
			return nil, err
		}
		return &CreditBalances{CustomerID: customerID, Date: d, Items: items}, nil
	})
}

// balancesTx computes a customer's balances on d; withLedger adds the
// transactions of each balance.
func (s *Service) balancesTx(ctx context.Context, tx Tx, account, customerID string, d Date, withLedger bool) ([]CreditBalance, error) {
	grants, err := customerGrants(ctx, tx, account, customerID)
	if err != nil {
		return nil, err
	}
	byUnit := map[string]*CreditBalance{}
	var units []string
	for _, g := range grants {
		u := string(g.Type) + "\x00" + g.unit()
		b := byUnit[u]
		if b == nil {
			b = &CreditBalance{ID: g.unit(), Name: g.unit(), Type: g.Type, Balance: g.CurrentBalance.Sub(g.CurrentBalance),
				Grants: []CreditGrant{}, Transactions: []CreditTransaction{}}
			if g.Type == CreditCash {
				b.Balance = g.Currency.Zero()
			} else if m, err := s.getUsageMetric(ctx, tx, account, g.MetricID); err == nil {
				b.Name = m.Name
			}
			byUnit[u] = b
			units = append(units, u)
		}
		b.Grants = append(b.Grants, g.CreditGrant)
		if g.usable(d) {
			b.Balance = b.Balance.Add(g.CurrentBalance)
		}
		if withLedger {
			ts, err := grantTransactions(ctx, tx, account, g.ID)
			if err != nil {
				return nil, err
			}
			b.Transactions = append(b.Transactions, ts...)
		}
	}
	slices.Sort(units)
	out := make([]CreditBalance, 0, len(units))
	for _, u := range units {
		b := byUnit[u]
		slices.SortFunc(b.Transactions, func(x, y CreditTransaction) int { return strings.Compare(y.ID, x.ID) })
		if len(b.Transactions) > maxBalanceTransactions {
			b.Transactions = b.Transactions[:maxBalanceTransactions]
		}
		out = append(out, *b)
	}
	return out, nil
}

// VoidCreditGrant voids what is left of an ACTIVE or DEPLETED grant: a VOID
// transaction of the remaining balance (none when nothing is left), status
// VOIDED, and the deferred revenue still held for it released to breakage
// income. A voided grant is never applied again. Returns not_found, and
// invalid_state when the grant is already EXPIRED or VOIDED, or came from a
// credit note (void the credit note instead).
func (s *Service) VoidCreditGrant(ctx context.Context, account, id string) (*CreditGrant, error) {
	now := s.clock()
	return mutate(ctx, s, account, func(tx Tx) (*CreditGrant, error) {
		g, err := loadGrant(ctx, tx, account, id)
		if err != nil {
			return nil, err
		}
		if g.Status == CreditGrantExpired || g.Status == CreditGrantVoided {
			return nil, Errorf(CodeInvalidState, "the credit grant is %s", g.Status)
		}
		if g.SourceCreditNoteID != "" {
			return nil, Errorf(CodeInvalidState, "the credit grant comes from credit note %s; void the credit note instead", g.SourceCreditNoteID)
		}
		if err := s.closeGrant(ctx, tx, g, CreditTxVoid, Date{}, "voided", true, now); err != nil {
			return nil, err
		}
		return &g.CreditGrant, nil
	})
}

// Credit drawdown, expiry and reversal (the grants are above). Every
// function here runs inside the transaction of the operation that causes
// it (an invoice's finalization, its void, a credit note's finalization, a
// billing run's expiry batch), so a unit of credit is consumed exactly once:
// two transactions that would both consume it are serialized by the store,
// and the second one reads the balance the first one left.

// The ledger accounts of credit.
const (
	LedgerDeferredRevenue    = "deferred_revenue"
	LedgerBreakageIncome     = "breakage_income"
	LedgerPromotionalExpense = "promotional_expense"
)

// JournalSourceCreditGrant is the source type of the journal entries of a
// grant's consumption, reversal, expiry and void; their source id is the
// grant's id.
const JournalSourceCreditGrant JournalSourceType = "CREDIT_GRANT"

// grantOrder orders grants for drawdown: earliest expiry first (no expiry
// last), then oldest effective date, then creation (id).
func grantOrder(a, b *grantRecord) int {
	switch {
	case a.ExpiryDate != nil && b.ExpiryDate == nil:
		return -1
	case a.ExpiryDate == nil && b.ExpiryDate != nil:
		return 1
	case a.ExpiryDate != nil && *a.ExpiryDate != *b.ExpiryDate:
		return strings.Compare(a.ExpiryDate.String(), b.ExpiryDate.String())
	case a.EffectiveDate != b.EffectiveDate:
		return strings.Compare(a.EffectiveDate.String(), b.EffectiveDate.String())
	}
	return strings.Compare(a.ID, b.ID)
}

// usableGrants returns the customer's grants of typ and unit (currency or
// metric) usable on d, in drawdown order.
func usableGrants(ctx context.Context, tx Tx, account, customerID string, typ CreditType, unit string, d Date) ([]*grantRecord, error) {
	all, err := customerGrants(ctx, tx, account, customerID)
	if err != nil {
		return nil, err
	}
	var out []*grantRecord
	for _, g := range all {
		if g.Type == typ && g.unit() == unit && g.usable(d) {
			out = append(out, g)
		}
	}
	sortGrants(out)
	return out, nil
}

// sortGrants puts grants in drawdown order.
func sortGrants(gs []*grantRecord) { slices.SortFunc(gs, grantOrder) }

// basisCurrency is the currency of a grant's journal basis.
func (g *grantRecord) basisCurrency() Currency {
	if g.Currency == "" {
		return CurrencyUSD
	}
	return g.Currency
}

// deferredPart is the deferred revenue released by consuming amount from
// g: the grant's basis in proportion, all that is left when amount takes
// the whole balance, so the parts add up to the basis exactly.
func (s *Service) deferredPart(g *grantRecord, amount Decimal) Decimal {
	cur := g.basisCurrency()
	if g.DeferredLeft.Sign() <= 0 {
		return cur.Zero()
	}
	if amount.Cmp(g.CurrentBalance) >= 0 {
		return g.DeferredLeft
	}
	q, err := amount.Mul(g.Basis).Quo(g.OriginalAmount)
	if err != nil {
		return cur.Zero()
	}
	d := cur.Round(q, s.rounding)
	if d.Cmp(g.DeferredLeft) > 0 {
		d = g.DeferredLeft
	}
	return d
}

// consume takes amount (positive) from g for invoice invID on date d: a
// CONSUMPTION transaction, the invoice's use index, the journal, and
// CREDIT_GRANT_CONSUMED.
func (s *Service) consume(ctx context.Context, tx Tx, g *grantRecord, amount Decimal, invID string, d Date, reason string, discount bool, now time.Time) error {
	deferred := s.deferredPart(g, amount)
	g.DeferredLeft = g.DeferredLeft.Sub(deferred)
	t, err := s.appendCreditTx(ctx, tx, g, creditEntry{
		typ: CreditTxConsumption, amount: amount.Neg(), date: d, invoiceID: invID, reason: reason, deferred: deferred, discount: discount,
	}, now)
	if err != nil {
		return err
	}
	a := g.ServiceAccountID
	if err := tx.Put(ctx, tableCreditInvoiceUses, key(a, invID, t.ID), []byte(g.ID)); err != nil {
		return err
	}
	if err := s.writeJournal(ctx, tx, a, JournalSourceCreditGrant, g.ID, g.basisCurrency(), now, consumptionLines(g, amount, deferred, true, discount)...); err != nil {
		return err
	}
	return s.emit(ctx, tx, a, NotificationCreditGrantConsumed, &g.CreditGrant)
}

// consumptionLines are the journal lines of consuming amount from g, of
// which deferred was deferred revenue; forward false gives the reversal.
// CASH credit on account pays receivables (the part not paid for is
// promotional expense); free CASH credit (discount) was a discount on the
// invoice's lines, booked as promotional expense against revenue; USAGE
// credit turns its deferred part into revenue (free units post nothing:
// the invoice simply billed less).
func consumptionLines(g *grantRecord, amount, deferred Decimal, forward, discount bool) []ledgerLine {
	switch {
	case g.Type == CreditUsage:
		return []ledgerLine{{LedgerDeferredRevenue, deferred, forward}, {LedgerRevenue, deferred, !forward}}
	case discount:
		return []ledgerLine{{LedgerPromotionalExpense, amount, forward}, {LedgerRevenue, amount, !forward}}
	}
	return []ledgerLine{
		{LedgerDeferredRevenue, deferred, forward},
		{LedgerPromotionalExpense, amount.Sub(deferred), forward},
		{LedgerAccountsReceivable, amount, !forward},
	}
}

// CreditApplication is CASH credit applied to an invoice as money on
// account, after tax (a paid grant, or one from a credit note): it
// reduces the invoice's amountDue, not its totals.
type CreditApplication struct {
	// CreditGrantID is the grant the money came from.
	CreditGrantID string `json:"creditGrantId"`
	// Name is the grant's name, as printed under the total ("Credit
	// applied: <name>").
	Name string `json:"name"`
	// Amount is what was applied, in the invoice's currency, positive.
	Amount Decimal `json:"amount"`
	// Date is the day it was applied on.
	Date Date `json:"date"`
}

// free reports whether g is free credit (no cost, not from a credit note):
// a discount before tax. Other CASH credit is money on account.
func (g *CreditGrant) free() bool { return g.CostOfCredit == nil && g.SourceCreditNoteID == "" }

// applyCash applies the customer's CASH credit in the invoice's currency,
// usable on d, to invoice r (credits.md of the docs: docs/credits.md):
// with lines, free grants first, as BURNDOWN lines before tax, one per tax
// rate they offset (rates in line order, never more than the net left at
// that rate); then, on every invoice, paid and credit note grants as money
// on account after tax, never more than the amount due (creditsApplied).
// Grants are taken in drawdown order. The totals and amounts of r are
// recomputed; r is not stored.
func (s *Service) applyCash(ctx context.Context, tx Tx, account string, r *invoiceRecord, d Date, lines bool, now time.Time) error {
	grants, err := usableGrants(ctx, tx, account, r.CustomerID, CreditCash, string(r.Currency), d)
	if err != nil || len(grants) == 0 {
		return err
	}
	if lines {
		if err := s.applyFreeCash(ctx, tx, account, r, grants, d, now); err != nil {
			return err
		}
	}
	for _, g := range grants {
		if g.free() || r.AmountDue.Sign() <= 0 {
			continue
		}
		use := g.CurrentBalance
		if use.Cmp(r.AmountDue) > 0 {
			use = r.AmountDue
		}
		if err := s.consume(ctx, tx, g, use, r.ID, d, "", false, now); err != nil {
			return err
		}
		r.CreditsApplied = r.CreditsApplied.Add(use)
		r.CreditApplications = append(r.CreditApplications, CreditApplication{CreditGrantID: g.ID, Name: g.Name, Amount: use, Date: d})
		r.refreshAmounts()
	}
	return nil
}

// applyFreeCash applies the free grants of grants to invoice r as BURNDOWN
// lines and recomputes its totals (applyCash).
func (s *Service) applyFreeCash(ctx context.Context, tx Tx, account string, r *invoiceRecord, grants []*grantRecord, d Date, now time.Time) error {
	stored, err := s.listInvoiceLinesTx(ctx, tx, account, r.ID)
	if err != nil {
		return err
	}
	rates, left, taxLeft := ratesLeft(r.Currency, stored)
	mode, err := s.docRounding(ctx, tx, account, r.ID)
	if err != nil {
		return err
	}
	changed := false
	for _, g := range grants {
		if !g.free() {
			continue
		}
		balance, used := g.CurrentBalance, r.Currency.Zero()
		for _, rate := range rates {
			k := rate.String()
			use := left[k]
			if balance.Cmp(use) < 0 {
				use = balance
			}
			if use.Sign() <= 0 {
				continue
			}
			l := creditLine(r, g, use, rate, mode)
			// Lines round their tax one by one: a credit that takes the
			// whole net of a rate may round to more tax than that rate's
			// lines hold. It then takes a cent less, until it does not.
			for l.TotalTax.Add(taxLeft[k]).Sign() < 0 && use.Sign() > 0 {
				use = use.Sub(r.Currency.MinorUnit())
				l = creditLine(r, g, use, rate, mode)
			}
			if use.Sign() <= 0 {
				continue
			}
			if err := putNewLine(ctx, s, tx, tableInvoiceLines, account, r.ID, l); err != nil {
				return err
			}
			left[k], taxLeft[k], balance, used = left[k].Sub(use), taxLeft[k].Add(l.TotalTax), balance.Sub(use), used.Add(use)
		}
		if used.Sign() > 0 {
			if err := s.consume(ctx, tx, g, used, r.ID, d, "", true, now); err != nil {
				return err
			}
			changed = true
		}
	}
	if !changed {
		return nil
	}
	return recompute[invoiceRecord, InvoiceLineItem, InvoiceLineItemGroup](ctx, s, tx, invoiceKind, account, r, now)
}

// ratesLeft returns the tax rates of lines in the order they first appear,
// and the net and the tax of the lines at each rate (by the rate's text).
func ratesLeft(cur Currency, lines []InvoiceLineItem) (rates []Decimal, net, tax map[string]Decimal) {
	net, tax = map[string]Decimal{}, map[string]Decimal{}
	for _, l := range lines {
		k := l.TaxRate.String()
		if _, seen := net[k]; !seen {
			rates, net[k], tax[k] = append(rates, l.TaxRate), cur.Zero(), cur.Zero()
		}
		net[k], tax[k] = net[k].Add(l.NetTotal), tax[k].Add(l.TotalTax)
	}
	return rates, net, tax
}

// creditLine is the BURNDOWN line of free credit g taking amount off the
// net of invoice r's lines at rate.
func creditLine(r *invoiceRecord, g *grantRecord, amount, rate Decimal, mode Rounding) *InvoiceLineItem {
	l := &InvoiceLineItem{LineItem: LineItem{
		Title: "Credit applied: " + g.Name, Quantity: DecimalFromInt(1), Rate: amount.Neg(), TaxRate: rate, RateDisplay: RateDisplayAbsolute,
		ExternalIDs: []KeyValue{}, RevenueClassification: RevenueClassificationBurndown,
	}, InvoiceID: r.ID, CreditGrantID: g.ID}
	computeLine(&l.LineItem, r.Currency, mode)
	return l
}

// releaseCredits gives back all the credit applied to editable invoice r
// (REVERSAL transactions with reason), removes its credit lines and its
// money on account, and recomputes its totals: before a draft with credit
// applied changes, or is deleted.
func (s *Service) releaseCredits(ctx context.Context, tx Tx, account string, r *invoiceRecord, reason string, now time.Time) error {
	if err := s.reverseInvoiceCredits(ctx, tx, account, r.ID, reason, now); err != nil {
		return err
	}
	lines, err := s.listInvoiceLinesTx(ctx, tx, account, r.ID)
	if err != nil {
		return err
	}
	for _, l := range lines {
		if isCreditLine(&l) {
			if err := tx.Delete(ctx, tableInvoiceLines, key(account, r.ID, l.ID)); err != nil {
				return err
			}
		}
	}
	r.CreditsApplied, r.CreditApplications = r.Currency.Zero(), []CreditApplication{}
	return recompute[invoiceRecord, InvoiceLineItem, InvoiceLineItemGroup](ctx, s, tx, invoiceKind, account, r, now)
}

// isCreditLine reports whether l is a line applyFreeCash made.
func isCreditLine(l *InvoiceLineItem) bool {
	return l.RevenueClassification == RevenueClassificationBurndown && l.CreditGrantID != ""
}

// reapplyCredits, after the lines of a draft that had credit applied
// (apply-credits) changed, gives that credit back and applies the
// customer's credit again to what the draft now holds, on today's date,
// and stores the draft.
func (s *Service) reapplyCredits(ctx context.Context, tx Tx, account string, r *invoiceRecord, now time.Time) error {
	if !r.CreditsRequested || !r.Status.editable() {
		return nil
	}
	if err := s.releaseCredits(ctx, tx, account, r, "invoice changed", now); err != nil {
		return err
	}
	today, err := s.dateOf(ctx, tx, account, r.CustomerID, now)
	if err != nil {
		return err
	}
	if err := s.applyCash(ctx, tx, account, r, today, true, now); err != nil {
		return err
	}
	return saveDoc(ctx, tx, invoiceKind, account, r)
}

// invoiceJournal returns the journal lines of finalizing invoice r:
// receivables are debited its gross total (credit applied as money on
// account credits them back, in the grant's journal), PREPAYMENT lines are
// deferred revenue, the rest revenue (net of free credit's BURNDOWN lines). It also returns the PREPAYMENT lines, whose grants the
// finalization funds.
func (s *Service) invoiceJournal(ctx context.Context, tx Tx, account string, r *invoiceRecord) ([]ledgerLine, []InvoiceLineItem, error) {
	prepaid := r.Currency.Zero()
	lines, err := s.listInvoiceLinesTx(ctx, tx, account, r.ID)
	if err != nil {
		return nil, nil, err
	}
	var prepayments []InvoiceLineItem
	for _, l := range lines {
		if l.RevenueClassification == RevenueClassificationPrepayment {
			prepaid = prepaid.Add(l.NetTotal)
			prepayments = append(prepayments, l)
		}
	}
	return []ledgerLine{
		{LedgerAccountsReceivable, r.GrossTotal, true},
		{LedgerRevenue, r.NetTotal.Sub(prepaid), false},
		{LedgerDeferredRevenue, prepaid, false},
		{LedgerTaxPayable, r.TotalTax, false},
	}, prepayments, nil
}

// eachPrepaidGrant calls fn with every grant invoice invID sells (a
// PREPAYMENT line naming the grant created with that invoice) and its line.
func eachPrepaidGrant(ctx context.Context, tx Tx, account, invID string, lines []InvoiceLineItem, fn func(g *grantRecord, l *InvoiceLineItem) error) error {
	for i := range lines {
		l := &lines[i]
		if l.RevenueClassification != RevenueClassificationPrepayment || l.CreditGrantID == "" {
			continue
		}
		g, err := loadGrant(ctx, tx, account, l.CreditGrantID)
		switch {
		case CodeOf(err) == CodeNotFound || (err == nil && g.InvoiceID != invID):
			continue
		case err != nil:
			return err
		}
		if err := fn(g, l); err != nil {
			return err
		}
	}
	return nil
}

// fundPrepaidGrants, in the finalization of the invoice that sells grants
// (createInvoice), adds each PREPAYMENT line's net to its grant's basis:
// the deferred revenue the invoice's journal just credited, released as
// the credit is consumed. A grant already closed releases it to breakage
// income at once.
func (s *Service) fundPrepaidGrants(ctx context.Context, tx Tx, account, invID string, lines []InvoiceLineItem, now time.Time) error {
	return eachPrepaidGrant(ctx, tx, account, invID, lines, func(g *grantRecord, l *InvoiceLineItem) error {
		net := l.NetTotal
		g.Basis = g.Basis.Add(net)
		if g.Status == CreditGrantExpired || g.Status == CreditGrantVoided {
			err := s.writeJournal(ctx, tx, account, JournalSourceCreditGrant, g.ID, g.basisCurrency(), now,
				ledgerLine{LedgerDeferredRevenue, net, true}, ledgerLine{LedgerBreakageIncome, net, false})
			if err != nil {
				return err
			}
		} else {
			g.DeferredLeft = g.DeferredLeft.Add(net)
		}
		return putRecord(ctx, tx, tableCreditGrants, key(account, g.ID), g)
	})
}

// revokePrepaidGrants, when the invoice that sells grants is voided or
// deleted, voids those grants: the credit was not bought after all. Refused
// (invalid_state) when any of it was used, expired or voided.
func (s *Service) revokePrepaidGrants(ctx context.Context, tx Tx, account, invID string, now time.Time) error {
	lines, err := s.listInvoiceLinesTx(ctx, tx, account, invID)
	if err != nil {
		return err
	}
	return eachPrepaidGrant(ctx, tx, account, invID, lines, func(g *grantRecord, _ *InvoiceLineItem) error {
		if g.Status != CreditGrantActive || g.CurrentBalance.Cmp(g.OriginalAmount) != 0 {
			return Errorf(CodeInvalidState, "the invoice sells credit grant %s, which was already used, expired or voided (%s %s left of %s)",
				g.ID, g.Status, g.CurrentBalance, g.OriginalAmount)
		}
		// The invoice's reversed journal takes the deferred revenue back.
		return s.closeGrant(ctx, tx, g, CreditTxVoid, Date{}, "its invoice was voided", false, now)
	})
}

// creditBalancesText is the human-readable credit a customer has left on
// d ("40.00 USD, 500 API calls"); empty when the customer has no grants.
func (s *Service) creditBalancesText(ctx context.Context, tx Tx, account, customerID string, d Date) (string, error) {
	bs, err := s.balancesTx(ctx, tx, account, customerID, d, false)
	if err != nil || len(bs) == 0 {
		return "", err
	}
	parts := make([]string, len(bs))
	for i, b := range bs {
		parts[i] = b.Balance.String() + " " + b.Name
	}
	return "Remaining credit: " + strings.Join(parts, ", "), nil
}

// closeGrant ends what is left of g with an EXPIRY or VOID transaction on
// d (of zero when nothing is left) and drops it from the expiry index;
// with release, the deferred revenue still held for it goes to breakage
// income.
func (s *Service) closeGrant(ctx context.Context, tx Tx, g *grantRecord, typ CreditTransactionType, d Date, reason string, release bool, now time.Time) error {
	a := g.ServiceAccountID
	if d.IsZero() {
		today, err := s.dateOf(ctx, tx, a, g.CustomerID, now)
		if err != nil {
			return err
		}
		d = today
	}
	if g.ExpiryDate != nil {
		if err := deleteIfPresent(ctx, tx, tableCreditExpiries, key(g.ExpiryDate.String(), a, g.ID)); err != nil {
			return err
		}
	}
	deferred := g.DeferredLeft
	g.DeferredLeft = g.basisCurrency().Zero()
	if release {
		err := s.writeJournal(ctx, tx, a, JournalSourceCreditGrant, g.ID, g.basisCurrency(), now,
			ledgerLine{LedgerDeferredRevenue, deferred, true}, ledgerLine{LedgerBreakageIncome, deferred, false})
		if err != nil {
			return err
		}
	}
	amount := g.CurrentBalance.Neg()
	if g.CurrentBalance.IsZero() {
		amount = g.CurrentBalance // a void of a depleted grant: 0, not -0
	}
	_, err := s.appendCreditTx(ctx, tx, g, creditEntry{typ: typ, amount: amount, date: d, reason: reason, deferred: deferred}, now)
	return err
}

// reverseInvoiceCredits gives back the credit invoice invID consumed (its
// void): a REVERSAL per consumption. Credit of a grant that has expired
// (or is past its last day) or been voided since is given back and closed
// again at once (EXPIRY or VOID of the same amount), so it is not usable,
// and the books show breakage.
func (s *Service) reverseInvoiceCredits(ctx context.Context, tx Tx, account, invID, reason string, now time.Time) error {
	pre := prefix(account, invID)
	type use struct{ txID, grantID string }
	var uses []use
	err := tx.Scan(ctx, tableCreditInvoiceUses, Range{Prefix: pre}, func(k, v []byte) error {
		uses = append(uses, use{string(k[len(pre):]), string(v)})
		return nil
	})
	if err != nil {
		return err
	}
	for _, u := range uses {
		if err := s.reverseUse(ctx, tx, account, invID, u.grantID, u.txID, reason, now); err != nil {
			return err
		}
		if err := tx.Delete(ctx, tableCreditInvoiceUses, key(account, invID, u.txID)); err != nil {
			return err
		}
	}
	return nil
}

func (s *Service) reverseUse(ctx context.Context, tx Tx, account, invID, grantID, txID, reason string, now time.Time) error {
	g, err := loadGrant(ctx, tx, account, grantID)
	if err != nil {
		return err
	}
	t, err := getRecord[txRecord](ctx, tx, tableCreditTransactions, key(account, grantID, txID))
	if err != nil {
		return err
	}
	d, err := s.dateOf(ctx, tx, account, g.CustomerID, now)
	if err != nil {
		return err
	}
	amount := t.Amount.Neg()
	g.DeferredLeft = g.DeferredLeft.Add(t.Deferred)
	if _, err := s.appendCreditTx(ctx, tx, g, creditEntry{
		typ: CreditTxReversal, amount: amount, date: d, invoiceID: invID, reason: reason, deferred: t.Deferred,
	}, now); err != nil {
		return err
	}
	if err := s.writeJournal(ctx, tx, account, JournalSourceCreditGrant, g.ID, g.basisCurrency(), now, consumptionLines(g, amount, t.Deferred, false, t.Discount)...); err != nil {
		return err
	}
	switch {
	case g.Status == CreditGrantExpired, g.ExpiryDate != nil && g.ExpiryDate.Before(d):
		return s.closeGrant(ctx, tx, g, CreditTxExpiry, d, "expired before it was given back ("+reason+")", true, now)
	case g.Status == CreditGrantVoided:
		return s.closeGrant(ctx, tx, g, CreditTxVoid, d, "voided before it was given back ("+reason+")", g.SourceCreditNoteID == "", now)
	}
	return nil
}

// expiryBatch is how many grants one expiry transaction handles.
const expiryBatch = 100

// expireCredits expires the grants of account (every account when empty)
// whose last day is before asOf's date: an EXPIRY transaction of what is
// left, the deferred revenue to breakage income, CREDIT_GRANT_EXPIRED. A
// batch of grants per transaction. It returns how many grants expired.
func (s *Service) expireCredits(ctx context.Context, account string, asOf time.Time) (int, error) {
	// No zone is more than a day ahead of UTC: scan every expiry date up
	// to UTC's today, and let expireOne decide in the customer's calendar.
	end := []byte(DateOf(asOf).AddDays(1).String())
	var after []byte
	n := 0
	keep := func(k []byte) bool { return account == "" || expiryAccount(k) == account }
	for {
		keys, err := s.nextKeys(ctx, tableCreditExpiries, Range{End: end}, after, expiryBatch, keep)
		if err != nil || len(keys) == 0 {
			return n, err
		}
		after = keys[len(keys)-1]
		var done int
		err = s.store.Update(ctx, func(tx Tx) error {
			done = 0
			for _, k := range keys {
				ok, err := s.expireOne(ctx, tx, k, asOf)
				if err != nil {
					return err
				}
				if ok {
					done++
				}
			}
			return nil
		})
		if err != nil {
			return n, internal(err)
		}
		n += done
	}
}

// expiryAccount returns the account part of a credit_expiries key.
func expiryAccount(k []byte) string {
	parts := strings.Split(string(k), string(rune(keySep)))
	if len(parts) != 3 {
		return ""
	}
	return parts[1]
}

// expireOne expires the grant of expiry key k if it is still ACTIVE and its
// last day has ended at asOf in its customer's calendar, and reports
// whether it expired one.
func (s *Service) expireOne(ctx context.Context, tx Tx, k []byte, asOf time.Time) (bool, error) {
	parts := strings.Split(string(k), string(rune(keySep)))
	if len(parts) != 3 {
		return false, fmt.Errorf("malformed credit expiry key %q", k)
	}
	g, err := loadGrant(ctx, tx, parts[1], parts[2])
	if CodeOf(err) == CodeNotFound {
		return false, tx.Delete(ctx, tableCreditExpiries, k)
	}
	if err != nil {
		return false, err
	}
	if g.Status != CreditGrantActive {
		// Nothing left to expire: a DEPLETED grant stays DEPLETED (a
		// voided invoice that gives credit back expires it then).
		return false, tx.Delete(ctx, tableCreditExpiries, k)
	}
	cal, err := s.calendarFor(ctx, tx, g.ServiceAccountID, g.CustomerID)
	if err != nil || cal.Start(g.ExpiryDate.AddDays(1)).After(asOf) {
		return false, err
	}
	if err := s.closeGrant(ctx, tx, g, CreditTxExpiry, g.ExpiryDate.AddDays(1), "expired", true, s.clock()); err != nil {
		return false, err
	}
	return true, s.emit(ctx, tx, g.ServiceAccountID, NotificationCreditGrantExpired, &g.CreditGrant)
}

// grantFromCreditNote creates, inside cn's finalization, the CASH grant of
// its gross total (settings.generateCashCreditGrant ENABLED): effective on
// its issue date, no expiry, its whole amount deferred revenue (the credit
// note's journal credits it), linked both ways, then CREDIT_GRANT_CREATED.
func (s *Service) grantFromCreditNote(ctx context.Context, tx Tx, account string, cn *CreditNote, now time.Time) error {
	g := &grantRecord{CreditGrant: CreditGrant{
		ID: s.newID(), ServiceAccountID: account, CustomerID: cn.CustomerID, Name: "Credit note " + cn.CreditNoteNumber,
		Type: CreditCash, Currency: cn.Currency, OriginalAmount: cn.GrossTotal, EffectiveDate: cn.IssueDate,
		Status: CreditGrantActive, SourceCreditNoteID: cn.ID, CreatedAt: now, UpdatedAt: now,
	}, Basis: cn.GrossTotal}
	if err := s.insertGrant(ctx, tx, g, "credit note "+cn.CreditNoteNumber, now); err != nil {
		return err
	}
	cn.CreditGrantID = g.ID
	return s.emit(ctx, tx, account, NotificationCreditGrantCreated, &g.CreditGrant)
}

// voidCreditNoteGrant voids the grant a credit note created, inside the
// credit note's void; refused (invalid_state) once any of it was used. Its
// deferred revenue goes back with the credit note's reversed journal.
func (s *Service) voidCreditNoteGrant(ctx context.Context, tx Tx, account string, cn *CreditNote, now time.Time) error {
	g, err := loadGrant(ctx, tx, account, cn.CreditGrantID)
	if err != nil {
		return err
	}
	if g.CurrentBalance.Cmp(g.OriginalAmount) != 0 || g.Status != CreditGrantActive {
		return Errorf(CodeInvalidState, "the credit grant of this credit note was already used (%s of %s left) or closed", g.CurrentBalance, g.OriginalAmount)
	}
	return s.closeGrant(ctx, tx, g, CreditTxVoid, Date{}, "credit note voided", false, now)
}

// ApplyCredits applies the customer's CASH credit in the invoice's
// currency to an invoice, without changing its status, then emits
// INVOICE_UPDATED. On a DRAFT or IN_PROGRESS invoice, free credit becomes
// BURNDOWN lines before tax and paid credit money on account
// (creditsApplied), with the grants usable today; the draft remembers it,
// so when its lines change the credit is given back and applied again, and
// deleting it gives it back. On a FINAL or SENT invoice with an amount due,
// paid and credit note credit usable today is applied as money on account
// (an issued invoice's lines and tax never change, so free credit is not
// applied to it). Returns not_found, and invalid_state for a VOIDED
// invoice or an issued one with nothing due.
func (s *Service) ApplyCredits(ctx context.Context, account, invoiceID string) (*Invoice, error) {
	return s.invoiceOp(ctx, account, invoiceID, NotificationInvoiceUpdated, func(tx Tx, r *invoiceRecord, now time.Time) error {
		switch {
		case r.Status == StatusVoided:
			return stateError("invoice", "apply credits to", r.Status)
		case r.Status.finalized() && r.AmountDue.Sign() <= 0:
			return Errorf(CodeInvalidState, "the invoice has nothing due; there is nothing to apply credit to")
		case r.Status.editable():
			r.CreditsRequested = true
			return s.reapplyCredits(ctx, tx, account, r, now)
		}
		today, err := s.dateOf(ctx, tx, account, r.CustomerID, now)
		if err != nil {
			return err
		}
		return s.applyCash(ctx, tx, account, r, today, false, now)
	})
}

// USAGE credit: units of a usage metric that reduce the billed usage of
// the prices on that metric before the price structure is applied (tiers
// see the reduced quantity). Like CASH credit it is consumed once, when an
// engine invoice is finalized: the finalization recomputes the invoice's
// lines with the same computation as the billing run (invoiceFor), with a
// pool of the customer's usable units.

// unitPool is the USAGE credit a computation may take from, by metric, in
// drawdown order, and what it took.
type unitPool struct {
	grants map[string][]*grantRecord // metric id → grants, drawdown order
	left   map[string]Decimal        // grant id → units still available
	taken  []unitTake
}

// unitTake is units taken from one grant for one price.
type unitTake struct {
	grant *grantRecord
	units Decimal
}

// take takes up to quantity units of metric from the pool and returns how
// many it took.
func (p *unitPool) take(metric string, quantity Decimal) Decimal {
	total := DecimalFromInt(0)
	for _, g := range p.grants[metric] {
		if quantity.Sign() <= 0 {
			break
		}
		use := p.left[g.ID]
		if use.Cmp(quantity) > 0 {
			use = quantity
		}
		if use.Sign() <= 0 {
			continue
		}
		p.left[g.ID] = p.left[g.ID].Sub(use)
		quantity, total = quantity.Sub(use), total.Add(use)
		p.taken = append(p.taken, unitTake{grant: g, units: use})
	}
	return total
}

// usagePool returns the customer's USAGE credit usable on d, nil when there
// is none.
func usagePool(ctx context.Context, tx Tx, account, customerID string, d Date) (*unitPool, error) {
	all, err := customerGrants(ctx, tx, account, customerID)
	if err != nil {
		return nil, err
	}
	p := &unitPool{grants: map[string][]*grantRecord{}, left: map[string]Decimal{}}
	for _, g := range all {
		if g.Type == CreditUsage && g.usable(d) {
			p.grants[g.MetricID] = append(p.grants[g.MetricID], g)
			p.left[g.ID] = g.CurrentBalance
		}
	}
	if len(p.left) == 0 {
		return nil, nil
	}
	for _, gs := range p.grants {
		sortGrants(gs)
	}
	return p, nil
}

// drawUsage applies the customer's USAGE credit to engine invoice r before
// it is finalized on day d: it recomputes the invoice's lines from the
// charges the engine billed on it, with the units taken from the credit,
// stores them, and consumes the units. Nothing happens when the customer
// has no usable USAGE credit or the invoice's charges are no longer known.
func (s *Service) drawUsage(ctx context.Context, tx Tx, account string, r *invoiceRecord, d Date, now time.Time) error {
	if r.BillingScheduleID == "" {
		return nil
	}
	pool, err := usagePool(ctx, tx, account, r.CustomerID, d)
	if err != nil || pool == nil {
		return err
	}
	w, err := s.watchOf(ctx, tx, account, r.BillingScheduleID, r.ID)
	if err != nil || w == nil {
		return err
	}
	sc, err := s.getSchedule(ctx, tx, account, r.BillingScheduleID)
	if err != nil {
		return err
	}
	prices, err := s.schedulePrices(ctx, tx, sc)
	if err != nil {
		return nil // a price is gone: the invoice keeps the lines it has
	}
	charges, ok := w.charges(prices)
	if !ok {
		return nil
	}
	lc, err := s.newLineContext(ctx, tx, sc, prices)
	if err != nil {
		return err
	}
	lc.units = pool
	if lc.rounding, err = s.docRounding(ctx, tx, account, r.ID); err != nil {
		return err
	}
	_, lines, _, err := s.invoiceFor(ctx, tx, lc, charges)
	if err != nil || len(pool.taken) == 0 {
		return err
	}
	if err := deleteUnder(ctx, tx, tableInvoiceLines, prefix(account, r.ID)); err != nil {
		return err
	}
	if err := s.storeEngineLines(ctx, tx, account, &r.Invoice, lines); err != nil {
		return err
	}
	if err := recompute[invoiceRecord, InvoiceLineItem, InvoiceLineItemGroup](ctx, s, tx, invoiceKind, account, r, now); err != nil {
		return err
	}
	for _, t := range pool.taken {
		if err := s.consume(ctx, tx, t.grant, t.units, r.ID, d, "", false, now); err != nil {
			return err
		}
	}
	return nil
}

// watchOf returns the engine's watch of invoice invID of a schedule, nil
// when there is none.
func (s *Service) watchOf(ctx context.Context, tx Tx, account, scheduleID, invID string) (*billingWatch, error) {
	var found *billingWatch
	err := eachRecord(ctx, tx, tableBillingWatch, Range{Prefix: prefix(account, scheduleID)}, func(w *billingWatch) error {
		if w.InvoiceID == invID {
			found = w
			return ErrStopScan
		}
		return nil
	})
	return found, err
}
