// Package storagetest is the conformance suite of the billing.Store port.
// Every backend runs it from its own tests:
//
//	func TestStore(t *testing.T) {
//		storagetest.Run(t, func(tb testing.TB) billing.Store {
//			s := mybackend.New()
//			tb.Cleanup(func() { s.Close() })
//			return s
//		})
//	}
//
// When the contract in billing/store.go changes, the suite changes first.
package storagetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/billingd/billing"
	"github.com/google/go-cmp/cmp"
)

// Run runs the conformance suite against the stores returned by newStore.
// newStore must return a new, empty, open store on every call and register
// its own cleanup (Close, and any backend check) with tb.Cleanup; Close may
// already have been called by the suite when the cleanup runs. Subtests run
// in parallel, each on its own store.
func Run(t *testing.T, newStore func(tb testing.TB) billing.Store) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.run(t, newStore(t))
		})
	}
}

var cases = []struct {
	name string
	run  func(t *testing.T, s billing.Store)
}{
	{"PutThenGetReturnsValue", testPutGet},
	{"EmptyValueIsStoredNotMissing", testEmptyValue},
	{"GetMissingIsErrNotFound", testGetMissing},
	{"PutReplacesValue", testPutReplaces},
	{"PutKeptStoresLikePut", testPutKept},
	{"RollupTxOnEveryTxOrNone", testRollupTx},
	{"GetManyAnswersAsGet", testGetMany},
	{"TakeDeletesAndReturnsTheRange", testTake},
	{"PrefetchChangesNothingGetAnswers", testPrefetch},
	{"InsertNewKeyStoresValue", testInsertNew},
	{"InsertExistingIsErrConflictAndKeepsValue", testInsertConflict},
	{"DeleteRemovesKey", testDelete},
	{"DeleteMissingIsErrNotFound", testDeleteMissing},
	{"IncrementCountsFromOnePerKey", testIncrement},
	{"FailedUpdateLeavesNoTrace", testFailedUpdate},
	{"PanicInUpdateLeavesNoTrace", testPanicUpdate},
	{"WriteInViewIsErrReadOnly", testViewReadOnly},
	{"ScanIsAscending", testScanAscending},
	{"ScanReverseIsDescending", testScanReverse},
	{"ScanSelectsRange", testScanRanges},
	{"ScanErrStopScanEndsWithoutError", testScanStop},
	{"ScanExpectChangesNothingVisited", testScanExpect},
	{"ScanCallbackErrorIsReturned", testScanError},
	{"ReturnedBytesAreCallerOwned", testCallerOwned},
	{"ScanInUpdateSeesOwnWrites", testScanOwnWrites},
	{"ScansBetweenWritesSeeEachWrite", testScansBetweenWrites},
	{"SeparatorIsolatesAccountPrefixes", testAccountPrefixes},
	{"CancelledContextRunsNothing", testCancelled},
	{"ClosedStoreIsErrClosed", testClosed},
	{"ConcurrentIncrementsAreGapless", testConcurrentIncrement},
	{"ConcurrentBatchesAllCommit", testConcurrentBatch},
	{"FailingBatchFailsAlone", testFailingBatch},
	{"ViewNeverSeesPartialUpdate", testAtomicVisibility},
	{"ConcurrentReadModifyWritesLoseNothing", testConcurrentReadModifyWrite},
	{"ConcurrentInsertsOfOneKeyHaveOneWinner", testConcurrentInsert},
	{"LongScanIsOrderedAndCallbackMayUseTx", testLongScan},
}

const (
	tableA billing.Table = "storagetest_a"
	tableB billing.Table = "storagetest_b"
)

var errBoom = errors.New("storagetest: boom")

// kv is one scanned pair; keys and values are strings so diffs read well.
type kv struct{ K, V string }

func update(tb testing.TB, s billing.Store, fn func(ctx context.Context, tx billing.Tx) error) {
	tb.Helper()
	ctx := context.Background()
	if err := s.Update(ctx, func(tx billing.Tx) error { return fn(ctx, tx) }); err != nil {
		tb.Fatalf("Update: %v", err)
	}
}

func view(tb testing.TB, s billing.Store, fn func(ctx context.Context, tx billing.Tx) error) {
	tb.Helper()
	ctx := context.Background()
	if err := s.View(ctx, func(tx billing.Tx) error { return fn(ctx, tx) }); err != nil {
		tb.Fatalf("View: %v", err)
	}
}

func put(tb testing.TB, s billing.Store, table billing.Table, pairs ...string) {
	tb.Helper()
	if len(pairs)%2 != 0 {
		tb.Fatalf("put: odd number of arguments")
	}
	update(tb, s, func(ctx context.Context, tx billing.Tx) error {
		for i := 0; i < len(pairs); i += 2 {
			if err := tx.Put(ctx, table, []byte(pairs[i]), []byte(pairs[i+1])); err != nil {
				return fmt.Errorf("Put %q: %w", pairs[i], err)
			}
		}
		return nil
	})
}

