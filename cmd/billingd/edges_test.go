package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/billingd/billing"
	"github.com/billingd/billing/internal/billingdtest"
)

// TestHelpOnStdoutForEveryCommand: --help of every command and subcommand
// prints its usage and flags on stdout and exits 0, through the binary.
func TestHelpOnStdoutForEveryCommand(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"serve"}, {"accounts", "create"}, {"accounts", "list"}, {"keys", "create"}, {"keys", "list"},
		{"keys", "revoke"}, {"backup"}, {"compact"}, {"migrate-store"},
	} {
		code, stdout, stderr := runBinary(t, append(args, "--help")...)
		if code != 0 || stderr != "" || !strings.Contains(stdout, "Usage: billingd "+strings.Join(args, " ")) || !strings.Contains(stdout, "--") {
			t.Errorf("%v --help: exit %d, stdout %q, stderr %q", args, code, stdout, stderr)
		}
	}
	for _, group := range []string{"keys", "accounts"} {
		code, stdout, stderr := runBinary(t, group, "--help")
		if code != 0 || stderr != "" || !strings.Contains(stdout, "billingd "+group+" create") {
			t.Errorf("%s --help: exit %d, stdout %q, stderr %q", group, code, stdout, stderr)
		}
	}
}

// TestOneOffCommandsIgnoreServeEnvironment: a one-off command reads only
// BILLINGD_DB and BILLINGD_ADMIN_SOCKET from the environment.
func TestOneOffCommandsIgnoreServeEnvironment(t *testing.T) {
	t.Parallel()
	db := tempDB(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, billingdBinary(t), "accounts", "create", "--name", "Acme")
	cmd.Env = append(billingdtest.CleanEnv(), "BILLINGD_DB="+db, "BILLINGD_JSON=true", "BILLINGD_NAME=Wrong")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("accounts create: %v\n%s", err, out)
	}
	if strings.HasPrefix(strings.TrimSpace(string(out)), "{") {
		t.Errorf("BILLINGD_JSON changed the output of accounts create: %s", out)
	}
	assertAccountNames(t, db, "Acme") // BILLINGD_DB is read, BILLINGD_NAME is not
}

// TestKeysListAndAdminActionsLoggedWhileServing: keys list shows an
// account's keys (revoked ones marked), and the running server logs every
// admin action with its ids.
func TestKeysListAndAdminActionsLoggedWhileServing(t *testing.T) {
	t.Parallel()
	s := startServer(t, "--metrics-addr", "127.0.0.1:0")
	code, stdout, stderr := runBinary(t, "keys", "create", "--account", s.accountID, "--db", s.db, "--json")
	if code != 0 {
		t.Fatalf("keys create: exit %d: %s", code, stderr)
	}
	key := decodeCredential(t, stdout)
	if code, _, stderr := runBinary(t, "keys", "revoke", key.KeyID, "--db", s.db); code != 0 {
		t.Fatalf("keys revoke: exit %d: %s", code, stderr)
	}
	code, stdout, stderr = runBinary(t, "keys", "list", "--account", s.accountID, "--db", s.db, "--json")
	if code != 0 {
		t.Fatalf("keys list: exit %d: %s", code, stderr)
	}
	var keys []billing.APIKey
	if err := json.Unmarshal([]byte(stdout), &keys); err != nil || len(keys) != 2 {
		t.Fatalf("keys list: %v %s", err, stdout)
	}
	if keys[1].ID != key.KeyID || keys[1].RevokedAt == nil || keys[0].RevokedAt != nil || strings.Contains(stdout, key.Secret) {
		t.Errorf("keys list: %s", stdout)
	}
	code, stdout, _ = runBinary(t, "keys", "list", "--account", s.accountID, "--db", s.db)
	if code != 0 || !strings.Contains(stdout, key.KeyID) || !strings.Contains(stdout, "REVOKED") {
		t.Errorf("keys list table: %d %s", code, stdout)
	}
	s.stderr.waitFor(t, regexp.MustCompile(`admin: API key created.*key=`+key.KeyID))
	s.stderr.waitFor(t, regexp.MustCompile(`admin: API key revoked.*key=`+key.KeyID))

	// --metrics-addr: /metrics moves there, off the API's address.
	m := s.stderr.waitFor(t, regexp.MustCompile(`msg="serving metrics" addr=(\S+)`))
	resp, err := http.Get("http://" + m[1] + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{"billingd_billing_runs_total", "billingd_auth_failures_total", "billingd_store_transaction_duration_seconds", "billingd_outbox_pending_deliveries"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("--metrics-addr /metrics lacks %s", want)
		}
	}
	if code, _ := s.do(t, "GET", "/metrics", "", ""); code != http.StatusNotFound {
		t.Errorf("GET /metrics on the API address: %d, want 404", code)
	}
	if code := s.stop(t); code != 0 {
		t.Errorf("exit %d after SIGTERM", code)
	}
}
