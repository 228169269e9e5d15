package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/billingd/billing/storage/pgstore/pgtest"
)

// withPassword returns the connection string with a password in it (the
// test cluster trusts local connections, so it is never checked), to show
// that it never reaches the output.
func withPassword(tb testing.TB, db, password string) string {
	tb.Helper()
	u, err := url.Parse(db)
	if err != nil || u.Scheme == "" {
		tb.Skipf("%s is not a URL; this test needs the URL form", pgtest.EnvVar)
	}
	u.User = url.UserPassword(u.User.Username(), password)
	return u.String()
}

// request sends method path with auth (none when empty) and body, and
// returns the status and body; a transport error is status 0.
func request(base, auth, method, path, body string) (int, string) {
	req, err := http.NewRequest(method, base+path, strings.NewReader(body))
	if err != nil {
		return 0, err.Error()
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// eventually polls check every 50ms until it holds or d passes. The state
// it waits for is outside the test's control (a revocation reaching a
// cache with a TTL, a pool reconnecting), so there is no event to wait on.
func eventually(tb testing.TB, d time.Duration, what string, check func() bool) {
	tb.Helper()
	deadline := time.Now().Add(d)
	for !check() {
		if time.Now().After(deadline) {
			tb.Fatalf("%s: not within %v", what, d)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestPostgresServeAndAdminCommands(t *testing.T) {
	t.Parallel()
	db := withPassword(t, pgtest.URL(t), "hunter2-secret")
	base, out, stop := serveInProcess(t, db)
	boot := out.waitFor(t, bootstrapRE)
	for path, want := range map[string]int{"/healthz": 200, "/readyz": 200} {
		if got := get(t, base+path, ""); got != want {
			t.Errorf("GET %s: %d, want %d", path, got, want)
		}
	}
	if got := get(t, base+"/usage-metrics", boot[4]); got != http.StatusOK {
		t.Errorf("GET /usage-metrics with the bootstrap key: %d", got)
	}

	// Admin commands use the database directly while the server runs.
	cred := decodeCredential(t, mustRun(t, "accounts", "create", "--name", "Acme", "--db", db, "--json"))
	if got := get(t, base+"/usage-metrics", cred.Authorization); got != http.StatusOK {
		t.Errorf("GET /usage-metrics with a key the CLI made: %d", got)
	}
	if list := mustRun(t, "accounts", "list", "--db", db); !strings.Contains(list, "Acme") || !strings.Contains(list, "default") {
		t.Errorf("accounts list:\n%s", list)
	}
	mustRun(t, "keys", "revoke", cred.KeyID, "--db", db)
	eventually(t, 10*time.Second, "the revoked key refused by the server", func() bool {
		return get(t, base+"/usage-metrics", cred.Authorization) == http.StatusUnauthorized
	})

	code, _, stderr := runCLI(t, nil, "backup", "--out", t.TempDir()+"/b.db", "--db", db)
	if code != exitError || !strings.Contains(stderr, "pg_dump") {
		t.Errorf("backup on PostgreSQL: exit %d, %q; want 1 and a pointer to pg_dump", code, stderr)
	}
	if c := stop(); c != exitOK {
		t.Errorf("exit %d; output:\n%s", c, out.String())
	}
	if strings.Contains(out.String(), "hunter2-secret") {
		t.Errorf("the password appears in the output:\n%s", out.String())
	}
}

func TestMigrateStoreCommand(t *testing.T) {
	t.Parallel()
	db := pgtest.URL(t)
	file := tempDB(t)
	cred := decodeCredential(t, mustRun(t, "accounts", "create", "--name", "Acme", "--db", file, "--json"))
	base, _, stop := serveInProcess(t, file, "--no-bootstrap")
	status, body := request(base, cred.Authorization, "POST", "/customers", `{"legalName":"Globex","customerAliases":["globex"]}`)
	if status != http.StatusCreated {
		t.Fatalf("POST /customers: %d %s", status, body)
	}
	_, before := request(base, cred.Authorization, "GET", "/customers", "")
	stop()

	if code, _, stderr := runCLI(t, nil, "migrate-store", "--from", db, "--to", file); code != exitUsage {
		t.Errorf("migrate-store with the arguments swapped: exit %d, %q; want a usage error", code, stderr)
	}
	out := mustRun(t, "migrate-store", "--from", file, "--to", db)
	if !strings.Contains(out, "copied and verified") || !strings.Contains(out, "customers") || strings.Contains(out, "MISMATCH") {
		t.Errorf("migrate-store printed:\n%s", out)
	}
	code, _, stderr := runCLI(t, nil, "migrate-store", "--from", file, "--to", db)
	if code != exitError || !strings.Contains(stderr, "empty database only") {
		t.Errorf("a second migrate-store into the same database: exit %d, %q; want a refusal", code, stderr)
	}

	base, _, _ = serveInProcess(t, db, "--no-bootstrap")
	if _, after := request(base, cred.Authorization, "GET", "/customers", ""); after != before {
		t.Errorf("GET /customers from PostgreSQL:\n%s\nwant, as from the file:\n%s", after, before)
	}
}

// proxy forwards TCP connections to target until cut: then it drops every
// open connection and every new one, as an unreachable database server
// does, until restored.
type proxy struct {
	ln     net.Listener
	target string
	down   atomic.Bool
	mu     sync.Mutex
	conns  map[net.Conn]bool
}

func newProxy(tb testing.TB, target string) *proxy {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	p := &proxy{ln: ln, target: target, conns: map[net.Conn]bool{}}
	tb.Cleanup(func() { ln.Close(); p.cut() })
	go p.serve()
	return p
}

func (p *proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		if p.down.Load() {
			c.Close()
			continue
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns[c], p.conns[s] = true, true
		p.mu.Unlock()
		go func() { io.Copy(s, c); s.Close(); c.Close() }()
		go func() { io.Copy(c, s); s.Close(); c.Close() }()
	}
}

// cut drops every connection and refuses new ones until restore.
func (p *proxy) cut() {
	p.down.Store(true)
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
}

func (p *proxy) restore() { p.down.Store(false) }

// TestPostgresOutageUnderLoad cuts the server off its database while
// clients write (a proxy drops every connection and refuses new ones: a
// network partition): see outageUnderLoad.
func TestPostgresOutageUnderLoad(t *testing.T) {
	t.Parallel()
	db := pgtest.URL(t)
	u, err := url.Parse(db)
	if err != nil || u.Scheme == "" {
		t.Skipf("%s is not a URL; this test needs the URL form", pgtest.EnvVar)
	}
	p := newProxy(t, u.Host)
	u.Host = p.ln.Addr().String()
	q := u.Query()
	q.Set("connect_timeout", "2")
	u.RawQuery = q.Encode()
	outageUnderLoad(t, u.String(), p.cut, p.restore)
}

// TestPostgresServerStoppedUnderLoad stops the PostgreSQL server itself
// (pg_ctl stop -m immediate, on a cluster of the test's own) while clients
// write, and starts it again: see outageUnderLoad.
func TestPostgresServerStoppedUnderLoad(t *testing.T) {
	t.Parallel()
	c := pgtest.StartCluster(t)
	outageUnderLoad(t, c.URL(), func() { c.Stop(t) }, func() { c.Start(t) })
}

// outageUnderLoad serves db while four clients write (customers, single
// usage events, batches of usage events), then calls down and, later, up:
// while the database is down the API answers 503 with code unavailable
// (and no other 5xx) and /readyz 503; once it is up the same server
// process answers again without a restart, and every write it acknowledged
// is there.
//
// Long on purpose: one server process, its load, the outage and the
// recovery are phases of one sequence that share the process and its
// acknowledged writes.
func outageUnderLoad(t *testing.T, db string, down, up func()) {
	base, out, stop := serveInProcess(t, db, "--billing-interval", "0")
	auth := out.waitFor(t, bootstrapRE)[4]

	var l outageLoad
	var phase atomic.Int32 // 0 up, 1 down, 2 back up
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for w, kind := range []string{"customer", "customer", "event", "batch"} {
		wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				ph := phase.Load()
				method, path, body := outageWrite(kind, w, i)
				status, resp := request(base, auth, method, path, body)
				l.record(kind, status, resp, ph == 1 && phase.Load() == 1)
			}
		})
	}
	eventually(t, 20*time.Second, "writes of each kind acknowledged before the outage", func() bool { return l.acked() >= 5 })
	phase.Store(1)
	down()
	eventually(t, 20*time.Second, "503s while the database is down", func() bool { return l.count(503) >= 10 })
	if got := get(t, base+"/readyz", ""); got != http.StatusServiceUnavailable {
		t.Errorf("GET /readyz while the database is down: %d, want 503", got)
	}
	phase.Store(2)
	up()
	before := l.acked()
	eventually(t, 60*time.Second, "writes of each kind acknowledged again after the outage", func() bool { return l.acked() >= before+5 })
	cancel()
	wg.Wait()
	if got := get(t, base+"/readyz", ""); got != http.StatusOK {
		t.Errorf("GET /readyz after the outage: %d, want 200", got)
	}
	l.check(t, base, auth)
	if c := stop(); c != exitOK {
		t.Errorf("exit %d; output:\n%s", c, out.String())
	}
}

// outageWrite is the i-th write of worker w of kind customer, event or
// batch.
func outageWrite(kind string, w, i int) (method, path, body string) {
	switch kind {
	case "event":
		return "POST", "/usage-events", fmt.Sprintf(`{"customerAlias":"outage","eventType":"call","eventProperties":{"n":%d}}`, i)
	case "batch":
		events := make([]string, 5)
		for j := range events {
			events[j] = fmt.Sprintf(`{"customerAlias":"outage","eventType":"batch","eventProperties":{"n":%d}}`, 5*i+j)
		}
		return "POST", "/usage-events/batch", `{"events":[` + strings.Join(events, ",") + `]}`
	}
	return "POST", "/customers", fmt.Sprintf(`{"legalName":"Load %d-%d"}`, w, i)
}

// outageLoad is what the clients of outageUnderLoad saw: the statuses, and
// the ids of the customers and usage events acknowledged.
type outageLoad struct {
	mu           sync.Mutex
	statuses     map[int]int
	downStatuses map[int]int // of requests sent and answered while down
	customers    []string
	events       []string
	ackedKind    map[string]int // requests acknowledged, by kind
	// otherCodes counts 503 answers whose error code is not unavailable.
	otherCodes int
}

var idRE = regexp.MustCompile(`"id":"([^"]+)"`)

func (l *outageLoad) record(kind string, status int, body string, whileDown bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.statuses == nil {
		l.statuses, l.downStatuses, l.ackedKind = map[int]int{}, map[int]int{}, map[string]int{}
	}
	l.statuses[status]++
	if whileDown {
		l.downStatuses[status]++
	}
	if status == http.StatusServiceUnavailable && !strings.Contains(body, `"code":"unavailable"`) {
		l.otherCodes++
	}
	if status != http.StatusCreated {
		return
	}
	l.ackedKind[kind]++
	if kind == "customer" {
		l.customers = append(l.customers, idRE.FindStringSubmatch(body)[1])
	} else {
		for _, m := range idRE.FindAllStringSubmatch(body, -1) {
			l.events = append(l.events, m[1])
		}
	}
}

// acked returns the fewest writes acknowledged of one kind.
func (l *outageLoad) acked() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return min(len(l.customers), l.ackedKind["event"], l.ackedKind["batch"])
}

func (l *outageLoad) count(status int) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.statuses[status]
}

