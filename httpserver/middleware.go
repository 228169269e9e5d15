package httpserver

import (
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

// observe wraps every request: it sets Service-Version on the answer,
// recovers panics into 500 internal, and logs and counts the request.
func (s *Server) observe(g *gin.Context) {
	start := time.Now()
	// The header's value slice is shared by every answer: net/http only
	// reads it, and an Add would copy it (its capacity is 1).
	g.Writer.Header()["Service-Version"] = serviceVersionHeader
	s.recovered(g)
	route := g.FullPath()
	if route == "" {
		route = "unmatched"
	}
	status := g.Writer.Status()
	elapsed := time.Since(start)
	s.metrics.observe(g.Request.Method, route, status, elapsed)
	level := slog.LevelInfo
	if status >= 500 {
		level = slog.LevelError
	}
	ctx := g.Request.Context()
	if !s.log.Enabled(ctx, level) {
		return
	}
	id := identityOf(g)
	s.log.LogAttrs(ctx, level, "request",
		slog.String("method", g.Request.Method),
		slog.String("route", route),
		slog.Int("status", status),
		slog.Duration("duration", elapsed),
		slog.String("account", id.account),
		slog.String("key", id.keyID),
	)
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

// checkVersion refuses any Service-Version other than billing.APIVersion;
// no header means that version.
func (s *Server) checkVersion(g *gin.Context) {
	if v := g.GetHeader("Service-Version"); v != "" && v != billing.APIVersion {
		s.writeError(g, &billing.Error{
			Code:    billing.CodeUnsupportedVersion,
			Field:   "Service-Version",
			Message: "unsupported Service-Version; the only version is " + billing.APIVersion,
		})
		return
	}
	g.Next()
}

// authenticate checks the Basic credentials of the request. The account of
// every operation comes from here and nowhere else.
func (s *Server) authenticate(g *gin.Context) {
	keyID, secret, ok := billing.ParseBasicAuthorization(g.GetHeader("Authorization"))
	if !ok {
		s.writeError(g, billing.Errorf(billing.CodeUnauthorized, "missing or invalid API credentials"))
		return
	}
	key, err := s.svc.Authenticate(g.Request.Context(), keyID, secret)
	if err != nil {
		s.writeError(g, err)
		return
	}
	g.Set(identityKey{}, identity{account: key.ServiceAccountID, keyID: key.ID})
	g.Next()
}

// rateLimit applies the token bucket of the request's API key. Limiters
// exist only for authenticated key ids, so the map is bounded by the number
// of API keys.
func (s *Server) rateLimit(g *gin.Context) {
	if s.cfg.RateLimit < 0 {
		g.Next()
		return
	}
	id := identityOf(g)
	v, ok := s.limiters.Load(id.keyID)
	if !ok {
		v, _ = s.limiters.LoadOrStore(id.keyID, rate.NewLimiter(rate.Limit(s.cfg.RateLimit), s.cfg.RateBurst))
	}
	lim := v.(*rate.Limiter)
	now := time.Now()
	r := lim.ReserveN(now, 1)
	delay := r.DelayFrom(now)
	if r.OK() && delay == 0 {
		g.Next()
		return
	}
	r.CancelAt(now)
	g.Header("Retry-After", strconv.Itoa(retryAfterSeconds(delay)))
	s.writeError(g, billing.Errorf(billing.CodeRateLimited, "too many requests for this API key; retry after the time in the Retry-After header"))
}

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
