package billing

import "testing"

// TestRecordMemoBounded: the memo never holds more than maxMemoRecords
// records, answers only for the exact bytes it was given, and keeps
// answering after it started afresh.
func TestRecordMemoBounded(t *testing.T) {
	t.Parallel()
	var m recordMemo
	keyOf := func(i int) []byte { return []byte{byte(i >> 16), byte(i >> 8), byte(i & 0xff)} }
	put := func(i int) {
		k := keyOf(i)
		m.put("t", k, &memoRecord{raw: k, item: i})
	}
	for i := range maxMemoRecords + 10 {
		put(i)
		if m.n > maxMemoRecords {
			t.Fatalf("memo holds %d records, bound %d", m.n, maxMemoRecords)
		}
	}
	last := keyOf(maxMemoRecords + 9)
	if r := m.get("t", last, last); r == nil || r.item != maxMemoRecords+9 {
		t.Fatalf("the last record put is not remembered: %+v", r)
	}
	if r := m.get("t", last, append(last[:len(last):len(last)], 'x')); r != nil {
		t.Fatal("a record answered for bytes it was not decoded from")
	}
	if r := m.get("other", last, last); r != nil {
		t.Fatal("a record answered for another table")
	}
	put(maxMemoRecords + 9) // replacing a record does not count it twice
	if m.n != 10 {
		t.Fatalf("memo counts %d records, want 10", m.n)
	}
}
