package billing

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/billingd/billing/internal/eventcodec"
)

// Day totals: a coarser running total beside the hourly rollups.
//
// An entitlement's usage over a month read from hourly rollups is up to 744
// records per series, and on PostgreSQL decoding and merging them was most
// of an answer's time (about 1.1 ms of CPU; BENCHMARKS.md). So on a store
// whose Tx is a RollupTx (PostgreSQL; not bbolt: keepsDays) every series
// that keeps hourly rollups keeps day totals too, kept in the same
// transactions by the same writer (rollupWriter.flush):
//
//   - usage_rollup_days: series no | UTC day (AppendTime of its first
//     second) → usageRollup: the sum of the day's hours, in the rollups'
//     form (so COUNT, SUM, MIN and MAX read them as they read an hour,
//     ties of MIN and MAX included).
//   - usage_rollup_days: series no | day | deltaSep | 8 random bytes →
//     usageRollup: a delta of the day, as the hours' deltas (RollupTx
//     only; one run in compactEvery folds the days it touches).
//   - usage_rollups: series no → rolledUpDays: the series has had day
//     totals since its creation (or since the backfill that built them). A
//     series whose marker is empty (created by a release that kept hours
//     only) is read from its hours.
//
// Days are UTC days, so they nest in every period whose bounds fall on a
// whole hour (a time zone's midnight is a whole hour in UTC for all but a
// few zones): a calculation reads the whole UTC days of the period from
// day totals, the full hours around them (those of the period's first and
// last days in the customer's time zone) from hourly rollups, and the
// events of a partial first or last hour one by one. A month is then some
// 30 day records and at most 46 hour records, instead of 744.
//
// Exactness: an ingestion adds its events to their days as to their hours
// (a late event to its own day). A day that lost an event (supersede) is
// rebuilt, in the same transaction, from its 24 hours once those are
// written (the hour that lost it rebuilt from its events), its rows and
// deltas taken; the run's other events of that day are in its hours, so
// they are not added twice. The backfill of a newly tracked event type
// (usagetracked.go) builds the days with the hours. Like the hours, a day
// holds every numeric property, so a metric created later finds its days
// complete. Only aggregations whose total is a combination of the parts'
// totals read them: COUNT, SUM, MIN and MAX, plain (no filters, no
// groups); UNIQUE, LATEST, PERCENTILE, TIME_WEIGHTED_SUM and CUSTOM scan.

// keepsDays reports whether the Service keeps day totals through tx: on a
// RollupTx (PostgreSQL), not on bbolt and memstore. Decision, measured
// (BENCHMARKS.md, "Day totals"): on bbolt an answer reads its hours in
// process, p50 0.13 ms at 1,000,000 events (0.04-0.08 ms with days), well
// under the 2 ms target either way, while the day totals cost a group
// commit of 64 events of a tracked event type about 42 more pages (207 to
// 250), and ingestion is where bbolt is short of its target (P1).
func keepsDays(tx Tx) bool { return keepsRollups(tx) }

// rollupMark is the marker (usage_rollups: series no) of a series that
// keeps rollups through tx: rolledUpDays where it keeps day totals too,
// else empty.
func rollupMark(tx Tx) []byte {
	if keepsDays(tx) {
		return rolledUpDays
	}
	return []byte{}
}

// rollupDay is the length of a day total's bucket, in seconds.
const rollupDay = 86400

// rolledUpDays is the marker (usage_rollups: series no) of a series that
// keeps day totals beside its hours.
var rolledUpDays = []byte{1}

// rollupLevel is one granularity of rollups: the table that holds them and
// the length of a bucket, in seconds. Keys are alike at every level:
// series no | the bucket's first second (rollupKey), deltas extending it.
type rollupLevel struct {
	table Table
	secs  int64
}

var (
	hourLevel = rollupLevel{tableUsageRollups, rollupHour}
	dayLevel  = rollupLevel{tableUsageRollupDays, rollupDay}
)

// bucket returns the first second of the bucket holding Unix second sec.
func (l rollupLevel) bucket(sec int64) int64 {
	b := sec / l.secs * l.secs
	if b > sec {
		b -= l.secs
	}
	return b
}

// expect is how many rows a calculation expects to read for n buckets
// (Range.Expect): an hour has few deltas (a batch touches few hours and
// the rows of each one it touches); a day gets a delta from every batch
// of its hours, up to about compactEvery between two folds.
func (l rollupLevel) expect(n int) int {
	if l.secs == rollupDay {
		return compactEvery*n + 1
	}
	return 2*n + 1
}

// rows is the range of the rows (each bucket's row and its deltas) of one
// series' buckets from that of key first to that of key last, both
// included.
func (l rollupLevel) rows(first, last []byte) Range {
	return Range{Start: first[:rollupKeyLen], End: rollupKey(last, eventcodec.ReadTime(last[4:rollupKeyLen]).Unix()+l.secs)}
}

// flushDays writes the run's changes of day totals, after the hours', on
// a store that keeps them (keepsDays: w.all): the run's events are added
// to their days, but to the days that lost an event, which are rebuilt
// from their hours.
func (w *rollupWriter) flushDays(ctx context.Context, tx Tx) error {
	if !w.all {
		return nil
	}
	dirty := map[string]bool{}
	for k := range w.dirty {
		hour := eventcodec.ReadTime([]byte(k)[4:rollupKeyLen]).Unix()
		dirty[string(rollupKey([]byte(k), dayLevel.bucket(hour)))] = true
	}
	for _, series := range sortedKeys(w.added) {
		if err := w.addSeries(ctx, tx, dayLevel, []byte(series), dirty); err != nil {
			return err
		}
	}
	for _, k := range sortedKeys(dirty) {
		if err := rebuildDay(ctx, tx, []byte(k)); err != nil {
			return err
		}
	}
	return nil
}

// rebuildDay recomputes the day total under key k from the day's hourly
// rollups (rows and deltas): the day's rows are taken, and one row written
// unless the day is empty.
func rebuildDay(ctx context.Context, tx Tx, k []byte) error {
	if err := take(ctx, tx, tableUsageRollupDays, dayLevel.rows(k, k), func(_, _ []byte) error { return nil }); err != nil {
		return err
	}
	day := eventcodec.ReadTime(k[4:rollupKeyLen]).Unix()
	var r usageRollup
	err := tx.Scan(ctx, tableUsageRollups, Range{
		Start: k, End: eventcodec.AppendTime(slices.Clone(k[:4]), time.Unix(day+rollupDay, 0)),
	}, func(_, v []byte) error {
		var h usageRollup
		if err := decodeRollup(v, &h); err != nil {
			return fmt.Errorf("decoding %s record: %w", tableUsageRollups, err)
		}
		r.merge(&h)
		return nil
	})
	if err != nil || r.Events == 0 {
		return err
	}
	return tx.Put(ctx, tableUsageRollupDays, k, r.encode())
}

// putDays writes the day totals of series no from its hourly rollups
// (hours: Unix second of the hour → rollup), as the backfill builds them.
func putDays(ctx context.Context, tx Tx, no []byte, hours map[int64]*usageRollup) error {
	days := map[int64]*usageRollup{}
	for h, r := range hours {
		d := dayLevel.bucket(h)
		if days[d] == nil {
			days[d] = &usageRollup{}
		}
		days[d].merge(r)
	}
	for _, d := range slices.Sorted(maps.Keys(days)) {
		if err := tx.Put(ctx, tableUsageRollupDays, rollupKey(no, d), days[d].encode()); err != nil {
			return err
		}
	}
	return nil
}
