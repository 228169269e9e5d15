package httpserver

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/billingd/billing/billingtest"
	"github.com/billingd/billing/storage/boltstore"
)

// TestFullDiskAnswers503AndRecovers fills a 2 MiB tmpfs through the API
// until bbolt's commits fail: the API answers 503 unavailable (never 500),
// boltstore closes the file after the failed commit, and once space is
// freed it reopens it by itself; every acknowledged batch is then present
// and the bbolt check is clean. It needs root (mount); otherwise it skips
// and says why.
//
// Long on purpose: it fills a real tmpfs, then checks the answers while full and after space is
// freed: one sequence on one disk.
func TestFullDiskAnswers503AndRecovers(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("skipped: mounting a small tmpfs needs root")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("skipped: mount -t tmpfs is not permitted here: %v: %s", err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	// Space to free once the disk is full.
	filler := filepath.Join(dir, "filler")
	if err := os.WriteFile(filler, make([]byte, 512<<10), 0o600); err != nil {
		t.Fatal(err)
	}
	store, err := boltstore.Open(filepath.Join(dir, "billing.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	e := newEnv(t, &Config{RateLimit: -1}, billingtest.WithStore(store))

	long := strings.Repeat("v", 1000)
	acked, full := 0, false
	for i := 0; i < 100 && !full; i++ {
		var evs []string
		for j := range 100 {
			evs = append(evs, fmt.Sprintf(`{"customerAlias":"c","eventType":"fill","customerEventId":"%d-%d","eventProperties":{"s":%q}}`, i, j, long))
		}
		r := e.post("/usage-events/batch", `{"events":[`+strings.Join(evs, ",")+`]}`)
		switch r.status {
		case http.StatusCreated:
			acked++
		case http.StatusServiceUnavailable:
			wantUnavailable(t, "a batch on a full disk", r)
			full = true
		default:
			t.Fatalf("batch %d on a filling disk: %d %s", i, r.status, r.body)
		}
	}
	if !full {
		t.Fatalf("the 2 MiB disk never filled up after %d batches", acked)
	}
	// The store closed the file after the failed commit.
	wantUnavailable(t, "GET /readyz on a full disk", e.get("/readyz"))

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	// boltstore reopens at most once a second: retry until it has.
	deadline := time.Now().Add(15 * time.Second)
	for {
		r := e.post("/usage-events", `{"customerAlias":"c","eventType":"after"}`)
		if r.status == http.StatusCreated {
			break
		}
		if r.status != http.StatusServiceUnavailable || time.Now().After(deadline) {
			t.Fatalf("after freeing space: %d %s", r.status, r.body)
		}
		time.Sleep(100 * time.Millisecond)
	}
	wantStatus(t, e.get("/readyz"), http.StatusOK)
	got := decode[eventPage](t, e.get("/usage-events?eventType=fill&limit=1")).Pagination.TotalResultSize
	if got != acked*100 {
		t.Errorf("%d fill events stored, want the %d acknowledged", got, acked*100)
	}
	if err := store.Check(); err != nil {
		t.Errorf("bbolt check after the full disk: %v", err)
	}
	t.Logf("%d batches acknowledged before the disk filled", acked)
}
