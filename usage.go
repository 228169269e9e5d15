package billing

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cockroachdb/apd/v3"

	"github.com/billingd/billing/internal/appendjson"
	"github.com/billingd/billing/internal/eventcodec"
	"github.com/billingd/billing/internal/uuidseq"
)

// Limits of usage events (docs/api-guide.md, "Limits").
const (
	// MaxUsageEventBatch is the largest number of events in one batch.
	MaxUsageEventBatch = 1000
	maxPropertyKeyLen  = 128
	maxPropertyString  = 1024
	// maxEventLead is how far in the future an event timestamp may be.
	maxEventLead = 24 * time.Hour
)

// UsageEvent is one measured occurrence of something a customer did, counted
// by the usage metrics of its event type.
type UsageEvent struct {
	ID string `json:"id"`
	// ServiceAccountID is the account that sent the event.
	ServiceAccountID string `json:"serviceAccountId"`
	// CustomerEventID is the caller's id of the event; a new event with the same
	// id supersedes the old one. The event's own ID when not given.
	CustomerEventID string `json:"customerEventId"`
	// CustomerAlias names the customer by one of its aliases; it need not exist
	// yet.
	CustomerAlias string `json:"customerAlias"`
	// EventType selects the usage metrics that count the event.
	EventType string `json:"eventType"`
	// EventTimestamp is when the usage happened (UTC); it decides the period the
	// event is billed in. Defaults to the time of ingestion.
	EventTimestamp time.Time `json:"eventTimestamp"`
	// EventProperties are the event's named values (strings, exact numbers,
	// booleans) that metrics filter, group and aggregate on.
	EventProperties EventProperties `json:"eventProperties"`
}

// EventProperties are the properties of a usage event: string, number or
// boolean values by name.
type EventProperties map[string]PropertyValue

// MarshalJSON writes the properties as an object, {} when there are none.
func (p EventProperties) MarshalJSON() ([]byte, error) {
	if p == nil {
		return []byte("{}"), nil
	}
	return json.Marshal(map[string]PropertyValue(p))
}

// PropertyKind is the JSON type of a property value.
type PropertyKind uint8

// The kinds of property values. The zero kind is an invalid value (a JSON
// null, object or array), which validation rejects.
const (
	PropertyInvalid PropertyKind = iota
	PropertyString
	PropertyNumber
	PropertyBool
)

// PropertyValue is one event property value: a string, an exact decimal
// number (never a float) or a boolean.
type PropertyValue struct {
	str  string
	num  Decimal
	kind PropertyKind
	b    bool
}

// StringProperty returns a string property value.
func StringProperty(s string) PropertyValue { return PropertyValue{kind: PropertyString, str: s} }

// NumberProperty returns a number property value.
func NumberProperty(d Decimal) PropertyValue { return PropertyValue{kind: PropertyNumber, num: d} }

// BoolProperty returns a boolean property value.
func BoolProperty(b bool) PropertyValue { return PropertyValue{kind: PropertyBool, b: b} }

// Kind returns the JSON type of v.
func (v PropertyValue) Kind() PropertyKind { return v.kind }

// String renders v as filters, UNIQUE and grouping compare it: strings as
// they are, numbers in canonical decimal form, booleans "true" or "false".
func (v PropertyValue) String() string {
	switch v.kind {
	case PropertyString:
		return v.str
	case PropertyNumber:
		return v.num.Canonical()
	case PropertyBool:
		if v.b {
			return "true"
		}
		return "false"
	}
	return ""
}

// Number returns v as a number, as SUM reads it: a JSON number, or a string
// holding a decimal in the wire grammar. ok is false for anything else.
func (v PropertyValue) Number() (d Decimal, ok bool) {
	switch v.kind {
	case PropertyNumber:
		return v.num, true
	case PropertyString:
		d, err := ParseDecimal(v.str)
		return d, err == nil
	}
	return Decimal{}, false
}

