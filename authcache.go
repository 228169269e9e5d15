package billing

import (
	"crypto/sha256"
	"sync"
)

// maxCachedKeys bounds keyCache: past it, keys not cached yet are verified
// against the store on every request (the cached ones stay cached). Keys
// are never deleted, only revoked, so entries never go stale otherwise.
const maxCachedKeys = 10000

// keyCache holds the API keys that authenticated successfully, so that a
// request with a known key costs a hash and a compare instead of a read
// transaction and a JSON decode. Only live (not revoked) keys are cached.
//
// Revocation stays immediate because every revocation of this database
// goes through this process: bbolt allows one process per file, and the
// admin CLI revokes through the running server's admin socket, which calls
// RevokeAPIKey here. RevokeAPIKey drops the key after its commit and bumps
// gen; an Authenticate that read the key before that bump does not cache
// what it read (it may have read the key before the revocation committed).
//
// The zero keyCache is ready to use.
type keyCache struct {
	mu   sync.RWMutex
	gen  uint64
	keys map[string]cachedKey
}

// cachedKey is what Authenticate needs of a live key.
type cachedKey struct {
	key        APIKey
	secretHash [sha256.Size]byte
}

// get returns the cached key id, if any.
func (c *keyCache) get(keyID string) (cachedKey, bool) {
	c.mu.RLock()
	k, ok := c.keys[keyID]
	c.mu.RUnlock()
	return k, ok
}

// generation returns the revocation generation to pass to put.
func (c *keyCache) generation() uint64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.gen
}

// put caches a live key read from the store, unless a revocation happened
// since gen was taken or the cache is full.
func (c *keyCache) put(gen uint64, k cachedKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen || len(c.keys) >= maxCachedKeys {
		return
	}
	if c.keys == nil {
		c.keys = make(map[string]cachedKey)
	}
	c.keys[k.key.ID] = k
}

// revoke drops keyID and invalidates every read taken before it.
func (c *keyCache) revoke(keyID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	delete(c.keys, keyID)
}
