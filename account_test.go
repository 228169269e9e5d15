package billing_test

import (
	"bytes"
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
	"github.com/google/go-cmp/cmp"
)

// Long on purpose: one scenario walked in order; each step starts from the state the previous steps
// left, so pieces would repeat the set-up.
func TestAPIKeys(t *testing.T) {
	t.Parallel()
	stores(t, func(t *testing.T, svc *billing.Service, _ *billingtest.Clock) {
		ctx := context.Background()
		acct := billingtest.Account(t, svc, "acme")
		key, err := svc.CreateAPIKey(ctx, acct)
		if err != nil {
			t.Fatal(err)
		}
		got, err := svc.Authenticate(ctx, key.ID, key.Secret)
		if err != nil || got.ServiceAccountID != acct || got.ID != key.ID {
			t.Fatalf("Authenticate = %+v, %v; want the key of %s", got, err, acct)
		}
		id, secret, ok := billing.ParseBasicAuthorization(key.Authorization())
		if !ok || id != key.ID || secret != key.Secret {
			t.Fatalf("Authorization() does not parse back: %q", key.Authorization())
		}

		t.Run("SecretNotStored", func(t *testing.T) {
			err := svc.Store().View(ctx, func(tx billing.Tx) error {
				for _, table := range []billing.Table{"api_keys", "accounts", "meta"} {
					err := tx.Scan(ctx, table, billing.Range{}, func(k, v []byte) error {
						if bytes.Contains(v, []byte(key.Secret)) || bytes.Contains(k, []byte(key.Secret)) {
							t.Errorf("table %s holds the secret in clear", table)
						}
						return nil
					})
					if err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})

		for name, creds := range map[string][2]string{
			"ErrWrongSecret": {key.ID, key.Secret + "x"},
			"ErrUnknownKey":  {"00000000-0000-7000-8000-000000000099", key.Secret},
			"ErrEmpty":       {"", ""},
			"ErrHugeKeyID":   {string(bytes.Repeat([]byte("k"), 10000)), "x"},
		} {
			if _, err := svc.Authenticate(ctx, creds[0], creds[1]); billing.CodeOf(err) != billing.CodeUnauthorized {
				t.Errorf("%s: Authenticate err = %v, want unauthorized", name, err)
			}
		}

		revoked, err := svc.RevokeAPIKey(ctx, key.ID)
		if err != nil || revoked.RevokedAt == nil {
			t.Fatalf("RevokeAPIKey = %+v, %v", revoked, err)
		}
		if _, err := svc.Authenticate(ctx, key.ID, key.Secret); billing.CodeOf(err) != billing.CodeUnauthorized {
			t.Fatalf("a revoked key authenticates: %v", err)
		}
		again, err := svc.RevokeAPIKey(ctx, key.ID)
		if err != nil || !again.RevokedAt.Equal(*revoked.RevokedAt) {
			t.Fatalf("revoking twice changed the key: %+v, %v", again, err)
		}
		if _, err := svc.RevokeAPIKey(ctx, "nope"); billing.CodeOf(err) != billing.CodeNotFound {
			t.Fatalf("revoking an unknown key: %v, want not_found", err)
		}
		if _, err := svc.CreateAPIKey(ctx, "00000000-0000-7000-8000-000000000099"); billing.CodeOf(err) != billing.CodeNotFound {
			t.Fatalf("a key for an unknown account: %v, want not_found", err)
		}
		keys, err := svc.ListAPIKeys(ctx, acct)
		if err != nil || len(keys) != 1 || keys[0].ID != key.ID {
			t.Fatalf("ListAPIKeys = %+v, %v", keys, err)
		}
	})
}

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

func TestAccounts(t *testing.T) {
	t.Parallel()
	svc, _ := billingtest.NewService(t)
	ctx := context.Background()
	if _, err := svc.CreateAccount(ctx, billing.CreateAccountParams{}); billing.CodeOf(err) != billing.CodeValidationFailed {
		t.Fatalf("an account without a name: %v", err)
	}
	a := billingtest.Account(t, svc, "first")
	b := billingtest.Account(t, svc, "second")
	all, err := svc.ListAccounts(ctx)
	if err != nil || len(all) != 2 || all[0].ID != a || all[1].ID != b {
		t.Fatalf("ListAccounts = %+v, %v", all, err)
	}
	got, err := svc.GetAccount(ctx, b)
	if err != nil || got.Name != "second" {
		t.Fatalf("GetAccount = %+v, %v", got, err)
	}
	if _, err := svc.GetAccount(ctx, "missing"); billing.CodeOf(err) != billing.CodeNotFound {
		t.Fatalf("GetAccount(missing) = %v", err)
	}
}

func TestParseBasicAuthorization(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		header     string
		id, secret string
		ok         bool
	}{
		{billing.BasicAuthorization("key", "sec:ret"), "key", "sec:ret", true},
		{"basic " + "a2V5OnNlY3JldA==", "key", "secret", true},
		{"Bearer a2V5OnNlY3JldA==", "", "", false},
		{"Basic", "", "", false},
		{"Basic !!!", "", "", false},
		{"Basic " + "a2V5", "", "", false},     // "key" without a colon
		{"Basic " + "OnNlYw==", "", "", false}, // ":sec"
		{"", "", "", false},
	} {
		id, secret, ok := billing.ParseBasicAuthorization(tc.header)
		if id != tc.id || secret != tc.secret || ok != tc.ok {
			t.Errorf("ParseBasicAuthorization(%q) = %q, %q, %v; want %q, %q, %v", tc.header, id, secret, ok, tc.id, tc.secret, tc.ok)
		}
	}
}

func TestMerchantDetails(t *testing.T) {
	t.Parallel()
	stores(t, func(t *testing.T, svc *billing.Service, _ *billingtest.Clock) {
		ctx, a, b := tenants(t, svc)
		empty, err := svc.GetMerchantDetails(ctx, a)
		if err != nil || empty.LegalCompanyName != "" || empty.CustomFields == nil {
			t.Fatalf("details before any PUT = %+v, %v", empty, err)
		}
		md := billing.MerchantDetails{
			LegalCompanyName: "Seller Ltd", Email: "billing@seller.test", PrimaryColour: "#1a2B3c",
			Address:       &billing.Address{Line1: "1 Way", Town: "Leeds", Postcode: "LS1", Country: "GB"},
			USWireDetails: &billing.USWireDetails{BankName: "Bank", BankAddress: &billing.Address{Line1: "2 St", Town: "NYC", Postcode: "10001", Country: "US"}},
			CustomFields:  []billing.KeyValue{{Key: "VAT no", Value: "GB1"}},
		}
		put, err := svc.PutMerchantDetails(ctx, a, md)
		if err != nil {
			t.Fatal(err)
		}
		got, err := svc.GetMerchantDetails(ctx, a)
		if diff := cmp.Diff(put, got); err != nil || diff != "" {
			t.Fatalf("read back (-put +got):\n%s %v", diff, err)
		}
		if other, err := svc.GetMerchantDetails(ctx, b); err != nil || other.LegalCompanyName != "" {
			t.Fatalf("B sees A's details: %+v, %v", other, err)
		}
		// PUT replaces: fields left out are cleared.
		if got, err := svc.PutMerchantDetails(ctx, a, billing.MerchantDetails{LegalCompanyName: "New"}); err != nil || got.Address != nil || got.Email != "" {
			t.Fatalf("replace = %+v, %v", got, err)
		}
	})
}

func TestMerchantDetailsValidation(t *testing.T) {
	t.Parallel()
	svc, _ := billingtest.NewService(t)
	a := billingtest.Account(t, svc, "a")
	_, err := svc.PutMerchantDetails(context.Background(), a, billing.MerchantDetails{
		Email: "nope", PrimaryColour: "red", LegalCompanyName: "a\x02",
		USWireDetails: &billing.USWireDetails{BankAddress: &billing.Address{Line1: "x", Town: "y", Postcode: "z", Country: "usa"}},
		CustomFields:  []billing.KeyValue{{Value: "v"}},
	})
	want := []string{"usWireDetails.bankAddress.country", "legalCompanyName", "email", "primaryColour", "customFields[0].key"}
	if diff := cmp.Diff(want, errFields(t, err, billing.CodeValidationFailed)); diff != "" {
		t.Fatalf("invalid fields (-want +got):\n%s", diff)
	}
}
