package console

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
	"github.com/billingd/billing/dispatch"
	"github.com/billingd/billing/webhook"
)

// The browser tests drive Debian's chromium (headless) through the Chrome
// DevTools protocol with chromedp. Without chromium they are skipped,
// except in CI (CI=true), where a skipped browser test is a failure.
// BILLINGD_CHROMIUM names another Chromium binary. With
// BILLINGD_SCREENSHOTS=dir the test saves screenshots of the main pages
// there (docs/console is where the committed ones live).

// chromium returns the path of the browser, or skips the test without one.
func chromium(t *testing.T) string {
	t.Helper()
	candidates := []string{os.Getenv("BILLINGD_CHROMIUM"), "chromium", "chromium-browser", "google-chrome"}
	for _, c := range candidates {
		if c == "" {
			continue
		}
		if p, err := exec.LookPath(c); err == nil {
			return p
		}
	}
	msg := "browser test skipped: chromium is not installed; run `apt-get install -y chromium` " +
		"(or set BILLINGD_CHROMIUM to a Chromium binary) and `go test ./console` again; .ci/run installs it"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// tab is one headless browser tab on a fixture's server.
type tab struct {
	t     *testing.T
	ctx   context.Context
	base  string
	shots string // BILLINGD_SCREENSHOTS
}

// newTab starts chromium with a fresh profile and opens a tab.
func newTab(t *testing.T, base string) *tab {
	t.Helper()
	path := chromium(t)
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.Flag("hide-scrollbars", true), chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 860))
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil { // starts the browser
		t.Fatalf("starting chromium: %v", err)
	}
	return &tab{t: t, ctx: ctx, base: base, shots: os.Getenv("BILLINGD_SCREENSHOTS")}
}

// run runs steps with a timeout, failing the test on an error.
func (b *tab) run(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

// load runs steps that navigate (a link, a form) and returns the status of
// the page they lead to.
func (b *tab) load(what string, steps ...chromedp.Action[chromedp.Void]) int64 {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	resp, err := chromedp.RunResponse(ctx, steps...)
	if err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
	return resp.Status
}

// open navigates to a console path and returns the page's status.
func (b *tab) open(path string) int64 {
	b.t.Helper()
	return b.load("open "+path, chromedp.Navigate(b.base+path))
}

// click follows a link or presses a button that loads a page.
func (b *tab) click(sel string) int64 {
	b.t.Helper()
	return b.load("click "+sel, chromedp.Click(chromedp.CSS(sel)))
}

// text returns the visible text of the page's main element.
func (b *tab) text() string {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("main")))
	if err != nil {
		b.t.Fatalf("reading the page: %v", err)
	}
	return s
}

// see fails unless the page's main text contains every want.
func (b *tab) see(want ...string) {
	b.t.Helper()
	text := b.text()
	for _, w := range want {
		if !strings.Contains(text, w) {
			b.t.Fatalf("the page lacks %q:\n%s", w, text)
		}
	}
}

