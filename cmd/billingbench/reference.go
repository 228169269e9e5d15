package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"runtime/metrics"
	"slices"
	"sync"
	"time"

	"github.com/billingd/billing"
	"github.com/billingd/billing/storage/boltstore"
)

// refData is the reference data set: b.cfg.events reference events of one
// customer and event type spread over July 2024, ingested through the
// server (P7), calculated over (P4), then buried among other events (P5).
type refData struct {
	path     string
	events   int
	srv      *server // nil while stopped
	metricID string
	// account and auth are those of the server that ingested the events,
	// for later read-only servers.
	account, auth string

	peakHeap   uint64  // P7: bytes, sampled while ingesting
	fileSize   int64   // P7: bytes after ingesting
	ingestRate float64 // events/s

	// before is a copy of the file as P4 measured it, made by addOthers.
	before string
	others int // events of others added
}

// reference returns the reference data set, building it on first use.
func (b *bench) reference(ctx context.Context) (*refData, error) {
	if b.ref == nil && b.refErr == nil {
		b.ref, b.refErr = buildReference(ctx, b)
	}
	return b.ref, b.refErr
}

// buildReference ingests the reference events through POST
// /usage-events/batch, durably, sampling the heap meanwhile, and creates
// the SUM metric P4 calculates.
func buildReference(ctx context.Context, b *bench) (*refData, error) {
	runtime.GC() // the leftovers of earlier measures do not count in P7
	ref := &refData{path: b.path("reference"), events: b.cfg.events}
	b.progress("ingesting %d reference events", ref.events)
	srv, err := startServer(ctx, ref.path, nil)
	if err != nil {
		return nil, err
	}
	ref.srv, ref.account, ref.auth = srv, srv.account, srv.auth
	at := spread(ref.events)
	requests := (ref.events + batchSize - 1) / batchSize
	l := load{conns: b.cfg.batchConns, requests: requests, limit: time.Hour, status: http.StatusCreated, auth: srv.auth,
		request: func(i int) (string, string, []byte) {
			n := min(batchSize, ref.events-i*batchSize)
			return http.MethodPost, "/usage-events/batch", appendBatchJSON(make([]byte, 0, n*200), refAlias, refType, i*batchSize, n, at)
		}}
	stopSampling := sampleHeap(5 * time.Millisecond)
	got, err := l.run(ctx, srv.url)
	ref.peakHeap = stopSampling()
	if err != nil {
		ref.close()
		return nil, err
	}
	if got.requests != requests {
		ref.close()
		return nil, fmt.Errorf("ingested %d of %d batches", got.requests, requests)
	}
	ref.ingestRate = float64(ref.events) / got.elapsed.Seconds()
	if ref.fileSize, err = storeSize(ctx, ref.path); err != nil {
		ref.close()
		return nil, err
	}
	body := fmt.Appendf(nil, `{"name":"Amount","metricType":"SIMPLE","eventType":%q,"aggregationType":"SUM","aggregationProperty":"amount"}`, refType)
	answer, err := send(ctx, srv.url, srv.auth, http.MethodPost, "/usage-metrics", body, http.StatusCreated)
	var m struct{ ID string }
	if err == nil {
		err = json.Unmarshal(answer, &m)
	}
	if err != nil {
		ref.close()
		return nil, err
	}
	ref.metricID = m.ID
	return ref, nil
}

// sampleHeap samples the Go heap in use (live and not yet swept objects,
// plus the unused part of in-use spans: MemStats.HeapInuse) every interval
// until the returned function is called, which returns the peak.
func sampleHeap(every time.Duration) func() uint64 {
	samples := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/unused:bytes"}}
	var peak uint64
	read := func() {
		metrics.Read(samples)
		peak = max(peak, samples[0].Value.Uint64()+samples[1].Value.Uint64())
	}
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			read()
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	return func() uint64 {
		close(stop)
		<-done
		read()
		return peak
	}
}

// start (re)starts the server over the data set.
func (ref *refData) start(ctx context.Context, opts *boltstore.Options) error {
	if ref.srv != nil {
		return nil
	}
	srv, err := startServerAs(ctx, ref.path, opts, ref.account, ref.auth)
	ref.srv = srv
	return err
}

// stop stops the server, releasing the file.
func (ref *refData) stop() error {
	if ref.srv == nil {
		return nil
	}
	err := ref.srv.stop()
	ref.srv = nil
	return err
}

func (ref *refData) close() { _ = ref.stop() }

// calculateOn returns a function running the calculation once on srv.
func (ref *refData) calculateOn(ctx context.Context, srv *server) func() error {
	q := url.Values{"customerAliases": {refAlias}, "periodStart": {"2024-07-01"}, "periodEnd": {"2024-07-31"}}
	path := "/usage-metrics/" + ref.metricID + "/calculate?" + q.Encode()
	return func() error {
		answer, err := send(ctx, srv.url, srv.auth, http.MethodGet, path, nil, http.StatusOK)
		if err != nil {
			return err
		}
		var c struct{ EventCount int }
		if err := json.Unmarshal(answer, &c); err != nil {
			return err
		}
		if c.EventCount != ref.events {
			return fmt.Errorf("the calculation counted %d events, want %d", c.EventCount, ref.events)
		}
		return nil
	}
}

