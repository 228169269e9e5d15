package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
)

// serveInProcess runs serve in this process (so the race detector sees it)
// with args added to a free port and the database db. It returns the base
// URL, the output, and a function that cancels the run (as SIGTERM does)
// and returns the exit code.
func serveInProcess(tb testing.TB, db string, args ...string) (string, *logBuffer, func() int) {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out := newLogBuffer()
	exit := make(chan int, 1)
	args = append([]string{"serve", "--addr", "127.0.0.1:0", "--db", db}, args...)
	go func() { exit <- run(ctx, args, strings.NewReader(""), out, out, mapEnv(nil)) }()
	stop := sync.OnceValue(func() int { cancel(); return <-exit })
	tb.Cleanup(func() { stop() })
	return "http://" + out.waitFor(tb, listeningRE)[1], out, stop
}

// get returns the status of GET url.
func get(tb testing.TB, url, auth string) int {
	tb.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		tb.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

func TestServeInProcessServesAPIAndAdminSocket(t *testing.T) {
	t.Parallel()
	db := tempDB(t)
	url, out, stop := serveInProcess(t, db, "--log-level", "debug")
	m := out.waitFor(t, bootstrapRE)
	for path, want := range map[string]int{"/healthz": 200, "/readyz": 200, "/metrics": 200} {
		if got := get(t, url+path, ""); got != want {
			t.Errorf("GET %s: %d, want %d", path, got, want)
		}
	}
	if got := get(t, url+"/usage-metrics", m[4]); got != http.StatusOK {
		t.Errorf("GET /usage-metrics with the bootstrap key: %d", got)
	}
	key := decodeCredential(t, mustRun(t, "keys", "create", "--account", m[1], "--db", db, "--json"))
	if got := get(t, url+"/usage-metrics", key.Authorization); got != http.StatusOK {
		t.Errorf("GET /usage-metrics with a key made over the socket: %d", got)
	}
	if strings.Contains(out.String(), m[4]+" ") || strings.Count(out.String(), m[3]) != 1 {
		t.Errorf("the credential appears in the request log:\n%s", out.String())
	}
	if code := stop(); code != exitOK {
		t.Errorf("exit %d after cancel; output:\n%s", code, out.String())
	}
	if _, err := os.Stat(db + ".sock"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the admin socket outlived the server: %v", err)
	}
	assertCheckClean(t, db)
}

func TestServeInProcessHonoursFlags(t *testing.T) {
	t.Parallel()
	db := tempDB(t)
	url, out, stop := serveInProcess(t, db, "--no-bootstrap", "--metrics=false", "--log-format", "json")
	if got := get(t, url+"/metrics", ""); got != http.StatusNotFound {
		t.Errorf("GET /metrics with --metrics=false: %d, want 404", got)
	}
	if code := stop(); code != exitOK {
		t.Fatalf("exit %d; output:\n%s", code, out.String())
	}
	if strings.Contains(out.String(), "Authorization") {
		t.Errorf("--no-bootstrap printed a credential:\n%s", out.String())
	}
	if !strings.Contains(out.String(), `"msg":"listening"`) {
		t.Errorf("--log-format json did not log JSON:\n%s", out.String())
	}
	assertAccountNames(t, db)
}

// TestServeBillingFlags: serve's settings of the billing engine (its
// interval, the rounding, the late-usage window) come from the flag, else
// from its BILLINGD_ variable, else the default; the flag wins over the
// variable; values the engine cannot work with are refused.
func TestServeBillingFlags(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		env  map[string]string
		args []string
		ok   func(*serveConfig) bool // nil: the values are refused
	}{
		{"Defaults", nil, nil, func(cfg *serveConfig) bool {
			return cfg.billingInterval == time.Minute && cfg.rounding == billing.RoundHalfUp && cfg.lateUsageWindow == 31*24*time.Hour
		}},
		{"BillingIntervalZeroTurnsTheEngineOff", nil, []string{"--billing-interval", "0"}, func(cfg *serveConfig) bool { return cfg.billingInterval == 0 }},
		{"NegativeBillingIntervalRefused", nil, []string{"--billing-interval", "-1s"}, nil},
		{"BillingIntervalFromEnvironment", map[string]string{"BILLINGD_BILLING_INTERVAL": "5m"}, nil, func(cfg *serveConfig) bool { return cfg.billingInterval == 5*time.Minute }},
		{"RoundingHalfEven", nil, []string{"--rounding", "half-even"}, func(cfg *serveConfig) bool { return cfg.rounding == billing.RoundHalfEven }},
		{"RoundingFromEnvironment", map[string]string{"BILLINGD_ROUNDING": "half-even"}, nil, func(cfg *serveConfig) bool { return cfg.rounding == billing.RoundHalfEven }},
		{"RoundingFlagWinsOverEnvironment", map[string]string{"BILLINGD_ROUNDING": "half-even"}, []string{"--rounding", "half-up"}, func(cfg *serveConfig) bool { return cfg.rounding == billing.RoundHalfUp }},
		{"LateUsageWindow", nil, []string{"--late-usage-window", "72h"}, func(cfg *serveConfig) bool { return cfg.lateUsageWindow == 72*time.Hour }},
		{"ZeroLateUsageWindowRefused", nil, []string{"--late-usage-window", "0s"}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cli := &cli{stdout: io.Discard, stderr: io.Discard, getenv: mapEnv(c.env)}
			cfg, err := cli.parseServe(c.args)
			if c.ok == nil && err == nil {
				t.Errorf("%q with %v accepted: %+v", c.args, c.env, cfg)
			}
			if c.ok != nil && (err != nil || !c.ok(cfg)) {
				t.Errorf("%q with %v: %+v, %v", c.args, c.env, cfg, err)
			}
		})
	}
}

