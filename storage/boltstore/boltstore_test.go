package boltstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
	"github.com/billingd/billing/storage/boltstore"
	"github.com/billingd/billing/storage/storagetest"
)

const table billing.Table = "t"

func TestStore(t *testing.T) {
	t.Parallel()
	storagetest.Run(t, func(tb testing.TB) billing.Store {
		return open(tb, filepath.Join(tb.TempDir(), "billing.db"), nil)
	})
}

// open opens path and, at cleanup, closes it and checks the file.
func open(tb testing.TB, path string, opts *boltstore.Options) *boltstore.Store {
	tb.Helper()
	s, err := boltstore.Open(path, opts)
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	tb.Cleanup(func() {
		if err := s.Close(); err != nil {
			tb.Errorf("Close: %v", err)
		}
		checkFile(tb, path)
	})
	return s
}

// checkFile runs the bbolt consistency check on a closed file.
func checkFile(tb testing.TB, path string) {
	tb.Helper()
	s, err := boltstore.Open(path, &boltstore.Options{ReadOnly: true})
	if err != nil {
		tb.Errorf("reopen for Check: %v", err)
		return
	}
	defer s.Close()
	if err := s.Check(); err != nil {
		tb.Errorf("Check %s: %v", path, err)
	}
}

func put(tb testing.TB, s billing.Store, key, value string) {
	tb.Helper()
	err := s.Update(context.Background(), func(tx billing.Tx) error {
		return tx.Put(context.Background(), table, []byte(key), []byte(value))
	})
	if err != nil {
		tb.Fatalf("Put %q: %v", key, err)
	}
}

// get returns the value of key, or "<missing>".
func get(tb testing.TB, s billing.Store, key string) string {
	tb.Helper()
	var got string
	err := s.View(context.Background(), func(tx billing.Tx) error {
		v, err := tx.Get(context.Background(), table, []byte(key))
		if errors.Is(err, billing.ErrNotFound) {
			got = "<missing>"
			return nil
		}
		got = string(v)
		return err
	})
	if err != nil {
		tb.Fatalf("Get %q: %v", key, err)
	}
	return got
}

// closedFileWithKV creates a database file under a new temporary directory,
// puts "k" = "v" in it, closes it and returns its path.
func closedFileWithKV(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "billing.db")
	s, err := boltstore.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	put(t, s, "k", "v")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestDataSurvivesReopen(t *testing.T) {
	t.Parallel()
	path := closedFileWithKV(t)
	s := open(t, path, nil)
	if got := get(t, s, "k"); got != "v" {
		t.Errorf("after reopen Get = %q, want %q", got, "v")
	}
	if s.Path() != path {
		t.Errorf("Path() = %q, want %q", s.Path(), path)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if perm := info.Mode().Perm(); perm != 0o600 {
		t.Errorf("file mode = %v, want 0600", perm)
	}
}

func TestOpenLockedFileFailsWithinLockTimeout(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "billing.db")
	open(t, path, nil)

	const timeout = 100 * time.Millisecond
	start := time.Now()
	s, err := boltstore.Open(path, &boltstore.Options{LockTimeout: timeout})
	elapsed := time.Since(start)
	if err == nil {
		s.Close()
		t.Fatal("second Open of a held file succeeded")
	}
	if !strings.Contains(err.Error(), "locked by another process") || !errors.Is(err, boltstore.ErrLocked) {
		t.Errorf("error %q does not say the file is locked, or is not ErrLocked", err)
	}
	// Generous slack: the point is failing instead of hanging.
	if elapsed > timeout+2*time.Second {
		t.Errorf("Open failed after %v, want about %v", elapsed, timeout)
	}
}

