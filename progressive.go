package billing

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"
)

// Progressive billing (docs/progressive-billing.md): a schedule with a
// ThresholdAmount is invoiced in the middle of a period once the usage the
// period has accrued, and no invoice has billed yet, reaches the threshold.
//
// Every invoice of a billing date, the interim ones and the final one,
// carries the full lines of the period's usage so far (the price structure
// applied to the period's total quantity, so tiers are exact), followed by
// one "Previously invoiced" line per line the live (not voided) interim
// invoices of that date already billed: the same quantity negated, the same
// rate and tax rate. A line's net and tax are rounded symmetrically
// (half-up away from zero, or half-even), so each deduction line is the
// exact negation of the line it deducts, tax included, and the invoices of
// a period add up to the single invoice the period would have had, to the
// cent. A voided interim invoice is simply no longer deducted.

// interimPrefix starts the title of a line that deducts a line an interim
// invoice billed.
const interimPrefix = "Previously invoiced: "

// interimRecord lists the interim invoices issued before the invoice of one
// billing date of a schedule, oldest first.
type interimRecord struct {
	InvoiceIDs []string `json:"invoiceIds"`
	// LineIDs are the lines the engine wrote on those invoices: only they
	// are billed usage (or its deduction); a line added to an interim
	// draft by hand is neither deducted nor billed again.
	LineIDs []string `json:"lineIds"`
}

// interimKey is the key of the interim invoices of sc's billing date d.
func interimKey(sc *BillingSchedule, d Date) []byte {
	return key(sc.ServiceAccountID, sc.ID, d.String())
}

// interimUsage returns the usage charges of group whose period has begun
// and not ended at asOf and that progressive billing may invoice early:
// IN_ARREARS, priced on usage, not yet billed. Nil when the date's invoice
// exists already.
func (s *Service) interimUsage(ctx context.Context, tx Tx, lc *lineContext, group []charge, asOf time.Time) ([]charge, error) {
	var out []charge
	for _, ch := range group {
		pr := ch.Price
		if pr.BillingType != BillingTypeInArrears || oneTime(pr) || !pr.Structure.PricingType.UsageBased() {
			continue
		}
		if lc.cal.Start(ch.Period.Start).After(asOf) || !lc.cal.Start(ch.Period.End).After(asOf) {
			continue
		}
		billed, err := exists(ctx, tx, tableBillingMarkers, markerKey(lc.sc, ch))
		if err != nil || billed {
			return nil, err
		}
		out = append(out, ch)
	}
	return out, nil
}

// billProgressive issues the interim invoices of sc that are due at asOf:
// for each billing date still ahead whose usage so far, less what earlier
// interim invoices billed, reaches sc's threshold, one interim invoice.
// It runs inside the engine's transaction of the schedule, which the
// engine's leases give to one instance at a time, and the interim invoice
// is recorded in that transaction: each is issued once.
func (s *Service) billProgressive(ctx context.Context, tx Tx, lc *lineContext, prices map[string]*Price, asOf, now time.Time, run *BillingRun) error {
	sc := lc.sc
	if sc.ThresholdAmount == nil || !sc.runnable() || sc.Status != ScheduleStatusActive || lc.customer.ArchivedAt != nil {
		return nil
	}
	today := lc.cal.DateOf(asOf)
	if sc.suspendedOn(today) {
		return nil
	}
	for _, group := range byBillingDate(scheduleCharges(sc, prices, today.AddDays(1))) {
		usage, err := s.interimUsage(ctx, tx, lc, group, asOf)
		if err != nil {
			return err
		}
		if len(usage) == 0 || s.dueDates(lc.cal, group, asOf) != nil {
			continue
		}
		if err := s.billInterim(ctx, tx, lc, usage, now, run); err != nil {
			return blamePrice(err, usage, nil)
		}
	}
	return nil
}

