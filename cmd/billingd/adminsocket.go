package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/billingd/billing"
	"github.com/billingd/billing/httpserver"
)

// The admin socket speaks HTTP/1.1 with JSON bodies, and only on the Unix
// socket: the socket file's mode (0600) is its authentication.
//
//	GET  /ping                   200 {"db"}: the database file served
//	POST /accounts               {"name"} → 201 credential
//	GET  /accounts               200 [account, ...]
//	POST /keys                   {"serviceAccountId"} → 201 credential
//	POST /keys/{id}/revoke       200 APIKey
//	PUT  /accounts/{id}/payments {"provider","secretKey","webhookSecret"} → 200 (no secrets back)
//	GET  /backup                 200 the database file, streamed; a failure
//	                             after the first byte is reported in the
//	                             Billingd-Backup-Error trailer
//
// Bodies and errors follow the API server's conventions (httpserver.ReadJSON
// and httpserver.WriteError): a body is one JSON object sent as
// application/json and decoded strictly (unknown fields and wrong types are
// validation_failed, naming the field), and an error answers
// {"errors":[{"code", "message", "field"}]} with the status of its code.
const (
	backupErrorTrailer = "Billingd-Backup-Error"
	maxAdminBody       = 64 << 10
)

// pingResponse is the answer to GET /ping. DB lets a client check that the
// server serves the database it means.
type pingResponse struct {
	DB string `json:"db"`
}

// newAdminHandler returns the HTTP handler of the admin socket over a, the
// admin of the database file db.
func newAdminHandler(a admin, db string, log *slog.Logger) http.Handler {
	if abs, err := filepath.Abs(db); err == nil {
		db = abs
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /ping", func(w http.ResponseWriter, r *http.Request) {
		writeAdminJSON(w, r, log, http.StatusOK, pingResponse{DB: db}, nil)
	})
	createJSON(mux, "POST /accounts", log, func(ctx context.Context, req struct {
		Name string `json:"name"`
	}) (*credential, error) {
		cred, err := a.CreateAccount(ctx, req.Name)
		if err == nil { // the running server logs its admin actions
			log.InfoContext(ctx, "admin: account created", "account", cred.ServiceAccountID, "key", cred.KeyID)
		}
		return cred, err
	})
	mux.HandleFunc("GET /accounts", func(w http.ResponseWriter, r *http.Request) {
		accounts, err := a.ListAccounts(r.Context())
		writeAdminJSON(w, r, log, http.StatusOK, accounts, err)
	})
	createJSON(mux, "POST /keys", log, func(ctx context.Context, req struct {
		ServiceAccountID string `json:"serviceAccountId"`
	}) (*credential, error) {
		cred, err := a.CreateKey(ctx, req.ServiceAccountID)
		if err == nil {
			log.InfoContext(ctx, "admin: API key created", "account", cred.ServiceAccountID, "key", cred.KeyID)
		}
		return cred, err
	})
	mux.HandleFunc("GET /keys", func(w http.ResponseWriter, r *http.Request) {
		keys, err := a.ListKeys(r.Context(), r.URL.Query().Get("account"))
		writeAdminJSON(w, r, log, http.StatusOK, keys, err)
	})
	mux.HandleFunc("POST /keys/{id}/revoke", func(w http.ResponseWriter, r *http.Request) {
		key, err := a.RevokeKey(r.Context(), r.PathValue("id"))
		if err == nil {
			log.InfoContext(r.Context(), "admin: API key revoked", "account", key.ServiceAccountID, "key", key.ID)
		}
		writeAdminJSON(w, r, log, http.StatusOK, key, err)
	})
	mux.HandleFunc("GET /backup", func(w http.ResponseWriter, r *http.Request) {
		serveBackup(w, r, a, log)
	})
	mountPaymentsAdmin(mux, a, log)
	return mux
}

// createJSON mounts a route whose JSON body decodes into a B and that
// answers 201 with what create returns.
func createJSON[B, R any](mux *http.ServeMux, pattern string, log *slog.Logger, create func(ctx context.Context, body B) (R, error)) {
	mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		var body B
		if decodeAdminJSON(w, r, log, &body) {
			out, err := create(r.Context(), body)
			writeAdminJSON(w, r, log, http.StatusCreated, out, err)
		}
	})
}

// serveBackup streams a backup. The status is sent before the copy starts,
// so a failure during the copy goes into a trailer the client checks.
func serveBackup(w http.ResponseWriter, r *http.Request, a admin, log *slog.Logger) {
	w.Header().Set("Trailer", backupErrorTrailer)
	w.Header().Set("Content-Type", "application/octet-stream")
	n, err := a.Backup(r.Context(), w)
	if err != nil {
		log.Error("admin backup failed", "bytes", n, "err", err)
		w.Header().Set(backupErrorTrailer, err.Error())
		return
	}
	log.Info("admin: backup written", "bytes", n)
}

// decodeAdminJSON reads the request body into v with the API server's
// strict decoder (httpserver.ReadJSON). On failure it answers the error and
// returns false.
func decodeAdminJSON(w http.ResponseWriter, r *http.Request, log *slog.Logger, v any) bool {
	if err := httpserver.ReadJSON(w, r, maxAdminBody, v); err != nil {
		writeAdminJSON(w, r, log, 0, nil, err)
		return false
	}
	return true
}

// writeAdminJSON answers v with status, or the error err as the API server
// answers errors (httpserver.WriteError).
func writeAdminJSON(w http.ResponseWriter, r *http.Request, log *slog.Logger, status int, v any, err error) {
	if err != nil {
		log.Warn("admin request failed", "code", string(billing.CodeOf(err)), "err", err)
		httpserver.WriteError(w, r, log, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v) // the client is gone when this fails
}

// listenAdmin listens on the admin socket at path with mode 0600. A socket
// file nobody answers on (left by a crashed server) is removed first; a
// socket a live server answers on, or a file that is not a socket, is an
// error.
func listenAdmin(path string) (*net.UnixListener, error) {
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode().Type() != fs.ModeSocket {
			return nil, fmt.Errorf("admin socket %s: the file exists and is not a socket", path)
		}
		if adminAnswers(path, 500*time.Millisecond) {
			return nil, fmt.Errorf("admin socket %s: another billingd answers on it (use --admin-socket)", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("admin socket %s: removing the stale socket: %w", path, err)
		}
	}
	return listenPrivate(path)
}

// listenPrivate creates the socket inside a new directory only this user
// can enter, makes it 0600 and then moves it into place, so the socket is
// never reachable with looser permissions (a chmod after listening would
// leave a window, and the umask is process-wide).
func listenPrivate(path string) (*net.UnixListener, error) {
	dir, err := os.MkdirTemp(filepath.Dir(path), ".bds-")
	if err != nil {
		return nil, fmt.Errorf("admin socket %s: %w", path, err)
	}
	defer os.RemoveAll(dir)
	tmp := filepath.Join(dir, "s")
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: tmp, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("admin socket %s: %w", path, err)
	}
	l.SetUnlinkOnClose(false) // the socket moves; serve removes it by its final name
	err = os.Chmod(tmp, 0o600)
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		l.Close()
		return nil, fmt.Errorf("admin socket %s: %w", path, err)
	}
	return l, nil
}

// adminAnswers reports whether a process accepts connections on the socket
// at path. Any listener counts, billingd or not: only a dead socket is
// removed.
func adminAnswers(path string, timeout time.Duration) bool {
	conn, err := net.DialTimeout("unix", path, timeout)
	if err != nil {
		return false
	}
	conn.Close()
	return true
}
