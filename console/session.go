package console

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/billingd/billing"
)

// sessionTable holds the console's sessions: hex SHA-256 of the session id
// → session JSON. The id itself is only in the browser's cookie, so a read
// of the store gives no usable session.
const sessionTable billing.Table = "console_sessions"

// cookieName is the session cookie; preCookieName holds the CSRF token of
// the sign-in form, before there is a session.
const (
	cookieName    = "billingd_console"
	preCookieName = "billingd_console_signin"
)

// seenResolution is how stale a session's last-use time may get before a
// request writes it again: the idle timeout is measured to this precision,
// and most requests write nothing.
const seenResolution = time.Minute

// session is a signed-in browser.
type session struct {
	Account   string    `json:"account"`
	KeyID     string    `json:"keyId"`
	CSRF      string    `json:"csrf"`
	CreatedAt time.Time `json:"createdAt"`
	SeenAt    time.Time `json:"seenAt"`

	id string // the cookie's value; not stored
}

// sessions stores sessions in a billing.Store.
type sessions struct {
	store        billing.Store
	idle, maxAge time.Duration
	now          func() time.Time
}

// storeKey is the key of a session id.
func storeKey(id string) []byte {
	h := sha256.Sum256([]byte(id))
	return []byte(hex.EncodeToString(h[:]))
}

// expired reports whether s has ended at now.
func (ss *sessions) expired(s *session, now time.Time) bool {
	return now.Sub(s.SeenAt) >= ss.idle || now.Sub(s.CreatedAt) >= ss.maxAge
}

// create starts a session for key and deletes the expired ones.
func (ss *sessions) create(ctx context.Context, key *billing.APIKey) (*session, error) {
	now := ss.now()
	s := &session{Account: key.ServiceAccountID, KeyID: key.ID, CSRF: randomToken(), CreatedAt: now, SeenAt: now, id: randomToken()}
	b, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	err = ss.store.Update(ctx, func(tx billing.Tx) error {
		var stale [][]byte
		err := tx.Scan(ctx, sessionTable, billing.Range{}, func(k, v []byte) error {
			var old session
			if json.Unmarshal(v, &old) != nil || ss.expired(&old, now) {
				stale = append(stale, append([]byte(nil), k...))
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, k := range stale {
			if err := tx.Delete(ctx, sessionTable, k); err != nil {
				return err
			}
		}
		return tx.Put(ctx, sessionTable, storeKey(s.id), b)
	})
	return s, err
}

// get returns the live session of id, or nil when there is none (unknown,
// expired: an expired one is deleted). It records the use.
func (ss *sessions) get(ctx context.Context, id string) (*session, error) {
	if id == "" || len(id) > 128 {
		return nil, nil
	}
	k := storeKey(id)
	var s *session
	err := ss.store.View(ctx, func(tx billing.Tx) error {
		b, err := tx.Get(ctx, sessionTable, k)
		if errors.Is(err, billing.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		s = new(session)
		return json.Unmarshal(b, s)
	})
	if err != nil || s == nil {
		return nil, err
	}
	s.id = id
	now := ss.now()
	switch {
	case ss.expired(s, now):
		return nil, ss.delete(ctx, id)
	case now.Sub(s.SeenAt) >= seenResolution:
		s.SeenAt = now
		b, err := json.Marshal(s)
		if err != nil {
			return nil, err
		}
		if err := ss.store.Update(ctx, func(tx billing.Tx) error { return tx.Put(ctx, sessionTable, k, b) }); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// delete ends the session of id.
func (ss *sessions) delete(ctx context.Context, id string) error {
	return ss.store.Update(ctx, func(tx billing.Tx) error {
		err := tx.Delete(ctx, sessionTable, storeKey(id))
		if errors.Is(err, billing.ErrNotFound) {
			return nil
		}
		return err
	})
}

// sameToken compares a submitted CSRF token with the expected one in
// constant time; an empty expected token matches nothing.
func sameToken(got, want string) bool {
	return want != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// setCookie sets (maxAge > 0) or clears (maxAge < 0) a console cookie.
func (c *Console) setCookie(w http.ResponseWriter, r *http.Request, name, value string, maxAge int) {
	http.SetCookie(w, &http.Cookie{
		Name: name, Value: value, Path: Prefix, MaxAge: maxAge,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: c.cfg.SecureCookies || r.TLS != nil,
	})
}

// liveKey reports whether the session's API key still exists for its
// account and is not revoked: revoking a key ends its sessions.
func (c *Console) liveKey(ctx context.Context, s *session) (bool, error) {
	keys, err := c.svc.ListAPIKeys(ctx, s.Account)
	if err != nil {
		return false, err
	}
	for _, k := range keys {
		if k.ID == s.KeyID {
			return k.RevokedAt == nil, nil
		}
	}
	return false, nil
}
