package billing

import (
	"context"
	"time"
)

// Auto top-up of CASH credit (docs/money.md, "Auto top-up"): a CASH grant
// may carry a rule that buys more credit when the customer's balance in its
// currency falls below a threshold. The rule is evaluated in the
// transaction of every change of a CASH balance of the customer (a
// consumption, an expiry, a void, a reversal, a new grant), so a top-up is
// decided in the same transaction as the fall that causes it: two
// instances consuming the same credit are serialized by the store, and the
// second sees the rule already spent.

// AutoTopUp is a CASH grant's automatic top-up rule.
type AutoTopUp struct {
	// ThresholdAmount is the balance, in the grant's currency, below which
	// credit is bought: the customer's CASH balance in that currency (every
	// usable grant, not only this one).
	ThresholdAmount Decimal `json:"thresholdAmount"`
	// TopUpAmount is the credit bought each time, in the grant's currency:
	// a new paid grant of that amount, sold by a purchase invoice of the
	// same amount.
	TopUpAmount Decimal `json:"topUpAmount"`
	// Armed says whether the next fall below the threshold buys credit.
	// A top-up disarms the rule; the balance reaching the threshold again
	// (the top-up itself, or any other credit) arms it.
	Armed bool `json:"armed"`
	// LastTopUpGrantID is the grant the latest top-up created; empty
	// before the first.
	LastTopUpGrantID string `json:"lastTopUpGrantId,omitempty"`
	// LastTopUpAt is when the latest top-up happened; nil before the first.
	LastTopUpAt *time.Time `json:"lastTopUpAt,omitempty"`
}

// AutoTopUpParams are the auto top-up rule of a new CASH grant.
type AutoTopUpParams struct {
	// ThresholdAmount is required: positive, in the grant's currency.
	ThresholdAmount *Decimal `json:"thresholdAmount"`
	// TopUpAmount is required: positive, in the grant's currency.
	TopUpAmount *Decimal `json:"topUpAmount"`
}

// checkAutoTopUp validates the auto top-up rule of new grant p of type typ.
func checkAutoTopUp(v *validator, p *CreditGrantParams, typ CreditType) {
	a := p.AutoTopUp
	if a == nil {
		return
	}
	if typ == CreditUsage {
		v.add("autoTopUp", "autoTopUp is only for CURRENCY credit")
		return
	}
	checkCreditAmount(v, "autoTopUp.thresholdAmount", a.ThresholdAmount, CreditCash, p.Currency)
	checkCreditAmount(v, "autoTopUp.topUpAmount", a.TopUpAmount, CreditCash, p.Currency)
}

// newAutoTopUp is the stored rule of p, armed; nil without one.
func newAutoTopUp(p *AutoTopUpParams) *AutoTopUp {
	if p == nil {
		return nil
	}
	return &AutoTopUp{ThresholdAmount: *p.ThresholdAmount, TopUpAmount: *p.TopUpAmount, Armed: true}
}

// topUpGuard marks the context of a top-up's own writes, whose balance
// changes are not evaluated again.
type topUpGuard struct{}