// Bool returns v as a boolean; ok is false when v is not a boolean.
func (v PropertyValue) Bool() (b, ok bool) { return v.b, v.kind == PropertyBool }

// MarshalJSON writes a string, a JSON number exactly as received
// (normalised), or a boolean. Value receiver, so map values use it.
func (v PropertyValue) MarshalJSON() ([]byte, error) { return v.AppendJSON(nil), nil }

// AppendJSON appends what MarshalJSON writes to b, without allocating for
// the usual values (a batch's answer echoes every property of every event).
func (v PropertyValue) AppendJSON(b []byte) []byte {
	switch v.kind {
	case PropertyString:
		return appendjson.String(b, v.str)
	case PropertyNumber:
		if v.num.d.Form == apd.Finite && !v.num.d.IsZero() {
			return v.num.d.Append(b, 'f') // what String writes, appended
		}
		return append(b, v.num.String()...)
	case PropertyBool:
		return strconv.AppendBool(b, v.b)
	}
	return append(b, "null"...)
}

// UnmarshalJSON reads a string, a number (exactly, from its text) or a
// boolean; anything else is a validation_failed *Error.
func (v *PropertyValue) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return validationError("must be a string, number or boolean")
	}
	switch c := b[0]; {
	case c == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return validationError("must be a valid JSON string")
		}
		*v = StringProperty(s)
	case c == 't' || c == 'f':
		*v = BoolProperty(c == 't')
	case c == '-' || c >= '0' && c <= '9':
		*v = PropertyValue{kind: PropertyNumber}
		return parseNumber(&v.num, string(b)) // in place: see fromDigits
	default:
		return validationError("must be a string, number or boolean (nested objects, arrays and null are not allowed)")
	}
	return nil
}

// UsageEventParams is one usage event to record.
type UsageEventParams struct {
	// CustomerAlias is required; it need not belong to a customer yet.
	CustomerAlias string `json:"customerAlias"`
	// EventType is required.
	EventType string `json:"eventType"`
	// CustomerEventID, when set, supersedes an earlier event of the
	// account with the same customerEventId. Defaults to the event id.
	CustomerEventID string `json:"customerEventId"`
	// EventTimestamp defaults to now; at most 24 hours in the future.
	EventTimestamp *time.Time `json:"eventTimestamp"`
	// EventProperties are optional.
	EventProperties EventProperties `json:"eventProperties"`
}

// UsageEventBatchParams is the body of a batch ingestion: 1 to
// MaxUsageEventBatch events.
type UsageEventBatchParams struct {
	// Events are ingested in one transaction, at most 1,000; one invalid event
	// refuses the batch, naming it.
	Events []UsageEventParams `json:"events"`
}

// UsageEventFilter selects usage events in ListUsageEvents. Empty fields do
// not filter.
type UsageEventFilter struct {
	// CustomerAlias keeps the events of one alias; empty keeps all.
	CustomerAlias string
	// EventType keeps the events of one type; empty keeps all.
	EventType string
	// EventTimestampAfter keeps events at or after this instant.
	EventTimestampAfter *time.Time
	// EventTimestampBefore keeps events strictly before this instant.
	EventTimestampBefore *time.Time
}