func TestWriteToMakesOpenableBackup(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := open(t, filepath.Join(dir, "billing.db"), nil)
	put(t, s, "k", "v")

	var buf bytes.Buffer
	n, err := s.WriteTo(&buf)
	if err != nil {
		t.Fatalf("WriteTo: %v", err)
	}
	if n != int64(buf.Len()) || n == 0 {
		t.Fatalf("WriteTo returned %d for %d bytes written", n, buf.Len())
	}
	backup := filepath.Join(dir, "backup.db")
	if err := os.WriteFile(backup, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	// The store keeps working during and after the backup.
	put(t, s, "after", "backup")

	b := open(t, backup, nil)
	if got := get(t, b, "k"); got != "v" {
		t.Errorf("backup Get = %q, want %q", got, "v")
	}
	if got := get(t, b, "after"); got != "<missing>" {
		t.Errorf("backup holds a write made after it: %q", got)
	}
}

// Long on purpose: one scenario walked in order; each step starts from the state the previous steps
// left, so pieces would repeat the set-up.
func TestCompactReclaimsSpace(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "billing.db"), filepath.Join(dir, "compact.db")
	s, err := boltstore.Open(src, &boltstore.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	value := strings.Repeat("x", 4096)
	err = s.Update(context.Background(), func(tx billing.Tx) error {
		for i := range 1000 {
			if err := tx.Put(context.Background(), table, []byte{byte(i >> 8), byte(i), 'k'}, []byte(value)); err != nil {
				return err
			}
		}
		return tx.Put(context.Background(), table, []byte("kept"), []byte("v"))
	})
	if err != nil {
		t.Fatal(err)
	}
	err = s.Update(context.Background(), func(tx billing.Tx) error {
		for i := range 1000 {
			if err := tx.Delete(context.Background(), table, []byte{byte(i >> 8), byte(i), 'k'}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	if err := boltstore.Compact(src, dst); !errors.Is(err, boltstore.ErrLocked) {
		t.Errorf("Compact of a file held open for writing: %v, want ErrLocked", err)
	}
	if _, err := os.Stat(dst); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a refused Compact left %s behind: %v", dst, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := boltstore.Compact(src, dst); err != nil {
		t.Fatalf("Compact: %v", err)
	}
	before, err := os.ReadFile(dst)
	if err != nil {
		t.Fatal(err)
	}
	if err := boltstore.Compact(src, dst); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("Compact into an existing file: %v, want already exists", err)
	}
	if after, err := os.ReadFile(dst); err != nil || !bytes.Equal(after, before) {
		t.Errorf("a refused Compact changed the existing file (%v)", err)
	}
	srcInfo, err := os.Stat(src)
	if err != nil {
		t.Fatal(err)
	}
	dstInfo, err := os.Stat(dst)
	if err != nil {
		t.Fatal(err)
	}
	if dstInfo.Size() >= srcInfo.Size() {
		t.Errorf("compacted size %d, want less than %d", dstInfo.Size(), srcInfo.Size())
	}
	c := open(t, dst, nil)
	if got := get(t, c, "kept"); got != "v" {
		t.Errorf("compacted Get = %q, want %q", got, "v")
	}
	put(t, c, "new", "write") // the copy is a working database
}

func TestReadOnlyWritesAreErrUnavailable(t *testing.T) {
	t.Parallel()
	path := closedFileWithKV(t)

	ro := open(t, path, &boltstore.Options{ReadOnly: true})
	write := func(tx billing.Tx) error {
		return tx.Put(context.Background(), table, []byte("k"), []byte("new"))
	}
	for range 2 { // a read-only store is not a failed one: it stays readable
		if err := ro.Update(context.Background(), write); !errors.Is(err, billing.ErrUnavailable) {
			t.Errorf("Update: err = %v, want ErrUnavailable", err)
		}
		if err := ro.Batch(context.Background(), write); !errors.Is(err, billing.ErrUnavailable) {
			t.Errorf("Batch: err = %v, want ErrUnavailable", err)
		}
		if got := get(t, ro, "k"); got != "v" {
			t.Errorf("Get = %q, want %q", got, "v")
		}
	}
}

// faults is a file opener whose files can be made unwritable or
// unopenable, and a clock the test moves by hand.
type faults struct {
	unwritable atomic.Bool // files open read-only, so writes fail with EBADF
	unopenable atomic.Bool // opening fails with EIO
	opens      atomic.Int32

	*billingtest.Clock
}

func (f *faults) openFile(name string, flag int, perm os.FileMode) (*os.File, error) {
	f.opens.Add(1)
	if f.unopenable.Load() {
		return nil, &os.PathError{Op: "open", Path: name, Err: syscall.EIO}
	}
	if f.unwritable.Load() {
		flag = os.O_RDONLY
	}
	return os.OpenFile(name, flag, perm)
}

// wantOpens fails the test unless the file was opened n times; why says
// what that count stands for.
func (f *faults) wantOpens(t *testing.T, n int32, why string) {
	t.Helper()
	if got := f.opens.Load(); got != n {
		t.Fatalf("file opened %d times, want %s", got, why)
	}
}

// wantUnavailable fails the test unless err is ErrUnavailable; what says
// what returned it.
func wantUnavailable(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, billing.ErrUnavailable) {
		t.Fatalf("%s: err = %v, want ErrUnavailable", what, err)
	}
}

func TestCommitFailureClosesAndReopens(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		size  int // 64KiB forces the file to grow; a few bytes reuse free pages
		batch bool
	}{
		{"UpdateWriteFails", 5, false},
		{"UpdateFileGrowthFails", 64 << 10, false},
		{"BatchWriteFails", 5, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			testCommitFailure(t, c.size, c.batch)
		})
	}
}

