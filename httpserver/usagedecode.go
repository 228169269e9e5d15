package httpserver

import (
	"slices"
	"time"
	"unicode/utf8"

	"github.com/billingd/billing"
)

// The usage-event bodies (POST /usage-events and /usage-events/batch) are
// the hot bodies of the API: a batch holds up to 1,000 events, and the
// strict decoder (decodeJSON: a syntax check, a reflective walk, then
// encoding/json) was most of a batch request's CPU. The functions below are
// a FAST PATH for exactly those two shapes, not a second decoder of the
// API's rules: each accepts only a well-formed body whose every member it
// is sure of, and produces the params decodeJSON would; on anything else
// (escapes, null, duplicate or unknown members, wrong types, numbers or
// timestamps its callee refuses, invalid UTF-8, trailing data...) it
// declines, and the request goes through decodeJSON, so error messages and
// field paths stay those of the one strict decoder. The differential test
// and fuzz targets of usagedecode_test.go check that for any input the fast
// path either declines or agrees with decodeJSON.

// bindUsage decodes c's body into p through fast when the body is plain
// application/json that fast accepts, and through c.bind (the Content-Type
// check and the strict decoder) otherwise.
func bindUsage[P any](c *call, p *P, fast func(body []byte, p *P) bool) error {
	if c.contentType == "application/json" && fast(c.body, p) {
		return nil
	}
	var zero P
	*p = zero // whatever the fast path decoded before it declined
	return c.bind(p)
}

// fastUsageEvent decodes the body of POST /usage-events; false means
// "use decodeJSON".
func fastUsageEvent(body []byte, p *billing.UsageEventParams) bool {
	d := usageDecoder{b: body}
	d.ws()
	if !d.event(p) {
		return false
	}
	d.ws()
	return d.i == len(d.b)
}

// fastUsageEventBatch decodes the body of POST /usage-events/batch; false
// means "use decodeJSON".
func fastUsageEventBatch(body []byte, p *billing.UsageEventBatchParams) bool {
	return new(batchScratch).decode(body, p)
}

// decode is fastUsageEventBatch with the events, property maps, timestamps
// and property names taken from sc (reused from an earlier batch, see
// batchScratch); p then points into sc until sc is released.
func (sc *batchScratch) decode(body []byte, p *billing.UsageEventBatchParams) bool {
	sc.usedProps, sc.times = 0, sc.times[:0]
	d := usageDecoder{b: body, sc: sc}
	d.ws()
	if !d.byte('{') {
		return false
	}
	d.ws()
	if d.byte('}') {
		d.ws()
		return d.i == len(d.b)
	}
	if !d.name("events") {
		return false
	}
	d.ws()
	if !d.byte('[') {
		return false
	}
	if sc.events == nil {
		// About 150 bytes per event in the usual bodies; a guess, not a limit.
		sc.events = make([]billing.UsageEventParams, 0, min(len(body)/128+1, billing.MaxUsageEventBatch))
	}
	p.Events = sc.events[:0]
	defer func() { sc.events = p.Events[:0] }()
	d.ws()
	if !d.byte(']') {
		for {
			p.Events = append(p.Events, billing.UsageEventParams{})
			d.ws()
			if !d.event(&p.Events[len(p.Events)-1]) {
				return false
			}
			d.ws()
			if d.byte(']') {
				break
			}
			if !d.byte(',') {
				return false
			}
		}
	}
	d.ws()
	if !d.byte('}') {
		return false
	}
	d.ws()
	return d.i == len(d.b)
}

// batchScratch is the memory one batch request decodes into and encodes
// its answer into: the events' params, their property maps (a map per
// event was the largest allocation of a batch), their timestamps, the
// interned property names and the answer's buffer. A request takes one
// (newBatchScratch) and gives it back once its answer is written (or
// refused), when nothing of the request reads it any more; the next batch
// then overwrites it. Strings are never taken from it: every string
// decoded is a copy of the body's bytes, so nothing aliases the body or a
// reused buffer.
type batchScratch struct {
	events    []billing.UsageEventParams
	props     []billing.EventProperties // handed out in order, props[:usedProps] to this batch
	usedProps int
	times     []time.Time // the events' timestamps; EventTimestamp points into it
	names     map[string]string
	lastNames [8]string // the property names of the last event, in order
	answer    []byte
}

// batchScratches holds the batchScratch of finished requests: a few, as
// many as batches usually run at once. Not a sync.Pool: a batch allocates
// enough (the store's work) for a collection to run during almost every
// request, and a sync.Pool loses its items to the second collection after
// they were put, so one client's next batch would often find it empty.
var batchScratches = make(chan *batchScratch, 4)

