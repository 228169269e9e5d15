package render

import (
	"container/list"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"time"

	"github.com/billingd/billing"
)

// PoolConfig holds the limits of a Pool. Every zero field takes its
// documented default.
type PoolConfig struct {
	// Concurrency is how many documents are rendered at once. Defaults to
	// the number of CPUs the process may use (GOMAXPROCS): a render keeps
	// one core busy, so more at once only makes each slower and the
	// memory they hold larger.
	Concurrency int

	// Queue is how many renders may wait for a free slot. A render that
	// finds the queue full is refused at once with ErrBusy. Defaults to
	// 4 × Concurrency.
	Queue int

	// MaxWait bounds how long a render may take, waiting in the queue
	// and running, as the pool estimates it from the average render: a
	// render that would take longer is refused with ErrBusy when it
	// arrives, or when its slot comes too late. Defaults to 20 seconds
	// (well within the server's 60-second write timeout).
	MaxWait time.Duration

	// CacheBytes bounds the renderings of issued documents kept in
	// memory (least recently used first out). Defaults to 64 MiB;
	// negative turns the cache off.
	CacheBytes int64
}

// Pool renders documents with a bounded number of renders at once and a
// bounded queue, and keeps the renderings of issued (finalized, sent or
// voided) documents: they are frozen, so a repeated download costs the
// read of the document and a hash, not a render. Concurrent requests for
// the same issued document share one render.
//
// The REST API, the console and the Dispatcher's e-mails share one Pool
// in billingd serve, so the renders of all three together stay within its
// limits. A nil *Pool renders at once, without limits or cache.
type Pool struct {
	cfg     PoolConfig
	slots   chan struct{} // a token per render running
	admit   chan struct{} // a token per render running or waiting
	mu      sync.Mutex
	cache   *lru
	flights map[string]*flight
	avg     time.Duration // moving average of a render's duration
	stats   PoolStats
}

// PoolStats counts what a Pool did since it was made.
type PoolStats struct {
	// Renders is how many renders ran.
	Renders int64
	// CacheHits is how many renderings were served from the cache or
	// shared with a render another request started.
	CacheHits int64
	// Refused is how many renders were refused with ErrBusy.
	Refused int64
}

// Stats returns the pool's counts.
func (p *Pool) Stats() PoolStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats
}

// flight is a render of an issued document that other requests for the
// same rendering wait for.
type flight struct {
	done chan struct{}
	out  []byte
	err  error
}

// ErrBusy is the error of a render refused because the pool's queue is
// full or the render waited MaxWait: code unavailable (503). RetryAfter
// tells how long a client should wait.
var ErrBusy = &billing.Error{Code: billing.CodeUnavailable,
	Message: "the server is busy rendering documents; retry after the time in the Retry-After header"}

// busyError is ErrBusy with the wait a client is told.
type busyError struct{ after time.Duration }

func (e *busyError) Error() string   { return ErrBusy.Message }
func (e *busyError) Unwrap() error   { return ErrBusy }
func (e *busyError) Is(t error) bool { return t == ErrBusy }

// RetryAfter returns how long the client of a render refused with ErrBusy
// should wait, in whole seconds (at least 1), and whether err is such a
// refusal.
func RetryAfter(err error) (int, bool) {
	var b *busyError
	if !errors.As(err, &b) {
		return 0, false
	}
	return max(1, min(int(math.Ceil(b.after.Seconds())), 60)), true
}

// NewPool returns a Pool with the limits of cfg.
func NewPool(cfg PoolConfig) *Pool {
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = runtime.GOMAXPROCS(0)
	}
	if cfg.Queue <= 0 {
		cfg.Queue = 4 * cfg.Concurrency
	}
	if cfg.MaxWait <= 0 {
		cfg.MaxWait = 20 * time.Second
	}
	if cfg.CacheBytes == 0 {
		cfg.CacheBytes = 64 << 20
	}
	return &Pool{
		cfg:     cfg,
		slots:   make(chan struct{}, cfg.Concurrency),
		admit:   make(chan struct{}, cfg.Concurrency+cfg.Queue),
		cache:   newLRU(cfg.CacheBytes),
		flights: map[string]*flight{},
		avg:     250 * time.Millisecond,
	}
}

// Config returns the pool's limits, defaults applied.
func (p *Pool) Config() PoolConfig { return p.cfg }

// PDF renders d as PDF (see the package's PDF) within the pool's limits.
func (p *Pool) PDF(ctx context.Context, d *billing.PrintableDocument) ([]byte, error) {
	return p.render(ctx, d, "pdf", PDF)
}

// HTML renders d as HTML (see the package's HTML) within the pool's limits.
func (p *Pool) HTML(ctx context.Context, d *billing.PrintableDocument) ([]byte, error) {
	return p.render(ctx, d, "html", HTML)
}

// Render renders d with draw in a format of another package (an
// e-invoice, say) within the pool's limits and through its cache, like PDF
// and HTML; format names the rendering in the cache and must differ from
// "pdf" and "html".
func (p *Pool) Render(ctx context.Context, d *billing.PrintableDocument, format string, draw func(*billing.PrintableDocument) ([]byte, error)) ([]byte, error) {
	return p.render(ctx, d, format, draw)
}

