package billing

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"
)

// maxMemoRecords bounds recordMemo; when it is full it starts afresh.
const maxMemoRecords = 8192

// recordMemo remembers decoded records by table and key, each with the
// exact stored bytes it was decoded from. A lookup compares those bytes with
// the bytes the store holds now, so an entry can never be stale: a record
// that changed (in this process or not) no longer matches and is decoded
// again. It saves lists, which must look at every record of an account to
// filter and count, the JSON decode of records that did not change.
//
// The zero recordMemo is ready to use.
type recordMemo struct {
	mu     sync.RWMutex
	n      int
	tables map[Table]map[string]*memoRecord
}

// memoRecord is one decoded record: raw is a copy of the stored bytes, item
// a *T decoded from them, enc the item's JSON encoding when *T is a
// jsonItem (nil otherwise). None of them is ever modified.
type memoRecord struct {
	raw  []byte
	item any
	enc  []byte
}

// get returns the record decoded from exactly v under table t and key k.
func (m *recordMemo) get(t Table, k, v []byte) *memoRecord {
	m.mu.RLock()
	r := m.tables[t][string(k)]
	m.mu.RUnlock()
	if r == nil || !bytes.Equal(r.raw, v) {
		return nil
	}
	return r
}

// put remembers r under table t and key k.
func (m *recordMemo) put(t Table, k []byte, r *memoRecord) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.n >= maxMemoRecords {
		m.tables, m.n = nil, 0
	}
	if m.tables == nil {
		m.tables = make(map[Table]map[string]*memoRecord)
	}
	tm := m.tables[t]
	if tm == nil {
		tm = make(map[string]*memoRecord)
		m.tables[t] = tm
	}
	if _, ok := tm[string(k)]; !ok {
		m.n++
	}
	tm[string(k)] = r
}

// memoDecode returns the record under table t and key k whose stored bytes
// are v, from the memo or decoded (and encoded, for a jsonItem) now.
func memoDecode[T any](s *Service, t Table, k, v []byte) (*memoRecord, *T, error) {
	if r := s.memo.get(t, k, v); r != nil {
		if item, ok := r.item.(*T); ok {
			return r, item, nil
		}
	}
	item := new(T)
	if err := json.Unmarshal(v, item); err != nil {
		return nil, nil, err
	}
	r := &memoRecord{raw: bytes.Clone(v), item: item}
	if ji, ok := any(item).(jsonItem); ok {
		enc, err := ji.appendJSON(nil)
		if err != nil {
			return nil, nil, err
		}
		r.enc = enc
	}
	s.memo.put(t, k, r)
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

// encoded is an item already in its JSON encoding: a list of encoded items
// is a page rendered without decoding or encoding what did not change.
type encoded []byte

func (e *encoded) appendJSON(b []byte) ([]byte, error) { return append(b, *e...), nil }

// encodedList is q listed as the memo's JSON encodings of its items (T must
// be a jsonItem): the same items, cursors and totals as list over q, where
// keep is the filter of q's decode function.
func encodedList[T any](ctx context.Context, s *Service, tx Tx, q listQuery[T], keep func(*T) bool, p ListParams) (Page[encoded], error) {
	qe := listQuery[encoded]{
		name: q.name, filter: q.filter, table: q.table, prefix: q.prefix, desc: q.desc,
		decode: func(k, v []byte) (encoded, bool, error) {
			r, item, err := memoDecode[T](s, q.table, k, v)
			if err != nil {
				return nil, false, err
			}
			if r.enc == nil {
				return nil, false, fmt.Errorf("billing: %T has no JSON encoder", item)
			}
			return r.enc, keep == nil || keep(item), nil
		},
	}
	return list(ctx, s, tx, qe, p)
}
