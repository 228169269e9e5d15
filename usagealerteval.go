package billing

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"time"
)

// The evaluation of alerts. Ingestion only marks the customers whose usage
// changed (tableAlertMarks, usagealert.go); EvaluateAlerts, called by a
// worker (billingd runs it every second), claims marked customers with a
// lease (so that instances on one store share the work), computes each of
// their alerts' values through the calculation path (CalculateUsage's,
// PreviewInvoice's) outside any write, and then, in one transaction per
// customer, inserts the crossing record of each reached threshold if it is
// absent, emits its notification in the same transaction, and deletes the
// marks it evaluated. The crossing record's key (alert, customer, period)
// is what makes a notification exactly-once across instances and
// restarts: a second evaluation finds it and emits nothing.

// AlertCrossing is a threshold of an alert reached by a customer in a
// period: the data of USAGE_THRESHOLD_REACHED and SPEND_THRESHOLD_REACHED
// notifications, recorded once per alert, customer and period.
type AlertCrossing struct {
	// AlertID is the alert whose threshold was reached.
	AlertID string `json:"alertId"`
	// Kind is the alert's kind, USAGE or SPEND.
	Kind UsageAlertKind `json:"kind"`
	// CustomerID is the customer that reached it.
	CustomerID string `json:"customerId"`
	// UsageMetricID is the metric of a USAGE alert.
	UsageMetricID string `json:"usageMetricId,omitempty"`
	// Currency is the currency of a SPEND alert.
	Currency Currency `json:"currency,omitempty"`
	// Threshold is the alert's threshold.
	Threshold Decimal `json:"threshold"`
	// Value is the value (USAGE) or the amount due (SPEND) found at or
	// above Threshold.
	Value Decimal `json:"value"`
	// PeriodStart is the first instant of the period evaluated.
	PeriodStart time.Time `json:"periodStart"`
	// PeriodEnd is the end of the period (exclusive).
	PeriodEnd time.Time `json:"periodEnd"`
	// ReachedAt is when the evaluation found it (the Service's clock).
	ReachedAt time.Time `json:"reachedAt"`
}

// AlertRun says what one EvaluateAlerts call did.
type AlertRun struct {
	// CustomersEvaluated counts the marked customers it evaluated.
	CustomersEvaluated int `json:"customersEvaluated"`
	// Notified counts the crossings it recorded and notified.
	Notified int `json:"notified"`
	// Failed counts the customers whose evaluation failed (logged); a
	// later call evaluates them again once their lease expired.
	Failed int `json:"failed"`
}

// alertLeaseTime is how long an evaluation holds a marked customer: far
// longer than evaluating one takes, and the time after which the customer
// of an instance that died is evaluated by others.
const alertLeaseTime = time.Minute

// alertScanKeys bounds the marks one claim looks at.
const alertScanKeys = 256

// alertLease is the lease of one marked customer alias (tableAlertLeases).
type alertLease struct {
	Holder string    `json:"holder"`
	Until  time.Time `json:"until"`
}

// markedCustomer is a customer alias of an account with the marks an
// evaluation claimed for it.
type markedCustomer struct {
	account, alias string
	marks          []alertMark
}

// alertMark is a mark as an evaluation read it: its key and value.
type alertMark struct{ key, value []byte }

// EvaluateAlerts evaluates the alerts of every customer whose usage was
// ingested (or that got an alert of its own) since its last evaluation,
// and records and notifies each threshold reached in the current period
// that was not notified yet: at most once per alert, customer and period,
// across instances sharing the store and across restarts. Customers another
// instance is evaluating are left to it. A customer whose evaluation fails
// is logged, counted in Failed and left to a later call; an error is
// returned only when the marks cannot be claimed or ctx ends. The library never calls it by
// itself: billingd runs it every second; an embedding program calls it
// from its own loop.
func (s *Service) EvaluateAlerts(ctx context.Context) (AlertRun, error) {
	var run AlertRun
	hold := newUUIDv7()
	var after []byte
	for {
		claimed, last, err := s.claimMarks(ctx, hold, after)
		if err != nil || last == nil {
			return run, internal(err)
		}
		after = last
		for _, m := range claimed {
			n, err := s.evaluateMarked(ctx, hold, m)
			if err != nil {
				if ctx.Err() != nil {
					return run, ctx.Err()
				}
				// Its lease expires and a later run tries again; the
				// other customers are not held up.
				s.log.Warn("evaluating alerts", "account", m.account, "customerAlias", m.alias, "err", err)
				run.Failed++
				continue
			}
			run.CustomersEvaluated++
			run.Notified += n
		}
	}
}

