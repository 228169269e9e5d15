package httpserver

import (
	"bytes"
	"context"
	"errors"
	"io"
	"maps"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/billingd/billing"
)

// api registers endpoints on the authenticated API group. An endpoint is one
// call of get/post/put/patch/delete with its success status and an op:
//
//	a.get("/usage-metrics/:id", 200, func(c *call) (any, error) {
//		return a.svc.GetUsageMetric(c.ctx, c.account, c.param("id"))
//	})
//	a.post("/usage-metrics", 201, body(func(c *call, p *billing.CreateUsageMetricParams) (any, error) {
//		return a.svc.CreateUsageMetric(c.ctx, c.account, *p)
//	}))
//
// Path parameters: gin needs one name per path position, so every path
// parameter in the position of the specification's {id}, {creditnote} or
// {invoice} is named :id, and a second one (for example the line item of
// /credit-notes/{creditnote}/line-items/{id}) is named :item.
type api struct {
	*Server
	r gin.IRouter
}

// op is the body of an endpoint: it calls the Service once and returns the
// result to send with the route's success status, or an error.
type op func(c *call) (any, error)

// route is one endpoint of the API.
type route struct {
	method  string
	path    string
	status  int // success status
	op      op
	maxBody int64
	query   []string // the query parameters the route accepts
	// reuseBody: the body is read into the buffer of an earlier request
	// (bodyBuffers), given back once the answer is written (reusedBody).
	reuseBody bool
	// cost is how many requests the route counts as in the rate limiter
	// (0 or 1: one); see RenderCost.
	cost int
}

// routeOption changes a route; see batchBody.
type routeOption func(s *Server, r *route)

// accepts lets a route take the query parameters names. Every other query
// parameter is refused with validation_failed naming it, so that a
// mistyped filter never silently widens a list.
func accepts(names ...string) routeOption {
	return func(_ *Server, r *route) { r.query = append(r.query, names...) }
}

// listed is accepts for a list route: limit, after and before, and names.
func listed(names ...string) routeOption {
	return accepts(append([]string{"limit", "after", "before"}, names...)...)
}

