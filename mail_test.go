package billing_test

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"io"
	"math/big"
	"mime"
	"mime/multipart"
	"net"
	"net/mail"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/billingd/billing"
	"github.com/billingd/billing/dispatch"
	"github.com/billingd/billing/smtp"
)

// smtpMessage is one message an smtpServer accepted.
type smtpMessage struct {
	from string
	to   []string
	auth string // the decoded AUTH PLAIN response, "" without AUTH
	data string
}

// smtpServer is a small real SMTP server on loopback: EHLO, AUTH PLAIN,
// MAIL, RCPT, DATA, RSET, QUIT.
type smtpServer struct {
	ln   net.Listener
	tls  *tls.Config // offers STARTTLS when set
	mu   sync.Mutex
	msgs []smtpMessage
	tlsd []bool // per message: was the session under TLS
}

func newSMTPServer(t *testing.T, tc ...*tls.Config) *smtpServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &smtpServer{ln: ln}
	if len(tc) > 0 {
		s.tls = tc[0]
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { s.session(c) })
		}
	})
	return s
}

func (s *smtpServer) addr() string { return s.ln.Addr().String() }

func (s *smtpServer) messages() []smtpMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]smtpMessage(nil), s.msgs...)
}

// Long on purpose: the SMTP dialogue of the test receiver, one case of a switch per command.
func (s *smtpServer) session(c net.Conn) {
	defer c.Close()
	r := bufio.NewReader(c)
	reply := func(line string) { io.WriteString(c, line+"\r\n") }
	reply("220 test ESMTP")
	var m smtpMessage
	secure := false
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		line = strings.TrimRight(line, "\r\n")
		verb := strings.ToUpper(strings.SplitN(line, " ", 2)[0])
		switch {
		case verb == "EHLO":
			reply("250-test")
			reply("250-8BITMIME")
			if s.tls != nil && !secure {
				reply("250-STARTTLS")
			}
			reply("250 AUTH PLAIN")
		case verb == "STARTTLS" && s.tls != nil && !secure:
			reply("220 go ahead")
			tc := tls.Server(c, s.tls)
			if err := tc.Handshake(); err != nil {
				return
			}
			c, r, secure = tc, bufio.NewReader(tc), true
		case verb == "AUTH":
			parts := strings.Fields(line)
			if len(parts) != 3 || parts[1] != "PLAIN" {
				reply("504 unsupported")
				continue
			}
			b, _ := base64.StdEncoding.DecodeString(parts[2])
			m.auth = string(b)
			reply("235 ok")
		case verb == "MAIL":
			m.from = strings.TrimSuffix(strings.TrimPrefix(line[5:], "FROM:<"), ">")
			if i := strings.Index(m.from, ">"); i >= 0 {
				m.from = m.from[:i]
			}
			reply("250 ok")
		case verb == "RCPT":
			m.to = append(m.to, strings.TrimSuffix(strings.TrimPrefix(line[5:], "TO:<"), ">"))
			reply("250 ok")
		case verb == "DATA":
			reply("354 go ahead")
			var b strings.Builder
			for {
				l, err := r.ReadString('\n')
				if err != nil {
					return
				}
				if l == ".\r\n" {
					break
				}
				b.WriteString(strings.TrimPrefix(l, "."))
			}
			m.data = b.String()
			s.mu.Lock()
			s.msgs = append(s.msgs, m)
			s.tlsd = append(s.tlsd, secure)
			s.mu.Unlock()
			m = smtpMessage{auth: m.auth}
			reply("250 queued")
		case verb == "RSET" || verb == "NOOP":
			reply("250 ok")
		case verb == "QUIT":
			reply("221 bye")
			return
		default:
			reply("502 unknown command")
		}
	}
}

// parsedMail is a received message split into its parts.
type parsedMail struct {
	header     mail.Header
	text       string
	html       string            // the HTML alternative, if any
	attachment []byte            // the last attachment
	filename   string            // its name
	files      map[string][]byte // every attachment by name
}

func parseMail(t *testing.T, data string) parsedMail {
	t.Helper()
	msg, err := mail.ReadMessage(strings.NewReader(data))
	if err != nil {
		t.Fatalf("reading the message: %v", err)
	}
	mt, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/mixed" {
		t.Fatalf("Content-Type %q, want multipart/mixed", msg.Header.Get("Content-Type"))
	}
	out := parsedMail{header: msg.Header, files: map[string][]byte{}}
	out.parts(t, multipart.NewReader(msg.Body, params["boundary"]))
	return out
}

// parts reads the parts of a multipart body into out, descending into a
// multipart/alternative body.
func (out *parsedMail) parts(t *testing.T, mr *multipart.Reader) {
	t.Helper()
	for {
		p, err := mr.NextPart() // decodes quoted-printable itself
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		mt, params, _ := mime.ParseMediaType(p.Header.Get("Content-Type"))
		if mt == "multipart/alternative" {
			out.parts(t, multipart.NewReader(p, params["boundary"]))
			continue
		}
		b, _ := io.ReadAll(p)
		switch {
		case p.FileName() != "":
			dec, err := base64.StdEncoding.DecodeString(strings.ReplaceAll(string(b), "\r\n", ""))
			if err != nil {
				t.Fatalf("attachment is not base64: %v", err)
			}
			out.filename, out.attachment, out.files[p.FileName()] = p.FileName(), dec, dec
		case mt == "text/html":
			out.html = string(b)
		default:
			out.text = string(b)
		}
	}
}

