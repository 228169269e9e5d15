package billing

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Late usage corrections (schedules: late usage). When usage of a period
// whose invoice is already final changes within Config.LateUsageWindow,
// the next run re-prices the invoice's charges with the usage as it is now
// and issues the difference once: an adjustment invoice when the customer
// owes more, a credit note against the finalized invoice when it owes
// less. The watch record then holds the corrected usage, in the same
// transaction, so a difference is issued exactly once however often the
// engine runs or crashes; a later change is corrected again, from there.

// correctionLine is the change of one (price, period) of a corrected
// invoice: the net difference and what caused it.
type correctionLine struct {
	priceID string
	name    string // the price's
	period  billingPeriod
	diff    Decimal
	usage   *[2]Decimal // billed and current usage, for usage charges
}

// reviewFinalized re-measures the usage charges of a finalized (or
// lineless) watched invoice and corrects a changed amount.
func (s *Service) reviewFinalized(ctx context.Context, tx Tx, lc *lineContext, w *billingWatch, wk []byte, charges []charge, now time.Time, run *BillingRun) error {
	current := make([]chargeQuantity, len(charges))
	billed := make([]chargeQuantity, len(charges))
	var changed []int
	for i, ch := range charges {
		q, err := s.measure(ctx, tx, lc, ch)
		if err != nil {
			return err
		}
		current[i], billed[i] = q, q
		if u := w.Charges[i].Usage; u != nil {
			billed[i] = chargeQuantity{value: *u, usage: true}
			if u.Cmp(q.value) != 0 {
				changed = append(changed, i)
			}
		}
	}
	if len(changed) == 0 {
		return nil
	}
	var orig *Invoice
	dlc := *lc
	// Re-pricing twice must not draw USAGE credit twice: the difference is
	// priced without it (credit stays with the invoices that drew it).
	dlc.units = nil
	if w.InvoiceID != "" {
		var err error
		if orig, err = s.getInvoiceTx(ctx, tx, lc.sc.ServiceAccountID, w.InvoiceID); err != nil {
			return err
		}
		if dlc.rounding, err = s.docRounding(ctx, tx, lc.sc.ServiceAccountID, w.InvoiceID); err != nil {
			return err
		}
	}
	lines := correctionLines(s.engineLines(&dlc, charges, billed), s.engineLines(&dlc, charges, current), charges, billed, current)
	doc, err := s.issueCorrection(ctx, tx, lc, orig, lines, now, run)
	if err != nil {
		return err
	}
	for _, i := range changed {
		if err := s.recordLateUsage(ctx, tx, lc.sc, w.InvoiceID, charges[i], *w.Charges[i].Usage, current[i].value, doc, now); err != nil {
			return err
		}
		u := current[i].value
		w.Charges[i].Usage = &u
	}
	return putRecord(ctx, tx, tableBillingWatch, wk, w)
}

// correctionLines returns, per (price, period), the net difference between
// the invoice's lines with the billed usage and with the current usage;
// discount and minimum lines count for the price they belong to, so the
// differences add up to the whole invoice's difference.
func correctionLines(before, after []engineLine, charges []charge, billed, current []chargeQuantity) []correctionLine {
	var out []correctionLine
	index := map[string]int{}
	add := func(l engineLine, sign int) {
		id := l.priceID
		if id == "" {
			id = l.forPrice
		}
		k := id + "/" + l.period.Start.String()
		i, ok := index[k]
		if !ok {
			i = len(out)
			index[k] = i
			out = append(out, correctionLine{priceID: id, period: l.period})
		}
		if sign < 0 {
			out[i].diff = out[i].diff.Sub(l.net)
		} else {
			out[i].diff = out[i].diff.Add(l.net)
		}
	}
	for _, l := range before {
		add(l, -1)
	}
	for _, l := range after {
		add(l, 1)
	}
	for i, ch := range charges {
		j, ok := index[ch.Price.ID+"/"+ch.Period.Start.String()]
		if !ok {
			continue
		}
		out[j].name = ch.Price.Name
		if current[i].usage && billed[i].value.Cmp(current[i].value) != 0 {
			out[j].usage = &[2]Decimal{billed[i].value, current[i].value}
		}
	}
	return slices.DeleteFunc(out, func(c correctionLine) bool { return c.diff.Sign() == 0 })
}

// correctionDoc names the document a correction issued.
type correctionDoc struct {
	invoiceID, creditNoteID string
}

