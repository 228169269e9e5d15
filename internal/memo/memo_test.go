package memo

import "testing"

// TestMemoBounded: the memo never holds more than MaxRecords
// records, answers only for the exact bytes it was given, and keeps
// answering after it started afresh.
func TestMemoBounded(t *testing.T) {
	t.Parallel()
	var m Memo
	keyOf := func(i int) []byte { return []byte{byte(i >> 16), byte(i >> 8), byte(i & 0xff)} }
	put := func(i int) {
		k := keyOf(i)
		m.Put("t", k, &Record{Raw: k, Item: i})
	}
	for i := range MaxRecords + 10 {
		put(i)
		if m.n > MaxRecords {
			t.Fatalf("memo holds %d records, bound %d", m.n, MaxRecords)
		}
	}
	last := keyOf(MaxRecords + 9)
	if r := m.Get("t", last, last); r == nil || r.Item != MaxRecords+9 {
		t.Fatalf("the last record put is not remembered: %+v", r)
	}
	if r := m.Get("t", last, append(last[:len(last):len(last)], 'x')); r != nil {
		t.Fatal("a record answered for bytes it was not decoded from")
	}
	if r := m.Get("other", last, last); r != nil {
		t.Fatal("a record answered for another table")
	}
	put(MaxRecords + 9) // replacing a record does not count it twice
	if m.n != 10 {
		t.Fatalf("memo counts %d records, want 10", m.n)
	}
}

// TestDerivedOncePerDeriver: a record's derived form is made once per
// deriver and replaced when another deriver asks.
func TestDerivedOncePerDeriver(t *testing.T) {
	t.Parallel()
	r := &Record{Raw: []byte("x"), Item: 2}
	calls := 0
	double := func(item any) (any, error) { calls++; return item.(int) * 2, nil }
	square := func(item any) (any, error) { calls++; return item.(int) * item.(int) * 10, nil }
	for range 3 {
		if v, err := r.Derived("double", double); err != nil || v != 4 {
			t.Fatalf("double = %v, %v", v, err)
		}
	}
	if v, err := r.Derived("square", square); err != nil || v != 40 {
		t.Fatalf("square = %v, %v", v, err)
	}
	if calls != 2 {
		t.Fatalf("derivers ran %d times, want 2", calls)
	}
}
