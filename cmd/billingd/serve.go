package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/billingd/billing"
	"github.com/billingd/billing/console"
	"github.com/billingd/billing/dispatch"
	"github.com/billingd/billing/einvoice"
	"github.com/billingd/billing/httpserver"
	"github.com/billingd/billing/prommetrics"
	"github.com/billingd/billing/render"
	"github.com/billingd/billing/smtp"
	"github.com/billingd/billing/webhook"
)

// Fixed settings of serve.
const (
	serveLockTimeout = time.Second // waiting for the file lock at start
	sweepInterval    = time.Hour   // how often expired idempotency records go
	defaultMaxBody   = 1 << 20     // docs/api-guide.md: 1 MiB
	defaultRateLimit = 1000        // requests per second per API key

	// Timeouts of the API's http.Server. ReadTimeout and WriteTimeout
	// bound one request, so they leave room for a 5 MiB batch on a slow
	// link; the header timeout stops slow-loris clients early.
	readHeaderTimeout = 10 * time.Second
	readTimeout       = 60 * time.Second
	writeTimeout      = 60 * time.Second
	idleTimeout       = 120 * time.Second
	maxHeaderBytes    = 64 << 10
)

// serveConfig is the validated configuration of serve.
type serveConfig struct {
	addr            string
	db              string
	adminSocket     string // final path, default applied
	rateLimit       float64
	maxBody         int64
	noBootstrap     bool
	logFormat       string
	logLevel        slog.Level
	metrics         bool
	metricsAddr     string // "": /metrics on the API's address
	upstreamNames   bool   // sequenceAccountId beside serviceAccountId
	console         bool   // serve the web console at /console/
	shutdownTimeout time.Duration
	billingInterval time.Duration // 0: the billing engine never runs in the background
	rounding        billing.Rounding
	lateUsageWindow time.Duration

	// Rendering and the console behind proxies (docs/operations.md).
	renderConcurrency int
	renderQueue       int
	secureCookies     optionalBool   // --console-secure-cookies; unset: on unless addr is loopback
	trustedProxies    []netip.Prefix // --trusted-proxies

	// Notifications (docs/concepts.md).
	webhookAllowPrivate bool
	smtpAddr            string
	smtpFrom            string
	smtpUsername        string
	smtpPassword        string
	deliveryRetention   time.Duration
	deliveryLease       time.Duration

	// Payments (docs/payments.md).
	stripeAPIURL string
	masterKey    []byte // BILLINGD_MASTER_KEY
}