// get returns the value of key, or ok == false when it is ErrNotFound.
func get(tb testing.TB, s billing.Store, table billing.Table, key string) (value string, ok bool) {
	tb.Helper()
	view(tb, s, func(ctx context.Context, tx billing.Tx) error {
		v, err := tx.Get(ctx, table, []byte(key))
		if errors.Is(err, billing.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		if v == nil {
			return fmt.Errorf("Get %q returned a nil value and no error", key)
		}
		value, ok = string(v), true
		return nil
	})
	return value, ok
}

func wantValue(tb testing.TB, s billing.Store, table billing.Table, key, want string) {
	tb.Helper()
	got, ok := get(tb, s, table, key)
	if !ok {
		tb.Fatalf("Get %q: ErrNotFound, want %q", key, want)
	}
	if got != want {
		tb.Fatalf("Get %q = %q, want %q", key, got, want)
	}
}

func wantMissing(tb testing.TB, s billing.Store, table billing.Table, key string) {
	tb.Helper()
	if got, ok := get(tb, s, table, key); ok {
		tb.Fatalf("Get %q = %q, want ErrNotFound", key, got)
	}
}

func scan(tb testing.TB, s billing.Store, table billing.Table, r billing.Range) []kv {
	tb.Helper()
	var got []kv
	view(tb, s, func(ctx context.Context, tx billing.Tx) error {
		var err error
		got, err = scanTx(ctx, tx, table, r)
		return err
	})
	return got
}

func scanTx(ctx context.Context, tx billing.Tx, table billing.Table, r billing.Range) ([]kv, error) {
	var got []kv
	err := tx.Scan(ctx, table, r, func(k, v []byte) error {
		got = append(got, kv{string(k), string(v)})
		return nil
	})
	return got, err
}

func increment(tb testing.TB, s billing.Store, table billing.Table, key string) uint64 {
	tb.Helper()
	var n uint64
	update(tb, s, func(ctx context.Context, tx billing.Tx) error {
		var err error
		n, err = tx.Increment(ctx, table, []byte(key))
		return err
	})
	return n
}

func testPutGet(t *testing.T, s billing.Store) {
	put(t, s, tableA, "k1", "v1", "k2", "v2")
	put(t, s, tableB, "k1", "other table")
	wantValue(t, s, tableA, "k1", "v1")
	wantValue(t, s, tableA, "k2", "v2")
	wantValue(t, s, tableB, "k1", "other table")
}

// testPutKept: a backend whose Tx offers billing.KeepingTx stores with
// PutKept exactly as with Put (replacing, read back within the
// transaction and after it); a backend without it passes trivially.
func testPutKept(t *testing.T, s billing.Store) {
	put(t, s, tableA, "k1", "old")
	kept := false
	update(t, s, func(ctx context.Context, tx billing.Tx) error {
		k, ok := tx.(billing.KeepingTx)
		if !ok {
			return nil
		}
		kept = true
		for key, v := range map[string]string{"k1": "new", "k2": "v2"} {
			if err := k.PutKept(ctx, tableA, []byte(key), []byte(v)); err != nil {
				return err
			}
		}
		got, err := tx.Get(ctx, tableA, []byte("k1"))
		if err == nil && string(got) != "new" {
			err = fmt.Errorf("k1 read %q within the transaction, want %q", got, "new")
		}
		return err
	})
	if kept {
		wantValue(t, s, tableA, "k1", "new")
		wantValue(t, s, tableA, "k2", "v2")
	}
}

// testRollupTx: billing.RollupTx is offered, with one answer, by the Tx of
// View, Update and Batch alike: the Service keeps usage rollups where
// events are written and reads them in calculations, and a Tx that wrote
// events without them would leave calculations wrong.
func testRollupTx(t *testing.T, s billing.Store) {
	ctx := context.Background()
	var answers []bool
	note := func(tx billing.Tx) error {
		r, ok := tx.(billing.RollupTx)
		answers = append(answers, ok && r.KeepsUsageRollups())
		return nil
	}
	for _, run := range []func(func(billing.Tx) error) error{
		func(fn func(billing.Tx) error) error { return s.View(ctx, fn) },
		func(fn func(billing.Tx) error) error { return s.Update(ctx, fn) },
		func(fn func(billing.Tx) error) error { return s.Batch(ctx, fn) },
	} {
		if err := run(note); err != nil {
			t.Fatal(err)
		}
	}
	if answers[0] != answers[1] || answers[1] != answers[2] {
		t.Errorf("KeepsUsageRollups of View, Update and Batch: %v, want one answer", answers)
	}
}

// testGetMany: a backend whose Tx offers billing.MultiGetTx answers with
// GetMany what Get answers, key by key in the order asked (a missing key
// nil, an empty value empty, a key asked twice twice), in a View and in an
// Update that wrote some of the keys and deleted one; a backend without it
// passes trivially.
func testGetMany(t *testing.T, s billing.Store) {
	put(t, s, tableA, "a", "1", "b", "", "c", "3", "gone", "4")
	put(t, s, tableB, "a", "other table")
	keys := [][]byte{[]byte("c"), []byte("missing"), []byte("a"), []byte("b"), []byte("a"), []byte("gone"), []byte("new")}
	check := func(ctx context.Context, tx billing.Tx) error {
		m, ok := tx.(billing.MultiGetTx)
		if !ok {
			return nil
		}
		got, err := m.GetMany(ctx, tableA, keys)
		if err != nil || len(got) != len(keys) {
			return fmt.Errorf("GetMany: %d values, %v", len(got), err)
		}
		for i, k := range keys {
			v, err := tx.Get(ctx, tableA, k)
			switch {
			case errors.Is(err, billing.ErrNotFound):
				if got[i] != nil {
					return fmt.Errorf("GetMany %q = %q, Get finds nothing", k, got[i])
				}
			case err != nil:
				return err
			case got[i] == nil || string(got[i]) != string(v):
				return fmt.Errorf("GetMany %q = %q, Get %q", k, got[i], v)
			}
		}
		return nil
	}
	view(t, s, check)
	update(t, s, func(ctx context.Context, tx billing.Tx) error {
		if err := tx.Put(ctx, tableA, []byte("new"), []byte("5")); err != nil {
			return err
		}
		if err := tx.Delete(ctx, tableA, []byte("gone")); err != nil {
			return err
		}
		return check(ctx, tx)
	})
}

// testTake: a backend whose Tx offers billing.TakeTx deletes with Take
// exactly the rows of the range (a row written earlier in the same
// transaction included, the other table's rows and the rows beside the
// range kept) and hands them over in key order; Get in the same
// transaction finds them gone; a backend without it passes trivially.
func testTake(t *testing.T, s billing.Store) {
	offered := false
	update(t, s, func(_ context.Context, tx billing.Tx) error {
		_, offered = tx.(billing.TakeTx)
		return nil
	})
	if !offered {
		return
	}
	put(t, s, tableA, "a", "1", "b1", "2", "b2", "", "c", "4")
	put(t, s, tableB, "b1", "other table")
	var got []string
	update(t, s, func(ctx context.Context, tx billing.Tx) error {
		tk := tx.(billing.TakeTx)
		if err := tx.Put(ctx, tableA, []byte("b3"), []byte("5")); err != nil {
			return err
		}
		err := tk.Take(ctx, tableA, billing.Range{Prefix: []byte("b")}, func(k, v []byte) error {
			got = append(got, string(k)+"="+string(v))
			return nil
		})
		if err != nil {
			return err
		}
		if _, err := tx.Get(ctx, tableA, []byte("b1")); !errors.Is(err, billing.ErrNotFound) {
			return fmt.Errorf("Get of a taken key: %v, want ErrNotFound", err)
		}
		return nil
	})
	if want := []string{"b1=2", "b2=", "b3=5"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Take handed %q, want %q", got, want)
	}
	view(t, s, func(ctx context.Context, tx billing.Tx) error {
		var left []string
		err := tx.Scan(ctx, tableA, billing.Range{}, func(k, _ []byte) error {
			left = append(left, string(k))
			return nil
		})
		if fmt.Sprint(left) != "[a c]" {
			t.Errorf("after Take, table A holds %q, want [a c]", left)
		}
		if v, err := tx.Get(ctx, tableB, []byte("b1")); err != nil || string(v) != "other table" {
			t.Errorf("Take in table A removed table B's row: %q, %v", v, err)
		}
		return err
	})
}

// testPrefetch: on a backend whose Tx offers billing.MultiGetTx, Get
// answers after a Prefetch of keys of two tables (present, missing, empty,
// written or deleted before by the same transaction, written after) what
// it answers without one, and Scan of a prefix or a range prefetched what
// it answers without (with the writes before and after the Prefetch).
func testPrefetch(t *testing.T, s billing.Store) {
	put(t, s, tableA, "a", "1", "b", "", "gone", "4")
	put(t, s, tableB, "a", "other table")
	tks := []billing.TableKey{{Table: tableA, Key: []byte("a")}, {Table: tableB, Key: []byte("a")}, {Table: tableA, Key: []byte("b")},
		{Table: tableA, Key: []byte("missing")}, {Table: tableB, Key: []byte("b")}, {Table: tableA, Key: []byte("gone")},
		{Table: tableA, Key: []byte("new")}, {Table: tableA, Key: []byte("a")}, {Table: tableA, Key: []byte("later")},
		{Table: tableA, Prefix: []byte("l")}, {Table: tableA, Prefix: []byte("g")}, {Table: tableB, Prefix: []byte("a")},
		{Table: tableA, Start: []byte("a"), End: []byte("h"), Expect: 3}}
	want := map[string]string{"storagetest_a/a": "1", "storagetest_b/a": "other table", "storagetest_a/b": "", "storagetest_a/new": "5", "storagetest_a/later": "6"}
	update(t, s, func(ctx context.Context, tx billing.Tx) error {
		m, ok := tx.(billing.MultiGetTx)
		if !ok {
			return nil
		}
		if err := tx.Put(ctx, tableA, []byte("new"), []byte("5")); err != nil {
			return err
		}
		if err := tx.Delete(ctx, tableA, []byte("gone")); err != nil {
			return err
		}
		if err := m.Prefetch(ctx, tks); err != nil {
			return fmt.Errorf("Prefetch: %w", err)
		}
		if err := tx.Put(ctx, tableA, []byte("later"), []byte("6")); err != nil {
			return err
		}
		for r, want := range map[*billing.Range]string{{Prefix: []byte("l")}: "later=6", {Prefix: []byte("g")}: "", {Prefix: []byte("a")}: "a=1",
			{Start: []byte("a"), End: []byte("h")}: "a=1 b=", {Start: []byte("a"), End: []byte("h"), Reverse: true}: "b= a=1"} {
			if got, err := scanText(ctx, tx, tableA, *r); err != nil || got != want {
				return fmt.Errorf("scan of %+v after Prefetch = %q, %v; want %q", *r, got, err, want)
			}
		}
		for _, tk := range tks {
			if tk.IsRange() {
				continue
			}
			v, err := tx.Get(ctx, tk.Table, tk.Key)
			w, ok := want[string(tk.Table)+"/"+string(tk.Key)]
			switch {
			case errors.Is(err, billing.ErrNotFound) && !ok:
			case err != nil:
				return fmt.Errorf("Get %s %q after Prefetch: %w (want %q)", tk.Table, tk.Key, err, w)
			case !ok || string(v) != w:
				return fmt.Errorf("Get %s %q after Prefetch = %q, want %q (found: %v)", tk.Table, tk.Key, v, w, ok)
			}
		}
		return nil
	})
}

// scanText is what a Scan of r in tx visits: "key=value" separated by
// spaces.
func scanText(ctx context.Context, tx billing.Tx, table billing.Table, r billing.Range) (string, error) {
	rows, err := scanTx(ctx, tx, table, r)
	var got []string
	for _, r := range rows {
		got = append(got, r.K+"="+r.V)
	}
	return strings.Join(got, " "), err
}

func testEmptyValue(t *testing.T, s billing.Store) {
	put(t, s, tableA, "empty", "")
	wantValue(t, s, tableA, "empty", "")
	update(t, s, func(ctx context.Context, tx billing.Tx) error {
		if err := tx.Put(ctx, tableA, []byte("empty too"), nil); err != nil {
			return err
		}
		for _, k := range []string{"empty", "empty too"} {
			if v, err := tx.Get(ctx, tableA, []byte(k)); err != nil || v == nil || len(v) != 0 {
				return fmt.Errorf("Get %q in the writing transaction = %q, %v; want an empty value", k, v, err)
			}
		}
		return nil
	})
	wantValue(t, s, tableA, "empty too", "")
}

func testGetMissing(t *testing.T, s billing.Store) {
	put(t, s, tableA, "present", "v")
	view(t, s, func(ctx context.Context, tx billing.Tx) error {
		if _, err := tx.Get(ctx, tableA, []byte("absent")); !errors.Is(err, billing.ErrNotFound) {
			t.Errorf("Get absent key: err = %v, want ErrNotFound", err)
		}
		if _, err := tx.Get(ctx, "storagetest_never_written", []byte("present")); !errors.Is(err, billing.ErrNotFound) {
			t.Errorf("Get on a table never written: err = %v, want ErrNotFound", err)
		}
		return nil
	})
}

func testPutReplaces(t *testing.T, s billing.Store) {
	put(t, s, tableA, "k", "first")
	put(t, s, tableA, "k", "second")
	wantValue(t, s, tableA, "k", "second")
	if diff := cmp.Diff([]kv{{"k", "second"}}, scan(t, s, tableA, billing.Range{})); diff != "" {
		t.Errorf("scan after replace (-want +got):\n%s", diff)
	}
}

func testInsertNew(t *testing.T, s billing.Store) {
	update(t, s, func(ctx context.Context, tx billing.Tx) error {
		return tx.Insert(ctx, tableA, []byte("k"), []byte("v"))
	})
	wantValue(t, s, tableA, "k", "v")
}

func testInsertConflict(t *testing.T, s billing.Store) {
	put(t, s, tableA, "k", "old")
	err := s.Update(context.Background(), func(tx billing.Tx) error {
		return tx.Insert(context.Background(), tableA, []byte("k"), []byte("new"))
	})
	if !errors.Is(err, billing.ErrConflict) {
		t.Fatalf("Insert existing key: err = %v, want ErrConflict", err)
	}
	// The conflict is an ordinary error the transaction can survive.
	update(t, s, func(ctx context.Context, tx billing.Tx) error {
		if err := tx.Insert(ctx, tableA, []byte("k"), []byte("new")); !errors.Is(err, billing.ErrConflict) {
			return fmt.Errorf("second Insert: err = %v, want ErrConflict", err)
		}
		return tx.Put(ctx, tableA, []byte("after"), []byte("conflict"))
	})
	wantValue(t, s, tableA, "k", "old")
	wantValue(t, s, tableA, "after", "conflict")
}

func testDelete(t *testing.T, s billing.Store) {
	put(t, s, tableA, "a", "1", "b", "2")
	update(t, s, func(ctx context.Context, tx billing.Tx) error {
		return tx.Delete(ctx, tableA, []byte("a"))
	})
	wantMissing(t, s, tableA, "a")
	if diff := cmp.Diff([]kv{{"b", "2"}}, scan(t, s, tableA, billing.Range{})); diff != "" {
		t.Errorf("scan after delete (-want +got):\n%s", diff)
	}
}

func testDeleteMissing(t *testing.T, s billing.Store) {
	put(t, s, tableA, "present", "v")
	update(t, s, func(ctx context.Context, tx billing.Tx) error {
		if err := tx.Delete(ctx, tableA, []byte("absent")); !errors.Is(err, billing.ErrNotFound) {
			t.Errorf("Delete absent key: err = %v, want ErrNotFound", err)
		}
		if err := tx.Delete(ctx, "storagetest_never_written", []byte("present")); !errors.Is(err, billing.ErrNotFound) {
			t.Errorf("Delete on a table never written: err = %v, want ErrNotFound", err)
		}
		return nil
	})
	wantValue(t, s, tableA, "present", "v")
}

func testIncrement(t *testing.T, s billing.Store) {
	var got []uint64
	update(t, s, func(ctx context.Context, tx billing.Tx) error {
		for _, key := range []string{"x", "x", "y", "x"} {
			n, err := tx.Increment(ctx, tableA, []byte(key))
			if err != nil {
				return err
			}
			got = append(got, n)
		}
		return nil
	})
	got = append(got, increment(t, s, tableA, "y"), increment(t, s, tableA, "x"))
	if diff := cmp.Diff([]uint64{1, 2, 1, 3, 2, 4}, got); diff != "" {
		t.Errorf("counter values (-want +got):\n%s", diff)
	}
}

// writeEverything makes one write of every kind over the state seeded by
// seedEverything.
func writeEverything(ctx context.Context, tx billing.Tx) error {
	if err := tx.Put(ctx, tableA, []byte("kept"), []byte("changed")); err != nil {
		return err
	}
	if err := tx.Put(ctx, tableA, []byte("new"), []byte("v")); err != nil {
		return err
	}
	if err := tx.Insert(ctx, tableB, []byte("inserted"), []byte("v")); err != nil {
		return err
	}
	if err := tx.Delete(ctx, tableA, []byte("deleted")); err != nil {
		return err
	}
	if n, err := tx.Increment(ctx, tableA, []byte("counter")); err != nil || n != 2 {
		return fmt.Errorf("Increment existing counter = %d, %v; want 2", n, err)
	}
	if n, err := tx.Increment(ctx, tableA, []byte("new counter")); err != nil || n != 1 {
		return fmt.Errorf("Increment new counter = %d, %v; want 1", n, err)
	}
	return nil
}

func seedEverything(tb testing.TB, s billing.Store) {
	tb.Helper()
	put(tb, s, tableA, "kept", "original", "deleted", "still here")
	if n := increment(tb, s, tableA, "counter"); n != 1 {
		tb.Fatalf("first Increment = %d, want 1", n)
	}
}

// wantSeedOnly checks that nothing but seedEverything's writes is visible.
func wantSeedOnly(tb testing.TB, s billing.Store) {
	tb.Helper()
	wantValue(tb, s, tableA, "kept", "original")
	wantValue(tb, s, tableA, "deleted", "still here")
	wantMissing(tb, s, tableA, "new")
	wantMissing(tb, s, tableA, "new counter")
	if got := scan(tb, s, tableB, billing.Range{}); len(got) != 0 {
		tb.Errorf("table B after rollback = %v, want empty", got)
	}
	if n := increment(tb, s, tableA, "counter"); n != 2 {
		tb.Errorf("Increment after rollback = %d, want 2 (the rolled back value is reused: no gap)", n)
	}
	if n := increment(tb, s, tableA, "new counter"); n != 1 {
		tb.Errorf("Increment of a rolled back new counter = %d, want 1", n)
	}
}

func testFailedUpdate(t *testing.T, s billing.Store) {
	seedEverything(t, s)
	err := s.Update(context.Background(), func(tx billing.Tx) error {
		if err := writeEverything(context.Background(), tx); err != nil {
			t.Errorf("writes before the failure: %v", err)
		}
		return errBoom
	})
	if err != errBoom { // unchanged, not merely wrapped
		t.Fatalf("Update returned %v, want fn's error unchanged (%v)", err, errBoom)
	}
	wantSeedOnly(t, s)
}

func testPanicUpdate(t *testing.T, s billing.Store) {
	seedEverything(t, s)
	recovered := func() (r any) {
		defer func() { r = recover() }()
		_ = s.Update(context.Background(), func(tx billing.Tx) error {
			if err := writeEverything(context.Background(), tx); err != nil {
				t.Errorf("writes before the panic: %v", err)
			}
			panic(errBoom)
		})
		return nil
	}()
	if recovered != errBoom {
		t.Fatalf("recovered %v, want the panic to reach the caller with its value %v", recovered, errBoom)
	}
	wantSeedOnly(t, s)
}

func testViewReadOnly(t *testing.T, s billing.Store) {
	put(t, s, tableA, "k", "v")
	view(t, s, func(ctx context.Context, tx billing.Tx) error {
		writes := map[string]error{
			"Put":       tx.Put(ctx, tableA, []byte("k"), []byte("put")),
			"Put new":   tx.Put(ctx, tableA, []byte("new"), []byte("put")),
			"Insert":    tx.Insert(ctx, tableA, []byte("inserted"), []byte("v")),
			"Delete":    tx.Delete(ctx, tableA, []byte("k")),
			"Increment": func() error { _, err := tx.Increment(ctx, tableA, []byte("c")); return err }(),
		}
		for name, err := range writes {
			if !errors.Is(err, billing.ErrReadOnly) {
				t.Errorf("%s in View: err = %v, want ErrReadOnly", name, err)
			}
		}
		return nil
	})
	if diff := cmp.Diff([]kv{{"k", "v"}}, scan(t, s, tableA, billing.Range{})); diff != "" {
		t.Errorf("table after writes in View (-want +got):\n%s", diff)
	}
}

// orderKeys are inserted out of order and include the byte extremes.
var orderKeys = []string{"b", "a\xff", "\xff", "a", "\x00", "ab", "a\x00", "b\x00\x00"}

func sortedOrderKeys() []kv {
	var want []kv
	for _, k := range orderKeys {
		want = append(want, kv{k, "v:" + k})
	}
	slices.SortFunc(want, func(a, b kv) int { return bytes.Compare([]byte(a.K), []byte(b.K)) })
	return want
}

func putOrderKeys(tb testing.TB, s billing.Store) {
	tb.Helper()
	var pairs []string
	for _, k := range orderKeys {
		pairs = append(pairs, k, "v:"+k)
	}
	put(tb, s, tableA, pairs...)
}

func testScanAscending(t *testing.T, s billing.Store) {
	putOrderKeys(t, s)
	if diff := cmp.Diff(sortedOrderKeys(), scan(t, s, tableA, billing.Range{})); diff != "" {
		t.Errorf("ascending scan (-want +got):\n%s", diff)
	}
	if got := scan(t, s, "storagetest_never_written", billing.Range{}); len(got) != 0 {
		t.Errorf("scan of a table never written = %v, want empty", got)
	}
}

func testScanReverse(t *testing.T, s billing.Store) {
	putOrderKeys(t, s)
	want := sortedOrderKeys()
	slices.Reverse(want)
	if diff := cmp.Diff(want, scan(t, s, tableA, billing.Range{Reverse: true})); diff != "" {
		t.Errorf("reverse scan (-want +got):\n%s", diff)
	}
}

// rangeKeys, in ascending byte order.
var rangeKeys = []string{
	"\x00", "\x00\x00",
	"a", "a\x00", "a\x00\x00", "a\x00b", "ab", "a\xff", "a\xff\xff",
	"b", "b\x00",
	"\xff", "\xff\x00", "\xff\xff", "\xff\xff\x00", "\xff\xff\xff",
}

var rangeCases = []struct {
	name string
	r    billing.Range
	want []string
}{
	{"Everything", billing.Range{}, rangeKeys},
	{"Prefix", billing.Range{Prefix: []byte("a")},
		[]string{"a", "a\x00", "a\x00\x00", "a\x00b", "ab", "a\xff", "a\xff\xff"}},
	{"PrefixEndingIn00", billing.Range{Prefix: []byte("a\x00")},
		[]string{"a\x00", "a\x00\x00", "a\x00b"}},
	{"PrefixEndingInFF", billing.Range{Prefix: []byte("a\xff")},
		[]string{"a\xff", "a\xff\xff"}},
	{"Prefix00", billing.Range{Prefix: []byte("\x00")},
		[]string{"\x00", "\x00\x00"}},
	{"PrefixFF", billing.Range{Prefix: []byte("\xff")},
		[]string{"\xff", "\xff\x00", "\xff\xff", "\xff\xff\x00", "\xff\xff\xff"}},
	{"PrefixFFFFHasNoPrefixEnd", billing.Range{Prefix: []byte("\xff\xff")},
		[]string{"\xff\xff", "\xff\xff\x00", "\xff\xff\xff"}},
	{"PrefixMatchingNothing", billing.Range{Prefix: []byte("c")}, nil},
	{"StartOnly", billing.Range{Start: []byte("a\xff")},
		[]string{"a\xff", "a\xff\xff", "b", "b\x00", "\xff", "\xff\x00", "\xff\xff", "\xff\xff\x00", "\xff\xff\xff"}},
	{"StartBetweenKeys", billing.Range{Start: []byte("b\x00\x00")},
		[]string{"\xff", "\xff\x00", "\xff\xff", "\xff\xff\x00", "\xff\xff\xff"}},
	{"StartAfterEveryKey", billing.Range{Start: []byte("\xff\xff\xff\x00")}, nil},
	{"EndOnly", billing.Range{End: []byte("a\x00")},
		[]string{"\x00", "\x00\x00", "a"}},
	{"EndIsExclusive", billing.Range{End: []byte("\x00\x00")}, []string{"\x00"}},
	{"StartAndEndWithoutPrefix", billing.Range{Start: []byte("ab"), End: []byte("b\x00")},
		[]string{"ab", "a\xff", "a\xff\xff", "b"}},
	{"StartEqualsEnd", billing.Range{Start: []byte("ab"), End: []byte("ab")}, nil},
	{"StartAfterEnd", billing.Range{Start: []byte("b"), End: []byte("a")}, nil},
	{"EmptyEnd", billing.Range{End: []byte{}}, nil},
	{"PrefixAndStart", billing.Range{Prefix: []byte("a"), Start: []byte("a\x00b")},
		[]string{"a\x00b", "ab", "a\xff", "a\xff\xff"}},
	{"PrefixAndEnd", billing.Range{Prefix: []byte("a"), End: []byte("a\xff")},
		[]string{"a", "a\x00", "a\x00\x00", "a\x00b", "ab"}},
	{"PrefixAndStartAndEnd", billing.Range{Prefix: []byte("a"), Start: []byte("a\x00"), End: []byte("ab")},
		[]string{"a\x00", "a\x00\x00", "a\x00b"}},
	{"StartBeforePrefix", billing.Range{Prefix: []byte("b"), Start: []byte("a")},
		[]string{"b", "b\x00"}},
	{"EndAfterPrefix", billing.Range{Prefix: []byte("a\x00"), End: []byte("b")},
		[]string{"a\x00", "a\x00\x00", "a\x00b"}},
	{"EndIsPrefixEnd", billing.Range{Prefix: []byte("a"), End: billing.PrefixEnd([]byte("a"))},
		[]string{"a", "a\x00", "a\x00\x00", "a\x00b", "ab", "a\xff", "a\xff\xff"}},
	{"EndIsPrefixEndOfFF", billing.Range{Prefix: []byte("a\xff"), End: billing.PrefixEnd([]byte("a\xff"))},
		[]string{"a\xff", "a\xff\xff"}},
	{"EndIsNilPrefixEnd", billing.Range{Prefix: []byte("\xff\xff"), End: billing.PrefixEnd([]byte("\xff\xff"))},
		[]string{"\xff\xff", "\xff\xff\x00", "\xff\xff\xff"}},
	{"StartAfterPrefix", billing.Range{Prefix: []byte("a"), Start: []byte("b")}, nil},
}

func testScanRanges(t *testing.T, s billing.Store) {
	var pairs []string
	for _, k := range rangeKeys {
		pairs = append(pairs, k, "v:"+k)
	}
	put(t, s, tableA, pairs...)
	// Another table with keys around the edges must never leak in.
	put(t, s, tableB, "a\x00", "other", "\xff\xff\xff\xff", "other")

	for _, c := range rangeCases {
		// The table is checked against Range.Contains, so it documents the
		// contract and cannot drift from it.
		var byContains []string
		for _, k := range rangeKeys {
			if c.r.Contains([]byte(k)) {
				byContains = append(byContains, k)
			}
		}
		if diff := cmp.Diff(c.want, byContains); diff != "" {
			t.Fatalf("%s: test table disagrees with Range.Contains (-table +Contains):\n%s", c.name, diff)
		}
		var want []kv
		for _, k := range c.want {
			want = append(want, kv{k, "v:" + k})
		}
		if diff := cmp.Diff(want, scan(t, s, tableA, c.r)); diff != "" {
			t.Errorf("%s: Scan(%s) (-want +got):\n%s", c.name, describe(c.r), diff)
		}
		rev := c.r
		rev.Reverse = true
		slices.Reverse(want)
		if diff := cmp.Diff(want, scan(t, s, tableA, rev)); diff != "" {
			t.Errorf("%s: reverse Scan(%s) (-want +got):\n%s", c.name, describe(c.r), diff)
		}
	}
}

// describe prints a Range with its keys quoted, for failure messages.
func describe(r billing.Range) string {
	q := func(b []byte) string {
		if b == nil {
			return "nil"
		}
		return fmt.Sprintf("%+q", b)
	}
	return fmt.Sprintf("Prefix:%s Start:%s End:%s Reverse:%v", q(r.Prefix), q(r.Start), q(r.End), r.Reverse)
}

func testScanStop(t *testing.T, s billing.Store) {
	put(t, s, tableA, "a", "1", "b", "2", "c", "3", "d", "4")
	for _, reverse := range []bool{false, true} {
		var got []string
		view(t, s, func(ctx context.Context, tx billing.Tx) error {
			return tx.Scan(ctx, tableA, billing.Range{Reverse: reverse}, func(k, _ []byte) error {
				got = append(got, string(k))
				if len(got) == 2 {
					return fmt.Errorf("wrapped: %w", billing.ErrStopScan)
				}
				return nil
			})
		})
		want := []string{"a", "b"}
		if reverse {
			want = []string{"d", "c"}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("keys seen before ErrStopScan, reverse=%v (-want +got):\n%s", reverse, diff)
		}
	}
}

// testScanExpect: Range.Expect is a hint of how many keys the caller reads;
// a scan that reads more, or fewer, visits exactly what it would without
// it, in both directions and within bounds.
func testScanExpect(t *testing.T, s billing.Store) {
	var pairs []string
	for i := range 150 {
		pairs = append(pairs, fmt.Sprintf("k%03d", i), "v")
	}
	put(t, s, tableA, pairs...)
	for _, r := range []billing.Range{{}, {Reverse: true}, {Start: []byte("k010"), End: []byte("k140")}, {Start: []byte("k010"), End: []byte("k140"), Reverse: true}} {
		var want []string
		view(t, s, func(ctx context.Context, tx billing.Tx) error {
			return tx.Scan(ctx, tableA, r, func(k, _ []byte) error { want = append(want, string(k)); return nil })
		})
		for _, expect := range []int{1, 2, 100, 1000} {
			var got []string
			r.Expect = expect
			view(t, s, func(ctx context.Context, tx billing.Tx) error {
				return tx.Scan(ctx, tableA, r, func(k, _ []byte) error { got = append(got, string(k)); return nil })
			})
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("scan of %+v (-without Expect +with):\n%s", r, diff)
			}
		}
	}
}

