package billing

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/billingd/billing/internal/eventcodec"
)

// Usage rollups: hourly aggregates of a series' events, kept by the
// Service in the events' own transactions for every series on a store
// whose Tx asks for them (RollupTx: PostgreSQL, where every event a scan
// reads travels from the server), and on the other stores for the series
// of the event types that entitlements measure (usagetracked.go). A plain
// COUNT, SUM, MIN or MAX calculation (no property filters, no groups) of a
// series that has them then reads one record per whole UTC day of the
// period (the day totals beside them: usagerollupday.go), one per other
// full hour, and scans only the events of its partial first and last
// hours; the other aggregations and metrics scan.
//
//   - usage_rollups: series no | hour (AppendTime of its first second) →
//     usageRollup: the hour's event count and, per property holding a
//     number, how many events hold one, their exact sum, and the least and
//     greatest value with the key of the first event (in key order) that
//     holds each, so that ties between equal numbers written differently
//     ("1.0", "1.00") resolve as a scan resolves them.
//   - usage_rollups: series no → empty, or rolledUpDays when it has day
//     totals too: the series has had rollups since it was created. A
//     series without it (created by a store or a release that kept none,
//     or copied from bbolt by migrate-store) is scanned.
//
//   - usage_rollups: series no | hour | deltaSep | 8 random bytes →
//     usageRollup: a delta of the hour (keptdelta.go), the events of one
//     ingestion, on a RollupTx only. A reader merges an hour's rows.
//
// An ingestion adds its events to the rollups of their hours (a late event
// to its own hour, whatever the time): on a RollupTx as a delta per hour,
// reading nothing (one ingestion in compactEvery folds the hours it
// touches into one row each); elsewhere by rewriting the hour's row. An
// hour that lost an event (supersede) is rebuilt from a scan of that hour
// in the same transaction, its deltas taken.
// Rollups cover every numeric property, so a metric created later finds
// them complete.

// RollupTx is a Tx on which the Service keeps usage rollups (above): a
// backend whose scans are costly per record offers it, returning true, and
// stores the table usage_rollups like any other. A backend must offer it
// on every Tx or on none: a Tx without it writes events without rollups.
type RollupTx interface {
	Tx
	// KeepsUsageRollups reports whether the Service keeps usage rollups
	// in this store.
	KeepsUsageRollups() bool
}

// rollupHour is the length of a rollup's bucket, in seconds.
const rollupHour = 3600

// keepsRollups reports whether the Service keeps rollups through tx.
func keepsRollups(tx Tx) bool {
	r, ok := tx.(RollupTx)
	return ok && r.KeepsUsageRollups()
}

// usageRollup is the record of one series' hour.
type usageRollup struct {
	Events int64                  `json:"n"`
	Props  map[string]*rollupProp `json:"p,omitempty"`
}

// rollupProp aggregates the numeric values of one property in an hour.
type rollupProp struct {
	N              int64
	Sum, Min, Max  Decimal
	MinKey, MaxKey []byte // the key suffixes (time | id) of Min's and Max's events
}

// rollupPropJSON is rollupProp as stored: decimals in apd's scientific
// text, which reads back with the same coefficient and exponent (so "1.50"
// stays "1.50").
type rollupPropJSON struct {
	N      int64  `json:"n"`
	Sum    string `json:"s"`
	Min    string `json:"lo"`
	MinKey []byte `json:"lk"`
	Max    string `json:"hi"`
	MaxKey []byte `json:"hk"`
}

// MarshalJSON writes the stored form.
func (p *rollupProp) MarshalJSON() ([]byte, error) {
	return json.Marshal(rollupPropJSON{N: p.N, Sum: p.Sum.d.String(), Min: p.Min.d.String(), MinKey: p.MinKey,
		Max: p.Max.d.String(), MaxKey: p.MaxKey})
}

// UnmarshalJSON reads the stored form.
func (p *rollupProp) UnmarshalJSON(b []byte) error {
	var j rollupPropJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	p.N, p.MinKey, p.MaxKey = j.N, j.MinKey, j.MaxKey
	for _, f := range []struct {
		d *Decimal
		s string
	}{{&p.Sum, j.Sum}, {&p.Min, j.Min}, {&p.Max, j.Max}} {
		if _, _, err := f.d.d.SetString(f.s); err != nil {
			return fmt.Errorf("billing: malformed usage rollup: %w", err)
		}
	}
	return nil
}

