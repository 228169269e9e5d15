package main

import (
	"context"
	"fmt"
	"io"

	"github.com/billingd/billing"
	"github.com/billingd/billing/storage/boltstore"
)

// credential is a new API key as the admin commands print it: the output of
// accounts create and keys create.
type credential struct {
	ServiceAccountID string `json:"serviceAccountId"`
	KeyID            string `json:"keyId"`
	Secret           string `json:"secret"`
	Authorization    string `json:"authorization"`
}

// newCredential returns the credential of a freshly created key.
func newCredential(k *billing.NewAPIKey) *credential {
	return &credential{
		ServiceAccountID: k.ServiceAccountID,
		KeyID:            k.ID,
		Secret:           k.Secret,
		Authorization:    k.Authorization(),
	}
}

// admin is what the admin commands need. A running server serves it over
// its admin socket (socketAdmin); without a server the commands open the
// database file directly (localAdmin).
type admin interface {
	// CreateAccount creates an account and its first API key.
	CreateAccount(ctx context.Context, name string) (*credential, error)
	// ListAccounts returns every account, oldest first.
	ListAccounts(ctx context.Context) ([]billing.Account, error)
	// CreateKey creates an API key for an existing account.
	CreateKey(ctx context.Context, accountID string) (*credential, error)
	// ListKeys returns the API keys of an account (never their secrets).
	ListKeys(ctx context.Context, accountID string) ([]billing.APIKey, error)
	// RevokeKey revokes an API key; it stops working at once.
	RevokeKey(ctx context.Context, keyID string) (*billing.APIKey, error)
	// ConfigurePayments stores an account's provider secrets, encrypted
	// with the master key (payments.go).
	ConfigurePayments(ctx context.Context, accountID string, p billing.ConfigurePaymentProviderParams) (*billing.PaymentProviderConfig, error)
	// Backup writes a consistent copy of the database file to w.
	Backup(ctx context.Context, w io.Writer) (int64, error)
}

// localAdmin runs the admin operations on a Service and its store in this
// process: inside serve (behind the admin socket), or on a file an admin
// command opened itself.
type localAdmin struct {
	svc   *billing.Service
	store billing.Store
}

// CreateAccount creates an account and its first key. They are two
// transactions: if the key fails, the account stays and keys create can
// add one.
func (a *localAdmin) CreateAccount(ctx context.Context, name string) (*credential, error) {
	acct, err := a.svc.CreateAccount(ctx, billing.CreateAccountParams{Name: name})
	if err != nil {
		return nil, err
	}
	cred, err := a.CreateKey(ctx, acct.ID)
	if err != nil {
		return nil, fmt.Errorf("account %s was created, but its API key was not: %w", acct.ID, err)
	}
	return cred, nil
}

// ListAccounts returns every account, oldest first.
func (a *localAdmin) ListAccounts(ctx context.Context) ([]billing.Account, error) {
	accounts, err := a.svc.ListAccounts(ctx)
	if accounts == nil {
		accounts = []billing.Account{} // a JSON array, never null
	}
	return accounts, err
}

// CreateKey creates an API key for an existing account.
func (a *localAdmin) CreateKey(ctx context.Context, accountID string) (*credential, error) {
	k, err := a.svc.CreateAPIKey(ctx, accountID)
	if err != nil {
		return nil, err
	}
	return newCredential(k), nil
}

// ListKeys returns the API keys of an account.
func (a *localAdmin) ListKeys(ctx context.Context, accountID string) ([]billing.APIKey, error) {
	keys, err := a.svc.ListAPIKeys(ctx, accountID)
	if keys == nil {
		keys = []billing.APIKey{} // a JSON array, never null
	}
	return keys, err
}

// RevokeKey revokes an API key.
func (a *localAdmin) RevokeKey(ctx context.Context, keyID string) (*billing.APIKey, error) {
	return a.svc.RevokeAPIKey(ctx, keyID)
}

// Backup writes a hot copy of the database file to w.
func (a *localAdmin) Backup(ctx context.Context, w io.Writer) (int64, error) {
	b, ok := a.store.(*boltstore.Store)
	if !ok {
		return 0, errBackupPostgres
	}
	return b.WriteTo(ctxWriter{ctx: ctx, w: w})
}

// ctxWriter stops a long copy once its context is done: WriteTo takes no
// context of its own.
type ctxWriter struct {
	ctx context.Context
	w   io.Writer
}

// Write writes p to the underlying writer unless the context is done.
func (c ctxWriter) Write(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.w.Write(p)
}