// Long on purpose: a table of cases, one line each; its length is the cases, not logic.
func testCommitFailure(t *testing.T, size int, batch bool) {
	path := closedFileWithKV(t)

	f := &faults{Clock: billingtest.NewClock(time.Unix(1_700_000_000, 0))}
	f.unwritable.Store(true)
	s, err := boltstore.OpenWithSeams(path, nil, f.Now, f.openFile)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		s.Close()
		checkFile(t, path)
	})
	ctx := context.Background()
	write := func(key string) func(billing.Tx) error {
		return func(tx billing.Tx) error {
			return tx.Put(ctx, table, []byte(key), bytes.Repeat([]byte("x"), size))
		}
	}

	// The commit fails: the error says unavailable and the file is closed,
	// so reads fail too rather than serving a file in an unknown state.
	first := s.Update
	if batch {
		first = s.Batch
	}
	wantUnavailable(t, "write to an unwritable file", first(ctx, write("lost")))
	wantUnavailable(t, "View after a failed commit", s.View(ctx, func(billing.Tx) error { return nil }))
	wantUnavailable(t, "Batch after a failed commit", s.Batch(ctx, write("lost too")))
	f.wantOpens(t, 1, "no reopen within a second of the failure")

	// A second later the next transaction tries to reopen, and fails.
	f.Advance(time.Second)
	f.unopenable.Store(true)
	if err := s.Update(ctx, write("lost")); !errors.Is(err, billing.ErrUnavailable) || !errors.Is(err, syscall.EIO) {
		t.Fatalf("Update while the file cannot be opened: err = %v, want ErrUnavailable wrapping EIO", err)
	}
	wantUnavailable(t, "Update", s.Update(ctx, write("lost")))
	f.wantOpens(t, 2, "one reopen attempt per second")

	// Once the disk is healthy again, the store recovers by itself.
	f.Advance(time.Second)
	f.unopenable.Store(false)
	f.unwritable.Store(false)
	put(t, s, "after", "recovery")
	if got := get(t, s, "k"); got != "v" {
		t.Errorf("Get of data committed before the failure = %q, want %q", got, "v")
	}
	for _, key := range []string{"lost", "lost too"} {
		if got := get(t, s, key); got != "<missing>" {
			t.Errorf("a failed write is visible: %q = %.10q...", key, got)
		}
	}
	if err := s.Check(); err != nil {
		t.Errorf("Check after recovery: %v", err)
	}
}

func TestInvalidOptionsFail(t *testing.T) {
	t.Parallel()
	_, err := boltstore.Open(filepath.Join(t.TempDir(), "billing.db"), &boltstore.Options{MaxBatchSize: -1})
	if err == nil {
		t.Error("Open with a negative MaxBatchSize succeeded")
	}
}

// TestPutKeptKeepsTheValue: PutKept stores a value that reads back after
// the commit, without the copy Put makes (at least 3,000 bytes less
// allocated per value of 4 KB).
func TestPutKeptKeepsTheValue(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "billing.db"), nil)
	ctx := context.Background()
	value := bytes.Repeat([]byte("v"), 4096)
	allocated := func(put func(tx billing.KeepingTx, key []byte) error) (n uint64) {
		err := s.Update(ctx, func(tx billing.Tx) error {
			ktx, ok := tx.(billing.KeepingTx)
			if !ok {
				t.Fatal("boltstore's Tx is not a billing.KeepingTx")
			}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			for i := range 100 {
				if err := put(ktx, []byte{byte(i)}); err != nil {
					return err
				}
			}
			runtime.ReadMemStats(&after)
			n = after.TotalAlloc - before.TotalAlloc
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	copied := allocated(func(tx billing.KeepingTx, key []byte) error { return tx.Put(ctx, table, key, value) })
	kept := allocated(func(tx billing.KeepingTx, key []byte) error { return tx.PutKept(ctx, table, key, value) })
	if kept+100*3000 > copied {
		t.Errorf("100 PutKept of 4 KB allocated %d bytes, 100 Put %d: the values were copied", kept, copied)
	}
	err := s.View(ctx, func(tx billing.Tx) error {
		got, err := tx.Get(ctx, table, []byte{7})
		if err == nil && !bytes.Equal(got, value) {
			err = fmt.Errorf("read back %.20q..., want %.20q...", got, value)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
