package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/billingd/billing"
)

// batchSize is the number of events of one batch request (the API's
// maximum) and of one transaction of the P2 ceiling.
const batchSize = billing.MaxUsageEventBatch

// July 2024 is the month every reference event falls in; P4 and P5
// calculate it.
var (
	monthStart = time.Date(2024, 7, 1, 0, 0, 0, 0, time.UTC)
	monthLen   = 31 * 24 * time.Hour
)

// spread returns the timestamp of event i of n spread evenly over the month.
func spread(n int) func(i int) time.Time {
	return func(i int) time.Time { return monthStart.Add(time.Duration(i) * (monthLen / time.Duration(n))) }
}

// alias returns the 20-character alias of customer i.
func alias(i int) string { return fmt.Sprintf("customer-alias-%05d", i) }

// refAlias and refType are the customer and event type of the reference
// data set; other events of P5 use other aliases and types.
const refType = "api_calls0"

var refAlias = alias(1)

// compareLoads runs the load against the server at a and the ceiling at b,
// alternating in two rounds of half the requests and time each so that a
// change of machine load hits both sides alike, and returns both results.
func compareLoads(ctx context.Context, l load, a, authA, b string) (got, ceil loadResult, err error) {
	half := l
	half.requests = max(l.requests/2, 1)
	half.limit = l.limit / 2
	warm := l
	warm.requests, warm.limit = min(l.conns*4, l.requests), l.limit
	sides := []struct {
		url, auth string
		res       *loadResult
	}{{a, authA, &got}, {b, "", &ceil}}
	for _, s := range sides {
		warm.auth = s.auth
		if _, err := warm.run(ctx, s.url); err != nil {
			return got, ceil, err
		}
	}
	for range 2 {
		for _, s := range sides {
			half.auth = s.auth
			r, err := half.run(ctx, s.url)
			if err != nil {
				return got, ceil, err
			}
			s.res.requests += r.requests
			s.res.elapsed += r.elapsed
			s.res.p99 = max(s.res.p99, r.p99)
		}
	}
	return got, ceil, nil
}

// measureP1: single-event POST /usage-events over 64 connections, durable,
// against a bare gin server writing with DB.Batch.
func measureP1(ctx context.Context, b *bench) ([]row, error) {
	srv, err := startServer(ctx, b.path("p1"), nil)
	if err != nil {
		return nil, err
	}
	defer srv.stop()
	ceil, err := startIngestCeiling(b.path("p1-ceiling"))
	if err != nil {
		return nil, err
	}
	defer ceil.stop()
	bodies := make([][]byte, 1000)
	at := spread(len(bodies))
	for i := range bodies {
		bodies[i] = appendEventJSON(nil, alias(i%100), refType, i, at(i))
	}
	l := load{conns: b.cfg.conns, requests: b.cfg.requests, limit: b.cfg.duration, status: http.StatusCreated,
		request: func(i int) (string, string, []byte) { return http.MethodPost, "/usage-events", bodies[i%len(bodies)] }}
	got, c, err := compareLoads(ctx, l, srv.url, srv.auth, ceil.url)
	if err != nil {
		return nil, err
	}
	return []row{{id: "P1", name: fmt.Sprintf("POST /usage-events, %d conns", l.conns), value: got.perSecond(1), unit: "req/s",
		ceiling: c.perSecond(1), ceilingName: "gin+DB.Batch", atLeast: true, target: 0.8,
		note: fmt.Sprintf("p99 %v (ceiling %v)", got.p99.Round(time.Microsecond), c.p99.Round(time.Microsecond))}}, nil
}

// measureP2: POST /usage-events/batch with 1,000 events per request,
// durable, against raw bbolt writing the same stored records 1,000 per
// transaction. The ceiling needs the records billingd stored, so the two
// cannot interleave within a round; instead two rounds of (billingd, then
// its ceiling) each on fresh files, and the best rate of each side is
// reported (noise only ever lowers a rate).
func measureP2(ctx context.Context, b *bench) ([]row, error) {
	rows, err := measureP2Concurrent(ctx, b)
	if err != nil {
		return nil, err
	}
	seq, err := measureP2Sequential(ctx, b)
	if err != nil {
		return nil, err
	}
	return append(rows, seq...), nil
}

