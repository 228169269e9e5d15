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
func (q listQuery[T]) each(ctx context.Context, tx Tx, forward bool, from []byte, inclusive bool, expect int, fn func(T, []byte) error) error {
	table, pfx := q.table, q.prefix
	if q.scanTable != "" {
		table, pfx = q.scanTable, q.scanPrefix
	}
	reverse := q.desc == forward
	r := Range{Prefix: pfx, Reverse: reverse, Expect: expect}
	if q.expand != nil {
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
	err := tx.Scan(ctx, table, r, func(k, v []byte) error {
		if q.expand != nil {
			return q.expand(k, v, reverse, visit)
		}
		item, ok, err := q.decode(k, v)
		if err != nil || !ok {
			return err
		}
		return visit(item, k[len(pfx):])
	})
	if stopped && err == ErrStopScan {
		err = nil
	}
	return err
}
