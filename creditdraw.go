package billing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Credit drawdown, expiry and reversal (credit.go holds the grants). Every
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
func (s *Service) consume(ctx context.Context, tx Tx, g *grantRecord, amount Decimal, invID string, d Date, reason string, now time.Time) error {
	deferred := s.deferredPart(g, amount)
	g.DeferredLeft = g.DeferredLeft.Sub(deferred)
	t, err := s.appendCreditTx(ctx, tx, g, creditEntry{
		typ: CreditTxConsumption, amount: amount.Neg(), date: d, invoiceID: invID, reason: reason, deferred: deferred,
	}, now)
	if err != nil {
		return err
	}
	a := g.ServiceAccountID
	if err := tx.Put(ctx, tableCreditInvoiceUses, key(a, invID, t.ID), []byte(g.ID)); err != nil {
		return err
	}
	if err := s.writeJournal(ctx, tx, a, JournalSourceCreditGrant, g.ID, g.basisCurrency(), now, consumptionLines(g, amount, deferred, true)...); err != nil {
		return err
	}
	return s.emit(ctx, tx, a, NotificationCreditGrantConsumed, &g.CreditGrant)
}

// consumptionLines are the journal lines of consuming amount from g, of
// which deferred was deferred revenue; forward false gives the reversal.
// CASH credit pays receivables (the part not paid for is promotional
// expense); USAGE credit turns its deferred part into revenue (free units
// post nothing: the invoice simply billed less).
func consumptionLines(g *grantRecord, amount, deferred Decimal, forward bool) []ledgerLine {
	if g.Type == CreditUsage {
		return []ledgerLine{{LedgerDeferredRevenue, deferred, forward}, {LedgerRevenue, deferred, !forward}}
	}
	return []ledgerLine{
		{LedgerDeferredRevenue, deferred, forward},
		{LedgerPromotionalExpense, amount.Sub(deferred), forward},
		{LedgerAccountsReceivable, amount, !forward},
	}
}

// drawCash applies the customer's CASH credit in the invoice's currency to
// invoice r, being finalized with issue date set: one BURNDOWN line per
// grant used (quantity 1, negative rate, tax rate 0), earliest expiry first,
// until the gross total is zero. It returns the amount applied (the
// totals are recomputed when it is not zero).
func (s *Service) drawCash(ctx context.Context, tx Tx, account string, r *invoiceRecord, now time.Time) (Decimal, error) {
	applied := r.Currency.Zero()
	left := r.GrossTotal
	if left.Sign() <= 0 {
		return applied, nil
	}
	grants, err := usableGrants(ctx, tx, account, r.CustomerID, CreditCash, string(r.Currency), r.IssueDate)
	if err != nil {
		return applied, err
	}
	// The invoice keeps the rounding mode it was created with.
	mode, err := s.docRounding(ctx, tx, account, r.ID)
	if err != nil {
		return applied, err
	}
	for _, g := range grants {
		if left.Sign() <= 0 {
			break
		}
		use := g.CurrentBalance
		if use.Cmp(left) > 0 {
			use = left
		}
		one, rate, zero := DecimalFromInt(1), use.Neg(), DecimalFromInt(0)
		l := &InvoiceLineItem{LineItem: LineItem{
			Title: "Credit applied: " + g.Name, Quantity: one, Rate: rate, TaxRate: zero, RateDisplay: RateDisplayAbsolute,
			ExternalIDs: []KeyValue{}, RevenueClassification: RevenueClassificationBurndown,
		}, InvoiceID: r.ID, CreditGrantID: g.ID}
		computeLine(&l.LineItem, r.Currency, mode)
		if err := putNewLine(ctx, s, tx, tableInvoiceLines, account, r.ID, l); err != nil {
			return applied, err
		}
		if err := s.consume(ctx, tx, g, use, r.ID, r.IssueDate, "", now); err != nil {
			return applied, err
		}
		applied, left = applied.Add(use), left.Sub(use)
	}
	if applied.IsZero() {
		return applied, nil
	}
	return applied, recompute[invoiceRecord, InvoiceLineItem, InvoiceLineItemGroup](ctx, s, tx, invoiceKind, account, r, now)
}

