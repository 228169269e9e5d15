package httpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strconv"
	"sync"

	"github.com/gin-gonic/gin"

	"github.com/billingd/billing"
	"github.com/billingd/billing/render"
)

// The error codes of what only the HTTP layer can get wrong, beside the
// Service's own (billing.CodeValidationFailed, ...): they share the one
// error shape and the one status table.
const (
	// CodeInvalidJSON: the body is not JSON, or not of the documented shape.
	CodeInvalidJSON billing.Code = "invalid_json"
	// CodeUnsupportedVersion: the Service-Version header names no version
	// this server speaks.
	CodeUnsupportedVersion billing.Code = "unsupported_version"
	// CodeMethodNotAllowed: the path exists, the method does not.
	CodeMethodNotAllowed billing.Code = "method_not_allowed"
	// CodeIdempotencyKeyInUse: a request with the same Idempotency-Key is
	// being processed, here or on another instance.
	CodeIdempotencyKeyInUse billing.Code = "idempotency_key_in_use"
	// CodePayloadTooLarge: the body is over the route's limit.
	CodePayloadTooLarge billing.Code = "payload_too_large"
	// CodeHeadersTooLarge: the request line and headers are over
	// Config.MaxHeaderBytes.
	CodeHeadersTooLarge billing.Code = "headers_too_large"
	// CodeUnsupportedMediaType: the body's Content-Type is not one the
	// route takes.
	CodeUnsupportedMediaType billing.Code = "unsupported_media_type"
	// CodeIdempotencyKeyReused: the Idempotency-Key was used with another
	// request (method, path or body).
	CodeIdempotencyKeyReused billing.Code = "idempotency_key_reused"
	// CodeRateLimited: the API key is over its rate limit.
	CodeRateLimited billing.Code = "rate_limited"
)

// statusOf is the one table from error code to HTTP status (docs/api-guide.md,
// "Errors"). Handlers never choose an error status themselves.
var statusOf = map[billing.Code]int{
	CodeInvalidJSON:              http.StatusBadRequest,
	billing.CodeValidationFailed: http.StatusBadRequest,
	CodeUnsupportedVersion:       http.StatusBadRequest,
	billing.CodeUnauthorized:     http.StatusUnauthorized,
	billing.CodeNotFound:         http.StatusNotFound,
	CodeMethodNotAllowed:         http.StatusMethodNotAllowed,
	billing.CodeInvalidState:     http.StatusConflict,
	billing.CodeConflict:         http.StatusConflict,
	CodeIdempotencyKeyInUse:      http.StatusConflict,
	CodePayloadTooLarge:          http.StatusRequestEntityTooLarge,
	CodeHeadersTooLarge:          http.StatusRequestHeaderFieldsTooLarge,
	CodeUnsupportedMediaType:     http.StatusUnsupportedMediaType,
	CodeIdempotencyKeyReused:     http.StatusUnprocessableEntity,
	CodeRateLimited:              http.StatusTooManyRequests,
	billing.CodeInternal:         http.StatusInternalServerError,
	billing.CodeUnavailable:      http.StatusServiceUnavailable,
}

// StatusOf returns the HTTP status of an error code: the status every API
// answer with that code carries, 500 for a code the table does not know.
// The Service's other HTTP front ends (the console) answer with it too, so
// that one table decides every status.
func StatusOf(code billing.Code) int {
	if status, ok := statusOf[code]; ok {
		return status
	}
	return http.StatusInternalServerError
}

// internalMessage is all a client learns about an internal error.
const internalMessage = "internal error"

// jsonContentType is the Content-Type of every JSON answer.
const jsonContentType = "application/json; charset=utf-8"

// wireError is one element of the error body.
type wireError struct {
	Code    billing.Code `json:"code"`
	Message string       `json:"message"`
	Field   string       `json:"field,omitempty"`
}

// errorBody is the whole body of every error answer.
type errorBody struct {
	Errors []wireError `json:"errors"`
}

// renderError turns err into its status and body, logging the causes of
// internal errors (which never reach the client).
func (s *Server) renderError(ctx context.Context, err error) (int, []byte) {
	return errorAnswer(ctx, s.log, err)
}

