package console

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/billingd/billing"
)

// notFound is the error of a console path that is no page.
var notFound = billing.Errorf(billing.CodeNotFound, "no such page")

// signInForm is the data of the sign-in page.
type signInForm struct {
	KeyID, Next, Token, Error, Notice string
}

// signInPage shows the sign-in form. Its CSRF token, before any session
// exists, is a random value in a cookie that the form must repeat.
func (c *Console) signInPage(w http.ResponseWriter, r *http.Request) {
	if s, err := c.currentSession(r); err == nil && s != nil {
		http.Redirect(w, r, Prefix, http.StatusSeeOther)
		return
	}
	f := signInForm{Next: safeNext(r.URL.Query().Get("next"))}
	if r.URL.Query().Has("signed-out") {
		f.Notice = "You are signed out."
	}
	c.showSignIn(w, r, http.StatusOK, f)
}

// showSignIn renders the sign-in form with a fresh pre-session token.
func (c *Console) showSignIn(w http.ResponseWriter, r *http.Request, status int, f signInForm) {
	f.Token = c.signInToken(c.cfg.Now())
	c.setCookie(w, r, preCookieName, f.Token, int(signInTokenAge.Seconds()))
	rq := &request{c: c, w: w, r: r, ctx: r.Context()}
	if err := rq.render(status, "signin", "Sign in", f); err != nil {
		rq.fail(err)
	}
}

// signIn checks the key id and secret and starts a session. The form's
// token must be one this console signed, repeated in the sign-in cookie.
// Wrong credentials are logged and counted (Guard.CountAuthFailure), and
// an address that keeps sending them is made to wait (signInLimiter).
func (c *Console) signIn(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	now := c.cfg.Now()
	f := signInForm{KeyID: strings.TrimSpace(r.PostForm.Get("keyId")), Next: safeNext(r.PostForm.Get("next"))}
	token := r.PostForm.Get("csrf")
	if !sameToken(token, c.cookie(r, preCookieName)) || !c.validSignInToken(token, now) {
		f.Error = "The sign-in form expired. Please try again."
		c.showSignIn(w, r, http.StatusForbidden, f)
		return
	}
	ip := c.clientIP(r)
	if wait := c.signIns.blocked(ip, now); wait > 0 {
		secs := int(math.Ceil(wait.Seconds()))
		w.Header().Set("Retry-After", strconv.Itoa(secs))
		f.Error = fmt.Sprintf("Too many wrong sign-ins from your address. Try again in %d seconds.", secs)
		c.showSignIn(w, r, http.StatusTooManyRequests, f)
		return
	}
	key, err := c.svc.Authenticate(r.Context(), f.KeyID, r.PostForm.Get("secret"))
	if err != nil {
		if billing.CodeOf(err) != billing.CodeUnauthorized {
			(&request{c: c, w: w, r: r, ctx: r.Context()}).fail(err)
			return
		}
		n := c.signIns.failed(ip, now)
		c.cfg.Guard.CountAuthFailure()
		c.log.WarnContext(r.Context(), "console sign-in refused", "remote", ip, "key", logKeyID(f.KeyID), "failures", n)
		f.Error = "The key id or the secret is wrong, or the key was revoked."
		c.showSignIn(w, r, http.StatusUnauthorized, f)
		return
	}
	c.signIns.succeeded(ip)
	s, err := c.sessions.create(r.Context(), key)
	if err != nil {
		(&request{c: c, w: w, r: r, ctx: r.Context()}).fail(err)
		return
	}
	c.setCookie(w, r, preCookieName, "", -1)
	c.setCookie(w, r, cookieName, s.id, int(c.cfg.MaxAge.Seconds()))
	next := f.Next
	if next == "" {
		next = Prefix
	}
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// logKeyID is a submitted key id as the log shows it: at most 64
// printable ASCII characters (it is the caller's text, possibly a secret
// pasted in the wrong field: only a prefix is kept).
func logKeyID(id string) string {
	id = strings.Map(func(r rune) rune {
		if r < 0x21 || r > 0x7e {
			return '?'
		}
		return r
	}, id)
	if len(id) > 64 {
		id = id[:64] + "…"
	}
	return id
}

// signOut ends the session.
func (c *Console) signOut(rq *request) error {
	if err := c.sessions.delete(rq.ctx, rq.sess); err != nil {
		return err
	}
	c.setCookie(rq.w, rq.r, cookieName, "", -1)
	http.Redirect(rq.w, rq.r, Prefix+"sign-in?signed-out=1", http.StatusSeeOther)
	return nil
}

// safeNext returns next when it is a console path (so sign-in never
// redirects elsewhere), else "".
func safeNext(next string) string {
	if !strings.HasPrefix(next, Prefix) || strings.ContainsAny(next, "\\\r\n") || strings.Contains(next, "//") {
		return ""
	}
	return next
}
