package billing_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
)

// hookTable is where the tests' commit hooks write.
const hookTable billing.Table = "hook_test"

// writingHook is a commit hook that stores the id of the operation's
// result under "k" of hookTable, and counts its runs in *runs.
func writingHook(runs *int) billing.CommitHook {
	return func(ctx context.Context, tx billing.Tx, result any) error {
		*runs++
		m, ok := result.(*billing.UsageMetric)
		if !ok {
			return fmt.Errorf("result %T, want *billing.UsageMetric", result)
		}
		return tx.Put(ctx, hookTable, []byte("k"), []byte(m.ID))
	}
}

// hooked returns what writingHook stored, or "" when nothing is.
func hooked(t *testing.T, svc *billing.Service) string {
	t.Helper()
	var got []byte
	err := svc.Store().View(context.Background(), func(tx billing.Tx) error {
		v, err := tx.Get(context.Background(), hookTable, []byte("k"))
		if errors.Is(err, billing.ErrNotFound) {
			return nil
		}
		got = v
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return string(got)
}

func TestCommitHookCommitsWithTheChange(t *testing.T) {
	t.Parallel()
	stores(t, func(t *testing.T, svc *billing.Service, _ *billingtest.Clock) {
		acct := billingtest.Account(t, svc, "a")
		runs := 0
		m, err := svc.CreateUsageMetric(billing.WithCommitHook(context.Background(), writingHook(&runs)), acct, metricParams("m"))
		if err != nil {
			t.Fatal(err)
		}
		if got := hooked(t, svc); runs == 0 || got != m.ID {
			t.Fatalf("after the operation: %d runs, stored %q; want the metric's id %q", runs, got, m.ID)
		}
	})
}

func TestCommitHookFailureRollsBackTheChange(t *testing.T) {
	t.Parallel()
	svc, _ := billingtest.NewService(t)
	acct := billingtest.Account(t, svc, "a")
	boom := errors.New("hook failed")
	ctx := billing.WithCommitHook(context.Background(), func(context.Context, billing.Tx, any) error { return boom })
	if _, err := svc.CreateUsageMetric(ctx, acct, metricParams("m")); !errors.Is(err, boom) {
		t.Fatalf("err = %v, want the hook's error", err)
	}
	listsNothing(t, svc.ListUsageMetrics, acct, "the change committed although its hook failed")
}

func TestCommitHookNotRunForAFailedOperation(t *testing.T) {
	t.Parallel()
	svc, _ := billingtest.NewService(t)
	acct := billingtest.Account(t, svc, "a")
	createMetrics(t, svc, acct, 1)
	runs := 0
	_, err := svc.CreateUsageMetric(billing.WithCommitHook(context.Background(), writingHook(&runs)), acct, metricParams("metric 000"))
	if billing.CodeOf(err) != billing.CodeConflict || runs != 0 || hooked(t, svc) != "" {
		t.Fatalf("err = %v, %d hook runs, stored %q; want conflict and no run", err, runs, hooked(t, svc))
	}
}

func TestSweepDeletesOnlyDueRecords(t *testing.T) {
	t.Parallel()
	stores(t, func(t *testing.T, svc *billing.Service, _ *billingtest.Clock) {
		ctx := context.Background()
		err := svc.Store().Update(ctx, func(tx billing.Tx) error {
			for i := range 2500 { // more than one deleting transaction
				if err := tx.Put(ctx, hookTable, fmt.Appendf(nil, "%05d", i), fmt.Appendf(nil, "%d", i%2)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		n, err := billing.Sweep(ctx, svc.Store(), hookTable, func(v []byte) (bool, error) { return string(v) == "1", nil })
		if err != nil || n != 1250 {
			t.Fatalf("Sweep = %d, %v; want 1250", n, err)
		}
		left := 0
		err = svc.Store().View(ctx, func(tx billing.Tx) error {
			return tx.Scan(ctx, hookTable, billing.Range{}, func(_, v []byte) error {
				if string(v) != "0" {
					return fmt.Errorf("a due record is left: %q", v)
				}
				left++
				return nil
			})
		})
		if err != nil || left != 1250 {
			t.Fatalf("left %d, %v; want 1250 records that are not due", left, err)
		}
	})
}
