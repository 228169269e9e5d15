package billing_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
)

// TestAuthenticateCache checks that the cache of authenticated keys never
// lets through what the store would refuse: a wrong secret with the cache
// warm, a key revoked after it was cached, or a key revoked while
// authentications race with the revocation.
//
// Long on purpose: short subtests of one rule group that share the group's set-up.
func TestAuthenticateCache(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, _ := billingtest.NewService(t, billingtest.WithBolt())
	acct := billingtest.Account(t, svc, "a")
	newKey := func() *billing.NewAPIKey {
		k, err := svc.CreateAPIKey(ctx, acct)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	unauthorized := func(t *testing.T, id, secret string) {
		t.Helper()
		if _, err := svc.Authenticate(ctx, id, secret); billing.CodeOf(err) != billing.CodeUnauthorized {
			t.Fatalf("Authenticate = %v, want unauthorized", err)
		}
	}

	t.Run("ErrWrongSecretWithCacheWarm", func(t *testing.T) {
		k := newKey()
		for range 3 { // the first call fills the cache, the others use it
			got, err := svc.Authenticate(ctx, k.ID, k.Secret)
			if err != nil || got.ID != k.ID || got.ServiceAccountID != acct || got.RevokedAt != nil {
				t.Fatalf("Authenticate = %+v, %v", got, err)
			}
		}
		unauthorized(t, k.ID, k.Secret+"x")
		unauthorized(t, k.ID, "")
		if _, err := svc.Authenticate(ctx, k.ID, k.Secret); err != nil {
			t.Fatalf("a wrong secret evicted or broke the key: %v", err)
		}
	})

	t.Run("ErrRevokedAtOnceWithCacheWarm", func(t *testing.T) {
		k := newKey()
		if _, err := svc.Authenticate(ctx, k.ID, k.Secret); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.RevokeAPIKey(ctx, k.ID); err != nil {
			t.Fatal(err)
		}
		unauthorized(t, k.ID, k.Secret)
		unauthorized(t, k.ID, k.Secret) // and it is not cached again
	})

	t.Run("ErrRevokedWhileAuthenticating", func(t *testing.T) {
		for range 20 {
			k := newKey()
			var (
				wg      sync.WaitGroup
				revoked atomic.Bool
				stop    = make(chan struct{})
				late    atomic.Int64 // successes that started after the revocation returned
			)
			for range 4 {
				wg.Go(func() {
					for {
						select {
						case <-stop:
							return
						default:
						}
						after := revoked.Load()
						if _, err := svc.Authenticate(ctx, k.ID, k.Secret); err == nil && after {
							late.Add(1)
						}
					}
				})
			}
			if _, err := svc.RevokeAPIKey(ctx, k.ID); err != nil {
				t.Fatal(err)
			}
			revoked.Store(true)
			unauthorized(t, k.ID, k.Secret)
			close(stop)
			wg.Wait()
			if n := late.Load(); n > 0 {
				t.Fatalf("%d authentications started after RevokeAPIKey returned succeeded", n)
			}
			unauthorized(t, k.ID, k.Secret)
		}
	})
}
