// Package cursor encodes the opaque pagination cursors of lists: a list's
// identity, a direction and the key of the boundary item, signed with
// HMAC-SHA256 (truncated to 16 bytes) under the store's key, so a cursor
// this database did not issue, or one used with other filters or order,
// is refused. What a cursor means is decided by the list path
// (the list path in store.go of package billing).
package cursor

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"hash"
	"sync"
)

// Cursor is the content of an opaque pagination cursor.
type Cursor struct {
	List      string // list identity: name, direction and filters
	After     bool   // an after cursor (true) or a before cursor
	Inclusive bool   // a before cursor whose page includes Key itself
	Key       []byte // the key suffix of the last (after) or first (before) item seen
}

// Codec signs cursors with the store's key so that a cursor this
// server did not issue is refused.
type Codec struct {
	key  []byte
	macs *sync.Pool // of hash.Hash: HMAC-SHA256 keyed with key
}

// NewCodec returns the codec of cursors signed with key.
func NewCodec(key []byte) Codec {
	return Codec{key: key, macs: new(sync.Pool)}
}

const macSize = 16

// Encode returns cur as an opaque, signed string.
func (c Codec) Encode(cur Cursor) string {
	var b []byte
	b = binary.AppendUvarint(b, uint64(len(cur.List)))
	b = append(b, cur.List...)
	var flags byte
	if cur.After {
		flags |= 1
	}
	if cur.Inclusive {
		flags |= 2
	}
	b = append(b, flags)
	b = append(b, cur.Key...)
	b = append(b, c.mac(b)...)
	return base64.RawURLEncoding.EncodeToString(b)
}

// Decode returns the cursor s encodes, and false when s is not a cursor
// signed with this codec's key.
func (c Codec) Decode(s string) (Cursor, bool) {
	if len(s) > 4096 {
		return Cursor{}, false
	}
	// Strict: the unused low bits of the last character must be zero, or
	// several strings would decode to one cursor and a tampered cursor
	// would pass as issued.
	b, err := base64.RawURLEncoding.Strict().DecodeString(s)
	if err != nil || len(b) < macSize+2 {
		return Cursor{}, false
	}
	body, mac := b[:len(b)-macSize], b[len(b)-macSize:]
	if !hmac.Equal(mac, c.mac(body)) {
		return Cursor{}, false
	}
	n, w := binary.Uvarint(body)
	if w <= 0 || uint64(len(body)-w) < n+1 {
		return Cursor{}, false
	}
	body = body[w:]
	return Cursor{
		List:      string(body[:n]),
		After:     body[n]&1 != 0,
		Inclusive: body[n]&2 != 0,
		Key:       bytes.Clone(body[n+1:]),
	}, true
}

func (c Codec) mac(b []byte) []byte {
	var h hash.Hash
	if c.macs != nil {
		h, _ = c.macs.Get().(hash.Hash)
	}
	if h == nil {
		h = hmac.New(sha256.New, c.key)
	}
	h.Reset()
	h.Write(b)
	sum := h.Sum(make([]byte, 0, sha256.Size))[:macSize]
	if c.macs != nil {
		c.macs.Put(h)
	}
	return sum
}