// errorAnswer is renderError with the logger given: the status and body of
// every error answer, the server's and those of handlers outside it
// (WriteError).
func errorAnswer(ctx context.Context, log *slog.Logger, err error) (int, []byte) {
	errs := billing.Errors(err)
	status := StatusOf(errs[0].Code)
	out := errorBody{Errors: make([]wireError, 0, len(errs))}
	for _, e := range errs {
		w := wireError{Code: e.Code, Message: e.Message, Field: e.Field}
		if _, known := statusOf[e.Code]; !known || e.Code == billing.CodeInternal {
			log.ErrorContext(ctx, "internal error", "code", string(e.Code), "err", e)
			w = wireError{Code: billing.CodeInternal, Message: internalMessage}
		} else if e.Code == billing.CodeUnavailable && e.Err != nil {
			// The client is told to retry; the operator needs the cause
			// (a store that gave up retrying, a lost connection).
			log.WarnContext(ctx, "unavailable", "err", e.Err)
		}
		out.Errors = append(out.Errors, w)
	}
	b, merr := json.Marshal(out)
	if merr != nil { // cannot happen: the body is strings only
		return http.StatusInternalServerError, []byte(`{"errors":[{"code":"internal","message":"internal error"}]}`)
	}
	return status, b
}

// writeError is the one function that writes an error answer. It adds the
// headers some codes require: WWW-Authenticate on 401, and Connection: close
// on 413 so the rest of an oversized body is never read.
func (s *Server) writeError(g *gin.Context, err error) {
	if secs, ok := render.RetryAfter(err); ok {
		g.Header("Retry-After", strconv.Itoa(secs))
	}
	status, body := s.renderError(g.Request.Context(), err)
	s.sendError(g, status, body)
}

// sendError writes an error answer rendered by renderError.
func (s *Server) sendError(g *gin.Context, status int, body []byte) {
	setErrorHeaders(g.Writer.Header(), status)
	if code := errorCode(body); code != "" {
		g.Set(errorCodeKey{}, code)
	}
	g.Abort()
	g.Data(status, jsonContentType, body)
}

// setErrorHeaders adds the headers an error status requires:
// WWW-Authenticate on 401, and Connection: close on 413 so the rest of an
// oversized body is never read.
func setErrorHeaders(h http.Header, status int) {
	switch status {
	case http.StatusUnauthorized:
		h.Set("WWW-Authenticate", `Basic realm="billingd"`)
	case http.StatusRequestEntityTooLarge:
		h.Set("Connection", "close")
	}
}

// errorCode returns the code of the first error of an error body rendered
// by renderError, for the request log.
func errorCode(body []byte) billing.Code {
	const prefix = `{"errors":[{"code":"`
	if !bytes.HasPrefix(body, []byte(prefix)) {
		return ""
	}
	rest := body[len(prefix):]
	if i := bytes.IndexByte(rest, '"'); i > 0 {
		return billing.Code(rest[:i])
	}
	return ""
}

// jsonAppender is a result that encodes itself exactly as json.Marshal
// would (compact, HTML-escaped), such as a usage metrics page: its encoding is sent
// as is, without json.Marshal checking and compacting it a second time.
type jsonAppender interface {
	AppendJSON(b []byte) ([]byte, error)
}

// appendJSONFunc is a result rendered when it is written: an op returns it
// to let the Service append the answer straight into writeResult's pooled
// buffer. An error it returns is written by writeError, as an op's would be.
type appendJSONFunc func(b []byte) ([]byte, error)

// AppendJSON calls f.
func (f appendJSONFunc) AppendJSON(b []byte) ([]byte, error) { return f(b) }

// writtenNotifier is a jsonAppender answer that holds memory to reuse
// (aheadAnswer): writeResult tells it when its encoding, which AppendJSON
// returns in that memory, has been written.
type writtenNotifier interface{ written() }

// answerBuffers recycles the buffers of jsonAppender answers: a list page
// is several kilobytes, and allocating it afresh per request was the largest
// allocation of GET /usage-metrics.
var answerBuffers = sync.Pool{New: func() any { return new([]byte) }}

// maxPooledAnswer is the largest buffer answerBuffers keeps.
const maxPooledAnswer = 64 << 10

// writeResult writes a successful answer: result as JSON with status, or
// a fileAnswer (a rendered document, the logo) as it is.
func (s *Server) writeResult(g *gin.Context, status int, result any) {
	if f, ok := result.(*fileAnswer); ok {
		f.write(g, status)
		return
	}
	if a, ok := result.(jsonAppender); ok {
		buf := answerBuffers.Get().(*[]byte)
		b, err := a.AppendJSON((*buf)[:0])
		if err != nil {
			answerBuffers.Put(buf)
			s.writeError(g, err)
			return
		}
		g.Data(status, jsonContentType, s.upstreamNames(b)) // written (copied) before returning
		if w, ok := a.(writtenNotifier); ok {
			answerBuffers.Put(buf) // unused: b is the answer's own memory,
			w.written()            // which it reuses from now on
			return
		}
		if cap(b) <= maxPooledAnswer {
			*buf = b
			answerBuffers.Put(buf)
		}
		return
	}
	b, err := s.encodeResult(result)
	if err != nil {
		s.writeError(g, err)
		return
	}
	g.Data(status, jsonContentType, b)
}
