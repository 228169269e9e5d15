// Package memo keeps decoded store records by table and key, each with the
// exact stored bytes it was decoded from, so a record is decoded again only
// when its bytes changed. It knows nothing of the records' types or of any
// wire encoding: a Record holds the decoded item and, optionally, one form
// derived from it (Record.Derived).
package memo

import (
	"bytes"
	"sync"
	"sync/atomic"
)

// MaxRecords bounds a Memo; when it is full it starts afresh.
const MaxRecords = 8192

// Memo remembers decoded records by table and key. A lookup compares the
// remembered bytes with the bytes the store holds now, so an entry can
// never be stale: a record that changed (in this process or not) no longer
// matches and is decoded again.
//
// The zero Memo is ready to use.
type Memo struct {
	mu     sync.RWMutex
	n      int
	tables map[string]map[string]*Record
}

// Record is one decoded record: Raw is a copy of the stored bytes and Item
// the value decoded from them. Neither is ever modified once the Record is
// put in a Memo.
type Record struct {
	// Raw is a copy of the stored bytes the record was decoded from.
	Raw []byte
	// Item is the value decoded from Raw (a pointer to the record's type).
	Item    any
	derived atomic.Pointer[derived]
}

// derived is a form of a record's item made by one deriver.
type derived struct {
	by any
	v  any
}

// Get returns the record decoded from exactly v under table t and key k,
// or nil.
func (m *Memo) Get(t string, k, v []byte) *Record {
	m.mu.RLock()
	r := m.tables[t][string(k)]
	m.mu.RUnlock()
	if r == nil || !bytes.Equal(r.Raw, v) {
		return nil
	}
	return r
}

// Put remembers r under table t and key k.
func (m *Memo) Put(t string, k []byte, r *Record) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.n >= MaxRecords {
		m.tables, m.n = nil, 0
	}
	if m.tables == nil {
		m.tables = make(map[string]map[string]*Record)
	}
	tm := m.tables[t]
	if tm == nil {
		tm = make(map[string]*Record)
		m.tables[t] = tm
	}
	if _, ok := tm[string(k)]; !ok {
		m.n++
	}
	tm[string(k)] = r
}

// Derived returns derive(r.Item), made once and kept with r: by identifies
// derive (a comparable value, the same for every call with the same
// derive). A record keeps the form of one deriver at a time; another
// deriver replaces it.
func (r *Record) Derived(by any, derive func(item any) (any, error)) (any, error) {
	if d := r.derived.Load(); d != nil && d.by == by {
		return d.v, nil
	}
	v, err := derive(r.Item)
	if err != nil {
		return nil, err
	}
	r.derived.Store(&derived{by: by, v: v})
	return v, nil
}
