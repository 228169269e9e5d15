package billing

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/billingd/billing/internal/cache"

	"github.com/billingd/billing/internal/eventcodec"
)

// Usage event storage. Events are the one high-volume record, so they have
// a compact binary layout of their own (ARCHITECTURE.md, "Records"):
//
//   - An account gets a 4-byte account no, and each (account, event type,
//     customer alias) a 4-byte series no, on first use.
//   - usage_events: series no | timestamp (8 bytes) | event id → the event's
//     customerEventId (empty when it defaulted to the id) and properties. A
//     calculation reads one key range per alias: exactly the events of that
//     alias, event type and period, whatever else is stored.
//   - usage_event_ids: account no | event id → series no | timestamp, the
//     creation-order index of GET /usage-events and of supersede by an id.
//   - usage_event_keys: account no | customerEventId → usage_events key, for
//     explicit customerEventIds only (a defaulted one is the id, found in
//     usage_event_ids).
//
// Event ids are stored as a kind byte and 16 bytes for a UUID, or the kind
// byte and the id's text otherwise.

// counterKey is the key of the last number handed out in a numbering table;
// no account id or series key is empty or starts with 0x00.
var counterKey = []byte{0}

// number assigns (once) the 4-byte number of k in table t.
func number(ctx context.Context, tx Tx, t Table, k []byte, create bool) ([]byte, error) {
	v, err := tx.Get(ctx, t, k)
	if err == nil || !errors.Is(err, ErrNotFound) || !create {
		return v, err
	}
	n, err := tx.Increment(ctx, t, counterKey)
	if err != nil {
		return nil, err
	}
	if n > math.MaxUint32 {
		return nil, fmt.Errorf("billing: table %s has run out of numbers", t)
	}
	v = eventcodec.AppendNo(nil, uint32(n))
	return v, tx.Put(ctx, t, k, v)
}

// seriesNo returns the number of the series of (account, eventType, alias),
// creating it when create is set; ErrNotFound when it does not exist.
func seriesNo(ctx context.Context, tx Tx, account, eventType, alias string, create bool) ([]byte, error) {
	k := key(account, eventType, alias)
	if _, err := tx.Get(ctx, tableUsageSeries, k); create && errors.Is(err, ErrNotFound) {
		no, err := number(ctx, tx, tableUsageSeries, k, true)
		if err != nil {
			return nil, err
		}
		return no, tx.Put(ctx, tableUsageSeriesNames, no, key(eventType, alias))
	}
	return number(ctx, tx, tableUsageSeries, k, false)
}

// createSeries commits, in a short transaction of its own, the account's
// number and the series of events that the number cache does not know yet,
// so that the batch's own transaction finds them all cached and increments
// no counter. On a shared store (Config.SharedStore: PostgreSQL) concurrent
// batches that create series all increment one counter row, and at the
// serializable level all but one of them fail and run again: inside the
// batch's transaction that re-runs the whole batch, here only this small
// transaction. A series left without events, when the batch then fails,
// holds nothing: a calculation reads no event from it, as from a missing
// one. It runs outside any idempotency record (the batch's transaction
// stores that), and is cached only after its commit.
func (s *Service) createSeries(ctx context.Context, account string, events []UsageEvent) error {
	_, haveAcct := s.nums.Account(account)
	var missing []seriesName
	seen := map[seriesName]bool{}
	for i := range events {
		name := seriesName{events[i].EventType, events[i].CustomerAlias}
		if seen[name] {
			continue
		}
		seen[name] = true
		if _, ok := s.nums.Series(account, name.eventType, name.alias); !ok {
			missing = append(missing, name)
		}
	}
	if haveAcct && len(missing) == 0 {
		return nil
	}
	var learnedAcct []byte
	var learned []cache.Series
	err := s.store.Update(ctx, func(tx Tx) error {
		learnedAcct, learned = nil, nil
		acct, err := number(ctx, tx, tableUsageAccounts, []byte(account), true)
		if err != nil {
			return err
		}
		if !haveAcct {
			learnedAcct = acct
		}
		for _, name := range missing {
			no, err := seriesNo(ctx, tx, account, name.eventType, name.alias, true)
			if err != nil {
				return err
			}
			learned = append(learned, cache.Series{EventType: name.eventType, Alias: name.alias, No: no})
		}
		return nil
	})
	if err != nil {
		return internal(err)
	}
	s.nums.Learn(account, learnedAcct, learned)
	return nil
}

// usageWrite is one ingestion: its events with everything their records
// need that no lookup does (ids, values) encoded before the transaction, so
// that the store's single writer runs only the lookups and the writes.
type usageWrite struct {
	account string
	events  []UsageEvent
	ids     [][]byte // stored form of each event's id
	vals    [][]byte // encoded value of each event
	// learnedAcct and learnedSeries are the numbers the last run of the
	// transaction function read or assigned, for the Service's number cache
	// (cache.Numbers.Learn) once it committed: the account's when it was
	// not cached, and each series that was not. A number is cached only
	// after its transaction committed: one assigned by a run that Batch
	// rolled back or re-ran would otherwise be handed to another series.
	learnedAcct   []byte
	learnedSeries []cache.Series
}

