// Package console is billingd's web console: server-rendered HTML pages over
// a billing.Service for the people who look at customers, invoices, usage
// and failures rather than JSON. billingd serve mounts it at /console/; the
// library root does not import it.
//
// It uses only the Service's public methods, the same ones the REST API
// calls, scoped to the account of the signed-in API key exactly like the
// API: another account's id is 404. Everything it serves is embedded
// (templates, one stylesheet); it sends no JavaScript at all, and its
// Content-Security-Policy allows none.
//
// # Security
//
// Sign-in takes an API key id and secret (Service.Authenticate) and creates
// a server-side session, kept in the Store given in Config (so sessions
// survive restarts and are shared by instances over one PostgreSQL
// database) under the SHA-256 hash of its id. The browser holds the id in an
// HttpOnly, SameSite=Strict cookie, Secure with the __Host- prefix when the
// request came over TLS (or Config.SecureCookies is set, or a trusted proxy
// says so). Sessions end after 12 hours idle or 7
// days, on sign-out, and at once when their API key is revoked (every
// request checks the key). Every POST carries the session's CSRF token in
// the form field "csrf" and is refused with 403 without it or with another.
//
// # Adding a page
//
// A page is a handler func(*request) error and a template file:
//
//  1. Register the route in routes (routes.go) with c.handle, giving a Go
//     1.22 ServeMux pattern under /console/: c.handle("GET /console/things",
//     c.things). Every route registered with handle requires a session,
//     checks CSRF on POST and sets the security headers.
//  2. Write templates/things.html holding {{define "content"}}...{{end}}
//     (and optionally {{define "title"}}); it is executed inside
//     templates/layout.html with the view's Data as .Data.
//  3. In the handler, read with c.svc and rq.account (never another
//     account), then return rq.render(http.StatusOK, "things", "Things",
//     data). Return the Service's error as is: not_found becomes the 404
//     page, anything unexpected the 500 page (logged).
//  4. A form or an action is one handler registered for GET and POST
//     (c.form in routes.go): GET shows the confirm template (a
//     confirmation with its fields, built by rq.confirm), POST calls
//     rq.submit, which runs the Service calls once per form key (the
//     hidden formKey, stored with the Service's idempotency records), shows
//     the form again with each refusal beside the field it names, and
//     redirects (303) to the page of the result on success (forms.go).
//  5. A list answers ?format=csv with exportCSV (csv.go): every page, its
//     filters applied.
//  6. Add the page to nav (layout.go) if it is a top-level section.
//
// No inline script or style attribute is allowed by the policy (CSS lives
// in static/console.css); inline SVG may use presentation attributes.
package console

import (
	"context"
	"crypto/rand"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/billingd/billing"
	"github.com/billingd/billing/render"
)

// Prefix is the path the console is served under; billingd serve routes
// every request starting with it to the Console.
const Prefix = "/console/"

// Config holds the options of a Console. A nil *Config, and every zero
// field, take the documented defaults.
type Config struct {
	// Store keeps the sessions (tables console_sessions,
	// console_session_keys, console_keys). Defaults to the Service's own
	// store.
	Store billing.Store

	// Logger receives the causes of internal errors. Defaults to a logger
	// that discards everything.
	Logger *slog.Logger

	// IdleTimeout ends a session not used for this long. Defaults to 12
	// hours.
	IdleTimeout time.Duration

	// MaxAge ends a session this long after sign-in, used or not.
	// Defaults to 7 days.
	MaxAge time.Duration

	// SecureCookies treats every request as arriving over TLS, for a
	// console behind a TLS-terminating proxy: cookies are Secure with the
	// __Host- prefix, and answers carry Strict-Transport-Security.
	// Defaults to false: so only when the request itself came over TLS,
	// or from a trusted proxy saying X-Forwarded-Proto: https.
	SecureCookies bool

	// TrustedProxies are the addresses of reverse proxies whose
	// X-Forwarded-Proto (https: the browser's connection was TLS) and
	// X-Forwarded-For (the client's address, for the sign-in limiter)
	// are believed. Defaults to none: those headers are ignored.
	TrustedProxies []netip.Prefix

	// Guard limits and counts the console's requests with the server's:
	// every signed-in request is charged to its API key's rate limit
	// (a document's rendering as httpserver.RenderCost requests), and
	// wrong sign-ins are counted as authentication failures. billingd
	// serve passes its *httpserver.Server. Defaults to no limit and no
	// count.
	Guard Guard

	// MaxSessionsPerKey bounds the live sessions of one API key: a
	// sign-in beyond it ends the key's oldest session. Defaults to 10.
	MaxSessionsPerKey int

	// Renders bounds the console's document renders (the framed HTML and
	// the PDF download); give it the Pool the API and the Dispatcher use,
	// so that all renders share one limit. Defaults to a Pool of its own
	// with render.PoolConfig's defaults.
	Renders *render.Pool

	// Now is the clock of session expiry. Defaults to time.Now.
	Now func() time.Time
}