// checkQuery refuses every query parameter of q that rt does not accept,
// each with its own error.
func (rt *route) checkQuery(q url.Values) error {
	var errs billing.ValidationErrors
	for _, name := range slices.Sorted(maps.Keys(q)) {
		if !slices.Contains(rt.query, name) {
			errs = append(errs, billing.FieldError(name, "%s", unknownName("query parameter", name, rt.query)))
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return errs
}

// batchBody gives a route the larger body limit of batch ingestion
// (Config.MaxBatchBodyBytes).
func batchBody(s *Server, r *route) { r.maxBody = s.cfg.MaxBatchBodyBytes }

// reusedBody reads a route's bodies into buffers of its earlier requests
// (a batch body is a few hundred KB): only for an op that keeps nothing
// that aliases c.body once its answer is written (the batch ingestion
// copies every string it decodes).
func reusedBody(_ *Server, r *route) { r.reuseBody = true }

// bodyBuffers keeps the body buffers of finished reusedBody requests: a
// few, as many as batches usually run at once (a channel, which
// collections do not empty as they would a sync.Pool).
var bodyBuffers = make(chan []byte, 4)

// maxPooledBody is the largest body buffer bodyBuffers keeps.
const maxPooledBody = 8 << 20

// takeBodyBuffer returns the buffer of an earlier reusedBody request, or nil.
func takeBodyBuffer() []byte {
	select {
	case b := <-bodyBuffers:
		return b
	default:
		return nil
	}
}

// giveBodyBuffer keeps b for a later reusedBody request, if there is room.
func giveBodyBuffer(b []byte) {
	if cap(b) == 0 || cap(b) > maxPooledBody {
		return
	}
	select {
	case bodyBuffers <- b[:0]:
	default:
	}
}

func (a api) get(path string, status int, fn op, opts ...routeOption) {
	a.handle(http.MethodGet, path, status, fn, opts...)
}

func (a api) post(path string, status int, fn op, opts ...routeOption) {
	a.handle(http.MethodPost, path, status, fn, opts...)
}

func (a api) put(path string, status int, fn op, opts ...routeOption) {
	a.handle(http.MethodPut, path, status, fn, opts...)
}

func (a api) patch(path string, status int, fn op, opts ...routeOption) {
	a.handle(http.MethodPatch, path, status, fn, opts...)
}

func (a api) delete(path string, status int, fn op, opts ...routeOption) {
	a.handle(http.MethodDelete, path, status, fn, opts...)
}

// handle registers one endpoint.
func (a api) handle(method, path string, status int, fn op, opts ...routeOption) {
	rt := &route{method: method, path: path, status: status, op: fn, maxBody: a.cfg.MaxBodyBytes}
	for _, opt := range opts {
		opt(a.Server, rt)
	}
	a.Server.routes = append(a.Server.routes, rt)
	a.r.Handle(method, path, a.endpoint(rt))
}

// body adapts an op that takes a decoded request body: the body must be
// application/json and is decoded strictly into a fresh P (see decodeJSON).
func body[P any](fn func(c *call, p *P) (any, error)) op {
	return func(c *call) (any, error) {
		p := new(P)
		if err := c.bind(p); err != nil {
			return nil, err
		}
		return fn(c, p)
	}
}

// endpoint is the one handler path of every API route: read the body within
// its limit, then run the op, through the idempotency path when the request
// carries an Idempotency-Key, and write the answer.
func (s *Server) endpoint(rt *route) gin.HandlerFunc {
	return func(g *gin.Context) {
		id := identityOf(g)
		// The middleware took one request; a costlier route takes the rest
		// of its cost, at most the burst in all.
		if extra := min(rt.cost, s.cfg.RateBurst) - 1; s.cfg.RateLimit > 0 && extra > 0 && !s.charge(g, id.keyID, extra) {
			return
		}
		var into []byte
		if rt.reuseBody {
			into = takeBodyBuffer()
		}
		raw, err := readLimited(unwrapWriter(g.Writer), g.Request, rt.maxBody, into)
		if rt.reuseBody {
			// The answer is written when endpoint returns. raw is into's
			// memory, or larger; nil when nothing was read.
			defer func() {
				if raw == nil {
					raw = into
				}
				giveBodyBuffer(raw)
			}()
		}
		if err != nil {
			s.writeError(g, err)
			return
		}
		c := &call{
			ctx:         g.Request.Context(),
			account:     id.account,
			keyID:       id.keyID,
			params:      g.Params,
			body:        raw,
			contentType: g.GetHeader("Content-Type"),
		}
		if g.Request.URL.RawQuery != "" { // most requests have none: no map then
			c.query = g.Request.URL.Query()
			if err := rt.checkQuery(c.query); err != nil {
				s.writeError(g, err)
				return
			}
		}
		if mutating(rt.method) {
			if key, ok := idempotencyKey(g.Request); ok {
				s.idempotent(g, c, rt, key)
				return
			}
		}
		result, err := rt.op(c)
		if err != nil {
			s.writeError(g, err)
			return
		}
		s.writeResult(g, rt.status, result)
	}
}

// readLimited reads r's whole body, at most limit bytes (payload_too_large
// beyond), into into's memory when it has room; w is the net/http writer
// the limit tells to close the connection.
func readLimited(w http.ResponseWriter, r *http.Request, limit int64, into []byte) ([]byte, error) {
	tooLarge := func() error {
		return billing.Errorf(CodePayloadTooLarge, "the request body is larger than %d bytes", limit)
	}
	if r.ContentLength > limit {
		return nil, tooLarge()
	}
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	r.Body = http.MaxBytesReader(w, r.Body, limit)
	b, err := readBody(r.Body, r.ContentLength, into)
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return nil, tooLarge()
	case err != nil:
		return nil, &billing.Error{Code: CodeInvalidJSON, Message: "the request body could not be read", Err: err}
	}
	return b, nil
}

// readBody reads body to its end, into into's memory when it has room. A
// body of known length (a batch is a few hundred KB) is read into one
// buffer of that size, where io.ReadAll would grow and copy its buffer a
// dozen times; at most maxPresized bytes are allocated before they arrive.
func readBody(body io.Reader, length int64, into []byte) ([]byte, error) {
	if length <= 0 && into == nil {
		return io.ReadAll(body)
	}
	buf := bytes.NewBuffer(into[:0])
	if length > 0 {
		buf.Grow(int(min(length, maxPresized)) + bytes.MinRead)
	}
	_, err := buf.ReadFrom(body)
	return buf.Bytes(), err
}

// maxPresized bounds the buffer readBody allocates from a Content-Length
// alone, so that clients announcing large bodies they do not send cannot
// make the server hold much memory.
const maxPresized = 1 << 20

// unwrapWriter returns the net/http ResponseWriter under gin's, so that
// http.MaxBytesReader can tell the server to close the connection.
func unwrapWriter(w http.ResponseWriter) http.ResponseWriter {
	for {
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			return w
		}
		w = u.Unwrap()
	}
}

