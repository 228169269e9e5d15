package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/billingd/billing"
	"github.com/billingd/billing/httpserver"
	"github.com/billingd/billing/storage/boltstore"
)

// startAdminSocket serves the admin socket of the database at db, held
// open by this process as serve would, and returns the store.
func startAdminSocket(tb testing.TB, db string) *boltstore.Store {
	tb.Helper()
	svc, st := openService(tb, db)
	l, err := listenAdmin(db + ".sock")
	if err != nil {
		tb.Fatal(err)
	}
	srv := &http.Server{Handler: newAdminHandler(&localAdmin{svc: svc, store: st}, db, slog.New(slog.DiscardHandler))}
	go srv.Serve(l)
	tb.Cleanup(func() {
		srv.Close()
		os.Remove(db + ".sock")
	})
	return st
}

func TestAdminSocketIsPrivate(t *testing.T) {
	t.Parallel()
	db := tempDB(t)
	startAdminSocket(t, db)
	fi, err := os.Lstat(db + ".sock")
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Type() != fs.ModeSocket || fi.Mode().Perm() != 0o600 {
		t.Errorf("admin socket mode %v, want a socket with 0600", fi.Mode())
	}
	if entries, _ := os.ReadDir(filepath.Dir(db)); len(entries) != 2 {
		t.Errorf("want only the database and its socket, found %d entries", len(entries))
	}
}

