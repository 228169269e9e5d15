package billing

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// This file holds the payment configuration: the accounts' provider
// credentials (encrypted with the master key), the account's payment
// settings (failure notifications, retry and reminder schedules, final
// action) and the upstream's payment settings of customers, billing
// schedules and invoices.

// The tables of payment configuration.
const (
	tablePaymentProviders Table = "payment_providers" // account id / provider → providerRecord (secrets sealed)
	tablePaymentSettings  Table = "payment_settings"  // account id → AccountPaymentSettings
	// tablePaymentTargets holds the payment settings of customers, billing
	// schedules and invoices: account id / settings id → PaymentTargetSettings.
	tablePaymentTargets Table = "payment_targets"
	// tablePaymentTargetIndex finds them: account id / kind / target id → settings id.
	tablePaymentTargetIndex Table = "payment_target_index"
	tableRenderSettings     Table = "render_settings" // account id → InvoiceRenderSettings
)

// MasterKeyEnv is the environment variable billingd reads the master key
// from: 32 random bytes, base64 (openssl rand -base64 32).
const MasterKeyEnv = "BILLINGD_MASTER_KEY"

// ParseMasterKey decodes a master key: 32 bytes in standard base64 (spaces
// around it ignored). The error never repeats the key.
func ParseMasterKey(s string) ([]byte, error) {
	b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(s))
	if err != nil {
		return nil, errors.New("the master key is not base64: make one with `openssl rand -base64 32`")
	}
	if len(b) != 32 {
		return nil, fmt.Errorf("the master key is %d bytes, not 32: make one with `openssl rand -base64 32`", len(b))
	}
	return b, nil
}

// paymentsConfig is the Service's side of payments: its adapters and the
// master key's cipher.
type paymentsConfig struct {
	providers map[PaymentProviderName]PaymentProvider
	aead      cipher.AEAD // nil without a master key
}

func newPaymentsConfig(providers []PaymentProvider, masterKey []byte) (paymentsConfig, error) {
	c := paymentsConfig{providers: map[PaymentProviderName]PaymentProvider{}}
	for _, p := range providers {
		if p == nil {
			return c, errors.New("billing: Config.PaymentProviders holds nil")
		}
		if _, dup := c.providers[p.Name()]; dup || p.Name() == PaymentProviderNone || p.Name() == "" {
			return c, fmt.Errorf("billing: Config.PaymentProviders: provider %q given twice or unnamed", p.Name())
		}
		c.providers[p.Name()] = p
	}
	if masterKey != nil {
		aead, err := masterAEAD(masterKey)
		if err != nil {
			return c, err
		}
		c.aead = aead
	}
	return c, nil
}

