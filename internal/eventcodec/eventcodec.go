// Package eventcodec is the storage encoding of usage events: event ids,
// timestamps and numbers in keys, and the compact record of an event's
// explicit customerEventId and properties. It is read in place by the
// usage calculation (View.Find), so a calculation never decodes an event.
// The key layout that uses it is declared with the tables in package
// billing (store.go, usagestore.go).
package eventcodec

import (
	"encoding/binary"
	"errors"
	"strconv"
	"time"

	"github.com/google/uuid"
)

// The kinds of stored event ids: a UUID as 16 bytes, or any other id as
// its text; and the encoding version of event records.
const (
	IDKindUUID byte = 'u'
	IDKindText byte = 't'

	// Property value tags of the event encoding.
	TagString byte = 's'
	TagTrue   byte = 'T'
	TagFalse  byte = 'F'
	TagSmall  byte = 'n' // coefficient and exponent as zig-zag varints, length-prefixed
	TagBig    byte = 'N' // the decimal's text

	// V1 is the first byte of every event record.
	V1 byte = 1
)

// EncodeID returns the stored form of an event id (see AppendID).
func EncodeID(id string) []byte { return AppendID(nil, id) }

// AppendID appends the stored form of id to b. A UUID counts only in
// its canonical text form (lowercase, hyphenated), the one uuid.UUID.String
// writes back; it is checked and decoded in one pass over a table.
func AppendID(b []byte, id string) []byte {
	if len(id) == 36 && id[8] == '-' && id[13] == '-' && id[18] == '-' && id[23] == '-' {
		var u [17]byte
		u[0] = IDKindUUID
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
	return append(append(b, IDKindText), id...)
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

// DecodeID returns the event id whose stored form is b.
func DecodeID(b []byte) (string, error) {
	switch {
	case len(b) == 17 && b[0] == IDKindUUID:
		return uuid.UUID(b[1:]).String(), nil
	case len(b) > 1 && b[0] == IDKindText:
		return string(b[1:]), nil
	}
	return "", errors.New("eventcodec: malformed usage event id")
}

// AppendTime appends t's Unix seconds as 8 big-endian bytes, sign bit
// flipped so that byte order is time order before 1970 too.
func AppendTime(b []byte, t time.Time) []byte {
	return binary.BigEndian.AppendUint64(b, uint64(t.Unix())^(1<<63))
}

// ReadTime reads a time written by AppendTime.
func ReadTime(b []byte) time.Time {
	return time.Unix(int64(binary.BigEndian.Uint64(b)^(1<<63)), 0).UTC()
}

// AppendString appends s, length-prefixed.
func AppendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// Reader walks an encoded event without allocating.
type Reader struct {
	b []byte
	// Err is the first decoding error met; once set, reads return zero
	// values.
	Err error
}

func (r *Reader) uvarint() uint64 {
	if len(r.b) > 0 && r.b[0] < 0x80 { // the common one-byte case, inlined
		n := r.b[0]
		r.b = r.b[1:]
		return uint64(n)
	}
	return r.uvarintSlow()
}

func (r *Reader) uvarintSlow() uint64 {
	n, w := binary.Uvarint(r.b)
	if w <= 0 {
		r.fail()
		return 0
	}
	r.b = r.b[w:]
	return n
}

func (r *Reader) bytes() []byte {
	n := r.uvarint()
	if r.Err != nil || n > uint64(len(r.b)) {
		r.fail()
		return nil
	}
	s := r.b[:n]
	r.b = r.b[n:]
	return s
}

func (r *Reader) fail() {
	if r.Err == nil {
		r.Err = errors.New("eventcodec: malformed usage event record")
	}
	r.b = nil
}

// Raw is one encoded property value: a tag and its payload bytes
// (the string, the decimal text, or the two varints). Every payload but a
// boolean's is length-prefixed, so skipping a property never parses it.
type Raw struct {
	// Tag says the value's kind (string, decimal, boolean, ...).
	Tag byte
	// Payload is the value's bytes after the tag.
	Payload []byte
}

// Next reads one property name and value.
func (r *Reader) Next() (name []byte, v Raw) {
	name = r.bytes()
	if r.Err != nil || len(r.b) == 0 {
		r.fail()
		return nil, v
	}
	v.Tag, r.b = r.b[0], r.b[1:]
	switch v.Tag {
	case TagString, TagBig, TagSmall:
		v.Payload = r.bytes()
	case TagTrue, TagFalse:
	default:
		r.fail()
	}
	return name, v
}

// Open reads the header of an encoded event and returns a reader
// positioned at its properties, with their count.
func Open(v []byte) (r Reader, cevid []byte, n int) {
	if len(v) == 0 || v[0] != V1 {
		r.fail()
		return r, nil, 0
	}
	r.b = v[1:]
	cevid = r.bytes()
	return r, cevid, int(r.uvarint())
}

// SmallNumber decodes the payload of a TagSmall value: two zig-zag
// varints. It runs once per event in a SUM, so it decodes in place rather
// than through binary.Varint; a malformed payload (never written) yields 0.
func SmallNumber(p []byte) (coeff, exp int64) {
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

// View is an encoded event value, read in place: a calculation looks
// up only the properties its metric names, without decoding the event.
type View []byte

// Find returns the property named name. It is the innermost loop of a
// calculation, so it walks the encoding (see Reader) by index with an
// inlined fast path for one-byte lengths; events hold few properties, so a
// linear walk comparing lengths first beats anything cleverer.
func (v View) Find(name string) (Raw, bool) {
	b := []byte(v)
	if len(b) < 3 || b[0] != V1 {
		return Raw{}, false
	}
	// The customerEventId's length and the property count, each one byte
	// unless large (fastLen by hand: it is too big for the inliner).
	n, i := int(b[1]), 2
	if n >= 0x80 {
		n, i = readLen(b, 1)
	}
	count, i := 0, i+n
	if uint(i) < uint(len(b)) && b[i] < 0x80 {
		count, i = int(b[i]), i+1
	} else {
		count, i = readLen(b, i)
	}
	for ; count > 0 && uint(i) < uint(len(b)); count-- {
		kl, j := int(b[i]), i+1 // property names are at most 128 bytes
		if kl >= 0x80 {
			kl, j = readLen(b, i)
		}
		if j < 0 || j+kl >= len(b) {
			break
		}
		k, tag := b[j:j+kl], b[j+kl]
		i = j + kl + 1
		var payload []byte
		if tag != TagTrue && tag != TagFalse && i < len(b) {
			pl, j := int(b[i]), i+1
			if pl >= 0x80 {
				pl, j = readLen(b, i)
			}
			if j < 0 || j+pl > len(b) {
				break
			}
			payload, i = b[j:j+pl], j+pl
		}
		if len(k) == len(name) && string(k) == name {
			return Raw{Tag: tag, Payload: payload}, true
		}
	}
	return Raw{}, false
}

// readLen reads the uvarint length at b[i:] and returns it with the index
// after it; the index is -1 when the encoding is malformed.
func readLen(b []byte, i int) (n, next int) {
	if uint(i) >= uint(len(b)) {
		return 0, -1
	}
	u, w := binary.Uvarint(b[i:])
	if w <= 0 || u > uint64(len(b)) {
		return 0, -1
	}
	return int(u), i + w
}

// AppendCanonical appends c×10^e in the canonical decimal rendering of
// Decimal.Canonical, without going through apd.
func AppendCanonical(b []byte, c, e int64) []byte {
	if c == 0 {
		return append(b, '0')
	}
	for c%10 == 0 {
		c, e = c/10, e+1
	}
	if c < 0 {
		b, c = append(b, '-'), -c
	}
	var tmp [20]byte
	digits := strconv.AppendUint(tmp[:0], uint64(c), 10)
	if e >= 0 {
		b = append(b, digits...)
		for range e {
			b = append(b, '0')
		}
		return b
	}
	pos := len(digits) + int(e)
	if pos > 0 {
		return append(append(append(b, digits[:pos]...), '.'), digits[pos:]...)
	}
	b = append(b, "0."...)
	for range -pos {
		b = append(b, '0')
	}
	return append(b, digits...)
}

// AppendHeader appends the start of an event record: the version, the
// explicit customerEventId ("" when it defaulted to the id) and the number
// of properties that follow, each as AppendString(name) and one of the
// Append*Value functions.
func AppendHeader(b []byte, cevid string, n int) []byte {
	b = append(b, V1)
	b = AppendString(b, cevid)
	return binary.AppendUvarint(b, uint64(n))
}

// AppendStringValue appends a string property value.
func AppendStringValue(b []byte, s string) []byte { return AppendString(append(b, TagString), s) }

// AppendBoolValue appends a boolean property value.
func AppendBoolValue(b []byte, v bool) []byte {
	if v {
		return append(b, TagTrue)
	}
	return append(b, TagFalse)
}

// AppendSmallNumberValue appends a number property value c×10^e whose
// coefficient fits an int64: two zig-zag varints.
func AppendSmallNumberValue(b []byte, c, e int64) []byte {
	// The payload, at most 2×10 bytes, is written in place after its
	// length's one byte (AppendString's uvarint below 128).
	b = append(b, TagSmall, 0)
	at := len(b) - 1
	b = binary.AppendVarint(binary.AppendVarint(b, c), e)
	b[at] = byte(len(b) - at - 1)
	return b
}

// AppendBigNumberValue appends any other number property value, as its
// decimal text.
func AppendBigNumberValue(b []byte, text string) []byte {
	return AppendString(append(b, TagBig), text)
}

// HasExplicitID reports whether the event record v carries an explicit
// customerEventId.
func HasExplicitID(v []byte) bool {
	if len(v) < 2 {
		return false
	}
	n, _ := binary.Uvarint(v[1:])
	return n != 0
}

// AppendNo appends a 4-byte account or series number.
func AppendNo(b []byte, n uint32) []byte { return binary.BigEndian.AppendUint32(b, n) }

// No reads the 4-byte number at the start of b (a series key starts with
// its series number).
func No(b []byte) uint32 { return binary.BigEndian.Uint32(b) }

// TimeBound is t as AppendTime writes it, as an integer: keys compare by
// time as these compare.
func TimeBound(t time.Time) uint64 { return uint64(t.Unix()) ^ (1 << 63) }

// KeyTime reads the TimeBound of a usage_events key (series no | time | id).
func KeyTime(k []byte) uint64 { return binary.BigEndian.Uint64(k[4:]) }