// measureP2Concurrent is P2 over b.cfg.batchConns connections on empty
// files.
func measureP2Concurrent(ctx context.Context, b *bench) ([]row, error) {
	// Every request carries new events, later than the previous requests'
	// ones, for one of 16 customers in turn: ingestion as it happens, time
	// moving forward. (Re-sending a few bodies with the same timestamps
	// would insert every batch between the copies stored before it.)
	bodies := make([][]byte, b.cfg.batchEvents/batchSize)
	at := spread(b.cfg.batchEvents)
	for i := range bodies {
		bodies[i] = appendBatchJSON(nil, alias(i%16), refType, i*batchSize, batchSize, at)
	}
	var best, ceiling float64
	var conns int
	for range 2 {
		got, ceil, n, err := p2Round(ctx, b, bodies)
		if err != nil {
			return nil, err
		}
		best, ceiling, conns = max(best, got), max(ceiling, ceil), n
	}
	return []row{{id: "P2", name: fmt.Sprintf("POST /usage-events/batch, %d/request, %d conns", batchSize, conns),
		value: best, unit: "events/s", ceiling: ceiling, ceilingName: "raw bbolt",
		atLeast: true, target: 0.5, note: "best of 2 rounds of (billingd, then raw bbolt on its stored records)"}}, nil
}

// p2Round ingests bodies into a fresh billingd, then writes the records it
// stored with raw bbolt into a fresh file; it returns both rates in events
// per second and the number of connections.
func p2Round(ctx context.Context, b *bench, bodies [][]byte) (got, ceiling float64, conns int, err error) {
	srv, err := startServer(ctx, b.path("p2"), nil)
	if err != nil {
		return 0, 0, 0, err
	}
	res, err := ingestBatches(ctx, b, srv, bodies)
	if err != nil {
		return 0, 0, 0, err
	}
	var recs records
	err = srv.store.View(ctx, func(tx billing.Tx) error {
		return tx.Scan(ctx, billing.Table(eventsBucket), billing.Range{}, func(k, v []byte) error {
			recs.add(k, v)
			return nil
		})
	})
	if err = errors.Join(err, srv.stop()); err != nil {
		return 0, 0, 0, err
	}
	if recs.len() != res.requests*batchSize {
		return 0, 0, 0, fmt.Errorf("billingd stored %d events, want %d", recs.len(), res.requests*batchSize)
	}
	d, err := rawWrite(b.path("p2-ceiling"), &recs, batchSize)
	if err != nil {
		return 0, 0, 0, err
	}
	return res.perSecond(batchSize), float64(recs.len()) / d.Seconds(), b.cfg.batchConns, nil
}

// ingestBatches sends bodies to POST /usage-events/batch of srv over the
// run's batch connections; on failure it stops srv.
func ingestBatches(ctx context.Context, b *bench, srv *server, bodies [][]byte) (loadResult, error) {
	l := load{conns: b.cfg.batchConns, requests: len(bodies), limit: 10 * time.Minute, status: http.StatusCreated, auth: srv.auth,
		request: func(i int) (string, string, []byte) {
			return http.MethodPost, "/usage-events/batch", bodies[i%len(bodies)]
		}}
	res, err := l.run(ctx, srv.url)
	if err != nil {
		srv.stop()
	}
	return res, err
}