func testScanError(t *testing.T, s billing.Store) {
	put(t, s, tableA, "a", "1", "b", "2", "c", "3")
	calls := 0
	err := s.View(context.Background(), func(tx billing.Tx) error {
		return tx.Scan(context.Background(), tableA, billing.Range{}, func(_, _ []byte) error {
			calls++
			return errBoom
		})
	})
	if !errors.Is(err, errBoom) {
		t.Errorf("View: err = %v, want the callback's error", err)
	}
	if calls != 1 {
		t.Errorf("callback ran %d times, want 1: the error must end the scan", calls)
	}
}

// putFiller writes n 1KiB values under prefix: enough to move a backend
// past any small-table representation, or to make it grow and remap.
func putFiller(tb testing.TB, s billing.Store, prefix string, n int) {
	tb.Helper()
	big := bytes.Repeat([]byte("x"), 1024)
	update(tb, s, func(ctx context.Context, tx billing.Tx) error {
		for i := range n {
			if err := tx.Put(ctx, tableA, fmt.Appendf(nil, "%s%05d", prefix, i), big); err != nil {
				return err
			}
		}
		return nil
	})
}

func testCallerOwned(t *testing.T, s billing.Store) {
	putFiller(t, s, "filler/", 1024)
	key := []byte("key1")
	val := []byte("value1")
	update(t, s, func(ctx context.Context, tx billing.Tx) error {
		if err := tx.Put(ctx, tableA, key, val); err != nil {
			return err
		}
		// The caller reuses its buffers within the same transaction...
		copy(key, "key2")
		copy(val, "value2")
		return tx.Put(ctx, tableA, key, val)
	})
	// ...and after it.
	copy(key, "XXXX")
	copy(val, "XXXXXX")

	var got []kv
	view(t, s, func(ctx context.Context, tx billing.Tx) error {
		for _, k := range []string{"key1", "key2"} {
			v, err := tx.Get(ctx, tableA, []byte(k))
			if err != nil {
				return err
			}
			got = append(got, kv{k, string(v)})
			v[0] = 'X' // the caller owns v: this must not reach the store
		}
		return nil
	})
	want := []kv{{"key1", "value1"}, {"key2", "value2"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("Get after buffer reuse (-want +got):\n%s", diff)
	}

	// A value returned by Get outlives its transaction, and neither later
	// writes nor the store's own housekeeping change it. (Scan's slices
	// are valid only during the callback: the port allows zero-copy scans.)
	var keptGet []byte
	view(t, s, func(ctx context.Context, tx billing.Tx) error {
		var err error
		keptGet, err = tx.Get(ctx, tableA, []byte("key1"))
		return err
	})
	// Enough writes to grow, remap or reorganise the store.
	putFiller(t, s, "more filler/", 8192)
	update(t, s, func(ctx context.Context, tx billing.Tx) error {
		if err := tx.Put(ctx, tableA, []byte("key1"), []byte("rewritten")); err != nil {
			return err
		}
		return tx.Delete(ctx, tableA, []byte("key2"))
	})
	if string(keptGet) != "value1" {
		t.Errorf("value kept from Get = %q, want %q", keptGet, "value1")
	}
	wantValue(t, s, tableA, "key1", "rewritten")
	scanned := scan(t, s, tableA, billing.Range{Prefix: []byte("key")})
	if diff := cmp.Diff([]kv{{"key1", "rewritten"}}, scanned); diff != "" {
		t.Errorf("scan after rewrite (-want +got):\n%s", diff)
	}
}

func testScanOwnWrites(t *testing.T, s billing.Store) {
	put(t, s, tableA, "a", "old", "b", "doomed", "c", "old")
	var got, gotReverse []kv
	update(t, s, func(ctx context.Context, tx billing.Tx) error {
		if err := tx.Put(ctx, tableA, []byte("a"), []byte("new")); err != nil {
			return err
		}
		if err := tx.Delete(ctx, tableA, []byte("b")); err != nil {
			return err
		}
		if err := tx.Insert(ctx, tableA, []byte("bb"), []byte("inserted")); err != nil {
			return err
		}
		if _, err := tx.Increment(ctx, tableA, []byte("d")); err != nil {
			return err
		}
		if v, err := tx.Get(ctx, tableA, []byte("bb")); err != nil || string(v) != "inserted" {
			return fmt.Errorf("Get of own Insert = %q, %v", v, err)
		}
		if _, err := tx.Get(ctx, tableA, []byte("b")); !errors.Is(err, billing.ErrNotFound) {
			return fmt.Errorf("Get of own Delete: err = %v, want ErrNotFound", err)
		}
		var err error
		if got, err = scanTx(ctx, tx, tableA, billing.Range{}); err != nil {
			return err
		}
		gotReverse, err = scanTx(ctx, tx, tableA, billing.Range{Reverse: true})
		return err
	})
	// d is the counter: its value is opaque to the port, so only its key
	// is compared.
	want := []kv{{"a", "new"}, {"bb", "inserted"}, {"c", "old"}, {"d", ""}}
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b kv) bool {
		return a.K == b.K && (a.K == "d" || a.V == b.V)
	})); diff != "" {
		t.Errorf("scan inside Update (-want +got):\n%s", diff)
	}
	var keys []string
	for _, p := range gotReverse {
		keys = append(keys, p.K)
	}
	if diff := cmp.Diff([]string{"d", "c", "bb", "a"}, keys); diff != "" {
		t.Errorf("reverse scan inside Update (-want +got):\n%s", diff)
	}
}

