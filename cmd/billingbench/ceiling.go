package main

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"
	bolt "go.etcd.io/bbolt"

	"github.com/billingd/billing"
)

// The ceilings: the least a server or a store can do for the same work.

// Group commit settings of the ceilings: boltstore's defaults (Options),
// so that P1 compares the same commit policy.
const (
	ceilingBatchDelay = 2 * time.Millisecond
	ceilingBatchSize  = 1000
)

// eventsBucket is the bucket the ceilings write to; the raw scan reads
// billingd's own table of the same name.
var eventsBucket = []byte("usage_events")

// ceilingServer is a bare gin server on loopback, with its bbolt file when
// it has one.
type ceilingServer struct {
	url  string
	http *http.Server
	done chan error
	db   *bolt.DB
}

// stop shuts the server down and closes its file.
func (c *ceilingServer) stop() error {
	err := shutdown(c.http, c.done)
	if c.db != nil {
		err = errors.Join(err, c.db.Close())
	}
	return err
}

// startIngestCeiling starts the ceiling of P1: a bare gin server whose
// POST /usage-events decodes the same JSON into the same params type,
// writes the event with bbolt's DB.Batch (fsync on, boltstore's batch
// settings), and answers 201 with the event.
func startIngestCeiling(path string) (*ceilingServer, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		return nil, err
	}
	db.MaxBatchDelay, db.MaxBatchSize = ceilingBatchDelay, ceilingBatchSize
	if err := db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket(eventsBucket); return err }); err != nil {
		db.Close()
		return nil, err
	}
	r := gin.New()
	r.POST("/usage-events", func(c *gin.Context) {
		var p billing.UsageEventParams
		if err := c.ShouldBindJSON(&p); err != nil {
			c.JSON(http.StatusBadRequest, gin.H{"error": err.Error()})
			return
		}
		id := uuid.Must(uuid.NewV7())
		e := billing.UsageEvent{ID: id.String(), CustomerEventID: id.String(), CustomerAlias: p.CustomerAlias,
			EventType: p.EventType, EventTimestamp: time.Now().UTC(), EventProperties: p.EventProperties}
		if p.EventTimestamp != nil {
			e.EventTimestamp = p.EventTimestamp.UTC()
		}
		v, err := json.Marshal(e)
		if err == nil {
			err = db.Batch(func(tx *bolt.Tx) error { return tx.Bucket(eventsBucket).Put(id[:], v) })
		}
		if err != nil {
			c.JSON(http.StatusInternalServerError, gin.H{"error": err.Error()})
			return
		}
		c.Data(http.StatusCreated, "application/json; charset=utf-8", v)
	})
	return startCeiling(r, db)
}

// startListCeiling starts the ceiling of P3: a bare gin server answering
// GET /usage-metrics with body, a copy of billingd's answer.
func startListCeiling(body []byte) (*ceilingServer, error) {
	r := gin.New()
	r.GET("/usage-metrics", func(c *gin.Context) {
		c.Data(http.StatusOK, "application/json; charset=utf-8", body)
	})
	return startCeiling(r, nil)
}

func startCeiling(r *gin.Engine, db *bolt.DB) (*ceilingServer, error) {
	url, srv, done, err := listen(r)
	if err != nil {
		if db != nil {
			db.Close()
		}
		return nil, err
	}
	return &ceilingServer{url: url, http: srv, done: done, db: db}, nil
}

// records is a list of stored key-value pairs in one flat buffer, so that a
// million of them cost two allocations.
type records struct {
	buf  []byte
	ends []int // key end, value end, key end, ...
}

func (r *records) add(k, v []byte) {
	r.buf = append(r.buf, k...)
	r.ends = append(r.ends, len(r.buf))
	r.buf = append(r.buf, v...)
	r.ends = append(r.ends, len(r.buf))
}

func (r *records) len() int { return len(r.ends) / 2 }

