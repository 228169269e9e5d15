package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/billingd/billing"
	"github.com/billingd/billing/internal/eventcodec"
	"github.com/billingd/billing/storage/boltstore"
)

// seqChunks is the number of turns of the one-connection P2: billingd
// sends a chunk of batches, then raw bbolt writes the records billingd
// stored for them, and so on, so that a change of machine load (the
// virtual disk's fsync time swings) hits both sides alike.
const seqChunks = 10

// measureP2Sequential: POST /usage-events/batch from one connection,
// batches of 1,000 events sent one after the other (a backfill or an
// importer), with b.cfg.prestored events already stored, against raw bbolt
// writing the same stored records 1,000 per transaction onto a file
// holding the same prestored records. Every request carries new events of
// one of 16 customers in turn, later than all stored before; the bodies of
// a turn are encoded before its clock starts.
func measureP2Sequential(ctx context.Context, b *bench) ([]row, error) {
	name := fmt.Sprintf("POST /usage-events/batch, %d/request, 1 conn, %d stored", batchSize, b.cfg.prestored)
	if pgBase != "" {
		return []row{{id: "P2", name: name, notAvailable: true, note: "one connection: measured on bbolt only (P8 is PostgreSQL's batch measure)"}}, nil
	}
	pre, timedBatches := b.cfg.prestored/batchSize, b.cfg.seqEvents/batchSize
	at := spread(b.cfg.prestored + b.cfg.seqEvents)
	body := func(i int) []byte {
		return appendBatchJSON(make([]byte, 0, batchSize*200), alias(i%16), refType, i*batchSize, batchSize, at)
	}
	path, rawPath := b.path("p2-seq"), b.path("p2-seq-ceiling")
	if err := prestore(ctx, b, path, rawPath, pre, body); err != nil {
		return nil, err
	}
	srv, err := startServer(ctx, path, nil)
	if err != nil {
		return nil, err
	}
	defer srv.stop()
	raw, err := bolt.Open(rawPath, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		return nil, err
	}
	defer raw.Close()
	var got, ceil time.Duration
	sent := 0
	for c := range seqChunks {
		first, end := pre+c*timedBatches/seqChunks, pre+(c+1)*timedBatches/seqChunks
		if first == end {
			continue
		}
		g, d, err := seqTurn(ctx, srv, raw, first, end, body, at(first*batchSize))
		if err != nil {
			return nil, fmt.Errorf("turn %d: %w", c, err)
		}
		got, ceil, sent = got+g, ceil+d, sent+(end-first)*batchSize
	}
	return []row{{id: "P2", name: name, value: float64(sent) / got.Seconds(), unit: "events/s",
		ceiling: float64(sent) / ceil.Seconds(), ceilingName: "raw bbolt", atLeast: true, target: 0.5,
		note: fmt.Sprintf("1 conn: %d turns of (billingd, then raw bbolt on its stored records), %.1f ms per batch (ceiling %.1f ms)",
			seqChunks, ms(got)/float64(sent/batchSize), ms(ceil)/float64(sent/batchSize))}}, nil
}

// seqTurn sends batches first to end-1 to srv from one connection, their
// bodies encoded before the clock starts, then writes the records billingd
// stored for them (those at or after since) to raw, 1,000 per transaction;
// it returns the time of each side.
func seqTurn(ctx context.Context, srv *server, raw *bolt.DB, first, end int, body func(i int) []byte, since time.Time) (got, ceil time.Duration, err error) {
	bodies := make([][]byte, end-first)
	for i := range bodies {
		bodies[i] = body(first + i)
	}
	l := load{conns: 1, requests: len(bodies), limit: 10 * time.Minute, status: http.StatusCreated, auth: srv.auth,
		request: func(i int) (string, string, []byte) { return http.MethodPost, "/usage-events/batch", bodies[i] }}
	res, err := l.run(ctx, srv.url)
	if err != nil {
		return 0, 0, err
	}
	if res.requests != len(bodies) {
		return 0, 0, fmt.Errorf("sent %d of %d batches", res.requests, len(bodies))
	}
	recs, err := storedSince(ctx, srv.store, since)
	if err != nil {
		return 0, 0, err
	}
	if recs.len() != len(bodies)*batchSize {
		return 0, 0, fmt.Errorf("billingd stored %d events, want %d", recs.len(), len(bodies)*batchSize)
	}
	ceil, err = rawWriteTo(raw, &recs, batchSize)
	return res.elapsed, ceil, err
}

// prestore stores batches 0 to n-1 through a billingd on the file at path
// (fsync off: not measured), then writes the records it stored to a raw
// bbolt file at rawPath in large transactions, and syncs both.
func prestore(ctx context.Context, b *bench, path, rawPath string, n int, body func(i int) []byte) error {
	b.progress("storing %d events first", n*batchSize)
	srv, err := startServer(ctx, path, &boltstore.Options{NoSync: true})
	if err != nil {
		return err
	}
	l := load{conns: b.cfg.batchConns, requests: n, limit: time.Hour, status: http.StatusCreated, auth: srv.auth,
		request: func(i int) (string, string, []byte) { return http.MethodPost, "/usage-events/batch", body(i) }}
	res, err := l.run(ctx, srv.url)
	if err == nil && res.requests != n {
		err = fmt.Errorf("stored %d of %d batches", res.requests, n)
	}
	var recs records
	if err == nil {
		recs, err = storedSince(ctx, srv.store, time.Time{})
	}
	if err = errors.Join(err, srv.stop()); err != nil {
		return err
	}
	if err := syncFile(path); err != nil {
		return err
	}
	raw, err := bolt.Open(rawPath, 0o600, &bolt.Options{Timeout: time.Second, NoSync: true})
	if err != nil {
		return err
	}
	_, err = rawWriteTo(raw, &recs, 100_000)
	if err == nil {
		err = raw.Sync()
	}
	return errors.Join(err, raw.Close())
}

// storedSince returns the usage_events records of st with a timestamp at
// or after since, in key order.
func storedSince(ctx context.Context, st billing.Store, since time.Time) (records, error) {
	var recs records
	bound := eventcodec.TimeBound(since)
	err := st.View(ctx, func(tx billing.Tx) error {
		return tx.Scan(ctx, billing.Table(eventsBucket), billing.Range{}, func(k, v []byte) error {
			if since.IsZero() || eventcodec.KeyTime(k) >= bound {
				recs.add(k, v)
			}
			return nil
		})
	})
	return recs, err
}

// syncFile flushes the file at path to disk.
func syncFile(path string) error {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		return err
	}
	return errors.Join(db.Sync(), db.Close())
}
