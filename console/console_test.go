package console

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/billingd/billing"
)

func TestSignInAndPagesOfTheAccount(t *testing.T) {
	f := newFixture(t)
	must(f.svc.CreateUsageMetric(context.Background(), f.account, billing.CreateUsageMetricParams{UsageMetricParams: billing.UsageMetricParams{
		Name: "API calls", MetricType: billing.MetricTypeSimple, EventType: "api_call", AggregationType: billing.AggregationCount,
	}}))
	b := f.signedIn()
	for path, want := range map[string][]string{
		"/console/customers":                              {"Globex Ltd"},
		"/console/customers?q=GLOBEX":                     {"Globex Ltd"},
		"/console/customers/" + f.customer.ID:             {"Globex Ltd", "globex", "ann@globex.test", "No billing schedules.", "Draft"},
		"/console/invoices":                               {"Globex Ltd", "DRAFT", "£433.80"},
		"/console/invoices?status=DRAFT":                  {"Globex Ltd"},
		"/console/invoices?paymentStatus=UNPAID":          {"Globex Ltd"},
		"/console/invoices/" + f.invoice.ID:               {"Draft invoice", "Finalize…", "Download PDF", "/document"},
		"/console/invoices/" + f.invoice.ID + "/finalize": {"Finalize invoice", `name="csrf"`},
		"/console/deliveries":                             {"Notifications"},
	} {
		resp, body := b.get(path)
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s: %d\n%s", path, resp.StatusCode, body)
			continue
		}
		contains(t, body, want...)
		csp := resp.Header.Get("Content-Security-Policy")
		if strings.Contains(csp, "script") || strings.Contains(csp, "unsafe") || !strings.Contains(csp, "default-src 'none'") {
			t.Errorf("GET %s: Content-Security-Policy %q", path, csp)
		}
		if resp.Header.Get("X-Frame-Options") != "DENY" || resp.Header.Get("Referrer-Policy") != "same-origin" {
			t.Errorf("GET %s: headers %v", path, resp.Header)
		}
	}
	if _, body := b.get("/console/customers?q=nobody"); !strings.Contains(body, "No customer matches") {
		t.Errorf("a search without matches shows no empty state")
	}
	resp, _ := b.get("/console/invoices/" + f.invoice.ID + "/pdf")
	if resp.Header.Get("Content-Type") != "application/pdf" || !strings.Contains(resp.Header.Get("Content-Disposition"), "attachment") {
		t.Errorf("PDF download: %v", resp.Header)
	}
	resp, body := b.get("/console/invoices/" + f.invoice.ID + "/document")
	if !strings.Contains(body, "Consulting") || !strings.Contains(resp.Header.Get("Content-Security-Policy"), "sandbox") {
		t.Errorf("framed document: %v", resp.Header)
	}
}

func TestSessionCookieIsHttpOnlyAndStrict(t *testing.T) {
	f := newFixture(t)
	b := f.newBrowser()
	resp, _ := b.signIn(f.key.ID, f.key.Secret)
	var found bool
	for _, c := range resp.Cookies() {
		if c.Name == cookieName {
			found = true
			if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != Prefix || c.Secure {
				t.Errorf("session cookie %+v", c)
			}
		}
	}
	if !found {
		t.Fatal("no session cookie")
	}
}

func TestWrongKeyIsRefused(t *testing.T) {
	f := newFixture(t)
	b := f.newBrowser()
	for _, c := range [][2]string{{f.key.ID, "sk_wrong"}, {"no-such-key", f.key.Secret}, {"", ""}} {
		resp, body := b.signIn(c[0], c[1])
		if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "wrong") {
			t.Errorf("sign-in %q: %d", c[0], resp.StatusCode)
		}
	}
	if resp, _ := b.get("/console/customers"); resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/console/sign-in?next=") {
		t.Errorf("a page without a session: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	// The sign-in form itself needs its token.
	resp, _ := b.post("/console/sign-in", url.Values{"keyId": {f.key.ID}, "secret": {f.key.Secret}})
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("sign-in without its token: %d", resp.StatusCode)
	}
}

func TestAnotherAccountsIdsAre404(t *testing.T) {
	f := newFixture(t)
	theirs := f.newCustomer(f.other, "Initech", "initech")
	their := f.newInvoice(f.other, theirs.ID, "1", "10")
	b := f.signedIn()
	for _, path := range []string{
		"/console/customers/" + theirs.ID, "/console/invoices/" + their.ID, "/console/invoices/" + their.ID + "/document",
		"/console/invoices/" + their.ID + "/pdf", "/console/invoices/" + their.ID + "/finalize", "/console/no-such-page",
	} {
		if resp, body := b.get(path); resp.StatusCode != http.StatusNotFound || !strings.Contains(body, "Not found") {
			t.Errorf("GET %s: %d", path, resp.StatusCode)
		}
	}
	resp, _ := b.post("/console/invoices/"+their.ID+"/finalize", url.Values{"csrf": {b.token("/console/customers")}})
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("finalizing another account's invoice: %d", resp.StatusCode)
	}
	if inv := must(f.svc.GetInvoice(context.Background(), f.other, their.ID)); inv.Status != billing.StatusDraft {
		t.Errorf("their invoice is %s", inv.Status)
	}
	if _, body := b.get("/console/customers"); strings.Contains(body, "Initech") {
		t.Error("the customer list shows another account's customer")
	}
}

