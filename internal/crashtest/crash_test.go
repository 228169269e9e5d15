package crashtest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
	"github.com/billingd/billing/dispatch"
	"github.com/billingd/billing/httpserver"
	"github.com/billingd/billing/storage/boltstore"
	"github.com/billingd/billing/storage/pgstore"
	"github.com/billingd/billing/storage/pgstore/pgtest"
	"github.com/billingd/billing/webhook"
)

// childDBEnv names the environment variable that turns the test binary into
// a crash child working on the database file it names.
const childDBEnv = "CRASHTEST_CHILD_DB"

// childReceiverEnv names the URL of the parent's webhook receiver, which
// the child's webhook policy points at.
const childReceiverEnv = "CRASHTEST_RECEIVER"

// TestMain runs the crash child when the parent asks for one.
func TestMain(m *testing.M) {
	if db := os.Getenv(childDBEnv); db != "" {
		if err := runChild(db, os.Getenv(childReceiverEnv), os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "crash child:", err)
			os.Exit(2)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// client sends requests to the child's own server, or (router set) to the
// instances of a cluster.
type client struct {
	base, auth string
	customer   string // the customer documents are for
	http       *http.Client
	router     router // when set, picks the server of each request instead of base
}

// router spreads a client's requests over several servers.
type router interface {
	// route returns the base URL of the next request's server, and a
	// function telling whether that server was killed since.
	route() (base string, killed func() bool)
}

// errKilled marks a request that failed because its server was killed.
var errKilled = errors.New("the server was killed")

// post sends body to path and returns the status and the response body.
func (c *client) post(ctx context.Context, path, body string, header map[string]string) (int, string, error) {
	base, killed := c.base, func() bool { return false }
	if c.router != nil {
		base, killed = c.router.route()
	}
	req, err := http.NewRequestWithContext(ctx, "POST", base+path, strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Authorization", c.auth)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := c.http.Do(req)
	if err == nil {
		defer resp.Body.Close()
		var b []byte
		if b, err = io.ReadAll(resp.Body); err == nil {
			return resp.StatusCode, string(b), nil
		}
	}
	if killed() {
		return 0, "", fmt.Errorf("%w: %v", errKilled, err)
	}
	return 0, "", err
}

// workload is one kind of acknowledged write. write runs in the child and
// returns the key of the write once the API acknowledged it ("" when it was
// not acknowledged). stored runs in the parent and counts, by key, what the
// database holds of this kind.
type workload struct {
	name   string
	write  func(ctx context.Context, c *client, n string) (key string, err error)
	stored func(ctx context.Context, svc *billing.Service, account string) (map[string]int, error)
}

// workloads are the kinds the child mixes. Adding a kind is adding an
// entry (documents_test.go adds invoice sends and credit notes).
var workloads = []workload{
	{
		name: "usage_event", // single ingestion: group commit through Store.Batch
		write: func(ctx context.Context, c *client, n string) (string, error) {
			key := "ev-" + n
			status, body, err := c.post(ctx, "/usage-events", fmt.Sprintf(`{"customerAlias":"crash","eventType":"api_call","customerEventId":%q,"eventProperties":{"n":"1.5"}}`, key), nil)
			return ackedKey(key, status, body, err, http.StatusCreated)
		},
		stored: storedEvents("ev-"),
	},
	{
		name: "usage_event_batch", // one transaction of several events
		write: func(ctx context.Context, c *client, n string) (string, error) {
			key := "batch-" + n
			var evs []string
			for i := range 3 {
				evs = append(evs, fmt.Sprintf(`{"customerAlias":"crash-b","eventType":"api_call","customerEventId":"%s.%d"}`, key, i))
			}
			status, body, err := c.post(ctx, "/usage-events/batch", `{"events":[`+strings.Join(evs, ",")+`]}`, nil)
			return ackedKey(key, status, body, err, http.StatusCreated)
		},
		stored: func(ctx context.Context, svc *billing.Service, account string) (map[string]int, error) {
			per, err := storedEvents("batch-")(ctx, svc, account)
			if err != nil {
				return nil, err
			}
			// A batch is stored when all three of its events are, and
			// counted as often as its least stored event.
			out := map[string]int{}
			parts := map[string]int{}
			for k, n := range per {
				batch, _, _ := strings.Cut(k, ".")
				parts[batch]++
				if c, ok := out[batch]; !ok || n < c {
					out[batch] = n
				}
			}
			for b, p := range parts {
				if p != 3 {
					return nil, fmt.Errorf("batch %s is half-written: %d of 3 events", b, p)
				}
			}
			return out, nil
		},
	},
	{
		name: "customer", // a catalog write through Store.Update, with an Idempotency-Key
		write: func(ctx context.Context, c *client, n string) (string, error) {
			key := "cust-" + n
			status, body, err := c.post(ctx, "/customers", fmt.Sprintf(`{"legalName":"Crash %s","customerAliases":[%q]}`, n, key),
				map[string]string{"Idempotency-Key": key})
			return ackedKey(key, status, body, err, http.StatusCreated)
		},
		stored: func(ctx context.Context, svc *billing.Service, account string) (map[string]int, error) {
			out := map[string]int{}
			err := pages(func(p billing.ListParams) (string, error) {
				page, err := svc.ListCustomers(ctx, account, billing.CustomerFilter{}, p)
				for _, c := range page.Items {
					for _, a := range c.CustomerAliases {
						out[a]++
					}
				}
				return page.After, err
			})
			return out, err
		},
	},
}

// ackedKey returns key when the answer is the acknowledgement want.
func ackedKey(key string, status int, body string, err error, want int) (string, error) {
	switch {
	case err != nil:
		return "", err
	case status == want:
		return key, nil
	case status >= 500:
		return "", fmt.Errorf("%d %s", status, body)
	}
	return "", fmt.Errorf("unexpected answer %d %s", status, body)
}

// storedEvents counts the stored usage events by customerEventId, for the
// ids starting with prefix.
func storedEvents(prefix string) func(ctx context.Context, svc *billing.Service, account string) (map[string]int, error) {
	return func(ctx context.Context, svc *billing.Service, account string) (map[string]int, error) {
		out := map[string]int{}
		err := pages(func(p billing.ListParams) (string, error) {
			page, err := svc.ListUsageEvents(ctx, account, billing.UsageEventFilter{}, p)
			for _, e := range page.Items {
				if strings.HasPrefix(e.CustomerEventID, prefix) {
					out[e.CustomerEventID]++
				}
			}
			return page.After, err
		})
		return out, err
	}
}

// pages calls list for every page, following after cursors.
func pages(list func(billing.ListParams) (string, error)) error {
	p := billing.ListParams{Limit: 100}
	for {
		after, err := list(p)
		if err != nil || after == "" {
			return err
		}
		p.After = after
	}
}

// runChild serves the API over the bbolt file at db on loopback and runs
// the workloads against it until killed, writing "ack <kind> <key>" to out
// for every acknowledged write. A dispatcher sends the notifications of
// every write to the webhook policy's receiver (the parent's).
//
// Long on purpose: the child process's whole life (open, serve, run the workloads, report) in one
// place, so the crash test's child reads top to bottom.
func runChild(db, receiverURL string, out io.Writer) error {
	store, err := openStore(db)
	if err != nil {
		return err
	}
	svc, err := billing.New(store, &billing.Config{WebhookAllowPrivate: true})
	if err != nil {
		return err
	}
	ctx := context.Background()
	accounts, err := svc.ListAccounts(ctx)
	if err != nil {
		return err
	}
	var account string
	if len(accounts) == 0 {
		a, err := svc.CreateAccount(ctx, billing.CreateAccountParams{Name: "crash"})
		if err != nil {
			return err
		}
		account = a.ID
	} else {
		account = accounts[0].ID
	}
	key, err := svc.CreateAPIKey(ctx, account)
	if err != nil {
		return err
	}
	policies, err := svc.ListNotificationPolicies(ctx, account, billing.NotificationPolicyFilter{}, billing.ListParams{Limit: 1})
	if err != nil {
		return err
	}
	if len(policies.Items) == 0 {
		// Every notification type: every document write notifies.
		if _, err := svc.CreateNotificationPolicy(ctx, account, billing.CreateNotificationPolicyParams{
			Name: "crash receiver", Channel: billing.ChannelWebhook, Recipients: []string{receiverURL},
		}); err != nil {
			return err
		}
	}
	customer, err := svc.CreateCustomer(ctx, account, billing.CustomerParams{LegalName: "Crash documents"})
	if err != nil {
		return err
	}
	go dispatch.New(svc, dispatch.Config{Webhooks: webhook.NewSender(true), PollInterval: 20 * time.Millisecond}).Run(ctx)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: httpserver.New(svc, &httpserver.Config{RateLimit: -1,
		// Warnings and errors (the cause of a 503 or 500) reach the
		// parent through stderr, which it prints when the child fails.
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	c := &client{base: "http://" + ln.Addr().String(), auth: key.Authorization(), customer: customer.ID, http: &http.Client{Timeout: 30 * time.Second}}
	fmt.Fprintf(out, "account %s\n", account)

	acks := make(chan string, 64)
	errs := make(chan error, 1)
	run := strconv.FormatInt(time.Now().UnixNano(), 36) // keys unique across rounds
	var seq atomic.Int64
	for w := range 8 {
		go func() {
			for {
				n := seq.Add(1)
				wl := workloads[(int(n)+w)%len(workloads)]
				k, err := wl.write(ctx, c, fmt.Sprintf("%s-%d", run, n))
				if err != nil {
					errs <- fmt.Errorf("%s: %w", wl.name, err)
					return
				}
				acks <- wl.name + " " + k
			}
		}()
	}
	for {
		select {
		case a := <-acks:
			// One write(2) per line: once it returns the parent can read
			// the line even if this process is killed right after.
			if _, err := io.WriteString(out, "ack "+a+"\n"); err != nil {
				return err
			}
		case err := <-errs:
			return err
		}
	}
}

// crashRounds is CRASH_ROUNDS, default 5.
func crashRounds(t *testing.T) int {
	t.Helper()
	return billingtest.EnvCount(t, "CRASH_ROUNDS", 5, 1)
}

// TestCrashRecovery SIGKILLs a child serving the mixed workload (see the
// package doc) CRASH_ROUNDS times, 5 by default so go test stays fast, and
// verifies the database after each kill. The full run the reliability
// guarantee asks for (at least 20 kills) is
//
//	CRASH_ROUNDS=25 go test -count=1 -run TestCrashRecovery -v ./internal/crashtest
//
// and CRASH_SEED=<n> replays the kill moments of an earlier run.
func TestCrashRecovery(t *testing.T) {
	t.Parallel()
	crashTest(t, filepath.Join(t.TempDir(), "crash.db"))
}

// TestCrashRecoveryPostgres is TestCrashRecovery with the child serving
// from PostgreSQL (BILLINGD_TEST_POSTGRES): a SIGKILL drops its
// connections mid-transaction, and every acknowledged write must be there.
func TestCrashRecoveryPostgres(t *testing.T) {
	t.Parallel()
	crashTest(t, pgtest.URL(t))
}

// openStore opens db: a PostgreSQL connection string, or a bbolt file.
func openStore(db string) (billing.Store, error) {
	if pgstore.IsURL(db) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		return pgstore.Open(ctx, db, &pgstore.Options{MaxConns: 8})
	}
	return boltstore.Open(db, nil)
}

// crashTest runs the crash rounds against db.
func crashTest(t *testing.T, db string) {
	seed, rng := crashSeed(t)
	rcv := billingtest.NewWebhookReceiver(t, nil)
	acked := map[string]map[string]bool{} // kind → key → acknowledged
	for _, w := range workloads {
		acked[w.name] = map[string]bool{}
	}
	var account string
	rounds := crashRounds(t)
	for round := range rounds {
		// A random moment: after 1 to 150 acknowledgements (the writes in
		// flight at that moment are what a crash can tear).
		killAfter := 1 + rng.IntN(150)
		account = crashRound(t, db, rcv.URL+"/hook", killAfter, acked)
		verify(t, db, account, acked, rcv, round)
		if t.Failed() {
			t.Fatalf("round %d failed (CRASH_SEED=%d)", round, seed)
		}
	}
	n := 0
	for kind, keys := range acked {
		n += len(keys)
		t.Logf("%s: %d acknowledged", kind, len(keys))
	}
	t.Logf("%d rounds, %d acknowledged writes verified, %d invoices and %d credit notes numbered, %d notifications delivered",
		rounds, n, totals.invoices, totals.creditNotes, totals.notifications)
}

// crashRound starts a child on db, SIGKILLs it after killAfter
// acknowledgements and records them in acked. It returns the account id.
func crashRound(t *testing.T, db, receiverURL string, killAfter int, acked map[string]map[string]bool) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childDBEnv+"="+db, childReceiverEnv+"="+receiverURL)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	defer func() {
		if !killed {
			cmd.Process.Kill()
			cmd.Wait()
		}
	}()
	sc := bufio.NewScanner(stdout)
	var account string
	n := 0
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 2 && f[0] == "account":
			account = f[1]
		case len(f) == 3 && f[0] == "ack":
			acked[f[1]][f[2]] = true
			n++
		}
		if n == killAfter && !killed {
			if err := cmd.Process.Signal(os.Kill); err != nil {
				t.Fatal(err)
			}
			killed = true
			// Keep reading: lines written before the kill are still
			// acknowledgements.
		}
	}
	err = cmd.Wait()
	if !killed {
		t.Fatalf("the child stopped after %d acknowledgements (%v); stderr:\n%s", n, err, stderr.String())
	}
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) {
		t.Fatalf("child: %v", err)
	}
	return account
}

