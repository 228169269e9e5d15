package smtp_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"mime"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
	"github.com/billingd/billing/smtp"
)

// selfSigned returns a server TLS config for 127.0.0.1 and a client pool
// trusting it.
func selfSigned(t *testing.T) (*tls.Config, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}, pool
}

// TestSMTPStartTLS: the mailer upgrades with STARTTLS when the server
// offers it, verifying the server's certificate, and authenticates inside.
func TestSMTPStartTLS(t *testing.T) {
	t.Parallel()
	serverTLS, pool := selfSigned(t)
	srv := billingtest.NewSMTPServer(t, serverTLS)
	mailer, err := smtp.NewMailer(smtp.Config{Addr: srv.Addr(), From: "billing@acme.test",
		Username: "user", Password: "pass", TLSConfig: &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := mailer.Send(context.Background(), billing.Email{To: []string{"a@example.com"}, Subject: "s", Text: "t"}); err != nil {
		t.Fatal(err)
	}
	if msgs := srv.Messages(); len(msgs) != 1 || !msgs[0].TLS || msgs[0].Auth != "\x00user\x00pass" {
		t.Errorf("messages %+v, want one under TLS with AUTH PLAIN", msgs)
	}
	// An untrusted certificate fails the send instead of falling back to
	// plain text.
	untrusted, err := smtp.NewMailer(smtp.Config{Addr: srv.Addr(), From: "billing@acme.test"})
	if err != nil {
		t.Fatal(err)
	}
	err = untrusted.Send(context.Background(), billing.Email{To: []string{"a@example.com"}, Subject: "s", Text: "t"})
	if msgs := srv.Messages(); err == nil || len(msgs) != 1 {
		t.Errorf("send with an untrusted certificate: %v, %d messages", err, len(msgs))
	}
}

// TestMailerSendsEveryPart: one e-mail with a plain-text body, an HTML
// alternative, the notification JSON and a file arrives as one
// multipart/mixed message with each part intact, non-ASCII included, to
// every recipient of the envelope.
func TestMailerSendsEveryPart(t *testing.T) {
	t.Parallel()
	srv, mailer := newMailer(t)
	e := billing.Email{
		To: []string{"a@example.com", "b@example.com"}, Subject: "Rechnung für Müller",
		Text: "Grüße, Ωmega\n", HTML: "<p>Grüße</p>", JSON: []byte(`{"id":"n1"}`),
		Attachments: []billing.Attachment{{Filename: "INV00001.pdf", ContentType: "application/pdf", Data: []byte("%PDF-1.4\x00\xff")}},
	}
	if err := mailer.Send(context.Background(), e); err != nil {
		t.Fatal(err)
	}
	msgs := srv.Messages()
	if len(msgs) != 1 || msgs[0].From != "billing@acme.test" || strings.Join(msgs[0].To, ",") != "a@example.com,b@example.com" {
		t.Fatalf("envelopes %+v, want one from billing@acme.test to both", msgs)
	}
	pm := billingtest.ParseMail(t, msgs[0].Data)
	if pm.Header.Get("From") != "billing@acme.test" || !strings.Contains(pm.Header.Get("To"), "b@example.com") {
		t.Errorf("From %q To %q", pm.Header.Get("From"), pm.Header.Get("To"))
	}
	if subject, err := new(mime.WordDecoder).DecodeHeader(pm.Header.Get("Subject")); err != nil || subject != e.Subject {
		t.Errorf("Subject %q (%v), want %q", subject, err, e.Subject)
	}
	if strings.ReplaceAll(pm.Text, "\r\n", "\n") != e.Text || pm.HTML != e.HTML {
		t.Errorf("text %q html %q", pm.Text, pm.HTML)
	}
	if string(pm.Files["notification.json"]) != `{"id":"n1"}` || string(pm.Files["INV00001.pdf"]) != "%PDF-1.4\x00\xff" {
		t.Errorf("attachments %q", pm.Files)
	}
}

// TestMailerSubjectInjectsNoHeader: line breaks in a subject become spaces,
// so a subject cannot add a header (a Bcc) to the message.
func TestMailerSubjectInjectsNoHeader(t *testing.T) {
	t.Parallel()
	srv, mailer := newMailer(t)
	if err := mailer.Send(context.Background(), billing.Email{To: []string{"a@example.com"}, Subject: "Invoice\r\nBcc: x@evil.test", Text: "t"}); err != nil {
		t.Fatal(err)
	}
	pm := billingtest.ParseMail(t, srv.Messages()[0].Data)
	subject, err := new(mime.WordDecoder).DecodeHeader(pm.Header.Get("Subject"))
	if err != nil || subject != "Invoice  Bcc: x@evil.test" || pm.Header.Get("Bcc") != "" || len(srv.Messages()[0].To) != 1 {
		t.Errorf("Subject %q (%v), Bcc %q, envelope %v", subject, err, pm.Header.Get("Bcc"), srv.Messages()[0].To)
	}
}

// newMailer is a loopback SMTP server without TLS and a mailer to it.
func newMailer(t *testing.T) (*billingtest.SMTPServer, *smtp.Mailer) {
	t.Helper()
	srv := billingtest.NewSMTPServer(t)
	mailer, err := smtp.NewMailer(smtp.Config{Addr: srv.Addr(), From: "billing@acme.test"})
	if err != nil {
		t.Fatal(err)
	}
	return srv, mailer
}