// Console is the web console: an http.Handler for the paths under Prefix.
type Console struct {
	svc      billing.Services // the operations the pages call, by aggregate
	cfg      Config
	log      *slog.Logger
	sessions *sessions
	mux      *http.ServeMux
	pages    map[string]*template.Template
	static   http.Handler
	key      []byte // signs the sign-in form's token
	signIns  signInLimiter
	forms    formLocks // one submission of a form key at a time
}

//go:embed templates/*.html templates/partials/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// New returns the console of svc. It fails only if an embedded template
// does not parse.
func New(svc *billing.Service, cfg *Config) (*Console, error) {
	c := &Console{svc: svc}
	if cfg != nil {
		c.cfg = *cfg
	}
	if c.cfg.Store == nil {
		c.cfg.Store = svc.Store()
	}
	if c.cfg.Logger == nil {
		c.cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if c.cfg.IdleTimeout <= 0 {
		c.cfg.IdleTimeout = 12 * time.Hour
	}
	if c.cfg.MaxAge <= 0 {
		c.cfg.MaxAge = 7 * 24 * time.Hour
	}
	if c.cfg.Guard == nil {
		c.cfg.Guard = openGuard{}
	}
	if c.cfg.MaxSessionsPerKey <= 0 {
		c.cfg.MaxSessionsPerKey = 10
	}
	if c.cfg.Renders == nil {
		c.cfg.Renders = render.NewPool(render.PoolConfig{})
	}
	if c.cfg.Now == nil {
		c.cfg.Now = time.Now
	}
	c.log = c.cfg.Logger
	c.sessions = &sessions{store: c.cfg.Store, idle: c.cfg.IdleTimeout, maxAge: c.cfg.MaxAge, perKey: c.cfg.MaxSessionsPerKey, now: c.cfg.Now}
	key, err := signingKey(context.Background(), c.cfg.Store)
	if err != nil {
		return nil, fmt.Errorf("console: the signing key: %w", err)
	}
	c.key = key
	pages, err := parsePages()
	if err != nil {
		return nil, err
	}
	c.pages = pages
	sub, err := fs.Sub(staticFS, "static")
	if err != nil {
		return nil, err
	}
	c.static = http.StripPrefix(Prefix+"static/", http.FileServerFS(sub))
	c.mux = http.NewServeMux()
	c.routes()
	return c, nil
}

// ServeHTTP serves the console's pages.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	securityHeaders(w.Header())
	if c.secure(r) {
		w.Header().Set("Strict-Transport-Security", hsts)
	}
	c.mux.ServeHTTP(w, r)
}

// Sweep deletes the sessions that have expired and the form keys older
// than a day (see submit), and returns how many;
// billingd serve's housekeeping loop calls it every hour. (A sign-in only
// ends the oldest sessions of its own key, so that it costs the same
// however many sessions exist.)
func (c *Console) Sweep(ctx context.Context) (int, error) {
	n, err := c.sessions.sweep(ctx)
	if err != nil {
		return n, err
	}
	k, err := c.sweepFormKeys(ctx)
	return n + k, err
}

// contentSecurityPolicy allows the console's own stylesheet, images, forms
// and framed documents, and nothing else: no script at all, no inline
// style, no framing by other sites.
const contentSecurityPolicy = "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; " +
	"frame-src 'self'; frame-ancestors 'none'; base-uri 'none'"

// securityHeaders sets the headers of every console answer.
func securityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
}

// parsePages parses every page template with the layout: one template set
// per page, named after its file. The partials (templates/partials: tables
// and sections several pages show) are parsed into every set; a partial
// fills the page's empty {{block}} of the same name.
func parsePages() (map[string]*template.Template, error) {
	base, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html")
	if err != nil {
		return nil, err
	}
	files, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		return nil, err
	}
	pages := make(map[string]*template.Template, len(files))
	for _, f := range files {
		name := strings.TrimSuffix(strings.TrimPrefix(f, "templates/"), ".html")
		if name == "layout" {
			continue
		}
		t, err := template.Must(base.Clone()).ParseFS(templateFS, f, "templates/partials/*.html")
		if err != nil {
			return nil, fmt.Errorf("console template %s: %w", f, err)
		}
		pages[name] = t
	}
	return pages, nil
}

// randomToken returns 32 random bytes as URL-safe text.
func randomToken() string {
	return rand.Text() + rand.Text()
}

// Mount returns a handler that serves the console's paths (Prefix, and
// /console without the slash) with con and everything else with api.
// The console's requests then bypass the API's middleware: billingd serve
// mounts it inside the API's server instead (httpserver.Server.Mount), so
// that they are logged, counted and limited like the API's.
func Mount(api http.Handler, con *Console) http.Handler {
	mux := http.NewServeMux()
	mux.Handle(Prefix, con)
	mux.Handle(strings.TrimSuffix(Prefix, "/"), http.RedirectHandler(Prefix, http.StatusMovedPermanently))
	mux.Handle("/", api)
	return mux
}
