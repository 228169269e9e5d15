package billing

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

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
// usable on d, to invoice r (docs/concepts.md, "Credits"):
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
		if err := s.applyCash(ctx, tx, account, r, today, false, now); err != nil {
			return err
		}
		return s.followCollection(ctx, tx, r, now)
	})
}
