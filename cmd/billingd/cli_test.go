package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/billingd/billing"
	"github.com/billingd/billing/storage/boltstore"
)

func TestVersionPrintsModuleAndGoVersion(t *testing.T) {
	t.Parallel()
	out := mustRun(t, "version")
	want := "billingd devel " + runtime.Version() + "\n"
	if out != want {
		t.Errorf("version printed %q, want %q", out, want)
	}
}

func TestUsageErrorsExit2(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"NoCommand", nil, nil, "no command"},
		{"UnknownCommand", nil, []string{"frob"}, `unknown command "frob"`},
		{"NoSubcommand", nil, []string{"accounts"}, "needs a subcommand"},
		{"UnknownSubcommand", nil, []string{"keys", "lst"}, `unknown command "keys lst"`},
		{"UnknownFlag", nil, []string{"accounts", "list", "--bogus"}, "flag provided but not defined: -bogus"},
		{"BadFlagValue", nil, []string{"serve", "--max-body", "lots"}, "invalid value"},
		{"MissingName", nil, []string{"accounts", "create"}, "needs --name"},
		{"MissingAccount", nil, []string{"keys", "create"}, "needs --account"},
		{"MissingKeyID", nil, []string{"keys", "revoke"}, "exactly one KEY_ID"},
		{"TwoKeyIDs", nil, []string{"keys", "revoke", "a", "b"}, "exactly one KEY_ID"},
		{"MissingOut", nil, []string{"backup"}, "needs --out"},
		{"StrayArgument", nil, []string{"accounts", "list", "extra"}, "takes no arguments"},
		{"VersionArgument", nil, []string{"version", "x"}, "takes no arguments"},
		{"BadLogFormat", nil, []string{"serve", "--log-format", "xml"}, "--log-format"},
		{"BadLogLevel", nil, []string{"serve", "--log-level", "loud"}, "--log-level"},
		{"NegativeRateLimit", nil, []string{"serve", "--rate-limit", "-1"}, "--rate-limit"},
		{"ZeroMaxBody", nil, []string{"serve", "--max-body", "0"}, "--max-body"},
		{"BadEnvValue", map[string]string{"BILLINGD_SHUTDOWN_TIMEOUT": "soon"}, []string{"serve"}, "BILLINGD_SHUTDOWN_TIMEOUT"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			code, _, stderr := runCLI(t, c.env, c.args...)
			if code != exitUsage {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, exitUsage, stderr)
			}
			if !strings.Contains(stderr, c.want) {
				t.Errorf("stderr does not mention %q:\n%s", c.want, stderr)
			}
		})
	}
}

func TestHelpListsFlagsWithEnvironmentVariables(t *testing.T) {
	t.Parallel()
	code, stdout, _ := runCLI(t, nil, "serve", "-h")
	if code != exitOK {
		t.Fatalf("exit %d, want 0", code)
	}
	for _, want := range []string{"--addr", "[$BILLINGD_ADDR]", "[$BILLINGD_RATE_LIMIT]", "[$BILLINGD_ADMIN_SOCKET]", "(default 127.0.0.1:8080)"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("serve -h does not show %q:\n%s", want, stdout)
		}
	}
}

