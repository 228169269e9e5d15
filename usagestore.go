package billing

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/billingd/billing/internal/cache"
	"github.com/google/uuid"
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

const (
	idKindUUID byte = 'u'
	idKindText byte = 't'

	// Property value tags of the event encoding.
	tagString byte = 's'
	tagTrue   byte = 'T'
	tagFalse  byte = 'F'
	tagSmall  byte = 'n' // coefficient and exponent as zig-zag varints, length-prefixed
	tagBig    byte = 'N' // the decimal's text

	eventEncodingV1 byte = 1
)

// counterKey is the key of the last number handed out in a numbering table;
// no account id or series key is empty or starts with 0x00.
var counterKey = []byte{0}

func encodeEventID(id string) []byte { return appendEventID(nil, id) }

// appendEventID appends the stored form of id to b. A UUID counts only in
// its canonical text form (lowercase, hyphenated), the one uuid.UUID.String
// writes back; it is checked and decoded in one pass over a table.
func appendEventID(b []byte, id string) []byte {
	if len(id) == 36 && id[8] == '-' && id[13] == '-' && id[18] == '-' && id[23] == '-' {
		var u [17]byte
		u[0] = idKindUUID
		var bad byte
		for i, p := range uuidHexAt {
			hi, lo := hexDigit[id[p]], hexDigit[id[p+1]]
			bad |= hi | lo
			u[i+1] = hi<<4 | lo
		}
		if bad < 16 { // no 0xff: every digit was one of 0-9a-f
			return append(b, u[:]...)
		}
	}
	return append(append(b, idKindText), id...)
}

// uuidHexAt holds where each byte's two hex digits start in a canonical
// UUID.
var uuidHexAt = [16]uint8{0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34}

// hexDigit maps a lowercase hex digit to its value and every other byte to
// 0xff.
var hexDigit = func() (t [256]byte) {
	for i := range t {
		t[i] = 0xff
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = byte(c - '0')
	}
	for c := 'a'; c <= 'f'; c++ {
		t[c] = byte(c - 'a' + 10)
	}
	return t
}()

func decodeEventID(b []byte) (string, error) {
	switch {
	case len(b) == 17 && b[0] == idKindUUID:
		return uuid.UUID(b[1:]).String(), nil
	case len(b) > 1 && b[0] == idKindText:
		return string(b[1:]), nil
	}
	return "", errors.New("billing: malformed usage event id")
}

// appendTime appends t's Unix seconds as 8 big-endian bytes, sign bit
// flipped so that byte order is time order before 1970 too.
func appendTime(b []byte, t time.Time) []byte {
	return binary.BigEndian.AppendUint64(b, uint64(t.Unix())^(1<<63))
}