// testScansBetweenWrites: in one Update, scans of sub-ranges, forward and
// reverse, see the stored rows merged with every write before them (a put
// of a new key, a replaced value, a Delete, an Insert after a Get found the
// key missing, a Delete then a Put of one key, a Put then a Delete of
// another), the same scan repeated sees the writes made between the two,
// and a scan stopped early visits a prefix of the full one. A backend may
// keep the writes until the commit (pgstore does): what it answers must not
// show it.
func testScansBetweenWrites(t *testing.T, s billing.Store) {
	put(t, s, tableA, "p/a", "1", "p/c", "3", "p/e", "5", "p/g", "7", "q/a", "other prefix")
	keysOf := func(rows []kv) string {
		var out []string
		for _, r := range rows {
			out = append(out, r.K+"="+r.V)
		}
		return strings.Join(out, " ")
	}
	update(t, s, func(ctx context.Context, tx billing.Tx) error {
		pre := billing.Range{Prefix: []byte("p/")}
		steps := scanSteps(ctx, tx)
		for i, st := range steps {
			if st.write != nil {
				if err := st.write(); err != nil {
					return fmt.Errorf("step %d: %w", i, err)
				}
			}
			got, err := scanTx(ctx, tx, tableA, st.r)
			if err != nil {
				return err
			}
			if g := keysOf(got); g != st.want {
				return fmt.Errorf("step %d: scan %+v = %q, want %q", i, st.r, g, st.want)
			}
		}
		var first []string
		err := tx.Scan(ctx, tableA, pre, func(k, v []byte) error {
			first = append(first, string(k))
			if len(first) == 2 {
				return billing.ErrStopScan
			}
			return nil
		})
		if err != nil || strings.Join(first, " ") != "p/a p/b" {
			return fmt.Errorf("stopped scan: %q, %v", first, err)
		}
		return nil
	})
	got := scan(t, s, tableA, billing.Range{Prefix: []byte("p/")})
	if diff := cmp.Diff([]kv{{"p/a", "11"}, {"p/b", "2"}, {"p/c", "33"}, {"p/d", "4"}, {"p/g", "7"}}, got); diff != "" {
		t.Errorf("after the commit (-want +got):\n%s", diff)
	}
}