func mutating(method string) bool {
	switch method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return true
	}
	return false
}

// call is what an op sees of its request: never the gin.Context.
type call struct {
	ctx     context.Context
	account string // from the credentials only
	keyID   string

	params      gin.Params
	query       url.Values // nil when the request has no query
	body        []byte
	contentType string
}

// param returns the path parameter name (see api for the naming rule).
func (c *call) param(name string) string { return c.params.ByName(name) }

// bind checks the Content-Type and decodes the body strictly into dst.
func (c *call) bind(dst any) error {
	if err := checkJSONContentType(c.contentType); err != nil {
		return err
	}
	return decodeJSON(c.body, dst)
}

// checkJSONContentType answers unsupported_media_type unless the
// Content-Type is application/json (parameters such as charset allowed).
func checkJSONContentType(contentType string) error {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil || mt != "application/json" {
		return billing.Errorf(CodeUnsupportedMediaType, "the request body must be JSON sent with Content-Type: application/json")
	}
	return nil
}

// listParams reads limit, after and before. Their values are checked by the
// Service, except that limit must be an integer; an explicit limit=0 is
// passed on as an invalid limit because a zero ListParams.Limit means
// "default".
func (c *call) listParams() (billing.ListParams, error) {
	p := billing.ListParams{After: c.query.Get("after"), Before: c.query.Get("before")}
	if vs, ok := c.query["limit"]; ok {
		n, err := strconv.ParseInt(vs[0], 10, 64)
		var ne *strconv.NumError
		switch {
		case errors.As(err, &ne) && errors.Is(ne.Err, strconv.ErrRange), err == nil && n < 1:
			p.Limit = -1
		case err != nil:
			return p, billing.FieldError("limit", "limit must be an integer")
		case n > 1<<30:
			p.Limit = 1 << 30
		default:
			p.Limit = int(n)
		}
	}
	return p, nil
}

// csv returns the comma-separated values of query parameter name (all of
// its occurrences), without empty elements; nil when absent.
func (c *call) csv(name string) []string {
	var out []string
	for _, v := range c.query[name] {
		for part := range strings.SplitSeq(v, ",") {
			if part = strings.TrimSpace(part); part != "" {
				out = append(out, part)
			}
		}
	}
	return out
}

// csvOf is csv converted to a string type such as billing.AggregationType.
func csvOf[T ~string](c *call, name string) []T {
	vs := c.csv(name)
	if vs == nil {
		return nil
	}
	out := make([]T, len(vs))
	for i, v := range vs {
		out[i] = T(v)
	}
	return out
}

// The adapters below make an op of a Service operation whose op would only
// pass the request's parts through, so that such a route reads as one line:
// a.delete("/invoices/:id", 200, deleteID(a.svc.DeleteInvoice)). The answer is
// the operation's result, its error written by writeError as any op's.

// onAccount adapts an operation on the caller's account.
func onAccount[T any](fn func(ctx context.Context, account string) (T, error)) op {
	return func(c *call) (any, error) { return fn(c.ctx, c.account) }
}

// withBody adapts an operation on the caller's account that takes the
// request body (a create).
func withBody[P, T any](fn func(ctx context.Context, account string, p P) (T, error)) op {
	return body(func(c *call, p *P) (any, error) { return fn(c.ctx, c.account, *p) })
}

// onID adapts an operation on the record named by the path's :id.
func onID[T any](fn func(ctx context.Context, account, id string) (T, error)) op {
	return func(c *call) (any, error) { return fn(c.ctx, c.account, c.param("id")) }
}

