package httpserver

import (
	"errors"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the request metrics of a Server, labelled by method, route
// template (never the raw path, whose ids would explode the cardinality)
// and status.
type metrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec

	// authFailures counts requests refused 401; rateLimited those
	// refused 429.
	authFailures prometheus.Counter
	rateLimited  prometheus.Counter

	// series caches the children of requests and duration by label
	// values, so that a request costs one map lookup instead of two label
	// hashes and lookups in the vectors (and no status string).
	series sync.Map // seriesKey → *series
}

// seriesKey is the label values of one series.
type seriesKey struct {
	method, route string
	status        int
}

// series is the counter and histogram of one seriesKey.
type series struct {
	requests prometheus.Counter
	duration prometheus.Observer
}

var labels = []string{"method", "route", "status"}

// newMetrics registers the request metrics on reg, reusing them when
// another Server registered them there first.
func newMetrics(reg *prometheus.Registry) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "billingd_http_requests_total",
			Help: "HTTP requests by method, route template and status.",
		}, labels),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "billingd_http_request_duration_seconds",
			Help:    "HTTP request latency by method, route template and status.",
			Buckets: prometheus.DefBuckets,
		}, labels),
	}
	m.requests = register(reg, m.requests)
	m.duration = register(reg, m.duration)
	m.authFailures = register(reg, prometheus.NewCounter(prometheus.CounterOpts{
		Name: "billingd_auth_failures_total",
		Help: "Credentials refused: API requests answered 401 and wrong console sign-ins.",
	}))
	m.rateLimited = register(reg, prometheus.NewCounter(prometheus.CounterOpts{
		Name: "billingd_rate_limited_requests_total",
		Help: "API and console requests refused by the per-key rate limit (429).",
	}))
	return m
}

func register[C prometheus.Collector](reg *prometheus.Registry, c C) C {
	err := reg.Register(c)
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(C); ok {
			return existing
		}
	}
	return c
}

// observe records one request.
func (m *metrics) observe(method, route string, status int, d time.Duration) {
	k := seriesKey{methodLabel(method), route, status}
	v, ok := m.series.Load(k)
	if !ok {
		s := strconv.Itoa(status)
		v, _ = m.series.LoadOrStore(k, &series{
			requests: m.requests.WithLabelValues(k.method, route, s),
			duration: m.duration.WithLabelValues(k.method, route, s),
		})
	}
	ser := v.(*series)
	ser.requests.Inc()
	ser.duration.Observe(d.Seconds())
}

// methodLabel bounds the method label to the standard methods.
func methodLabel(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return method
	}
	return "OTHER"
}