// scanStep is a write (nil: none), then a scan of r that must visit want
// (key=value, in order), of testScansBetweenWrites.
type scanStep struct {
	write func() error
	r     billing.Range
	want  string
}

// scanSteps are the steps of testScansBetweenWrites, in tx, over the rows
// p/a=1 p/c=3 p/e=5 p/g=7 (and q/a).
func scanSteps(ctx context.Context, tx billing.Tx) []scanStep {
	pre := billing.Range{Prefix: []byte("p/")}
	return []scanStep{
		{nil, pre, "p/a=1 p/c=3 p/e=5 p/g=7"},
		{nil, pre, "p/a=1 p/c=3 p/e=5 p/g=7"},
		{func() error { return tx.Put(ctx, tableA, []byte("p/b"), []byte("2")) }, pre, "p/a=1 p/b=2 p/c=3 p/e=5 p/g=7"},
		{func() error { return tx.Put(ctx, tableA, []byte("p/c"), []byte("33")) }, pre, "p/a=1 p/b=2 p/c=33 p/e=5 p/g=7"},
		{func() error { return tx.Delete(ctx, tableA, []byte("p/e")) }, pre, "p/a=1 p/b=2 p/c=33 p/g=7"},
		{func() error {
			if _, err := tx.Get(ctx, tableA, []byte("p/d")); !errors.Is(err, billing.ErrNotFound) {
				return fmt.Errorf("Get p/d: %v, want ErrNotFound", err)
			}
			return tx.Insert(ctx, tableA, []byte("p/d"), []byte("4"))
		}, pre, "p/a=1 p/b=2 p/c=33 p/d=4 p/g=7"},
		{func() error {
			if err := tx.Insert(ctx, tableA, []byte("p/d"), []byte("x")); !errors.Is(err, billing.ErrConflict) {
				return fmt.Errorf("Insert of an own Insert: %v, want ErrConflict", err)
			}
			if err := tx.Delete(ctx, tableA, []byte("p/e")); !errors.Is(err, billing.ErrNotFound) {
				return fmt.Errorf("Delete of an own Delete: %v, want ErrNotFound", err)
			}
			if err := tx.Delete(ctx, tableA, []byte("p/a")); err != nil {
				return err
			}
			if err := tx.Put(ctx, tableA, []byte("p/a"), []byte("11")); err != nil {
				return err
			}
			if err := tx.Put(ctx, tableA, []byte("p/f"), []byte("6")); err != nil {
				return err
			}
			return tx.Delete(ctx, tableA, []byte("p/f"))
		}, pre, "p/a=11 p/b=2 p/c=33 p/d=4 p/g=7"},
		{nil, billing.Range{Prefix: []byte("p/"), Reverse: true}, "p/g=7 p/d=4 p/c=33 p/b=2 p/a=11"},
		{nil, billing.Range{Prefix: []byte("p/"), Start: []byte("p/b"), End: []byte("p/g")}, "p/b=2 p/c=33 p/d=4"},
		{nil, billing.Range{Prefix: []byte("p/"), Start: []byte("p/b"), End: []byte("p/g"), Reverse: true}, "p/d=4 p/c=33 p/b=2"},
		{nil, billing.Range{Start: []byte("p/f")}, "p/g=7 q/a=other prefix"},
	}
}