// onIDWithBody adapts an operation on :id that takes the request body.
func onIDWithBody[P, T any](fn func(ctx context.Context, account, id string, p P) (T, error)) op {
	return body(func(c *call, p *P) (any, error) { return fn(c.ctx, c.account, c.param("id"), *p) })
}

// onItemWithBody adapts an operation on the :item (a line or group) of the
// record :id that takes the request body.
func onItemWithBody[P, T any](fn func(ctx context.Context, account, id, item string, p P) (T, error)) op {
	return body(func(c *call, p *P) (any, error) { return fn(c.ctx, c.account, c.param("id"), c.param("item"), *p) })
}

// deleteID adapts the DELETE of the record :id: the deleted body.
func deleteID(fn func(ctx context.Context, account, id string) error) op {
	return func(c *call) (any, error) { return gone(c.param("id"), fn(c.ctx, c.account, c.param("id"))) }
}

// deleteItem adapts the DELETE of the :item of the record :id.
func deleteItem(fn func(ctx context.Context, account, id, item string) error) op {
	return func(c *call) (any, error) {
		return gone(c.param("item"), fn(c.ctx, c.account, c.param("id"), c.param("item")))
	}
}

// linesByIndex adapts the list of the lines or groups of the document :id,
// ordered by index.
func linesByIndex[T any](fn func(ctx context.Context, account, id string, f billing.LineItemFilter, p billing.ListParams) (billing.Page[T], error)) op {
	return paged(func(c *call, p billing.ListParams) (any, error) {
		return fn(c.ctx, c.account, c.param("id"), byIndex(c), p)
	})
}

// filtered adapts a list of the account's records under the filter that
// filter reads from the query (the Service checks its values).
func filtered[F, T any](fn func(ctx context.Context, account string, f F, p billing.ListParams) (billing.Page[T], error), filter func(c *call) F) op {
	return paged(func(c *call, p billing.ListParams) (any, error) { return fn(c.ctx, c.account, filter(c), p) })
}

// byCreation adapts a list of the account's records in creation order that
// has no filter but the sort order.
func byCreation[T any](fn func(ctx context.Context, account string, order billing.SortOrder, p billing.ListParams) (billing.Page[T], error)) op {
	return paged(func(c *call, p billing.ListParams) (any, error) { return fn(c.ctx, c.account, sortOrder(c), p) })
}

// idOp is a Service operation on the record id of the account.
type idOp[T any] func(ctx context.Context, account, id string) (T, error)

// records mounts the four routes of a kind of record that callers create,
// list, read and replace: POST path (201, the body is P), GET path (the
// list, its filter read from the query by getList), GET path/:id and PUT
// path/:id (the body is U).
func records[P, U, F, T, L any](a api, path string,
	create func(ctx context.Context, account string, p P) (T, error),
	list func(ctx context.Context, account string, f F, p billing.ListParams) (billing.Page[L], error),
	get idOp[T], update func(ctx context.Context, account, id string, p U) (T, error),
) {
	a.post(path, 201, withBody(create))
	getList(a, path, list)
	a.get(path+"/:id", 200, onID(get))
	a.put(path+"/:id", 200, onIDWithBody(update))
}

// transitions mounts POST path/:id/name for each name of ops: a change of
// the record :id that takes no body (draft, finalize, void, ...).
func transitions[T any](a api, path string, ops map[string]idOp[T]) {
	for _, name := range slices.Sorted(maps.Keys(ops)) {
		a.post(path+"/:id/"+name, 200, onID(ops[name]))
	}
}

// items mounts the four routes of the lines or groups of a document:
// POST path (201, the body is P), GET path (ordered by index), PUT (the
// body is U) and DELETE path/:item. path holds the document's :id.
func items[P, U, T, L any](a api, path string,
	create func(ctx context.Context, account, id string, p P) (T, error),
	list func(ctx context.Context, account, id string, f billing.LineItemFilter, p billing.ListParams) (billing.Page[L], error),
	update func(ctx context.Context, account, id, item string, p U) (T, error),
	remove func(ctx context.Context, account, id, item string) error,
) {
	a.post(path, 201, onIDWithBody(create))
	a.get(path, 200, linesByIndex(list), listed("sortOrder"))
	a.put(path+"/:item", 200, onItemWithBody(update))
	a.delete(path+"/:item", 200, deleteItem(remove))
}
