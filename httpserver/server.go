// Package httpserver serves a billing.Service as the REST API of the
// specification, over gin.
//
// Every concern of the wire conventions lives in one place here: one route
// helper that binds, calls the Service once and writes the answer; one strict
// JSON decoder; one code-to-status table and one error writer; one middleware
// each for authentication, versioning, rate limiting and request logging and
// metrics; and one idempotency path for every mutating request.
//
// New returns a complete http.Handler (health, readiness, metrics, 404/405
// answers and every API route). Server.Register mounts only the API routes on
// a caller's own gin engine or group.
package httpserver

import (
	"context"
	"log/slog"
	"math"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/billingd/billing"
	"github.com/billingd/billing/render"
)

// Config holds the options of a Server. A nil *Config, and every zero field,
// take the documented defaults.
type Config struct {
	// Logger receives one line per request (method, route template,
	// status, duration, account id and API key id; never the Authorization
	// header, query values or bodies) and the causes of internal errors.
	// Defaults to a logger that discards everything.
	Logger *slog.Logger

	// MaxBodyBytes bounds request bodies; a larger body is answered with
	// 413 payload_too_large and the connection is closed. Defaults to
	// 1 MiB (also for zero or negative values).
	MaxBodyBytes int64

	// MaxBatchBodyBytes bounds the bodies of batch routes (POST
	// /usage-events/batch). Defaults to 5 MiB (also for zero or negative
	// values).
	MaxBatchBodyBytes int64

	// RateLimit is the sustained number of requests per second allowed per
	// API key (a token bucket). Zero or negative turns rate limiting off,
	// as billingd's --rate-limit 0 does. A nil *Config takes
	// DefaultRateLimit.
	RateLimit float64

	// RateBurst is the bucket size of the rate limit: how many requests an
	// API key may send at once. Defaults to RateBurstFactor times
	// RateLimit, rounded up, at least 1 (also for zero or negative
	// values).
	RateBurst int

	// MaxHeaderBytes bounds the request line and headers of a request;
	// larger ones are answered 431 headers_too_large with the JSON error
	// body. Defaults to 64 KiB (also for zero or negative values). An
	// http.Server's own MaxHeaderBytes must be larger, or net/http
	// answers first, in plain text.
	MaxHeaderBytes int

	// UpstreamFieldNames adds sequenceAccountId, with the value of
	// serviceAccountId, beside every serviceAccountId of the answers, for
	// typed clients generated from the upstream API's document that
	// require it. Defaults to false: the answers carry serviceAccountId
	// only.
	UpstreamFieldNames bool

	// IdempotencyTTL is how long the answer of a request sent with an
	// Idempotency-Key answers its retries. Defaults to 24 hours; shorter
	// values are raised to 24 hours.
	IdempotencyTTL time.Duration

	// MarkIdempotencyKeysInFlight marks an Idempotency-Key in flight in
	// the store before its request runs, so that the same key sent to
	// another instance on the same store meanwhile answers
	// idempotency_key_in_use instead of waiting for the first answer's
	// commit to refuse it. Set it when several processes serve one store
	// (billingd on PostgreSQL does). Defaults to false: one process owns
	// the store, and it refuses concurrent duplicates in memory.
	MarkIdempotencyKeysInFlight bool

	// DisableMetrics turns off GET /metrics. Defaults to false: metrics are
	// served.
	DisableMetrics bool

	// Renders bounds the document renders of the download routes (how
	// many at once, how many wait) and keeps the renderings of issued
	// documents. Share one Pool with the console and the Dispatcher so
	// that their renders together stay within it. Defaults to a Pool with
	// render.PoolConfig's defaults.
	Renders *render.Pool

	// Registry is where the request metrics are registered and what GET
	// /metrics serves. Defaults to a new registry with the Go and process
	// collectors.
	Registry *prometheus.Registry
}

const (
	defaultMaxBodyBytes      = 1 << 20
	defaultMaxBatchBodyBytes = 5 << 20
	defaultMaxHeaderBytes    = 64 << 10
)

// DefaultRateLimit is the rate limit of a nil *Config: requests per second
// per API key.
const DefaultRateLimit = 1000

// RateBurstFactor is how many seconds of the rate an API key may send at
// once by default: the bucket holds RateBurstFactor × RateLimit requests.
const RateBurstFactor = 2

// RenderCost is how many requests a document download (a render) counts
// as in the rate limit of its API key: a render costs far more than a
// read. At most the key's burst is taken.
const RenderCost = 10