func testAccountPrefixes(t *testing.T, s billing.Store) {
	put(t, s, tableA,
		"accA/1", "a1", "accA/2", "a2",
		"accA2/1", "a2-1",
		"accB/1", "b1",
		"accA", "no separator")
	// A bare account id is a prefix of a longer one: "accA" also selects
	// account "accA2". This is why keys put a separator after the id.
	bare := scan(t, s, tableA, billing.Range{Prefix: []byte("accA")})
	if !slices.Contains(bare, kv{"accA2/1", "a2-1"}) {
		t.Errorf("Prefix %q = %v: expected it to (wrongly) reach account accA2", "accA", bare)
	}
	want := []kv{{"accA/1", "a1"}, {"accA/2", "a2"}}
	sep := []byte("accA/")
	for _, r := range []billing.Range{
		{Prefix: sep},
		{Prefix: sep, End: billing.PrefixEnd(sep)},
		{Start: sep, End: billing.PrefixEnd(sep)},
	} {
		if diff := cmp.Diff(want, scan(t, s, tableA, r)); diff != "" {
			t.Errorf("Scan(%s) (-want +got):\n%s", describe(r), diff)
		}
		r.Reverse = true
		if diff := cmp.Diff([]kv{want[1], want[0]}, scan(t, s, tableA, r)); diff != "" {
			t.Errorf("Scan(%s) (-want +got):\n%s", describe(r), diff)
		}
	}
	if diff := cmp.Diff([]kv{{"accB/1", "b1"}}, scan(t, s, tableA, billing.Range{Prefix: []byte("accB/")})); diff != "" {
		t.Errorf("account B (-want +got):\n%s", diff)
	}
}