// newBatchScratch returns a released batchScratch, or a new one.
func newBatchScratch() *batchScratch {
	select {
	case sc := <-batchScratches:
		return sc
	default:
		return new(batchScratch)
	}
}

// maxPooledBatchAnswer is the largest answer buffer a batchScratch keeps
// (a batch of 1,000 events answers with about 300 KB).
const maxPooledBatchAnswer = 4 << 20

// release puts sc back into batchScratches; the caller must not use sc, or
// anything decoded into it, afterwards.
func (sc *batchScratch) release() {
	if cap(sc.answer) > maxPooledBatchAnswer {
		sc.answer = nil
	}
	select {
	case batchScratches <- sc:
	default: // enough kept
	}
}

// usageDecoder is a cursor over a body. Strings that repeat across the
// events of a batch (aliases, event types, property names) are shared
// rather than allocated again.
type usageDecoder struct {
	b []byte
	i int

	alias, eventType string
	// minute is the "YYYY-MM-DDTHH:MM:" of the last timestamp of the form
	// parseUTCSeconds parses, and minuteStart its instant: the events of a
	// batch are usually close in time, and a timestamp in the same minute
	// then needs only its seconds parsed.
	minute      [17]byte
	minuteStart time.Time
	// sc, for a batch, provides the property maps, timestamps and
	// interned property names; nil for a single event.
	sc *batchScratch
}

// newTime returns a pointer to a copy of t: into the batch's block of
// timestamps while it has room.
func (d *usageDecoder) newTime(t time.Time) *time.Time {
	if d.sc != nil && d.sc.times == nil {
		d.sc.times = make([]time.Time, 0, billing.MaxUsageEventBatch)
	}
	if d.sc == nil || len(d.sc.times) == cap(d.sc.times) {
		// A single event, or more events than a batch may hold (refused
		// later anyway). Not &t: t would then be allocated on every call.
		p := new(time.Time)
		*p = t
		return p
	}
	d.sc.times = append(d.sc.times, t)
	return &d.sc.times[len(d.sc.times)-1]
}

// newProperties returns a property map: for a batch, one of an earlier
// batch's maps, holding what it held then (properties drops what the new
// event does not overwrite: the events of a client are usually alike, and
// overwriting saves clearing, which also reseeds the map).
func (d *usageDecoder) newProperties() billing.EventProperties {
	if d.sc == nil {
		return billing.EventProperties{}
	}
	sc := d.sc
	if sc.usedProps < len(sc.props) {
		m := sc.props[sc.usedProps]
		sc.usedProps++
		return m
	}
	m := billing.EventProperties{}
	sc.props = append(sc.props, m)
	sc.usedProps++
	return m
}

// propertyName consumes the name of an event's j-th property and returns
// it: for a batch, the same string for the same name in every event (a
// copy, never aliasing the body). The names of a batch's events usually
// come in the same order: the name the previous event had at j is tried
// first.
func (d *usageDecoder) propertyName(j int) (string, bool) {
	sc := d.sc
	if sc != nil && j < len(sc.lastNames) && sc.lastNames[j] != "" && d.quoted(sc.lastNames[j]) {
		return sc.lastNames[j], true
	}
	raw, ok := d.raw()
	if !ok || sc == nil {
		return string(raw), ok
	}
	name, ok := sc.names[string(raw)]
	if !ok {
		if sc.names == nil || len(sc.names) >= maxInternedNames {
			sc.names = make(map[string]string)
		}
		name = string(raw)
		sc.names[name] = name
	}
	if j < len(sc.lastNames) {
		sc.lastNames[j] = name
	}
	return name, true
}

// maxInternedNames bounds the property names a batchScratch keeps; past
// it, they are started afresh (another client's names).
const maxInternedNames = 64

// ws skips JSON whitespace.
func (d *usageDecoder) ws() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// byte consumes c if it is next.
func (d *usageDecoder) byte(c byte) bool {
	if d.i < len(d.b) && d.b[d.i] == c {
		d.i++
		return true
	}
	return false
}

// raw consumes a JSON string without escapes or control characters, in
// valid UTF-8, and returns its content (aliasing the body).
func (d *usageDecoder) raw() ([]byte, bool) {
	if !d.byte('"') {
		return nil, false
	}
	start := d.i
	ascii := true
	for ; d.i < len(d.b); d.i++ {
		switch stringByte[d.b[d.i]] {
		case plainByte:
		case quoteByte:
			s := d.b[start:d.i]
			d.i++
			return s, ascii || utf8.Valid(s)
		case refusedByte:
			return nil, false
		default:
			ascii = false
		}
	}
	return nil, false
}

// What a byte is within a JSON string, for raw.
const (
	plainByte   = iota // printable ASCII other than the quote and backslash
	quoteByte          // the closing quote
	refusedByte        // a backslash (an escape) or a control character
	highByte           // part of a UTF-8 sequence, validated at the end
)

