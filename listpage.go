package billing

import (
	"bytes"
	"context"
	"slices"

	"github.com/billingd/billing/internal/cursor"
)

// list is the one list path: every list of the product pages through it.
// It reads the page and nothing else: its scan starts at the cursor's
// position (a seek, not a walk from the first item) and stops after the
// page's items and one more (which says whether a next page exists);
// whether a previous page exists is one more item looked up the other way.
// TotalResultSize comes from q.count, kept counts where the list has them
// (listcount.go), or else from visiting every matching item.
func list[T any](ctx context.Context, s *Service, tx Tx, q listQuery[T], p ListParams) (Page[T], error) {
	limit, cur, err := s.checkListParams(q, p)
	if err != nil {
		return Page[T]{}, err
	}
	total, err := q.total(ctx, tx)
	if err != nil {
		return Page[T]{}, err
	}
	page, keys, more, prev, err := q.page(ctx, tx, cur, limit)
	if err == nil && q.load != nil {
		page, err = q.load(ctx, tx, keys)
	}
	if err != nil {
		return Page[T]{}, err
	}
	if q.clone != nil {
		for i := range page {
			page[i] = q.clone(page[i])
		}
	}
	if page == nil {
		page = []T{}
	}
	out := Page[T]{Items: page, TotalResultSize: total}
	if more && len(page) > 0 {
		out.After = s.cursors.Encode(cursor.Cursor{List: q.id(), After: true, Key: keys[len(keys)-1]})
	}
	if prev {
		switch {
		case len(page) > 0:
			out.Before = s.cursors.Encode(cursor.Cursor{List: q.id(), Key: keys[0]})
		case cur != nil:
			// An empty page after the end: the previous page ends with
			// the cursor's own item.
			out.Before = s.cursors.Encode(cursor.Cursor{List: q.id(), Key: cur.Key, Inclusive: true})
		}
	}
	return out, nil
}

// page reads the page of at most limit items at cur (nil: the first page),
// with their positions, and whether items follow it (more) and precede it
// (prev).
func (q listQuery[T]) page(ctx context.Context, tx Tx, cur *cursor.Cursor, limit int) (page []T, keys [][]byte, more, prev bool, err error) {
	if cur == nil || cur.After {
		var from []byte
		if cur != nil {
			from = cur.Key
		}
		if page, keys, err = q.walk(ctx, tx, true, from, false, limit+1); err != nil {
			return nil, nil, false, false, err
		}
		if more = len(page) > limit; more {
			page, keys = page[:limit], keys[:limit]
		}
		if cur != nil {
			prev, err = q.any(ctx, tx, false, cur.Key, true)
		}
		return page, keys, more, prev, err
	}
	if page, keys, err = q.walk(ctx, tx, false, cur.Key, cur.Inclusive, limit+1); err != nil {
		return nil, nil, false, false, err
	}
	if prev = len(page) > limit; prev {
		page, keys = page[:limit], keys[:limit]
	}
	slices.Reverse(page)
	slices.Reverse(keys)
	more, err = q.any(ctx, tx, true, cur.Key, !cur.Inclusive)
	return page, keys, more, prev, err
}

// total is the list's TotalResultSize: q.count's, or the number of items
// a walk over the whole list visits.
func (q listQuery[T]) total(ctx context.Context, tx Tx) (int, error) {
	if q.count != nil {
		return q.count(ctx, tx)
	}
	n := 0
	err := q.each(ctx, tx, true, nil, false, 0, func(T, []byte) error {
		n++
		return nil
	})
	return n, err
}

// walk returns the first n items (and their positions) of the list from
// position from on, in the list's order when forward, in the opposite
// order otherwise: the items strictly beyond from in that direction, and
// the item at from too when inclusive. A nil from starts at the list's end
// in that direction.
func (q listQuery[T]) walk(ctx context.Context, tx Tx, forward bool, from []byte, inclusive bool, n int) ([]T, [][]byte, error) {
	items, keys := make([]T, 0, min(n, 128)), make([][]byte, 0, min(n, 128))
	err := q.each(ctx, tx, forward, from, inclusive, n, func(item T, pos []byte) error {
		items, keys = append(items, item), append(keys, bytes.Clone(pos))
		if len(items) == n {
			return ErrStopScan
		}
		return nil
	})
	return items, keys, err
}

// any reports whether the list holds an item beyond from in the direction
// walk takes with forward and inclusive.
func (q listQuery[T]) any(ctx context.Context, tx Tx, forward bool, from []byte, inclusive bool) (bool, error) {
	found := false
	err := q.each(ctx, tx, forward, from, inclusive, 1, func(T, []byte) error {
		found = true
		return ErrStopScan
	})
	return found, err
}

