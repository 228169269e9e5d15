package billing

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"hash"
	"strconv"
	"sync"

	"github.com/billingd/billing/internal/appendjson"
)

// ListParams selects one page of a list: at most Limit items after the
// cursor After or before the cursor Before (at most one of the two).
// A zero Limit means the default page size.
type ListParams struct {
	Limit  int
	After  string
	Before string
}

// Page is one page of a list. After is set when items follow this page and
// Before when items precede it; each is the cursor to pass back in
// ListParams to get that page. TotalResultSize counts every item matching the
// list's filters across all pages.
type Page[T any] struct {
	Items           []T
	After           string
	Before          string
	TotalResultSize int
}

// MarshalJSON writes the page in the wire shape
// {"items": [...], "pagination": {"after", "before", "totalResultSize"}}.
func (p Page[T]) MarshalJSON() ([]byte, error) {
	return p.AppendJSON(nil)
}

// AppendJSON appends the page's JSON encoding (MarshalJSON's) to b. The
// encoding is compact and HTML-escaped, byte for byte what json.Marshal
// gives for the page, so a caller may send it as is without json.Marshal
// checking and compacting it again.
func (p Page[T]) AppendJSON(b []byte) ([]byte, error) {
	b = append(b, `{"items":`...)
	if len(p.Items) == 0 {
		b = append(b, "[]"...)
	} else if _, ok := any(&p.Items[0]).(jsonItem); ok {
		b = append(b, '[')
		for i := range p.Items {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = any(&p.Items[i]).(jsonItem).appendJSON(b); err != nil {
				return nil, err
			}
		}
		b = append(b, ']')
	} else {
		items, err := json.Marshal(p.Items)
		if err != nil {
			return nil, err
		}
		b = append(b, items...)
	}
	b = append(b, `,"pagination":{`...)
	if p.After != "" {
		b = append(b, `"after":`...)
		b = appendjson.String(b, p.After)
		b = append(b, ',')
	}
	if p.Before != "" {
		b = append(b, `"before":`...)
		b = appendjson.String(b, p.Before)
		b = append(b, ',')
	}
	b = append(b, `"totalResultSize":`...)
	b = strconv.AppendInt(b, int64(p.TotalResultSize), 10)
	return append(b, "}}"...), nil
}

// Pagination is the pagination object of a list response.
type Pagination struct {
	After           string `json:"after,omitempty"`
	Before          string `json:"before,omitempty"`
	TotalResultSize int    `json:"totalResultSize"`
}

// listQuery describes one list: the keys of table under prefix, in
// ascending key order or descending when desc, decoded and filtered by
// decode. The key order is the list's sort order, so every list is a keyset
// list: its cursors carry a key.
type listQuery[T any] struct {
	// name and filter identify the list; a cursor is valid only for the
	// same name, filter and direction.
	name   string
	filter string
	table  Table
	prefix []byte
	desc   bool
	// decode turns a stored record into an item; ok is false when the
	// record does not match the list's filters.
	decode func(key, value []byte) (item T, ok bool, err error)
	// clone, when set, makes a deep copy of an item; list applies it to
	// the items of the page when decode shares items between calls
	// (memoized).
	clone func(T) T
}

// list is the one list path: every list of the product pages through it.
// It makes one pass over the matching keys, counting them all for
// TotalResultSize and keeping at most one page of items in memory.
func list[T any](ctx context.Context, s *Service, tx Tx, q listQuery[T], p ListParams) (Page[T], error) {
	limit, cur, err := s.checkListParams(q, p)
	if err != nil {
		return Page[T]{}, err
	}
	var (
		page = make([]T, 0, limit)
		// first and last are the key suffixes of the page's first and
		// last items (reused buffers: only these two make cursors).
		first, last []byte
		// keys are the key suffixes of the page's items, kept only for a
		// before cursor, whose page slides.
		keys    [][]byte
		total   int
		before  int  // matching items before the page (in list order)
		more    bool // matching items after the page
		reached bool // the cursor's position was passed
	)
	add := func(item T, suffix []byte) {
		if len(page) == 0 {
			first = append(first[:0], suffix...)
		}
		last = append(last[:0], suffix...)
		page = append(page, item)
	}
	r := Range{Prefix: q.prefix, Reverse: q.desc}
	err = tx.Scan(ctx, q.table, r, func(k, v []byte) error {
		item, ok, err := q.decode(k, v)
		if err != nil || !ok {
			return err
		}
		total++
		suffix := k[len(q.prefix):]
		switch {
		case cur == nil:
			if len(page) < limit {
				add(item, suffix)
			} else {
				more = true
			}
		case cur.After:
			if !reached && !q.beyond(suffix, cur.Key) {
				before++
				return nil
			}
			reached = true
			if len(page) < limit {
				add(item, suffix)
			} else {
				more = true
			}
		default: // a before cursor: keep the last limit items before it
			if !q.beyond(cur.Key, suffix) && !(cur.Inclusive && bytes.Equal(cur.Key, suffix)) {
				more = true
				return nil
			}
			if len(page) == limit {
				copy(page, page[1:])
				copy(keys, keys[1:])
				page, keys = page[:limit-1], keys[:limit-1]
				before++
			}
			page, keys = append(page, item), append(keys, bytes.Clone(suffix))
		}
		return nil
	})
	if err != nil {
		return Page[T]{}, err
	}
	if len(keys) > 0 {
		first, last = keys[0], keys[len(keys)-1]
	}
	if q.clone != nil {
		for i := range page {
			page[i] = q.clone(page[i])
		}
	}
	out := Page[T]{Items: page, TotalResultSize: total}
	if more && len(page) > 0 {
		out.After = s.cursors.encode(cursor{List: q.id(), After: true, Key: last})
	}
	if before > 0 {
		switch {
		case len(page) > 0:
			out.Before = s.cursors.encode(cursor{List: q.id(), Key: first})
		case cur != nil:
			// An empty page after the end: the previous page ends with
			// the cursor's own item.
			out.Before = s.cursors.encode(cursor{List: q.id(), Key: cur.Key, Inclusive: true})
		}
	}
	return out, nil
}