// claimMarks claims, in one transaction, the customers of up to
// alertScanKeys marks after after that no other evaluation holds, and
// returns them with the last key it looked at (nil when none is left).
func (s *Service) claimMarks(ctx context.Context, hold string, after []byte) (claimed []*markedCustomer, last []byte, err error) {
	r := Range{}
	if after != nil {
		r.Start = append(append([]byte(nil), after...), 0)
	}
	err = s.store.Update(ctx, func(tx Tx) error {
		claimed, last = nil, nil
		var cur *markedCustomer
		var held bool
		now, n := time.Now(), 0
		return tx.Scan(ctx, tableAlertMarks, r, func(k, v []byte) error {
			last = append([]byte(nil), k...)
			parts := bytes.SplitN(k, []byte{keySep}, 3)
			if len(parts) < 2 {
				return nil
			}
			if cur == nil || cur.account != string(parts[0]) || cur.alias != string(parts[1]) {
				cur = &markedCustomer{account: string(parts[0]), alias: string(parts[1])}
				var err error
				if held, err = claimAlertLease(ctx, tx, cur, hold, now); err != nil {
					return err
				}
				if !held {
					claimed = append(claimed, cur)
				}
			}
			if !held {
				cur.marks = append(cur.marks, alertMark{key: last, value: append([]byte(nil), v...)})
			}
			if n++; n == alertScanKeys {
				return ErrStopScan
			}
			return nil
		})
	})
	return claimed, last, err
}

// claimAlertLease takes the lease of m's customer for hold unless another
// evaluation holds it; held reports that one does.
func claimAlertLease(ctx context.Context, tx Tx, m *markedCustomer, hold string, now time.Time) (held bool, err error) {
	k := key(m.account, m.alias)
	l, err := findRecord[alertLease](ctx, tx, tableAlertLeases, k)
	if err != nil {
		return false, err
	}
	if l != nil && l.Holder != hold && now.Before(l.Until) {
		return true, nil
	}
	return false, putRecord(ctx, tx, tableAlertLeases, k, alertLease{Holder: hold, Until: now.Add(alertLeaseTime)})
}

// evaluateMarked evaluates the alerts that apply to m's customer, then
// records and notifies the new crossings, deletes m's marks and releases
// its lease in one transaction. It returns the crossings it notified.
func (s *Service) evaluateMarked(ctx context.Context, hold string, m *markedCustomer) (int, error) {
	now := s.clock()
	var crossings []AlertCrossing
	var spend []*UsageAlert
	var customerID string
	err := s.view(ctx, func(tx Tx) error {
		c, err := s.customerByAlias(ctx, tx, m.account, m.alias)
		if err != nil || c == nil {
			return err // usage of an alias no customer has: no alert applies
		}
		customerID = c.ID
		var usage []*UsageAlert
		err = eachRecord(ctx, tx, tableUsageAlerts, Range{Prefix: prefix(m.account)}, func(a *UsageAlert) error {
			switch {
			case a.CustomerID != "" && a.CustomerID != c.ID:
			case a.Kind == UsageAlertSpend:
				spend = append(spend, a)
			default:
				usage = append(usage, a)
			}
			return nil
		})
		if err != nil {
			return err
		}
		crossings, err = s.usageCrossings(ctx, tx, m.account, c.ID, usage, now)
		return err
	})
	if err != nil {
		return 0, err
	}
	if len(spend) > 0 {
		more, err := s.spendCrossings(ctx, m.account, customerID, spend, now)
		if err != nil {
			return 0, err
		}
		crossings = append(crossings, more...)
	}
	return s.recordCrossings(ctx, hold, m, crossings)
}

// usageCrossings computes, in tx, the value of each USAGE alert's metric
// for customer over its current calendar month (in the customer's time
// zone), and returns the alerts reached.
func (s *Service) usageCrossings(ctx context.Context, tx Tx, account, customer string, alerts []*UsageAlert, now time.Time) ([]AlertCrossing, error) {
	if len(alerts) == 0 {
		return nil, nil
	}
	cal, err := s.calendarFor(ctx, tx, account, customer)
	if err != nil {
		return nil, err
	}
	today := cal.DateOf(now)
	first := Date{Year: today.Year, Month: today.Month, Day: 1}
	period := cal.Period(first, DateOf(first.Time().AddDate(0, 1, 0)))
	var out []AlertCrossing
	for _, a := range alerts {
		m, err := s.getUsageMetric(ctx, tx, account, a.UsageMetricID)
		if CodeOf(err) == CodeNotFound {
			continue // the metric is gone: nothing to watch
		}
		if err != nil {
			return nil, err
		}
		calc, err := s.calculateUsage(ctx, tx, account, m, []string{customer}, period, nil)
		if err != nil {
			var e *Error
			if errors.As(err, &e) && e.Code != CodeInternal {
				continue // a CUSTOM metric without its function: cannot be watched here
			}
			return nil, err
		}
		if calc.Value.Cmp(a.Threshold) >= 0 {
			out = append(out, a.crossing(customer, calc.Value, period.Start, period.End, now))
		}
	}
	return out, nil
}

