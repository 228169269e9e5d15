package billing

import (
	"bytes"
	"encoding/json"
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
// a *T decoded from them. Neither is ever modified.
type memoRecord struct {
	raw  []byte
	item any
}

// get returns the item decoded from exactly v under table t and key k.
func (m *recordMemo) get(t Table, k, v []byte) (any, bool) {
	m.mu.RLock()
	r := m.tables[t][string(k)]
	m.mu.RUnlock()
	if r == nil || !bytes.Equal(r.raw, v) {
		return nil, false
	}
	return r.item, true
}

// put remembers item as the decoding of v under table t and key k.
func (m *recordMemo) put(t Table, k, v []byte, item any) {
	r := &memoRecord{raw: bytes.Clone(v), item: item}
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

// memoized is decodeAll through the Service's record memo: a record whose
// stored bytes did not change since it was last decoded is not decoded
// again. The items it returns share their maps, slices and pointers with
// the memo, so the listQuery using it must set clone (list then clones the
// items of the page, the only ones that leave it) and keep must not modify
// its argument.
func memoized[T any](s *Service, t Table, keep func(*T) bool) func(k, v []byte) (T, bool, error) {
	return func(k, v []byte) (T, bool, error) {
		if it, ok := s.memo.get(t, k, v); ok {
			if item, ok := it.(*T); ok {
				return *item, keep == nil || keep(item), nil
			}
		}
		item := new(T)
		if err := json.Unmarshal(v, item); err != nil {
			return *item, false, err
		}
		s.memo.put(t, k, v, item)
		return *item, keep == nil || keep(item), nil
	}
}
