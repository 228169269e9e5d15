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
//   - usage_event_ids: the creation-order index of GET /usage-events and of
//     supersede by an id, written as one record per batch and millisecond
//     ("id blocks"): account no | first event id → series no | timestamp
//     of that first event, followed by zero or more entries of the other
//     events, sorted by id: each the 16 bytes of its UUID id | series no
//     (4) | timestamp (8), or, written compactly, a few bytes relative to
//     the entry before (appendIDRecord). All the ids of a record share their first 6
//     bytes (a UUIDv7's millisecond), and the key's id is the smallest. A
//     batch writes one record per group of its UUID ids sharing those 6
//     bytes (billingd's own batch ids share one; a custom Config.NewID's
//     UUIDs are grouped the same way); a non-UUID id and a single event
//     are a group of one: a 12-byte value, which is also what every record
//     was before blocks, so older stores read as they are. Finding the
//     record of an id x walks back from account no | x over the keys that
//     share x's millisecond (only those records can hold x; records of
//     concurrent batches of one millisecond may overlap) and searches each
//     one's entries. Deleting an event (supersede) rewrites its record
//     without it, under the same key: a deleted first entry stays, as a
//     dead entry (series no 0) that lists skip, because the key is the
//     list position of every entry that cursors may point at; a record
//     left with only its dead entry is deleted; one ingestion writes each record it changed
//     once, at its end (idIndex). Lists visit records in key order and the
//     entries of a record by id: an entry's list position is the record's
//     key suffix, followed by its id for all but the first (list,
//     listQuery.expand).
//   - usage_event_keys: account no | customerEventId → usage_events key, for
//     explicit customerEventIds only (a defaulted one is the id, found in
//     usage_event_ids).
//   - usage_alias_ids: each usage_event_ids record's entries of one alias,
//     under account no | alias | that record's key: the creation-order
//     index of one customer (usagealiasids.go), written with it.
//
// Event ids are stored as a kind byte and 16 bytes for a UUID, or the kind
// byte and the id's text otherwise. So an ingested event writes one key of
// its own (usage_events) and shares one usage_event_ids record with the
// events of its batch and millisecond.

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
	if !create {
		return number(ctx, tx, tableUsageSeries, k, false)
	}
	if _, err := tx.Get(ctx, tableUsageSeries, k); errors.Is(err, ErrNotFound) {
		no, err := number(ctx, tx, tableUsageSeries, k, true)
		if err != nil {
			return nil, err
		}
		if err := markRolledUp(ctx, tx, account, eventType, no); err != nil {
			return nil, err
		}
		return no, tx.Put(ctx, tableUsageSeriesNames, no, key(eventType, alias))
	}
	return number(ctx, tx, tableUsageSeries, k, false)
}

// createSeries commits, in a short transaction of its own, the account's
// number and the series of events that the number cache does not know yet,
// so that the batch's own transaction finds them all cached and increments
// no counter. With Config.SeriesInOwnTransaction (PostgreSQL) concurrent
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
	rawIDs  []byte   // the 16 bytes of each event's UUID, when the ids are the Service's own (newIDs)
	vals    [][]byte // encoded value of each event
	idBuf   []byte   // memory of ids
	valBuf  []byte   // memory of vals
	// keyBuf, added and indexBuf are the memory of putUsageEvents' runs:
	// the events' keys, the id index's new entries and its records. Each
	// run starts them afresh.
	keyBuf   []byte
	added    []idEntry
	indexBuf []byte
	// learnedAcct and learnedSeries are the numbers the last run of the
	// transaction function read or assigned, for the Service's number cache
	// (cache.Numbers.Learn) once it committed: the account's when it was
	// not cached, and each series that was not. A number is cached only
	// after its transaction committed: one assigned by a run that Batch
	// rolled back or re-ran would otherwise be handed to another series.
	learnedAcct   []byte
	learnedSeries []cache.Series
}

// reset makes w the write of events, whose ids will be ids (and their
// bytes raw, or nil: see newIDs), with no event encoded yet (encode),
// reusing w's memory where it is large enough.
func (w *usageWrite) reset(account string, events []UsageEvent, ids []string, raw []byte) {
	n := 17 * len(ids) // a UUID's stored form
	if raw == nil {
		n = 0
		for _, id := range ids {
			n += 1 + len(id) // at most: a kind byte and the text
		}
	}
	*w = usageWrite{account: account, events: events, rawIDs: raw,
		ids: slots(w.ids, len(events)), vals: slots(w.vals, len(events)),
		idBuf: sized(w.idBuf, n), // one block for every id
		// and one for every value, unless an event's is larger than a
		// typical one
		valBuf: sized(w.valBuf, 96*len(events)),
		keyBuf: w.keyBuf[:0], added: w.added[:0], indexBuf: w.indexBuf[:0]}
}

