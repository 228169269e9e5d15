// Package smtp sends billingd's e-mails over SMTP: Mailer implements
// billing.Mailer for the Dispatcher.
package smtp

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net"
	netmail "net/mail"
	netsmtp "net/smtp"
	"net/textproto"
	"strings"
	"time"

	"github.com/billingd/billing"
)

// Config configures a Mailer.
type Config struct {
	// Addr is the SMTP server's host:port. Required.
	Addr string
	// From is the sender address. Required.
	From string
	// Username and Password, when Username is set, authenticate with
	// PLAIN, which net/smtp allows only over TLS or to localhost.
	Username string
	Password string
	// TLSConfig is used for STARTTLS, which is used whenever the server
	// offers it. Defaults to verifying the server name of Addr.
	TLSConfig *tls.Config
	// Timeout bounds one e-mail: connect, dialogue and data. Defaults to
	// 30 seconds.
	Timeout time.Duration
	// HelloName is the name sent with EHLO. Defaults to "localhost".
	HelloName string
	// Now stamps the Date header. Defaults to time.Now.
	Now func() time.Time
}

// Mailer sends e-mails over SMTP, one connection per e-mail.
type Mailer struct {
	cfg  Config
	host string
}

// NewMailer returns a Mailer. It checks that Addr is host:port and
// From is an address.
func NewMailer(cfg Config) (*Mailer, error) {
	host, _, err := net.SplitHostPort(cfg.Addr)
	if err != nil || host == "" {
		return nil, fmt.Errorf("smtp: SMTP address %q is not host:port", cfg.Addr)
	}
	if a, err := netmail.ParseAddress(cfg.From); err != nil || a.Name != "" || a.Address != cfg.From {
		return nil, fmt.Errorf("smtp: SMTP sender %q is not a plain e-mail address", cfg.From)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 30 * time.Second
	}
	if cfg.HelloName == "" {
		cfg.HelloName = "localhost"
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Mailer{cfg: cfg, host: host}, nil
}

// Send sends e as a multipart/mixed message: the text, and e.JSON (when
// set) attached as notification.json.
func (m *Mailer) Send(ctx context.Context, e billing.Email) error {
	if len(e.To) == 0 {
		return errors.New("the e-mail has no recipient")
	}
	for _, to := range e.To {
		if strings.ContainsAny(to, "\r\n<>") {
			return fmt.Errorf("recipient %q is not a plain address", to)
		}
	}
	msg, err := m.compose(e)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, m.cfg.Timeout)
	defer cancel()
	conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", m.cfg.Addr)
	if err != nil {
		return fmt.Errorf("connecting to the SMTP server: %w", err)
	}
	defer conn.Close()
	deadline, _ := ctx.Deadline()
	if err := conn.SetDeadline(deadline); err != nil {
		return err
	}
	return m.dialogue(conn, e.To, msg)
}

// dialogue runs one SMTP session on conn.
func (m *Mailer) dialogue(conn net.Conn, to []string, msg []byte) error {
	c, err := netsmtp.NewClient(conn, m.host)
	if err != nil {
		return fmt.Errorf("SMTP greeting: %w", err)
	}
	defer c.Close()
	if err := c.Hello(m.cfg.HelloName); err != nil {
		return fmt.Errorf("SMTP EHLO: %w", err)
	}
	if ok, _ := c.Extension("STARTTLS"); ok {
		tc := m.cfg.TLSConfig
		if tc == nil {
			tc = &tls.Config{ServerName: m.host, MinVersion: tls.VersionTLS12}
		}
		if err := c.StartTLS(tc); err != nil {
			return fmt.Errorf("SMTP STARTTLS: %w", err)
		}
	}
	if m.cfg.Username != "" {
		if err := c.Auth(netsmtp.PlainAuth("", m.cfg.Username, m.cfg.Password, m.host)); err != nil {
			return fmt.Errorf("SMTP AUTH: %w", err)
		}
	}
	if err := c.Mail(m.cfg.From); err != nil {
		return fmt.Errorf("SMTP MAIL FROM: %w", err)
	}
	for _, r := range to {
		if err := c.Rcpt(r); err != nil {
			return fmt.Errorf("SMTP RCPT TO %s: %w", r, err)
		}
	}
	w, err := c.Data()
	if err != nil {
		return fmt.Errorf("SMTP DATA: %w", err)
	}
	if _, err := w.Write(msg); err != nil {
		return fmt.Errorf("SMTP DATA: %w", err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("SMTP DATA: %w", err)
	}
	return c.Quit()
}

// compose renders e as a MIME message with CRLF line endings.
func (m *Mailer) compose(e billing.Email) ([]byte, error) {
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	text, err := mw.CreatePart(textproto.MIMEHeader{
		"Content-Type":              {"text/plain; charset=utf-8"},
		"Content-Transfer-Encoding": {"quoted-printable"},
	})
	if err != nil {
		return nil, err
	}
	qp := quotedprintable.NewWriter(text)
	if _, err := qp.Write([]byte(strings.ReplaceAll(strings.ReplaceAll(e.Text, "\r\n", "\n"), "\n", "\r\n"))); err != nil {
		return nil, err
	}
	if err := qp.Close(); err != nil {
		return nil, err
	}
	if e.JSON != nil {
		att, err := mw.CreatePart(textproto.MIMEHeader{
			"Content-Type":              {`application/json; name="notification.json"`},
			"Content-Disposition":       {`attachment; filename="notification.json"`},
			"Content-Transfer-Encoding": {"base64"},
		})
		if err != nil {
			return nil, err
		}
		enc := base64.StdEncoding.EncodeToString(e.JSON)
		for len(enc) > 76 {
			fmt.Fprintf(att, "%s\r\n", enc[:76])
			enc = enc[76:]
		}
		fmt.Fprintf(att, "%s\r\n", enc)
	}
	if err := mw.Close(); err != nil {
		return nil, err
	}
	var id [12]byte
	if _, err := rand.Read(id[:]); err != nil {
		return nil, err
	}
	subject := strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return ' '
		}
		return r
	}, e.Subject)
	var msg bytes.Buffer
	fmt.Fprintf(&msg, "From: %s\r\n", m.cfg.From)
	fmt.Fprintf(&msg, "To: %s\r\n", strings.Join(e.To, ", "))
	fmt.Fprintf(&msg, "Subject: %s\r\n", mime.QEncoding.Encode("utf-8", subject))
	fmt.Fprintf(&msg, "Date: %s\r\n", m.cfg.Now().Format(time.RFC1123Z))
	fmt.Fprintf(&msg, "Message-ID: <%s@%s>\r\n", hex.EncodeToString(id[:]), m.host)
	fmt.Fprintf(&msg, "MIME-Version: 1.0\r\n")
	fmt.Fprintf(&msg, "Content-Type: multipart/mixed; boundary=%q\r\n\r\n", mw.Boundary())
	msg.Write(body.Bytes())
	return msg.Bytes(), nil
}

var _ billing.Mailer = (*Mailer)(nil)