// each calls fn with the list's matching items from position from on, in
// the direction walk describes, until fn returns ErrStopScan; expect is
// how many items fn means to take (0: all), the scan's Range.Expect. The scan
// seeks to from: the items before it are not read (but for the other
// items of a record holding several, which expand visits and each skips).
// A list with a tail (listTail) reads its two sources one after the other,
// in the direction's order: their positions do not overlap.
func (q listQuery[T]) each(ctx context.Context, tx Tx, forward bool, from []byte, inclusive bool, expect int, fn func(T, []byte) error) error {
	src := listSource[T]{table: q.table, prefix: q.prefix, expand: q.expand}
	if q.scanTable != "" {
		src.table, src.prefix = q.scanTable, q.scanPrefix
	}
	sources := []listSource[T]{src}
	if q.tail != nil {
		sources[0].below = q.tail.from
		sources = append(sources, *q.tail)
	}
	reverse := q.desc == forward
	if reverse {
		slices.Reverse(sources)
	}
	stopped := false
	visit := func(item T, pos []byte) error {
		if from != nil {
			c := bytes.Compare(pos, from)
			if reverse {
				c = -c
			}
			if c < 0 || c == 0 && !inclusive {
				return nil
			}
		}
		err := fn(item, pos)
		stopped = err == ErrStopScan
		return err
	}
	for _, src := range sources {
		err := tx.Scan(ctx, src.table, q.scanRange(src, reverse, from, expect), func(k, v []byte) error {
			if src.expand != nil {
				return src.expand(k, v, reverse, visit)
			}
			item, ok, err := q.decode(k, v)
			if err != nil || !ok {
				return err
			}
			return visit(item, k[len(src.prefix):])
		})
		if stopped && err == ErrStopScan {
			return nil
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// scanRange is the range of src's keys that each scans from position from
// on (nil: from the list's end) in the direction reverse says, within
// src's positions.
func (q listQuery[T]) scanRange(src listSource[T], reverse bool, from []byte, expect int) Range {
	pfx := src.prefix
	r := Range{Prefix: pfx, Reverse: reverse, Expect: expect}
	if src.expand != nil {
		r.Expect = min(expect, 8) // records of several items each
	}
	if from != nil {
		if reverse {
			r.End = PrefixEnd(append(bytes.Clone(pfx), from...))
		} else {
			seek := from
			if q.seekAsc != nil {
				seek = q.seekAsc(from)
			}
			r.Start = append(bytes.Clone(pfx), seek...)
		}
	}
	if src.from != nil {
		if lo := append(bytes.Clone(pfx), src.from...); r.Start == nil || bytes.Compare(lo, r.Start) > 0 {
			r.Start = lo
		}
	}
	if src.below != nil {
		if hi := append(bytes.Clone(pfx), src.below...); r.End == nil || bytes.Compare(hi, r.End) < 0 {
			r.End = hi
		}
	}
	return r
}

// listQuery describes one list: the keys of table under prefix, in
// ascending key order or descending when desc, decoded and filtered by
// decode (or, for records holding several items, expand). The key order is
// the list's sort order, so every list is a keyset list: its cursors carry
// a position, the key's suffix under prefix (extended by expand within a
// record).
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
	// expand, when set, is used instead of decode for a table whose
	// records hold several items (usage_event_ids: one record per batch's
	// millisecond, usagestore.go): it calls yield with each item of the
	// record that matches the list's filters, in descending key order when
	// reverse (ascending otherwise), and its
	// position: the key suffix of the record, extended for all but its
	// first item so that positions sort in the order the scan visits them
	// (a cursor carries a position). yield's position is copied.
	expand func(key, value []byte, reverse bool, yield func(item T, pos []byte) error) error
	// clone, when set, makes a deep copy of an item; list applies it to
	// the items of the page when decode shares items between calls
	// (memoized).
	clone func(T) T
	// count, when set, gives TotalResultSize (kept counts, listcount.go);
	// otherwise list counts by visiting every matching item.
	count func(ctx context.Context, tx Tx) (int, error)
	// scanTable and scanPrefix, when set, are where the list's scan reads
	// instead of table and prefix: a kept index of the list whose key
	// suffixes are the list's positions (listcount.go). prefix still
	// identifies the list for its cursors.
	scanTable  Table
	scanPrefix []byte
	// load, when set, makes the page's items from their positions after
	// the scan (decode then only decides which entries match): a kept
	// index's list reads the page's records in one request (getMany).
	load func(ctx context.Context, tx Tx, pos [][]byte) ([]T, error)
	// seekAsc, when set, maps a position to the key suffix an ascending
	// scan starts from to reach it: for expand, the key of the record
	// holding the position.
	seekAsc func(pos []byte) []byte
	// tail, when set, is a second source of the list: the positions from
	// tail.from on are read there, those below it where the list reads
	// otherwise (a list of one alias's usage events, whose newest events
	// are not in the alias's index yet: usagealiastail.go).
	tail *listSource[T]
}

// listSource is where a list reads a part of its positions: the keys of
// table under prefix, whose suffixes (extended by expand within a record)
// are positions; from (when set) is the smallest of the part's record
// keys' suffixes and below (when set) the first suffix after the part.
type listSource[T any] struct {
	table       Table
	prefix      []byte
	expand      func(key, value []byte, reverse bool, yield func(item T, pos []byte) error) error
	from, below []byte
}

// beyond reports whether key a comes strictly after key b in the list's order.
func (q listQuery[T]) beyond(a, b []byte) bool {
	c := bytes.Compare(a, b)
	if q.desc {
		return c < 0
	}
	return c > 0
}