// validateUsageEvent checks p and sets *e to the event it describes,
// stamped with id and the timestamp (now when p has none). ec, for the
// events of a batch, carries what earlier events of the batch found valid
// (nil: check everything).
func (s *Service) validateUsageEvent(e *UsageEvent, v *validator, field string, account, id string, now time.Time, p *UsageEventParams, ec *eventCheck) {
	at := func(name string) string { return joinField(field, name) }
	if ec == nil || p.CustomerAlias != ec.alias || p.CustomerAlias == "" {
		n := len(v.errs)
		checkKey(v, at("customerAlias"), p.CustomerAlias, true)
		if strings.Contains(p.CustomerAlias, ",") {
			v.add(at("customerAlias"), "customerAlias must not contain commas")
		}
		if ec != nil && len(v.errs) == n {
			ec.alias = p.CustomerAlias
		}
	}
	if ec == nil || p.EventType != ec.eventType || p.EventType == "" {
		n := len(v.errs)
		checkKey(v, at("eventType"), p.EventType, true)
		if ec != nil && len(v.errs) == n {
			ec.eventType = p.EventType
		}
	}
	checkKey(v, at("customerEventId"), p.CustomerEventID, false)
	ts := now
	if p.EventTimestamp != nil {
		ts = NormalizeTime(*p.EventTimestamp)
		v.check(!ts.After(now.Add(maxEventLead)), at("eventTimestamp"), "eventTimestamp must not be more than 24 hours in the future")
		checkTime(v, at("eventTimestamp"), ts)
	}
	s.validateProperties(v, at("eventProperties"), p.EventProperties, ec)
	*e = UsageEvent{
		ID: id, ServiceAccountID: account, CustomerEventID: p.CustomerEventID,
		CustomerAlias: p.CustomerAlias, EventType: p.EventType, EventTimestamp: ts,
		EventProperties: p.EventProperties,
	}
	if e.CustomerEventID == "" {
		e.CustomerEventID = id
	}
}

func (s *Service) validateProperties(v *validator, field string, props EventProperties, ec *eventCheck) {
	if ec != nil {
		ec.listed = len(props) <= s.limits.MaxEntries && ec.props.read(props) && ec.propertiesValid()
		if ec.listed {
			return // the usual case of a batch: one pass over the map
		}
	}
	if len(props) <= s.limits.MaxEntries && propertiesValid(props) {
		return // the usual case: no sorting, no field paths
	}
	if len(props) > s.limits.MaxEntries {
		v.add(field, "eventProperties must have at most %d properties", s.limits.MaxEntries)
	}
	for _, k := range sortedKeys(props) {
		f := joinField(field, k)
		badName, badValue := checkProperty(k, props[k])
		switch badName {
		case badLength:
			v.add(f, "property names must be 1 to %d characters", maxPropertyKeyLen)
		case badCharacters:
			v.add(f, "property names must contain printable characters only")
		}
		switch badValue {
		case badKind:
			v.add(f, "%s must be a string, number or boolean", f)
		case badString:
			v.add(f, "string values must be valid UTF-8 of at most %d characters", maxPropertyString)
		}
	}
}

// What is wrong with a property name or value (checkProperty).
const (
	propertyOK = iota
	badLength
	badCharacters
	badKind
	badString
)

// checkProperty checks one property: its name (propertyOK, badLength or
// badCharacters) and its value (propertyOK, badKind or badString).
func checkProperty(k string, pv PropertyValue) (name, value int) {
	if plainProperty(k, pv) {
		return propertyOK, propertyOK
	}
	return checkPropertyRules(k, pv)
}

// plainProperty reports, in one pass over each string, whether the usual
// property is fine: a name of printable ASCII and a number, a boolean or
// an ASCII string (as many characters as bytes, valid UTF-8).
func plainProperty(k string, pv PropertyValue) bool {
	return plainName(k) && plainValue(&pv)
}

// plainName is plainProperty's test of a name.
func plainName(k string) bool {
	return len(k) > 0 && len(k) <= maxPropertyKeyLen && printableASCII(k)
}

// plainValue is plainProperty's test of a value.
func plainValue(pv *PropertyValue) bool {
	switch pv.kind {
	case PropertyNumber, PropertyBool:
		return true
	case PropertyString:
		return len(pv.str) <= maxPropertyString && ascii(pv.str)
	}
	return false
}

