// Package cache holds the Service's caches of values that never go stale
// once committed: authenticated API keys (Keys) and usage account and
// series numbers (Numbers). Each is bounded and safe for concurrent use;
// the zero value is ready to use. What may be cached, and when, is decided
// by the callers in package billing (account.go, usagestore.go).
package cache

import "sync"

// MaxKeys bounds Keys: past it, keys not cached yet are looked up on every
// request (the cached ones stay cached).
const MaxKeys = 10000

// Keys holds values by key id with a revocation generation: Put caches a
// value only if no Revoke happened since the Generation the caller took
// before reading it, so a read that raced a revocation is never cached.
type Keys[V any] struct {
	mu   sync.RWMutex
	gen  uint64
	keys map[string]V
}

// Get returns the cached value of id, if any.
func (c *Keys[V]) Get(id string) (V, bool) {
	c.mu.RLock()
	v, ok := c.keys[id]
	c.mu.RUnlock()
	return v, ok
}

// Generation returns the revocation generation to pass to Put.
func (c *Keys[V]) Generation() uint64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.gen
}

// Put caches v under id, unless a Revoke happened since gen was taken or
// the cache is full.
func (c *Keys[V]) Put(gen uint64, id string, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen || len(c.keys) >= MaxKeys {
		return
	}
	if c.keys == nil {
		c.keys = make(map[string]V)
	}
	c.keys[id] = v
}

// Revoke drops id and invalidates every read taken before it.
func (c *Keys[V]) Revoke(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	delete(c.keys, id)
}
