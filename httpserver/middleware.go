package httpserver

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"
	"golang.org/x/time/rate"

	"github.com/billingd/billing"
)

// identity is who a request authenticated as. It is stored in the gin
// context by authenticate and read by the rate limiter, the endpoint and
// the request log.
type identity struct {
	account string
	keyID   string
}

type identityKey struct{}

// identityOf returns the request's identity; zero before authentication.
func identityOf(g *gin.Context) identity {
	v, _ := g.Get(identityKey{})
	id, _ := v.(identity)
	return id
}

// observe wraps every request: it gives it a request id (X-Request-Id,
// echoed on the answer), sets Service-Version on the answer, refuses
// oversized headers, recovers panics into 500 internal, and logs and
// counts the request.
func (s *Server) observe(g *gin.Context) {
	start := time.Now()
	h := g.Writer.Header()
	// The header's value slice is shared by every answer: net/http only
	// reads it, and an Add would copy it (its capacity is 1).
	h["Service-Version"] = serviceVersionHeader
	reqID := requestID(g.Request)
	h["X-Request-Id"] = []string{reqID}
	if headerBytes(g.Request) > s.cfg.MaxHeaderBytes {
		s.refuse(g, billing.Errorf(CodeHeadersTooLarge,
			"the request line and headers are larger than %d bytes", s.cfg.MaxHeaderBytes))
	} else {
		s.recovered(g)
	}
	route := g.FullPath()
	if route == "" {
		route = "unmatched"
	}
	status := g.Writer.Status()
	elapsed := time.Since(start)
	s.metrics.observe(g.Request.Method, route, status, elapsed)
	s.logRequest(g, reqID, route, status, elapsed)
}

// logRequest writes the one log line of a request: at ERROR for a 5xx,
// else INFO (a client's mistake is not the operator's problem; its error
// code is in the line). It never logs credentials,
// query values or bodies.
func (s *Server) logRequest(g *gin.Context, reqID, route string, status int, elapsed time.Duration) {
	level := slog.LevelInfo
	if status >= 500 {
		level = slog.LevelError
	}
	ctx := g.Request.Context()
	if !s.log.Enabled(ctx, level) {
		return
	}
	id := identityOf(g)
	attrs := []slog.Attr{
		slog.String("request_id", reqID),
		slog.String("method", g.Request.Method),
		slog.String("route", route),
		slog.Int("status", status),
		slog.Float64("duration_ms", float64(elapsed.Microseconds())/1000),
		slog.String("remote", g.Request.RemoteAddr),
		slog.String("account", id.account),
		slog.String("key", id.keyID),
	}
	if code, ok := g.Get(errorCodeKey{}); ok {
		attrs = append(attrs, slog.String("error", string(code.(billing.Code))))
	}
	s.log.LogAttrs(ctx, level, "request", attrs...)
}

// errorCodeKey is where sendError leaves the error code of the answer for
// the request log.
type errorCodeKey struct{}

// requestID returns the request's X-Request-Id when it is a sensible one (1
// to 128 printable ASCII characters), else a new random id.
func requestID(r *http.Request) string {
	if vs := r.Header["X-Request-Id"]; len(vs) > 0 && validRequestID(vs[0]) {
		return vs[0]
	}
	var b [12]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}

func validRequestID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for i := range len(id) {
		if id[i] < 0x21 || id[i] > 0x7e {
			return false
		}
	}
	return true
}

// headerBytes is the size of the request line and headers as received
// (close enough: net/http has removed the line ends and the Host header).
func headerBytes(r *http.Request) int {
	n := len(r.Method) + len(r.RequestURI) + len(r.Host) + 16
	for k, vs := range r.Header {
		for _, v := range vs {
			n += len(k) + len(v) + 4
		}
	}
	return n
}

// refuse answers err to a request refused before its body was read
// (credentials, version, rate limit, headers). When a body is on its way,
// the connection is closed after the answer: otherwise net/http would
// first wait to read the rest of the body, and a client that sends less
// than its Content-Length would get its 401 only at the read timeout.
func (s *Server) refuse(g *gin.Context, err error) {
	if g.Request.ContentLength != 0 {
		g.Header("Connection", "close")
	}
	s.writeError(g, err)
}

// serviceVersionHeader is the value of the Service-Version header of every
// answer.
var serviceVersionHeader = []string{billing.APIVersion}

