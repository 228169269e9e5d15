package httpserver

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

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