// stringByte classifies bytes for raw: a table, one load per byte of a
// body's strings, most of a batch body.
var stringByte = func() (t [256]uint8) {
	for c := range t {
		switch {
		case c == '"':
			t[c] = quoteByte
		case c == '\\' || c < 0x20:
			t[c] = refusedByte
		case c >= 0x80:
			t[c] = highByte
		}
	}
	return t
}()

// quoted consumes the JSON string whose content is s when it comes next,
// written as it is: s is a member name, or a string raw returned before,
// so the string's content is known valid without looking at each byte.
// Most strings of a batch repeat (member and property names, the alias,
// the event type): comparing them whole is much cheaper than scanning.
func (d *usageDecoder) quoted(s string) bool {
	end := d.i + len(s) + 1
	if end >= len(d.b) || d.b[d.i] != '"' || d.b[end] != '"' || string(d.b[d.i+1:end]) != s {
		return false
	}
	d.i = end + 1
	return true
}

// str consumes a plain JSON string (see raw) and returns it, reusing prev
// when equal.
func (d *usageDecoder) str(prev *string) (string, bool) {
	if *prev != "" && d.quoted(*prev) {
		return *prev, true
	}
	s, ok := d.raw()
	if !ok {
		return "", false
	}
	if string(s) != *prev {
		*prev = string(s)
	}
	return *prev, true
}

// name consumes a member name equal to want and the colon after it.
func (d *usageDecoder) name(want string) bool {
	s, ok := d.raw()
	if !ok || string(s) != want {
		return false
	}
	d.ws()
	return d.byte(':')
}

// Members of an event, as bits of a set.
const (
	memberAlias = 1 << iota
	memberType
	memberEventID
	memberTimestamp
	memberProperties
)

// event decodes one event object into p.
func (d *usageDecoder) event(p *billing.UsageEventParams) bool {
	if !d.byte('{') {
		return false
	}
	d.ws()
	if d.byte('}') {
		return true
	}
	var seen int
	for {
		member, ok := d.member()
		if !ok {
			return false
		}
		d.ws()
		if !d.byte(':') {
			return false
		}
		d.ws()
		switch member {
		case memberAlias:
			p.CustomerAlias, ok = d.str(&d.alias)
		case memberType:
			p.EventType, ok = d.str(&d.eventType)
		case memberEventID:
			var s []byte
			s, ok = d.raw()
			p.CustomerEventID = string(s)
		case memberTimestamp:
			p.EventTimestamp, ok = d.timestamp()
		case memberProperties:
			p.EventProperties, ok = d.properties()
		}
		if member == 0 || !ok || seen&member != 0 {
			return false // unknown, refused or given twice
		}
		seen |= member
		d.ws()
		if d.byte('}') {
			return true
		}
		if !d.byte(',') {
			return false
		}
		d.ws()
	}
}

// memberNames are the members of an event, in the order bodies usually
// give them.
var memberNames = [...]struct {
	name string
	bit  int
}{
	{"customerAlias", memberAlias},
	{"eventType", memberType},
	{"customerEventId", memberEventID},
	{"eventTimestamp", memberTimestamp},
	{"eventProperties", memberProperties},
}

// member consumes the name of an event's member and returns its bit; 0 for
// an unknown member.
func (d *usageDecoder) member() (int, bool) {
	for _, m := range memberNames {
		if d.quoted(m.name) {
			return m.bit, true
		}
	}
	name, ok := d.raw() // unknown, or written with escapes (declined then)
	if !ok {
		return 0, false
	}
	for _, m := range memberNames {
		if string(name) == m.name {
			return m.bit, true
		}
	}
	return 0, true
}

// timestamp decodes a JSON string timestamp as time.Time's UnmarshalJSON
// does: the usual "2006-01-02T15:04:05Z" by hand, any other string by
// UnmarshalJSON itself.
func (d *usageDecoder) timestamp() (*time.Time, bool) {
	start := d.i
	s, ok := d.raw()
	if !ok {
		return nil, false
	}
	t, ok := d.sameMinute(s)
	if !ok {
		if t, ok = parseUTCSeconds(s); ok {
			d.minute, d.minuteStart = [17]byte(s[:17]), t.Add(-time.Duration(t.Second())*time.Second)
		}
	}
	if !ok && t.UnmarshalJSON(d.b[start:d.i]) != nil || !billing.TimeInBounds(t) {
		return nil, false // the strict decoder says what is wrong
	}
	return d.newTime(t), true
}