// issueCorrection issues the lines' total difference: an adjustment invoice
// (an engine invoice, sent at once when the schedule auto-issues) when it
// is positive, a DRAFT credit note against the original invoice when it is
// negative (a refund needs a person: the invoice may be paid). Nothing is
// issued when the differences cancel out.
func (s *Service) issueCorrection(ctx context.Context, tx Tx, lc *lineContext, orig *Invoice, lines []correctionLine, now time.Time, run *BillingRun) (correctionDoc, error) {
	total := lc.currency.Zero()
	for _, l := range lines {
		total = total.Add(l.diff)
	}
	if total.Sign() == 0 {
		return correctionDoc{}, nil
	}
	sc := lc.sc
	of, number := "a billing date without an invoice", ""
	if orig != nil {
		of, number = "invoice "+orig.InvoiceNumber, orig.InvoiceNumber
	}
	memo := correctionMemo(of, lines)
	meta := []KeyValue{{Key: "lateUsageCorrectionOf", Value: number}}
	if orig != nil {
		meta = append(meta, KeyValue{Key: "lateUsageCorrectionOfInvoiceId", Value: orig.ID})
	}
	items := make([]InvoiceLineItem, len(lines))
	sign := DecimalFromInt(int64(total.Sign()))
	for i, l := range lines {
		items[i] = correctionLineItem(lc, l, sign, number)
	}
	if total.Sign() > 0 {
		p := InvoiceParams{Currency: lc.currency, CustomerID: sc.CustomerID, BillingScheduleID: sc.ID,
			InvoiceUpdateParams: InvoiceUpdateParams{PurchaseOrderNumber: sc.PurchaseOrderNumber, Reference: sc.Reference,
				Memo: memo, Metadata: meta, BillingPeriod: invoicePeriodOf(orig, lines)}}
		inv, err := s.createInvoiceTx(ctx, tx, sc.ServiceAccountID, p, items, now)
		if err != nil {
			return correctionDoc{}, err
		}
		if err := s.emitInvoice(ctx, tx, sc, inv.ID, NotificationInvoiceCreated); err != nil {
			return correctionDoc{}, err
		}
		run.InvoicesCreated++
		run.CorrectionsIssued++
		run.InvoiceIDs = append(run.InvoiceIDs, inv.ID)
		if sc.AutoIssueInvoices {
			if _, err := s.sendInvoiceTx(ctx, tx, sc.ServiceAccountID, inv.ID); err != nil {
				return correctionDoc{}, err
			}
			if err := s.emitInvoice(ctx, tx, sc, inv.ID, NotificationInvoiceIssued); err != nil {
				return correctionDoc{}, err
			}
			run.InvoicesIssued++
		}
		return correctionDoc{invoiceID: inv.ID}, nil
	}
	cn, err := s.createCorrectionCreditNote(ctx, tx, lc, orig, memo, meta, items, now)
	if err != nil {
		return correctionDoc{}, err
	}
	run.CorrectionsIssued++
	run.CreditNoteIDs = append(run.CreditNoteIDs, cn.ID)
	return correctionDoc{creditNoteID: cn.ID}, nil
}

// correctionMemo says what happened, for the document and the
// notifications about it: which usage changed, from what to what.
func correctionMemo(of string, lines []correctionLine) string {
	var parts []string
	for _, l := range lines {
		if l.usage == nil {
			continue
		}
		if len(parts) == 3 {
			parts = append(parts, "and more")
			break
		}
		parts = append(parts, fmt.Sprintf("usage of %s for %s..%s changed from %s to %s", l.name, l.period.Start, l.period.EndInclusive(), l.usage[0], l.usage[1]))
	}
	return fmt.Sprintf("Correction of %s after it was finalized: %s", of, strings.Join(parts, "; "))
}

// correctionLineItem is the line of one (price, period) difference, its
// rate multiplied by sign (a credit note's lines credit the difference as a
// positive amount).
func correctionLineItem(lc *lineContext, l correctionLine, sign Decimal, number string) InvoiceLineItem {
	after := "its invoice was finalized"
	if number != "" {
		after = number + " was finalized"
	}
	desc := fmt.Sprintf("discounts and minimums of %s..%s adjusted for late usage after %s", l.period.Start, l.period.EndInclusive(), after)
	if l.usage != nil {
		desc = fmt.Sprintf("late usage: usage of %s..%s changed from %s to %s after %s", l.period.Start, l.period.EndInclusive(),
			l.usage[0], l.usage[1], after)
	}
	quantity, rate := l.perUnit(sign)
	return engineInvoiceLine(lc.cal, l.period, LineItem{
		Title: "Late usage correction: " + l.name, Description: desc, Quantity: quantity, Rate: rate,
		TaxRate: lc.taxRates[l.priceID], PriceID: l.priceID,
	})
}