// measureP3: GET /usage-metrics?limit=20 over 64 connections against a
// bare gin server answering a body of the same size.
func measureP3(ctx context.Context, b *bench) ([]row, error) {
	srv, err := startServer(ctx, b.path("p3"), nil)
	if err != nil {
		return nil, err
	}
	defer srv.stop()
	for i := range 40 {
		body := fmt.Appendf(nil, `{"name":"Metric %02d","metricType":"SIMPLE","eventType":"event_type_%02d","aggregationType":"SUM","aggregationProperty":"amount","unit":"requests"}`, i, i)
		if _, err := send(ctx, srv.url, srv.auth, http.MethodPost, "/usage-metrics", body, http.StatusCreated); err != nil {
			return nil, err
		}
	}
	const path = "/usage-metrics?limit=20"
	page, err := send(ctx, srv.url, srv.auth, http.MethodGet, path, nil, http.StatusOK)
	if err != nil {
		return nil, err
	}
	ceil, err := startListCeiling(page)
	if err != nil {
		return nil, err
	}
	defer ceil.stop()
	l := load{conns: b.cfg.conns, requests: b.cfg.requests, limit: b.cfg.duration, status: http.StatusOK,
		request: func(int) (string, string, []byte) { return http.MethodGet, path, nil }}
	got, c, err := compareLoads(ctx, l, srv.url, srv.auth, ceil.url)
	if err != nil {
		return nil, err
	}
	return []row{{id: "P3", name: fmt.Sprintf("GET %s, %d conns", path, l.conns), value: got.perSecond(1), unit: "req/s",
		ceiling: c.perSecond(1), ceilingName: "gin, same body", atLeast: true, target: 0.5,
		note: fmt.Sprintf("%d-byte pages; p99 %v (ceiling %v)", len(page), got.p99.Round(time.Microsecond), c.p99.Round(time.Microsecond))}}, nil
}

// measureP4: calculate SUM for one customer and one month over the
// reference data set, against a raw cursor scan of the same events.
func measureP4(ctx context.Context, b *bench, ref *refData) ([]row, error) {
	if ref.others != 0 {
		return nil, errors.New("P4 must be measured before other events are added")
	}
	calc, scan, n, err := ref.calcAndScan(ctx, b.cfg.runs)
	if err != nil {
		return nil, err
	}
	if n != ref.events {
		return nil, fmt.Errorf("the raw scan read %d events, want %d", n, ref.events)
	}
	return []row{{id: "P4", name: fmt.Sprintf("calculate SUM, 1 customer, 1 month, %d events", ref.events),
		value: ms(calc), unit: "ms", ceiling: ms(scan), ceilingName: "raw bbolt scan", target: 3,
		note: "calculation (over HTTP) and scan in turns; fastest of each"}}, nil
}

// measureP5: the calculation of P4 after storing others times as many
// events of other customers and types, against P4's time.
func measureP5(ctx context.Context, b *bench, ref *refData) ([]row, error) {
	added, err := ref.addOthers(ctx, b)
	if err != nil {
		return nil, err
	}
	before, after, err := ref.calcBeforeAndAfter(ctx, b.cfg.runs)
	if err != nil {
		return nil, err
	}
	return []row{{id: "P5", name: fmt.Sprintf("P4 among %d more events of others", added),
		value: ms(after), unit: "ms", ceiling: ms(before), ceilingName: "P4's data", target: 1.5,
		note: "the same calculation on a copy of P4's file and on the grown file, in turns"}}, nil
}

// measureP7: peak Go heap in use while the reference data set was ingested
// through POST /usage-events/batch, and bytes on disk per event.
func measureP7(ctx context.Context, b *bench, ref *refData) ([]row, error) {
	mib := float64(ref.peakHeap) / (1 << 20)
	return []row{
		{id: "P7", name: fmt.Sprintf("peak heap ingesting %d events", ref.events), value: mib, unit: "MiB",
			target: 256, targetUnit: "MiB", note: fmt.Sprintf("ingested at %.0f events/s over %d conns; the load generator's heap is included", ref.ingestRate, b.cfg.batchConns)},
		{id: "P7", name: "bytes on disk per event", value: float64(ref.fileSize) / float64(ref.events), unit: "B",
			target: 400, targetUnit: "B"},
	}, nil
}

// ms converts d to milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