// TestBillingLoopBillsAndStops: the loop serve runs every --billing-interval
// bills a due schedule once, however often it runs, and returns when serve
// cancels it.
func TestBillingLoopBillsAndStops(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, _ := billingtest.NewService(t, billingtest.WithBolt())
	account := billingtest.Account(t, svc, "acme")
	c, err := svc.CreateCustomer(ctx, account, billing.CustomerParams{LegalName: "C"})
	must(t, err)
	prod, err := svc.CreateProduct(ctx, account, billing.CreateProductParams{Name: "P"})
	must(t, err)
	amount := billing.MustDecimal("5.00")
	pr, err := svc.CreatePrice(ctx, account, billing.CreatePriceParams{ProductID: prod.ID, Name: "Plan", Currency: billing.CurrencyEUR,
		Structure:        billing.PriceStructure{PricingType: billing.PricingFixed, Price: &amount},
		BillingFrequency: billing.FrequencyMonthly, BillingType: billing.BillingTypeInAdvance})
	must(t, err)
	no, start := false, billing.DateOf(billingtest.Start)
	sc, err := svc.CreateBillingSchedule(ctx, account, billing.BillingScheduleParams{CustomerID: c.ID, StartDate: &start,
		AutoIssueInvoices: &no, IsDraft: &no, Phases: []billing.PhaseParams{{StartDate: &start, PriceIDs: []string{pr.ID}}}})
	must(t, err)

	loopCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	var runs atomic.Int64 // each run reads the time once, first
	go func() {
		billingLoop(loopCtx, svc, slog.New(slog.DiscardHandler), time.Millisecond, func() time.Time {
			runs.Add(1)
			return billingtest.Start
		})
		close(done)
	}()
	// Billed, then five more runs over: the sixth run after the billing
	// has started, so the five before it have finished.
	deadline := time.After(10 * time.Second)
	after := int64(-1)
	for after < 0 || runs.Load() < after+6 {
		if after < 0 {
			got, err := svc.GetBillingSchedule(ctx, account, sc.ID)
			must(t, err)
			if got.LastInvoiceID != "" {
				after = runs.Load()
			}
		}
		select {
		case <-deadline:
			t.Fatalf("the loop billed nothing, or stopped running, within 10 s (%d runs)", runs.Load())
		case <-time.After(time.Millisecond):
		}
	}
	stop()
	<-done // the loop returns once its context is cancelled
	page, err := svc.ListInvoices(ctx, account, billing.InvoiceFilter{BillingScheduleID: sc.ID}, billing.ListParams{})
	must(t, err)
	if page.TotalResultSize != 1 {
		t.Errorf("%d invoices after many runs, want 1", page.TotalResultSize)
	}
}

func TestServeRefusesDatabaseHeldByAnotherServer(t *testing.T) {
	t.Parallel()
	db := tempDB(t)
	serveInProcess(t, db)
	code, _, stderr := runCLI(t, nil, "serve", "--addr", "127.0.0.1:0", "--db", db)
	if code != exitError || !strings.Contains(stderr, "probably another billingd") {
		t.Errorf("exit %d, stderr %q; want 1 and a clear message", code, stderr)
	}
}