// parseServe parses and validates the flags of serve.
func (c *cli) parseServe(args []string) (*serveConfig, error) {
	var cfg serveConfig
	var level, rounding string
	fs := c.newFlagSet("serve", "billingd serve [--addr 127.0.0.1:8080] [--db ./billingd.db] [flags]")
	fs.StringVar(&cfg.addr, "addr", defaultAddr, "`address` the HTTP API listens on (port 0 picks a free port)")
	fs.StringVar(&cfg.db, "db", defaultDB, "database: a bbolt file `path`, or a PostgreSQL postgres:// URL or key=value connection string")
	fs.StringVar(&cfg.adminSocket, "admin-socket", "", "admin Unix socket `path` (default <db>.sock; none on PostgreSQL unless set)")
	fs.Float64Var(&cfg.rateLimit, "rate-limit", defaultRateLimit, "requests per second per API key, with bursts of twice the rate; 0 turns rate limiting off")
	fs.Int64Var(&cfg.maxBody, "max-body", defaultMaxBody, "largest request body in `bytes` (POST /usage-events/batch has its own 5 MiB limit)")
	fs.BoolVar(&cfg.noBootstrap, "no-bootstrap", false, "do not create the default account and key on an empty database")
	fs.StringVar(&cfg.logFormat, "log-format", "text", "log `format`: text or json")
	fs.StringVar(&level, "log-level", "info", "log `level`: debug, info, warn or error")
	fs.BoolVar(&cfg.metrics, "metrics", true, "serve Prometheus metrics at GET /metrics (without credentials); --metrics=false turns them off")
	fs.StringVar(&cfg.metricsAddr, "metrics-addr", "", "serve GET /metrics on this `address` instead of the API's (for example 127.0.0.1:9090)")
	fs.BoolVar(&cfg.console, "console", true, "serve the web console at /console/ (sign in with an API key); --console=false turns it off")
	fs.BoolVar(&cfg.upstreamNames, "upstream-field-names", false, "add sequenceAccountId beside every serviceAccountId in answers (for clients generated from the upstream API's document)")
	fs.DurationVar(&cfg.shutdownTimeout, "shutdown-timeout", 15*time.Second, "how long shutdown waits for in-flight requests")
	fs.DurationVar(&cfg.billingInterval, "billing-interval", time.Minute, "how often the background billing engine runs; 0 turns it off")
	fs.StringVar(&cfg.stripeAPIURL, "stripe-api-url", "", "Stripe API base `URL` (stripe-mock in tests); empty: Stripe's own")
	fs.DurationVar(&cfg.lateUsageWindow, "late-usage-window", 31*24*time.Hour, "how long after a billing date usage that changes after the invoice was finalized is still corrected (an adjustment invoice or a credit note in the next run)")
	fs.StringVar(&rounding, "rounding", "half-up", "rounding `mode` of money amounts: half-up (ties away from zero) or half-even (ties to the even digit); a document keeps the mode it was created with")
	fs.IntVar(&cfg.renderConcurrency, "render-concurrency", 0, "how many documents (PDF, HTML, e-mail attachments) are rendered at once; 0: the number of CPUs")
	fs.IntVar(&cfg.renderQueue, "render-queue", 0, "how many renders may wait for a free slot before downloads are answered 503 with Retry-After; 0: 4 × --render-concurrency")
	fs.Var(&cfg.secureCookies, "console-secure-cookies", "treat console requests as HTTPS (behind a TLS-terminating proxy): Secure __Host- cookies and HSTS; default on unless --addr is a loopback address")
	var proxies string
	fs.StringVar(&proxies, "trusted-proxies", "", "comma-separated `addresses or CIDRs` of reverse proxies whose X-Forwarded-Proto and X-Forwarded-For the console believes")
	fs.BoolVar(&cfg.webhookAllowPrivate, "webhook-allow-private", false, "allow http:// webhook URLs and webhooks to loopback, private, link-local and CGNAT addresses (self-hosted setups, tests)")
	fs.StringVar(&cfg.smtpAddr, "smtp-addr", "", "SMTP server `host:port` for e-mail notifications (STARTTLS when offered); empty: e-mail deliveries fail with \"email delivery is not configured\"")
	fs.StringVar(&cfg.smtpFrom, "smtp-from", "", "sender `address` of e-mails (required with --smtp-addr)")
	fs.StringVar(&cfg.smtpUsername, "smtp-username", "", "SMTP PLAIN auth `user` (only over TLS or to localhost)")
	fs.StringVar(&cfg.smtpPassword, "smtp-password", "", "SMTP PLAIN auth `password` (prefer the environment variable)")
	fs.DurationVar(&cfg.deliveryRetention, "delivery-retention", 30*24*time.Hour, "how long finished notification deliveries are kept")
	fs.DurationVar(&cfg.deliveryLease, "delivery-lease", time.Minute, "how long a claimed notification delivery is reserved for this instance; when it dies, another sends it after this (more than the 15s webhook timeout)")
	if err := c.parseCommand(fs, "serve", args); err != nil {
		return nil, err
	}
	cfg.adminSocket = socketPath(cfg.db, cfg.adminSocket)
	mode, err := billing.ParseRounding(rounding)
	if err != nil {
		return nil, usagef("--rounding must be half-up or half-even, got %q", rounding)
	}
	cfg.rounding = mode
	if cfg.trustedProxies, err = parseProxies(proxies); err != nil {
		return nil, err
	}
	return &cfg, cfg.validate(level)
}

// validate checks the flag values parseServe cannot check by type, and
// parses the log level.
func (cfg *serveConfig) validate(level string) error {
	if err := cfg.logLevel.UnmarshalText([]byte(level)); err != nil {
		return usagef("--log-level must be debug, info, warn or error, got %q", level)
	}
	switch {
	case cfg.logFormat != "text" && cfg.logFormat != "json":
		return usagef("--log-format must be text or json, got %q", cfg.logFormat)
	case cfg.rateLimit < 0:
		return usagef("--rate-limit must be 0 (off) or more, got %v", cfg.rateLimit)
	case cfg.maxBody <= 0:
		return usagef("--max-body must be more than 0, got %d", cfg.maxBody)
	case cfg.shutdownTimeout <= 0:
		return usagef("--shutdown-timeout must be more than 0, got %v", cfg.shutdownTimeout)
	case cfg.lateUsageWindow <= 0:
		return usagef("--late-usage-window must be more than 0, got %v", cfg.lateUsageWindow)
	case cfg.billingInterval < 0:
		return usagef("--billing-interval must be 0 (off) or more, got %v", cfg.billingInterval)
	case cfg.addr == "" || cfg.db == "":
		return usagef("--addr and --db must not be empty")
	case cfg.renderConcurrency < 0 || cfg.renderQueue < 0:
		return usagef("--render-concurrency and --render-queue must be 0 (the default) or more")
	case cfg.deliveryRetention <= 0:
		return usagef("--delivery-retention must be more than 0, got %v", cfg.deliveryRetention)
	case cfg.deliveryLease <= billing.WebhookTimeout:
		return usagef("--delivery-lease must be more than the webhook timeout %v, got %v", billing.WebhookTimeout, cfg.deliveryLease)
	case cfg.smtpAddr != "" && cfg.smtpFrom == "":
		return usagef("--smtp-from is required with --smtp-addr")
	case cfg.smtpAddr == "" && (cfg.smtpFrom != "" || cfg.smtpUsername != ""):
		return usagef("--smtp-from and --smtp-username need --smtp-addr")
	}
	return nil
}

