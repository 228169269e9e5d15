package crashtest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/billingd/billing"
	"github.com/billingd/billing/httpserver"
	"github.com/billingd/billing/internal/billingdtest"
	"github.com/billingd/billing/storage/pgstore"
	"github.com/billingd/billing/storage/pgstore/pgtest"
)

// cluster is several real billingd processes (the binary built from
// cmd/billingd) serving one PostgreSQL database, as behind a load balancer,
// and a Service of the test's own on the same database for fixtures and
// verification.
type cluster struct {
	t       *testing.T
	bin, db string
	args    []string // extra serve flags
	account string
	auth    string // Authorization of the account's key
	svc     *billing.Service
	http    *http.Client
	next    atomic.Uint64 // round robin over the instances
	nodes   []*node
}

// node is one billingd process of a cluster.
type node struct {
	mu     sync.Mutex
	cmd    *exec.Cmd
	base   string // http://host:port
	socket string // its admin socket
	alive  bool
	gen    int // kills so far
	exited chan struct{}
	log    *syncLog
}

// logWarnings logs what each instance said at WARN or ERROR (and its
// first lines): a failed answer's cause.
func (c *cluster) logWarnings(t *testing.T) {
	for i, nd := range c.nodes {
		nd.mu.Lock()
		l := nd.log
		nd.mu.Unlock()
		if l != nil {
			t.Logf("instance %d said:\n%s", i, l.String())
		}
	}
}