// jsonItem is an item type with a hand-written encoder for the lists that
// must be fast: appendJSON appends exactly what json.Marshal gives for the
// item (a test compares the two).
type jsonItem interface {
	appendJSON(b []byte) ([]byte, error)
}

// beyond reports whether key a comes strictly after key b in the list's order.
func (q listQuery[T]) beyond(a, b []byte) bool {
	c := bytes.Compare(a, b)
	if q.desc {
		return c < 0
	}
	return c > 0
}

func (q listQuery[T]) id() string {
	dir := "asc"
	if q.desc {
		dir = "desc"
	}
	return q.name + "\x00" + dir + "\x00" + q.filter
}

func (s *Service) checkListParams(q interface{ id() string }, p ListParams) (int, *cursor, error) {
	var v validator
	limit := p.Limit
	switch {
	case limit == 0:
		limit = s.limits.DefaultPageSize
	case limit < 1 || limit > s.limits.MaxPageSize:
		v.add("limit", "limit must be between 1 and %d", s.limits.MaxPageSize)
	}
	if p.After != "" && p.Before != "" {
		v.add("before", "send either after or before, not both")
	}
	var cur *cursor
	for _, c := range []struct {
		field, value string
		after        bool
	}{{"after", p.After, true}, {"before", p.Before, false}} {
		if c.value == "" || p.After != "" && p.Before != "" {
			continue
		}
		decoded, ok := s.cursors.decode(c.value)
		if !ok || decoded.List != q.id() || decoded.After != c.after {
			v.add(c.field, "%s is not a cursor issued for this list with these filters", c.field)
			continue
		}
		cur = &decoded
	}
	return limit, cur, v.err()
}

// cursor is the content of an opaque pagination cursor.
type cursor struct {
	List      string // list identity: name, direction and filters
	After     bool   // an after cursor (true) or a before cursor
	Inclusive bool   // a before cursor whose page includes Key itself
	Key       []byte // the key suffix of the last (after) or first (before) item seen
}

// cursorCodec signs cursors with the store's key so that a cursor this
// server did not issue is refused.
type cursorCodec struct {
	key  []byte
	macs *sync.Pool // of hash.Hash: HMAC-SHA256 keyed with key
}

// newCursorCodec returns the codec of cursors signed with key.
func newCursorCodec(key []byte) cursorCodec {
	return cursorCodec{key: key, macs: new(sync.Pool)}
}

const cursorMACSize = 16

func (c cursorCodec) encode(cur cursor) string {
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

func (c cursorCodec) decode(s string) (cursor, bool) {
	if len(s) > 4096 {
		return cursor{}, false
	}
	// Strict: the unused low bits of the last character must be zero, or
	// several strings would decode to one cursor and a tampered cursor
	// would pass as issued.
	b, err := base64.RawURLEncoding.Strict().DecodeString(s)
	if err != nil || len(b) < cursorMACSize+2 {
		return cursor{}, false
	}
	body, mac := b[:len(b)-cursorMACSize], b[len(b)-cursorMACSize:]
	if !hmac.Equal(mac, c.mac(body)) {
		return cursor{}, false
	}
	n, w := binary.Uvarint(body)
	if w <= 0 || uint64(len(body)-w) < n+1 {
		return cursor{}, false
	}
	body = body[w:]
	return cursor{
		List:      string(body[:n]),
		After:     body[n]&1 != 0,
		Inclusive: body[n]&2 != 0,
		Key:       bytes.Clone(body[n+1:]),
	}, true
}

func (c cursorCodec) mac(b []byte) []byte {
	var h hash.Hash
	if c.macs != nil {
		h, _ = c.macs.Get().(hash.Hash)
	}
	if h == nil {
		h = hmac.New(sha256.New, c.key)
	}
	h.Reset()
	h.Write(b)
	sum := h.Sum(make([]byte, 0, sha256.Size))[:cursorMACSize]
	if c.macs != nil {
		c.macs.Put(h)
	}
	return sum
}

// SortOrder is the direction of a list: ASC or DESC.
type SortOrder string

// The sort orders.
const (
	SortAsc  SortOrder = "ASC"
	SortDesc SortOrder = "DESC"
)

// ParseSortOrder parses the sortOrder query parameter; "" gives def.
func ParseSortOrder(s string, def SortOrder) (SortOrder, error) {
	switch SortOrder(s) {
	case "":
		return def, nil
	case SortAsc, SortDesc:
		return SortOrder(s), nil
	}
	return "", FieldError("sortOrder", "sortOrder must be ASC or DESC")
}