func TestEnvironmentSetsFlagsAndCommandLineWins(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	envDB, flagDB := filepath.Join(dir, "env.db"), filepath.Join(dir, "flag.db")
	// One-off commands read BILLINGD_DB (and BILLINGD_ADMIN_SOCKET) only:
	// BILLINGD_NAME and BILLINGD_JSON are not theirs.
	env := map[string]string{"BILLINGD_DB": envDB, "BILLINGD_NAME": "from-env", "BILLINGD_JSON": "true"}

	code, _, stderr := runCLI(t, env, "accounts", "create")
	if code != exitUsage || !strings.Contains(stderr, "needs --name") {
		t.Fatalf("BILLINGD_NAME was read: exit %d: %s", code, stderr)
	}
	code, stdout, stderr := runCLI(t, env, "accounts", "create", "--name", "env-db")
	if code != exitOK || !strings.HasPrefix(stdout, "account id:") {
		t.Fatalf("exit %d, BILLINGD_JSON read? %s %s", code, stdout, stderr)
	}
	code, stdout, stderr = runCLI(t, env, "accounts", "create", "--db", flagDB, "--name", "from-flag", "--json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var cred credential
	if err := json.Unmarshal([]byte(stdout), &cred); err != nil {
		t.Fatalf("--json did not give JSON: %v\n%s", err, stdout)
	}
	assertAccountNames(t, envDB, "env-db")
	assertAccountNames(t, flagDB, "from-flag")
	// serve still reads every flag from the environment.
	code, _, stderr = runCLI(t, map[string]string{"BILLINGD_LOG_FORMAT": "xml"}, "serve")
	if code != exitUsage || !strings.Contains(stderr, "--log-format") {
		t.Errorf("serve ignored BILLINGD_LOG_FORMAT: exit %d: %s", code, stderr)
	}
}

// assertAccountNames checks the names of the accounts of the database at
// path, in creation order.
func assertAccountNames(tb testing.TB, path string, want ...string) {
	tb.Helper()
	var got []billing.Account
	if err := json.Unmarshal([]byte(mustRun(tb, "accounts", "list", "--db", path, "--json")), &got); err != nil {
		tb.Fatal(err)
	}
	var names []string
	for _, a := range got {
		names = append(names, a.Name)
	}
	if strings.Join(names, ",") != strings.Join(want, ",") {
		tb.Errorf("accounts of %s: %q, want %q", filepath.Base(path), names, want)
	}
}

// decodeCredential decodes the one JSON object of --json strictly.
func decodeCredential(tb testing.TB, out string) credential {
	tb.Helper()
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	var cred credential
	if err := dec.Decode(&cred); err != nil {
		tb.Fatalf("decoding %q: %v", out, err)
	}
	if dec.More() {
		tb.Fatalf("more than one JSON value in %q", out)
	}
	if cred.ServiceAccountID == "" || cred.KeyID == "" || !strings.HasPrefix(cred.Secret, "sk_") {
		tb.Fatalf("incomplete credential %+v", cred)
	}
	if want := billing.BasicAuthorization(cred.KeyID, cred.Secret); cred.Authorization != want {
		tb.Fatalf("authorization %q, want %q", cred.Authorization, want)
	}
	return cred
}

func TestAccountsCreateJSONKeyAuthenticates(t *testing.T) {
	t.Parallel()
	db := tempDB(t)
	cred := decodeCredential(t, mustRun(t, "accounts", "create", "--name", "Acme", "--db", db, "--json"))

	svc, _ := openService(t, db)
	key, err := svc.Authenticate(context.Background(), cred.KeyID, cred.Secret)
	if err != nil {
		t.Fatalf("the printed key does not authenticate: %v", err)
	}
	if key.ServiceAccountID != cred.ServiceAccountID {
		t.Errorf("key belongs to %s, want %s", key.ServiceAccountID, cred.ServiceAccountID)
	}
	acct, err := svc.GetAccount(context.Background(), cred.ServiceAccountID)
	if err != nil || acct.Name != "Acme" {
		t.Errorf("account %+v, %v; want the name Acme", acct, err)
	}
}

func TestAccountsListTextAndJSON(t *testing.T) {
	t.Parallel()
	db := tempDB(t)
	a := decodeCredential(t, mustRun(t, "accounts", "create", "--name", "first", "--db", db, "--json"))
	b := decodeCredential(t, mustRun(t, "accounts", "create", "--name", "second", "--db", db, "--json"))

	text := mustRun(t, "accounts", "list", "--db", db)
	lines := strings.Split(strings.TrimSpace(text), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "ID") {
		t.Fatalf("want a header and two rows:\n%s", text)
	}
	for i, want := range []struct{ id, name string }{{a.ServiceAccountID, "first"}, {b.ServiceAccountID, "second"}} {
		f := strings.Fields(lines[i+1])
		if len(f) != 3 || f[0] != want.id || f[1] != want.name {
			t.Errorf("row %d is %q, want id %s and name %s", i, lines[i+1], want.id, want.name)
		}
		if _, err := time.Parse(time.RFC3339, f[2]); err != nil {
			t.Errorf("row %d: created %q: %v", i, f[2], err)
		}
	}
	assertAccountNames(t, db, "first", "second")
}

func TestAccountsListEmptyDatabaseIsEmptyArray(t *testing.T) {
	t.Parallel()
	db := tempDB(t)
	openBolt(t, db).Close()
	if out := mustRun(t, "accounts", "list", "--db", db, "--json"); strings.TrimSpace(out) != "[]" {
		t.Errorf("accounts list --json on an empty database printed %q, want []", out)
	}
}

func TestKeysCreateAndRevoke(t *testing.T) {
	t.Parallel()
	db := tempDB(t)
	acct := decodeCredential(t, mustRun(t, "accounts", "create", "--name", "acme", "--db", db, "--json"))
	key := decodeCredential(t, mustRun(t, "keys", "create", "--account", acct.ServiceAccountID, "--db", db, "--json"))
	if key.ServiceAccountID != acct.ServiceAccountID || key.KeyID == acct.KeyID {
		t.Fatalf("keys create gave %+v for account %s", key, acct.ServiceAccountID)
	}
	text := mustRun(t, "keys", "create", "--account", acct.ServiceAccountID, "--db", db)
	if !strings.Contains(text, "secret:        sk_") || !strings.Contains(text, "Authorization: Basic ") {
		t.Errorf("keys create without --json:\n%s", text)
	}

	// Flags may follow the key id.
	if out := mustRun(t, "keys", "revoke", key.KeyID, "--db", db); !strings.Contains(out, "revoked key "+key.KeyID) {
		t.Errorf("keys revoke printed %q", out)
	}
	svc, _ := openService(t, db)
	ctx := context.Background()
	if _, err := svc.Authenticate(ctx, key.KeyID, key.Secret); billing.CodeOf(err) != billing.CodeUnauthorized {
		t.Errorf("revoked key: Authenticate gave %v, want unauthorized", err)
	}
	if _, err := svc.Authenticate(ctx, acct.KeyID, acct.Secret); err != nil {
		t.Errorf("the other key stopped working: %v", err)
	}
}

func TestAdminCommandErrorsExit1(t *testing.T) {
	t.Parallel()
	db := tempDB(t)
	mustRun(t, "accounts", "create", "--name", "acme", "--db", db)
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"UnknownAccount", []string{"keys", "create", "--account", "nope", "--db", db}, "not_found"},
		{"UnknownKey", []string{"keys", "revoke", "nope", "--db", db}, "not_found"},
		{"MissingDatabase", []string{"accounts", "list", "--db", db + ".missing"}, "no database at"},
		{"BackupIntoMissingDir", []string{"backup", "--db", db, "--out", filepath.Join(db+".d", "b.db")}, "no such file"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, nil, c.args...)
			if code != exitError || stdout != "" {
				t.Errorf("exit %d, stdout %q; want exit 1 and no stdout", code, stdout)
			}
			if !strings.HasPrefix(stderr, "billingd: ") || !strings.Contains(stderr, c.want) {
				t.Errorf("stderr %q does not mention %q", stderr, c.want)
			}
		})
	}
	if _, err := os.Stat(db + ".missing"); err == nil {
		t.Error("accounts list created a database file")
	}
}