// spendCrossings computes what customer's upcoming invoices in each SPEND
// alert's currency would charge now (PreviewInvoice of each ACTIVE
// schedule, summed; the period is the billing period of the upcoming
// invoice that starts first) and returns the alerts reached.
func (s *Service) spendCrossings(ctx context.Context, account, customer string, alerts []*UsageAlert, now time.Time) ([]AlertCrossing, error) {
	type due struct {
		amount     Decimal
		start, end time.Time
	}
	dues := map[Currency]*due{}
	p := ListParams{Limit: 100}
	for {
		page, err := s.ListBillingSchedules(ctx, account, BillingScheduleFilter{CustomerID: customer, Status: ScheduleStatusActive}, p)
		if err != nil {
			return nil, err
		}
		for _, sc := range page.Items {
			up, err := s.PreviewInvoice(ctx, account, sc.ID, now)
			if err != nil || up.BillingPeriod == nil {
				continue // no upcoming invoice, or one the run could not bill
			}
			cal, err := s.customerCalendar(ctx, account, customer)
			if err != nil {
				return nil, err
			}
			start, end := cal.Start(up.BillingPeriod.Start), cal.Start(up.BillingPeriod.EndInclusive.AddDays(1))
			d := dues[up.Currency]
			switch {
			case d == nil:
				dues[up.Currency] = &due{amount: up.AmountDue, start: start, end: end}
			case start.Before(d.start):
				d.amount, d.start, d.end = d.amount.Add(up.AmountDue), start, end
			default:
				d.amount = d.amount.Add(up.AmountDue)
			}
		}
		if page.After == "" {
			break
		}
		p.After = page.After
	}
	var out []AlertCrossing
	for _, a := range alerts {
		if d := dues[a.Currency]; d != nil && d.amount.Cmp(a.Threshold) >= 0 {
			out = append(out, a.crossing(customer, d.amount, d.start, d.end, now))
		}
	}
	return out, nil
}

// customerCalendar reads the calendar of a customer in a transaction of
// its own.
func (s *Service) customerCalendar(ctx context.Context, account, customer string) (Calendar, error) {
	return read(ctx, s, func(tx Tx) (Calendar, error) { return s.calendarFor(ctx, tx, account, customer) })
}

// crossing is the crossing of a by customer with value in [start, end).
func (a *UsageAlert) crossing(customer string, value Decimal, start, end, now time.Time) AlertCrossing {
	return AlertCrossing{
		AlertID: a.ID, Kind: a.Kind, CustomerID: customer, UsageMetricID: a.UsageMetricID, Currency: a.Currency,
		Threshold: a.Threshold, Value: value, PeriodStart: start, PeriodEnd: end, ReachedAt: now,
	}
}

// recordCrossings inserts, in one transaction, the record of each crossing
// not recorded yet and emits its notification, deletes m's marks and
// releases m's lease; it returns how many it notified.
func (s *Service) recordCrossings(ctx context.Context, hold string, m *markedCustomer, crossings []AlertCrossing) (int, error) {
	var n int
	err := s.store.Update(ctx, func(tx Tx) error {
		n = 0
		for i := range crossings {
			c := &crossings[i]
			if ok, err := exists(ctx, tx, tableUsageAlerts, key(m.account, c.AlertID)); err != nil || !ok {
				if err != nil {
					return err
				}
				continue // deleted meanwhile
			}
			k := key(m.account, c.AlertID, c.CustomerID, FormatTimestamp(c.PeriodStart))
			b, err := json.Marshal(c)
			if err != nil {
				return err
			}
			if err := tx.Insert(ctx, tableAlertCrossings, k, b); errors.Is(err, ErrConflict) {
				continue // notified before, by this instance or another
			} else if err != nil {
				return err
			}
			typ := NotificationUsageThresholdReached
			if c.Kind == UsageAlertSpend {
				typ = NotificationSpendThresholdReached
			}
			if err := s.emit(ctx, tx, m.account, typ, c); err != nil {
				return err
			}
			n++
		}
		if err := deleteMarks(ctx, tx, m.marks); err != nil {
			return err
		}
		l, err := findRecord[alertLease](ctx, tx, tableAlertLeases, key(m.account, m.alias))
		if err != nil || l == nil || l.Holder != hold {
			return err
		}
		return tx.Delete(ctx, tableAlertLeases, key(m.account, m.alias))
	})
	return n, err
}

// deleteMarks deletes in tx each of marks that still holds the value it
// was read with: a mark a later write rewrote stays for the next
// evaluation.
func deleteMarks(ctx context.Context, tx Tx, marks []alertMark) error {
	keys := make([][]byte, len(marks))
	for i, m := range marks {
		keys[i] = m.key
	}
	values, err := getMany(ctx, tx, tableAlertMarks, keys)
	if err != nil {
		return err
	}
	for i, m := range marks {
		if values[i] != nil && bytes.Equal(values[i], m.value) {
			if err := tx.Delete(ctx, tableAlertMarks, m.key); err != nil {
				return err
			}
		}
	}
	return nil
}