func testCancelled(t *testing.T, s billing.Store) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ran := false
	write := func(tx billing.Tx) error {
		ran = true
		return tx.Put(context.Background(), tableA, []byte("k"), []byte("v"))
	}
	if err := s.View(ctx, func(billing.Tx) error { ran = true; return nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("View: err = %v, want context.Canceled", err)
	}
	if err := s.Update(ctx, write); !errors.Is(err, context.Canceled) {
		t.Errorf("Update: err = %v, want context.Canceled", err)
	}
	if err := s.Batch(ctx, write); !errors.Is(err, context.Canceled) {
		t.Errorf("Batch: err = %v, want context.Canceled", err)
	}
	if ran {
		t.Errorf("a transaction function ran with a cancelled context")
	}
	wantMissing(t, s, tableA, "k")

	// Tx methods check the context they are given, too.
	put(t, s, tableA, "existing", "v")
	err := s.Update(context.Background(), func(tx billing.Tx) error {
		errs := map[string]error{
			"Put":    tx.Put(ctx, tableA, []byte("k"), []byte("v")),
			"Insert": tx.Insert(ctx, tableA, []byte("k"), []byte("v")),
			"Delete": tx.Delete(ctx, tableA, []byte("existing")),
			"Scan": tx.Scan(ctx, tableA, billing.Range{}, func(_, _ []byte) error {
				return nil
			}),
		}
		_, errs["Get"] = tx.Get(ctx, tableA, []byte("existing"))
		_, errs["Increment"] = tx.Increment(ctx, tableA, []byte("c"))
		for name, err := range errs {
			if !errors.Is(err, context.Canceled) {
				t.Errorf("%s with a cancelled context: err = %v, want context.Canceled", name, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Update: %v", err)
	}
	if diff := cmp.Diff([]kv{{"existing", "v"}}, scan(t, s, tableA, billing.Range{})); diff != "" {
		t.Errorf("table after cancelled writes (-want +got):\n%s", diff)
	}
}

func testClosed(t *testing.T, s billing.Store) {
	put(t, s, tableA, "k", "v")
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	ctx := context.Background()
	noop := func(billing.Tx) error { return nil }
	if err := s.View(ctx, noop); !errors.Is(err, billing.ErrClosed) {
		t.Errorf("View after Close: err = %v, want ErrClosed", err)
	}
	if err := s.Update(ctx, noop); !errors.Is(err, billing.ErrClosed) {
		t.Errorf("Update after Close: err = %v, want ErrClosed", err)
	}
	if err := s.Batch(ctx, noop); !errors.Is(err, billing.ErrClosed) {
		t.Errorf("Batch after Close: err = %v, want ErrClosed", err)
	}
}

// parallel runs fn(i) for i in [0, n) on n goroutines released together.
func parallel(n int, fn func(i int)) {
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			fn(i)
		}()
	}
	close(start)
	wg.Wait()
}

func testConcurrentIncrement(t *testing.T, s billing.Store) {
	const n = 50
	got := make([]uint64, n)
	errs := make([]error, n)
	parallel(n, func(i int) {
		errs[i] = s.Update(context.Background(), func(tx billing.Tx) error {
			var err error
			got[i], err = tx.Increment(context.Background(), tableA, []byte("seq"))
			return err
		})
	})
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("Update: %v", err)
	}
	slices.Sort(got)
	want := make([]uint64, n)
	for i := range want {
		want[i] = uint64(i + 1)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("counter values (-want +got):\n%s", diff)
	}
}

func testConcurrentBatch(t *testing.T, s billing.Store) {
	const n = 100
	errs := make([]error, n)
	parallel(n, func(i int) {
		errs[i] = s.Batch(context.Background(), func(tx billing.Tx) error {
			return tx.Insert(context.Background(), tableA, fmt.Appendf(nil, "k%03d", i), []byte("v"))
		})
	})
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("Batch: %v", err)
	}
	if got := scan(t, s, tableA, billing.Range{}); len(got) != n {
		t.Errorf("scan after %d batches found %d keys", n, len(got))
	}
}

