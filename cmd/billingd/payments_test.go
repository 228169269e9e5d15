package main

import (
	"context"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/billingd/billing"
)

const cliMasterKey = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=" // base64 of 32 bytes

func paymentEnv(extra map[string]string) map[string]string {
	env := map[string]string{"BILLINGD_MASTER_KEY": cliMasterKey,
		"BILLINGD_STRIPE_SECRET_KEY": "sk_test_CliSecret4242", "BILLINGD_STRIPE_WEBHOOK_SECRET": "whsec_CliWebhook8181"}
	for k, v := range extra {
		if v == "" {
			delete(env, k)
		} else {
			env[k] = v
		}
	}
	return env
}

// TestPaymentsConfigureOnTheFile: with no server, the command writes the
// database directly; it prints only the secrets' last 4 characters, and
// the stored secrets open with the master key only.
func TestPaymentsConfigureOnTheFile(t *testing.T) {
	t.Parallel()
	db := tempDB(t)
	acct := decodeCredential(t, mustRun(t, "accounts", "create", "--name", "acme", "--db", db, "--json"))
	code, out, errOut := runCLI(t, paymentEnv(nil), "payments", "configure", "--account", acct.ServiceAccountID, "--provider", "stripe", "--db", db)
	if code != exitOK || !strings.Contains(out, "4242") || !strings.Contains(out, "8181") || strings.Contains(out+errOut, "CliSecret") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(out, "/webhooks/stripe/"+acct.ServiceAccountID) {
		t.Errorf("the webhook endpoint is not printed: %s", out)
	}
	raw, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), "CliSecret") || strings.Contains(string(raw), "CliWebhook") {
		t.Error("a secret in the clear in the database file")
	}
	key, _ := billing.ParseMasterKey(cliMasterKey)
	_, st := openService(t, db)
	svc, err := billing.New(st, &billing.Config{MasterKey: key, PaymentProviders: mustProviders(t)})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := svc.GetPaymentProvider(context.Background(), acct.ServiceAccountID, billing.PaymentProviderStripe)
	if err != nil || cfg.SecretKeyLast4 != "4242" {
		t.Errorf("stored configuration %+v %v", cfg, err)
	}
}

func mustProviders(t *testing.T) []billing.PaymentProvider {
	t.Helper()
	p, _, err := paymentsConfig(func(string) string { return "" }, "")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPaymentsConfigureRefusals: secrets come from the environment only;
// without a master key, or with a bad one, the command says how to make one.
func TestPaymentsConfigureRefusals(t *testing.T) {
	t.Parallel()
	db := tempDB(t)
	acct := decodeCredential(t, mustRun(t, "accounts", "create", "--name", "acme", "--db", db, "--json")).ServiceAccountID
	for _, c := range []struct {
		env  map[string]string
		args []string
		want string
	}{
		{map[string]string{"BILLINGD_STRIPE_SECRET_KEY": ""}, nil, "BILLINGD_STRIPE_SECRET_KEY"},
		{map[string]string{"BILLINGD_MASTER_KEY": ""}, nil, "openssl rand -base64 32"},
		{map[string]string{"BILLINGD_MASTER_KEY": "c2hvcnQ="}, nil, "not 32"},
		{nil, []string{"--provider", "paypal"}, "unknown --provider"},
		{nil, []string{"--secret-key", "sk_test_x"}, "secret-key"},
	} {
		args := append([]string{"payments", "configure", "--account", acct, "--db", db}, c.args...)
		code, out, errOut := runCLI(t, paymentEnv(c.env), args...)
		if code == exitOK || !strings.Contains(errOut, c.want) {
			t.Errorf("%v %v: exit %d, %s%s", c.env, c.args, code, out, errOut)
		}
	}
}

// TestPaymentsConfigureThroughTheSocket: while a server holds the file,
// the secrets go over the admin socket and the server encrypts them.
func TestPaymentsConfigureThroughTheSocket(t *testing.T) {
	t.Parallel()
	db := tempDB(t)
	acct := decodeCredential(t, mustRun(t, "accounts", "create", "--name", "acme", "--db", db, "--json")).ServiceAccountID
	key, _ := billing.ParseMasterKey(cliMasterKey)
	st := openBolt(t, db)
	t.Cleanup(func() { st.Close() })
	svc, err := billing.New(st, &billing.Config{MasterKey: key, PaymentProviders: mustProviders(t)})
	if err != nil {
		t.Fatal(err)
	}
	l, err := listenAdmin(db + ".sock")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: newAdminHandler(&localAdmin{svc: svc, store: st}, db, slog.New(slog.DiscardHandler))}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close(); os.Remove(db + ".sock") })
	env := paymentEnv(map[string]string{"BILLINGD_MASTER_KEY": ""}) // the server's key encrypts
	code, out, errOut := runCLI(t, env, "payments", "configure", "--account", acct, "--provider", "stripe", "--db", db)
	if code != exitOK {
		t.Fatalf("exit %d: %s%s", code, out, errOut)
	}
	if cfg, err := svc.GetPaymentProvider(context.Background(), acct, billing.PaymentProviderStripe); err != nil || cfg.WebhookSecretLast4 != "8181" {
		t.Errorf("configured over the socket: %+v %v", cfg, err)
	}
}