// newLogger returns the logger serve writes to w.
func newLogger(w io.Writer, format string, level slog.Level) *slog.Logger {
	opts := &slog.HandlerOptions{Level: level}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// serve runs the HTTP API and the admin socket until ctx is cancelled
// (SIGINT or SIGTERM), then shuts down gracefully.
func (c *cli) serve(ctx context.Context, args []string) error {
	cfg, err := c.parseServe(args)
	if err != nil {
		return err
	}
	mailer, err := cfg.mailer()
	if err != nil {
		return usagef("%v", err)
	}
	providers, masterKey, err := paymentsConfig(c.getenv, cfg.stripeAPIURL)
	if err != nil {
		return usagef("%v", err)
	}
	log := newLogger(c.stderr, cfg.logFormat, cfg.logLevel)
	st, err := openStore(ctx, cfg.db, serveLockTimeout)
	if err != nil {
		return err
	}
	defer st.Close() // for the early returns; the shutdown closes it first
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m := prommetrics.New(reg)
	svc, err := billing.New(m.Store(st), serviceConfig(cfg, log, m, providers, masterKey))
	if err != nil {
		return err
	}
	m.WatchOutbox(svc)
	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", cfg.addr, err)
	}
	defer ln.Close()
	if !cfg.noBootstrap {
		if err := bootstrap(ctx, svc, c.stderr, ln.Addr().String()); err != nil {
			return err
		}
	}
	var adminLn net.Listener
	if cfg.adminSocket != "" {
		if adminLn, err = listenAdmin(cfg.adminSocket); err != nil {
			return err
		}
	}
	r := &runner{cfg: cfg, log: log, store: st, svc: svc, mailer: mailer, registry: reg,
		renders: render.NewPool(render.PoolConfig{Concurrency: cfg.renderConcurrency, Queue: cfg.renderQueue})}
	registerRenderMetrics(reg, r.renders)
	if cfg.metrics && cfg.metricsAddr != "" {
		if r.metricsLn, err = net.Listen("tcp", cfg.metricsAddr); err != nil {
			return fmt.Errorf("listening on %s (--metrics-addr): %w", cfg.metricsAddr, err)
		}
		defer r.metricsLn.Close()
	}
	return r.run(ctx, ln, adminLn)
}

// serviceConfig is the Service's configuration for serve.
func serviceConfig(cfg *serveConfig, log *slog.Logger, m *prommetrics.Metrics, providers []billing.PaymentProvider, masterKey []byte) *billing.Config {
	shared := isPostgres(cfg.db)
	return &billing.Config{
		Logger: log, WebhookAllowPrivate: cfg.webhookAllowPrivate, Rounding: cfg.rounding,
		// Several billingd may serve one PostgreSQL database (and an
		// instance of an earlier release beside them, while upgrading).
		ConcurrentBillingRuns: shared, SeriesInOwnTransaction: shared, LegacyUsageIDRecords: shared,
		KeyCacheTTL:     sharedKeyCacheTTL(shared),
		LateUsageWindow: cfg.lateUsageWindow, Observer: m.Observer(),
		PaymentProviders: providers, MasterKey: masterKey,
	}
}

// registerRenderMetrics exposes the render pool's counts on reg.
func registerRenderMetrics(reg *prometheus.Registry, pool *render.Pool) {
	for name, help := range map[string]string{
		"billingd_renders_total":           "Documents rendered (PDF or HTML, downloads, console and e-mails).",
		"billingd_render_cache_hits_total": "Renderings of issued documents served from the cache or shared with a render in progress.",
		"billingd_renders_refused_total":   "Renders refused because the render queue was full or too slow (answered 503 with Retry-After).",
	} {
		reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, func() float64 {
			st := pool.Stats()
			switch name {
			case "billingd_renders_total":
				return float64(st.Renders)
			case "billingd_render_cache_hits_total":
				return float64(st.CacheHits)
			}
			return float64(st.Refused)
		}))
	}
}

