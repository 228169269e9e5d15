package billing

import (
	"context"
	"errors"
	"maps"
	"slices"
)

// Running totals for entitlements: the usage rollups of usagerollup.go,
// kept for the event types that metered features measure.
//
// An entitlement's usage is its metric's value over the billing period.
// For a plain COUNT, SUM, MIN or MAX metric a calculation reads it from the
// series' day totals and hourly rollups: one record per whole UTC day of
// the period and one per other full hour (a month: about 30 and at most
// 46; usagerollupday.go), plus the events of a partial first or last hour
// (a time zone whose offset is not a whole number of hours), however many
// events the period holds. The totals are exact under supersede (the hour
// that lost an event is rebuilt in the same transaction, then its day from
// its hours) and late events (added to their own hour and day), and they
// hold every numeric property, so one set serves every metric of the
// event type.
//
// On PostgreSQL every series keeps rollups (RollupTx). On bbolt and
// memstore a series keeps them once its event type is tracked:
//
//   - meta: "usage_rollups" | account | event type → empty: every series of
//     that event type keeps rollups, and each has its marker
//     (usage_rollups: series no → empty: no day totals on these stores).
//
// A price or a schedule phase granting a metered feature tracks the event
// type of the feature's metric in its own transaction (trackRollups): the
// series that have no marker (created before: all of them on bbolt, and on
// PostgreSQL those copied from an older store) are built from their events
// once, there. From then on the ingestion adds to them, and a series
// created later is marked at creation. So accounts without metered
// features pay nothing at ingestion on bbolt but one lookup per event type
// and batch; an account with them pays the rollups' upkeep for the event
// types measured only.

// trackedKey is the meta key marking eventType's series of account as
// keeping rollups.
func trackedKey(account, eventType string) []byte {
	return key(string(tableUsageRollups), account, eventType)
}

// rollupsTracked reports whether the series of the account's eventType
// keep rollups on a store that keeps them only when asked.
func rollupsTracked(ctx context.Context, tx Tx, account, eventType string) (bool, error) {
	_, err := tx.Get(ctx, tableMeta, trackedKey(account, eventType))
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// trackFeatureRollups tracks the event types of the metrics of features'
// metered features (trackRollups); the metrics exist (checkFeatureMetrics).
func trackFeatureRollups(ctx context.Context, tx Tx, account string, features []Feature) error {
	for _, f := range features {
		if f.UsageMetricID == "" {
			continue
		}
		m, err := findRecord[UsageMetric](ctx, tx, tableUsageMetrics, key(account, f.UsageMetricID))
		if err != nil || m == nil {
			return err
		}
		if err := trackRollups(ctx, tx, account, m.EventType); err != nil {
			return err
		}
	}
	return nil
}

// trackRollups makes every series of the account's eventType keep rollups
// from now on: those without a marker are built from their stored events,
// then the event type is marked. Once tracked, an event type stays so.
func trackRollups(ctx context.Context, tx Tx, account, eventType string) error {
	if on, err := rollupsTracked(ctx, tx, account, eventType); on || err != nil {
		return err
	}
	var series [][]byte
	err := tx.Scan(ctx, tableUsageSeries, Range{Prefix: prefix(account, eventType)}, func(_, no []byte) error {
		series = append(series, slices.Clone(no))
		return nil
	})
	if err != nil {
		return err
	}
	for _, no := range series {
		_, err := tx.Get(ctx, tableUsageRollups, no[:4])
		switch {
		case err == nil:
			continue // kept since its creation
		case !errors.Is(err, ErrNotFound):
			return err
		}
		if err := backfillRollups(ctx, tx, no); err != nil {
			return err
		}
	}
	return tx.Put(ctx, tableMeta, trackedKey(account, eventType), []byte{})
}

// backfillRollups replaces the rollups of series no, and its day totals
// where tx keeps them (usagerollupday.go), with those of its stored
// events, and marks it.
func backfillRollups(ctx context.Context, tx Tx, no []byte) error {
	for _, table := range []Table{tableUsageRollups, tableUsageRollupDays} {
		if err := deleteRange(ctx, tx, table, Range{Prefix: no[:4]}, 0); err != nil {
			return err
		}
	}
	hours := map[int64]*usageRollup{}
	err := tx.Scan(ctx, tableUsageEvents, Range{Prefix: no[:4]}, func(k, v []byte) error {
		h := eventHour(k)
		if hours[h] == nil {
			hours[h] = &usageRollup{}
		}
		hours[h].add(k, v)
		return nil
	})
	if err != nil {
		return err
	}
	for _, h := range slices.Sorted(maps.Keys(hours)) {
		if err := tx.Put(ctx, tableUsageRollups, rollupKey(no, h), hours[h].encode()); err != nil {
			return err
		}
	}
	if keepsDays(tx) {
		if err := putDays(ctx, tx, no, hours); err != nil {
			return err
		}
	}
	return tx.Put(ctx, tableUsageRollups, slices.Clone(no[:4]), rollupMark(tx))
}
