package main

import (
	"bytes"
	"context"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/billingd/billing"
	"github.com/billingd/billing/storage/boltstore"
)

// runCLI runs billingd in-process with only the environment variables in
// env and returns the exit code, stdout and stderr.
func runCLI(tb testing.TB, env map[string]string, args ...string) (int, string, string) {
	tb.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, bytes.NewReader(nil), &stdout, &stderr, mapEnv(env))
	return code, stdout.String(), stderr.String()
}

// mapEnv returns a getenv over env, so no test sees the real environment.
func mapEnv(env map[string]string) func(string) string {
	return func(k string) string { return env[k] }
}

// mustRun runs billingd in-process and fails the test unless it exits 0.
func mustRun(tb testing.TB, args ...string) string {
	tb.Helper()
	code, stdout, stderr := runCLI(tb, nil, args...)
	if code != exitOK {
		tb.Fatalf("billingd %q: exit %d, stderr:\n%s", args, code, stderr)
	}
	return stdout
}

// tempDB returns the path of a database file under a new temporary
// directory.
func tempDB(tb testing.TB) string {
	tb.Helper()
	return filepath.Join(tb.TempDir(), "billing.db")
}

// openService opens the database at path directly and returns its
// Service; the store is closed when the test ends.
func openService(tb testing.TB, path string) (*billing.Service, *boltstore.Store) {
	tb.Helper()
	st := openBolt(tb, path)
	tb.Cleanup(func() { st.Close() })
	svc, err := billing.New(st, nil)
	if err != nil {
		tb.Fatal(err)
	}
	return svc, st
}

// openBolt opens (or creates) the database at path directly; the caller
// closes it.
func openBolt(tb testing.TB, path string) *boltstore.Store {
	tb.Helper()
	st, err := boltstore.Open(path, nil)
	if err != nil {
		tb.Fatal(err)
	}
	return st
}

// logBuffer collects output written concurrently and lets a test wait for
// a pattern to appear without polling on a timer.
type logBuffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{} // closed and replaced on every write
}

// newLogBuffer returns an empty logBuffer.
func newLogBuffer() *logBuffer { return &logBuffer{changed: make(chan struct{})} }

// Write appends p and wakes the waiters.
func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	close(b.changed)
	b.changed = make(chan struct{})
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// waitFor waits up to a few seconds for re to match the output and returns
// the submatches.
func (b *logBuffer) waitFor(tb testing.TB, re *regexp.Regexp) []string {
	tb.Helper()
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	for {
		b.mu.Lock()
		m := re.FindStringSubmatch(b.buf.String())
		changed := b.changed
		b.mu.Unlock()
		if m != nil {
			return m
		}
		select {
		case <-changed:
		case <-deadline.C:
			tb.Fatalf("output never matched %s; output so far:\n%s", re, b.String())
		}
	}
}

// Patterns of serve's output.
var (
	listeningRE = regexp.MustCompile(`(?:msg=listening addr=|"msg":"listening","addr":")([^\s"]+)`)
	bootstrapRE = regexp.MustCompile(`account id:\s+(\S+)\n\s+key id:\s+(\S+)\n\s+secret:\s+(\S+)\n\s+Authorization: (Basic \S+)\n`)
)

// must fails the test on an error.
func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