// runner is a started server: the API, the admin socket and the background
// loops over one Service.
type runner struct {
	cfg   *serveConfig
	log   *slog.Logger
	store billing.Store
	svc   *billing.Service

	mailer billing.Mailer // nil without --smtp-addr

	registry  *prometheus.Registry // every metric: HTTP, the Service's, Go runtime
	metricsLn net.Listener         // --metrics-addr; nil: /metrics is on the API
	renders   *render.Pool         // every render: the API's, the console's, the e-mails'
	console   *console.Console     // nil with --console=false
	api       *httpserver.Server   // set by apiServer
}

// run serves on ln and adminLn until ctx is done or a server fails, then
// shuts everything down in order.
func (r *runner) run(ctx context.Context, ln net.Listener, adminLn net.Listener) error {
	api, err := r.apiServer()
	if err != nil {
		return err
	}
	adm := &http.Server{
		Handler:           newAdminHandler(&localAdmin{svc: r.svc, store: r.store}, r.cfg.db, r.log),
		ReadHeaderTimeout: readHeaderTimeout,
		ErrorLog:          slog.NewLogLogger(r.log.Handler(), slog.LevelWarn),
	}
	loops, stopLoops := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { sweepLoop(loops, r.api, r.console, r.log, sweepInterval) })
	wg.Go(func() { alertLoop(loops, r.svc, r.log, alertInterval) })
	if r.cfg.billingInterval > 0 {
		wg.Go(func() { billingLoop(loops, r.svc, r.log, r.cfg.billingInterval, time.Now) })
		wg.Go(func() { collectionLoop(loops, r.svc, r.log, r.cfg.billingInterval, time.Now) })
	}
	dispatcher := dispatch.New(r.svc, dispatch.Config{
		Webhooks: webhook.NewSender(r.cfg.webhookAllowPrivate), Mailer: r.mailer, Documents: einvoice.Renderer{Pool: r.renders}, Retention: r.cfg.deliveryRetention, Lease: r.cfg.deliveryLease, Logger: r.log,
	})
	wg.Go(func() { _ = dispatcher.Run(loops) })
	failed := make(chan error, 3)
	go func() { failed <- serveUntilClosed(api, ln) }()
	if adminLn != nil {
		go func() { failed <- serveUntilClosed(adm, adminLn) }()
	}
	servers := []*http.Server{api, adm}
	if r.metricsLn != nil {
		ms := &http.Server{Handler: promhttp.HandlerFor(r.registry, promhttp.HandlerOpts{}), ReadHeaderTimeout: readHeaderTimeout,
			ErrorLog: slog.NewLogLogger(r.log.Handler(), slog.LevelWarn)}
		servers = append(servers, ms)
		go func() { failed <- serveUntilClosed(ms, r.metricsLn) }()
		r.log.Info("serving metrics", "addr", r.metricsLn.Addr().String())
	}
	r.log.Info("listening", "addr", ln.Addr().String(), "db", dbName(r.cfg.db), "adminSocket", r.cfg.adminSocket)

	var runErr error
	select {
	case <-ctx.Done():
		r.log.Info("shutting down", "timeout", r.cfg.shutdownTimeout)
	case runErr = <-failed:
		r.log.Error("server failed, shutting down", "err", runErr)
	}
	err = r.shutdown(servers...)
	if adminLn != nil {
		if rerr := os.Remove(r.cfg.adminSocket); rerr != nil {
			r.log.Warn("removing the admin socket", "err", rerr)
		}
	}
	stopLoops()
	wg.Wait()
	if cerr := r.store.Close(); cerr != nil {
		err = errors.Join(err, cerr)
	}
	if err = errors.Join(runErr, err); err == nil {
		r.log.Info("stopped")
	}
	return err
}

