package billing

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Usage and spend alerts: an account asks to be told when a customer's
// usage of a metric, or what the customer's upcoming invoice would charge,
// reaches a threshold in the current period. The alerts are stored here;
// ingestion marks the customers whose usage changed (markAlertCustomers);
// EvaluateAlerts (usagealerteval.go) evaluates the marked customers'
// alerts and notifies each crossing once per alert, customer and period.

// UsageAlertKind says what an alert watches: USAGE or SPEND.
type UsageAlertKind string

// The kinds of alerts.
const (
	// UsageAlertUsage watches the value of a usage metric (UsageMetricID)
	// over the customer's current calendar month, in the customer's time
	// zone, as CalculateUsage computes it.
	UsageAlertUsage UsageAlertKind = "USAGE"
	// UsageAlertSpend watches the amount due of the customer's upcoming
	// invoices in Currency (PreviewInvoice of each of its active billing
	// schedules in that currency, summed) over their billing period.
	UsageAlertSpend UsageAlertKind = "SPEND"
)

// The notification types of alerts: a threshold reached in a period.
const (
	NotificationUsageThresholdReached NotificationType = "USAGE_THRESHOLD_REACHED"
	NotificationSpendThresholdReached NotificationType = "SPEND_THRESHOLD_REACHED"
)

// UsageAlert is a threshold on a customer's usage of a metric (USAGE) or
// on what its upcoming invoices would charge (SPEND), for one customer or
// for every customer of the account. Each period starts it afresh: it
// notifies at most once per customer and period.
type UsageAlert struct {
	ID        string    `json:"id"`
	CreatedAt time.Time `json:"createdAt"`
	// ServiceAccountID is the account that owns the alert.
	ServiceAccountID string `json:"serviceAccountId"`
	// Name is a label for people; empty when none was given.
	Name string `json:"name,omitempty"`
	// Kind is USAGE or SPEND.
	Kind UsageAlertKind `json:"kind"`
	// CustomerID is the customer watched; empty: every customer.
	CustomerID string `json:"customerId,omitempty"`
	// UsageMetricID is the metric of a USAGE alert; empty for SPEND.
	UsageMetricID string `json:"usageMetricId,omitempty"`
	// Currency is the currency of a SPEND alert; empty for USAGE.
	Currency Currency `json:"currency,omitempty"`
	// Threshold is the value (USAGE, in the metric's unit) or the amount
	// (SPEND, in Currency) that, once reached, notifies.
	Threshold Decimal `json:"threshold"`
}

// CreateUsageAlertParams are the fields of a new alert.
type CreateUsageAlertParams struct {
	// Name is an optional label.
	Name string `json:"name"`
	// Kind is USAGE or SPEND; required.
	Kind UsageAlertKind `json:"kind"`
	// CustomerID is the customer to watch; empty: every customer.
	CustomerID string `json:"customerId"`
	// UsageMetricID is required for USAGE and refused for SPEND.
	UsageMetricID string `json:"usageMetricId"`
	// Currency is required for SPEND and refused for USAGE.
	Currency Currency `json:"currency"`
	// Threshold is required and positive; a SPEND threshold has at most
	// the currency's minor units.
	Threshold *Decimal `json:"threshold"`
}

// UsageAlertFilter selects alerts in ListUsageAlerts. Empty fields match
// all.
type UsageAlertFilter struct {
	// CustomerID keeps the alerts of this customer (not those of every
	// customer).
	CustomerID string
	// Kind keeps USAGE or SPEND alerts.
	Kind UsageAlertKind
}

