package billing

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/cockroachdb/apd/v3"
)

// The stored form of a usage rollup (usagerollup.go). Rollups were JSON
// first; a calculation over a month reads up to 744 of them per series,
// and decoding JSON made that some 15 µs a record. So they are now written
// in a binary form that a reader walks without allocating, decoding only
// the property its metric aggregates; JSON records written before still
// read (they start with '{').
//
//	0x01 | events (uvarint) | properties (uvarint), then per property in
//	name order: name | N (uvarint) | Sum | Min | MinKey | Max | MaxKey
//
// A name or key is its length (uvarint) and its bytes; a decimal is 0 and
// its coefficient and exponent (varints) when the coefficient fits 64
// bits and the value is not a negative zero, else 1 and apd's scientific
// text (length and bytes), which reads back with the same coefficient and
// exponent ("1.50" stays "1.50").

// rollupBinaryForm is the first byte of a rollup in the binary form.
const rollupBinaryForm = 0x01

// errRollupForm reports a stored rollup that does not decode.
var errRollupForm = errors.New("billing: malformed usage rollup")

// encode returns the binary form of r.
func (r *usageRollup) encode() []byte {
	b := binary.AppendUvarint(append(make([]byte, 0, 16+64*len(r.Props)), rollupBinaryForm), uint64(r.Events))
	b = binary.AppendUvarint(b, uint64(len(r.Props)))
	for _, name := range sortedKeys(r.Props) {
		p := r.Props[name]
		b = appendBytes(b, []byte(name))
		b = binary.AppendUvarint(b, uint64(p.N))
		b = appendRollupDecimal(b, &p.Sum)
		b = appendBytes(appendRollupDecimal(b, &p.Min), p.MinKey)
		b = appendBytes(appendRollupDecimal(b, &p.Max), p.MaxKey)
	}
	return b
}

// appendBytes appends the length of s and s.
func appendBytes(b, s []byte) []byte { return append(binary.AppendUvarint(b, uint64(len(s))), s...) }

// appendRollupDecimal appends d in the rollup's decimal form.
func appendRollupDecimal(b []byte, d *Decimal) []byte {
	if d.d.Coeff.IsInt64() && !(d.d.Negative && d.d.Coeff.Sign() == 0) && d.d.Form == apd.Finite {
		c := d.d.Coeff.Int64()
		if d.d.Negative {
			c = -c
		}
		return binary.AppendVarint(binary.AppendVarint(append(b, 0), c), int64(d.d.Exponent))
	}
	return appendBytes(append(b, 1), []byte(d.d.String()))
}

// rollupReader walks a rollup's binary form.
type rollupReader struct {
	b   []byte
	err error
}

func (r *rollupReader) uvarint() uint64 { return readVarint(r, binary.Uvarint) }

func (r *rollupReader) varint() int64 { return readVarint(r, binary.Varint) }

// readVarint reads the next number of r with read (binary.Uvarint or
// binary.Varint).
func readVarint[T int64 | uint64](r *rollupReader, read func([]byte) (T, int)) T {
	v, n := read(r.b)
	if n <= 0 {
		r.err, r.b = errRollupForm, nil
		return 0
	}
	r.b = r.b[n:]
	return v
}

// bytes returns the next name or key (a view of the record).
func (r *rollupReader) bytes() []byte {
	n := r.uvarint()
	if uint64(len(r.b)) < n {
		r.err, r.b = errRollupForm, nil
		return nil
	}
	s := r.b[:n:n]
	r.b = r.b[n:]
	return s
}

// decimal reads the next decimal into d (nil: skips it).
func (r *rollupReader) decimal(d *Decimal) {
	if len(r.b) == 0 {
		r.err = errRollupForm
		return
	}
	small := r.b[0] == 0
	r.b = r.b[1:]
	if small {
		c, e := r.varint(), r.varint()
		if d != nil {
			d.d.SetFinite(c, int32(e))
		}
		return
	}
	s := r.bytes()
	if d != nil && r.err == nil {
		if _, _, err := d.d.SetString(string(s)); err != nil {
			r.err = fmt.Errorf("%w: %v", errRollupForm, err)
		}
	}
}

// prop reads the next property's aggregate into p (nil: skips it).
func (r *rollupReader) prop(p *rollupProp) {
	var n uint64
	if n = r.uvarint(); p == nil {
		r.decimal(nil)
		r.decimal(nil)
		r.bytes()
		r.decimal(nil)
		r.bytes()
		return
	}
	p.N = int64(n)
	r.decimal(&p.Sum)
	r.decimal(&p.Min)
	p.MinKey = r.bytes()
	r.decimal(&p.Max)
	p.MaxKey = r.bytes()
}

// readRollup reads, from the stored rollup v, the hour's event count and
// the aggregate of property name into p; it reports false when no event
// of the hour holds a number under name. p's keys are views of v.
func readRollup(v []byte, name string, p *rollupProp) (int64, bool, error) {
	if len(v) > 0 && v[0] == '{' {
		var r usageRollup
		if err := json.Unmarshal(v, &r); err != nil {
			return 0, false, err
		}
		if q := r.Props[name]; q != nil {
			*p = *q
			return r.Events, true, nil
		}
		return r.Events, false, nil
	}
	if len(v) == 0 || v[0] != rollupBinaryForm {
		return 0, false, errRollupForm
	}
	r := rollupReader{b: v[1:]}
	events := int64(r.uvarint())
	for n := r.uvarint(); n > 0 && r.err == nil; n-- {
		if string(r.bytes()) == name {
			r.prop(p)
			return events, r.err == nil, r.err
		}
		r.prop(nil)
	}
	return events, false, r.err
}

// decodeRollup decodes the stored rollup v (binary or JSON) into r, its
// keys copied.
func decodeRollup(v []byte, r *usageRollup) error {
	if len(v) > 0 && v[0] == '{' {
		return json.Unmarshal(v, r)
	}
	if len(v) == 0 || v[0] != rollupBinaryForm {
		return errRollupForm
	}
	rd := rollupReader{b: v[1:]}
	r.Events = int64(rd.uvarint())
	n := rd.uvarint()
	if n > 0 && rd.err == nil {
		r.Props = make(map[string]*rollupProp, min(n, 64))
	}
	for ; n > 0 && rd.err == nil; n-- {
		name := string(rd.bytes())
		p := &rollupProp{}
		rd.prop(p)
		p.MinKey, p.MaxKey = slices.Clone(p.MinKey), slices.Clone(p.MaxKey)
		r.Props[name] = p
	}
	return rd.err
}
