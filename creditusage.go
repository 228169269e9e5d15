package billing

import (
	"context"
	"time"
)

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
