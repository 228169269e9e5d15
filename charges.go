package billing

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// billingPeriod is one billing period of a price: the days [Start, End)
// (End exclusive), and the full period [FullStart, FullEnd) of its period
// sequence that it was cut from. A period is partial when it was cut by a
// start or end of the schedule or of a phase (or is a short first period).
type billingPeriod struct {
	Start, End         Date
	FullStart, FullEnd Date
}

// EndInclusive returns the last day of the period.
func (p billingPeriod) EndInclusive() Date { return p.End.AddDays(-1) }

// partial reports whether p is shorter than its full period.
func (p billingPeriod) partial() bool { return p.Start != p.FullStart || p.End != p.FullEnd }

// factor returns the proration factor of a partial period, days in the
// period / days in its full period, rounded half-up to 12 places; nil for a
// full period.
func (p billingPeriod) factor() *Decimal {
	if !p.partial() {
		return nil
	}
	q, err := DecimalFromInt(int64(daysBetween(p.Start, p.End))).Quo(DecimalFromInt(int64(daysBetween(p.FullStart, p.FullEnd))))
	if err != nil {
		return nil // unreachable: a full period has at least one day
	}
	f := MustDecimal(q.Round(12, RoundHalfUp).Canonical())
	return &f
}

// daysBetween returns the number of days from a to b.
func daysBetween(a, b Date) int {
	return int(b.Time().Sub(a.Time()) / (24 * time.Hour))
}

// frequencyMonths returns the length in months of a frequency's period; 0
// for ONE_TIME.
func frequencyMonths(f BillingFrequency) int {
	switch f {
	case FrequencyMonthly:
		return 1
	case FrequencyQuarterly:
		return 3
	case FrequencyHalfYearly:
		return 6
	case FrequencyYearly:
		return 12
	}
	return 0
}

// periodSequence is a sequence of period boundaries: the anchor day
// (clamped to the month's last day) of every months-th month counted from
// the base month.
type periodSequence struct {
	base   Date // its year and month count; its day does not
	anchor int  // 1-31
}

// boundary returns the k-th boundary of the sequence for periods of months
// months: the anchor day of month base + k × months, clamped.
func (q periodSequence) boundary(k, months int) Date {
	m := int(q.base.Month) - 1 + k*months
	y := q.base.Year + floorDiv(m, 12)
	m = m - floorDiv(m, 12)*12
	last := time.Date(y, time.Month(m+2), 0, 0, 0, 0, 0, time.UTC).Day()
	return Date{Year: y, Month: time.Month(m + 1), Day: min(q.anchor, last)}
}