// totals counts what the last verification saw, for the log.
var totals struct{ invoices, creditNotes, notifications int }

// verify reopens db and checks it against every acknowledgement so far,
// then the invariants of documents and, after dispatching what is pending,
// of webhooks.
func verify(t *testing.T, db, account string, acked map[string]map[string]bool, rcv *billingtest.WebhookReceiver, round int) {
	t.Helper()
	store, err := openStore(db)
	if err != nil {
		t.Fatalf("round %d: reopening: %v", round, err)
	}
	defer store.Close()
	if b, ok := store.(*boltstore.Store); ok {
		if err := b.Check(); err != nil {
			t.Errorf("round %d: bbolt check: %v", round, err)
		}
	}
	svc, err := billing.New(store, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	checkAcked(t, ctx, svc, account, acked, round)
	totals.invoices, totals.creditNotes = checkDocuments(t, ctx, svc, account, round)
	totals.notifications = checkWebhooks(t, ctx, store, svc, account, rcv, round)
}

// checkAcked checks that every acknowledged write is stored, and that
// nothing is stored twice.
func checkAcked(t *testing.T, ctx context.Context, svc *billing.Service, account string, acked map[string]map[string]bool, round int) {
	t.Helper()
	for _, w := range workloads {
		stored, err := w.stored(ctx, svc, account)
		if err != nil {
			t.Errorf("round %d: reading %s: %v", round, w.name, err)
			continue
		}
		for key := range acked[w.name] {
			if stored[key] == 0 {
				t.Errorf("round %d: acknowledged %s %s is missing", round, w.name, key)
			}
		}
		for key, n := range stored {
			if n > 1 {
				t.Errorf("round %d: %s %s stored %d times", round, w.name, key, n)
			}
		}
	}
}

// crashSeed returns CRASH_SEED (a new seed when unset), logged, and the
// random source of the kill moments it seeds.
func crashSeed(t *testing.T) (uint64, *rand.Rand) {
	t.Helper()
	seed := billingtest.Seed(t, "CRASH_SEED")
	return seed, rand.New(rand.NewPCG(seed, seed))
}
