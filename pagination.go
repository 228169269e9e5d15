package billing

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/billingd/billing/internal/cursor"
	"github.com/billingd/billing/internal/memo"
)

// ListParams selects one page of a list: at most Limit items after the
// cursor After or before the cursor Before (at most one of the two).
// A zero Limit means the default page size.
type ListParams struct {
	// Limit is the most items on the page; zero means the default page size.
	Limit int
	// After is the After cursor of the previous page: the page that follows it. At
	// most one of After and Before.
	After string
	// Before is the Before cursor of a page: the page that precedes it.
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
// {"items": [...], "pagination": {"after", "before", "totalResultSize"}};
// items is [] (never null) for an empty page.
func (p Page[T]) MarshalJSON() ([]byte, error) {
	items := p.Items
	if items == nil {
		items = []T{}
	}
	return json.Marshal(struct {
		Items      []T        `json:"items"`
		Pagination Pagination `json:"pagination"`
	}{items, Pagination{After: p.After, Before: p.Before, TotalResultSize: p.TotalResultSize}})
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
//
// Long on purpose: the one list path keeps its scan, its cursor boundaries and
// its page assembly together so that every list's paging rules can be read, and
// checked, in one place.
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
		out.After = s.cursors.Encode(cursor.Cursor{List: q.id(), After: true, Key: last})
	}
	if before > 0 {
		switch {
		case len(page) > 0:
			out.Before = s.cursors.Encode(cursor.Cursor{List: q.id(), Key: first})
		case cur != nil:
			// An empty page after the end: the previous page ends with
			// the cursor's own item.
			out.Before = s.cursors.Encode(cursor.Cursor{List: q.id(), Key: cur.Key, Inclusive: true})
		}
	}
	return out, nil
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
	// The prefix holds the account: a cursor of another account's list
	// is refused like any cursor of another list.
	return q.name + "\x00" + dir + "\x00" + q.filter + "\x00" + string(q.prefix)
}

func (s *Service) checkListParams(q interface{ id() string }, p ListParams) (int, *cursor.Cursor, error) {
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
	var cur *cursor.Cursor
	for _, c := range []struct {
		field, value string
		after        bool
	}{{"after", p.After, true}, {"before", p.Before, false}} {
		if c.value == "" || p.After != "" && p.Before != "" {
			continue
		}
		decoded, ok := s.cursors.Decode(c.value)
		if !ok || decoded.List != q.id() || decoded.After != c.after {
			v.add(c.field, "%s is not a cursor issued for this list with these filters", c.field)
			continue
		}
		cur = &decoded
	}
	return limit, cur, v.err()
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

// memoDecode returns the record under table t and key k whose stored bytes
// are v, from the Service's record memo or decoded now.
func memoDecode[T any](s *Service, t Table, k, v []byte) (*memo.Record, *T, error) {
	if r := s.memo.Get(string(t), k, v); r != nil {
		if item, ok := r.Item.(*T); ok {
			return r, item, nil
		}
	}
	item := new(T)
	if err := json.Unmarshal(v, item); err != nil {
		return nil, nil, err
	}
	r := &memo.Record{Raw: bytes.Clone(v), Item: item}
	s.memo.Put(string(t), k, r)
	return r, item, nil
}

// memoized is decodeAll through the Service's record memo: a record whose
// stored bytes did not change since it was last decoded is not decoded
// again. The items it returns share their maps, slices and pointers with
// the memo, so the listQuery using it must set clone (list then clones the
// items of the page, the only ones that leave it) and keep must not modify
// its argument.
func memoized[T any](s *Service, t Table, keep func(*T) bool) func(k, v []byte) (T, bool, error) {
	return func(k, v []byte) (T, bool, error) {
		_, item, err := memoDecode[T](s, t, k, v)
		if err != nil {
			var zero T
			return zero, false, err
		}
		return *item, keep == nil || keep(item), nil
	}
}

// Rendering is a form of records of type T made by a function of the
// caller's (such as their encoding for a wire protocol). A list through a
// Rendering makes it once per stored version of a record and keeps it with
// the record in the Service's record memo, so a list renders only the
// records that changed since they were last listed. Make one with
// NewRendering and keep it: each Rendering has its own slot.
type Rendering[T, R any] struct {
	derive func(item any) (any, error)
}

// NewRendering returns the Rendering made by render. render gets an item
// shared with the memo: it must not modify it, nor keep it.
func NewRendering[T, R any](render func(*T) (R, error)) *Rendering[T, R] {
	return &Rendering[T, R]{derive: func(item any) (any, error) { return render(item.(*T)) }}
}

// listRendered is list over q, whose decode is memoized with the filter
// keep, with each item of the page given as r's rendering of it: the same
// items, cursors and totals.
func listRendered[T, R any](ctx context.Context, s *Service, tx Tx, q listQuery[T], keep func(*T) bool, p ListParams, r *Rendering[T, R]) (Page[R], error) {
	qm := listQuery[*memo.Record]{
		name: q.name, filter: q.filter, table: q.table, prefix: q.prefix, desc: q.desc,
		decode: func(k, v []byte) (*memo.Record, bool, error) {
			rec, item, err := memoDecode[T](s, q.table, k, v)
			if err != nil {
				return nil, false, err
			}
			return rec, keep == nil || keep(item), nil
		},
	}
	page, err := list(ctx, s, tx, qm, p)
	if err != nil {
		return Page[R]{}, err
	}
	out := Page[R]{Items: make([]R, len(page.Items)), After: page.After, Before: page.Before, TotalResultSize: page.TotalResultSize}
	for i, rec := range page.Items {
		v, err := rec.Derived(r, r.derive)
		if err != nil {
			return Page[R]{}, err
		}
		out.Items[i] = v.(R)
	}
	return out, nil
}