// perUnit returns the quantity and rate of a correction line, multiplied
// by sign: the usage that changed at the unit price it changed the
// amount by ("3 × 0.05"), when that price is exact (at most 12 decimals);
// else 1 × the difference (tiers, packages and minimums do not price a
// unit alike).
func (l correctionLine) perUnit(sign Decimal) (quantity, rate Decimal) {
	diff := l.diff.Mul(sign)
	if l.usage != nil {
		delta := l.usage[1].Sub(l.usage[0]).Mul(sign)
		if delta.Sign() != 0 {
			if r, err := diff.Quo(delta); err == nil {
				r = r.Round(maxUsageDecimals, RoundHalfUp)
				if r.Mul(delta).Cmp(diff) == 0 {
					return delta, MustDecimal(r.Canonical())
				}
			}
		}
	}
	return DecimalFromInt(1), diff
}

// invoicePeriodOf is the billing period of a correction: the original
// invoice's, else the span of the corrected periods.
func invoicePeriodOf(orig *Invoice, lines []correctionLine) *DateRange {
	if orig != nil && orig.BillingPeriod != nil {
		bp := *orig.BillingPeriod
		return &bp
	}
	var r *DateRange
	for _, l := range lines {
		r = r.span(l.period)
	}
	return r
}

// createCorrectionCreditNote stores a DRAFT credit note crediting orig
// with the engine's lines (their amounts, texts and periods; a credit
// note's line names no price), and emits CREDIT_NOTE_CREATED. Returns
// validation_failed when the customer is not taxed and a line is.
func (s *Service) createCorrectionCreditNote(ctx context.Context, tx Tx, lc *lineContext, orig *Invoice, memo string, meta []KeyValue, lines []InvoiceLineItem, now time.Time) (*CreditNote, error) {
	account := lc.sc.ServiceAccountID
	p := CreditNoteParams{Currency: lc.currency, CustomerID: lc.sc.CustomerID, Memo: memo, Metadata: meta}
	if orig != nil {
		p.InvoiceID = orig.ID
	}
	cn, err := s.createCreditNoteTx(ctx, tx, account, p, now)
	if err != nil {
		return nil, err
	}
	st, err := s.creditNoteTaxStatus(ctx, tx, account, cn)
	if err != nil {
		return nil, err
	}
	items := make([]*CreditNoteLineItem, len(lines))
	cores := make([]*LineItem, len(lines))
	for i, il := range lines {
		var v validator
		if checkLineTax(&v, st, &il.TaxRate); v.err() != nil {
			return nil, v.err()
		}
		core := il.LineItem
		core.PriceID, core.UnitCode = "", ""
		sp := il.ServicePeriod
		items[i] = &CreditNoteLineItem{LineItem: core, CreditNoteID: cn.ID, ServicePeriod: &DateRange{Start: sp.StartDate, EndInclusive: sp.EndDate}}
		cores[i] = &items[i].LineItem
	}
	if err := s.completeEngineLines(ctx, tx, account, cn.ID, cn.Currency, cores); err != nil {
		return nil, err
	}
	for _, l := range items {
		if err := putNewLine(ctx, s, tx, tableCreditNoteLines, account, cn.ID, l); err != nil {
			return nil, err
		}
	}
	if err := recompute[CreditNote, CreditNoteLineItem, CreditNoteLineItemGroup](ctx, s, tx, creditNoteKind, account, cn, now); err != nil {
		return nil, err
	}
	return cn, s.emit(ctx, tx, account, NotificationCreditNoteCreated, cn)
}

// recordLateUsage stores the late usage of one charge, with the document
// that corrected it (none when the amount did not change).
func (s *Service) recordLateUsage(ctx context.Context, tx Tx, sc *BillingSchedule, invoiceID string, ch charge, billed, current Decimal, doc correctionDoc, now time.Time) error {
	lk := markerKey(sc, ch)
	lu, err := findRecord[LateUsage](ctx, tx, tableBillingLateUsage, lk)
	switch {
	case err != nil:
		return err
	case lu == nil:
		lu = &LateUsage{BillingScheduleID: sc.ID, PriceID: ch.Price.ID, InvoiceID: invoiceID, BilledUsage: billed,
			ServicePeriod: ServicePeriod{StartDate: ch.Period.Start, EndDate: ch.Period.EndInclusive()}}
	}
	lu.CurrentUsage, lu.Difference, lu.DetectedAt = current, current.Sub(lu.BilledUsage), now
	if doc.invoiceID != "" {
		lu.CorrectionInvoiceIDs = append(lu.CorrectionInvoiceIDs, doc.invoiceID)
	}
	if doc.creditNoteID != "" {
		lu.CorrectionCreditNoteIDs = append(lu.CorrectionCreditNoteIDs, doc.creditNoteID)
	}
	return putRecord(ctx, tx, tableBillingLateUsage, lk, lu)
}