// rollupKey returns the key of the rollup of series (its first 4 bytes)
// for the hour starting at Unix second hour.
func rollupKey(series []byte, hour int64) []byte {
	return eventcodec.AppendTime(slices.Clone(series[:4]), time.Unix(hour, 0))
}

// hourOf returns the first second of the hour holding Unix second sec.
func hourOf(sec int64) int64 { return hourLevel.bucket(sec) }

// add adds the event stored under key k with encoded value v.
func (r *usageRollup) add(k, v []byte) {
	r.Events++
	rd, _, n := eventcodec.Open(v)
	for range n {
		name, p := rd.Next()
		d, ok := propertyDecimal(p)
		if !ok {
			continue
		}
		if r.Props == nil {
			r.Props = map[string]*rollupProp{}
		}
		rp := r.Props[string(name)]
		if rp == nil {
			rp = &rollupProp{}
			r.Props[string(name)] = rp
		}
		rp.add(d, k[4:])
	}
}

// add adds value d of the event whose key suffix (time | id) is tie.
func (p *rollupProp) add(d Decimal, tie []byte) {
	if p.N == 0 {
		p.N, p.Sum, p.Min, p.Max = 1, d, d, d
		p.MinKey, p.MaxKey = slices.Clone(tie), slices.Clone(tie)
		return
	}
	p.N++
	p.Sum = p.Sum.Add(d)
	if c := d.Cmp(p.Min); c < 0 || c == 0 && bytes.Compare(tie, p.MinKey) < 0 {
		p.Min, p.MinKey = d, slices.Clone(tie)
	}
	if c := d.Cmp(p.Max); c > 0 || c == 0 && bytes.Compare(tie, p.MaxKey) < 0 {
		p.Max, p.MaxKey = d, slices.Clone(tie)
	}
}

// rollupWriter collects one ingestion run's changes of rollups: the events
// added, by series, and the hours that lost an event.
type rollupWriter struct {
	// all is set when tx keeps rollups of every series (RollupTx); else
	// only the series of the account's tracked event types keep them.
	all     bool
	account string
	tracked map[string]bool        // event type → its series keep rollups (when not all)
	added   map[string][][2][]byte // series no → (event key, value) added
	dirty   map[string]bool        // rollup key → rebuild from a scan
}

// newRollupWriter returns the rollup writer of an ingestion run of account.
func newRollupWriter(tx Tx, account string) *rollupWriter {
	return &rollupWriter{all: keepsRollups(tx), account: account}
}

// keeps reports whether the series of eventType keep rollups: all of them
// on a RollupTx, those of a tracked event type elsewhere (one lookup per
// event type and run).
func (w *rollupWriter) keeps(ctx context.Context, tx Tx, eventType string) (bool, error) {
	if w.all {
		return true, nil
	}
	if on, ok := w.tracked[eventType]; ok {
		return on, nil
	}
	on, err := rollupsTracked(ctx, tx, w.account, eventType)
	if err != nil {
		return false, err
	}
	if w.tracked == nil {
		w.tracked = map[string]bool{}
	}
	w.tracked[eventType] = on
	return on, nil
}

// put records the event of eventType stored under pk (series no | time |
// id), when its series keeps rollups.
func (w *rollupWriter) put(ctx context.Context, tx Tx, eventType string, pk, v []byte) error {
	if on, err := w.keeps(ctx, tx, eventType); !on || err != nil {
		return err
	}
	if w.added == nil {
		w.added = map[string][][2][]byte{}
	}
	w.added[string(pk[:4])] = append(w.added[string(pk[:4])], [2][]byte{pk, v})
	return nil
}

// deleted records that the event of eventType stored under pk was deleted.
func (w *rollupWriter) deleted(ctx context.Context, tx Tx, eventType string, pk []byte) error {
	if on, err := w.keeps(ctx, tx, eventType); !on || err != nil {
		return err
	}
	if w.dirty == nil {
		w.dirty = map[string]bool{}
	}
	w.dirty[string(rollupKey(pk, eventHour(pk)))] = true
	return nil
}