func readTime(b []byte) time.Time {
	return time.Unix(int64(binary.BigEndian.Uint64(b)^(1<<63)), 0).UTC()
}

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
	v = binary.BigEndian.AppendUint32(nil, uint32(n))
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
		buf = appendEventID(buf, e.ID)
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
	buf = appendTime(append(buf, series...), e.EventTimestamp)
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
	id := encodeEventID(cevid)
	if id[0] != idKindUUID {
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
	if explicit, _ := binary.Uvarint(v[1:]); explicit != 0 {
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
	b = append(b, eventEncodingV1)
	b = appendString(b, cevid)
	b = binary.AppendUvarint(b, uint64(len(props)))
	var small [8]string
	names := small[:0]
	for k := range props {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		b = appendString(b, k)
		b = appendProperty(b, props[k])
	}
	return b
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

func appendProperty(b []byte, v PropertyValue) []byte {
	switch v.kind {
	case PropertyString:
		return appendString(append(b, tagString), v.str)
	case PropertyBool:
		if v.b {
			return append(b, tagTrue)
		}
		return append(b, tagFalse)
	}
	d := &v.num.d
	if d.Coeff.IsInt64() {
		c := d.Coeff.Int64()
		if d.Negative {
			c = -c
		}
		var tmp [2 * binary.MaxVarintLen64]byte
		payload := binary.AppendVarint(binary.AppendVarint(tmp[:0], c), int64(d.Exponent))
		return appendString(append(b, tagSmall), string(payload))
	}
	return appendString(append(b, tagBig), v.num.String())
}

// eventReader walks an encoded event without allocating.
type eventReader struct {
	b   []byte
	err error
}

func (r *eventReader) uvarint() uint64 {
	if len(r.b) > 0 && r.b[0] < 0x80 { // the common one-byte case, inlined
		n := r.b[0]
		r.b = r.b[1:]
		return uint64(n)
	}
	return r.uvarintSlow()
}

func (r *eventReader) uvarintSlow() uint64 {
	n, w := binary.Uvarint(r.b)
	if w <= 0 {
		r.fail()
		return 0
	}
	r.b = r.b[w:]
	return n
}

func (r *eventReader) bytes() []byte {
	n := r.uvarint()
	if r.err != nil || n > uint64(len(r.b)) {
		r.fail()
		return nil
	}
	s := r.b[:n]
	r.b = r.b[n:]
	return s
}

func (r *eventReader) fail() {
	if r.err == nil {
		r.err = errors.New("billing: malformed usage event record")
	}
	r.b = nil
}

// rawProperty is one encoded property value: a tag and its payload bytes
// (the string, the decimal text, or the two varints). Every payload but a
// boolean's is length-prefixed, so skipping a property never parses it.
type rawProperty struct {
	tag     byte
	payload []byte
}

// next reads one property name and value.
func (r *eventReader) next() (name []byte, v rawProperty) {
	name = r.bytes()
	if r.err != nil || len(r.b) == 0 {
		r.fail()
		return nil, v
	}
	v.tag, r.b = r.b[0], r.b[1:]
	switch v.tag {
	case tagString, tagBig, tagSmall:
		v.payload = r.bytes()
	case tagTrue, tagFalse:
	default:
		r.fail()
	}
	return name, v
}

// openEvent reads the header of an encoded event and returns a reader
// positioned at its properties, with their count.
func openEvent(v []byte) (r eventReader, cevid []byte, n int) {
	if len(v) == 0 || v[0] != eventEncodingV1 {
		r.fail()
		return r, nil, 0
	}
	r.b = v[1:]
	cevid = r.bytes()
	return r, cevid, int(r.uvarint())
}

// decodeProperty turns a raw value into a PropertyValue.
func (v rawProperty) decode() (PropertyValue, error) {
	switch v.tag {
	case tagString:
		return StringProperty(string(v.payload)), nil
	case tagTrue, tagFalse:
		return BoolProperty(v.tag == tagTrue), nil
	case tagBig:
		d, err := ParseDecimalNumber(string(v.payload))
		return NumberProperty(d), err
	}
	c, exp := smallNumber(v.payload)
	var d Decimal
	d.d.SetFinite(c, int32(exp))
	return NumberProperty(d), nil
}

// smallNumber decodes the payload of a tagSmall value: two zig-zag
// varints. It runs once per event in a SUM, so it decodes in place rather
// than through binary.Varint; a malformed payload (never written) yields 0.
func smallNumber(p []byte) (coeff, exp int64) {
	switch {
	case len(p) == 2 && p[0] < 0x80 && p[1] < 0x80: // one-byte zig-zag varints
		return int64(p[0]>>1) ^ -int64(p[0]&1), int64(p[1]>>1) ^ -int64(p[1]&1)
	case len(p) == 3 && p[0] >= 0x80 && p[1] < 0x80 && p[2] < 0x80: // |coefficient| < 8192, such as 12.34
		u := uint64(p[0]&0x7f) | uint64(p[1])<<7
		return int64(u>>1) ^ -int64(u&1), int64(p[2]>>1) ^ -int64(p[2]&1)
	}
	c, i := zigzag(p, 0)
	e, _ := zigzag(p, i)
	return c, e
}

// zigzag decodes the zig-zag varint at p[i:] and returns the index after it.
func zigzag(p []byte, i int) (int64, int) {
	var u uint64
	for shift := uint(0); i < len(p) && shift < 64; shift += 7 {
		b := p[i]
		i++
		u |= uint64(b&0x7f) << shift
		if b < 0x80 {
			return int64(u>>1) ^ -int64(u&1), i
		}
	}
	return 0, len(p)
}

// decodeUsageEvent rebuilds an event from its primary key and value.
func decodeUsageEvent(account, eventType, alias string, pk, v []byte) (UsageEvent, error) {
	id, err := decodeEventID(pk[12:])
	if err != nil {
		return UsageEvent{}, err
	}
	e := UsageEvent{
		ID: id, ServiceAccountID: account, CustomerAlias: alias, EventType: eventType,
		EventTimestamp: readTime(pk[4:12]), CustomerEventID: id,
	}
	r, cevid, n := openEvent(v)
	if len(cevid) > 0 {
		e.CustomerEventID = string(cevid)
	}
	e.EventProperties = make(EventProperties, n)
	for range n {
		name, raw := r.next()
		if r.err != nil {
			return UsageEvent{}, r.err
		}
		if e.EventProperties[string(name)], err = raw.decode(); err != nil {
			return UsageEvent{}, err
		}
	}
	return e, r.err
}
