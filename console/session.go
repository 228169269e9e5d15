package console

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/billingd/billing"
)

// sessionTable holds the console's sessions: hex SHA-256 of the session id
// → session JSON. The id itself is only in the browser's cookie, so a read
// of the store gives no usable session.
const sessionTable billing.Table = "console_sessions"

// sessionKeyTable indexes the sessions by API key: key id, 0, creation
// time (20 decimal digits of Unix nanoseconds), 0, the session's store key
// → nothing. Sign-in reads only its key's sessions there, so it costs the
// same however many sessions other keys have.
const sessionKeyTable billing.Table = "console_session_keys"

// cookieName is the session cookie; preCookieName holds the CSRF token of
// the sign-in form, before there is a session. Over TLS both carry the
// __Host- prefix (hostPrefix).
const (
	cookieName    = "billingd_console"
	preCookieName = "billingd_console_signin"
	hostPrefix    = "__Host-"
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
	perKey       int // the most live sessions one API key may have
	now          func() time.Time
}

// indexKey is the sessionKeyTable key of s.
func (s *session) indexKey() []byte {
	return fmt.Appendf(nil, "%s\x00%020d\x00%s", s.KeyID, s.CreatedAt.UnixNano(), storeKey(s.id))
}

// indexKeyOf is the sessionKeyTable key of the stored session k.
func indexKeyOf(s *session, k []byte) []byte {
	return fmt.Appendf(nil, "%s\x00%020d\x00%s", s.KeyID, s.CreatedAt.UnixNano(), k)
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

// create starts a session for key. When the key already has perKey
// sessions, its oldest ones end: a key's sessions are bounded, and
// creating one reads only that key's (the housekeeping Sweep deletes the
// expired sessions of every key).
func (ss *sessions) create(ctx context.Context, key *billing.APIKey) (*session, error) {
	now := ss.now()
	s := &session{Account: key.ServiceAccountID, KeyID: key.ID, CSRF: randomToken(), CreatedAt: now, SeenAt: now, id: randomToken()}
	b, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	err = ss.store.Update(ctx, func(tx billing.Tx) error {
		var keys [][]byte // the key's sessions, oldest first
		err := tx.Scan(ctx, sessionKeyTable, billing.Range{Prefix: []byte(key.ID + "\x00")}, func(k, _ []byte) error {
			keys = append(keys, append([]byte(nil), k...))
			return nil
		})
		if err != nil {
			return err
		}
		for _, k := range keys[:max(0, len(keys)-ss.perKey+1)] {
			stored := k[bytes.LastIndexByte(k, 0)+1:]
			if err := deleteIfPresent(ctx, tx, sessionTable, stored); err != nil {
				return err
			}
			if err := tx.Delete(ctx, sessionKeyTable, k); err != nil {
				return err
			}
		}
		if err := tx.Put(ctx, sessionKeyTable, s.indexKey(), nil); err != nil {
			return err
		}
		return tx.Put(ctx, sessionTable, storeKey(s.id), b)
	})
	return s, err
}

// Sweep deletes the expired sessions of every key; billingd serve's
// housekeeping loop calls it every hour. It returns how many it deleted.
func (ss *sessions) sweep(ctx context.Context) (int, error) {
	now := ss.now()
	n := 0
	err := ss.store.Update(ctx, func(tx billing.Tx) error {
		n = 0
		type stale struct{ k, index []byte }
		var gone []stale
		err := tx.Scan(ctx, sessionTable, billing.Range{}, func(k, v []byte) error {
			var old session
			if json.Unmarshal(v, &old) != nil || ss.expired(&old, now) {
				k = append([]byte(nil), k...)
				gone = append(gone, stale{k, indexKeyOf(&old, k)})
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, g := range gone {
			if err := tx.Delete(ctx, sessionTable, g.k); err != nil {
				return err
			}
			if err := deleteIfPresent(ctx, tx, sessionKeyTable, g.index); err != nil {
				return err
			}
		}
		n = len(gone)
		return nil
	})
	return n, err
}

// deleteIfPresent deletes k from table; a missing key is no error.
func deleteIfPresent(ctx context.Context, tx billing.Tx, table billing.Table, k []byte) error {
	if err := tx.Delete(ctx, table, k); err != nil && !errors.Is(err, billing.ErrNotFound) {
		return err
	}
	return nil
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
		return nil, ss.delete(ctx, s)
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

// delete ends the session s.
func (ss *sessions) delete(ctx context.Context, s *session) error {
	return ss.store.Update(ctx, func(tx billing.Tx) error {
		if err := deleteIfPresent(ctx, tx, sessionTable, storeKey(s.id)); err != nil {
			return err
		}
		return deleteIfPresent(ctx, tx, sessionKeyTable, s.indexKey())
	})
}

// sameToken compares a submitted CSRF token with the expected one in
// constant time; an empty expected token matches nothing.
func sameToken(got, want string) bool {
	return want != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// setCookie sets (maxAge > 0) or clears (maxAge < 0) a console cookie.
// Over TLS (secure) the cookie is Secure, carries the __Host- prefix (so
// no other host or path can set or shadow it) and its path is /, as the
// prefix requires.
func (c *Console) setCookie(w http.ResponseWriter, r *http.Request, name, value string, maxAge int) {
	ck := &http.Cookie{Name: name, Value: value, Path: Prefix, MaxAge: maxAge, HttpOnly: true, SameSite: http.SameSiteStrictMode}
	if c.secure(r) {
		ck.Name, ck.Path, ck.Secure = hostPrefix+name, "/", true
	}
	http.SetCookie(w, ck)
}

// cookie returns the value of the console cookie name, under the name it
// has on r's connection, or "".
func (c *Console) cookie(r *http.Request, name string) string {
	if c.secure(r) {
		name = hostPrefix + name
	}
	ck, err := r.Cookie(name)
	if err != nil {
		return ""
	}
	return ck.Value
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