// billInterim issues the interim invoice of the usage charges of one
// billing date when what they would bill now reaches the threshold.
func (s *Service) billInterim(ctx context.Context, tx Tx, lc *lineContext, usage []charge, now time.Time, run *BillingRun) error {
	sc := lc.sc
	qs := make([]chargeQuantity, len(usage))
	for i, ch := range usage {
		q, err := s.measure(ctx, tx, lc, ch)
		if err != nil {
			return err
		}
		qs[i] = q
	}
	// Discounts apply as on the final invoice; minimums are a commitment
	// of the whole period and are left to the final invoice.
	var el []engineLine
	for i, ch := range usage {
		el = append(el, s.chargeLines(lc, ch, qs[i])...)
	}
	for _, pi := range phasesOf(el) {
		for _, d := range sc.Phases[pi].Discounts {
			el = s.applyDiscount(lc, el, pi, d)
		}
	}
	date := usage[0].BillingDate
	rec, deduct, err := s.interimDeductions(ctx, tx, sc, date)
	if err != nil {
		return err
	}
	lines := append(engineInvoiceLines(lc.cal, el), deduct...)
	gross := lc.currency.Zero()
	for i := range lines {
		l := lines[i].LineItem
		computeLine(&l, lc.currency, lc.rounding)
		gross = gross.Add(l.GrossTotal)
	}
	if gross.Cmp(*sc.ThresholdAmount) < 0 {
		return nil
	}
	p := InvoiceParams{
		Currency: lc.currency, CustomerID: sc.CustomerID, BillingScheduleID: sc.ID,
		InvoiceUpdateParams: InvoiceUpdateParams{
			PurchaseOrderNumber: sc.PurchaseOrderNumber, Reference: sc.Reference, Memo: sc.Memo,
			BillingPeriod: invoicePeriod(usage),
		},
	}
	inv, err := s.createInvoiceTx(ctx, tx, sc.ServiceAccountID, p, lines, now)
	if err != nil {
		return err
	}
	written, err := s.listInvoiceLinesTx(ctx, tx, sc.ServiceAccountID, inv.ID)
	if err != nil {
		return err
	}
	rec.InvoiceIDs = append(rec.InvoiceIDs, inv.ID)
	for _, l := range written {
		rec.LineIDs = append(rec.LineIDs, l.ID)
	}
	if err := putRecord(ctx, tx, tableBillingInterim, interimKey(sc, date), rec); err != nil {
		return err
	}
	return s.announceEngineInvoice(ctx, tx, sc, inv.ID, run)
}

// announceEngineInvoice emits INVOICE_CREATED for a new engine invoice,
// counts it in run, and sends it at once when the schedule says so.
func (s *Service) announceEngineInvoice(ctx context.Context, tx Tx, sc *BillingSchedule, id string, run *BillingRun) error {
	if err := s.emitInvoice(ctx, tx, sc, id, NotificationInvoiceCreated); err != nil {
		return err
	}
	run.InvoicesCreated++
	run.InvoiceIDs = append(run.InvoiceIDs, id)
	sc.LastInvoiceID = id
	if !sc.AutoIssueInvoices {
		return nil
	}
	if _, err := s.sendInvoiceTx(ctx, tx, sc.ServiceAccountID, id); err != nil {
		return err
	}
	run.InvoicesIssued++
	return s.emitInvoice(ctx, tx, sc, id, NotificationInvoiceIssued)
}

// issuable reports whether the engine may send inv at once: not when its
// gross total is negative, which only the deduction of interim invoices
// that billed more than the period's usage now comes to can make (usage
// corrected downwards after an interim invoice). Such an invoice stays
// DRAFT, recomputed by each run, for an operator: voiding an interim
// invoice makes the final invoice bill that part again.
func issuable(inv *Invoice) bool { return inv.GrossTotal.Sign() >= 0 }

// phasesOf returns the phases of lines in the order they first appear.
func phasesOf(lines []engineLine) []int {
	var out []int
	seen := map[int]bool{}
	for _, l := range lines {
		if !seen[l.phase] {
			seen[l.phase] = true
			out = append(out, l.phase)
		}
	}
	return out
}

