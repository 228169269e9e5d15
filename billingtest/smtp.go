package billingtest

import (
	"bufio"
	"crypto/tls"
	"encoding/base64"
	"io"
	"mime"
	"mime/multipart"
	"net"
	"net/mail"
	"strings"
	"sync"
	"testing"
)

// SMTPMessage is one message an SMTPServer accepted.
type SMTPMessage struct {
	From string   // the envelope sender
	To   []string // the envelope recipients
	Auth string   // the decoded AUTH PLAIN response, "" without AUTH
	Data string   // the message as sent, dot-unstuffed
	TLS  bool     // the session was under TLS (STARTTLS)
}

// SMTPServer is a small real SMTP server on loopback for tests of the
// mailer and of what is mailed: EHLO, STARTTLS, AUTH PLAIN, MAIL, RCPT,
// DATA, RSET, QUIT.
type SMTPServer struct {
	ln   net.Listener
	tls  *tls.Config // offers STARTTLS when set
	mu   sync.Mutex
	msgs []SMTPMessage
}

// NewSMTPServer starts an SMTPServer on loopback, closed when tb ends; with
// a TLS config it offers STARTTLS.
func NewSMTPServer(tb testing.TB, tc ...*tls.Config) *SMTPServer {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	s := &SMTPServer{ln: ln}
	if len(tc) > 0 {
		s.tls = tc[0]
	}
	var wg sync.WaitGroup
	tb.Cleanup(func() { ln.Close(); wg.Wait() })
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

// Addr is the server's host:port.
func (s *SMTPServer) Addr() string { return s.ln.Addr().String() }

// Messages returns the messages accepted so far, in order.
func (s *SMTPServer) Messages() []SMTPMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]SMTPMessage(nil), s.msgs...)
}

// Long on purpose: the SMTP dialogue of the test receiver, one case of a switch per command.
func (s *SMTPServer) session(c net.Conn) {
	defer c.Close()
	r := bufio.NewReader(c)
	reply := func(line string) { io.WriteString(c, line+"\r\n") }
	reply("220 test ESMTP")
	var m SMTPMessage
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
			m.Auth = string(b)
			reply("235 ok")
		case verb == "MAIL":
			m.From = strings.TrimSuffix(strings.TrimPrefix(line[5:], "FROM:<"), ">")
			if i := strings.Index(m.From, ">"); i >= 0 {
				m.From = m.From[:i]
			}
			reply("250 ok")
		case verb == "RCPT":
			m.To = append(m.To, strings.TrimSuffix(strings.TrimPrefix(line[5:], "TO:<"), ">"))
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
			m.Data, m.TLS = b.String(), secure
			s.mu.Lock()
			s.msgs = append(s.msgs, m)
			s.mu.Unlock()
			m = SMTPMessage{Auth: m.Auth}
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

// ParsedMail is a received message split into its parts.
type ParsedMail struct {
	Header     mail.Header       // the message's headers
	Text       string            // the plain-text body
	HTML       string            // the HTML alternative, if any
	Attachment []byte            // the last attachment
	Filename   string            // its name
	Files      map[string][]byte // every attachment by name
}

// ParseMail splits data, a multipart/mixed message as an SMTPServer
// received it, into its parts; anything else fails tb.
func ParseMail(tb testing.TB, data string) ParsedMail {
	tb.Helper()
	msg, err := mail.ReadMessage(strings.NewReader(data))
	if err != nil {
		tb.Fatalf("reading the message: %v", err)
	}
	mt, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/mixed" {
		tb.Fatalf("Content-Type %q, want multipart/mixed", msg.Header.Get("Content-Type"))
	}
	out := ParsedMail{Header: msg.Header, Files: map[string][]byte{}}
	out.parts(tb, multipart.NewReader(msg.Body, params["boundary"]))
	return out
}

// parts reads the parts of a multipart body into out, descending into a
// multipart/alternative body.
func (out *ParsedMail) parts(tb testing.TB, mr *multipart.Reader) {
	tb.Helper()
	for {
		p, err := mr.NextPart() // decodes quoted-printable itself
		if err == io.EOF {
			return
		}
		if err != nil {
			tb.Fatal(err)
		}
		mt, params, _ := mime.ParseMediaType(p.Header.Get("Content-Type"))
		if mt == "multipart/alternative" {
			out.parts(tb, multipart.NewReader(p, params["boundary"]))
			continue
		}
		b, _ := io.ReadAll(p)
		switch {
		case p.FileName() != "":
			dec, err := base64.StdEncoding.DecodeString(strings.ReplaceAll(string(b), "\r\n", ""))
			if err != nil {
				tb.Fatalf("attachment is not base64: %v", err)
			}
			out.Filename, out.Attachment, out.Files[p.FileName()] = p.FileName(), dec, dec
		case mt == "text/html":
			out.HTML = string(b)
		default:
			out.Text = string(b)
		}
	}
}