func masterAEAD(key []byte) (cipher.AEAD, error) {
	if len(key) != 32 {
		return nil, fmt.Errorf("billing: the master key is %d bytes, not 32", len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// noMasterKey is the refusal to store a secret without a master key.
func noMasterKey() *Error {
	return Errorf(CodeInvalidState, "no master key: start billingd with %s set to 32 random bytes in base64 (make one with `openssl rand -base64 32`) to store provider secrets encrypted", MasterKeyEnv)
}

// seal encrypts plain with the master key; aad binds it to its place
// (account, provider, field), so a sealed value copied elsewhere does not
// open.
func (s *Service) seal(aead cipher.AEAD, aad, plain string) ([]byte, error) {
	nonce, err := s.randomBytes(aead.NonceSize())
	if err != nil {
		return nil, err
	}
	return aead.Seal(nonce, nonce, []byte(plain), []byte(aad)), nil
}

// open decrypts what seal sealed.
func openSealed(aead cipher.AEAD, aad string, sealed []byte) (string, error) {
	n := aead.NonceSize()
	if len(sealed) < n {
		return "", errors.New("a sealed secret is truncated")
	}
	plain, err := aead.Open(nil, sealed[:n], sealed[n:], []byte(aad))
	if err != nil {
		return "", errors.New("a provider secret does not open with this master key (was the master key changed without billingd payments rotate-master-key?)")
	}
	return string(plain), nil
}

// providerRecord is an account's provider configuration as stored.
type providerRecord struct {
	Provider           PaymentProviderName `json:"provider"`
	SecretKey          []byte              `json:"secretKey"`     // sealed
	WebhookSecret      []byte              `json:"webhookSecret"` // sealed
	SecretKeyLast4     string              `json:"secretKeyLast4"`
	WebhookSecretLast4 string              `json:"webhookSecretLast4"`
	CreatedAt          time.Time           `json:"createdAt"`
	UpdatedAt          time.Time           `json:"updatedAt"`
}

func (r *providerRecord) aad(account, field string) string {
	return "billingd/" + account + "/" + string(r.Provider) + "/" + field
}

// PaymentProviderConfig is an account's provider configuration as answered:
// never a secret, only the last 4 characters of each.
type PaymentProviderConfig struct {
	// ServiceAccountID is the account that owns it.
	ServiceAccountID string `json:"serviceAccountId"`
	// Provider is the provider configured (STRIPE).
	Provider PaymentProviderName `json:"provider"`
	// SecretKeyLast4 and WebhookSecretLast4 are the secrets' last 4
	// characters, to tell keys apart.
	SecretKeyLast4 string `json:"secretKeyLast4"`
	// WebhookSecretLast4 is the webhook signing secret's last 4 characters.
	WebhookSecretLast4 string    `json:"webhookSecretLast4"`
	CreatedAt          time.Time `json:"createdAt"`
	UpdatedAt          time.Time `json:"updatedAt"`
}

// ConfigurePaymentProviderParams set an account's provider credentials.
type ConfigurePaymentProviderParams struct {
	// Provider is STRIPE.
	Provider PaymentProviderName `json:"provider"`
	// SecretKey is the provider's secret API key; required.
	SecretKey string `json:"secretKey"`
	// WebhookSecret is the signing secret of the provider's webhooks to
	// this account's endpoint; required.
	WebhookSecret string `json:"webhookSecret"`
}

func last4(s string) string {
	if len(s) <= 4 {
		return strings.Repeat("*", len(s))
	}
	return s[len(s)-4:]
}

func (r *providerRecord) config(account string) *PaymentProviderConfig {
	return &PaymentProviderConfig{
		ServiceAccountID: account, Provider: r.Provider, SecretKeyLast4: r.SecretKeyLast4,
		WebhookSecretLast4: r.WebhookSecretLast4, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
	}
}

// ConfigurePaymentProvider stores (or replaces) an account's provider
// credentials, encrypted with the master key. Returns validation_failed
// (provider unknown or without an adapter, a secret missing), not_found (no
// such account) and invalid_state without a master key. The answer holds
// only the secrets' last 4 characters.
func (s *Service) ConfigurePaymentProvider(ctx context.Context, account string, p ConfigurePaymentProviderParams) (*PaymentProviderConfig, error) {
	var v validator
	if _, ok := s.payments.providers[p.Provider]; !ok {
		v.add("provider", "provider must be one this server has an adapter for (STRIPE)")
	}
	v.check(strings.TrimSpace(p.SecretKey) != "", "secretKey", "secretKey is required")
	v.check(strings.TrimSpace(p.WebhookSecret) != "", "webhookSecret", "webhookSecret is required")
	v.check(len(p.SecretKey) <= 500, "secretKey", "secretKey is longer than 500 characters")
	v.check(len(p.WebhookSecret) <= 500, "webhookSecret", "webhookSecret is longer than 500 characters")
	if err := v.err(); err != nil {
		return nil, err
	}
	aead := s.payments.aead
	if aead == nil {
		return nil, noMasterKey()
	}
	now := s.clock()
	return mutate(ctx, s, account, func(tx Tx) (*PaymentProviderConfig, error) {
		if _, err := getRecord[Account](ctx, tx, tableAccounts, []byte(account)); err != nil {
			return nil, lookupErr(err, "account")
		}
		k := key(account, string(p.Provider))
		old, err := findRecord[providerRecord](ctx, tx, tablePaymentProviders, k)
		if err != nil {
			return nil, err
		}
		r := &providerRecord{Provider: p.Provider, CreatedAt: now, UpdatedAt: now,
			SecretKeyLast4: last4(p.SecretKey), WebhookSecretLast4: last4(p.WebhookSecret)}
		if old != nil {
			r.CreatedAt = old.CreatedAt
		}
		if r.SecretKey, err = s.seal(aead, r.aad(account, "secretKey"), p.SecretKey); err != nil {
			return nil, err
		}
		if r.WebhookSecret, err = s.seal(aead, r.aad(account, "webhookSecret"), p.WebhookSecret); err != nil {
			return nil, err
		}
		return r.config(account), putRecord(ctx, tx, tablePaymentProviders, k, r)
	})
}

// GetPaymentProvider returns an account's configuration of provider,
// without its secrets. Returns not_found when it has none.
func (s *Service) GetPaymentProvider(ctx context.Context, account string, provider PaymentProviderName) (*PaymentProviderConfig, error) {
	return read(ctx, s, func(tx Tx) (*PaymentProviderConfig, error) {
		r, err := getRecord[providerRecord](ctx, tx, tablePaymentProviders, key(account, string(provider)))
		if err != nil {
			return nil, lookupErr(err, "payment provider configuration")
		}
		return r.config(account), nil
	})
}

// DeletePaymentProvider removes an account's provider credentials: nothing
// is collected through it any more. Returns not_found.
func (s *Service) DeletePaymentProvider(ctx context.Context, account string, provider PaymentProviderName) error {
	_, err := mutate(ctx, s, account, func(tx Tx) (struct{}, error) {
		return struct{}{}, lookupErr(tx.Delete(ctx, tablePaymentProviders, key(account, string(provider))), "payment provider configuration")
	})
	return err
}

// RotateMasterKey re-encrypts every stored provider secret under newKey
// (32 bytes), in one transaction; the Service keeps using its own key, so
// restart billingd with the new one after. Returns invalid_state when the
// Service has no master key.
func (s *Service) RotateMasterKey(ctx context.Context, newKey []byte) (int, error) {
	if s.payments.aead == nil {
		return 0, noMasterKey()
	}
	next, err := masterAEAD(newKey)
	if err != nil {
		return 0, err
	}
	n := 0
	err = s.store.Update(ctx, func(tx Tx) error {
		n = 0
		type item struct {
			k []byte
			r providerRecord
		}
		var items []item
		err := tx.Scan(ctx, tablePaymentProviders, Range{}, func(k, v []byte) error {
			var r providerRecord
			if err := json.Unmarshal(v, &r); err != nil {
				return err
			}
			items = append(items, item{append([]byte(nil), k...), r})
			return nil
		})
		if err != nil {
			return err
		}
		for _, it := range items {
			account := keyAccount(it.k)
			for _, f := range []struct {
				name string
				val  *[]byte
			}{{"secretKey", &it.r.SecretKey}, {"webhookSecret", &it.r.WebhookSecret}} {
				plain, err := openSealed(s.payments.aead, it.r.aad(account, f.name), *f.val)
				if err != nil {
					return err
				}
				if *f.val, err = s.seal(next, it.r.aad(account, f.name), plain); err != nil {
					return err
				}
			}
			if err := putRecord(ctx, tx, tablePaymentProviders, it.k, &it.r); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	return n, err
}

// gateway opens the account's provider gateway; ok is false (and err nil)
// when the account has no provider configured or the Service no adapter
// for it.
func (s *Service) gateway(ctx context.Context, tx Tx, account string) (gw PaymentGateway, name PaymentProviderName, ok bool, err error) {
	for n, p := range s.payments.providers {
		r, err := findRecord[providerRecord](ctx, tx, tablePaymentProviders, key(account, string(n)))
		if err != nil || r == nil {
			if err != nil {
				return nil, "", false, err
			}
			continue
		}
		if s.payments.aead == nil {
			return nil, "", false, noMasterKey()
		}
		var creds ProviderCredentials
		if creds.SecretKey, err = openSealed(s.payments.aead, r.aad(account, "secretKey"), r.SecretKey); err != nil {
			return nil, "", false, err
		}
		if creds.WebhookSecret, err = openSealed(s.payments.aead, r.aad(account, "webhookSecret"), r.WebhookSecret); err != nil {
			return nil, "", false, err
		}
		g, err := p.Open(creds)
		if err != nil {
			return nil, "", false, err
		}
		return g, n, true, nil
	}
	return nil, PaymentProviderNone, false, nil
}

// openGateway is gateway in a read transaction of its own; an account
// without a provider is invalid_state.
func (s *Service) openGateway(ctx context.Context, account string) (PaymentGateway, PaymentProviderName, error) {
	var gw PaymentGateway
	var name PaymentProviderName
	err := s.view(ctx, func(tx Tx) error {
		g, n, ok, err := s.gateway(ctx, tx, account)
		if err == nil && !ok {
			err = Errorf(CodeInvalidState, "the account has no payment provider configured (billingd payments configure)")
		}
		gw, name = g, n
		return err
	})
	return gw, name, err
}