// prepareUsageWrite encodes what events' records need outside any
// transaction.
func prepareUsageWrite(account string, events []UsageEvent) *usageWrite {
	w := &usageWrite{account: account, events: events,
		ids: make([][]byte, len(events)), vals: make([][]byte, len(events))}
	n := 0
	for i := range events {
		n += 17 + len(events[i].ID)
	}
	buf := make([]byte, 0, n) // one allocation for every id
	// and one for every value, unless an event's is larger than a
	// typical one
	vbuf := make([]byte, 0, 96*len(events))
	for i := range events {
		e := &events[i]
		start := len(buf)
		buf = eventcodec.AppendID(buf, e.ID)
		w.ids[i] = buf[start:len(buf):len(buf)]
		cevid := e.CustomerEventID
		if cevid == e.ID {
			cevid = "" // stored as defaulted
		}
		if need := 16 + len(cevid) + 24*len(e.EventProperties); cap(vbuf)-len(vbuf) < need {
			vbuf = make([]byte, 0, max(need, 96*(len(events)-i)))
		}
		start = len(vbuf)
		vbuf = appendEvent(vbuf, cevid, e.EventProperties)
		w.vals[i] = vbuf[start:len(vbuf):len(vbuf)]
	}
	return w
}

// putUsageEvents stores w's events in order, each superseding any earlier
// event of the account with the same customerEventId (events earlier in the
// slice included). It keeps no state between runs, as group commit
// requires (w's learned numbers are started afresh); within a run it resolves each
// series once, and looks up explicit customerEventIds only when the account
// has any. Numbers committed earlier come from s.nums without a lookup.
func (s *Service) putUsageEvents(ctx context.Context, tx Tx, w *usageWrite) error {
	w.learnedAcct, w.learnedSeries = nil, nil
	acct, ok := s.nums.Account(w.account)
	if !ok {
		var err error
		if acct, err = number(ctx, tx, tableUsageAccounts, []byte(w.account), true); err != nil {
			return err
		}
		w.learnedAcct = acct
	}
	ew := eventWriter{s: s, w: w, acct: acct, explicitIDs: true}
	if len(w.events) > 1 {
		// Worth a scan and a map only for a batch: one event does its one
		// lookup of each kind.
		ew.series = map[seriesName][]byte{}
		ew.explicitIDs = false
		err := tx.Scan(ctx, tableUsageEventKeys, Range{Prefix: acct}, func(_, _ []byte) error {
			ew.explicitIDs = true
			return ErrStopScan
		})
		if err != nil {
			return err
		}
	}
	for i := range w.events {
		if err := ew.put(ctx, tx, i); err != nil {
			return err
		}
	}
	return nil
}

// seriesName is the (event type, alias) of a series within an account.
type seriesName struct{ eventType, alias string }

// eventWriter stores the events of one run of putUsageEvents.
type eventWriter struct {
	s      *Service
	w      *usageWrite
	acct   []byte
	series map[seriesName][]byte // nil: not cached
	// explicitIDs is whether usage_event_keys may hold an entry of the
	// account: false only while neither the store nor this call has one.
	explicitIDs bool
}

func (ew *eventWriter) put(ctx context.Context, tx Tx, i int) error {
	e, acct, id := &ew.w.events[i], ew.acct, ew.w.ids[i]
	// An event whose customerEventId is its own new id can supersede only
	// an event sent with that explicit customerEventId: no stored event has
	// its id.
	own := e.CustomerEventID == e.ID
	if err := supersede(ctx, tx, acct, e.CustomerEventID, !ew.explicitIDs, own); err != nil {
		return err
	}
	name := seriesName{e.EventType, e.CustomerAlias}
	series, ok := ew.series[name]
	if !ok {
		if series, ok = ew.s.nums.Series(e.ServiceAccountID, e.EventType, e.CustomerAlias); !ok {
			var err error
			if series, err = seriesNo(ctx, tx, e.ServiceAccountID, e.EventType, e.CustomerAlias, true); err != nil {
				return err
			}
			ew.w.learnedSeries = append(ew.w.learnedSeries, cache.Series{EventType: e.EventType, Alias: e.CustomerAlias, No: series})
		}
		if ew.series != nil {
			ew.series[name] = series
		}
	}
	// One allocation for the two keys bbolt keeps until the commit.
	buf := make([]byte, 0, 12+len(id)+len(acct)+len(id))
	buf = eventcodec.AppendTime(append(buf, series...), e.EventTimestamp)
	buf = append(buf, id...)
	pk := buf[:len(buf):len(buf)]
	buf = append(append(buf, acct...), id...)
	idKey := buf[len(pk):len(buf):len(buf)]
	if !own {
		ew.explicitIDs = true
		if err := tx.Put(ctx, tableUsageEventKeys, append(append([]byte(nil), acct...), e.CustomerEventID...), pk); err != nil {
			return err
		}
	}
	if err := tx.Put(ctx, tableUsageEventIDs, idKey, pk[:12]); err != nil {
		return err
	}
	return tx.Put(ctx, tableUsageEvents, pk, ew.w.vals[i])
}

