package pgstore

import (
	"context"
	"hash/fnv"
	"slices"
	"time"

	"github.com/billingd/billing"
	"github.com/jackc/pgx/v5"
)

// Counters and serialization failures.
//
// A counter (a document number) is read "for update" late in a long
// transaction. In SERIALIZABLE, a transaction whose snapshot is older than
// another's committed increment of the same counter cannot increment it:
// PostgreSQL aborts it ("could not serialize access due to concurrent
// update"), and the run again has the same odds. Under load (several
// numbering transactions at once, the race detector, two cores) one
// transaction could lose 31 times in a row and its request answered 503.
//
// So counters have a lane: every Increment first takes a transaction-level
// advisory lock named after its counter, and a run of a function whose
// previous run failed after incrementing counters takes those locks for
// its session before it begins, so its snapshot is taken with the lane to
// itself: no other transaction can increment those counters until it
// ends, and it cannot fail on them again. A transaction fails on a counter
// at most once; the ones that did go through the lane one at a time.
//
// Taking a lane can deadlock: a transaction outside it holds one of the
// lane's counters and waits for another the lane already took. The server
// breaks the deadlock by failing one side; when that is the lane's run, it
// is one more failed run and the function runs again (it is never an
// error of the request).

// counterLane is what one function's runs know of the counters they
// incremented: the advisory lock keys a failed run leaves for the next.
type counterLane struct{ keys []int64 }

// add merges keys (one run's counters) into the lane's keys, kept sorted so
// that runs taking several locks take them in one order.
func (l *counterLane) add(keys []int64) {
	for _, k := range keys {
		if i, found := slices.BinarySearch(l.keys, k); !found {
			l.keys = slices.Insert(l.keys, i, k)
		}
	}
}

// lockKey names the advisory lock of the counter under key in table, in the
// store's schema. Two counters sharing a lock only wait for each other.
func lockKey(schema string, table billing.Table, key []byte) int64 {
	h := fnv.New64a()
	h.Write([]byte(schema))
	h.Write([]byte{0})
	h.Write([]byte(table))
	h.Write([]byte{0})
	h.Write(key)
	return int64(h.Sum64())
}

// begin begins a transaction: in the lane of the counters lane names, if
// any. release ends what begin took besides the transaction (nothing
// outside a lane); it runs after the transaction ended.
func (s *Store) begin(ctx context.Context, opts pgx.TxOptions, lane *counterLane) (ptx pgx.Tx, release func(), err error) {
	if lane != nil && len(lane.keys) > 0 {
		return s.beginInLane(ctx, opts, lane.keys)
	}
	ptx, err = s.pool.BeginTx(ctx, opts)
	return ptx, func() {}, err
}

// beginInLane takes the session advisory locks keys on a connection of its
// own, then begins the transaction on it. release gives the locks back and
// the connection to the pool; a connection whose locks could not be given
// back is closed, which gives them back.
func (s *Store) beginInLane(ctx context.Context, opts pgx.TxOptions, keys []int64) (pgx.Tx, func(), error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, nil, err
	}
	release := func() {
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if _, err := conn.Exec(uctx, `select pg_advisory_unlock_all()`); err != nil {
			_ = conn.Hijack().Close(uctx)
			return
		}
		conn.Release()
	}
	for _, k := range keys {
		if _, err := conn.Exec(ctx, `select pg_advisory_lock($1)`, k); err != nil {
			release()
			return nil, nil, err
		}
	}
	ptx, err := conn.BeginTx(ctx, opts)
	if err != nil {
		release()
		return nil, nil, err
	}
	return ptx, release, nil
}