// eventHour is the hour of the event stored under key k.
func eventHour(k []byte) int64 { return hourOf(eventSecond(k)) }

// eventSecond is the Unix second of the event stored under key k.
func eventSecond(k []byte) int64 { return eventcodec.ReadTime(k[4:12]).Unix() }

// flush writes the changed rollups: an hour that lost an event is rebuilt
// from its events (this run's included); the others get the run's events
// added, each series' rollups read in one scan over the hours it touched.
// The day totals (usagerollupday.go) follow: a day that lost an event is
// rebuilt from its hours once they are written, the others get the run's
// events added as the hours do.
func (w *rollupWriter) flush(ctx context.Context, tx Tx) error {
	for _, series := range sortedKeys(w.added) {
		if err := w.addSeries(ctx, tx, hourLevel, []byte(series), w.dirty); err != nil {
			return err
		}
	}
	for _, k := range sortedKeys(w.dirty) {
		if err := rebuildRollup(ctx, tx, []byte(k)); err != nil {
			return err
		}
	}
	return w.flushDays(ctx, tx)
}

// addSeries adds the run's events of series to the rollups of level l
// (hours or days) of their buckets, but those of the buckets in skip
// (rebuilt instead). On a store that keeps the rollups of every series
// (RollupTx: PostgreSQL, where a read is a round trip and writers run at
// once) it writes one delta row per bucket touched, reading nothing, and
// one run in compactEvery folds the buckets it touches instead
// (foldRollups); elsewhere (one writer at a time, reads in process) it
// reads the buckets' rows and writes them back, so a bucket is one row.
func (w *rollupWriter) addSeries(ctx context.Context, tx Tx, l rollupLevel, series []byte, skip map[string]bool) error {
	buckets := map[string]*usageRollup{}
	for _, e := range w.added[string(series)] {
		k := string(rollupKey(e[0], l.bucket(eventSecond(e[0]))))
		if skip[k] {
			continue
		}
		if buckets[k] == nil {
			buckets[k] = &usageRollup{}
		}
		buckets[k].add(e[0], e[1])
	}
	switch {
	case len(buckets) == 0:
		return nil
	case !w.all || rand.IntN(compactEvery) == 0:
		return foldRollups(ctx, tx, l, buckets)
	}
	for _, k := range sortedKeys(buckets) {
		if err := tx.Put(ctx, l.table, deltaKey([]byte(k)), buckets[k].encode()); err != nil {
			return err
		}
	}
	return nil
}

// foldRollups takes the rows of level l of one series from the first
// bucket of buckets to the last (in one request on a store that offers
// TakeTx), adds them to buckets (a bucket between them that the run did
// not touch included), and writes one row per bucket under its own key.
func foldRollups(ctx context.Context, tx Tx, l rollupLevel, buckets map[string]*usageRollup) error {
	keys := sortedKeys(buckets)
	err := take(ctx, tx, l.table, l.rows([]byte(keys[0]), []byte(keys[len(keys)-1])), func(k, v []byte) error {
		var r usageRollup
		if err := decodeRollup(v, &r); err != nil {
			return fmt.Errorf("decoding %s record: %w", l.table, err)
		}
		bk := string(k[:rollupKeyLen])
		if buckets[bk] == nil {
			buckets[bk] = &usageRollup{}
		}
		buckets[bk].merge(&r)
		return nil
	})
	if err != nil {
		return err
	}
	for _, k := range sortedKeys(buckets) {
		if err := tx.Put(ctx, l.table, []byte(k), buckets[k].encode()); err != nil {
			return err
		}
	}
	return nil
}

// rollupKeyLen is the length of a bucket's key (rollupKey); its deltas'
// keys extend it (deltaKey).
const rollupKeyLen = 4 + 8

