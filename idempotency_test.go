package billing_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
)

func render(result any) (int, []byte, error) {
	b, err := json.Marshal(result)
	return 201, b, err
}

func TestIdempotencyRecordCommitsWithTheChange(t *testing.T) {
	t.Parallel()
	stores(t, func(t *testing.T, svc *billing.Service, clock *billingtest.Clock) {
		acct := billingtest.Account(t, svc, "a")
		req := &billing.IdempotencyRequest{Key: "k1", Fingerprint: "f1", Render: render}
		ctx := billing.WithIdempotency(context.Background(), req)
		m, err := svc.CreateUsageMetric(ctx, acct, metricParams("m"))
		if err != nil {
			t.Fatal(err)
		}
		if !req.Stored || req.Status != 201 {
			t.Fatalf("request after the operation = %+v", req)
		}
		rec, err := svc.IdempotentResponse(context.Background(), acct, "k1")
		if err != nil || rec == nil {
			t.Fatalf("IdempotentResponse = %v, %v", rec, err)
		}
		var stored billing.UsageMetric
		if err := json.Unmarshal(rec.Body, &stored); err != nil || stored.ID != m.ID || rec.Fingerprint != "f1" || rec.Status != 201 {
			t.Fatalf("stored response = %+v (%s)", rec, rec.Body)
		}
		// Keys are scoped to the account.
		other := billingtest.Account(t, svc, "b")
		if rec, err := svc.IdempotentResponse(context.Background(), other, "k1"); err != nil || rec != nil {
			t.Fatalf("another account sees the record: %v, %v", rec, err)
		}
		// Records expire after 24 hours and are swept.
		clock.Advance(24*time.Hour + time.Second)
		if rec, _ := svc.IdempotentResponse(context.Background(), acct, "k1"); rec != nil {
			t.Fatalf("an expired record still answers")
		}
		n, err := svc.SweepIdempotency(context.Background())
		if err != nil || n != 1 {
			t.Fatalf("SweepIdempotency = %d, %v", n, err)
		}
	})
}

func TestIdempotencyRenderFailureRollsBackTheChange(t *testing.T) {
	t.Parallel()
	svc, _ := billingtest.NewService(t)
	acct := billingtest.Account(t, svc, "a")
	boom := errors.New("render failed")
	req := &billing.IdempotencyRequest{Key: "k", Fingerprint: "f", Render: func(any) (int, []byte, error) { return 0, nil, boom }}
	_, err := svc.CreateUsageMetric(billing.WithIdempotency(context.Background(), req), acct, metricParams("m"))
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want the render error", err)
	}
	listsNothing(t, svc.ListUsageMetrics, acct, "the change committed without its idempotency record")
}

func TestIdempotencyFailedOperationStoresNothing(t *testing.T) {
	t.Parallel()
	svc, _ := billingtest.NewService(t)
	acct := billingtest.Account(t, svc, "a")
	createMetrics(t, svc, acct, 1)
	req := &billing.IdempotencyRequest{Key: "k", Fingerprint: "f", Render: render}
	_, err := svc.CreateUsageMetric(billing.WithIdempotency(context.Background(), req), acct, metricParams("metric 000"))
	if billing.CodeOf(err) != billing.CodeConflict || req.Stored {
		t.Fatalf("err = %v, stored = %v; want conflict and nothing stored", err, req.Stored)
	}
	if rec, err := svc.IdempotentResponse(context.Background(), acct, "k"); rec != nil || err != nil {
		t.Fatalf("a failed operation left a record: %+v, %v", rec, err)
	}
	// The HTTP layer stores error answers itself.
	if err := svc.StoreIdempotentResponse(context.Background(), acct, req, 409, []byte(`{"errors":[]}`)); err != nil {
		t.Fatal(err)
	}
	if rec, err := svc.IdempotentResponse(context.Background(), acct, "k"); err != nil || rec == nil || rec.Status != 409 {
		t.Fatalf("stored error answer = %+v, %v", rec, err)
	}
}
