package cache

import (
	"strings"
	"sync"
)

// MaxSeries bounds Numbers' series (and, separately, its accounts): past it
// the map is emptied and fills again with the series in use, so a burst of
// one-off aliases cannot grow it without limit.
const MaxSeries = 1 << 15

// Numbers holds committed account numbers and series numbers (account,
// event type, alias) of usage events.
type Numbers struct {
	mu       sync.RWMutex
	accounts map[string][]byte
	all      map[seriesKey][]byte
}

// seriesKey names a series across accounts.
type seriesKey struct {
	account, eventType, alias string
}

// Series is a series number learned by a transaction.
type Series struct {
	// EventType and Alias name the series (with the account of the cache).
	EventType, Alias string
	// No is the series number, as stored in usage event keys.
	No []byte
}

// Account returns the cached number of account.
func (c *Numbers) Account(account string) ([]byte, bool) {
	c.mu.RLock()
	no, ok := c.accounts[account]
	c.mu.RUnlock()
	return no, ok
}

// Series returns the cached number of account's series (eventType, alias).
func (c *Numbers) Series(account, eventType, alias string) ([]byte, bool) {
	c.mu.RLock()
	no, ok := c.all[seriesKey{account, eventType, alias}]
	c.mu.RUnlock()
	return no, ok
}

// Learn caches the numbers of a committed transaction: acct when not nil,
// and series. Names are cloned: they may point into a large request body.
func (c *Numbers) Learn(account string, acct []byte, series []Series) {
	if acct == nil && len(series) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if acct != nil {
		if c.accounts == nil || len(c.accounts) >= MaxSeries {
			c.accounts = make(map[string][]byte)
		}
		c.accounts[strings.Clone(account)] = acct
	}
	for _, ls := range series {
		if c.all == nil || len(c.all) >= MaxSeries {
			c.all = make(map[seriesKey][]byte)
		}
		c.all[seriesKey{strings.Clone(account), strings.Clone(ls.EventType), strings.Clone(ls.Alias)}] = ls.No
	}
}