// CreateUsageAlert creates an alert. An alert for one customer evaluates
// that customer at the next EvaluateAlerts, so a threshold already reached
// in the current period notifies then; an alert for every customer
// evaluates each customer at its next usage event. Returns
// validation_failed naming every bad field.
func (s *Service) CreateUsageAlert(ctx context.Context, account string, p CreateUsageAlertParams) (*UsageAlert, error) {
	var v validator
	s.checkName(&v, "name", &p.Name, false)
	switch p.Kind {
	case UsageAlertUsage:
		v.check(p.UsageMetricID != "", "usageMetricId", "usageMetricId is required for USAGE alerts")
		v.check(p.Currency == "", "currency", "currency is only for SPEND alerts")
	case UsageAlertSpend:
		checkCurrency(&v, p.Currency)
		v.check(p.UsageMetricID == "", "usageMetricId", "usageMetricId is only for USAGE alerts")
	case "":
		v.add("kind", "kind is required")
	default:
		v.add("kind", "kind must be USAGE or SPEND")
	}
	switch {
	case p.Threshold == nil:
		v.add("threshold", "threshold is required")
	case p.Threshold.Sign() <= 0:
		v.add("threshold", "threshold must be positive")
	case p.Kind == UsageAlertSpend && p.Currency.Valid() && p.Currency.Round(*p.Threshold, RoundHalfUp).Cmp(*p.Threshold) != 0:
		v.add("threshold", "threshold has more decimals than %s has minor units", p.Currency)
	}
	a := &UsageAlert{
		ID: s.newID(), CreatedAt: s.clock(), ServiceAccountID: account, Name: p.Name, Kind: p.Kind,
		CustomerID: p.CustomerID, UsageMetricID: p.UsageMetricID, Currency: p.Currency,
	}
	if p.Threshold != nil {
		a.Threshold = *p.Threshold
	}
	out, err := mutate(ctx, s, account, func(tx Tx) (*UsageAlert, error) {
		if err := s.checkAlertRefs(ctx, tx, &v, account, a); err != nil {
			return nil, err
		}
		if err := v.err(); err != nil {
			return nil, err
		}
		if a.CustomerID != "" {
			// Evaluate the customer at once: usage before the alert counts.
			if err := markAlias(ctx, tx, account, a.CustomerID, a.ID); err != nil {
				return nil, err
			}
		}
		return a, putRecord(ctx, tx, tableUsageAlerts, key(account, a.ID), a)
	})
	if err == nil {
		s.alerting.set(account, true)
	}
	return out, err
}

// checkAlertRefs checks in tx that the customer and the metric of a exist.
func (s *Service) checkAlertRefs(ctx context.Context, tx Tx, v *validator, account string, a *UsageAlert) error {
	if a.CustomerID != "" {
		if err := s.checkRef(ctx, tx, v, tableCustomers, key(account, a.CustomerID), "customerId"); err != nil {
			return err
		}
	}
	if a.UsageMetricID != "" {
		return s.checkRef(ctx, tx, v, tableUsageMetrics, key(account, a.UsageMetricID), "usageMetricId")
	}
	return nil
}

// GetUsageAlert returns an alert. Returns not_found.
func (s *Service) GetUsageAlert(ctx context.Context, account, id string) (*UsageAlert, error) {
	return getOne[UsageAlert](ctx, s, tableUsageAlerts, account, id, "usage alert")
}

// ListUsageAlerts lists the account's alerts, newest first. Returns
// validation_failed for a bad kind, limit or cursor.
func (s *Service) ListUsageAlerts(ctx context.Context, account string, f UsageAlertFilter, p ListParams) (Page[UsageAlert], error) {
	switch f.Kind {
	case "", UsageAlertUsage, UsageAlertSpend:
	default:
		return Page[UsageAlert]{}, FieldError("kind", "kind must be USAGE or SPEND")
	}
	q := listQuery[UsageAlert]{
		name: "usage_alerts", filter: f.CustomerID + "\x00" + string(f.Kind),
		table: tableUsageAlerts, prefix: prefix(account), desc: true,
		decode: decodeAll(func(a *UsageAlert) bool {
			return (f.CustomerID == "" || a.CustomerID == f.CustomerID) && (f.Kind == "" || a.Kind == f.Kind)
		}),
	}
	return read(ctx, s, func(tx Tx) (Page[UsageAlert], error) { return list(ctx, s, tx, q, p) })
}