func TestAdminCommandsGoThroughSocketWhileDatabaseIsHeld(t *testing.T) {
	t.Parallel()
	db := tempDB(t)
	st := startAdminSocket(t, db)
	acct := decodeCredential(t, mustRun(t, "accounts", "create", "--name", "acme", "--db", db, "--json"))
	key := decodeCredential(t, mustRun(t, "keys", "create", "--account", acct.ServiceAccountID, "--db", db, "--json"))
	mustRun(t, "keys", "revoke", acct.KeyID, "--db", db)

	// The changes were made by the process holding the file.
	svc, err := billing.New(st, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := svc.Authenticate(ctx, key.KeyID, key.Secret); err != nil {
		t.Errorf("key created over the socket does not authenticate: %v", err)
	}
	if _, err := svc.Authenticate(ctx, acct.KeyID, acct.Secret); billing.CodeOf(err) != billing.CodeUnauthorized {
		t.Errorf("key revoked over the socket still authenticates: %v", err)
	}
	assertAccountNames(t, db, "acme")

	out := filepath.Join(t.TempDir(), "backup.db")
	mustRun(t, "backup", "--db", db, "--out", out)
	assertAccountNames(t, out, "acme")
	assertCheckClean(t, out)
}

func TestAdminSocketReportsServiceErrors(t *testing.T) {
	t.Parallel()
	db := tempDB(t)
	startAdminSocket(t, db)
	a := newSocketAdmin(db + ".sock")
	defer a.close()
	ctx := context.Background()
	if _, err := a.CreateKey(ctx, "nope"); billing.CodeOf(err) != billing.CodeNotFound {
		t.Errorf("CreateKey of an unknown account: %v, want not_found", err)
	}
	if _, err := a.RevokeKey(ctx, "nope"); billing.CodeOf(err) != billing.CodeNotFound {
		t.Errorf("RevokeKey of an unknown key: %v, want not_found", err)
	}
	if _, err := a.CreateAccount(ctx, ""); billing.CodeOf(err) != billing.CodeValidationFailed {
		t.Errorf("CreateAccount without a name: %v, want validation_failed", err)
	}
	code, _, stderr := runCLI(t, nil, "keys", "create", "--account", "nope", "--db", db)
	if code != exitError || !strings.Contains(stderr, "not_found") {
		t.Errorf("exit %d, stderr %q; want 1 and not_found", code, stderr)
	}
}

func TestAdminSocketOfAnotherDatabaseIsRefused(t *testing.T) {
	t.Parallel()
	served := tempDB(t)
	startAdminSocket(t, served)
	other := tempDB(t)
	mustRun(t, "accounts", "create", "--name", "other", "--db", other)

	code, _, stderr := runCLI(t, nil, "accounts", "list", "--db", other, "--admin-socket", served+".sock")
	if code != exitError || !strings.Contains(stderr, "serves "+served) {
		t.Errorf("exit %d, stderr %q; want 1 and the served database named", code, stderr)
	}
}

func TestListenAdminReplacesOnlyDeadSockets(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()

	t.Run("StaleSocketRemoved", func(t *testing.T) {
		path := filepath.Join(dir, "stale.sock")
		// A socket bound and closed without listening is what a crash
		// leaves: the file stays and connecting to it is refused. (A
		// listener closed in this process is not enough: a parallel test's
		// fork may hold a copy of its descriptor until the child execs.)
		fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := syscall.Bind(fd, &syscall.SockaddrUnix{Name: path}); err != nil {
			t.Fatal(err)
		}
		syscall.Close(fd)
		l, err := listenAdmin(path)
		if err != nil {
			t.Fatalf("a stale socket blocked the start: %v", err)
		}
		l.Close()
	})
	t.Run("LiveSocketKept", func(t *testing.T) {
		path := filepath.Join(dir, "live.sock")
		l, err := listenAdmin(path)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		if _, err := listenAdmin(path); err == nil || !strings.Contains(err.Error(), "answers on it") {
			t.Errorf("second listen on a live socket: %v", err)
		}
	})
	t.Run("RegularFileKept", func(t *testing.T) {
		path := filepath.Join(dir, "file.sock")
		if err := os.WriteFile(path, []byte("data"), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := listenAdmin(path)
		if b, _ := os.ReadFile(path); err == nil || !bytes.Equal(b, []byte("data")) {
			t.Errorf("listen over a regular file: %v; the file must stay", err)
		}
	})
}

func TestAdminSocketBackupErrorReachesClient(t *testing.T) {
	t.Parallel()
	db := tempDB(t)
	st := startAdminSocket(t, db)
	st.Close() // every backup now fails inside the server
	a := newSocketAdmin(db + ".sock")
	defer a.close()
	var buf bytes.Buffer
	if _, err := a.Backup(context.Background(), &buf); err == nil {
		t.Error("Backup of a closed store succeeded")
	} else if !strings.Contains(err.Error(), "closed") {
		t.Errorf("Backup error %v does not say why", err)
	}
}

// TestAdminSocketErrorsFollowTheServer: bodies of the admin socket are read
// by the API server's strict decoder and errors answer the server's error
// body, with the status of the server's table; the client turns them back
// into the errors they report.
func TestAdminSocketErrorsFollowTheServer(t *testing.T) {
	t.Parallel()
	db := tempDB(t)
	svc, st := openService(t, db)
	h := newAdminHandler(&localAdmin{svc: svc, store: st}, db, slog.New(slog.DiscardHandler))
	type wireError struct {
		Code    billing.Code `json:"code"`
		Message string       `json:"message"`
		Field   string       `json:"field"`
	}
	for _, tc := range []struct {
		name, path, contentType, body string
		status                        int
		want                          []wireError // messages are only checked to be non-empty
	}{
		{"ErrUnknownField", "/accounts", "application/json", `{"name":"a","nmae":"b"}`, 400,
			[]wireError{{Code: billing.CodeValidationFailed, Field: "nmae"}}},
		{"ErrWrongTypes", "/keys", "application/json", `{"serviceAccountId":7}`, 400,
			[]wireError{{Code: billing.CodeValidationFailed, Field: "serviceAccountId"}}},
		{"ErrNotJSON", "/accounts", "application/json", `{"name":`, 400, []wireError{{Code: httpserver.CodeInvalidJSON}}},
		{"ErrTwoValues", "/accounts", "application/json", `{"name":"a"} {}`, 400, []wireError{{Code: httpserver.CodeInvalidJSON}}},
		{"ErrNotAnObject", "/accounts", "application/json", `["a"]`, 400, []wireError{{Code: httpserver.CodeInvalidJSON}}},
		{"ErrContentType", "/accounts", "text/plain", `{"name":"a"}`, 415, []wireError{{Code: httpserver.CodeUnsupportedMediaType}}},
		{"ErrTooLarge", "/accounts", "application/json", `{"name":"` + strings.Repeat("a", maxAdminBody) + `"}`, 413,
			[]wireError{{Code: httpserver.CodePayloadTooLarge}}},
		{"ErrUnknownAccount", "/keys", "application/json", `{"serviceAccountId":"nope"}`, 404, []wireError{{Code: billing.CodeNotFound}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rq := httptest.NewRequest(http.MethodPost, tc.path, strings.NewReader(tc.body))
			rq.Header.Set("Content-Type", tc.contentType)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, rq)
			var got struct {
				Errors []wireError `json:"errors"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
				t.Fatalf("%d %s: not the server's error body: %v", rec.Code, rec.Body, err)
			}
			for i := range got.Errors {
				if got.Errors[i].Message == "" {
					t.Errorf("error %d has no message: %s", i, rec.Body)
				}
				got.Errors[i].Message = ""
			}
			if rec.Code != tc.status || !slices.Equal(got.Errors, tc.want) {
				t.Errorf("%d %s, want %d %v", rec.Code, rec.Body, tc.status, tc.want)
			}
			if answered := billing.Errors(answeredError(bytes.NewReader(rec.Body.Bytes()))); len(answered) != len(tc.want) ||
				answered[0].Code != tc.want[0].Code || answered[0].Field != tc.want[0].Field {
				t.Errorf("the client reads %v back", answered)
			}
		})
	}
	if answeredError(strings.NewReader(`{"code":"not_found"}`)) != nil || answeredError(strings.NewReader(`<html>`)) != nil {
		t.Error("answeredError took a body that is not an error answer for one")
	}
}
