// Package smtp sends billingd's e-mails over SMTP: Mailer implements
// billing.Mailer for the Dispatcher.
//
// The message is built here, on the standard library (mime/multipart,
// quoted-printable text, base64 attachments, the Subject Q-encoded after
// its control characters became spaces, so no header can be injected) and
// sent with net/smtp, whose DATA writer dot-stuffs. github.com/wneessen/go-mail
// (v0.8.1) was tried in its place and not kept: it sent the same parts and
// passed this package's tests after small changes, but (1) its automatic
// AUTH refuses PLAIN without TLS even to localhost, where net/smtp allows it
// (a local relay with a password stopped working), (2) when EHLO, STARTTLS
// or AUTH fails it returns without closing the connection, so a retried
// delivery with a wrong password leaks a socket per attempt, and (3) it adds
// User-Agent and X-Mailer headers and the host's name to Message-ID unless
// told not to. What it would add (AUTH LOGIN, SCRAM and XOAUTH2, implicit
// TLS on port 465, a mandatory-TLS policy, RFC 2047 names of non-ASCII
// attachments) are options billingd does not offer yet; when one is wanted
// (AUTH LOGIN for Microsoft 365 is the likely first) it is a small
// net/smtp Auth, or the time to look at go-mail again.
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
	// Password goes with Username.
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

// compose renders e as a MIME message with CRLF line endings:
// multipart/mixed of the body (the text, or multipart/alternative of the
// text and the HTML), then the JSON payload and the attachments.
func (m *Mailer) compose(e billing.Email) ([]byte, error) {
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	if err := writeBody(mw, e); err != nil {
		return nil, err
	}
	files := e.Attachments
	if e.JSON != nil {
		files = append([]billing.Attachment{{Filename: "notification.json", ContentType: "application/json", Data: e.JSON}}, files...)
	}
	for _, f := range files {
		if err := writeAttachment(mw, f); err != nil {
			return nil, err
		}
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

// writeBody writes the text part, or a multipart/alternative part of the
// text and the HTML when e has HTML.
func writeBody(mw *multipart.Writer, e billing.Email) error {
	if e.HTML == "" {
		return writeText(mw, "text/plain; charset=utf-8", e.Text)
	}
	var alt bytes.Buffer
	aw := multipart.NewWriter(&alt)
	if err := writeText(aw, "text/plain; charset=utf-8", e.Text); err != nil {
		return err
	}
	if err := writeText(aw, "text/html; charset=utf-8", e.HTML); err != nil {
		return err
	}
	if err := aw.Close(); err != nil {
		return err
	}
	part, err := mw.CreatePart(textproto.MIMEHeader{"Content-Type": {mime.FormatMediaType("multipart/alternative", map[string]string{"boundary": aw.Boundary()})}})
	if err != nil {
		return err
	}
	_, err = part.Write(alt.Bytes())
	return err
}

// writeText writes one quoted-printable text part with CRLF line endings.
func writeText(mw *multipart.Writer, contentType, text string) error {
	part, err := mw.CreatePart(textproto.MIMEHeader{
		"Content-Type":              {contentType},
		"Content-Transfer-Encoding": {"quoted-printable"},
	})
	if err != nil {
		return err
	}
	qp := quotedprintable.NewWriter(part)
	if _, err := qp.Write([]byte(strings.ReplaceAll(strings.ReplaceAll(text, "\r\n", "\n"), "\n", "\r\n"))); err != nil {
		return err
	}
	return qp.Close()
}

// writeAttachment writes a file as a base64 attachment part.
func writeAttachment(mw *multipart.Writer, f billing.Attachment) error {
	ct := f.ContentType
	if ct == "" {
		ct = "application/octet-stream"
	}
	name := strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f || r == '"' || r == '\\' {
			return '_'
		}
		return r
	}, f.Filename)
	att, err := mw.CreatePart(textproto.MIMEHeader{
		"Content-Type":              {ct + `; name="` + name + `"`},
		"Content-Disposition":       {`attachment; filename="` + name + `"`},
		"Content-Transfer-Encoding": {"base64"},
	})
	if err != nil {
		return err
	}
	enc := base64.StdEncoding.EncodeToString(f.Data)
	for len(enc) > 76 {
		if _, err := fmt.Fprintf(att, "%s\r\n", enc[:76]); err != nil {
			return err
		}
		enc = enc[76:]
	}
	_, err = fmt.Fprintf(att, "%s\r\n", enc)
	return err
}