// calcAndScan measures P4: the calculation and its ceiling, a raw bbolt
// scan of the same file, in turns, so that a change of machine load hits
// both alike. The server runs on a read-only store meanwhile, whose shared
// file lock lets the raw reader open the file too. It returns the median
// times and the number of records scanned.
func (ref *refData) calcAndScan(ctx context.Context, runs int) (calc, scan time.Duration, n int, err error) {
	if err := ref.stop(); err != nil {
		return 0, 0, 0, err
	}
	if err := ref.start(ctx, &boltstore.Options{ReadOnly: true}); err != nil {
		return 0, 0, 0, err
	}
	defer ref.stop()
	raw, err := openRaw(ref.path)
	if err != nil {
		return 0, 0, 0, err
	}
	defer raw.Close()
	calcOnce := ref.calculateOn(ctx, ref.srv)
	var calcs, scans []time.Duration
	for i := range runs + 1 {
		c, err := timed(calcOnce)
		if err != nil {
			return 0, 0, 0, err
		}
		var s time.Duration
		if s, err = timed(func() (err error) { n, err = rawScan(raw); return err }); err != nil {
			return 0, 0, 0, err
		}
		if i > 0 { // the first run of each warms up
			calcs, scans = append(calcs, c), append(scans, s)
		}
	}
	return slices.Min(calcs), slices.Min(scans), n, nil
}

// calcBeforeAndAfter measures P5: the calculation on a read-only copy of
// the file as P4 measured it and on the grown file, in turns, and returns
// the fastest of each.
func (ref *refData) calcBeforeAndAfter(ctx context.Context, runs int) (before, after time.Duration, err error) {
	if err := ref.start(ctx, &boltstore.Options{ReadOnly: true}); err != nil {
		return 0, 0, err
	}
	defer ref.stop()
	old, err := startServerAs(ctx, ref.before, &boltstore.Options{ReadOnly: true}, ref.account, ref.auth)
	if err != nil {
		return 0, 0, err
	}
	defer old.stop()
	calcBefore, calcAfter := ref.calculateOn(ctx, old), ref.calculateOn(ctx, ref.srv)
	var befores, afters []time.Duration
	for i := range runs + 1 {
		b, err := timed(calcBefore)
		if err != nil {
			return 0, 0, err
		}
		a, err := timed(calcAfter)
		if err != nil {
			return 0, 0, err
		}
		if i > 0 {
			befores, afters = append(befores, b), append(afters, a)
		}
	}
	return slices.Min(befores), slices.Min(afters), nil
}

// addOthers stores b.cfg.others times the reference events more, of other
// customers (nine tenths, same event type) and of the reference customer
// with other event types (one tenth), spread over the same month; sync is
// off while filling, as the write path is not what P5 measures. It returns
// the number of events added.
func (ref *refData) addOthers(ctx context.Context, b *bench) (int, error) {
	if ref.others != 0 {
		return ref.others, nil
	}
	if err := ref.stop(); err != nil {
		return 0, err
	}
	ref.before = ref.path + ".p4"
	if err := copyFile(ref.before, ref.path); err != nil {
		return 0, err
	}
	if err := ref.start(ctx, &boltstore.Options{NoSync: true}); err != nil {
		return 0, err
	}
	type series struct {
		alias, eventType string
		n                int
	}
	var all []series
	for k := range b.cfg.others {
		all = append(all, series{alias(k + 2), refType, ref.events * 9 / 10}, series{refAlias, fmt.Sprintf("other_typ%d", k), ref.events / 10})
	}
	b.progress("adding %d events of other customers and types", b.cfg.others*ref.events)
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	work := make(chan series)
	for range 2 {
		wg.Go(func() {
			for s := range work {
				n, err := ref.fill(ctx, s.alias, s.eventType, s.n)
				mu.Lock()
				ref.others += n
				firstErr = cmp.Or(firstErr, err)
				mu.Unlock()
			}
		})
	}
	for _, s := range all {
		work <- s
	}
	close(work)
	wg.Wait()
	if firstErr != nil {
		return 0, firstErr
	}
	// Back to a durable store, as billingd runs.
	if err := ref.stop(); err != nil {
		return 0, err
	}
	return ref.others, nil
}

// fill stores n reference events of alias and eventType through the
// Service, 1,000 per batch, and returns how many it stored.
func (ref *refData) fill(ctx context.Context, alias, eventType string, n int) (int, error) {
	at := spread(n)
	batch := make([]billing.UsageEventParams, 0, batchSize)
	stored := 0
	for i := range n {
		ts := at(i)
		batch = append(batch, billing.UsageEventParams{CustomerAlias: alias, EventType: eventType, EventTimestamp: &ts,
			EventProperties: billing.EventProperties{
				"region":   billing.StringProperty(fmt.Sprintf("region-%03d", i%1000)),
				"requests": billing.NumberProperty(billing.DecimalFromInt(int64(i % 97))),
				"amount":   billing.NumberProperty(billing.MustDecimal(fmt.Sprintf("%d.%02d", i%50, i%100))),
			}})
		if len(batch) == cap(batch) || i == n-1 {
			if _, err := ref.srv.svc.CreateUsageEventBatch(ctx, ref.srv.account, billing.UsageEventBatchParams{Events: batch}); err != nil {
				return stored, err
			}
			stored += len(batch)
			batch = batch[:0]
		}
	}
	return stored, nil
}

// copyFile copies the file at src to a new file at dst.
func copyFile(dst, src string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	return errors.Join(err, out.Close())
}