// rebuildRollup recomputes the rollup under key k from the hour's events:
// the hour's rows are taken, and one row written unless the hour is empty.
func rebuildRollup(ctx context.Context, tx Tx, k []byte) error {
	if err := take(ctx, tx, tableUsageRollups, hourLevel.rows(k, k), func(_, _ []byte) error { return nil }); err != nil {
		return err
	}
	hour := eventcodec.ReadTime(k[4:]).Unix()
	var r usageRollup
	err := tx.Scan(ctx, tableUsageEvents, Range{
		Start: k, End: eventcodec.AppendTime(slices.Clone(k[:4]), time.Unix(hour+rollupHour, 0)),
	}, func(ek, ev []byte) error {
		r.add(ek, ev)
		return nil
	})
	if err != nil || r.Events == 0 {
		return err
	}
	return tx.Put(ctx, tableUsageRollups, k, r.encode())
}

// merge adds the rollup o of the same hour (a delta, or the hour's row) to r.
func (r *usageRollup) merge(o *usageRollup) {
	r.Events += o.Events
	for name, op := range o.Props {
		if r.Props == nil {
			r.Props = map[string]*rollupProp{}
		}
		if rp := r.Props[name]; rp != nil {
			rp.merge(op)
			continue
		}
		cp := *op // a copy: r's sums change, o's must not
		r.Props[name] = &cp
	}
}

// merge adds o, the same property's aggregate of other events of the hour,
// to p: ties of Min and Max go to the event first in key order, as add's.
func (p *rollupProp) merge(o *rollupProp) {
	if o.N == 0 {
		return
	}
	if p.N == 0 {
		*p = *o
		return
	}
	p.N += o.N
	p.Sum = p.Sum.Add(o.Sum)
	if c := o.Min.Cmp(p.Min); c < 0 || c == 0 && bytes.Compare(o.MinKey, p.MinKey) < 0 {
		p.Min, p.MinKey = o.Min, o.MinKey
	}
	if c := o.Max.Cmp(p.Max); c > 0 || c == 0 && bytes.Compare(o.MaxKey, p.MaxKey) < 0 {
		p.Max, p.MaxKey = o.Max, o.MaxKey
	}
}

// markRolledUp records that series no, of the account's eventType, has
// had rollups (and day totals, where tx keeps them: rollupMark) since its
// creation, when it keeps them: on a RollupTx, or when the event type is
// tracked.
func markRolledUp(ctx context.Context, tx Tx, account, eventType string, no []byte) error {
	if !keepsRollups(tx) {
		on, err := rollupsTracked(ctx, tx, account, eventType)
		if !on || err != nil {
			return err
		}
	}
	return tx.Put(ctx, tableUsageRollups, slices.Clone(no[:4]), rollupMark(tx))
}

// readsRollups reports whether calculations through tx read rollups: on
// every store but through a RollupTx that keeps none (a test's switch).
func readsRollups(tx Tx) bool {
	r, ok := tx.(RollupTx)
	return !ok || r.KeepsUsageRollups()
}

// rollupReadable reports whether c can read series s from rollups (a
// plain COUNT, SUM, MIN or MAX metric of a series that has them), and
// whether from its day totals too (its marker says so: rolledUpDays).
func (src *usageSource) rollupReadable(c *usageCalc, s *usageSeries) (ok, days bool, err error) {
	switch c.m.AggregationType {
	case AggregationCount, AggregationSum, AggregationMin, AggregationMax:
	default:
		return false, false, nil
	}
	if !c.plain || !readsRollups(src.tx) {
		return false, false, nil
	}
	mark, err := src.tx.Get(src.ctx, tableUsageRollups, s.no[:4])
	if errors.Is(err, ErrNotFound) {
		return false, false, nil
	}
	return err == nil, err == nil && bytes.Equal(mark, rolledUpDays), err
}

