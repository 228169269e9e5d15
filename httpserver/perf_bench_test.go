package httpserver

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
)

// BenchmarkListUsageMetrics is P3 of cmd/billingbench without the network:
// GET /usage-metrics?limit=20 over 40 metrics, through the whole handler.
func BenchmarkListUsageMetrics(b *testing.B) {
	e := newEnv(b, &Config{RateLimit: -1}, billingtest.WithBolt())
	for i := range 40 {
		e.do(req{method: http.MethodPost, path: "/usage-metrics", body: fmt.Sprintf(`{"name":"Metric %02d","metricType":"SIMPLE","eventType":"event_type_%02d","aggregationType":"SUM","aggregationProperty":"amount","unit":"requests"}`, i, i)})
	}
	r := httptest.NewRequest(http.MethodGet, "/usage-metrics?limit=20", nil)
	r.Header.Set("Authorization", e.auth)
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		e.h.ServeHTTP(w, r)
		if w.Code != http.StatusOK {
			b.Fatalf("status %d: %s", w.Code, w.Body)
		}
	}
}

// BenchmarkCreateUsageEvent is P1 of cmd/billingbench without the network
// and without fsync (memstore): one POST /usage-events through the whole
// handler, to see what the request path costs besides the commit.
func BenchmarkCreateUsageEvent(b *testing.B) {
	e := newEnv(b, &Config{RateLimit: -1})
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		body := fmt.Sprintf(`{"customerAlias":"customer_%04d","eventType":"api_call","customerEventId":"evt-%d","eventTimestamp":"2024-07-30T11:00:00Z","eventProperties":{"region":"eu-west","count":3,"amount":"1.25"}}`, i%100, i)
		r := httptest.NewRequest(http.MethodPost, "/usage-events", strings.NewReader(body))
		r.Header.Set("Authorization", e.auth)
		r.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		e.h.ServeHTTP(w, r)
		if w.Code != http.StatusCreated {
			b.Fatalf("status %d: %s", w.Code, w.Body)
		}
	}
}

// BenchmarkCreateUsageEventBatch is the one-connection P2 of
// cmd/billingbench without the network and without fsync (bbolt, NoSync):
// one POST /usage-events/batch of 1,000 new events after another, each
// later than the ones before, through the whole handler, with the ids
// billingd makes (UUIDv7).
func BenchmarkCreateUsageEventBatch(b *testing.B) {
	e := newEnv(b, &Config{RateLimit: -1}, billingtest.WithBolt(), billingtest.WithUUIDs())
	start := billingtest.Start.Add(-300 * 24 * time.Hour)
	n := 0
	body := func() []byte {
		var sb strings.Builder
		sb.WriteString(`{"events":[`)
		for i := range 1000 {
			if i > 0 {
				sb.WriteByte(',')
			}
			ts := start.Add(time.Duration(n) * time.Second).Format(time.RFC3339)
			fmt.Fprintf(&sb, `{"customerAlias":"customer-alias-%05d","eventType":"api_calls0","eventTimestamp":%q,"eventProperties":{"region":"region-%03d","requests":%d,"amount":%d.%02d}}`,
				n/1000%16, ts, n%1000, n%97, n%50, n%100)
			n++
		}
		sb.WriteString(`]}`)
		return []byte(sb.String())
	}
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		r := httptest.NewRequest(http.MethodPost, "/usage-events/batch", bytes.NewReader(body()))
		r.Header.Set("Authorization", e.auth)
		r.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		b.StartTimer()
		e.h.ServeHTTP(w, r)
		if w.Code != http.StatusCreated {
			b.Fatalf("status %d: %.300s", w.Code, w.Body)
		}
	}
}

// BenchmarkDecodeUsageEventBatch is the decoding of a 1,000-event batch
// body into a used batchScratch, as the next batch of a connection does
// (BENCHMARKS.md, "One pass per event").
func BenchmarkDecodeUsageEventBatch(b *testing.B) {
	body := referenceBatch(billing.MaxUsageEventBatch)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		sc := newBatchScratch()
		var p billing.UsageEventBatchParams
		if !sc.decode(body, &p) {
			b.Fatal("the fast path declined the body")
		}
		sc.release()
	}
}

// BenchmarkEncodeUsageEventBatch is the encoding of a 1,000-event batch's
// answer.
func BenchmarkEncodeUsageEventBatch(b *testing.B) {
	var p billing.UsageEventBatchParams
	if !new(batchScratch).decode(referenceBatch(billing.MaxUsageEventBatch), &p) {
		b.Fatal("the fast path declined the body")
	}
	events := make([]billing.UsageEvent, len(p.Events))
	for i, e := range p.Events {
		id := fmt.Sprintf("019ac0de-0000-7000-8000-%012d", i)
		events[i] = billing.UsageEvent{ID: id, ServiceAccountID: "acct_0123456789", CustomerEventID: id,
			CustomerAlias: e.CustomerAlias, EventType: e.EventType, EventTimestamp: *e.EventTimestamp, EventProperties: e.EventProperties}
	}
	buf := make([]byte, 0, 400<<10)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = (usageEventsJSON{Items: events}).AppendJSON(buf[:0]); err != nil {
			b.Fatal(err)
		}
	}
}