// supersede deletes the event of the account whose customerEventId is cevid:
// one sent with that explicit customerEventId (looked up unless noExplicit),
// or one sent without any whose id is cevid (looked up unless fresh: cevid
// is the id of the event being stored).
func supersede(ctx context.Context, tx Tx, acct []byte, cevid string, noExplicit, fresh bool) error {
	if !noExplicit {
		k := append(append([]byte(nil), acct...), cevid...)
		pk, err := tx.Get(ctx, tableUsageEventKeys, k)
		switch {
		case err == nil:
			if err := tx.Delete(ctx, tableUsageEventKeys, k); err != nil {
				return err
			}
			return deleteUsageEvent(ctx, tx, acct, pk)
		case !errors.Is(err, ErrNotFound):
			return err
		}
	}
	if fresh {
		return nil
	}
	id := eventcodec.EncodeID(cevid)
	if id[0] != eventcodec.IDKindUUID {
		return nil // server ids are UUIDs (Config.NewID)
	}
	loc, err := tx.Get(ctx, tableUsageEventIDs, append(append([]byte(nil), acct...), id...))
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	pk := append(loc, id...)
	v, err := tx.Get(ctx, tableUsageEvents, pk)
	if err != nil {
		return err
	}
	if eventcodec.HasExplicitID(v) {
		return nil // its customerEventId is another one: not the same event
	}
	return deleteUsageEvent(ctx, tx, acct, pk)
}

// deleteUsageEvent removes the event stored under primary key pk and its id
// index entry.
func deleteUsageEvent(ctx context.Context, tx Tx, acct, pk []byte) error {
	if err := tx.Delete(ctx, tableUsageEvents, pk); err != nil {
		return err
	}
	return tx.Delete(ctx, tableUsageEventIDs, append(append([]byte(nil), acct...), pk[12:]...))
}

// encodeEvent encodes what the key does not hold: the explicit
// customerEventId ("" when it defaulted to the id) and the properties,
// sorted by name.
func encodeEvent(cevid string, props EventProperties) []byte {
	return appendEvent(make([]byte, 0, 16+len(cevid)+24*len(props)), cevid, props)
}

// appendEvent appends the encoding of encodeEvent to b.
func appendEvent(b []byte, cevid string, props EventProperties) []byte {
	b = eventcodec.AppendHeader(b, cevid, len(props))
	var small [8]string
	names := small[:0]
	for k := range props {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		b = eventcodec.AppendString(b, k)
		b = appendProperty(b, props[k])
	}
	return b
}

func appendProperty(b []byte, v PropertyValue) []byte {
	switch v.kind {
	case PropertyString:
		return eventcodec.AppendStringValue(b, v.str)
	case PropertyBool:
		return eventcodec.AppendBoolValue(b, v.b)
	}
	d := &v.num.d
	if d.Coeff.IsInt64() {
		c := d.Coeff.Int64()
		if d.Negative {
			c = -c
		}
		return eventcodec.AppendSmallNumberValue(b, c, int64(d.Exponent))
	}
	return eventcodec.AppendBigNumberValue(b, v.num.String())
}

// decodeProperty turns a raw value into a PropertyValue.
func decodeProperty(v eventcodec.Raw) (PropertyValue, error) {
	switch v.Tag {
	case eventcodec.TagString:
		return StringProperty(string(v.Payload)), nil
	case eventcodec.TagTrue, eventcodec.TagFalse:
		return BoolProperty(v.Tag == eventcodec.TagTrue), nil
	case eventcodec.TagBig:
		d, err := ParseDecimalNumber(string(v.Payload))
		return NumberProperty(d), err
	}
	c, exp := eventcodec.SmallNumber(v.Payload)
	var d Decimal
	d.d.SetFinite(c, int32(exp))
	return NumberProperty(d), nil
}

// decodeUsageEvent rebuilds an event from its primary key and value.
func decodeUsageEvent(account, eventType, alias string, pk, v []byte) (UsageEvent, error) {
	id, err := eventcodec.DecodeID(pk[12:])
	if err != nil {
		return UsageEvent{}, err
	}
	e := UsageEvent{
		ID: id, ServiceAccountID: account, CustomerAlias: alias, EventType: eventType,
		EventTimestamp: eventcodec.ReadTime(pk[4:12]), CustomerEventID: id,
	}
	r, cevid, n := eventcodec.Open(v)
	if len(cevid) > 0 {
		e.CustomerEventID = string(cevid)
	}
	e.EventProperties = make(EventProperties, n)
	for range n {
		name, raw := r.Next()
		if r.Err != nil {
			return UsageEvent{}, r.Err
		}
		if e.EventProperties[string(name)], err = decodeProperty(raw); err != nil {
			return UsageEvent{}, err
		}
	}
	return e, r.Err
}