// sized returns b emptied when it has room for n bytes, else a new buffer
// of n.
func sized(b []byte, n int) []byte {
	if cap(b) >= n {
		return b[:0]
	}
	return make([]byte, 0, n)
}

// slots returns n cleared slices, in s's memory when it has room.
func slots(s [][]byte, n int) [][]byte {
	if cap(s) < n {
		return make([][]byte, n)
	}
	s = s[:n]
	clear(s)
	return s
}

// keptWrites is how many finished batch writes a Service keeps for their
// memory, and maxKeptWrite the largest value buffer it keeps.
const (
	keptWrites   = 4
	maxKeptWrite = 4 << 20
)

// takeWrite returns a usageWrite whose memory an earlier batch used, or a
// new one. A batch's write allocated some 300 KB in blocks of 17 to 96 KB,
// which the runtime hands out as fresh pages: reusing them took a seventh
// off the checks and records of a batch (BENCHMARKS.md, "Fewer copies and
// allocations per event").
func (s *Service) takeWrite() *usageWrite {
	select {
	case w := <-s.writes:
		return w
	default:
		return new(usageWrite)
	}
}

// releaseWrite keeps w's memory for a later batch: nothing may use w, nor
// anything encoded into it, afterwards. Stores copy what they keep past
// the transaction (Tx.Put; PutKept only until it ends).
func (s *Service) releaseWrite(w *usageWrite) {
	if cap(w.valBuf) > maxKeptWrite {
		return
	}
	w.events, w.learnedAcct, w.learnedSeries = nil, nil, nil
	select {
	case s.writes <- w:
	default: // enough kept
	}
}

// prepareUsageWrite encodes what events' records need outside any
// transaction.
func prepareUsageWrite(account string, events []UsageEvent) *usageWrite {
	ids := make([]string, len(events))
	for i := range events {
		ids[i] = events[i].ID
	}
	w := new(usageWrite)
	w.reset(account, events, ids, nil)
	for i := range events {
		w.encode(i, nil)
	}
	return w
}

// encode encodes the id and the value of event i, after those of the events
// before it; props, when not nil, are its properties read in name order.
func (w *usageWrite) encode(i int, props *propertyList) {
	e := &w.events[i]
	start := len(w.idBuf)
	if w.rawIDs != nil {
		w.idBuf = append(append(w.idBuf, eventcodec.IDKindUUID), w.rawIDs[16*i:16*i+16]...)
	} else {
		w.idBuf = eventcodec.AppendID(w.idBuf, e.ID)
	}
	w.ids[i] = w.idBuf[start:len(w.idBuf):len(w.idBuf)]
	cevid := e.CustomerEventID
	if cevid == e.ID {
		cevid = "" // stored as defaulted
	}
	if need := 16 + len(cevid) + 24*len(e.EventProperties); cap(w.valBuf)-len(w.valBuf) < need {
		w.valBuf = make([]byte, 0, max(need, 96*(len(w.events)-i)))
	}
	start = len(w.valBuf)
	if props != nil {
		w.valBuf = props.appendEvent(w.valBuf, cevid)
	} else {
		w.valBuf = appendEvent(w.valBuf, cevid, e.EventProperties)
	}
	w.vals[i] = w.valBuf[start:len(w.valBuf):len(w.valBuf)]
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
	ew.ids = idIndex{acct: acct, added: w.added[:0], buf: w.indexBuf[:0], compact: !s.legacyID, tailLimit: s.aliasTailEntries}
	if cap(ew.ids.added) < len(w.events) {
		ew.ids.added = make([]idEntry, 0, len(w.events))
	}
	n := 0
	for _, id := range w.ids {
		n += 12 + len(id)
	}
	ew.keys = sized(w.keyBuf, n) // one block for every key
	defer func() { w.keyBuf, w.added, w.indexBuf = ew.keys, ew.ids.added, ew.ids.buf }()
	ew.rollups = newRollupWriter(tx, w.account)
	for i := range w.events {
		if err := ew.put(ctx, tx, i); err != nil {
			return err
		}
	}
	if err := ew.rollups.flush(ctx, tx); err != nil {
		return err
	}
	if err := ew.ids.flush(ctx, tx); err != nil {
		return err
	}
	if err := s.markAlertCustomers(ctx, tx, w); err != nil {
		return err
	}
	return addCounts(ctx, tx, usageCountDeltas(w.account, ew.counts))
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
	ids         idIndex       // the run's changes of usage_event_ids
	keys        []byte        // memory of the run's usage_events keys
	rollups     *rollupWriter // the run's changes of usage rollups
	// counts is how the run changed the number of events of each series
	// (usagecount.go).
	counts map[seriesName]int64
}