// eachRolledUp adds the events of series s in the period to c from its
// rollups: the events of the partial first and last hours one by one, the
// whole UTC days between from their day totals when the series has them,
// the other full hours from their hourly records, in key order (ties of
// MIN and MAX go to the first event, as in a scan). It reports false,
// having added nothing, when the series cannot be read so
// (rollupReadable).
func (src *usageSource) eachRolledUp(c *usageCalc, s *usageSeries) (bool, error) {
	ok, days, err := src.rollupReadable(c, s)
	if !ok || err != nil {
		return false, err
	}
	lo, hi := s.start.Unix(), s.end.Unix()
	first, last := hourOf(lo+rollupHour-1), hourOf(hi) // the full hours are [first, last)
	if first >= last {
		return false, nil
	}
	dayFirst, dayLast := dayLevel.bucket(first+rollupDay-1), dayLevel.bucket(last) // the whole days are [dayFirst, dayLast)
	if !days || dayFirst >= dayLast {
		dayFirst, dayLast = last, last
	}
	if err := src.scanSeconds(c, s, lo, first); err != nil {
		return true, err
	}
	for _, part := range []struct {
		l        rollupLevel
		from, to int64
	}{{hourLevel, first, dayFirst}, {dayLevel, dayFirst, dayLast}, {hourLevel, dayLast, last}} {
		if err := src.readRollups(c, s, part.l, part.from, part.to); err != nil {
			return true, err
		}
	}
	return true, src.scanSeconds(c, s, last, hi)
}

// readRollups adds to c the rollups of level l of series s over the
// buckets [from, to), each bucket's row and deltas merged.
func (src *usageSource) readRollups(c *usageCalc, s *usageSeries, l rollupLevel, from, to int64) error {
	if from >= to {
		return nil
	}
	var h rolledHour // a bucket's row and deltas, merged
	err := src.tx.Scan(src.ctx, l.table, Range{
		Start: rollupKey(s.no, from), End: rollupKey(s.no, to),
		Expect: l.expect(int((to - from) / l.secs)), // one chunk on PostgreSQL, the buckets' deltas included
	}, func(k, v []byte) error {
		var p rollupProp
		events, ok, err := readRollup(v, c.m.AggregationProperty, &p)
		if err != nil {
			return err
		}
		if !h.at(k) {
			h.emit(c)
			h.start(k)
		}
		h.events += events
		if ok {
			h.prop.merge(&p)
		}
		return nil
	})
	if err == nil {
		h.emit(c)
	}
	return err
}

// rolledHour merges the rows of one bucket, an hour or a day (its row and
// its deltas), as a calculation reads them.
type rolledHour struct {
	key    []byte // the hour's key; nil before the first row
	events int64
	prop   rollupProp // the metric's property; N 0 when no event holds a number there
}

// at reports whether the row under k is of h's hour.
func (h *rolledHour) at(k []byte) bool { return h.key != nil && bytes.Equal(k[:rollupKeyLen], h.key) }

// start makes h the hour of the row under k, empty.
func (h *rolledHour) start(k []byte) {
	h.key, h.events, h.prop = append(h.key[:0], k[:rollupKeyLen]...), 0, rollupProp{}
}

// emit adds h's hour, if any, to c.
func (h *rolledHour) emit(c *usageCalc) {
	switch {
	case h.key == nil:
	case h.prop.N == 0:
		c.addRollup(h.events, nil)
	default:
		c.addRollup(h.events, &h.prop)
	}
}

// scanSeconds adds the events of series s in Unix seconds [from, to) to c.
func (src *usageSource) scanSeconds(c *usageCalc, s *usageSeries, from, to int64) error {
	if from >= to {
		return nil
	}
	return src.tx.Scan(src.ctx, tableUsageEvents, Range{
		Start: eventcodec.AppendTime(slices.Clone(s.no), time.Unix(from, 0)),
		End:   eventcodec.AppendTime(slices.Clone(s.no), time.Unix(to, 0)),
	}, func(k, v []byte) error {
		c.key, c.series = k, s
		c.add(eventcodec.View(v))
		return nil
	})
}

// addRollup adds an hour's rollup to the total of a plain metric: its
// event count, and p, the aggregate of the metric's property (nil when no
// event of the hour holds a number there).
func (c *usageCalc) addRollup(events int64, p *rollupProp) {
	a := &c.total
	a.count += events
	if c.m.AggregationType == AggregationCount {
		return
	}
	if p == nil {
		a.invalid += events
		return
	}
	a.invalid += events - p.N
	switch c.m.AggregationType {
	case AggregationSum:
		a.sum.addBig(&p.Sum.d)
	case AggregationMin:
		c.addGauge(a, p.Min)
	case AggregationMax:
		c.addGauge(a, p.Max)
	}
}