// reviewAutoTopUps evaluates the auto top-up rules of the customer of g,
// whose CASH balance in g's currency just changed (g is stored already):
// below a rule's threshold an armed rule buys its top-up and disarms; at or
// above it, a rule is armed.
func (s *Service) reviewAutoTopUps(ctx context.Context, tx Tx, g *grantRecord, now time.Time) error {
	if g.Type != CreditCash || ctx.Value(topUpGuard{}) != nil {
		return nil
	}
	a := g.ServiceAccountID
	grants, err := customerGrants(ctx, tx, a, g.CustomerID)
	if err != nil {
		return err
	}
	var rules []*grantRecord
	for i, x := range grants {
		if x.ID == g.ID {
			grants[i] = g // the caller's copy: it may store it again
		}
		if r := grants[i]; r.Type == CreditCash && r.Currency == g.Currency && r.AutoTopUp != nil &&
			r.Status != CreditGrantVoided && r.Status != CreditGrantExpired {
			rules = append(rules, r)
		}
	}
	if len(rules) == 0 {
		return nil
	}
	d, err := s.dateOf(ctx, tx, a, g.CustomerID, now)
	if err != nil {
		return err
	}
	balance := g.Currency.Zero()
	for _, x := range grants {
		if x.Type == CreditCash && x.Currency == g.Currency && x.usable(d) {
			balance = balance.Add(x.CurrentBalance)
		}
	}
	for _, r := range rules {
		rule := r.AutoTopUp
		switch {
		case balance.Cmp(rule.ThresholdAmount) >= 0:
			if rule.Armed {
				continue
			}
			rule.Armed = true
		case !rule.Armed:
			continue
		default:
			id, err := s.topUp(context.WithValue(ctx, topUpGuard{}, true), tx, r, d, now)
			if err != nil {
				return err
			}
			balance = balance.Add(rule.TopUpAmount)
			t := now
			rule.LastTopUpGrantID, rule.LastTopUpAt = id, &t
			rule.Armed = balance.Cmp(rule.ThresholdAmount) >= 0
		}
		r.UpdatedAt = now
		if err := putRecord(ctx, tx, tableCreditGrants, key(a, r.ID), r); err != nil {
			return err
		}
	}
	return nil
}

// topUp buys the top-up of rule grant r: a new CASH grant of TopUpAmount,
// effective on d, without expiry, and its purchase invoice for the same
// amount, issued at once (finalized and sent: with a payment provider
// configured, its collection starts, charging the customer's payment method
// when the customer's payment settings name a provider). It returns the new
// grant's id.
func (s *Service) topUp(ctx context.Context, tx Tx, r *grantRecord, d Date, now time.Time) (string, error) {
	a, amount := r.ServiceAccountID, r.AutoTopUp.TopUpAmount
	c, err := s.getCustomer(ctx, tx, a, r.CustomerID)
	if err != nil {
		return "", err
	}
	g := &grantRecord{CreditGrant: CreditGrant{
		ID: s.newID(), ServiceAccountID: a, CustomerID: r.CustomerID, Name: r.Name + " (top-up)", Type: CreditCash,
		Currency: r.Currency, OriginalAmount: amount, CostOfCredit: &amount, Status: CreditGrantActive,
		EffectiveDate: d, TopUpOfGrantID: r.ID, CreatedAt: now, UpdatedAt: now,
	}}
	if c.ArchivedAt == nil { // archived customers get no new invoices: the credit is granted unpaid
		if err := s.createPrepaymentInvoice(ctx, tx, a, g); err != nil {
			return "", err
		}
		if err := s.markTopUpInvoice(ctx, tx, a, g.InvoiceID); err != nil {
			return "", err
		}
	}
	if err := s.insertGrant(ctx, tx, g, "auto top-up", now); err != nil {
		return "", err
	}
	if err := s.emit(ctx, tx, a, NotificationCreditGrantCreated, &g.CreditGrant); err != nil {
		return "", err
	}
	if g.InvoiceID == "" {
		return g.ID, nil
	}
	inv, err := s.sendInvoiceTx(ctx, tx, a, g.InvoiceID)
	if err != nil {
		return "", err
	}
	return g.ID, s.emit(ctx, tx, a, NotificationInvoiceIssued, inv)
}

// markTopUpInvoice records that invoice id buys an auto top-up, so its
// collection charges the customer automatically (topUpCharged).
func (s *Service) markTopUpInvoice(ctx context.Context, tx Tx, account, id string) error {
	r, err := loadDoc(ctx, tx, invoiceKind, account, id)
	if err != nil {
		return err
	}
	r.AutoTopUp = true
	return saveDoc(ctx, tx, invoiceKind, account, r)
}

// topUpCharged reports whether the collection of invoice r charges the
// customer automatically because it buys an auto top-up and the customer's
// payment settings name a payment provider.
func (s *Service) topUpCharged(ctx context.Context, tx Tx, account string, r *invoiceRecord) (bool, error) {
	if !r.AutoTopUp {
		return false, nil
	}
	t, err := s.targetFor(ctx, tx, account, targetCustomer, r.CustomerID)
	return err == nil && t != nil && t.PaymentProvider != "" && t.PaymentProvider != PaymentProviderNone, err
}
