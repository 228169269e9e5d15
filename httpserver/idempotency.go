package httpserver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"github.com/billingd/billing"
)

// idempotencyKey returns the Idempotency-Key header and whether it was sent
// at all (an empty value is sent, and invalid).
func idempotencyKey(r *http.Request) (string, bool) {
	vs, ok := r.Header["Idempotency-Key"]
	if !ok || len(vs) == 0 {
		return "", false
	}
	return vs[0], true
}

// validIdempotencyKey reports whether key is 1 to 255 printable characters.
func validIdempotencyKey(key string) bool {
	if key == "" || !utf8.ValidString(key) || utf8.RuneCountInString(key) > 255 {
		return false
	}
	for _, r := range key {
		if !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

// inflightSet holds the (account, key) pairs being processed by this
// process, so a concurrent duplicate is refused instead of racing the first.
// (Across processes, idempotencyStore.begin marks the key in flight in the
// store with Config.MarkIdempotencyKeysInFlight, and the commit hook
// refuses a second answer in its transaction in any case.)
type inflightSet struct {
	mu  sync.Mutex
	set map[string]struct{}
}

// acquire marks (account, key) in flight; false when it already is.
func (f *inflightSet) acquire(account, key string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	k := account + "\x00" + key
	if _, busy := f.set[k]; busy {
		return false
	}
	if f.set == nil {
		f.set = map[string]struct{}{}
	}
	f.set[k] = struct{}{}
	return true
}

// release ends what acquire started.
func (f *inflightSet) release(account, key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.set, account+"\x00"+key)
}

// idempotent runs a mutating request that carries an Idempotency-Key: it
// replays the stored answer of an earlier identical request, refuses a
// reused or busy key, or runs the op and stores its answer.
func (s *Server) idempotent(g *gin.Context, c *call, rt *route, key string) {
	if !validIdempotencyKey(key) {
		s.writeError(g, billing.FieldError("Idempotency-Key", "Idempotency-Key must be 1 to 255 printable characters"))
		return
	}
	if !s.inflight.acquire(c.account, key) {
		s.writeError(g, billing.Errorf(CodeIdempotencyKeyInUse,
			"a request with this Idempotency-Key is being processed; retry later"))
		return
	}
	defer s.inflight.release(c.account, key)

	path := g.Request.URL.Path
	if q := g.Request.URL.RawQuery; q != "" {
		path += "?" + q
	}
	req := &idempotencyRequest{
		key:         key,
		fingerprint: requestFingerprint(rt.method, path, c.body),
		render: func(result any) (int, []byte, error) {
			b, err := s.encodeResult(result)
			return rt.status, b, err
		},
	}
	if !s.answerFromRecord(g, c, req) {
		defer s.idem.end(c.ctx, c.account, req)
		s.runAndStore(g, c, rt, req)
	}
}

// answerFromRecord answers from the record stored under the key, if any:
// the stored answer for the same request, idempotency_key_reused for another,
// idempotency_key_in_use while another instance runs a request with the key.
// It reports whether it answered.
func (s *Server) answerFromRecord(g *gin.Context, c *call, req *idempotencyRequest) bool {
	rec, err := s.idem.begin(c.ctx, c.account, req)
	switch {
	case err != nil:
		s.writeError(g, err)
	case rec == nil:
		return false
	case rec.Fingerprint != req.fingerprint:
		s.writeError(g, billing.Errorf(CodeIdempotencyKeyReused,
			"this Idempotency-Key was used with a different request (method, path or body)"))
	default:
		g.Header("Idempotent-Replayed", "true")
		g.Data(rec.Status, jsonContentType, rec.Body)
	}
	return true
}

// runAndStore runs the op with the idempotency store's commit hook in its
// context, so a success is stored in the op's own transaction; a storable error answer is
// stored afterwards. A success the op did not store itself (a billing run,
// which commits a transaction per batch) is stored afterwards too, and when
// that fails the answer is the storage error (503): a 200 that a retry
// could not replay would tell the client the outcome is settled when its
// retry would run the operation again.
func (s *Server) runAndStore(g *gin.Context, c *call, rt *route, req *idempotencyRequest) {
	ctx := c.ctx
	c.ctx = billing.WithCommitHook(ctx, s.idem.hook(c.account, req))
	result, err := rt.op(c)
	if err != nil {
		status, body := s.renderError(ctx, err)
		if storable(err) {
			// A failure to store an error answer leaves the key free: a
			// retry runs again and meets the same error.
			_ = s.store(ctx, c.account, req, status, body)
		}
		s.sendError(g, status, body)
		return
	}
	if req.stored {
		req.hold = "" // the answer replaced the in-flight mark
	} else {
		status, body, err := req.render(result)
		if err != nil {
			s.writeError(g, err)
			return
		}
		// Expected for billing runs (a transaction per batch); a warning
		// would fire on every normal run.
		s.log.DebugContext(ctx, "operation did not store its idempotency record; storing it separately",
			"method", rt.method, "route", rt.path)
		req.status, req.body = status, body
		if err := s.store(ctx, c.account, req, status, body); err != nil {
			s.writeError(g, err)
			return
		}
	}
	g.Data(req.status, jsonContentType, req.body)
}

// storable reports whether an error answer is stored for replay, as Stripe
// does: only the answers of an operation that ran (404 not_found, 409
// invalid_state, 409 conflict). Answers given before it ran (400, 401, 413,
// 415, 429, 409 idempotency_key_in_use) and 5xx are not stored, so a client
// may fix its request, or wait, and retry with the same key.
func storable(err error) bool {
	switch billing.CodeOf(err) {
	case billing.CodeNotFound, billing.CodeInvalidState, billing.CodeConflict:
		return true
	}
	return false
}

// store saves an answer that the op did not store itself. It runs even if
// the client has gone, so that what was answered is what is replayed. A
// failure is logged and returned.
func (s *Server) store(ctx context.Context, account string, req *idempotencyRequest, status int, body []byte) error {
	ctx = context.WithoutCancel(ctx)
	err := s.idem.storeAnswer(ctx, account, req, status, body)
	if err != nil {
		s.log.WarnContext(ctx, "storing an idempotent response failed", "err", err)
	}
	return err
}

// requestFingerprint returns the fingerprint of a request for idempotency:
// the hex SHA-256 of its method, path and raw body bytes.
func requestFingerprint(method, path string, body []byte) string {
	h := sha256.New()
	h.Write([]byte(method))
	h.Write([]byte{0})
	h.Write([]byte(path))
	h.Write([]byte{0})
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil))
}
