package httpserver

import (
	"slices"
	"time"

	"github.com/billingd/billing"
	"github.com/billingd/billing/internal/appendjson"
)

// The answers of usage-event ingestion echo every stored event: up to 1,000
// per batch. encoding/json would reach each field by reflection and each
// property through two MarshalJSON calls and a map copy; these types append
// the same bytes directly (usageencode_test.go compares them byte for byte
// with encoding/json's output).

// usageEventJSON is the answer of POST /usage-events.
type usageEventJSON struct{ e *billing.UsageEvent }

// MarshalJSON writes the event exactly as encoding/json would.
func (u usageEventJSON) MarshalJSON() ([]byte, error) { return u.AppendJSON(make([]byte, 0, 512)) }

// AppendJSON appends what MarshalJSON writes to b (writeResult sends it
// without encoding/json checking it again).
func (u usageEventJSON) AppendJSON(b []byte) ([]byte, error) {
	var names propertyNames
	return appendUsageEvent(b, u.e, &names)
}

// usageEventsJSON is the answer of POST /usage-events/batch.
type usageEventsJSON billing.Items[billing.UsageEvent]

// MarshalJSON writes {"items":[...]} exactly as encoding/json would.
func (u usageEventsJSON) MarshalJSON() ([]byte, error) {
	return u.AppendJSON(make([]byte, 0, 16+300*len(u.Items)))
}

// AppendJSON appends what MarshalJSON writes to b.
func (u usageEventsJSON) AppendJSON(b []byte) ([]byte, error) {
	if u.Items == nil {
		return append(b, `{"items":null}`...), nil
	}
	b = append(b, `{"items":[`...)
	var names propertyNames
	for i := range u.Items {
		if i > 0 {
			b = append(b, ',')
		}
		start := len(b)
		var err error
		if b, err = appendUsageEvent(b, &u.Items[i], &names); err != nil {
			return nil, err
		}
		if i == 0 {
			// The events of a batch are usually alike: room for the others
			// at the first one's size and a tenth more, grown once.
			b = slices.Grow(b, (len(b)-start+1)*(len(u.Items)-1)*11/10+2)
		}
	}
	return append(b, "]}"...), nil
}

// aheadAnswer is an answer encoded in a goroutine of its own while the
// handler carries on (encodeAhead); AppendJSON waits for it.
type aheadAnswer struct {
	done chan struct{}
	b    []byte
	err  error
	sc   *batchScratch // the request's memory, released once the answer is written
}

// encodeAhead starts encoding a into sc's answer buffer in a new goroutine.
func encodeAhead(a jsonAppender, sc *batchScratch) *aheadAnswer {
	ans := &aheadAnswer{done: make(chan struct{}), sc: sc}
	go func() {
		defer close(ans.done)
		ans.b, ans.err = a.AppendJSON(sc.answer[:0])
	}()
	return ans
}

// AppendJSON appends the encoding to b once it is done; with an empty b it
// returns the encoding's own buffer, valid until written is called.
func (a *aheadAnswer) AppendJSON(b []byte) ([]byte, error) {
	<-a.done
	if a.err != nil {
		return nil, a.err
	}
	if len(b) == 0 {
		return a.b, nil
	}
	return append(b, a.b...), nil
}

// MarshalJSON returns the encoding once it is done.
func (a *aheadAnswer) MarshalJSON() ([]byte, error) { return a.AppendJSON(nil) }

// written is called by writeResult once the answer has been written: the
// encoding and the request's decoded events are released for the next
// batch. An answer that is not written that way (an encoding error, or
// one stored for an Idempotency-Key) is left to the garbage collector: its
// memory is then simply not reused.
func (a *aheadAnswer) written() {
	<-a.done // the encoder reads the events until then
	if a.err == nil {
		a.sc.answer = a.b
	}
	a.sc.release()
}

// propertyNames are the property names of an event, sorted: encoding/json's
// map key order.
type propertyNames struct {
	buf   [8]string // most events have a few properties: no allocation
	names []string
}

// of returns the names of props, sorted: the names it returned for the
// event before when props has exactly those (most events of a batch have
// the same: then the map is neither iterated nor its names sorted).
func (n *propertyNames) of(props billing.EventProperties) []string {
	if len(n.names) > 0 && len(n.names) == len(props) {
		same := true
		for _, k := range n.names {
			if _, ok := props[k]; !ok {
				same = false
				break
			}
		}
		if same {
			return n.names
		}
	}
	n.names = n.buf[:0]
	for k := range props {
		n.names = append(n.names, k)
	}
	slices.Sort(n.names)
	return n.names
}

// appendUsageEvent appends e in the field order and form of its struct;
// names carries the property names of the event before.
func appendUsageEvent(b []byte, e *billing.UsageEvent, names *propertyNames) ([]byte, error) {
	b = appendjson.Member(b, `{"id":`, e.ID)
	b = appendjson.Member(b, `,"serviceAccountId":`, e.ServiceAccountID)
	b = appendjson.Member(b, `,"customerEventId":`, e.CustomerEventID)
	b = appendjson.Member(b, `,"customerAlias":`, e.CustomerAlias)
	b = appendjson.Member(b, `,"eventType":`, e.EventType)
	b = append(b, `,"eventTimestamp":`...)
	if y := e.EventTimestamp.Year(); y < 0 || y > 9999 {
		ts, err := e.EventTimestamp.MarshalJSON() // its error, as encoding/json reports it
		if err != nil {
			return nil, err
		}
		b = append(b, ts...)
	} else {
		b = append(b, '"')
		b = e.EventTimestamp.AppendFormat(b, time.RFC3339Nano)
		b = append(b, '"')
	}
	b = append(b, `,"eventProperties":{`...)
	for i, k := range names.of(e.EventProperties) {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendjson.String(b, k)
		b = append(b, ':')
		b = e.EventProperties[k].AppendJSON(b)
	}
	return append(b, "}}"...), nil
}