func testFailingBatch(t *testing.T, s billing.Store) {
	const n, failing = 20, 7
	errs := make([]error, n)
	parallel(n, func(i int) {
		errs[i] = s.Batch(context.Background(), func(tx billing.Tx) error {
			key := fmt.Appendf(nil, "k%02d", i)
			if err := tx.Put(context.Background(), tableA, key, []byte("v")); err != nil {
				return err
			}
			if i == failing {
				return fmt.Errorf("batch %d: %w", i, errBoom)
			}
			return nil
		})
	})
	for i, err := range errs {
		if i == failing && !errors.Is(err, errBoom) {
			t.Errorf("failing Batch: err = %v, want its own error", err)
		}
		if i != failing && err != nil {
			t.Errorf("Batch %d: %v", i, err)
		}
	}
	var want []kv
	for i := range n {
		if i != failing {
			want = append(want, kv{fmt.Sprintf("k%02d", i), "v"})
		}
	}
	if diff := cmp.Diff(want, scan(t, s, tableA, billing.Range{})); diff != "" {
		t.Errorf("keys after batches (-want +got):\n%s", diff)
	}
}

func testAtomicVisibility(t *testing.T, s billing.Store) {
	const writes, readers = 200, 4
	put(t, s, tableA, "x", "0", "y", "0")
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for reads := 0; ; reads++ {
				select {
				case <-done:
					if reads > 0 {
						return
					}
				default:
				}
				err := s.View(context.Background(), func(tx billing.Tx) error {
					x, err := tx.Get(context.Background(), tableA, []byte("x"))
					if err != nil {
						return err
					}
					y, err := tx.Get(context.Background(), tableA, []byte("y"))
					if err != nil {
						return err
					}
					if !bytes.Equal(x, y) {
						return fmt.Errorf("partial update seen: x=%s y=%s", x, y)
					}
					return nil
				})
				if err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	for i := 1; i <= writes; i++ {
		v := fmt.Appendf(nil, "%d", i)
		update(t, s, func(ctx context.Context, tx billing.Tx) error {
			if err := tx.Put(ctx, tableA, []byte("x"), v); err != nil {
				return err
			}
			return tx.Put(ctx, tableA, []byte("y"), v)
		})
	}
	close(done)
	wg.Wait()
	wantValue(t, s, tableA, "x", fmt.Sprint(writes))
}

// testConcurrentReadModifyWrite runs transactions that read a value and
// write it back changed, all at once. A store that lets two of them read
// the same value loses an update; a store that runs a function again (the
// contract allows it after a failed serialization) must run it on a state
// without any trace of the earlier run: each function first checks that
// its own marker key is absent, then writes it.
func testConcurrentReadModifyWrite(t *testing.T, s billing.Store) {
	const n = 40
	put(t, s, tableA, "total", "0")
	errs := make([]error, n)
	var mu sync.Mutex
	runs := 0
	parallel(n, func(i int) {
		ctx := context.Background()
		mine := fmt.Appendf(nil, "mine/%02d", i)
		errs[i] = s.Update(ctx, func(tx billing.Tx) error {
			mu.Lock()
			runs++
			mu.Unlock()
			if _, err := tx.Get(ctx, tableB, mine); !errors.Is(err, billing.ErrNotFound) {
				return fmt.Errorf("function %d found its own marker (err %v): an earlier run left a trace", i, err)
			}
			if err := tx.Put(ctx, tableB, mine, []byte("x")); err != nil {
				return err
			}
			v, err := tx.Get(ctx, tableA, []byte("total"))
			if err != nil {
				return err
			}
			var total int
			if _, err := fmt.Sscan(string(v), &total); err != nil {
				return err
			}
			return tx.Put(ctx, tableA, []byte("total"), fmt.Append(nil, total+1))
		})
	})
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("Update: %v", err)
	}
	wantValue(t, s, tableA, "total", fmt.Sprint(n))
	if got := scan(t, s, tableB, billing.Range{}); len(got) != n {
		t.Errorf("%d markers, want %d", len(got), n)
	}
	t.Logf("%d transactions, %d runs of their functions", n, runs)
}

// testConcurrentInsert has many transactions insert the same key: exactly
// one gets nil, every other ErrConflict, and the winner's value stays.
func testConcurrentInsert(t *testing.T, s billing.Store) {
	const n = 20
	results := make([]error, n)
	errs := make([]error, n)
	parallel(n, func(i int) {
		ctx := context.Background()
		errs[i] = s.Update(ctx, func(tx billing.Tx) error {
			results[i] = tx.Insert(ctx, tableA, []byte("contested"), fmt.Appendf(nil, "%d", i))
			if results[i] != nil && !errors.Is(results[i], billing.ErrConflict) {
				return results[i]
			}
			return nil
		})
	})
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("Update: %v", err)
	}
	winner := -1
	for i, err := range results {
		if err == nil {
			if winner >= 0 {
				t.Fatalf("Insert succeeded for both %d and %d", winner, i)
			}
			winner = i
		}
	}
	if winner < 0 {
		t.Fatalf("no Insert succeeded: %v", results)
	}
	wantValue(t, s, tableA, "contested", fmt.Sprint(winner))
}

// testLongScan scans more keys than a backend would fetch at once, both
// ways, while the callback reads and writes another table through the same
// Tx (allowed: only the scanned table is off limits).
func testLongScan(t *testing.T, s billing.Store) {
	const n = 5000
	update(t, s, func(ctx context.Context, tx billing.Tx) error {
		for i := range n {
			if err := tx.Put(ctx, tableA, fmt.Appendf(nil, "k%05d", i), fmt.Appendf(nil, "v%d", i)); err != nil {
				return err
			}
		}
		return tx.Put(ctx, tableA, []byte("l"), []byte("outside the prefix"))
	})
	for _, reverse := range []bool{false, true} {
		seen := 0
		update(t, s, func(ctx context.Context, tx billing.Tx) error {
			seen = 0
			return tx.Scan(ctx, tableA, billing.Range{Prefix: []byte("k"), Reverse: reverse}, func(k, v []byte) error {
				i := seen
				if reverse {
					i = n - 1 - seen
				}
				if want := fmt.Sprintf("k%05d", i); string(k) != want || string(v) != fmt.Sprintf("v%d", i) {
					return fmt.Errorf("key %d of the scan (reverse=%v) = %q=%q, want %q", seen, reverse, k, v, want)
				}
				seen++
				if seen%1000 == 0 {
					if _, err := tx.Get(ctx, tableB, k); !errors.Is(err, billing.ErrNotFound) {
						return fmt.Errorf("Get in the callback: %v", err)
					}
					return tx.Put(ctx, tableB, k, v)
				}
				return nil
			})
		})
		if seen != n {
			t.Errorf("scan (reverse=%v) saw %d keys, want %d", reverse, seen, n)
		}
		if got := scan(t, s, tableB, billing.Range{}); len(got) != n/1000 {
			t.Errorf("callback writes (reverse=%v): %d keys in table B, want %d", reverse, len(got), n/1000)
		}
		for _, p := range scan(t, s, tableB, billing.Range{}) {
			update(t, s, func(ctx context.Context, tx billing.Tx) error { return tx.Delete(ctx, tableB, []byte(p.K)) })
		}
	}
}