// serveUntilClosed serves srv on ln; the error of a deliberate shutdown is
// not a failure.
func serveUntilClosed(srv *http.Server, ln net.Listener) error {
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// apiServer returns the http.Server of the REST API, and of the console
// under /console/ unless it is turned off, with every timeout set. The
// console is mounted inside the API's server, behind its request log,
// metrics, header limit and recovery, and charges its signed-in requests
// to the API keys' rate limits.
func (r *runner) apiServer() (*http.Server, error) {
	api := httpserver.NewServer(r.svc, &httpserver.Config{
		Logger:         r.log,
		MaxBodyBytes:   r.cfg.maxBody,
		RateLimit:      r.cfg.rateLimit, // 0 is off, in httpserver too
		MaxHeaderBytes: maxHeaderBytes,
		DisableMetrics: !r.cfg.metrics || r.metricsLn != nil,
		Registry:       r.registry,
		Renders:        r.renders,

		UpstreamFieldNames: r.cfg.upstreamNames,
		// Several billingd may serve one PostgreSQL database.
		MarkIdempotencyKeysInFlight: isPostgres(r.cfg.db),
	})
	r.api = api
	if r.cfg.console {
		con, err := console.New(r.svc, &console.Config{Store: r.store, Logger: r.log, Renders: r.renders, Guard: api,
			SecureCookies: r.cfg.secureCookies.or(!isLoopback(r.cfg.addr)), TrustedProxies: r.cfg.trustedProxies})
		if err != nil {
			return nil, err
		}
		api.Mount(console.Prefix, con)
		r.console = con
	}
	return &http.Server{
		Handler:           api.Handler(),
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		// httpserver refuses headers over maxHeaderBytes with the JSON
		// error body; net/http's own (plain text) limit only stops
		// headers far larger than that.
		MaxHeaderBytes: 16 * maxHeaderBytes,
		ErrorLog:       slog.NewLogLogger(r.log.Handler(), slog.LevelWarn),
	}, nil
}

// shutdown stops both servers from accepting and waits, up to the shutdown
// timeout, for their in-flight requests; what is still running then is cut
// off.
func (r *runner) shutdown(servers ...*http.Server) error {
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.shutdownTimeout)
	defer cancel()
	var errs []error
	for _, srv := range servers {
		if err := srv.Shutdown(ctx); err != nil {
			srv.Close()
			errs = append(errs, fmt.Errorf("in-flight requests did not finish within %v: %w", r.cfg.shutdownTimeout, err))
		}
	}
	return errors.Join(errs...)
}

// sweepLoop deletes expired idempotency records, and the console's
// expired sessions (con may be nil), every interval until ctx is done.
func sweepLoop(ctx context.Context, api *httpserver.Server, con *console.Console, log *slog.Logger, interval time.Duration) {
	every(ctx, interval, func() {
		n, err := api.SweepIdempotency(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			log.Error("sweeping idempotency records", "err", err)
		case n > 0:
			log.Info("swept expired idempotency records", "deleted", n)
		}
		if con == nil {
			return
		}
		n, err = con.Sweep(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			log.Error("sweeping console sessions", "err", err)
		case n > 0:
			log.Info("swept expired console sessions", "deleted", n)
		}
	})
}

// bootstrap creates the account "default" and one API key when the
// database has no account, and prints the credential once to w with a
// ready Authorization header and a curl line for the API at addr.
func bootstrap(ctx context.Context, svc *billing.Service, w io.Writer, addr string) error {
	accounts, err := svc.ListAccounts(ctx)
	if err != nil || len(accounts) > 0 {
		return err
	}
	cred, err := (&localAdmin{svc: svc}).CreateAccount(ctx, "default")
	if err != nil {
		return fmt.Errorf("creating the default account: %w", err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "billingd: first start on an empty database: created the account \"default\" and an API key.\n")
	fmt.Fprintf(&b, "billingd: the secret is shown only this once; keep it.\n")
	fmt.Fprintf(&b, "  account id:    %s\n  key id:        %s\n  secret:        %s\n", cred.ServiceAccountID, cred.KeyID, cred.Secret)
	fmt.Fprintf(&b, "  Authorization: %s\n", cred.Authorization)
	fmt.Fprintf(&b, "  try:           curl -H 'Authorization: %s' http://%s/usage-metrics\n", cred.Authorization, addr)
	_, err = io.WriteString(w, b.String())
	return err
}

// mailer returns the SMTP mailer of --smtp-addr, or nil without it.
func (cfg *serveConfig) mailer() (billing.Mailer, error) {
	if cfg.smtpAddr == "" {
		return nil, nil
	}
	return smtp.NewMailer(smtp.Config{
		Addr: cfg.smtpAddr, From: cfg.smtpFrom, Username: cfg.smtpUsername, Password: cfg.smtpPassword,
	})
}

// sharedKeyCacheTTL is the key cache's bound: a second on a store other
// processes share (a key revoked elsewhere is refused here within it),
// none otherwise (billing.Config.KeyCacheTTL).
func sharedKeyCacheTTL(shared bool) time.Duration {
	if shared {
		return time.Second
	}
	return 0
}