// sameMinute parses s as parseUTCSeconds does when it is in the minute of
// the last one parsed (d.minute); false otherwise.
func (d *usageDecoder) sameMinute(s []byte) (time.Time, bool) {
	if d.minuteStart.IsZero() || len(s) != 20 || s[19] != 'Z' || string(s[:17]) != string(d.minute[:]) {
		return time.Time{}, false
	}
	hi, lo := s[17]-'0', s[18]-'0'
	if hi > 5 || lo > 9 { // also every byte below '0', wrapped around
		return time.Time{}, false
	}
	return d.minuteStart.Add(time.Duration(hi*10+lo) * time.Second), true
}

// parseUTCSeconds parses exactly "YYYY-MM-DDTHH:MM:SSZ"; false for anything
// else, including a valid timestamp of another form.
func parseUTCSeconds(s []byte) (time.Time, bool) {
	if len(s) != 20 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' || s[19] != 'Z' {
		return time.Time{}, false
	}
	var n [6]int
	for k, at := range [6]int{0, 5, 8, 11, 14, 17} {
		width := 2
		if k == 0 {
			width = 4
		}
		for _, c := range s[at : at+width] {
			if c < '0' || c > '9' {
				return time.Time{}, false
			}
			n[k] = n[k]*10 + int(c-'0')
		}
	}
	year, month, day, hour, minute, sec := n[0], n[1], n[2], n[3], n[4], n[5]
	if month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || sec > 59 {
		return time.Time{}, false
	}
	t := time.Date(year, time.Month(month), day, hour, minute, sec, 0, time.UTC)
	if t.Day() != day { // past the end of its month
		return time.Time{}, false
	}
	return t, true
}

// properties decodes an eventProperties object of string, number and
// boolean values.
func (d *usageDecoder) properties() (billing.EventProperties, bool) {
	if !d.byte('{') {
		return nil, false
	}
	props := d.newProperties()
	var names [8]string // the names given, the first 8
	d.ws()
	if d.byte('}') {
		clear(props)
		return props, true
	}
	for j := 0; ; j++ {
		name, ok := d.propertyName(j)
		if !ok {
			return nil, false
		}
		d.ws()
		if !d.byte(':') {
			return nil, false
		}
		d.ws()
		var v billing.PropertyValue
		if !d.property(&v) {
			return nil, false
		}
		if j < len(names) {
			if slices.Contains(names[:j], name) {
				return nil, false // given twice
			}
			names[j] = name
			props[name] = v
		} else {
			if j == len(names) {
				keepOnly(props, names[:]) // props now grows with each new name
			}
			n := len(props)
			if props[name] = v; len(props) == n {
				return nil, false // given twice
			}
		}
		d.ws()
		if d.byte('}') {
			if j < len(names) && len(props) != j+1 {
				keepOnly(props, names[:j+1])
			}
			return props, true
		}
		if !d.byte(',') {
			return nil, false
		}
		d.ws()
	}
}

// keepOnly deletes from props every property not named in names.
func keepOnly(props billing.EventProperties, names []string) {
	for k := range props {
		if !slices.Contains(names, k) {
			delete(props, k)
		}
	}
}

// property decodes one property value into v as PropertyValue.UnmarshalJSON
// does (numbers through it).
func (d *usageDecoder) property(v *billing.PropertyValue) bool {
	if d.i >= len(d.b) {
		return false
	}
	switch c := d.b[d.i]; {
	case c == '"':
		s, ok := d.raw()
		*v = billing.StringProperty(string(s))
		return ok
	case c == 't':
		*v = billing.BoolProperty(true)
		return d.literal("true")
	case c == 'f':
		*v = billing.BoolProperty(false)
		return d.literal("false")
	case c == '-' || c >= '0' && c <= '9':
		start := d.i
		return d.number() && v.UnmarshalJSON(d.b[start:d.i]) == nil
	}
	return false
}

// literal consumes want (true or false); what follows is the caller's
// to check (a delimiter, so that "truex" is declined).
func (d *usageDecoder) literal(want string) bool {
	if len(d.b)-d.i < len(want) || string(d.b[d.i:d.i+len(want)]) != want {
		return false
	}
	d.i += len(want)
	return true
}

// number consumes the bytes a number may be made of, and declines a
// leading zero followed by a digit: with it, billing.ParseDecimalNumber's
// grammar, which the caller then applies, is JSON's
// (-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?), and the number is read
// in one pass.
func (d *usageDecoder) number() bool {
	start := d.i
	for d.i < len(d.b) && numberByte[d.b[d.i]] {
		d.i++
	}
	s := d.b[start:d.i]
	if len(s) > 0 && s[0] == '-' {
		s = s[1:]
	}
	return len(s) < 2 || s[0] != '0' || s[1] < '0' || s[1] > '9'
}

// numberByte marks the bytes of a JSON number.
var numberByte = func() (t [256]bool) {
	for _, c := range "0123456789+-.eE" {
		t[c] = true
	}
	return t
}()