// shot saves a screenshot of the viewport as <dir>/<name>.png when
// BILLINGD_SCREENSHOTS is set.
func (b *tab) shot(name string) {
	b.t.Helper()
	if b.shots == "" {
		return
	}
	png, err := chromedp.Run(b.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		b.t.Fatalf("screenshot: %v", err)
	}
	if err := os.MkdirAll(b.shots, 0o755); err != nil {
		b.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(b.shots, name+".png"), png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

// signIn fills in and submits the sign-in form and returns the status.
func (b *tab) signIn(keyID, secret string) int64 {
	b.t.Helper()
	b.open("/console/sign-in")
	b.run("fill in the sign-in form", chromedp.SendKeys(chromedp.ID("keyId"), keyID),
		chromedp.SendKeys(chromedp.ID("secret"), secret))
	return b.click("main form button[type=submit]")
}

// signedInTab opens a tab on the fixture's server and signs in with the
// fixture's key, failing the test unless the console lets it in.
func (f *fixture) signedInTab(t *testing.T) *tab {
	t.Helper()
	b := newTab(t, f.srv.URL)
	if st := b.signIn(f.key.ID, f.key.Secret); st != http.StatusOK {
		t.Fatalf("sign-in: %d", st)
	}
	return b
}

// apiStatus reads an invoice's status and payment status over the REST API.
func (f *fixture) apiStatus(t *testing.T, id string) string {
	t.Helper()
	req := must(http.NewRequest(http.MethodGet, f.srv.URL+"/invoices/"+id, nil))
	req.Header.Set("Authorization", f.key.Authorization())
	resp := must(http.DefaultClient.Do(req))
	defer resp.Body.Close()
	var inv struct{ Status, PaymentStatus string }
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&inv) != nil {
		t.Fatalf("GET /invoices/%s: %d", id, resp.StatusCode)
	}
	return inv.Status + " " + inv.PaymentStatus
}

// TestConsoleInABrowser walks the console as a person does, in headless
// chromium against the real server: sign-in (a wrong key first), search a
// customer, open an invoice, finalize, send and pay it (each checked over
// the API), retry a failed webhook delivery, another account's invoice, a
// forged form, sign-out.
//
// Long on purpose: it is one person's session, step after step on the
// same tab and data, and reads best in that order.
func TestConsoleInABrowser(t *testing.T) {
	f := newFixture(t, billingtest.WithConfig(billing.Config{WebhookAllowPrivate: true}))
	ctx := context.Background()
	// The ERP's endpoint fails (410 Gone: no retries) until it is told to
	// accept.
	var accept atomic.Bool
	rcv := billingtest.NewWebhookReceiver(t, func(int, http.ResponseWriter) int {
		if accept.Load() {
			return http.StatusOK
		}
		return http.StatusGone
	})
	must(f.svc.CreateNotificationPolicy(ctx, f.account, billing.CreateNotificationPolicyParams{
		Name: "ERP", Channel: billing.ChannelWebhook, Recipients: []string{rcv.URL},
		NotificationTypes: []billing.NotificationType{billing.NotificationInvoiceIssued},
	}))
	dispatcher := dispatch.New(f.svc, dispatch.Config{Webhooks: webhook.NewSender(true)})
	f.sampleData()
	b := newTab(t, f.srv.URL)

	// Sign-in: a wrong secret is refused, the right one lands on the console.
	if st := b.signIn(f.key.ID, "sk_not-the-secret"); st != http.StatusUnauthorized {
		t.Fatalf("a wrong secret: %d", st)
	}
	b.see("The key id or the secret is wrong")
	b.open("/console/sign-in")
	b.shot("sign-in")
	if st := b.signIn(f.key.ID, f.key.Secret); st != http.StatusOK {
		t.Fatalf("sign-in: %d", st)
	}

	// Find the customer and open its draft invoice.
	b.open("/console/customers")
	b.shot("customers")
	b.run("search", chromedp.SendKeys(chromedp.ID("q"), "globex"))
	b.click("form.filters button[type=submit]")
	b.see("Globex Ltd")
	b.click(`a[href="/console/customers/` + f.customer.ID + `"]`)
	b.see("Globex Ltd", "globex", "Billing schedules", "Credit balances", "Seat balances")
	b.shot("customer")
	b.click(`a[href="/console/invoices/` + f.invoice.ID + `"]`)
	b.see("Draft invoice", "DRAFT")

	// Finalize, send and pay, each through its confirmation.
	for _, step := range []struct{ action, done, api string }{
		{"finalize", "The invoice was finalized.", "FINAL UNPAID"},
		{"send", "The invoice was sent.", "SENT UNPAID"},
		{"pay", "The payment was recorded.", "SENT PAID"},
	} {
		b.click(`.toolbar a[href$="/` + step.action + `"]`)
		if step.action == "pay" {
			b.see("Record a payment", "Amount (GBP)")
			b.shot("record-payment")
		}
		b.click("main form button[type=submit]")
		b.see(step.done)
		if got := f.apiStatus(t, f.invoice.ID); got != step.api {
			t.Fatalf("after %s the API says %s, want %s", step.action, got, step.api)
		}
	}
	b.see("Invoice INV", "PAID")
	b.shot("invoice")

	// The webhook of the sent invoice fails; retry it once the receiver
	// accepts.
	if _, err := dispatcher.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	failed := must(f.svc.ListDeliveries(ctx, f.account, billing.DeliveryFilter{Status: billing.DeliveryFailed, PolicyID: ""}, billing.ListParams{}))
	var hook string
	for _, d := range failed.Items {
		if d.Channel == billing.ChannelWebhook {
			hook = d.ID
		}
	}
	if hook == "" {
		t.Fatalf("no failed webhook delivery: %+v", failed.Items)
	}
	b.open("/console/deliveries?status=FAILED")
	b.see("INVOICE_ISSUED", "FAILED", "HTTP 410")
	b.shot("deliveries")
	accept.Store(true)
	b.click(`a[href="/console/deliveries/` + hook + `/retry"]`)
	b.click("main form button[type=submit]")
	b.see("The delivery was queued again.")
	if _, err := dispatcher.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	accepted := slices.DeleteFunc(rcv.Received(), func(h billingtest.Webhook) bool { return h.Status != http.StatusOK })
	if d := must(f.svc.GetDelivery(ctx, f.account, hook)); d.Status != billing.DeliverySucceeded || len(accepted) != 1 {
		t.Fatalf("after the retry the delivery is %s, %d webhooks accepted", d.Status, len(accepted))
	}
	// A succeeded delivery offers no retry, and links to its invoice.
	b.open("/console/deliveries?status=SUCCEEDED")
	retries := must(chromedp.Run(b.ctx, chromedp.Evaluate[int](`document.querySelectorAll('a[href$="/retry"]').length`)))
	if retries != 0 {
		t.Fatalf("%d Retry links on succeeded deliveries", retries)
	}
	b.click(`a[href="/console/invoices/` + f.invoice.ID + `"]`)
	b.see("Invoice INV", "PAID")

	// Another account's invoice is not found; a forged form is refused.
	their := f.newInvoice(f.other, f.newCustomer(f.other, "Initech", "initech").ID, "1", "10")
	if st := b.open("/console/invoices/" + their.ID); st != http.StatusNotFound {
		t.Fatalf("another account's invoice: %d", st)
	}
	b.see("Not found")
	b.open("/console/invoices/" + f.invoice.ID + "/void")
	b.run("forge the form", chromedp.SetAttributeValue(chromedp.CSS(`main input[name=csrf]`), "value", "forged"))
	if st := b.click("main form button[type=submit]"); st != http.StatusForbidden {
		t.Fatalf("a forged form: %d", st)
	}
	b.see("Form refused")
	if got := f.apiStatus(t, f.invoice.ID); got != "SENT PAID" {
		t.Fatalf("the forged form changed the invoice: %s", got)
	}

	// Sign out: the console asks for a key again.
	b.open("/console/invoices")
	b.shot("invoices")
	b.click("form.signout button")
	b.see("You are signed out.")
	b.open("/console/invoices")
	b.see("Sign in", "Key id")
}

// sampleData adds customers and invoices in several states, so that the
// lists look like an account in use (and the screenshots show it).
func (f *fixture) sampleData() {
	ctx := context.Background()
	for i, name := range []string{"Hooli Inc", "Umbrella plc", "Stark Industries", "Wayne Enterprises"} {
		cu := f.newCustomer(f.account, name, strings.ToLower(strings.Fields(name)[0]))
		inv := f.newInvoice(f.account, cu.ID, []string{"12", "1", "40", "7"}[i], []string{"99.00", "2400.00", "12.50", "310.00"}[i])
		if i == 3 {
			continue // stays a draft
		}
		must(f.svc.FinalizeInvoice(ctx, f.account, inv.ID))
		if i == 1 {
			must(f.svc.RecordPayment(ctx, f.account, inv.ID, billing.PaymentParams{
				Amount: new(billing.MustDecimal("1000.00")), PaidAt: new(must(billing.ParseDate("2024-07-30"))), Method: "bank transfer",
			}))
		}
	}
}
