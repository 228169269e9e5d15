package crashtest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/billingd/billing"
	"github.com/billingd/billing/internal/billingdtest"
	"github.com/billingd/billing/storage/boltstore"
)

// Patterns of billingd serve's stderr (see cmd/billingd).
var (
	listeningRE = regexp.MustCompile(`(?:msg=listening addr=|"msg":"listening","addr":")([^\s"]+)`)
	bootstrapRE = regexp.MustCompile(`account id:\s+(\S+)`)
	authRE      = regexp.MustCompile(`^\s*Authorization: (Basic \S+)$`)
)

// syncLog collects lines written by one goroutine and read by another.
type syncLog struct {
	mu sync.Mutex
	b  strings.Builder
}

// WriteString appends s.
func (l *syncLog) WriteString(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.WriteString(s)
}

// String returns everything written so far.
func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// buildBillingd builds the real binary into a temporary directory.
func buildBillingd(t *testing.T) string {
	t.Helper()
	bin, err := billingdtest.Build(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// Long on purpose: it starts a real server process, loads it and stops it; the phases share the
// process and its counters.
func TestShutdownUnderLoad(t *testing.T) {
	t.Parallel()
	bin := buildBillingd(t)
	db := filepath.Join(t.TempDir(), "billing.db")
	cmd := exec.Command(bin, "serve", "--addr", "127.0.0.1:0", "--db", db, "--rate-limit", "0")
	cmd.Env = billingdtest.CleanEnv()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	var log syncLog
	var account, auth, addr string
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		signalled := false
		for sc.Scan() {
			line := sc.Text()
			log.WriteString(line + "\n")
			if signalled {
				continue // the credentials and address are read from now on
			}
			if m := bootstrapRE.FindStringSubmatch(line); m != nil {
				account = m[1]
			}
			if m := authRE.FindStringSubmatch(line); m != nil {
				auth = m[1]
			}
			if m := listeningRE.FindStringSubmatch(line); m != nil {
				addr = m[1]
				signalled = true
				close(ready)
			}
		}
		exited <- cmd.Wait()
	}()
	t.Cleanup(func() { cmd.Process.Kill() })
	select {
	case <-ready:
	case err := <-exited:
		t.Fatalf("billingd exited before listening: %v\n%s", err, log.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("billingd did not listen")
	}
	if account == "" || auth == "" {
		t.Fatalf("no bootstrap credentials in:\n%s", log.String())
	}

	// Workers post events until the server stops answering; the first
	// 100 acknowledgements release the SIGTERM.
	var mu sync.Mutex
	var acked []string
	statuses := map[int]int{}
	warm := make(chan struct{})
	var warmOnce sync.Once
	var wg sync.WaitGroup
	hc := &http.Client{Timeout: 20 * time.Second}
	for w := range 16 {
		wg.Go(func() {
			for i := 0; ; i++ {
				key := fmt.Sprintf("w%d-%d", w, i)
				body := fmt.Sprintf(`{"customerAlias":"load","eventType":"api_call","customerEventId":%q}`, key)
				req, _ := http.NewRequest("POST", "http://"+addr+"/usage-events", strings.NewReader(body))
				req.Header.Set("Authorization", auth)
				req.Header.Set("Content-Type", "application/json")
				resp, err := hc.Do(req)
				if err != nil {
					return // the server stopped accepting
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				mu.Lock()
				statuses[resp.StatusCode]++
				if resp.StatusCode == http.StatusCreated {
					acked = append(acked, key)
					if len(acked) >= 100 {
						warmOnce.Do(func() { close(warm) })
					}
				}
				mu.Unlock()
			}
		})
	}
	select {
	case <-warm:
	case <-time.After(60 * time.Second):
		t.Fatalf("no 100 acknowledgements; statuses %v\n%s", statuses, log.String())
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("billingd after SIGTERM: %v\n%s", err, log.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("billingd did not exit after SIGTERM\n%s", log.String())
	}
	wg.Wait()

	for status, n := range statuses {
		if status != http.StatusCreated && status != http.StatusServiceUnavailable {
			t.Errorf("%d answers with status %d during shutdown", n, status)
		}
	}
	store, err := boltstore.Open(db, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if err := store.Check(); err != nil {
		t.Errorf("bbolt check after shutdown: %v", err)
	}
	svc, err := billing.New(store, nil)
	if err != nil {
		t.Fatal(err)
	}
	stored, err := storedEvents("w")(context.Background(), svc, account)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range acked {
		if stored[key] != 1 {
			t.Errorf("acknowledged event %s stored %d times after shutdown", key, stored[key])
		}
	}
	t.Logf("%d events acknowledged, %d stored; statuses %v", len(acked), len(stored), statuses)
}