func TestAdminCommandOnHeldDatabaseFailsWithin2s(t *testing.T) {
	t.Parallel()
	db := tempDB(t)
	defer openBolt(t, db).Close()
	// A socket file nobody answers on, as a crashed server leaves it: bound,
	// never listening (a listener closed here could live on for a moment
	// in a parallel test's fork).
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Bind(fd, &syscall.SockaddrUnix{Name: db + ".sock"}); err != nil {
		t.Fatal(err)
	}
	syscall.Close(fd)

	// The 2 s promise is kept by the timeouts (TestAdminBinaryFailsWithin2s
	// checks them); the wall clock only catches a hang.
	start := time.Now()
	code, _, stderr := runCLI(t, nil, "keys", "revoke", "some-key", "--db", db)
	if elapsed := time.Since(start); elapsed > 15*time.Second {
		t.Errorf("took %v: the command hangs", elapsed)
	}
	if code != exitError {
		t.Errorf("exit %d, want 1", code)
	}
	for _, want := range []string{"held by another process", "no server answers on the admin socket"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr does not say %q:\n%s", want, stderr)
		}
	}
}

func TestBackupAndCompactWithoutServer(t *testing.T) {
	t.Parallel()
	db := tempDB(t)
	acct := decodeCredential(t, mustRun(t, "accounts", "create", "--name", "acme", "--db", db, "--json"))
	for range 50 { // leave free pages for compact to drop
		mustRun(t, "keys", "create", "--account", acct.ServiceAccountID, "--db", db)
	}
	out := filepath.Join(t.TempDir(), "backup.db")
	if got := mustRun(t, "backup", "--db", db, "--out", out); !strings.Contains(got, "bytes to "+out) {
		t.Errorf("backup printed %q", got)
	}
	assertAccountNames(t, out, "acme")
	assertCheckClean(t, out)

	if got := mustRun(t, "compact", "--db", db); !strings.Contains(got, "compacted "+db) {
		t.Errorf("compact printed %q", got)
	}
	assertAccountNames(t, db, "acme")
	assertCheckClean(t, db)
	leftovers, _ := filepath.Glob(filepath.Join(filepath.Dir(db), "*.tmp"))
	if len(leftovers) > 0 {
		t.Errorf("compact left %q", leftovers)
	}
}