func floorDiv(a, b int) int {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// periods returns the periods of a price billing every months months on
// sequence q, inside [from, to) (to zero means open-ended), that start
// before until. The first starts on from and the last may be cut by to.
func (q periodSequence) periods(months int, from, to, until Date) []billingPeriod {
	// The boundary at or before from: start a little early and walk.
	diff := (from.Year-q.base.Year)*12 + int(from.Month) - int(q.base.Month)
	k := floorDiv(diff, months) - 1
	for !q.boundary(k+1, months).After(from) {
		k++
	}
	var out []billingPeriod
	for start := from; start.Before(until) && (to.IsZero() || start.Before(to)); k++ {
		full := billingPeriod{FullStart: q.boundary(k, months), FullEnd: q.boundary(k+1, months)}
		full.Start, full.End = start, full.FullEnd
		if !to.IsZero() && to.Before(full.End) {
			full.End = to
		}
		out = append(out, full)
		start = full.End
	}
	return out
}

// charge is one (price, period) of a schedule with its billing date: the
// unit of the exactly-once guarantee.
type charge struct {
	Phase       int // index into the schedule's phases
	Price       *Price
	Period      billingPeriod
	BillingDate Date
}

// oneTime reports whether pr bills once, at the start of its phase.
func oneTime(pr *Price) bool {
	return pr.BillingFrequency == FrequencyOneTime || pr.Structure.PricingType == PricingOneTime
}

// scheduleCharges returns every charge of sc whose period starts before
// until, skipping periods that start while sc was suspended, ordered by
// billing date, then phase, then the price's position in the phase, then
// period start.
func scheduleCharges(sc *BillingSchedule, prices map[string]*Price, until Date) []charge {
	var out []charge
	seq := periodSequence{base: sc.StartDate, anchor: sc.RecurrenceDayOfMonth}
	var schedEnd Date
	if sc.EndDate != nil {
		schedEnd = sc.EndDate.AddDays(1)
	}
	for i, ph := range sc.Phases {
		if i > 0 && ph.RecurrencePreference == RecurrenceReset {
			seq = periodSequence{base: ph.StartDate, anchor: ph.StartDate.Day}
		}
		from, to := ph.StartDate, schedEnd
		if ph.EndDate != nil && (to.IsZero() || ph.EndDate.AddDays(1).Before(to)) {
			to = ph.EndDate.AddDays(1)
		}
		if !to.IsZero() && !from.Before(to) {
			continue
		}
		for _, id := range ph.PriceIDs {
			pr := prices[id]
			if pr == nil {
				continue
			}
			if oneTime(pr) {
				if from.Before(until) && !sc.suspendedOn(from) {
					out = append(out, charge{Phase: i, Price: pr, BillingDate: from, Period: billingPeriod{
						Start: from, End: from.AddDays(1), FullStart: from, FullEnd: from.AddDays(1)}})
				}
				continue
			}
			for _, p := range seq.periods(frequencyMonths(pr.BillingFrequency), from, to, until) {
				if sc.suspendedOn(p.Start) {
					continue
				}
				c := charge{Phase: i, Price: pr, Period: p, BillingDate: p.Start}
				if pr.BillingType == BillingTypeInArrears {
					c.BillingDate = p.End
				}
				out = append(out, c)
			}
		}
	}
	sortCharges(out, sc)
	return out
}

// sortCharges orders charges by billing date, phase, the price's position
// in its phase, and period start, so invoices are deterministic.
func sortCharges(cs []charge, sc *BillingSchedule) {
	pos := func(c charge) int {
		for j, id := range sc.Phases[c.Phase].PriceIDs {
			if id == c.Price.ID {
				return j
			}
		}
		return 0
	}
	less := func(a, b charge) int {
		switch {
		case a.BillingDate != b.BillingDate:
			return cmpDate(a.BillingDate, b.BillingDate)
		case a.Phase != b.Phase:
			return a.Phase - b.Phase
		case pos(a) != pos(b):
			return pos(a) - pos(b)
		}
		return cmpDate(a.Period.Start, b.Period.Start)
	}
	// Insertion sort keeps equal charges stable and is plenty for a
	// schedule's handful of due charges.
	for i := 1; i < len(cs); i++ {
		for j := i; j > 0 && less(cs[j-1], cs[j]) > 0; j-- {
			cs[j-1], cs[j] = cs[j], cs[j-1]
		}
	}
}

func cmpDate(a, b Date) int {
	switch {
	case a.Before(b):
		return -1
	case a.After(b):
		return 1
	}
	return 0
}

// suspendedOn reports whether sc was suspended on day d.
func (sc *BillingSchedule) suspendedOn(d Date) bool {
	for _, s := range sc.Suspensions {
		if !d.Before(s.Start) && (s.End == nil || d.Before(*s.End)) {
			return true
		}
	}
	return false
}

// firstBillingDate returns the earliest billing date of sc's charges.
func firstBillingDate(sc *BillingSchedule, prices map[string]*Price) (Date, bool) {
	cs := scheduleCharges(sc, prices, sc.StartDate.AddDays(400))
	if len(cs) == 0 {
		return Date{}, false
	}
	return cs[0].BillingDate, true
}

// engineLine is one invoice line as the engine computes it, with what it
// needs to apply discounts and minimums before it becomes an
// InvoiceLineItem (engineInvoiceLine).
type engineLine struct {
	phase      int
	priceID    string // the price this line charges; "" for discount and minimum lines
	forPrice   string // the price a discount line discounts
	title      string
	desc       string
	quantity   Decimal
	rate       Decimal
	taxRate    Decimal
	percentage bool
	productID  string
	period     billingPeriod
	net        Decimal
}

// chargeQuantity is the measured input of one charge: usage for
// usage-based prices, seats for SEAT_BASED ones.
type chargeQuantity struct {
	value Decimal
	usage bool // value is metered usage (watched for late changes)
}

// measure returns the usage or seats a charge is computed from.
func (s *Service) measure(ctx context.Context, tx Tx, lc *lineContext, ch charge) (chargeQuantity, error) {
	sc, st := lc.sc, &ch.Price.Structure
	switch {
	case st.PricingType.UsageBased():
		m, err := s.getUsageMetric(ctx, tx, sc.ServiceAccountID, st.UsageMetricID)
		if err != nil {
			return chargeQuantity{}, fmt.Errorf("usage metric of price %s: %w", ch.Price.ID, err)
		}
		overrides := map[string]string{}
		for _, cp := range ch.Price.CustomMetricParameters {
			for _, mp := range m.Parameters {
				if mp.ID == cp.ParameterID {
					overrides[mp.Name] = cp.Value
				}
			}
		}
		period := lc.cal.Period(ch.Period.Start, ch.Period.End)
		calc, err := s.calculateUsage(ctx, tx, sc.ServiceAccountID, m, []string{sc.CustomerID}, period, overrides)
		if err != nil {
			return chargeQuantity{}, err
		}
		return chargeQuantity{value: calc.Value, usage: true}, nil
	case st.PricingType == PricingSeatBased:
		sm, err := s.getSeatMetric(ctx, tx, sc.ServiceAccountID, st.SeatMetricID)
		if err != nil {
			return chargeQuantity{}, fmt.Errorf("seat metric of price %s: %w", ch.Price.ID, err)
		}
		highest := ch.Price.BillingType == BillingTypeInArrears
		n, err := s.seatsInPeriod(ctx, tx, lc.customer, sm.SeatType, lc.cal.Start(ch.Period.Start), lc.cal.Start(ch.Period.End), highest)
		return chargeQuantity{value: DecimalFromInt(n)}, err
	}
	return chargeQuantity{}, nil
}

// seatsInPeriod returns c's balance of seatType at start, or with highest
// the highest balance during [start, end), from the one seat timeline op 8
// reads too.
func (s *Service) seatsInPeriod(ctx context.Context, tx Tx, c *Customer, seatType string, start, end time.Time, highest bool) (int64, error) {
	timelines, err := loadSeatTimelines(ctx, tx, c, seatType)
	if err != nil {
		return 0, err
	}
	tl := timelines[seatType]
	if highest {
		return tl.highest(FormatTimestamp(start), FormatTimestamp(end)), nil
	}
	st, _ := tl.at(FormatTimestamp(start))
	return st.total, nil
}

// lineContext is what computing an invoice's lines needs besides the
// charges: the schedule, its customer and prices, and the tax rates.
type lineContext struct {
	sc       *BillingSchedule
	customer *Customer
	currency Currency
	taxRates map[string]Decimal // price id → tax rate amount
	// units, when set, is USAGE credit that reduces the billed usage of
	// prices on its metrics (an engine invoice being finalized).
	units *unitPool
	// rounding is the mode of the invoice being computed: the Service's
	// for a new one, the draft's own when a draft is recomputed.
	rounding Rounding
	// cal is the customer's calendar: the instants of the periods' days.
	cal Calendar
}

// newLineContext loads sc's customer, its calendar and the tax rates of
// sc's mapping; every rate is 0 for a TAX_EXEMPT or REVERSE_CHARGED
// customer. The customer is sc's: an invoice of sc is always of sc's
// customer, since only a DRAFT schedule (one that billed nothing) may
// change customer.
func (s *Service) newLineContext(ctx context.Context, tx Tx, sc *BillingSchedule, prices map[string]*Price) (*lineContext, error) {
	c, err := s.getCustomer(ctx, tx, sc.ServiceAccountID, sc.CustomerID)
	if err != nil {
		return nil, err
	}
	cal, err := s.calendarFor(ctx, tx, sc.ServiceAccountID, sc.CustomerID)
	if err != nil {
		return nil, err
	}
	lc := &lineContext{sc: sc, customer: c, taxRates: map[string]Decimal{}, rounding: s.rounding, cal: cal}
	for _, id := range scheduleDistinctPrices(sc) {
		if pr := prices[id]; pr != nil {
			lc.currency = pr.Currency
			break
		}
	}
	if c.TaxStatus == TaxStatusTaxExempt || c.TaxStatus == TaxStatusReverseCharged {
		return lc, nil
	}
	for _, m := range sc.TaxRates {
		tr, err := getRecord[TaxRate](ctx, tx, tableTaxRates, key(sc.ServiceAccountID, m.TaxRateID))
		if errors.Is(err, ErrNotFound) {
			return nil, Errorf(CodeInvalidState, "tax rate %s of the schedule no longer exists", m.TaxRateID)
		}
		if err != nil {
			return nil, err
		}
		lc.taxRates[m.PriceID] = tr.Amount
	}
	return lc, nil
}

// chargeLines turns one charge with its measured quantity into lines
// (docs/concepts.md, "The billing engine").
func (s *Service) chargeLines(lc *lineContext, ch charge, q chargeQuantity) []engineLine {
	pr := ch.Price
	in := ChargeInput{Quantity: q.value}
	switch pr.Structure.PricingType {
	case PricingFixed, PricingSeatBased:
		in.Factor = ch.Period.factor()
	}
	res := pr.Structure.Charge(in, lc.currency, lc.rounding)
	out := make([]engineLine, 0, len(res.Lines))
	for _, cl := range res.Lines {
		l := engineLine{
			phase: ch.Phase, priceID: pr.ID, title: pr.Name, quantity: cl.Quantity, rate: cl.Rate,
			taxRate: lc.taxRates[pr.ID], percentage: cl.Percentage, productID: pr.ProductID,
			period: ch.Period, net: cl.Amount,
		}
		switch {
		case cl.Fee:
			l.title = fmt.Sprintf("%s (tier %d fee)", pr.Name, cl.Tier)
		case pr.Structure.PricingType == PricingGraduated:
			l.title = fmt.Sprintf("%s (tier %d)", pr.Name, cl.Tier)
		}
		var notes []string
		switch pr.Structure.PricingType {
		case PricingPackage:
			notes = append(notes, fmt.Sprintf("usage: %s", res.Usage))
		case PricingSeatBased:
			notes = append(notes, seatNote(pr, q.value))
		}
		if in.Factor != nil && pr.Structure.PricingType != PricingPackage {
			notes = append(notes, prorationNote(ch.Period))
		}
		l.desc = strings.Join(notes, "; ")
		out = append(out, l)
	}
	return out
}

// seatNote says how a seat line's quantity was measured: in arrears the
// highest seat count of the period (its peak), in advance the count at its
// start; and when the contracted minimum raised it.
func seatNote(pr *Price, measured Decimal) string {
	note := fmt.Sprintf("seats at the start of the period: %s", measured)
	if pr.BillingType == BillingTypeInArrears {
		note = fmt.Sprintf("peak seats in the period: %s", measured)
	}
	if m := pr.Structure.ContractedMinimumSeats; m != nil && DecimalFromInt(*m).Cmp(measured) > 0 {
		note += fmt.Sprintf(", billed at the contracted minimum of %d", *m)
	}
	return note
}

// prorationNote says how a partial period was prorated.
func prorationNote(p billingPeriod) string {
	return fmt.Sprintf("prorated: %d of %d days", daysBetween(p.Start, p.End), daysBetween(p.FullStart, p.FullEnd))
}

// creditedChargeLines is chargeLines with the USAGE credit of lc.units
// taken off the measured usage first, so the price sees the reduced
// quantity; the lines say how many units came from credit.
func (s *Service) creditedChargeLines(lc *lineContext, ch charge, q chargeQuantity) []engineLine {
	metric := ch.Price.Structure.UsageMetricID
	if lc.units == nil || !q.usage || metric == "" {
		return s.chargeLines(lc, ch, q)
	}
	taken := lc.units.take(metric, q.value)
	if taken.IsZero() {
		return s.chargeLines(lc, ch, q)
	}
	lines := s.chargeLines(lc, ch, chargeQuantity{value: q.value.Sub(taken), usage: true})
	note := fmt.Sprintf("%s of %s units from credits", taken, q.value)
	for i := range lines {
		if lines[i].desc != "" {
			lines[i].desc += "; "
		}
		lines[i].desc += note
	}
	return lines
}

// applyAdjustments applies each phase's discounts, then its minimums, to
// lines (in that order, docs/concepts.md), returning the lines with the
// discount and minimum lines appended.
func (s *Service) applyAdjustments(lc *lineContext, lines []engineLine) []engineLine {
	var phases []int
	for _, l := range lines {
		if !slices.Contains(phases, l.phase) {
			phases = append(phases, l.phase)
		}
	}
	for _, pi := range phases {
		ph := &lc.sc.Phases[pi]
		for _, d := range ph.Discounts {
			lines = s.applyDiscount(lc, lines, pi, d)
		}
		for _, m := range ph.Minimums {
			lines = s.applyMinimum(lc, lines, pi, m)
		}
	}
	return lines
}

// restricted reports whether line l of phase pi is covered by a discount or
// minimum of that phase restricted to ids (all of the phase's lines when
// ids is empty); discount lines count for the price they discount.
func restricted(l engineLine, pi int, ids []string) bool {
	if l.phase != pi {
		return false
	}
	id := l.priceID
	if id == "" {
		id = l.forPrice
	}
	return id != "" && (len(ids) == 0 || slices.Contains(ids, id))
}

func (s *Service) applyDiscount(lc *lineContext, lines []engineLine, pi int, d Discount) []engineLine {
	title := d.Message
	if title == "" {
		title = "Discount"
	}
	hundred := DecimalFromInt(100)
	pct, _ := d.Amount.Quo(hundred) // cannot fail: the divisor is 100
	var extra []engineLine
	var first *engineLine
	net := lc.currency.Zero()
	for i := range lines {
		l := &lines[i]
		if !restricted(*l, pi, d.RestrictToPrices) {
			continue
		}
		if first == nil {
			first = l
		}
		net = net.Add(l.net)
		if d.Type != DiscountPercentage || l.priceID == "" {
			continue
		}
		if !d.SeparateLineItem {
			l.rate = l.rate.Mul(DecimalFromInt(1).Sub(pct))
			l.net = lc.currency.Round(l.quantity.Mul(l.rate), lc.rounding)
			continue
		}
		amount := lc.currency.Round(pct.Mul(l.net), lc.rounding)
		if amount.Sign() == 0 {
			continue
		}
		extra = append(extra, engineLine{
			phase: pi, forPrice: l.priceID, title: title, quantity: DecimalFromInt(1), rate: amount.Neg(),
			taxRate: l.taxRate, period: l.period, net: amount.Neg(),
		})
	}
	if d.Type == DiscountNominal && first != nil && net.Sign() > 0 {
		amount := d.Amount.Decimal
		if net.Cmp(amount) < 0 {
			amount = net
		}
		amount = lc.currency.Round(amount, lc.rounding)
		if amount.Sign() > 0 {
			extra = append(extra, engineLine{
				phase: pi, forPrice: first.priceID, title: title, quantity: DecimalFromInt(1), rate: amount.Neg(),
				taxRate: first.taxRate, period: first.period, net: amount.Neg(),
			})
		}
	}
	return append(lines, extra...)
}

func (s *Service) applyMinimum(lc *lineContext, lines []engineLine, pi int, m Minimum) []engineLine {
	net := lc.currency.Zero()
	var first *engineLine
	for i := range lines {
		if restricted(lines[i], pi, m.RestrictToPrices) {
			if first == nil && lines[i].priceID != "" {
				first = &lines[i]
			}
			net = net.Add(lines[i].net)
		}
	}
	if first == nil {
		return lines // no charge of the minimum's prices on this invoice
	}
	// A minimum is prorated like the fees of a short period (by days, the
	// factor of the period of its first line).
	minimum, desc := m.Amount.Decimal, ""
	if f := first.period.factor(); f != nil {
		minimum = lc.currency.Round(m.Amount.Decimal.Mul(*f), lc.rounding)
		desc = fmt.Sprintf("minimum %s, %s", m.Amount, prorationNote(first.period))
	}
	gap := lc.currency.Round(minimum.Sub(net), lc.rounding)
	if gap.Sign() <= 0 {
		return lines
	}
	return append(lines, engineLine{
		phase: pi, forPrice: first.priceID, title: "Minimum commitment", desc: desc, quantity: DecimalFromInt(1), rate: gap,
		taxRate: first.taxRate, period: first.period, net: gap,
	})
}

// engineInvoiceLines makes the engine's lines invoice lines.
func engineInvoiceLines(cal Calendar, lines []engineLine) []InvoiceLineItem {
	out := make([]InvoiceLineItem, len(lines))
	for i, l := range lines {
		display := RateDisplayAbsolute
		if l.percentage {
			display = RateDisplayPercentage
		}
		out[i] = engineInvoiceLine(cal, l.period, LineItem{
			Title: l.title, Description: l.desc, Quantity: l.quantity, Rate: l.rate, TaxRate: l.taxRate,
			PriceID: l.priceID, ProductID: l.productID, RateDisplay: display,
		})
	}
	return out
}

// invoiceFor computes the invoice parameters and lines for the charges of
// one billing date, measuring each charge; quantities are returned in
// charge order.
func (s *Service) invoiceFor(ctx context.Context, tx Tx, lc *lineContext, charges []charge) (InvoiceParams, []InvoiceLineItem, []chargeQuantity, error) {
	qs := make([]chargeQuantity, len(charges))
	for i, ch := range charges {
		q, err := s.measure(ctx, tx, lc, ch)
		if err != nil {
			return InvoiceParams{}, nil, nil, err
		}
		qs[i] = q
	}
	lines := s.engineLines(lc, charges, qs)
	sc := lc.sc
	p := InvoiceParams{
		Currency: lc.currency, CustomerID: sc.CustomerID, BillingScheduleID: sc.ID,
		InvoiceUpdateParams: InvoiceUpdateParams{
			PurchaseOrderNumber: sc.PurchaseOrderNumber, Reference: sc.Reference, Memo: sc.Memo,
			BillingPeriod: invoicePeriod(charges),
		},
	}
	out, err := s.withInterimDeductions(ctx, tx, sc, charges, engineInvoiceLines(lc.cal, lines))
	return p, out, qs, err
}

// engineLines computes the lines of charges from their measured quantities
// (qs, in charge order): every charge's lines, then the phases' discounts
// and minimums.
func (s *Service) engineLines(lc *lineContext, charges []charge, qs []chargeQuantity) []engineLine {
	var lines []engineLine
	for i, ch := range charges {
		lines = append(lines, s.creditedChargeLines(lc, ch, qs[i])...)
	}
	return s.applyAdjustments(lc, lines)
}

// span returns the smallest range holding r (nil: none) and period p.
func (r *DateRange) span(p billingPeriod) *DateRange {
	if r == nil {
		return &DateRange{Start: p.Start, EndInclusive: p.EndInclusive()}
	}
	out := *r
	if p.Start.Before(out.Start) {
		out.Start = p.Start
	}
	if e := p.EndInclusive(); e.After(out.EndInclusive) {
		out.EndInclusive = e
	}
	return &out
}

// invoicePeriod is the billing period of an invoice: the span of its
// in-advance charges' periods if it has any, else of its in-arrears ones.
func invoicePeriod(charges []charge) *DateRange {
	var r *DateRange
	for _, advance := range []bool{true, false} {
		for _, ch := range charges {
			if (ch.Price.BillingType != BillingTypeInArrears || oneTime(ch.Price)) != advance {
				continue
			}
			r = r.span(ch.Period)
		}
		if r != nil {
			return r
		}
	}
	return r
}
