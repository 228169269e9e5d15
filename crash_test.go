package billing_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
	"github.com/billingd/billing/dispatch"
	"github.com/billingd/billing/storage/boltstore"
	"github.com/billingd/billing/webhook"
)

// Environment of the crash child (TestCrashChild).
const (
	crashDBEnv  = "BILLING_TEST_CRASH_DB"
	crashNowEnv = "BILLING_TEST_CRASH_NOW"
)

// openCrashService opens the bbolt file at path with a Service whose clock
// is clock.
func openCrashService(t *testing.T, path string, clock *billingtest.Clock) (*billing.Service, *boltstore.Store) {
	t.Helper()
	st, err := boltstore.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := billing.New(st, &billing.Config{Now: clock.Now, WebhookAllowPrivate: true})
	if err != nil {
		t.Fatal(err)
	}
	return svc, st
}

// TestCrashBetweenSendAndRecord: a dispatcher process killed after the
// receiver answered and before the result was recorded loses nothing: after
// a restart on the same file the delivery is sent again, with the same
// webhook-id.
func TestCrashBetweenSendAndRecord(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "billing.db")
	clock := billingtest.NewClock(time.Now().UTC().Truncate(time.Second))
	rc := billingtest.NewWebhookReceiver(t, nil)

	svc, st := openCrashService(t, path, clock)
	account := billingtest.Account(t, svc, "acme")
	p, err := svc.CreateNotificationPolicy(context.Background(), account, billing.CreateNotificationPolicyParams{
		Name: "hooks", Channel: billing.ChannelWebhook, Recipients: []string{rc.URL},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.CreateCustomer(context.Background(), account, billing.CustomerParams{LegalName: "Initech"}); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashDBEnv+"="+path, crashNowEnv+"="+strconv.FormatInt(clock.Now().Unix(), 10))
	out, err := cmd.CombinedOutput()
	if err == nil || cmd.ProcessState.Success() {
		t.Fatalf("the child was not killed: %v\n%s", err, out)
	}
	if n := len(rc.Received()); n != 1 {
		t.Fatalf("receiver got %d requests from the child, want 1\n%s", n, out)
	}

	svc, st = openCrashService(t, path, clock)
	defer st.Close()
	d := dispatch.New(svc, dispatch.Config{Webhooks: webhook.NewSender(true)})
	ds, err := svc.ListDeliveries(context.Background(), account, billing.DeliveryFilter{}, billing.ListParams{})
	if err != nil || len(ds.Items) != 1 || ds.Items[0].Status != billing.DeliveryPending || len(ds.Items[0].Attempts) != 0 {
		t.Fatalf("after the crash: %+v, %v; want one PENDING delivery without a recorded attempt", ds.Items, err)
	}
	if n, err := d.RunOnce(context.Background()); n != 0 || err != nil {
		t.Fatalf("RunOnce while the dead dispatcher's lease holds: %d, %v", n, err)
	}
	clock.Advance(time.Minute + time.Second) // the lease runs out
	if n, err := d.RunOnce(context.Background()); n != 1 || err != nil {
		t.Fatalf("RunOnce after the lease: %d, %v", n, err)
	}
	hits := rc.Received()
	if len(hits) != 2 || hits[1].Attempt != 2 || string(hits[0].Body) != string(hits[1].Body) {
		t.Fatalf("receiver got %d requests, want the same notification twice", len(hits))
	}
	for _, h := range hits {
		if err := billing.VerifyWebhook(p.WebhookSecret, h.Header, h.Body, 48*time.Hour); err != nil {
			t.Errorf("VerifyWebhook: %v", err)
		}
	}
	dl, err := svc.GetDelivery(context.Background(), account, ds.Items[0].ID)
	if err != nil || dl.Status != billing.DeliverySucceeded || len(dl.Attempts) != 1 {
		t.Errorf("after the re-send: %+v, %v", dl, err)
	}
}

// TestCrashChild is the child process of TestCrashBetweenSendAndRecord: it
// dispatches and kills itself with SIGKILL right after the receiver
// answered, before the result is recorded.
func TestCrashChild(t *testing.T) {
	path := os.Getenv(crashDBEnv)
	if path == "" {
		t.Skip("runs only as the child of TestCrashBetweenSendAndRecord")
	}
	now, err := strconv.ParseInt(os.Getenv(crashNowEnv), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	svc, _ := openCrashService(t, path, billingtest.NewClock(time.Unix(now, 0)))
	cfg := dispatch.Config{Webhooks: billingtest.AfterSending(webhook.NewSender(true), func() {
		p, _ := os.FindProcess(os.Getpid())
		_ = p.Kill()
		select {}
	})}
	_, _ = dispatch.New(svc, cfg).RunOnce(context.Background())
	t.Fatal("the dispatcher returned without sending")
}
