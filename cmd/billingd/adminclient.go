package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/billingd/billing"
)

// Time limits of the admin commands. Together they keep a command that can
// reach neither a server nor the file under two seconds.
const (
	adminPingTimeout  = 500 * time.Millisecond // dial and answer /ping
	directLockTimeout = time.Second            // wait for the file lock
	adminCallTimeout  = 30 * time.Second       // one admin call, backups excepted
)

// connectAdmin returns the admin of the database f.db: the running server's,
// over its admin socket, when one answers there; otherwise the file opened
// directly. A missing file is created only when create is set. The returned
// function releases what connectAdmin opened.
func connectAdmin(ctx context.Context, f adminFlags, create bool) (admin, func() error, error) {
	sock := f.socket()
	var sockErr error
	if sock == "" {
		// PostgreSQL: several processes may use the database at once.
		la, err := openLocalAdmin(ctx, f.db, true)
		if err != nil {
			return nil, nil, err
		}
		return la, la.store.Close, nil
	} else if _, err := os.Stat(sock); err == nil {
		s := newSocketAdmin(sock)
		if sockErr = s.ping(ctx, f.db); sockErr == nil {
			return s, s.close, nil
		}
		_ = s.close()
		var mismatch *serverMismatchError
		if errors.As(sockErr, &mismatch) {
			return nil, nil, sockErr
		}
	}
	la, err := openLocalAdmin(ctx, f.db, create)
	if err != nil && sockErr != nil {
		err = fmt.Errorf("%w; no server answers on the admin socket %s either: %v", err, sock, sockErr)
	}
	if err != nil {
		return nil, nil, err
	}
	return la, la.store.Close, nil
}

// openLocalAdmin opens the database file directly, waiting at most
// directLockTimeout for another process to let go of it.
func openLocalAdmin(ctx context.Context, db string, create bool) (*localAdmin, error) {
	if !create && !isPostgres(db) {
		if _, err := os.Stat(db); err != nil {
			return nil, fmt.Errorf("no database at %s (start billingd serve, or run billingd accounts create, to create one): %w", db, err)
		}
	}
	st, err := openStore(ctx, db, directLockTimeout)
	if err != nil {
		return nil, err
	}
	svc, err := billing.New(st, nil)
	if err != nil {
		st.Close()
		return nil, err
	}
	return &localAdmin{svc: svc, store: st}, nil
}

// socketAdmin is the admin of a running server, reached over its admin
// Unix socket (see adminsocket.go for the protocol).
type socketAdmin struct {
	path   string
	client *http.Client
}

// newSocketAdmin returns a client of the admin socket at path.
func newSocketAdmin(path string) *socketAdmin {
	dialer := &net.Dialer{Timeout: adminPingTimeout}
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return dialer.DialContext(ctx, "unix", path)
		},
		ResponseHeaderTimeout: adminCallTimeout,
	}
	return &socketAdmin{path: path, client: &http.Client{Transport: tr}}
}

// close releases the client's connections.
func (s *socketAdmin) close() error {
	s.client.CloseIdleConnections()
	return nil
}

// serverMismatchError reports a server on the admin socket that serves
// another database than the one the command names.
type serverMismatchError struct{ socket, served, wanted string }

// Error names the socket and both databases.
func (e *serverMismatchError) Error() string {
	return fmt.Sprintf("the server on the admin socket %s serves %s, not %s (check --db and --admin-socket)", e.socket, e.served, e.wanted)
}

// ping checks, within adminPingTimeout, that a server answers on the socket
// and that it serves the database file db.
func (s *socketAdmin) ping(ctx context.Context, db string) error {
	ctx, cancel := context.WithTimeout(ctx, adminPingTimeout)
	defer cancel()
	var pong pingResponse
	if err := s.call(ctx, http.MethodGet, "/ping", nil, &pong); err != nil {
		return err
	}
	served, err1 := os.Stat(pong.DB)
	wanted, err2 := os.Stat(db)
	if err1 == nil && err2 == nil && !os.SameFile(served, wanted) {
		return &serverMismatchError{socket: s.path, served: pong.DB, wanted: db}
	}
	return nil
}