// invoiceJournal returns the journal lines of finalizing invoice r, of
// whose gross total applied was paid with CASH credit (its BURNDOWN lines):
// receivables are debited the charges before credit (the consumption
// credits them back), PREPAYMENT lines are deferred revenue, the rest
// revenue. It also returns the PREPAYMENT lines, whose grants the
// finalization funds.
func (s *Service) invoiceJournal(ctx context.Context, tx Tx, account string, r *invoiceRecord, applied Decimal) ([]ledgerLine, []InvoiceLineItem, error) {
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
		{LedgerAccountsReceivable, r.GrossTotal.Add(applied), true},
		{LedgerRevenue, r.NetTotal.Add(applied).Sub(prepaid), false},
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
		return s.closeGrant(ctx, tx, g, CreditTxVoid, DateOf(now), "its invoice was voided", false, now)
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
	if g.ExpiryDate != nil {
		if err := tx.Delete(ctx, tableCreditExpiries, key(g.ExpiryDate.String(), a, g.ID)); err != nil && !errors.Is(err, ErrNotFound) {
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
func (s *Service) reverseInvoiceCredits(ctx context.Context, tx Tx, account, invID string, now time.Time) error {
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
		if err := s.reverseUse(ctx, tx, account, invID, u.grantID, u.txID, now); err != nil {
			return err
		}
		if err := tx.Delete(ctx, tableCreditInvoiceUses, key(account, invID, u.txID)); err != nil {
			return err
		}
	}
	return nil
}

func (s *Service) reverseUse(ctx context.Context, tx Tx, account, invID, grantID, txID string, now time.Time) error {
	g, err := loadGrant(ctx, tx, account, grantID)
	if err != nil {
		return err
	}
	t, err := getRecord[txRecord](ctx, tx, tableCreditTransactions, key(account, grantID, txID))
	if err != nil {
		return err
	}
	amount, d := t.Amount.Neg(), DateOf(now)
	g.DeferredLeft = g.DeferredLeft.Add(t.Deferred)
	if _, err := s.appendCreditTx(ctx, tx, g, creditEntry{
		typ: CreditTxReversal, amount: amount, date: d, invoiceID: invID, reason: "invoice voided", deferred: t.Deferred,
	}, now); err != nil {
		return err
	}
	if err := s.writeJournal(ctx, tx, account, JournalSourceCreditGrant, g.ID, g.basisCurrency(), now, consumptionLines(g, amount, t.Deferred, false)...); err != nil {
		return err
	}
	switch {
	case g.Status == CreditGrantExpired, g.ExpiryDate != nil && g.ExpiryDate.Before(d):
		return s.closeGrant(ctx, tx, g, CreditTxExpiry, d, "expired before the invoice was voided", true, now)
	case g.Status == CreditGrantVoided:
		return s.closeGrant(ctx, tx, g, CreditTxVoid, d, "voided before the invoice was voided", g.SourceCreditNoteID == "", now)
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
	end := []byte(DateOf(asOf).String())
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
				ok, err := s.expireOne(ctx, tx, k)
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

// expireOne expires the grant of expiry key k if it is still ACTIVE, and
// reports whether it expired one.
func (s *Service) expireOne(ctx context.Context, tx Tx, k []byte) (bool, error) {
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
	return s.closeGrant(ctx, tx, g, CreditTxVoid, DateOf(now), "credit note voided", false, now)
}

// ApplyCredits finalizes a DRAFT or IN_PROGRESS invoice with the customer's
// credit applied (as the billing engine's invoices are): CASH credit in the
// invoice's currency becomes BURNDOWN lines, all in the finalizing
// transaction, then INVOICE_UPDATED. Returns not_found, and invalid_state
// for any other status (credit is applied once, when an invoice is
// finalized).
func (s *Service) ApplyCredits(ctx context.Context, account, invoiceID string) (*Invoice, error) {
	return s.invoiceOp(ctx, account, invoiceID, NotificationInvoiceUpdated, func(tx Tx, r *invoiceRecord, now time.Time) error {
		if !r.Status.editable() {
			return Errorf(CodeInvalidState, "credit is applied when an invoice is finalized; this invoice is %s", r.Status)
		}
		r.applyCredits = true
		return s.finalizeInvoice(ctx, tx, account, r, now)
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
	c, err := s.getCustomer(ctx, tx, account, r.CustomerID)
	if err != nil {
		return err
	}
	lc, err := s.newLineContext(ctx, tx, sc, c, prices)
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
		if err := s.consume(ctx, tx, t.grant, t.units, r.ID, d, "", now); err != nil {
			return err
		}
	}
	return nil
}

// watchOf returns the engine's watch of invoice invID of a schedule, nil
// when there is none.
func (s *Service) watchOf(ctx context.Context, tx Tx, account, scheduleID, invID string) (*billingWatch, error) {
	var found *billingWatch
	err := tx.Scan(ctx, tableBillingWatch, Range{Prefix: prefix(account, scheduleID)}, func(_, v []byte) error {
		var w billingWatch
		if err := json.Unmarshal(v, &w); err != nil {
			return err
		}
		if w.InvoiceID == invID {
			found = &w
			return ErrStopScan
		}
		return nil
	})
	return found, err
}