// TestEmailPolicyOverSMTP: an EMAIL policy's notification goes through the
// SMTP mailer to a real server: recipient, subject, text and the payload
// attached.
func TestEmailPolicyOverSMTP(t *testing.T) {
	t.Parallel()
	e := newNotifyEnv(t, false)
	srv := newSMTPServer(t)
	mailer, err := smtp.NewMailer(smtp.Config{Addr: srv.addr(), From: "billing@acme.test", Username: "user", Password: "pass"})
	if err != nil {
		t.Fatal(err)
	}
	e.policy(billing.ChannelEmail, []string{"ops@example.com", "cfo@example.com"})
	c := e.customer("Initech Ünited")
	e.runOnce(dispatch.New(e.svc, dispatch.Config{Mailer: mailer}))
	msgs := srv.messages()
	if len(msgs) != 2 {
		t.Fatalf("%d messages, want 2 (one per recipient)", len(msgs))
	}
	var rcpts []string
	for _, m := range msgs {
		if m.from != "billing@acme.test" || len(m.to) != 1 || m.auth != "\x00user\x00pass" {
			t.Errorf("envelope from %q to %q auth %q", m.from, m.to, m.auth)
		}
		rcpts = append(rcpts, m.to...)
		pm := parseMail(t, m.data)
		subject, _ := new(mime.WordDecoder).DecodeHeader(pm.header.Get("Subject"))
		if subject != "billingd: CUSTOMER_CREATED" || pm.header.Get("To") != m.to[0] {
			t.Errorf("Subject %q To %q", subject, pm.header.Get("To"))
		}
		if !strings.Contains(pm.text, "Legal name: Initech Ünited") || !strings.Contains(pm.text, c.ID) {
			t.Errorf("text %q lacks the customer's key facts", pm.text)
		}
		var n billing.Notification
		if err := json.Unmarshal(pm.attachment, &n); err != nil || n.Type != billing.NotificationCustomerCreated || pm.filename != "notification.json" {
			t.Errorf("attachment %q (%s): %v", pm.attachment, pm.filename, err)
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
	srv := newSMTPServer(t)
	mailer, err := smtp.NewMailer(smtp.Config{Addr: srv.addr(), From: "billing@acme.test"})
	if err != nil {
		t.Fatal(err)
	}
	err = e.svc.QueueEmail(context.Background(), e.account, billing.Email{
		To: []string{"a@example.com", "b@example.com"}, Subject: "Invoice INV-7",
		Text: "Invoice INV-7\nTotal: 12.30 EUR\nDue: 2024-08-30\n", JSON: []byte(`{"number":"INV-7"}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	e.runOnce(dispatch.New(e.svc, dispatch.Config{Mailer: mailer}))
	msgs := srv.messages()
	if len(msgs) != 1 || strings.Join(msgs[0].to, ",") != "a@example.com,b@example.com" {
		t.Fatalf("messages %+v", msgs)
	}
	pm := parseMail(t, msgs[0].data)
	if pm.header.Get("Subject") != "Invoice INV-7" || pm.text != "Invoice INV-7\r\nTotal: 12.30 EUR\r\nDue: 2024-08-30\r\n" || string(pm.attachment) != `{"number":"INV-7"}` {
		t.Errorf("subject %q text %q attachment %q", pm.header.Get("Subject"), pm.text, pm.attachment)
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
	srv := newSMTPServer(t)
	mailer, err := smtp.NewMailer(smtp.Config{Addr: srv.addr(), From: "billing@acme.test"})
	if err != nil {
		t.Fatal(err)
	}
	e.runOnce(dispatch.New(e.svc, dispatch.Config{Mailer: mailer}))
	if dl := e.onlyDelivery(); dl.Status != billing.DeliverySucceeded || len(srv.messages()) != 1 {
		t.Errorf("after retry: %+v, %d messages", dl, len(srv.messages()))
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
	srv := newSMTPServer(t, serverTLS)
	mailer, err := smtp.NewMailer(smtp.Config{Addr: srv.addr(), From: "billing@acme.test",
		Username: "user", Password: "pass", TLSConfig: &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := mailer.Send(context.Background(), billing.Email{To: []string{"a@example.com"}, Subject: "s", Text: "t"}); err != nil {
		t.Fatal(err)
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if len(srv.msgs) != 1 || !srv.tlsd[0] || srv.msgs[0].auth != "\x00user\x00pass" {
		t.Errorf("messages %+v under TLS %v", srv.msgs, srv.tlsd)
	}
	// An untrusted certificate fails the send instead of falling back to
	// plain text.
	untrusted, err := smtp.NewMailer(smtp.Config{Addr: srv.addr(), From: "billing@acme.test"})
	if err != nil {
		t.Fatal(err)
	}
	srv.mu.Unlock()
	err = untrusted.Send(context.Background(), billing.Email{To: []string{"a@example.com"}, Subject: "s", Text: "t"})
	srv.mu.Lock()
	if err == nil || len(srv.msgs) != 1 {
		t.Errorf("send with an untrusted certificate: %v, %d messages", err, len(srv.msgs))
	}
}
