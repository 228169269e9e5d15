package cache

import (
	"fmt"
	"testing"
)

// TestKeysRevokeBeatsStaleRead: a value read before a Revoke is not cached,
// one read after it is; the cache stops growing at MaxKeys.
func TestKeysRevokeBeatsStaleRead(t *testing.T) {
	t.Parallel()
	var c Keys[int]
	gen := c.Generation()
	c.Revoke("k")
	c.Put(gen, "k", 1)
	if _, ok := c.Get("k"); ok {
		t.Fatal("a value read before the revocation was cached")
	}
	c.Put(c.Generation(), "k", 2)
	if v, ok := c.Get("k"); !ok || v != 2 {
		t.Fatalf("Get = %v, %v; want 2", v, ok)
	}
	for i := range MaxKeys + 5 {
		c.Put(c.Generation(), fmt.Sprint(i), i)
	}
	if len(c.keys) != MaxKeys {
		t.Fatalf("%d keys cached, bound %d", len(c.keys), MaxKeys)
	}
}

// TestNumbersBounded: learned numbers are found again, and the series map
// starts afresh instead of growing past MaxSeries.
func TestNumbersBounded(t *testing.T) {
	t.Parallel()
	var c Numbers
	c.Learn("a", []byte{1}, []Series{{EventType: "t", Alias: "x", No: []byte{2}}})
	if no, ok := c.Account("a"); !ok || no[0] != 1 {
		t.Fatalf("Account = %v, %v", no, ok)
	}
	if no, ok := c.Series("a", "t", "x"); !ok || no[0] != 2 {
		t.Fatalf("Series = %v, %v", no, ok)
	}
	if _, ok := c.Series("b", "t", "x"); ok {
		t.Fatal("a series answered for another account")
	}
	for i := range MaxSeries + 5 {
		c.Learn("a", nil, []Series{{EventType: "t", Alias: fmt.Sprint(i), No: []byte{3}}})
		if len(c.all) > MaxSeries {
			t.Fatalf("%d series cached, bound %d", len(c.all), MaxSeries)
		}
	}
}