func TestFormWithoutItsCSRFTokenIsRefused(t *testing.T) {
	f := newFixture(t)
	b := f.signedIn()
	other := f.signedIn() // another session of the same key: its own token
	path := "/console/invoices/" + f.invoice.ID + "/finalize"
	for name, form := range map[string]url.Values{
		"none":            {},
		"empty":           {"csrf": {""}},
		"wrong":           {"csrf": {"x" + b.token(path)}},
		"another session": {"csrf": {other.token(path)}},
	} {
		if resp, body := b.post(path, form); resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "Form refused") {
			t.Errorf("%s token: %d", name, resp.StatusCode)
		}
	}
	if resp, _ := b.post("/console/sign-out", url.Values{}); resp.StatusCode != http.StatusForbidden {
		t.Errorf("sign-out without its token: %d", resp.StatusCode)
	}
	if inv := must(f.svc.GetInvoice(context.Background(), f.account, f.invoice.ID)); inv.Status != billing.StatusDraft {
		t.Fatalf("the refused form changed the invoice: %s", inv.Status)
	}
	resp, _ := b.post(path, url.Values{"csrf": {b.token(path)}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("with its token: %d", resp.StatusCode)
	}
	if inv := must(f.svc.GetInvoice(context.Background(), f.account, f.invoice.ID)); inv.Status != billing.StatusFinal {
		t.Errorf("the invoice is %s", inv.Status)
	}
}

func TestSessionsEnd(t *testing.T) {
	f := newFixture(t)
	ended := func(b *browser) bool {
		resp, _ := b.get("/console/customers")
		return resp.StatusCode == http.StatusSeeOther
	}
	t.Run("sign-out", func(t *testing.T) {
		b := f.signedIn()
		resp, _ := b.post("/console/sign-out", url.Values{"csrf": {b.token("/console/customers")}})
		if resp.StatusCode != http.StatusSeeOther || !ended(b) {
			t.Error("still signed in after sign-out")
		}
	})
	t.Run("idle", func(t *testing.T) {
		b := f.signedIn()
		f.clock.Advance(11 * time.Hour)
		if ended(b) {
			t.Fatal("ended before the idle timeout")
		}
		f.clock.Advance(11 * time.Hour) // used 11 h ago
		if ended(b) {
			t.Fatal("a used session ended")
		}
		f.clock.Advance(12 * time.Hour)
		if !ended(b) {
			t.Error("still signed in after 12 h idle")
		}
	})
	t.Run("absolute", func(t *testing.T) {
		b := f.signedIn()
		for range 16 {
			f.clock.Advance(11 * time.Hour)
			ended(b)
		}
		if !ended(b) {
			t.Error("still signed in after 7 days")
		}
	})
	t.Run("revoked key", func(t *testing.T) {
		b := f.signedIn()
		must(f.svc.RevokeAPIKey(context.Background(), f.key.ID))
		if !ended(b) {
			t.Error("still signed in with a revoked key")
		}
	})
}

func TestSessionCookieIsSecureOverTLS(t *testing.T) {
	f := newFixture(t)
	tls := httptest.NewTLSServer(f.con)
	defer tls.Close()
	b := f.newBrowser()
	b.client.Transport = tls.Client().Transport
	f.srv.URL = tls.URL // the browser's requests go to the TLS server
	resp, _ := b.signIn(f.key.ID, f.key.Secret)
	found := false
	for _, c := range resp.Cookies() {
		if c.Name == hostPrefix+cookieName {
			found = true
			if !c.Secure || c.Path != "/" || !c.HttpOnly {
				t.Errorf("the session cookie over TLS is not Secure, HttpOnly and at /: %+v", c)
			}
		}
	}
	if !found {
		t.Errorf("no %s%s cookie over TLS: %v", hostPrefix, cookieName, resp.Cookies())
	}
	if resp.Header.Get("Strict-Transport-Security") == "" {
		t.Error("no Strict-Transport-Security over TLS")
	}
	if resp.StatusCode != http.StatusSeeOther {
		t.Errorf("sign-in over TLS: %d", resp.StatusCode)
	}
}

func TestRefusedActionShowsTheServiceMessage(t *testing.T) {
	f := newFixture(t)
	must(f.svc.FinalizeInvoice(context.Background(), f.account, f.invoice.ID))
	b := f.signedIn()
	path := "/console/invoices/" + f.invoice.ID + "/pay"
	resp, body := b.post(path, url.Values{"csrf": {b.token(path)}, "amount": {"5000.00"}, "paidAt": {"2024-07-30"}})
	// The API's status for the refusal (invalid_state: 409), as for every refusal.
	if resp.StatusCode != http.StatusConflict || !strings.Contains(body, `role="alert"`) || !strings.Contains(body, `value="5000.00"`) {
		t.Fatalf("a payment above the amount due: %d\n%s", resp.StatusCode, body)
	}
	resp, body = b.post(path, url.Values{"csrf": {b.token(path)}, "amount": {"lots"}, "paidAt": {"2024-07-30"}})
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "amount must be a decimal number") {
		t.Fatalf("a payment of no number: %d\n%s", resp.StatusCode, body)
	}
	if inv := must(f.svc.GetInvoice(context.Background(), f.account, f.invoice.ID)); inv.PaymentStatus != billing.PaymentStatusUnpaid {
		t.Errorf("a refused payment changed the invoice: %s", inv.PaymentStatus)
	}
}