// recovered runs the rest of the chain, turning a panic into 500 internal.
// The panic value and stack go to the log only.
func (s *Server) recovered(g *gin.Context) {
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		if r == http.ErrAbortHandler { //nolint:errorlint // sentinel panic value, compared as net/http does
			panic(r)
		}
		s.log.ErrorContext(g.Request.Context(), "panic serving a request",
			"route", g.FullPath(), "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
		if !g.Writer.Written() {
			s.writeError(g, billing.Errorf(billing.CodeInternal, internalMessage))
		}
		g.Abort()
	}()
	g.Next()
}

// checkVersion refuses any Service-Version (or Sequence-Version) other than billing.APIVersion;
// no header means that version.
func (s *Server) checkVersion(g *gin.Context) {
	// Sequence-Version is the upstream API's name of the same header.
	for _, h := range [...]string{"Service-Version", "Sequence-Version"} {
		if v := g.GetHeader(h); v != "" && v != billing.APIVersion {
			s.refuse(g, &billing.Error{
				Code:    CodeUnsupportedVersion,
				Field:   h,
				Message: "unsupported " + h + "; the only version is " + billing.APIVersion,
			})
			return
		}
	}
	g.Next()
}

// authenticate checks the Basic credentials of the request. The account of
// every operation comes from here and nowhere else.
func (s *Server) authenticate(g *gin.Context) {
	keyID, secret, ok := billing.ParseBasicAuthorization(g.GetHeader("Authorization"))
	if !ok {
		s.metrics.authFailures.Inc()
		s.refuse(g, billing.Errorf(billing.CodeUnauthorized, "missing or invalid API credentials"))
		return
	}
	key, err := s.svc.Authenticate(g.Request.Context(), keyID, secret)
	if err != nil {
		if billing.CodeOf(err) == billing.CodeUnauthorized {
			s.metrics.authFailures.Inc()
		}
		s.refuse(g, err)
		return
	}
	g.Set(identityKey{}, identity{account: key.ServiceAccountID, keyID: key.ID})
	g.Next()
}

// rateLimit applies the token bucket of the request's API key. Limiters
// exist only for authenticated key ids, so the map is bounded by the number
// of API keys.
func (s *Server) rateLimit(g *gin.Context) {
	if s.charge(g, identityOf(g).keyID, 1) {
		g.Next()
	}
}

// charge takes n requests from the bucket of keyID, or answers 429
// rate_limited with Retry-After and reports false.
func (s *Server) charge(g *gin.Context, keyID string, n int) bool {
	delay, ok := s.AllowKey(keyID, n)
	if ok {
		return true
	}
	g.Header("Retry-After", strconv.Itoa(retryAfterSeconds(delay)))
	s.refuse(g, billing.Errorf(CodeRateLimited, "too many requests for this API key; retry after the time in the Retry-After header"))
	return false
}

// AllowKey takes n requests (at most the burst) from the rate limit of
// API key keyID and reports true, or reports false with the time after
// which they would be allowed, counting the refusal in
// billingd_rate_limited_requests_total. It always allows when rate
// limiting is off. The console charges its signed-in requests here, so a
// key's pages and its API calls share one limit.
func (s *Server) AllowKey(keyID string, n int) (time.Duration, bool) {
	if s.cfg.RateLimit <= 0 {
		return 0, true
	}
	v, ok := s.limiters.Load(keyID)
	if !ok {
		v, _ = s.limiters.LoadOrStore(keyID, rate.NewLimiter(rate.Limit(s.cfg.RateLimit), s.cfg.RateBurst))
	}
	lim := v.(*rate.Limiter)
	now := time.Now()
	r := lim.ReserveN(now, min(max(n, 1), s.cfg.RateBurst))
	delay := r.DelayFrom(now)
	if r.OK() && delay == 0 {
		return 0, true
	}
	r.CancelAt(now)
	s.metrics.rateLimited.Inc()
	return delay, false
}

// CountAuthFailure counts a refused credential in
// billingd_auth_failures_total: the console's wrong sign-ins count where
// the API's 401s do.
func (s *Server) CountAuthFailure() { s.metrics.authFailures.Inc() }

// retryAfterSeconds rounds a delay up to whole seconds, at least 1.
func retryAfterSeconds(d time.Duration) int {
	secs := math.Ceil(d.Seconds())
	switch {
	case secs < 1 || math.IsNaN(secs):
		return 1
	case secs > 86400:
		return 86400
	}
	return int(secs)
}