// interimDeductions returns the interim invoices of sc's billing date d
// (an empty record when none) and the lines that deduct what the live
// ones billed. The lines of those invoices are counted as a signed
// multiset: a line counts +1, a deduction line (its title starts with
// interimPrefix) counts -1 for the line it deducts, so a line billed and
// already deducted cancels out. What is left is deducted line by line, a
// negative count giving the line back. Lines of applied credit are not
// supplies and are never deducted (credit is applied to each invoice on
// its own).
func (s *Service) interimDeductions(ctx context.Context, tx Tx, sc *BillingSchedule, d Date) (*interimRecord, []InvoiceLineItem, error) {
	rec, err := findRecord[interimRecord](ctx, tx, tableBillingInterim, interimKey(sc, d))
	if err != nil || rec == nil {
		return &interimRecord{}, nil, err
	}
	type entry struct {
		line  InvoiceLineItem
		count int
	}
	var order []string
	entries := map[string]*entry{}
	for _, id := range rec.InvoiceIDs {
		inv, err := s.getInvoiceTx(ctx, tx, sc.ServiceAccountID, id)
		if errors.Is(err, ErrNotFound) || CodeOf(err) == CodeNotFound {
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		if inv.Status == StatusVoided {
			continue
		}
		lines, err := s.listInvoiceLinesTx(ctx, tx, sc.ServiceAccountID, id)
		if err != nil {
			return nil, nil, err
		}
		for _, l := range lines {
			if l.CreditGrantID != "" || !slices.Contains(rec.LineIDs, l.ID) {
				continue // credit, or a line added by hand
			}
			base, sign := billedLine(l)
			k := lineKey(base)
			e := entries[k]
			if e == nil {
				e = &entry{line: base}
				entries[k] = e
				order = append(order, k)
			}
			e.count += sign
		}
	}
	var out []InvoiceLineItem
	for _, k := range order {
		e := entries[k]
		for range e.count {
			out = append(out, deductionLine(e.line))
		}
		for range -e.count {
			out = append(out, e.line)
		}
	}
	return rec, out, nil
}

// billedLine returns the line l bills or deducts, as a new engine line, and
// +1 when l bills it, -1 when l deducts it.
func billedLine(l InvoiceLineItem) (InvoiceLineItem, int) {
	base := InvoiceLineItem{LineItem: l.LineItem, ServicePeriodStart: l.ServicePeriodStart,
		ServicePeriodEnd: l.ServicePeriodEnd, ServicePeriod: l.ServicePeriod}
	base.ID, base.GroupID, base.Index, base.Totals, base.ExternalIDs = "", "", 0, Totals{}, []KeyValue{}
	if t, ok := strings.CutPrefix(base.Title, interimPrefix); ok {
		base.Title, base.Quantity = t, base.Quantity.Neg()
		return base, -1
	}
	return base, 1
}

// deductionLine is the line that deducts l: its quantity negated, titled
// with interimPrefix.
func deductionLine(l InvoiceLineItem) InvoiceLineItem {
	l.Title, l.Quantity = interimPrefix+l.Title, l.Quantity.Neg()
	return l
}

// lineKey identifies a billed line for the deduction count: everything its
// amounts and its reading depend on.
func lineKey(l InvoiceLineItem) string {
	var period string
	if l.ServicePeriod != nil {
		period = l.ServicePeriod.StartDate.String() + "/" + l.ServicePeriod.EndDate.String()
	}
	return strings.Join([]string{l.PriceID, l.Title, l.Description, l.Quantity.String(), l.Rate.String(),
		l.TaxRate.String(), string(l.RateDisplay), period}, "\x00")
}

// withInterimDeductions appends to the lines of the invoice of a billing
// date the deduction of what that date's interim invoices billed.
func (s *Service) withInterimDeductions(ctx context.Context, tx Tx, sc *BillingSchedule, charges []charge, lines []InvoiceLineItem) ([]InvoiceLineItem, error) {
	if len(charges) == 0 {
		return lines, nil
	}
	_, deduct, err := s.interimDeductions(ctx, tx, sc, charges[0].BillingDate)
	return append(lines, deduct...), err
}
