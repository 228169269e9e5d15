package billing

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"time"
)

// engineLeaseTime is how long a run holds the schedules of a batch it
// claimed: far longer than billing a batch takes, and the time after which
// the schedules of a run that died are billed by others.
const engineLeaseTime = 2 * time.Minute

// engineLease is the lease of one schedule on a shared store
// (tableBillingLeases): which run holds it, until when, and what the last
// run that held it did. Leases only share work out; exactly-once comes from
// the billing markers written with each invoice.
type engineLease struct {
	Holder    string    `json:"holder,omitempty"` // the holding run; empty once released
	Until     time.Time `json:"until"`            // when a held lease expires
	ClaimedAt time.Time `json:"claimedAt"`        // when the last run claimed it (Config.Now, untruncated)
	AsOf      time.Time `json:"asOf"`             // what that run billed it as of; zero when it failed
}

// runLeases is one run's side of the leases.
type runLeases struct {
	hold        string    // this run's id
	asOf, since time.Time // see runBilling
	claimedAt   time.Time // when the batch being billed was claimed
	held        [][]byte  // keys another run held when this run came to them
}

// leaseState is what a run may do with a schedule, given its lease.
type leaseState int

const (
	leaseFree leaseState = iota // claim it
	leaseHeld                   // another run holds it: wait for it
	leaseDone                   // another run billed it as of asOf since the run began
)

func (l *runLeases) state(e *engineLease, now time.Time) leaseState {
	switch {
	case e == nil:
		return leaseFree
	case e.Holder != "" && now.Before(e.Until):
		return leaseHeld
	case e.Holder == "" && !e.AsOf.IsZero() && !e.AsOf.Before(l.asOf) && !e.ClaimedAt.Before(l.since):
		return leaseDone
	}
	return leaseFree
}

// claimRunnable claims, in one transaction, up to engineBatchSize free
// schedules of the runnable index under pre after after, looking at no
// more than four batches' worth of keys. It returns them and the last key
// it looked at (nil when none is left); held ones go to l.held.
func (s *Service) claimRunnable(ctx context.Context, pre, after []byte, l *runLeases) (claimed [][]byte, last []byte, err error) {
	r := Range{Prefix: pre}
	if after != nil {
		r.Start = append(append([]byte(nil), after...), 0)
	}
	var held [][]byte
	err = s.store.Update(ctx, func(tx Tx) error {
		claimed, last, held = nil, nil, nil
		keys, err := firstKeys(ctx, tx, tableBillingRunnable, r, 4*engineBatchSize, nil)
		if err != nil || len(keys) == 0 {
			return err
		}
		claimed, held, last, err = s.claimAmong(ctx, tx, keys, l)
		return err
	})
	if err == nil {
		l.held = append(l.held, held...)
	}
	return claimed, last, err
}

// claimAmong claims the free schedules of keys (in key order) in tx, up to
// engineBatchSize, and returns them, the held ones and the last key looked
// at.
func (s *Service) claimAmong(ctx context.Context, tx Tx, keys [][]byte, l *runLeases) (claimed, held [][]byte, last []byte, err error) {
	now := s.now()
	leases := map[string]*engineLease{}
	end := append(append([]byte(nil), keys[len(keys)-1]...), 0)
	err = tx.Scan(ctx, tableBillingLeases, Range{Start: keys[0], End: end}, func(k, v []byte) error {
		var e engineLease
		if err := json.Unmarshal(v, &e); err != nil {
			return err
		}
		leases[string(k)] = &e
		return nil
	})
	if err != nil {
		return nil, nil, nil, err
	}
	for _, k := range keys {
		last = k
		switch l.state(leases[string(k)], now) {
		case leaseHeld:
			held = append(held, k)
		case leaseFree:
			claimed = append(claimed, k)
			if err := putRecord(ctx, tx, tableBillingLeases, k, engineLease{Holder: l.hold, Until: now.Add(engineLeaseTime), ClaimedAt: now}); err != nil {
				return nil, nil, nil, err
			}
		}
		if len(claimed) == engineBatchSize {
			break
		}
	}
	l.claimedAt = now
	return claimed, held, last, nil
}

// release marks the lease of k released in tx, with the asOf it was billed
// as of (billed) or none (it failed). A nil l does nothing.
func (l *runLeases) release(ctx context.Context, tx Tx, k []byte, billed bool) error {
	if l == nil {
		return nil
	}
	e := engineLease{ClaimedAt: l.claimedAt}
	if billed {
		e.AsOf = l.asOf
	}
	return putRecord(ctx, tx, tableBillingLeases, k, e)
}

// releaseLeases releases the leases of keys that l still holds, after a
// batch failed; a failure leaves them to expire.
func (s *Service) releaseLeases(ctx context.Context, keys [][]byte, l *runLeases) {
	err := s.store.Update(ctx, func(tx Tx) error {
		for _, k := range keys {
			e, err := findRecord[engineLease](ctx, tx, tableBillingLeases, k)
			if err != nil {
				return err
			}
			if e != nil && e.Holder == l.hold {
				if err := l.release(ctx, tx, k, false); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		s.log.Warn("billing engine: releasing leases", "err", err)
	}
}

// awaitHeld bills the schedules other runs held when this run came to
// them, once they are released (or their leases expired), unless those
// runs billed them as of asOf already: when a run returns, every schedule
// it visited is billed as of asOf, by it or by another run.
func (s *Service) awaitHeld(ctx context.Context, l *runLeases, asOf, now time.Time, run *BillingRun) error {
	for wait := 10 * time.Millisecond; len(l.held) > 0; wait = min(2*wait, time.Second) {
		held := l.held
		l.held = nil
		for chunk := range slices.Chunk(held, engineBatchSize) {
			var claimed, still [][]byte
			err := s.store.Update(ctx, func(tx Tx) (err error) {
				claimed, still, _, err = s.claimAmong(ctx, tx, chunk, l)
				return err
			})
			if err != nil {
				return internal(err)
			}
			l.held = append(l.held, still...)
			if err := s.billClaimed(ctx, claimed, asOf, now, run, l); err != nil {
				return err
			}
		}
		if len(l.held) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
	}
	return nil
}

// runnableKeys returns up to engineBatchSize keys of the runnable index
// under pre that come after after.
func (s *Service) runnableKeys(ctx context.Context, pre, after []byte) ([][]byte, error) {
	return s.nextKeys(ctx, tableBillingRunnable, Range{Prefix: pre}, after, engineBatchSize, nil)
}

// nextKeys returns, in one read transaction, up to n keys of table t in r
// that come after after (all of r when nil) and that keep accepts (every
// key when nil): the next batch of a run that works in batches.
func (s *Service) nextKeys(ctx context.Context, t Table, r Range, after []byte, n int, keep func(k []byte) bool) ([][]byte, error) {
	var keys [][]byte
	if after != nil {
		r.Start = append(append([]byte(nil), after...), 0)
	}
	err := s.view(ctx, func(tx Tx) (err error) {
		keys, err = firstKeys(ctx, tx, t, r, n, keep)
		return err
	})
	return keys, err
}

// firstKeys returns copies of the first n keys of table t in r that keep
// accepts (every key when keep is nil); the scan ends at the n-th.
func firstKeys(ctx context.Context, tx Tx, t Table, r Range, n int, keep func(k []byte) bool) ([][]byte, error) {
	var keys [][]byte
	err := tx.Scan(ctx, t, r, func(k, _ []byte) error {
		if keep == nil || keep(k) {
			keys = append(keys, bytes.Clone(k))
		}
		if len(keys) == n {
			return ErrStopScan
		}
		return nil
	})
	return keys, err
}