// startCluster builds billingd, creates an account and a key with the CLI
// on db, and starts n instances with args added to serve's flags.
func startCluster(t *testing.T, db string, n int, args ...string) *cluster {
	t.Helper()
	c := &cluster{t: t, bin: buildBillingd(t), db: db, args: args,
		http: &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}}
	cred := c.credential("accounts", "create", "--name", "cluster", "--json")
	c.account, c.auth = cred.ServiceAccountID, cred.Authorization
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	store, err := pgstore.Open(ctx, db, &pgstore.Options{MaxConns: 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	if c.svc, err = billing.New(store, &billing.Config{ConcurrentBillingRuns: true, SeriesInOwnTransaction: true, LegacyUsageIDRecords: true, KeyCacheTTL: time.Second, WebhookAllowPrivate: true}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for i := range n {
		c.nodes = append(c.nodes, &node{socket: filepath.Join(dir, fmt.Sprintf("node%d.sock", i))})
		c.start(i)
	}
	t.Cleanup(func() {
		for i := range c.nodes {
			c.kill(i)
		}
	})
	return c
}

// cli runs a billingd admin command on the cluster's database and returns
// its standard output.
func (c *cluster) cli(args ...string) (string, error) {
	cmd := exec.Command(c.bin, append(args, "--db", c.db)...)
	cmd.Env = billingdtest.CleanEnv()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return stderr.String(), err
	}
	return string(out), nil
}

// credential runs an admin command that prints a new credential as JSON
// (accounts create, keys create) and returns it.
func (c *cluster) credential(args ...string) struct{ ServiceAccountID, KeyID, Authorization string } {
	c.t.Helper()
	out, err := c.cli(args...)
	if err != nil {
		c.t.Fatalf("%v: %v\n%s", args, err, out)
	}
	var cred struct{ ServiceAccountID, KeyID, Authorization string } // JSON names match case-insensitively
	if err := json.Unmarshal([]byte(out), &cred); err != nil {
		c.t.Fatalf("%v printed %q: %v", args, out, err)
	}
	return cred
}

// start starts (or restarts) instance i and waits until it listens.
func (c *cluster) start(i int) {
	c.t.Helper()
	nd := c.nodes[i]
	args := append([]string{"serve", "--addr", "127.0.0.1:0", "--db", c.db, "--rate-limit", "0", "--no-bootstrap",
		"--webhook-allow-private", "--admin-socket", nd.socket}, c.args...)
	cmd := exec.Command(c.bin, args...)
	cmd.Env = billingdtest.CleanEnv()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		c.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	addr := make(chan string, 1)
	log := &syncLog{}
	exited := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for n := 0; sc.Scan(); n++ {
			// Keep the start and what went wrong, not a line per request.
			line := sc.Text()
			if n < 20 || strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR") {
				log.WriteString(line + "\n")
			}
			if m := listeningRE.FindStringSubmatch(line); m != nil {
				select {
				case addr <- m[1]:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
		cmd.Wait()
		close(exited)
	}()
	select {
	case a := <-addr:
		nd.mu.Lock()
		nd.cmd, nd.base, nd.alive, nd.exited, nd.log = cmd, "http://"+a, true, exited, log
		nd.mu.Unlock()
	case <-exited:
		c.t.Fatalf("instance %d exited before listening:\n%s", i, log.String())
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		c.t.Fatalf("instance %d did not listen within a minute:\n%s", i, log.String())
	}
}

// kill SIGKILLs instance i (if it runs) and waits for it to be gone.
func (c *cluster) kill(i int) {
	nd := c.nodes[i]
	nd.mu.Lock()
	alive, cmd, exited := nd.alive, nd.cmd, nd.exited
	nd.alive = false
	nd.gen++
	nd.mu.Unlock()
	if !alive {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-exited
}

// base returns instance i's address and whether it is up.
func (c *cluster) base(i int) (string, bool) {
	nd := c.nodes[i]
	nd.mu.Lock()
	defer nd.mu.Unlock()
	return nd.base, nd.alive
}

// pick returns the next instance in turn, as a round-robin load balancer.
func (c *cluster) pick() int { return int(c.next.Add(1) % uint64(len(c.nodes))) }

// route is the load balancer of a crash test's client: the next instance
// in turn that is up (a balancer's health check takes a killed one out),
// and whether it was killed since.
func (c *cluster) route() (string, func() bool) {
	for {
		nd := c.nodes[c.pick()]
		nd.mu.Lock()
		base, alive, gen := nd.base, nd.alive, nd.gen
		nd.mu.Unlock()
		if alive {
			return base, func() bool {
				nd.mu.Lock()
				defer nd.mu.Unlock()
				return nd.gen != gen
			}
		}
	}
}

// answer is one HTTP answer.
type answer struct {
	status int
	body   string
	header http.Header
}

// code returns the first error code of an error answer.
func (a answer) code() billing.Code {
	var e struct {
		Errors []struct {
			Code billing.Code `json:"code"`
		} `json:"errors"`
	}
	if json.Unmarshal([]byte(a.body), &e) != nil || len(e.Errors) == 0 {
		return ""
	}
	return e.Errors[0].Code
}

// do sends a request to instance i with the cluster's credentials (auth
// when not empty).
func (c *cluster) do(ctx context.Context, i int, method, path, body, auth string, header map[string]string) (answer, error) {
	base, _ := c.base(i)
	req, err := http.NewRequestWithContext(ctx, method, base+path, strings.NewReader(body))
	if err != nil {
		return answer{}, err
	}
	if auth == "" {
		auth = c.auth
	}
	req.Header.Set("Authorization", auth)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, string(b), resp.Header}, err
}

// must sends a request to instance i and fails the test unless it answers
// want; it returns the body.
func (c *cluster) must(i int, method, path, body string, want int) string {
	c.t.Helper()
	a, err := c.do(context.Background(), i, method, path, body, "", nil)
	if err != nil || a.status != want {
		c.t.Fatalf("instance %d: %s %s: %v %d %s, want %d", i, method, path, err, a.status, a.body, want)
	}
	return a.body
}

// parallel runs fn(0..n-1) at once (released together) and waits for all.
func parallel(n int, fn func(i int)) {
	var ready, wg sync.WaitGroup
	start := make(chan struct{})
	ready.Add(n)
	for i := range n {
		wg.Go(func() {
			ready.Done()
			<-start
			fn(i)
		})
	}
	ready.Wait()
	close(start)
	wg.Wait()
}

// draftInvoice creates an invoice with one line through instance i and
// returns its id.
func (c *cluster) draftInvoice(i int, customer, memo string) string {
	c.t.Helper()
	id := idOf(c.must(i, "POST", "/invoices", fmt.Sprintf(`{"currency":"GBP","customerId":%q,"memo":%q}`, customer, memo), http.StatusCreated))
	c.must(i, "POST", "/invoices/"+id+"/line-items", `{"title":"Plan","quantity":"1","rate":"10","taxRate":"0.2","externalIds":[]}`, http.StatusCreated)
	return id
}

// TestSeveralInstances starts three real billingd processes on one
// PostgreSQL database and drives them through a client that spreads the
// requests over all three (docs/deployment.md): the concurrency guarantees
// of one instance hold across instances.
//
// Long on purpose: the cases share one cluster (three processes and a
// build), each a subtest.
func TestSeveralInstances(t *testing.T) {
	t.Parallel()
	c := startCluster(t, pgtest.URL(t), 3, "--billing-interval", "0")
	ctx := context.Background()
	customer, err := c.svc.CreateCustomer(ctx, c.account, billing.CustomerParams{LegalName: "Cluster customer"})
	if err != nil {
		t.Fatal(err)
	}

	t.Run("FiftySendsOfOneInvoiceOneSucceeds", func(t *testing.T) {
		inv := c.draftInvoice(0, customer.ID, "fifty sends")
		answers := make([]answer, 50)
		parallel(50, func(i int) {
			a, err := c.do(ctx, i%3, "POST", "/invoices/"+inv+"/send", "", "", nil)
			if err != nil {
				t.Errorf("send %d: %v", i, err)
			}
			answers[i] = a
		})
		ok := 0
		for _, a := range answers {
			switch {
			case a.status == http.StatusOK:
				ok++
			case a.status != http.StatusConflict || a.code() != billing.CodeInvalidState:
				t.Errorf("a send answered %d %s, want 200 once and 409 invalid_state otherwise", a.status, a.body)
			}
		}
		if ok != 1 {
			t.Errorf("%d sends answered 200, want exactly 1", ok)
		}
		if t.Failed() {
			c.logWarnings(t)
		}
	})

	t.Run("ParallelFinalizationsGetGaplessNumbers", func(t *testing.T) {
		var ids []string
		for i := range 30 {
			ids = append(ids, c.draftInvoice(i%3, customer.ID, fmt.Sprintf("finalize %d", i)))
		}
		parallel(len(ids), func(i int) {
			a, err := c.do(ctx, i%3, "POST", "/invoices/"+ids[i]+"/finalize", "", "", nil)
			if err != nil || a.status != http.StatusOK {
				t.Errorf("finalize %d on instance %d: %v %d %s", i, i%3, err, a.status, a.body)
			}
		})
		var numbers []string
		err := eachInvoice(ctx, c.svc, c.account, func(inv *billing.Invoice) {
			if inv.InvoiceNumber != "" {
				numbers = append(numbers, inv.InvoiceNumber)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(numbers) != 31 { // and the one sent above
			t.Errorf("%d numbered invoices, want 31", len(numbers))
		}
		wantGapless(t, 0, "INV", numbers)
	})

	t.Run("ConcurrentBillingRunsCreateEachInvoiceOnce", func(t *testing.T) {
		schedules := c.monthlySchedules(t, 40)
		runs := make([]billing.BillingRun, 9)
		parallel(len(runs), func(i int) {
			a, err := c.do(ctx, i%3, "POST", "/billing-runs", "", "", nil)
			if err != nil || a.status != http.StatusOK {
				t.Errorf("billing run on instance %d: %v %d %s", i%3, err, a.status, a.body)
			}
			_ = json.Unmarshal([]byte(a.body), &runs[i])
		})
		created := 0
		for _, r := range runs {
			created += r.InvoicesCreated
		}
		stored := 0
		for _, id := range schedules {
			page, err := c.svc.ListInvoices(ctx, c.account, billing.InvoiceFilter{BillingScheduleID: id}, billing.ListParams{Limit: 10})
			if err != nil {
				t.Fatal(err)
			}
			if len(page.Items) != 2 {
				t.Errorf("schedule %s has %d invoices, want 2 (last month's and this month's)", id, len(page.Items))
			}
			stored += len(page.Items)
		}
		if created != stored {
			t.Errorf("the runs report %d invoices created, %d are stored", created, stored)
		}
	})

	t.Run("RevokedKeyRefusedEverywhereWithinOneSecond", func(t *testing.T) {
		// Through instance 0's admin socket: refused there at once.
		c.revokeAndWatch(t, "--admin-socket", c.nodes[0].socket)
		// Directly in the database, as the CLI does without a socket.
		c.revokeAndWatch(t)
	})

	t.Run("OneIdempotencyKeyRacedOnAllInstancesHasOneEffect", func(t *testing.T) {
		for k := range 5 {
			key := fmt.Sprintf("race-%d", k)
			body := fmt.Sprintf(`{"legalName":"Raced %d","customerAliases":[%q]}`, k, key)
			answers := make([]answer, 30)
			parallel(len(answers), func(i int) {
				a, err := c.do(ctx, i%3, "POST", "/customers", body, "", map[string]string{"Idempotency-Key": key})
				if err != nil {
					t.Errorf("request %d: %v", i, err)
				}
				answers[i] = a
			})
			var first string
			inUse := 0
			for _, a := range answers {
				switch {
				case a.status == http.StatusCreated && first == "":
					first = a.body
				case a.status == http.StatusCreated && a.body != first:
					t.Errorf("key %s: two different answers:\n%s\n%s", key, first, a.body)
				case a.status == http.StatusConflict && a.code() == httpserver.CodeIdempotencyKeyInUse:
					inUse++
				case a.status != http.StatusCreated:
					t.Errorf("key %s: answer %d %s, want 201 (identical) or 409 idempotency_key_in_use", key, a.status, a.body)
				}
			}
			var stored []string
			err := pages(func(p billing.ListParams) (string, error) {
				page, err := c.svc.ListCustomers(ctx, c.account, billing.CustomerFilter{}, p)
				for _, cu := range page.Items {
					if slices.Contains(cu.CustomerAliases, key) {
						stored = append(stored, cu.ID)
					}
				}
				return page.After, err
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(stored) != 1 || first == "" || idOf(first) != stored[0] {
				t.Errorf("key %s: customers %v stored, first answer %q; want one, the one answered", key, stored, first)
			}
			t.Logf("key %s: %d answers 201 (one execution, the rest replays), %d idempotency_key_in_use", key, len(answers)-inUse, inUse)
			// A retry now, on any instance, replays the answer.
			a, err := c.do(ctx, k%3, "POST", "/customers", body, "", map[string]string{"Idempotency-Key": key})
			if err != nil || a.status != http.StatusCreated || a.body != first || a.header.Get("Idempotent-Replayed") != "true" {
				t.Errorf("key %s: retry answered %v %d %s, want the replay", key, err, a.status, a.body)
			}
		}
	})
}

// monthlySchedules creates n active schedules, each with a monthly fee in
// advance from the first day of last month, so a billing run now creates
// two invoices for each; it returns their ids.
func (c *cluster) monthlySchedules(t *testing.T, n int) []string {
	t.Helper()
	ctx := context.Background()
	p, err := c.svc.CreateProduct(ctx, c.account, billing.CreateProductParams{Name: "Plan"})
	if err != nil {
		t.Fatal(err)
	}
	amount := billing.MustDecimal("10.00")
	price, err := c.svc.CreatePrice(ctx, c.account, billing.CreatePriceParams{ProductID: p.ID, Name: "Monthly", Currency: billing.CurrencyEUR,
		Structure: billing.PriceStructure{PricingType: billing.PricingFixed, Price: &amount}, BillingFrequency: billing.FrequencyMonthly,
		BillingType: billing.BillingTypeInAdvance})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	start := billing.DateOf(time.Date(now.Year(), now.Month()-1, 1, 0, 0, 0, 0, time.UTC))
	draft, auto := false, false
	var ids []string
	for i := range n {
		cust, err := c.svc.CreateCustomer(ctx, c.account, billing.CustomerParams{LegalName: fmt.Sprintf("Subscriber %d", i)})
		if err != nil {
			t.Fatal(err)
		}
		sc, err := c.svc.CreateBillingSchedule(ctx, c.account, billing.BillingScheduleParams{CustomerID: cust.ID, StartDate: &start, IsDraft: &draft, AutoIssueInvoices: &auto,
			Phases: []billing.PhaseParams{{StartDate: &start, PriceIDs: []string{price.ID}}}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, sc.ID)
	}
	return ids
}

// revokeAndWatch creates a key with the CLI, has every instance accept it
// (so each caches it), revokes it with the CLI (args added: through an
// instance's admin socket, or directly), and checks that every instance
// refuses it within one second of the revocation, and that the instance
// that revoked it refuses it at once.
func (c *cluster) revokeAndWatch(t *testing.T, args ...string) {
	t.Helper()
	cred := c.credential("keys", "create", "--account", c.account, "--json")
	ctx := context.Background()
	get := func(i int) int {
		a, err := c.do(ctx, i, "GET", "/usage-metrics?limit=1", "", cred.Authorization, nil)
		if err != nil {
			t.Fatalf("instance %d: %v", i, err)
		}
		return a.status
	}
	for i := range c.nodes {
		if s := get(i); s != http.StatusOK {
			t.Fatalf("instance %d refuses a new key: %d", i, s)
		}
	}
	if out, err := c.cli(append([]string{"keys", "revoke", cred.KeyID}, args...)...); err != nil {
		t.Fatalf("keys revoke: %v %s", err, out)
	}
	revoked := time.Now()
	if len(args) > 0 { // through instance 0: refused there at once
		if s := get(0); s != http.StatusUnauthorized {
			t.Errorf("the instance that revoked the key answered %d right after, want 401", s)
		}
	}
	for i := range c.nodes {
		for {
			sent := time.Now()
			if get(i) == http.StatusUnauthorized {
				break
			}
			if late := sent.Sub(revoked); late > time.Second {
				t.Errorf("instance %d still accepted the key %v after its revocation", i, late)
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}