// call sends one admin request with in as its JSON body (when not nil) and
// decodes the answer into out.
func (s *socketAdmin) call(ctx context.Context, method, path string, in, out any) error {
	ctx, cancel := context.WithTimeout(ctx, adminCallTimeout)
	defer cancel()
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	resp, err := s.send(ctx, method, path, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("admin socket %s: reading the answer: %w", s.path, err)
	}
	return nil
}

// send sends one request and returns a successful response; an error
// answer becomes a *billing.Error with the server's code and message.
func (s *socketAdmin) send(ctx context.Context, method, path string, body io.Reader) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, "http://billingd"+path, body)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("admin socket %s: %w", s.path, err)
	}
	if resp.StatusCode < 300 {
		return resp, nil
	}
	defer resp.Body.Close()
	if err := answeredError(io.LimitReader(resp.Body, maxAdminBody)); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("admin socket %s: %s", s.path, resp.Status)
}

// answeredError returns the error an error answer's body reports
// ({"errors":[{"code", "message", "field"}]}, as the API server writes it):
// a *billing.Error, or billing.ValidationErrors when it reports several.
// It returns nil when the body is not such an answer.
func answeredError(body io.Reader) error {
	var answer struct {
		Errors []struct {
			Code    billing.Code `json:"code"`
			Message string       `json:"message"`
			Field   string       `json:"field"`
		} `json:"errors"`
	}
	if err := json.NewDecoder(body).Decode(&answer); err != nil || len(answer.Errors) == 0 {
		return nil
	}
	errs := make(billing.ValidationErrors, 0, len(answer.Errors))
	for _, e := range answer.Errors {
		if e.Code == "" {
			return nil
		}
		errs = append(errs, &billing.Error{Code: e.Code, Message: e.Message, Field: e.Field})
	}
	if len(errs) == 1 {
		return errs[0]
	}
	return errs
}

// CreateAccount creates an account and its first key on the server.
func (s *socketAdmin) CreateAccount(ctx context.Context, name string) (*credential, error) {
	var cred credential
	err := s.call(ctx, http.MethodPost, "/accounts", map[string]string{"name": name}, &cred)
	return &cred, err
}

// ListAccounts lists the server's accounts.
func (s *socketAdmin) ListAccounts(ctx context.Context) ([]billing.Account, error) {
	var accounts []billing.Account
	err := s.call(ctx, http.MethodGet, "/accounts", nil, &accounts)
	return accounts, err
}

// CreateKey creates an API key on the server.
func (s *socketAdmin) CreateKey(ctx context.Context, accountID string) (*credential, error) {
	var cred credential
	err := s.call(ctx, http.MethodPost, "/keys", map[string]string{"serviceAccountId": accountID}, &cred)
	return &cred, err
}

// ListKeys lists the API keys of an account on the server.
func (s *socketAdmin) ListKeys(ctx context.Context, accountID string) ([]billing.APIKey, error) {
	var keys []billing.APIKey
	err := s.call(ctx, http.MethodGet, "/keys?account="+url.QueryEscape(accountID), nil, &keys)
	return keys, err
}

// RevokeKey revokes an API key on the server.
func (s *socketAdmin) RevokeKey(ctx context.Context, keyID string) (*billing.APIKey, error) {
	var key billing.APIKey
	err := s.call(ctx, http.MethodPost, "/keys/"+url.PathEscape(keyID)+"/revoke", nil, &key)
	return &key, err
}

// Backup streams the server's hot backup into w. It has no overall time
// limit: a large file takes as long as it takes.
func (s *socketAdmin) Backup(ctx context.Context, w io.Writer) (int64, error) {
	resp, err := s.send(ctx, http.MethodGet, "/backup", nil)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	n, err := io.Copy(w, resp.Body)
	if err != nil {
		return n, fmt.Errorf("admin socket %s: receiving the backup: %w", s.path, err)
	}
	if msg := resp.Trailer.Get(backupErrorTrailer); msg != "" {
		return n, fmt.Errorf("the server failed to write the backup: %s", msg)
	}
	return n, nil
}
