package console

import (
	"net/http"
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
	f.Token = randomToken()
	c.setCookie(w, r, preCookieName, f.Token, 3600)
	rq := &request{c: c, w: w, r: r, ctx: r.Context()}
	if err := rq.render(status, "signin", "Sign in", f); err != nil {
		rq.fail(err)
	}
}

// signIn checks the key id and secret and starts a session.
func (c *Console) signIn(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	f := signInForm{KeyID: strings.TrimSpace(r.PostForm.Get("keyId")), Next: safeNext(r.PostForm.Get("next"))}
	pre, _ := r.Cookie(preCookieName)
	if pre == nil || !sameToken(r.PostForm.Get("csrf"), pre.Value) {
		f.Error = "The sign-in form expired. Please try again."
		c.showSignIn(w, r, http.StatusForbidden, f)
		return
	}
	key, err := c.svc.Authenticate(r.Context(), f.KeyID, r.PostForm.Get("secret"))
	if err != nil {
		if billing.CodeOf(err) != billing.CodeUnauthorized {
			(&request{c: c, w: w, r: r, ctx: r.Context()}).fail(err)
			return
		}
		f.Error = "The key id or the secret is wrong, or the key was revoked."
		c.showSignIn(w, r, http.StatusUnauthorized, f)
		return
	}
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

// signOut ends the session.
func (c *Console) signOut(rq *request) error {
	if err := c.sessions.delete(rq.ctx, rq.sess.id); err != nil {
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
