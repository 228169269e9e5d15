package faultstore_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
	"github.com/billingd/billing/storage/faultstore"
	"github.com/billingd/billing/storage/memstore"
	"github.com/billingd/billing/storage/storagetest"
)

const table billing.Table = "t"

// TestHealthyStorePassesConformance: without a fault the wrapper is
// invisible, on both backends.
func TestHealthyStorePassesConformance(t *testing.T) {
	t.Parallel()
	t.Run("memstore", func(t *testing.T) {
		t.Parallel()
		storagetest.Run(t, func(tb testing.TB) billing.Store {
			s := faultstore.New(memstore.New())
			tb.Cleanup(func() { _ = s.Close() })
			return s
		})
	})
	t.Run("boltstore", func(t *testing.T) {
		t.Parallel()
		storagetest.Run(t, func(tb testing.TB) billing.Store { return faultstore.New(billingtest.Bolt(tb)) })
	})
}

func put(s billing.Store, key string) error {
	ctx := context.Background()
	return s.Update(ctx, func(tx billing.Tx) error {
		if err := tx.Put(ctx, table, []byte(key), []byte("v")); err != nil {
			return err
		}
		_, err := tx.Increment(ctx, table, []byte("n"))
		return err
	})
}

func get(s billing.Store, key string) error {
	ctx := context.Background()
	return s.View(ctx, func(tx billing.Tx) error {
		_, err := tx.Get(ctx, table, []byte(key))
		return err
	})
}

func counter(t *testing.T, s billing.Store) []byte {
	t.Helper()
	ctx := context.Background()
	var v []byte
	err := s.View(ctx, func(tx billing.Tx) (err error) {
		v, err = tx.Get(ctx, table, []byte("n"))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestFaultsFailTheChosenOperations(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name      string
		op        faultstore.Op
		readFails bool
	}{
		{"ErrOnWrite", faultstore.OpWrite, false},
		{"ErrOnCommit", faultstore.OpCommit, false},
		{"ErrOnBegin", faultstore.OpBegin, false},
		{"ErrOnRead", faultstore.OpRead, true},
		{"ErrOnView", faultstore.OpView, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := faultstore.New(billingtest.Bolt(t))
			if err := put(s, "before"); err != nil {
				t.Fatal(err)
			}
			s.Inject(faultstore.Fault{Op: c.op})
			writeErr := put(s, "during")
			readErr := get(s, "before")
			if c.op == faultstore.OpRead || c.op == faultstore.OpView {
				// A read fault fails reads; the write above read nothing.
				if writeErr != nil {
					t.Fatalf("write during a %s fault: %v", c.op, writeErr)
				}
			} else if !errors.Is(writeErr, billing.ErrUnavailable) || !errors.Is(writeErr, faultstore.ErrInjected) || !faultstore.IsInjected(writeErr) {
				t.Fatalf("write during a %s fault: err = %v, want the injected unavailable error", c.op, writeErr)
			}
			if c.readFails != (readErr != nil) || readErr != nil && !errors.Is(readErr, billing.ErrUnavailable) {
				t.Fatalf("read during a %s fault: err = %v", c.op, readErr)
			}
			s.Clear()
			if err := get(s, "before"); err != nil {
				t.Fatalf("read after Clear: %v", err)
			}
			wantWritten := c.readFails
			if err := get(s, "during"); (err == nil) != wantWritten {
				t.Fatalf("key written during the fault: Get err = %v, want written=%v", err, wantWritten)
			}
			// The counter was incremented in the same transactions: a
			// failed one left no trace (1 increment, or 2 when it committed).
			want := byte(1)
			if wantWritten {
				want = 2
			}
			if n := counter(t, s); n[7] != want {
				t.Fatalf("counter = %v, want %d", n, want)
			}
			if err := put(s, "after"); err != nil {
				t.Fatalf("write after Clear: %v", err)
			}
		})
	}
}

func TestAfterAndCount(t *testing.T) {
	t.Parallel()
	s := faultstore.New(memstore.New())
	t.Cleanup(func() { s.Close() })
	mine := errors.New("disk on fire")
	s.Inject(faultstore.Fault{Op: faultstore.OpCommit, After: 2, Count: 2, Err: mine})
	var got []bool
	for i := range 6 {
		err := put(s, string(rune('a'+i)))
		if err != nil && !errors.Is(err, mine) {
			t.Fatalf("put %d: %v, want the fault's own error", i, err)
		}
		got = append(got, err == nil)
	}
	want := []bool{true, true, false, false, true, true}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("successes = %v, want %v", got, want)
		}
	}
	if s.Failures() != 2 || s.Active() {
		t.Fatalf("Failures = %d, Active = %v; want 2 and a cleared fault", s.Failures(), s.Active())
	}
}

// TestConcurrentBatchesUnderFault: group commit under an injected commit
// fault never reports success for a write that is not there.
func TestConcurrentBatchesUnderFault(t *testing.T) {
	t.Parallel()
	s := faultstore.New(billingtest.Bolt(t))
	s.Inject(faultstore.Fault{Op: faultstore.OpCommit, After: 10})
	ctx := context.Background()
	keys := make([]string, 40)
	errs := make([]error, len(keys))
	var wg sync.WaitGroup
	for i := range keys {
		keys[i] = string(rune('A' + i))
		wg.Go(func() {
			errs[i] = s.Batch(ctx, func(tx billing.Tx) error { return tx.Put(ctx, table, []byte(keys[i]), []byte("v")) })
		})
	}
	wg.Wait()
	s.Clear()
	failed := 0
	for i, k := range keys {
		err := get(s, k)
		switch {
		case errs[i] == nil && err != nil:
			t.Errorf("acknowledged %s is missing: %v", k, err)
		case errs[i] != nil && err == nil:
			t.Errorf("failed %s (%v) is visible", k, errs[i])
		case errs[i] != nil:
			failed++
		}
	}
	if failed == 0 {
		t.Errorf("no batch failed")
	}
}

func TestOpString(t *testing.T) {
	t.Parallel()
	if got := (faultstore.OpWrite | faultstore.OpCommit).String(); got != "write|commit" {
		t.Errorf("String = %q", got)
	}
	if got := faultstore.Op(0).String(); got != "none" {
		t.Errorf("String = %q", got)
	}
}
