package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/billingd/billing"
	"github.com/billingd/billing/payments/stripe"
)

// The environment variables of payments. Secrets are read from the
// environment only, never from argv.
const (
	stripeSecretKeyEnv     = "BILLINGD_STRIPE_SECRET_KEY"
	stripeWebhookSecretEnv = "BILLINGD_STRIPE_WEBHOOK_SECRET"
	stripeAPIURLEnv        = "BILLINGD_STRIPE_API_URL"
)

// paymentsConfig returns the payment fields of a Service's Config: the
// Stripe adapter (at apiURL, empty for Stripe's own) and the master key
// from BILLINGD_MASTER_KEY (none when unset).
func paymentsConfig(getenv func(string) string, apiURL string) ([]billing.PaymentProvider, []byte, error) {
	providers := []billing.PaymentProvider{stripe.New(stripe.Options{APIURL: apiURL})}
	raw := getenv(billing.MasterKeyEnv)
	if raw == "" {
		return providers, nil, nil
	}
	key, err := billing.ParseMasterKey(raw)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", billing.MasterKeyEnv, err)
	}
	return providers, key, nil
}

// paymentsConfigure is `billingd payments configure --account ID --provider
// stripe`: it stores the account's Stripe secret key and webhook signing
// secret (read from BILLINGD_STRIPE_SECRET_KEY and
// BILLINGD_STRIPE_WEBHOOK_SECRET), encrypted with BILLINGD_MASTER_KEY,
// through the running server's admin socket or in the database directly.
func (c *cli) paymentsConfigure(ctx context.Context, args []string) error {
	var af adminFlags
	var account, provider string
	fs := c.newFlagSet("payments configure", "billingd payments configure --account ID --provider stripe [--db PATH]")
	af.register(fs)
	fs.StringVar(&account, "account", "", "the account `id` to configure")
	fs.StringVar(&provider, "provider", "stripe", "the payment `provider`: stripe")
	if err := c.parseCommand(fs, "payments configure", args); err != nil {
		return err
	}
	if account == "" {
		return usagef("payments configure needs --account")
	}
	if !strings.EqualFold(provider, "stripe") {
		return usagef("payments configure: unknown --provider %q (stripe is the one provider)", provider)
	}
	p := billing.ConfigurePaymentProviderParams{
		Provider: billing.PaymentProviderStripe, SecretKey: c.getenv(stripeSecretKeyEnv), WebhookSecret: c.getenv(stripeWebhookSecretEnv),
	}
	if p.SecretKey == "" || p.WebhookSecret == "" {
		return usagef("payments configure reads the secrets from the environment: set %s and %s", stripeSecretKeyEnv, stripeWebhookSecretEnv)
	}
	return c.withAdmin(ctx, af, false, func(a admin) error {
		if la, ok := a.(*localAdmin); ok {
			// The database opened directly: this process encrypts, with
			// its own BILLINGD_MASTER_KEY.
			providers, key, err := paymentsConfig(c.getenv, "")
			if err != nil {
				return err
			}
			svc, err := billing.New(la.store, &billing.Config{PaymentProviders: providers, MasterKey: key, ConcurrentBillingRuns: isPostgres(af.db), SeriesInOwnTransaction: isPostgres(af.db), LegacyUsageIDRecords: isPostgres(af.db)})
			if err != nil {
				return err
			}
			a = &localAdmin{svc: svc, store: la.store}
		}
		cfg, err := a.ConfigurePayments(ctx, account, p)
		if err != nil {
			return err
		}
		fmt.Fprintf(c.stdout, "configured %s for account %s (secret key ...%s, webhook secret ...%s)\nwebhook endpoint: POST /webhooks/stripe/%s\n",
			strings.ToLower(string(cfg.Provider)), cfg.ServiceAccountID, cfg.SecretKeyLast4, cfg.WebhookSecretLast4, cfg.ServiceAccountID)
		return nil
	})
}

// ConfigurePayments stores an account's provider secrets, encrypted.
func (a *localAdmin) ConfigurePayments(ctx context.Context, account string, p billing.ConfigurePaymentProviderParams) (*billing.PaymentProviderConfig, error) {
	return a.svc.ConfigurePaymentProvider(ctx, account, p)
}

// ConfigurePayments sends the secrets to the running server over the admin
// socket (a 0600 Unix socket), which encrypts them with its master key.
func (s *socketAdmin) ConfigurePayments(ctx context.Context, account string, p billing.ConfigurePaymentProviderParams) (*billing.PaymentProviderConfig, error) {
	var cfg billing.PaymentProviderConfig
	err := s.call(ctx, http.MethodPut, "/accounts/"+account+"/payments", p, &cfg)
	return &cfg, err
}

// mountPaymentsAdmin adds the admin socket's payments route:
//
//	PUT /accounts/{id}/payments  {"provider","secretKey","webhookSecret"} → 200 configuration (no secrets)
func mountPaymentsAdmin(mux *http.ServeMux, a admin, log *slog.Logger) {
	mux.HandleFunc("PUT /accounts/{id}/payments", func(w http.ResponseWriter, r *http.Request) {
		var p billing.ConfigurePaymentProviderParams
		if !decodeAdminJSON(w, r, log, &p) {
			return
		}
		cfg, err := a.ConfigurePayments(r.Context(), r.PathValue("id"), p)
		if err == nil {
			log.InfoContext(r.Context(), "admin: payment provider configured", "account", cfg.ServiceAccountID, "provider", cfg.Provider)
		}
		writeAdminJSON(w, r, log, http.StatusOK, cfg, err)
	})
}

// collectionLoop runs the collection of due payments (automatic charges,
// retries, reminders, payment links) each interval until ctx is done. Every
// instance on a shared database runs it: each due step is claimed in the
// store first, so one instance does it.
func collectionLoop(ctx context.Context, svc *billing.Service, log *slog.Logger, interval time.Duration, now func() time.Time) {
	every(ctx, interval, func() {
		run, err := svc.RunCollection(ctx, now())
		switch {
		case err != nil && ctx.Err() == nil:
			log.Error("collection run failed", "err", err)
		case err == nil && run.Steps > 0:
			log.Info("collection run", "steps", run.Steps, "succeeded", run.Succeeded, "failed", run.Failed, "errors", run.Errors)
		}
	})
}