// DeleteUsageAlert deletes an alert and returns it: it notifies no more.
// Returns not_found.
func (s *Service) DeleteUsageAlert(ctx context.Context, account, id string) (*UsageAlert, error) {
	out, err := mutate(ctx, s, account, func(tx Tx) (*UsageAlert, error) {
		a, err := getOwned[UsageAlert](ctx, tx, tableUsageAlerts, account, id, "usage alert")
		if err != nil {
			return nil, err
		}
		return a, tx.Delete(ctx, tableUsageAlerts, key(account, id))
	})
	if err == nil {
		s.alerting.forget(account)
	}
	return out, err
}

// alertCheckTTL is how long an instance trusts what it read of whether an
// account has alerts. Its own creations and deletions take effect at once;
// another instance's (on PostgreSQL) within this time.
const alertCheckTTL = 2 * time.Second

// alertPresence caches, per account, whether the account has any alert:
// the cheap check that keeps ingestion of accounts without alerts free of
// any alert work.
type alertPresence struct {
	m sync.Map // account → alertSeen
}

// alertSeen is what an instance read of an account's alerts, and when.
type alertSeen struct {
	has bool
	at  time.Time // monotonic: time.Now, not the Service's clock
}

func (p *alertPresence) set(account string, has bool) {
	p.m.Store(account, alertSeen{has: has, at: time.Now()})
}

func (p *alertPresence) forget(account string) { p.m.Delete(account) }

// hasAlerts reports whether account has alerts, from the cache when it is
// fresh, otherwise read in tx (one short scan).
func (s *Service) hasAlerts(ctx context.Context, tx Tx, account string) (bool, error) {
	if v, ok := s.alerting.m.Load(account); ok {
		if seen := v.(alertSeen); time.Since(seen.at) < alertCheckTTL {
			return seen.has, nil
		}
	}
	has := false
	err := tx.Scan(ctx, tableUsageAlerts, Range{Prefix: prefix(account)}, func(_, _ []byte) error {
		has = true
		return ErrStopScan
	})
	if err != nil && !errors.Is(err, ErrStopScan) {
		return false, err
	}
	s.alerting.set(account, has)
	return has, nil
}

// markAlertCustomers marks, in the ingestion's transaction tx, each
// customer alias of w's events for evaluation, when the account has
// alerts (markAlias).
func (s *Service) markAlertCustomers(ctx context.Context, tx Tx, w *usageWrite) error {
	if len(w.events) == 0 {
		return nil
	}
	has, err := s.hasAlerts(ctx, tx, w.account)
	if err != nil || !has {
		return err
	}
	first := w.events[0].ID
	seen := make(map[string]struct{}, 1)
	for i := range w.events {
		alias := w.events[i].CustomerAlias
		if _, ok := seen[alias]; ok {
			continue
		}
		seen[alias] = struct{}{}
		if err := markAlias(ctx, tx, w.account, alias, first); err != nil {
			return err
		}
	}
	return nil
}

// markAlias marks alias of account for evaluation in tx, with write (an id
// unique to the write) as the mark's value: an evaluation deletes a mark
// only while it still holds the value it read, so a mark rewritten by a
// later write survives for the next evaluation. On a store whose write
// transactions run concurrently (concurrentWriters: PostgreSQL) each
// write takes a key of its own, so that concurrent ingestions never write
// the same row; on a store with one
// writer at a time (bbolt, memstore) the alias has one key, rewritten,
// and the table stays as small as the set of customers awaiting
// evaluation.
func markAlias(ctx context.Context, tx Tx, account, alias, write string) error {
	k := key(account, alias)
	if concurrentWriters(tx) {
		k = key(account, alias, write)
	}
	return tx.Put(ctx, tableAlertMarks, k, []byte(write))
}