func TestCompactRefusesHeldDatabase(t *testing.T) {
	t.Parallel()
	db := tempDB(t)
	mustRun(t, "accounts", "create", "--name", "acme", "--db", db)
	defer openBolt(t, db).Close()
	code, _, stderr := runCLI(t, nil, "compact", "--db", db)
	if code != exitError || !strings.Contains(stderr, "stop billingd serve") {
		t.Errorf("exit %d, stderr %q; want 1 and advice to stop the server", code, stderr)
	}
}

// assertCheckClean opens the database at path and runs bbolt's consistency
// check.
func assertCheckClean(tb testing.TB, path string) {
	tb.Helper()
	st, err := boltstore.Open(path, &boltstore.Options{ReadOnly: true})
	if err != nil {
		tb.Fatal(err)
	}
	defer st.Close()
	if err := st.Check(); err != nil {
		tb.Errorf("%s fails the consistency check: %v", path, err)
	}
}

func TestBootstrapPrintsOnceOnEmptyDatabase(t *testing.T) {
	t.Parallel()
	svc, _ := openService(t, tempDB(t))
	ctx := context.Background()
	var first bytes.Buffer
	if err := bootstrap(ctx, svc, &first, "127.0.0.1:9999"); err != nil {
		t.Fatal(err)
	}
	m := bootstrapRE.FindStringSubmatch(first.String())
	if m == nil {
		t.Fatalf("no credential in:\n%s", first.String())
	}
	if m[4] != billing.BasicAuthorization(m[2], m[3]) {
		t.Errorf("Authorization %q does not match key %s", m[4], m[2])
	}
	if !strings.Contains(first.String(), "curl -H 'Authorization: "+m[4]+"' http://127.0.0.1:9999/usage-metrics") {
		t.Errorf("no ready curl line in:\n%s", first.String())
	}
	if _, err := svc.Authenticate(ctx, m[2], m[3]); err != nil {
		t.Errorf("the bootstrap key does not authenticate: %v", err)
	}

	var second bytes.Buffer
	if err := bootstrap(ctx, svc, &second, "127.0.0.1:9999"); err != nil {
		t.Fatal(err)
	}
	accounts, _ := svc.ListAccounts(ctx)
	if second.Len() != 0 || len(accounts) != 1 || accounts[0].Name != "default" {
		t.Errorf("second bootstrap printed %q and left accounts %+v", second.String(), accounts)
	}
}
