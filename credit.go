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
	SourceCreditNoteID string `json:"sourceCreditNoteId,omitempty"`
	// AutoTopUp is the grant's auto top-up rule (CASH only); nil: none.
	AutoTopUp *AutoTopUp `json:"autoTopUp,omitempty"`
	// TopUpOfGrantID is the grant whose auto top-up rule bought this grant;
	// empty for other grants.
	TopUpOfGrantID string    `json:"topUpOfGrantId,omitempty"`
	CreatedAt      time.Time `json:"createdAt"`
	UpdatedAt      time.Time `json:"updatedAt"`
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
	// AutoTopUp buys more credit whenever the customer's balance in the
	// currency falls below a threshold (CURRENCY credit only); nil: none.
	AutoTopUp *AutoTopUpParams `json:"autoTopUp"`
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
	checkAutoTopUp(v, p, typ)
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
			AutoTopUp: newAutoTopUp(p.AutoTopUp), CreatedAt: now, UpdatedAt: now,
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
	line := InvoiceLineItem{LineItem: LineItem{
		Title: strings.TrimSpace("Credit purchase: " + g.Name), Quantity: DecimalFromInt(1), Rate: *g.CostOfCredit,
		TaxRate: DecimalFromInt(0), RateDisplay: RateDisplayAbsolute, ExternalIDs: []KeyValue{},
		RevenueClassification: RevenueClassificationPrepayment,
	}, CreditGrantID: g.ID}
	inv, err := s.createInvoiceTx(ctx, tx, account, InvoiceParams{Currency: g.Currency, CustomerID: g.CustomerID},
		[]InvoiceLineItem{line}, time.Time{})
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
	if err := s.putGrantTx(ctx, tx, g, t); err != nil {
		return nil, err
	}
	return t, s.reviewAutoTopUps(ctx, tx, g, now)
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