// withDefaults returns a copy of cfg (nil allowed) with defaults applied.
func (cfg *Config) withDefaults() Config {
	c := Config{RateLimit: DefaultRateLimit}
	if cfg != nil {
		c = *cfg
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	c.MaxBodyBytes = positiveOr(c.MaxBodyBytes, defaultMaxBodyBytes)
	c.MaxBatchBodyBytes = positiveOr(c.MaxBatchBodyBytes, defaultMaxBatchBodyBytes)
	c.MaxHeaderBytes = positiveOr(c.MaxHeaderBytes, defaultMaxHeaderBytes)
	c.RateBurst = positiveOr(c.RateBurst, max(int(min(math.Ceil(RateBurstFactor*c.RateLimit), 1<<30)), 1))
	if c.Renders == nil {
		c.Renders = render.NewPool(render.PoolConfig{})
	}
	if c.Registry == nil {
		c.Registry = prometheus.NewRegistry()
		c.Registry.MustRegister(
			collectors.NewGoCollector(),
			collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		)
	}
	return c
}

// positiveOr is v, or def when v is zero or negative: the rule of the
// Config limits that default "also for zero or negative values".
func positiveOr[T int | int64](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// Server is the HTTP adapter of one billing.Service. It is safe for
// concurrent use.
type Server struct {
	// svc is every operation of the API, by aggregate (billing.Services);
	// each route file hands its part to its handlers.
	svc billing.Services
	// idem keeps the answers of requests sent with an Idempotency-Key.
	idem *idempotencyStore
	// usageMetricsJSON is the encoded list of usage metrics (see
	// appendUsageMetricsPage).
	usageMetricsJSON func(ctx context.Context, account string, f billing.UsageMetricFilter, p billing.ListParams) (billing.Page[[]byte], error)
	renders          *render.Pool
	cfg              Config
	log              *slog.Logger
	metrics          *metrics
	engine           *gin.Engine

	limiters sync.Map // API key id → *rate.Limiter
	inflight inflightSet

	// routes are the API routes registered, in order (their query
	// parameters and statuses are checked against openapi.yaml by tests).
	routes []*route
}

// New returns a complete handler for svc: GET /healthz, GET /readyz,
// GET /metrics (unless disabled), every API route, and the error answers for
// unknown routes (404) and methods (405). cfg may be nil.
func New(svc *billing.Service, cfg *Config) http.Handler {
	return NewServer(svc, cfg).Handler()
}

// NewServer returns a Server for svc. cfg may be nil for all defaults.
func NewServer(svc *billing.Service, cfg *Config) *Server {
	c := cfg.withDefaults()
	s := &Server{svc: svc, renders: c.Renders, cfg: c, log: c.Logger, metrics: newMetrics(c.Registry)}
	s.idem = &idempotencyStore{store: svc.Store(), now: svc.Now, ttl: max(c.IdempotencyTTL, minIdempotencyTTL),
		mark: c.MarkIdempotencyKeysInFlight, log: c.Logger}
	s.usageMetricsJSON = func(ctx context.Context, account string, f billing.UsageMetricFilter, p billing.ListParams) (billing.Page[[]byte], error) {
		return billing.ListUsageMetricsRendered(ctx, svc, account, f, p, usageMetricJSON)
	}
	s.engine = s.newEngine()
	return s
}

// Handler returns the Server's complete handler (see New).
func (s *Server) Handler() http.Handler { return s.engine }

// Register mounts the API routes, with authentication, versioning, rate
// limiting, idempotency, error answers, request logging and metrics, on a
// caller's own gin engine or group. It does not add /healthz, /readyz,
// /metrics or 404/405 handling, which belong to the caller's engine.
func (s *Server) Register(r gin.IRouter) {
	s.register(r, true)
}

// Mount serves h (another handler, such as billingd's web console) at
// prefix (ending in "/") and every path under it, and redirects prefix
// without its slash to it, behind the same per-request middleware as the
// API: request id, header limit, panic recovery, the request log and the
// request metrics. Authentication and rate limiting are h's to do (the
// console charges its signed-in requests through AllowKey). Call it
// before serving.
func (s *Server) Mount(prefix string, h http.Handler) {
	base := strings.TrimSuffix(prefix, "/")
	s.engine.Any(base+"/*path", gin.WrapH(h))
	s.engine.Any(base, func(g *gin.Context) { g.Redirect(http.StatusMovedPermanently, prefix) })
}

// quietGin keeps gin from printing its debug lines (a route dump and a
// warning on stdout) when the program has not chosen a gin mode: the
// library prints nothing unless given a logger. A program that sets
// GIN_MODE (for example GIN_MODE=debug) keeps what it chose.
var quietGin = sync.OnceFunc(func() {
	if os.Getenv(gin.EnvGinMode) == "" && gin.IsDebugging() {
		gin.SetMode(gin.ReleaseMode)
	}
})

// newEngine builds the engine of New. Of gin's global state it only
// touches the mode, through quietGin.
func (s *Server) newEngine() *gin.Engine {
	quietGin()
	e := gin.New()
	e.HandleMethodNotAllowed = true // gin then sets the Allow header itself
	e.RedirectTrailingSlash = false // an unknown path is a 404, not a redirect
	e.RedirectFixedPath = false
	e.Use(s.observe)
	e.NoRoute(func(g *gin.Context) {
		s.writeError(g, billing.Errorf(billing.CodeNotFound, "no such route: check the method and path"))
	})
	e.NoMethod(func(g *gin.Context) {
		s.writeError(g, billing.Errorf(CodeMethodNotAllowed,
			"the method %s is not allowed here; see the Allow header", g.Request.Method))
	})
	s.healthRoutes(e)
	s.providerWebhookRoutes(e)
	s.register(e, false)
	return e
}

// register mounts the API routes on r.
func (s *Server) register(r gin.IRouter, observe bool) {
	s.group(r, observe).routes()
}

// group returns the authenticated API group of r. observe adds the
// per-request middleware (Service-Version, recovery, log, metrics) to the
// group; New's engine has it engine-wide already.
func (s *Server) group(r gin.IRouter, observe bool) api {
	var chain []gin.HandlerFunc
	if observe {
		chain = append(chain, s.observe)
	}
	chain = append(chain, s.checkVersion, s.authenticate, s.rateLimit)
	return api{Server: s, r: r.Group("", chain...)}
}

// routes is the route table of the API: one line per aggregate.
func (a api) routes() {
	a.usageMetricRoutes()
	a.usageEventRoutes()
	a.catalogRoutes()
	a.notificationRoutes()
	a.scheduleRoutes()
	a.documentRoutes()
	a.renderedRoutes()
	a.creditRoutes()
	a.collectionRoutes()
}
