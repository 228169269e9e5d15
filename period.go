package billing

import (
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