// at returns the i-th key and value.
func (r *records) at(i int) (k, v []byte) {
	start := 0
	if i > 0 {
		start = r.ends[2*i-1]
	}
	return r.buf[start:r.ends[2*i]], r.buf[r.ends[2*i]:r.ends[2*i+1]]
}

// rawWrite is the ceiling of P2: it writes recs, billingd's own stored
// records, to a fresh bbolt file at path, per transactions of perTx
// records, fsync on, and returns the time it took.
func rawWrite(path string, recs *records, perTx int) (time.Duration, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		return 0, err
	}
	defer db.Close()
	return rawWriteTo(db, recs, perTx)
}

// rawWriteTo writes recs to db's usage_events bucket, perTx records per
// transaction, and returns the time it took.
func rawWriteTo(db *bolt.DB, recs *records, perTx int) (time.Duration, error) {
	start := time.Now()
	for i := 0; i < recs.len(); i += perTx {
		err := db.Update(func(tx *bolt.Tx) error {
			b, err := tx.CreateBucketIfNotExists(eventsBucket)
			if err != nil {
				return err
			}
			for j := i; j < min(i+perTx, recs.len()); j++ {
				if err := b.Put(recs.at(j)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return 0, err
		}
	}
	return time.Since(start), nil
}

// openRaw opens the bbolt file at path read-only, with a shared lock.
func openRaw(path string) (*bolt.DB, error) {
	return bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
}

// rawScan is the ceiling of P4: a bbolt cursor scan over every key of
// billingd's usage_events bucket, touching each key and value. It returns
// the number of records.
func rawScan(db *bolt.DB) (int, error) {
	count := 0
	err := db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(eventsBucket)
		if b == nil {
			return errors.New("no usage_events bucket")
		}
		n, size := 0, 0
		c := b.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			n, size = n+1, size+len(k)+len(v)
		}
		if size == 0 {
			return errors.New("no events stored")
		}
		count = n
		return nil
	})
	return count, err
}

// timed returns how long fn took.
func timed(fn func() error) (time.Duration, error) {
	start := time.Now()
	err := fn()
	return time.Since(start), err
}

// appendEventJSON appends the reference event of BENCHMARKS.md, P7: an
// alias of 20 characters, an event type of 10, and three properties: a
// 10-character string, an integer and a 2-digit decimal (written as JSON
// numbers: billingd reads them exactly, never as floats).
func appendEventJSON(b []byte, alias, eventType string, i int, ts time.Time) []byte {
	b = append(b, `{"customerAlias":"`...)
	b = append(b, alias...)
	b = append(b, `","eventType":"`...)
	b = append(b, eventType...)
	b = append(b, `","eventTimestamp":"`...)
	b = ts.UTC().AppendFormat(b, time.RFC3339)
	b = append(b, `","eventProperties":{"region":"region-`...)
	b = appendPadded(b, i%1000, 3)
	b = append(b, `","requests":`...)
	b = appendInt(b, i%97)
	b = append(b, `,"amount":`...)
	b = appendInt(b, i%50)
	b = append(b, '.')
	b = appendPadded(b, i%100, 2)
	return append(b, "}}"...)
}

// appendBatchJSON appends a batch body of the reference events first to
// first+n-1 of alias, at the timestamps ts(i).
func appendBatchJSON(b []byte, alias, eventType string, first, n int, ts func(i int) time.Time) []byte {
	b = append(b, `{"events":[`...)
	for i := first; i < first+n; i++ {
		if i > first {
			b = append(b, ',')
		}
		b = appendEventJSON(b, alias, eventType, i, ts(i))
	}
	return append(b, "]}"...)
}

func appendPadded(b []byte, v, width int) []byte {
	var tmp [20]byte
	d := strconv.AppendInt(tmp[:0], int64(v), 10)
	for range width - len(d) {
		b = append(b, '0')
	}
	return append(b, d...)
}

func appendInt(b []byte, v int) []byte { return strconv.AppendInt(b, int64(v), 10) }