// check reports answers other than 201 and 503 unavailable, and
// acknowledged customers and usage events that are missing.
func (l *outageLoad) check(t *testing.T, base, auth string) {
	t.Helper()
	for status, n := range l.statuses {
		if status >= 500 && status != http.StatusServiceUnavailable || status == 0 {
			t.Errorf("%d answers with status %d", n, status)
		}
	}
	if l.otherCodes > 0 {
		t.Errorf("%d answers 503 without the code unavailable", l.otherCodes)
	}
	if l.downStatuses[http.StatusServiceUnavailable] == 0 {
		t.Errorf("statuses while down: %v, want 503s", l.downStatuses)
	}
	missing := 0
	for _, id := range l.customers {
		if status, _ := request(base, auth, "GET", "/customers/"+id, ""); status != http.StatusOK {
			missing++
		}
	}
	stored := map[string]bool{}
	for after := ""; ; {
		status, body := request(base, auth, "GET", "/usage-events?limit=100&after="+url.QueryEscape(after), "")
		if status != http.StatusOK {
			t.Fatalf("GET /usage-events: %d %s", status, body)
		}
		for _, m := range idRE.FindAllStringSubmatch(body, -1) {
			stored[m[1]] = true
		}
		next := regexp.MustCompile(`"after":"([^"]+)"`).FindStringSubmatch(body)
		if next == nil {
			break
		}
		after = next[1]
	}
	for _, id := range l.events {
		if !stored[id] {
			missing++
		}
	}
	if missing > 0 {
		t.Errorf("%d of %d acknowledged writes are missing", missing, len(l.customers)+len(l.events))
	}
	t.Logf("statuses: %v (while down: %v); %d customers and %d usage events acknowledged, all present", l.statuses, l.downStatuses, len(l.customers), len(l.events))
}
