package billing

import (
	"strings"
	"sync"
)

// maxCachedSeries bounds numberCache's series (and, separately, its
// accounts): past it the map is emptied and fills again with the series in
// use, so a burst of one-off aliases cannot grow it without limit.
const maxCachedSeries = 1 << 15

// numberCache holds account and series numbers (usagestore.go) that are
// committed, so that ingestion skips their lookups: one Get per account and
// two per series of every ingestion transaction, which run one after the
// other in the store's single writer.
//
// Numbers are never deleted or reassigned once committed, so an entry never
// goes stale. An entry is added only after the transaction that read or
// assigned it committed (numbers assigned by a run that Batch rolled back
// or re-ran never get here), and only this process writes the file (bbolt:
// one process per file). A backend shared by several processes keeps that
// property: a number another process committed is found in the store, one
// this process cached stays valid.
//
// The zero numberCache is ready to use.
type numberCache struct {
	mu       sync.RWMutex
	accounts map[string][]byte
	all      map[seriesKey][]byte
}

// seriesKey names a series across accounts.
type seriesKey struct {
	account string
	seriesName
}

// learnedNumbers are the numbers one transaction read from the store or
// assigned: acct when the account's was not cached, and each series that
// was not.
type learnedNumbers struct {
	acct   []byte
	series []learnedSeries
}

type learnedSeries struct {
	name seriesName
	no   []byte
}

// account returns the cached number of account.
func (c *numberCache) account(account string) ([]byte, bool) {
	c.mu.RLock()
	no, ok := c.accounts[account]
	c.mu.RUnlock()
	return no, ok
}

// series returns the cached number of account's series name.
func (c *numberCache) series(account string, name seriesName) ([]byte, bool) {
	c.mu.RLock()
	no, ok := c.all[seriesKey{account, name}]
	c.mu.RUnlock()
	return no, ok
}

// learn caches the numbers of a committed transaction. Names are cloned:
// they may point into a large request body.
func (c *numberCache) learn(account string, l *learnedNumbers) {
	if l.acct == nil && len(l.series) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if l.acct != nil {
		if c.accounts == nil || len(c.accounts) >= maxCachedSeries {
			c.accounts = make(map[string][]byte)
		}
		c.accounts[strings.Clone(account)] = l.acct
	}
	for _, ls := range l.series {
		if c.all == nil || len(c.all) >= maxCachedSeries {
			c.all = make(map[seriesKey][]byte)
		}
		k := seriesKey{strings.Clone(account), seriesName{strings.Clone(ls.name.eventType), strings.Clone(ls.name.alias)}}
		c.all[k] = ls.no
	}
}
