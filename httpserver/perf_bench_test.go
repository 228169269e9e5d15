package httpserver

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

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
