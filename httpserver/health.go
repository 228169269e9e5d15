package httpserver

import (
	"net/http"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/billingd/billing"
	"github.com/billingd/billing/openapi"
)

// healthRoutes mounts /healthz, /readyz, /openapi.json and /metrics: no authentication, no
// version check, no rate limit, so orchestrators and scrapers need no key.
func (s *Server) healthRoutes(r gin.IRouter) {
	healthz := func(g *gin.Context) {
		g.Data(http.StatusOK, jsonContentType, []byte(`{"status":"ok"}`))
	}
	readyz := func(g *gin.Context) {
		if err := s.svc.Ping(g.Request.Context()); err != nil {
			s.log.WarnContext(g.Request.Context(), "not ready", "err", err)
			s.writeError(g, billing.Errorf(billing.CodeUnavailable, "the service is not ready: its store is not open and writable"))
			return
		}
		g.Data(http.StatusOK, jsonContentType, []byte(`{"status":"ok"}`))
	}
	// HEAD answers as GET without the body (net/http drops it), for
	// probes that only look at the status.
	r.GET("/healthz", healthz)
	r.HEAD("/healthz", healthz)
	r.GET("/readyz", readyz)
	r.HEAD("/readyz", readyz)
	r.GET("/openapi.json", func(g *gin.Context) {
		doc, err := openapi.JSON()
		if err != nil { // the embedded document is checked by tests
			s.writeError(g, &billing.Error{Code: billing.CodeInternal, Message: "the OpenAPI document could not be rendered", Err: err})
			return
		}
		g.Data(http.StatusOK, jsonContentType, doc)
	})
	if !s.cfg.DisableMetrics {
		r.GET("/metrics", gin.WrapH(promhttp.HandlerFor(s.cfg.Registry, promhttp.HandlerOpts{})))
	}
}
