package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/billingd/billing"
)

// TestServeDeliversWebhooks: serve runs the dispatcher; with
// --webhook-allow-private a receiver on loopback gets a signed webhook for a
// customer created through the API.
func TestServeDeliversWebhooks(t *testing.T) {
	t.Parallel()
	type delivery struct {
		header http.Header
		body   []byte
	}
	got := make(chan delivery, 10)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- delivery{r.Header.Clone(), b}
	}))
	defer recv.Close()
	url, out, stop := serveInProcess(t, tempDB(t), "--webhook-allow-private", "--delivery-retention", "48h")
	auth := out.waitFor(t, bootstrapRE)[4]
	post := func(path, body string) []byte {
		t.Helper()
		code, b := request(url, auth, "POST", path, body)
		if code != 201 {
			t.Fatalf("POST %s: %d %s", path, code, b)
		}
		return []byte(b)
	}
	policy := post("/notifications/policies", `{"name":"x","channel":"WEBHOOK","recipients":["`+recv.URL+`"]}`)
	secret := strings.Split(strings.Split(string(policy), `"webhookSecret":"`)[1], `"`)[0]
	post("/customers", `{"legalName":"Initech"}`)
	select {
	case d := <-got:
		if err := billing.VerifyWebhook(secret, d.header, d.body, 0); err != nil || !strings.Contains(string(d.body), `"CUSTOMER_CREATED"`) {
			t.Errorf("webhook %s: %v", d.body, err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no webhook within 30 s")
	}
	if code := stop(); code != exitOK {
		t.Errorf("exit %d", code)
	}
}

func TestServeNotificationFlagErrors(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"SMTPAddrWithoutFrom", []string{"serve", "--smtp-addr", "127.0.0.1:25"}, "--smtp-from"},
		{"FromWithoutAddr", []string{"serve", "--smtp-from", "billing@example.com"}, "--smtp-addr"},
		{"BadFrom", []string{"serve", "--smtp-addr", "127.0.0.1:25", "--smtp-from", "Billing <b@example.com>"}, "sender"},
		{"ZeroRetention", []string{"serve", "--delivery-retention", "0s"}, "--delivery-retention"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			code, _, stderr := runCLI(t, nil, append(c.args, "--db", tempDB(t))...)
			if code != exitUsage || !strings.Contains(stderr, c.want) {
				t.Errorf("exit %d, stderr %q; want a usage error mentioning %s", code, stderr, c.want)
			}
		})
	}
	code, stdout, _ := runCLI(t, nil, "serve", "-h")
	for _, want := range []string{"[$BILLINGD_WEBHOOK_ALLOW_PRIVATE]", "[$BILLINGD_SMTP_ADDR]", "[$BILLINGD_SMTP_PASSWORD]", "(default 720h0m0s)"} {
		if code != exitOK || !strings.Contains(stdout, want) {
			t.Errorf("serve -h does not show %q", want)
		}
	}
}