// checkPropertyRules is checkProperty for any property.
func checkPropertyRules(k string, pv PropertyValue) (name, value int) {
	n := utf8.RuneCountInString(k)
	switch {
	case n == 0 || n > maxPropertyKeyLen || !utf8.ValidString(k):
		name = badLength
	case strings.ContainsFunc(k, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		name = badCharacters
	}
	switch pv.kind {
	case PropertyInvalid:
		value = badKind
	case PropertyString:
		if !utf8.ValidString(pv.str) || utf8.RuneCountInString(pv.str) > maxPropertyString {
			value = badString
		}
	}
	return name, value
}

// printableASCII reports whether every byte of s is printable ASCII
// (0x20 to 0x7e): then s is valid UTF-8 without control characters, with
// as many characters as bytes.
func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f {
			return false
		}
	}
	return true
}

// ascii reports whether every byte of s is ASCII: then s is valid UTF-8
// with as many characters as bytes.
func ascii(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// eventCheck is what the validation of a batch's events carries from one
// event to the next: the strings earlier events had that were found valid,
// which the events repeating them (most of a batch: one customer, one event
// type, the same property names) need not have checked again, and the
// current event's properties read in name order, which its record is then
// encoded from (usageWrite.encode).
type eventCheck struct {
	alias, eventType string
	names            [maxListed]string // valid property names seen, the first maxListed
	nNames           int
	props            propertyList
	listed           bool // props holds the current event's properties, all valid
}

// propertiesValid reports whether checkProperty accepts every property of
// ec.props, checking only the names not seen valid before.
func (ec *eventCheck) propertiesValid() bool {
	l := &ec.props
	for j := range l.n {
		if !plainValue(&l.vals[j]) {
			return false
		}
		k := l.names[j]
		if j < ec.nNames && ec.names[j] == k || slices.Contains(ec.names[:ec.nNames], k) {
			continue
		}
		if !plainName(k) {
			return false
		}
		if ec.nNames < len(ec.names) {
			ec.names[ec.nNames] = k
			ec.nNames++
		}
	}
	return true
}

// list returns the current event's properties in name order, or nil when
// they were not read so (see listed).
func (ec *eventCheck) list() *propertyList {
	if !ec.listed {
		return nil
	}
	return &ec.props
}

// propertyList is an event's properties in name order, read from its map
// in one pass: what validating and encoding them needs, without looking
// each name up again.
type propertyList struct {
	n     int
	names [maxListed]string
	vals  [maxListed]PropertyValue
}

// maxListed is the most properties a propertyList holds (most events have
// a few); events with more take the map's way.
const maxListed = 8

// read fills l with props, sorted by name; false when they are too many.
func (l *propertyList) read(props EventProperties) bool {
	if len(props) > maxListed {
		return false
	}
	if l.n > 0 && l.n == len(props) && l.lookUp(props) {
		return true
	}
	l.n = 0
	for k, v := range props {
		l.names[l.n], l.vals[l.n] = k, v
		l.n++
	}
	for i := 1; i < l.n; i++ { // insertion sort: a few names
		for j := i; j > 0 && l.names[j] < l.names[j-1]; j-- {
			l.names[j], l.names[j-1] = l.names[j-1], l.names[j]
			l.vals[j], l.vals[j-1] = l.vals[j-1], l.vals[j]
		}
	}
	return true
}

// lookUp fills l's values with props' values of l's names, when props has
// every one of them: props then has the names l holds (as many, all
// distinct), in the same order. The events of a batch usually have the
// property names of the one before: looked up so, their map need not be
// iterated (which draws a random starting point each time) nor their names
// sorted.
func (l *propertyList) lookUp(props EventProperties) bool {
	for j := range l.n {
		v, ok := props[l.names[j]]
		if !ok {
			return false
		}
		l.vals[j] = v
	}
	return true
}

// propertiesValid reports whether checkProperty accepts every property.
func propertiesValid(props EventProperties) bool {
	for k, pv := range props {
		if name, value := checkProperty(k, pv); name != propertyOK || value != propertyOK {
			return false
		}
	}
	return true
}

// CreateUsageEvent records one usage event and returns it once it is
// durably committed; concurrent calls share commits. An event with the
// customerEventId of an earlier event of the account replaces it. Returns
// validation_failed for invalid fields (all at once).
func (s *Service) CreateUsageEvent(ctx context.Context, account string, p UsageEventParams) (*UsageEvent, error) {
	var v validator
	var e UsageEvent
	s.validateUsageEvent(&e, &v, "", account, s.newID(), s.clock(), &p, nil)
	if err := v.err(); err != nil {
		return nil, err
	}
	w := prepareUsageWrite(account, []UsageEvent{e})
	out, err := mutateBatch(ctx, s, account, func(tx Tx) (*UsageEvent, error) {
		return &w.events[0], s.putUsageEvents(ctx, tx, w)
	})
	if err == nil {
		s.nums.Learn(account, w.learnedAcct, w.learnedSeries)
		s.observeIngested(len(w.events))
	}
	return out, err
}

// CreateUsageEventBatch records 1 to MaxUsageEventBatch usage events, all
// or none, and returns them in request order once durably committed. A later
// event of the batch supersedes an earlier one with the same
// customerEventId. Returns validation_failed naming every bad field as
// events[i].field, and then stores nothing.
func (s *Service) CreateUsageEventBatch(ctx context.Context, account string, p UsageEventBatchParams) (Items[UsageEvent], error) {
	return s.CreateUsageEventBatchFunc(ctx, account, p, nil)
}

// CreateUsageEventBatchFunc is CreateUsageEventBatch calling accepted (when
// not nil) with the events it is about to store, validated and with their
// ids and timestamps, before its transaction starts: the events it returns
// after the commit are exactly these. A caller can so prepare its answer
// while the batch commits and is synced (the HTTP server encodes its
// response meanwhile). accepted must not modify the events, and must not
// treat them as stored unless the call then returns no error.
func (s *Service) CreateUsageEventBatchFunc(ctx context.Context, account string, p UsageEventBatchParams, accepted func([]UsageEvent)) (Items[UsageEvent], error) {
	var v validator
	if len(p.Events) == 0 || len(p.Events) > MaxUsageEventBatch {
		v.add("events", "events must hold 1 to %d events", MaxUsageEventBatch)
	}
	events := make([]UsageEvent, min(len(p.Events), MaxUsageEventBatch))
	ids, raw := s.newIDs(len(events))
	w := s.takeWrite()
	defer s.releaseWrite(w) // after the transaction: stores copy what they keep
	w.reset(account, events, ids, raw)
	s.checkBatch(&v, w, ids, p.Events)
	if err := v.err(); err != nil {
		return Items[UsageEvent]{}, err
	}
	if accepted != nil {
		accepted(events)
	}
	if s.seriesTx {
		if err := s.createSeries(ctx, account, events); err != nil {
			return Items[UsageEvent]{}, err
		}
	}
	write := mutateBatch[Items[UsageEvent]]
	if len(events) >= ownCommitEvents {
		if s.largeBatches.Add(1) == 1 {
			write = mutate[Items[UsageEvent]]
		}
		defer s.largeBatches.Add(-1)
	}
	out, err := write(ctx, s, account, func(tx Tx) (Items[UsageEvent], error) {
		return Items[UsageEvent]{Items: events}, s.putUsageEvents(ctx, tx, w)
	})
	if err == nil {
		s.nums.Learn(account, w.learnedAcct, w.learnedSeries)
		s.observeIngested(len(w.events))
	}
	return out, err
}

// checkBatch validates the events of a batch (the first len(w.events) of
// p) into w.events, stamped with ids and the clock's time, and encodes
// each one's record right after its checks, while the batch is valid (an
// invalid batch stores nothing). Errors go to v with events[i] field
// paths.
func (s *Service) checkBatch(v *validator, w *usageWrite, ids []string, p []UsageEventParams) {
	now := s.clock()
	var scratch validator
	var ec eventCheck
	for i := range w.events {
		// Field paths are built only for an invalid event: validated
		// again (the same checks, the same id) with its events[i] prefix.
		scratch.errs = scratch.errs[:0]
		s.validateUsageEvent(&w.events[i], &scratch, "", w.account, ids[i], now, &p[i], &ec)
		if len(scratch.errs) > 0 {
			s.validateUsageEvent(&w.events[i], v, fmt.Sprintf("events[%d]", i), w.account, ids[i], now, &p[i], nil)
		}
		if len(v.errs) == 0 {
			w.encode(i, ec.list())
		}
	}
}

// newIDs returns n new ids for the events of a batch: the Service's ids
// (Config.NewID) one by one, or, when they are its own UUIDv7s, one
// sequence drawn with one read of randomness (uuidseq.V7s), with their
// 16 bytes each in raw (nil otherwise).
func (s *Service) newIDs(n int) (ids []string, raw []byte) {
	if s.uuidIDs {
		return uuidseq.V7s(n)
	}
	ids = make([]string, n)
	for i := range ids {
		ids[i] = s.newID()
	}
	return ids, nil
}

// ownCommitEvents is the size from which a batch of events, when no other
// such batch is being ingested, commits in a transaction of its own
// (Store.Update) rather than through group commit (Store.Batch). Group
// commit waits up to its batch delay (2 ms on bbolt) for other writers,
// which a lone client sending batches one after another pays on every
// batch while nothing else is written; a batch this large already spreads
// its commit and fsync over many events. Concurrent large batches still
// share commits.
const ownCommitEvents = 100

// Items is a response holding a list of items and no pagination, such as
// the answer to a batch ingestion: {"items": [...]}.
type Items[T any] struct {
	// Items are the response's items, [] when there are none.
	Items []T `json:"items"`
}

// ListUsageEvents lists the account's usage events, newest first by
// creation (the order of the creation-order index, usagestore.go: by id,
// except that the events of concurrent batches created in the same
// millisecond are listed batch by batch). A list of one alias's events
// reads that alias's own index (usagealiasids.go), in the same order, and
// the account's newest events not yet in it (usagealiastail.go).
// Returns validation_failed for bad limits or cursors.
func (s *Service) ListUsageEvents(ctx context.Context, account string, f UsageEventFilter, p ListParams) (Page[UsageEvent], error) {
	var page Page[UsageEvent]
	err := s.view(ctx, func(tx Tx) error {
		acct, err := number(ctx, tx, tableUsageAccounts, []byte(account), false)
		if errors.Is(err, ErrNotFound) {
			acct = []byte{0, 0, 0, 0} // never handed out: an empty list
		} else if err != nil {
			return err
		}
		names := seriesNames{}
		q := listQuery[usageEventRef]{
			name:    "usage_events",
			filter:  fmt.Sprintf("%q|%q|%v|%v", f.CustomerAlias, f.EventType, f.EventTimestampAfter, f.EventTimestampBefore),
			table:   tableUsageEventIDs,
			prefix:  acct,
			desc:    true,
			seekAsc: idRecordOf,
			count:   func(ctx context.Context, tx Tx) (int, error) { return s.countUsageEvents(ctx, tx, account, acct, &f) },
			expand:  accountScan(ctx, tx, acct, &f, names),
		}
		if f.CustomerAlias != "" {
			if err := aliasList(ctx, tx, &q, acct, &f, names); err != nil {
				return err
			}
		}
		refs, err := list(ctx, s, tx, q, p)
		if err != nil {
			return err
		}
		page = Page[UsageEvent]{After: refs.After, Before: refs.Before, TotalResultSize: refs.TotalResultSize}
		pks := make([][]byte, len(refs.Items))
		for i, r := range refs.Items {
			pks[i] = r.pk
		}
		vals, err := getMany(ctx, tx, tableUsageEvents, pks)
		if err != nil {
			return err
		}
		for i, r := range refs.Items {
			v := vals[i]
			if v == nil {
				return fmt.Errorf("billing: usage event %q of the id index is missing", r.pk)
			}
			e, err := decodeUsageEvent(account, r.eventType, r.alias, r.pk, v)
			if err != nil {
				return err
			}
			page.Items = append(page.Items, e)
		}
		return nil
	})
	return page, err
}

// usageExpand is listQuery.expand of the usage event lists.
type usageExpand = func(k, v []byte, reverse bool, yield func(usageEventRef, []byte) error) error

// accountScan is how a list of the account's events reads a record of its
// creation-order index (usage_event_ids, under prefix acct): the entries
// that pass f, skipping dead ones.
func accountScan(ctx context.Context, tx Tx, acct []byte, f *UsageEventFilter, names seriesNames) usageExpand {
	return func(k, v []byte, reverse bool, yield func(usageEventRef, []byte) error) error {
		return eachIndexEntry(k[len(acct):], v, reverse, func(id, loc, pos []byte) error {
			if deadEntry(loc) {
				return nil // superseded: kept only as the record's key
			}
			ref, ok, err := names.match(ctx, tx, f, id, loc)
			if err != nil || !ok {
				return err
			}
			return yield(ref, pos)
		})
	}
}

// aliasScan is where a list of one alias's events reads: the alias's
// creation-order index (usagealiasids.go), whose positions are the
// account list's, so that the scan visits only the alias's events and
// skips only what the other filters exclude (events of another type, or
// outside the time bounds).
func aliasScan(ctx context.Context, tx Tx, acct []byte, f *UsageEventFilter, names seriesNames) (Table, []byte, usageExpand) {
	if !aliasFilterUsable(f.CustomerAlias) {
		acct = []byte{0, 0, 0, 0} // no event has that alias: an empty list
	}
	pfx := aliasPrefix(acct, f.CustomerAlias)
	return tableUsageAliasIDs, pfx, func(k, v []byte, reverse bool, yield func(usageEventRef, []byte) error) error {
		return eachAliasEntry(k[len(pfx):], v, reverse, func(id, loc, pos []byte) error {
			ref, ok, err := names.match(ctx, tx, f, id, loc)
			if err != nil || !ok {
				return err
			}
			return yield(ref, pos)
		})
	}
}

// usageEventRef is an entry of the id index that matched a list's filters;
// only the page's entries are read in full.
type usageEventRef struct {
	pk               []byte
	eventType, alias string
}

// seriesNames caches series no → (event type, alias) during one list.
type seriesNames map[string][2]string

// match returns the reference of the event id stored at loc (series no |
// timestamp) when it passes f; ok is false when it does not.
func (n seriesNames) match(ctx context.Context, tx Tx, f *UsageEventFilter, id, loc []byte) (usageEventRef, bool, error) {
	ts := eventcodec.ReadTime(loc[4:])
	if f.EventTimestampAfter != nil && ts.Before(NormalizeTime(*f.EventTimestampAfter)) ||
		f.EventTimestampBefore != nil && !ts.Before(NormalizeTime(*f.EventTimestampBefore)) {
		return usageEventRef{}, false, nil
	}
	names, ok := n[string(loc[:4])]
	if !ok {
		v, err := tx.Get(ctx, tableUsageSeriesNames, loc[:4])
		if err != nil {
			return usageEventRef{}, false, err
		}
		et, alias, _ := strings.Cut(string(v), string(rune(keySep)))
		names = [2]string{et, alias}
		n[string(loc[:4])] = names
	}
	if f.EventType != "" && names[0] != f.EventType || f.CustomerAlias != "" && names[1] != f.CustomerAlias {
		return usageEventRef{}, false, nil
	}
	pk := append(append(make([]byte, 0, 12+len(id)), loc...), id...)
	return usageEventRef{pk: pk, eventType: names[0], alias: names[1]}, true, nil
}