// Email renders d's e-mail (see the package's Email) with its PDF made
// within the pool's limits.
func (p *Pool) Email(ctx context.Context, d *billing.PrintableDocument) (*billing.Email, error) {
	pdf, err := p.PDF(ctx, d)
	if err != nil {
		return nil, err
	}
	return email(d, pdf)
}

// render returns the rendering of d in format made by draw: from the cache
// or a shared flight for an issued document, else drawn in a slot.
func (p *Pool) render(ctx context.Context, d *billing.PrintableDocument, format string, draw func(*billing.PrintableDocument) ([]byte, error)) ([]byte, error) {
	if p == nil {
		return draw(d)
	}
	key := cacheKey(d, format)
	if key == "" {
		return p.slot(ctx, func() ([]byte, error) { return draw(d) })
	}
	p.mu.Lock()
	if b, ok := p.cache.get(key); ok {
		p.stats.CacheHits++
		p.mu.Unlock()
		return b, nil
	}
	if f := p.flights[key]; f != nil {
		p.stats.CacheHits++
		p.mu.Unlock()
		select {
		case <-f.done:
			return f.out, f.err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	f := &flight{done: make(chan struct{})}
	p.flights[key] = f
	p.mu.Unlock()

	f.out, f.err = p.slot(ctx, func() ([]byte, error) { return draw(d) })
	p.mu.Lock()
	delete(p.flights, key)
	if f.err == nil {
		p.cache.put(key, f.out)
	}
	p.mu.Unlock()
	close(f.done)
	return f.out, f.err
}

// slot runs fn when a render slot is free: at once when one is, after a
// wait in the queue otherwise. It refuses with ErrBusy when the queue is
// full, or when the wait and the render would, at the average render's
// pace, take more than MaxWait: a refused client is told so at once
// rather than after a long wait.
func (p *Pool) slot(ctx context.Context, fn func() ([]byte, error)) ([]byte, error) {
	select {
	case p.admit <- struct{}{}:
	default:
		return nil, p.busy()
	}
	defer func() { <-p.admit }()
	select {
	case p.slots <- struct{}{}:
	default:
		start := time.Now()
		if p.expected(len(p.admit)-1) > p.cfg.MaxWait {
			return nil, p.busy()
		}
		t := time.NewTimer(p.cfg.MaxWait)
		defer t.Stop()
		select {
		case p.slots <- struct{}{}:
		case <-t.C:
			return nil, p.busy()
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if time.Since(start)+p.expected(0) > p.cfg.MaxWait {
			<-p.slots
			return nil, p.busy()
		}
	}
	defer func() { <-p.slots }()
	start := time.Now()
	out, err := fn()
	p.mu.Lock()
	p.avg = (3*p.avg + time.Since(start)) / 4
	p.stats.Renders++
	p.mu.Unlock()
	return out, err
}

// expected is how long a render takes to finish with ahead renders
// running or waiting before it: the waves of renders ahead and its own,
// at the average render's pace.
func (p *Pool) expected(ahead int) time.Duration {
	p.mu.Lock()
	avg := p.avg
	p.mu.Unlock()
	return time.Duration(ahead/p.cfg.Concurrency+1) * avg
}

// busy is the refusal of a render, with the time the queue ahead of it
// takes to drain at the average render's pace.
func (p *Pool) busy() error {
	p.mu.Lock()
	p.stats.Refused++
	avg := p.avg
	p.mu.Unlock()
	waves := float64(len(p.admit)+1) / float64(p.cfg.Concurrency)
	return &busyError{after: time.Duration(waves * float64(avg))}
}

// cacheKey is the key of d's rendering in format: a hash of everything
// the rendering is made from, for an issued document; "" for a draft,
// which changes and is not kept. The customer's calendar is left out: it
// only prints the days of the document's periods, which a time zone
// change (that applies from its date on) does not move.
func cacheKey(d *billing.PrintableDocument, format string) string {
	if d.Status() == billing.StatusDraft {
		return ""
	}
	c := *d
	c.Calendar = billing.Calendar{}
	b, err := json.Marshal(&c)
	if err != nil {
		return ""
	}
	return fmt.Sprintf("%s:%x", format, sha256.Sum256(b))
}

// lru is a byte-bounded least-recently-used map of renderings. Its caller
// holds the Pool's lock.
type lru struct {
	max, size int64
	order     *list.List // of *entry, most recent first
	items     map[string]*list.Element
}

type entry struct {
	key string
	val []byte
}

func newLRU(maxBytes int64) *lru {
	return &lru{max: maxBytes, order: list.New(), items: map[string]*list.Element{}}
}

func (c *lru) get(key string) ([]byte, bool) {
	e, ok := c.items[key]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(e)
	return e.Value.(*entry).val, true
}

func (c *lru) put(key string, val []byte) {
	if int64(len(val)) > c.max || c.items[key] != nil {
		return
	}
	c.items[key] = c.order.PushFront(&entry{key, val})
	c.size += int64(len(val))
	for c.size > c.max {
		e := c.order.Back()
		c.order.Remove(e)
		delete(c.items, e.Value.(*entry).key)
		c.size -= int64(len(e.Value.(*entry).val))
	}
}
