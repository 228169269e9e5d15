package pgstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/billingd/billing"
)

// batcher gathers concurrent Batch calls into groups that run in one
// transaction and one commit, as bbolt's DB.Batch does: a group starts
// MaxBatchDelay after its first call, or at once when it holds
// MaxBatchSize calls.
type batcher struct {
	s   *Store
	mu  sync.Mutex
	cur *batchGroup
}

type batchGroup struct {
	b     *batcher
	once  sync.Once
	timer *time.Timer
	calls []batchCall
}

type batchCall struct {
	ctx context.Context
	fn  func(billing.Tx) error
	// done receives the call's outcome: nil (committed), an error, or
	// errRunAlone.
	done chan error
}

// errRunAlone tells a call that its function failed in a group: the others
// ran again without it, and it runs in a transaction of its own so it gets
// its own error (or panic).
var errRunAlone = errors.New("pgstore: run alone")

// panicked carries a panic of a function run in a group.
type panicked struct{ v any }

func (p panicked) Error() string { return fmt.Sprintf("panic: %v", p.v) }

// Batch runs fn with the functions of concurrent Batch calls in one
// SERIALIZABLE transaction. A function that fails is taken out of the
// group, the others run again without it, and it then runs alone; so, as
// the port says, fn may run more than once.
func (s *Store) Batch(ctx context.Context, fn func(billing.Tx) error) error {
	if err := s.enter(ctx); err != nil {
		return err
	}
	defer s.running.Done()
	call := batchCall{ctx: ctx, fn: fn, done: make(chan error, 1)}
	s.batch.add(call)
	err := <-call.done
	if err == errRunAlone {
		var lane counterLane
		return s.retry(ctx, func() (error, bool) {
			return s.runOnce(ctx, readWrite, &lane, func(t *tx) error { return fn(t) })
		})
	}
	return err
}

func (b *batcher) add(call batchCall) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cur == nil {
		g := &batchGroup{b: b}
		g.timer = time.AfterFunc(b.s.opts.MaxBatchDelay, g.trigger)
		b.cur = g
	}
	g := b.cur
	g.calls = append(g.calls, call)
	if len(g.calls) >= b.s.opts.MaxBatchSize {
		b.cur = nil
		go g.trigger()
	}
}

// trigger runs the group once, closing it to new calls first.
func (g *batchGroup) trigger() {
	g.once.Do(func() {
		g.b.mu.Lock()
		if g.b.cur == g {
			g.b.cur = nil
		}
		g.b.mu.Unlock()
		g.timer.Stop()
		g.run()
	})
}

// run commits the group, taking out each function that fails until the
// rest succeed together.
func (g *batchGroup) run() {
	s := g.b.s
	calls := g.calls
	for len(calls) > 0 {
		failed := -1
		var lane counterLane
		err := s.retry(context.Background(), func() (error, bool) {
			failed = -1
			err, again := s.runOnce(context.Background(), readWrite, &lane, func(t *tx) error {
				for i, c := range calls {
					if err := runCall(c, t); err != nil {
						failed = i
						return err
					}
				}
				return nil
			})
			if again {
				failed = -1 // the server's failure, not the function's
			}
			return err, again
		})
		if err != nil && failed >= 0 {
			calls[failed].done <- errRunAlone
			calls = append(calls[:failed:failed], calls[failed+1:]...)
			continue
		}
		for _, c := range calls {
			c.done <- err
		}
		return
	}
}

// runCall runs one call's function, turning a panic into an error (the
// function panics again, in its caller's goroutine, when it runs alone).
func runCall(c batchCall, t *tx) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = panicked{p}
		}
	}()
	if err := c.ctx.Err(); err != nil {
		return err
	}
	return c.fn(t)
}
