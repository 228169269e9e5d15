package httpserver

import (
	"log/slog"
	"net/http"
)

// The server's body and error conventions for plain net/http handlers
// served beside the API, such as billingd's admin socket, so that every
// JSON endpoint of the product reads bodies and reports errors alike.

// ReadJSON reads r's body as the server reads an API request body: at most
// limit bytes (payload_too_large beyond), sent with Content-Type
// application/json (unsupported_media_type otherwise), decoded into dst (a
// non-nil pointer) by the server's strict decoder: exactly one JSON object
// (invalid_json otherwise), every unknown field and every value of the
// wrong type reported with its JSON path (validation_failed). w is the
// handler's writer, which the limit tells to close the connection.
func ReadJSON(w http.ResponseWriter, r *http.Request, limit int64, dst any) error {
	if err := checkJSONContentType(r.Header.Get("Content-Type")); err != nil {
		return err
	}
	body, err := readLimited(w, r, limit, nil)
	if err != nil {
		return err
	}
	return decodeJSON(body, dst)
}

// WriteError answers err as the server does: the status of its code from
// the server's one table and the body {"errors":[{"code", "message",
// "field"}]}. The cause of an internal error is logged to log and the
// client only learns "internal error".
func WriteError(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	status, body := errorAnswer(r.Context(), log, err)
	setErrorHeaders(w.Header(), status)
	w.Header().Set("Content-Type", jsonContentType)
	w.WriteHeader(status)
	_, _ = w.Write(body) // the client is gone when this fails
}
