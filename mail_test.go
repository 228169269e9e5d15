package billing_test

import (
	"context"
	"encoding/json"
	"mime"
	"net"
	"strings"
	"testing"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
	"github.com/billingd/billing/dispatch"
	"github.com/billingd/billing/smtp"
)

// loopbackMailer starts a real SMTP server on loopback and returns it with
// a mailer that sends to it from billing@acme.test (cfg adds the rest, such
// as credentials).
func loopbackMailer(tb testing.TB, cfg smtp.Config) (*billingtest.SMTPServer, *smtp.Mailer) {
	tb.Helper()
	srv := billingtest.NewSMTPServer(tb)
	cfg.Addr, cfg.From = srv.Addr(), "billing@acme.test"
	mailer, err := smtp.NewMailer(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return srv, mailer
}

// TestEmailPolicyOverSMTP: an EMAIL policy's notification goes through the
// SMTP mailer to a real server: recipient, subject, text and the payload
// attached.
func TestEmailPolicyOverSMTP(t *testing.T) {
	t.Parallel()
	e := newNotifyEnv(t, false)
	srv, mailer := loopbackMailer(t, smtp.Config{Username: "user", Password: "pass"})
	e.policy(billing.ChannelEmail, []string{"ops@example.com", "cfo@example.com"})
	c := e.customer("Initech Ünited")
	e.runOnce(dispatch.New(e.svc, dispatch.Config{Mailer: mailer}))
	msgs := srv.Messages()
	if len(msgs) != 2 {
		t.Fatalf("%d messages, want 2 (one per recipient)", len(msgs))
	}
	var rcpts []string
	for _, m := range msgs {
		if m.From != "billing@acme.test" || len(m.To) != 1 || m.Auth != "\x00user\x00pass" {
			t.Errorf("envelope from %q to %q auth %q", m.From, m.To, m.Auth)
		}
		rcpts = append(rcpts, m.To...)
		pm := billingtest.ParseMail(t, m.Data)
		subject, _ := new(mime.WordDecoder).DecodeHeader(pm.Header.Get("Subject"))
		if subject != "billingd: CUSTOMER_CREATED" || pm.Header.Get("To") != m.To[0] {
			t.Errorf("Subject %q To %q", subject, pm.Header.Get("To"))
		}
		if !strings.Contains(pm.Text, "Legal name: Initech Ünited") || !strings.Contains(pm.Text, c.ID) {
			t.Errorf("text %q lacks the customer's key facts", pm.Text)
		}
		var n billing.Notification
		if err := json.Unmarshal(pm.Attachment, &n); err != nil || n.Type != billing.NotificationCustomerCreated || pm.Filename != "notification.json" {
			t.Errorf("attachment %q (%s): %v", pm.Attachment, pm.Filename, err)
		}
	}
	if !(strings.Join(rcpts, ",") == "ops@example.com,cfo@example.com" || strings.Join(rcpts, ",") == "cfo@example.com,ops@example.com") {
		t.Errorf("recipients %q", rcpts)
	}
	for _, dl := range e.deliveries(billing.DeliveryFilter{}) {
		if dl.Status != billing.DeliverySucceeded {
			t.Errorf("delivery %+v", dl)
		}
	}
}

// TestQueuedEmail: an e-mail queued by an operation (document sending) is
// one delivery to all its addresses, with its own attachment.
func TestQueuedEmail(t *testing.T) {
	t.Parallel()
	e := newNotifyEnv(t, false)
	srv, mailer := loopbackMailer(t, smtp.Config{})
	err := e.svc.QueueEmail(context.Background(), e.account, billing.Email{
		To: []string{"a@example.com", "b@example.com"}, Subject: "Invoice INV-7",
		Text: "Invoice INV-7\nTotal: 12.30 EUR\nDue: 2024-08-30\n", JSON: []byte(`{"number":"INV-7"}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	e.runOnce(dispatch.New(e.svc, dispatch.Config{Mailer: mailer}))
	msgs := srv.Messages()
	if len(msgs) != 1 || strings.Join(msgs[0].To, ",") != "a@example.com,b@example.com" {
		t.Fatalf("messages %+v", msgs)
	}
	pm := billingtest.ParseMail(t, msgs[0].Data)
	if pm.Header.Get("Subject") != "Invoice INV-7" || pm.Text != "Invoice INV-7\r\nTotal: 12.30 EUR\r\nDue: 2024-08-30\r\n" || string(pm.Attachment) != `{"number":"INV-7"}` {
		t.Errorf("subject %q text %q attachment %q", pm.Header.Get("Subject"), pm.Text, pm.Attachment)
	}
	if dl := e.onlyDelivery(); dl.Status != billing.DeliverySucceeded || dl.PolicyID != "" {
		t.Errorf("delivery %+v", dl)
	}
}

// TestEmailNotConfigured: without a Mailer an e-mail delivery is FAILED
// with the documented reason, and succeeds when retried once SMTP is
// configured.
func TestEmailNotConfigured(t *testing.T) {
	t.Parallel()
	e := newNotifyEnv(t, false)
	e.policy(billing.ChannelEmail, []string{"ops@example.com"})
	e.customer("Initech")
	e.runOnce(dispatch.New(e.svc, dispatch.Config{Webhooks: e.webhooks}))
	dl := e.onlyDelivery()
	if dl.Status != billing.DeliveryFailed || len(dl.Attempts) != 1 || dl.Attempts[0].Error != "email delivery is not configured" {
		t.Fatalf("delivery %+v", dl)
	}
	if _, err := e.svc.RetryDelivery(context.Background(), e.account, dl.ID); err != nil {
		t.Fatal(err)
	}
	srv, mailer := loopbackMailer(t, smtp.Config{})
	e.runOnce(dispatch.New(e.svc, dispatch.Config{Mailer: mailer}))
	if dl := e.onlyDelivery(); dl.Status != billing.DeliverySucceeded || len(srv.Messages()) != 1 {
		t.Errorf("after retry: %+v, %d messages", dl, len(srv.Messages()))
	}
}

// TestSMTPServerDown: an unreachable SMTP server is a retryable failure.
func TestSMTPServerDown(t *testing.T) {
	t.Parallel()
	e := newNotifyEnv(t, false)
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	mailer, err := smtp.NewMailer(smtp.Config{Addr: addr, From: "billing@acme.test"})
	if err != nil {
		t.Fatal(err)
	}
	e.policy(billing.ChannelEmail, []string{"ops@example.com"})
	e.customer("Initech")
	e.runOnce(dispatch.New(e.svc, dispatch.Config{Mailer: mailer}))
	if dl := e.onlyDelivery(); dl.Status != billing.DeliveryPending || len(dl.Attempts) != 1 || dl.Attempts[0].Error == "" {
		t.Errorf("delivery %+v, want PENDING after one failed attempt", dl)
	}
}