func (ew *eventWriter) put(ctx context.Context, tx Tx, i int) error {
	e, acct, id := &ew.w.events[i], ew.acct, ew.w.ids[i]
	// An event whose customerEventId is its own new id can supersede only
	// an event sent with that explicit customerEventId: no stored event has
	// its id.
	own := e.CustomerEventID == e.ID
	if err := ew.supersede(ctx, tx, e.CustomerEventID, !ew.explicitIDs, own); err != nil {
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
	start := len(ew.keys)
	ew.keys = append(eventcodec.AppendTime(append(ew.keys, series...), e.EventTimestamp), id...)
	pk := ew.keys[start:len(ew.keys):len(ew.keys)]
	if !own {
		ew.explicitIDs = true
		if err := tx.Put(ctx, tableUsageEventKeys, append(append([]byte(nil), acct...), e.CustomerEventID...), pk); err != nil {
			return err
		}
	}
	ew.ids.added = append(ew.ids.added, idEntry{id: pk[12:], loc: pk[:12], alias: e.CustomerAlias})
	if err := ew.rollups.put(ctx, tx, e.EventType, pk, ew.w.vals[i]); err != nil {
		return err
	}
	ew.count(name, 1)
	return putKept(ctx, tx, tableUsageEvents, pk, ew.w.vals[i]) // encoded once, never changed
}

// supersede deletes the event of the account whose customerEventId is cevid:
// one sent with that explicit customerEventId (looked up unless noExplicit),
// or one sent without any whose id is cevid (looked up unless fresh: cevid
// is the id of the event being stored). Events stored earlier in the same
// run count.
func (ew *eventWriter) supersede(ctx context.Context, tx Tx, cevid string, noExplicit, fresh bool) error {
	if !noExplicit {
		k := append(append([]byte(nil), ew.acct...), cevid...)
		pk, err := tx.Get(ctx, tableUsageEventKeys, k)
		switch {
		case err == nil:
			if err := tx.Delete(ctx, tableUsageEventKeys, k); err != nil {
				return err
			}
			spot, err := ew.ids.find(ctx, tx, pk[12:])
			if err == nil && spot.loc == nil {
				err = errors.New("billing: usage event missing from the id index")
			}
			if err != nil {
				return err
			}
			return ew.delete(ctx, tx, pk, spot)
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
	spot, err := ew.ids.find(ctx, tx, id)
	if err != nil || spot.loc == nil {
		return err
	}
	pk := append(append(make([]byte, 0, 12+len(id)), spot.loc...), id...)
	v, err := tx.Get(ctx, tableUsageEvents, pk)
	if err != nil {
		return err
	}
	if eventcodec.HasExplicitID(v) {
		return nil // its customerEventId is another one: not the same event
	}
	return ew.delete(ctx, tx, pk, spot)
}

// delete removes the event stored under primary key pk, and its entries
// of the id index (found at spot) and of its alias's (usagealiasids.go).
func (ew *eventWriter) delete(ctx context.Context, tx Tx, pk []byte, spot idSpot) error {
	if err := tx.Delete(ctx, tableUsageEvents, pk); err != nil {
		return err
	}
	name, err := seriesNameOf(ctx, tx, pk[:4])
	if err != nil {
		return err
	}
	ew.ids.dropAlias(name.alias, spot, pk[12:])
	ew.ids.drop(spot)
	ew.count(name, -1)
	return ew.rollups.deleted(ctx, tx, name.eventType, pk)
}

// encodeEvent encodes what the key does not hold: the explicit
// customerEventId ("" when it defaulted to the id) and the properties,
// sorted by name.
func encodeEvent(cevid string, props EventProperties) []byte {
	return appendEvent(make([]byte, 0, 16+len(cevid)+24*len(props)), cevid, props)
}

// appendEvent appends the encoding of encodeEvent to b.
func appendEvent(b []byte, cevid string, props EventProperties) []byte {
	var l propertyList
	if l.read(props) {
		return l.appendEvent(b, cevid)
	}
	b = eventcodec.AppendHeader(b, cevid, len(props))
	var small [8]string
	names := small[:0]
	for k := range props {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		b = eventcodec.AppendString(b, k)
		v := props[k]
		b = appendProperty(b, &v)
	}
	return b
}

// appendEvent is appendEvent of l's properties.
func (l *propertyList) appendEvent(b []byte, cevid string) []byte {
	b = eventcodec.AppendHeader(b, cevid, l.n)
	for j := range l.n {
		b = eventcodec.AppendString(b, l.names[j])
		b = appendProperty(b, &l.vals[j])
	}
	return b
}

func appendProperty(b []byte, v *PropertyValue) []byte {
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
