package httpserver

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"github.com/billingd/billing"
)

// idempotencyTable holds the answers of requests sent with an
// Idempotency-Key: account id, 0x00, key → idempotencyRecord (JSON). The
// table and its records are the ones the billing package kept before they
// moved here, so a store written by an earlier release replays its answers.
const idempotencyTable billing.Table = "idempotency"

// idempotencyHold is how long a request's in-flight mark on its
// Idempotency-Key (Config.MarkIdempotencyKeysInFlight) keeps requests with
// that key on other instances out. It outlives any request (billingd's
// write timeout is a minute); after it a key whose instance died is free
// again.
const idempotencyHold = 2 * time.Minute

// minIdempotencyTTL is the shortest time an answer is kept for retries.
const minIdempotencyTTL = 24 * time.Hour

// idempotencyRecord is the stored outcome of a request sent with an
// Idempotency-Key: a retry with the same key and the same request is
// answered with Status and Body and changes nothing.
type idempotencyRecord struct {
	Key       string `json:"key"`
	AccountID string `json:"serviceAccountId"`
	// Fingerprint identifies the first request sent with the key; a later
	// request with the key and another fingerprint is refused.
	Fingerprint string `json:"fingerprint"`
	Status      int    `json:"status"`
	Body        []byte `json:"body"` // the answer, byte for byte as first sent
	// Holder is set while the record is only an in-flight mark: the
	// request holding the key has not answered yet, and Status and Body
	// are empty.
	Holder    string    `json:"holder,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
	// ExpiresAt is when the record may be swept: CreatedAt plus
	// Config.IdempotencyTTL.
	ExpiresAt time.Time `json:"expiresAt"`
}

// idempotencyRequest is one request sent with an Idempotency-Key, while it
// runs: its key and fingerprint, how its result becomes the answer, and the
// answer once stored.
type idempotencyRequest struct {
	key         string
	fingerprint string
	render      func(result any) (status int, body []byte, err error)

	status int    // the stored answer's status, when stored
	body   []byte // the stored answer's body, when stored
	stored bool   // the operation's transaction stored the answer
	hold   string // the in-flight mark begin put on the key, if any
}

// idempotencyStore keeps the answers of requests sent with an
// Idempotency-Key in idempotencyTable of the Service's store.
type idempotencyStore struct {
	store billing.Store
	now   func() time.Time
	ttl   time.Duration
	mark  bool // Config.MarkIdempotencyKeysInFlight
	log   *slog.Logger
}

// idempotencyKeyOf is the stored key of an account's Idempotency-Key.
func idempotencyKeyOf(account, key string) []byte {
	return []byte(account + "\x00" + key)
}

// get returns the record under k, or nil when there is none.
func (st *idempotencyStore) get(ctx context.Context, tx billing.Tx, k []byte) (*idempotencyRecord, error) {
	v, err := tx.Get(ctx, idempotencyTable, k)
	if errors.Is(err, billing.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	rec := new(idempotencyRecord)
	return rec, json.Unmarshal(v, rec)
}

// put stores rec under k.
func (st *idempotencyStore) put(ctx context.Context, tx billing.Tx, k []byte, rec *idempotencyRecord) error {
	v, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return tx.Put(ctx, idempotencyTable, k, v)
}

// lookup returns the unexpired answer stored under an account's key, or nil
// when there is none (an in-flight mark is no answer).
func (st *idempotencyStore) lookup(ctx context.Context, account, key string) (*idempotencyRecord, error) {
	now := st.now()
	var rec *idempotencyRecord
	err := st.store.View(ctx, func(tx billing.Tx) error {
		r, err := st.get(ctx, tx, idempotencyKeyOf(account, key))
		if r != nil && now.Before(r.ExpiresAt) && r.Holder == "" {
			rec = r
		}
		return err
	})
	return rec, err
}

// begin starts a request sent with an Idempotency-Key, before it runs: it
// returns the answer stored under the key, if any (the caller replays it,
// or refuses another request with the key). Otherwise, with
// MarkIdempotencyKeysInFlight, it marks the key in flight in a transaction
// of its own, so that the same key sent to another instance meanwhile
// answers idempotency_key_in_use; it returns that error itself when another
// request holds the key. A nil record and nil error mean the request may
// run: its operation's commit hook replaces the mark by its answer; end
// releases a mark that no answer replaced. (In one process inflightSet
// refuses concurrent duplicates; without marks this is only the lookup.)
func (st *idempotencyStore) begin(ctx context.Context, account string, req *idempotencyRequest) (*idempotencyRecord, error) {
	if !st.mark {
		return st.lookup(ctx, account, req.key)
	}
	now := st.now()
	hold := uuid.NewString()
	var rec *idempotencyRecord
	err := st.store.Update(ctx, func(tx billing.Tx) error {
		rec = nil
		k := idempotencyKeyOf(account, req.key)
		old, err := st.get(ctx, tx, k)
		switch {
		case err != nil:
			return err
		case old != nil && now.Before(old.ExpiresAt) && old.Holder == "":
			rec = old
			return nil
		case old != nil && now.Before(old.ExpiresAt):
			return billing.Errorf(CodeIdempotencyKeyInUse, "a request with this Idempotency-Key is being processed; retry later")
		}
		return st.put(ctx, tx, k, &idempotencyRecord{
			Key: req.key, AccountID: account, Fingerprint: req.fingerprint, Holder: hold,
			CreatedAt: now, ExpiresAt: now.Add(idempotencyHold),
		})
	})
	if err != nil {
		return nil, err
	}
	if rec == nil {
		req.hold = hold
	}
	return rec, nil
}

// end releases the in-flight mark begin put on req's key when the request
// stored no answer (it failed before its operation ran, or with an answer
// that is not stored), so a retry may run. It runs even when ctx is done; a
// failure leaves the mark to expire.
func (st *idempotencyStore) end(ctx context.Context, account string, req *idempotencyRequest) {
	if req.hold == "" {
		return
	}
	ctx = context.WithoutCancel(ctx)
	err := st.store.Update(ctx, func(tx billing.Tx) error {
		k := idempotencyKeyOf(account, req.key)
		old, err := st.get(ctx, tx, k)
		if err != nil || old == nil || old.Holder != req.hold {
			return nil // answered, gone, or taken over after it expired
		}
		return tx.Delete(ctx, idempotencyTable, k)
	})
	if err != nil {
		st.log.Warn("releasing an Idempotency-Key", "err", err)
	}
}

// hook is the commit hook that stores req's answer in the transaction of
// its operation (billing.WithCommitHook), so a change and its answer commit
// together or not at all. A run of the transaction that finds the key taken
// by another request (one that raced ahead of the mark) fails with
// idempotency_key_in_use, rolling the change back.
func (st *idempotencyStore) hook(account string, req *idempotencyRequest) billing.CommitHook {
	return func(ctx context.Context, tx billing.Tx, result any) error {
		req.status, req.body, req.stored = 0, nil, false
		status, body, err := req.render(result)
		if err != nil {
			return err
		}
		if err := st.putAnswer(ctx, tx, account, req, status, body); err != nil {
			return err
		}
		req.status, req.body, req.stored = status, body, true
		return nil
	}
}

// storeAnswer stores an answer that no operation stored itself: an error
// answer, which changed nothing and so needs no shared transaction, or the
// result of an operation that commits several transactions (a billing run).
func (st *idempotencyStore) storeAnswer(ctx context.Context, account string, req *idempotencyRequest, status int, body []byte) error {
	err := st.store.Update(ctx, func(tx billing.Tx) error {
		return st.putAnswer(ctx, tx, account, req, status, body)
	})
	if err == nil {
		req.hold = "" // the answer replaced the in-flight mark
	}
	return err
}

// putAnswer stores the answer of req under its key. The key must be free,
// or held by req itself (its in-flight mark): an unexpired record of
// another request answers idempotency_key_in_use.
func (st *idempotencyStore) putAnswer(ctx context.Context, tx billing.Tx, account string, req *idempotencyRequest, status int, body []byte) error {
	now := st.now()
	k := idempotencyKeyOf(account, req.key)
	old, err := st.get(ctx, tx, k)
	if err != nil {
		return err
	}
	if old != nil && now.Before(old.ExpiresAt) && (req.hold == "" || old.Holder != req.hold) {
		// Another request, here or on another instance, answered or
		// holds this key first.
		return billing.Errorf(CodeIdempotencyKeyInUse, "a request with this Idempotency-Key was processed concurrently")
	}
	return st.put(ctx, tx, k, &idempotencyRecord{
		Key: req.key, AccountID: account, Fingerprint: req.fingerprint,
		Status: status, Body: body, CreatedAt: now, ExpiresAt: now.Add(st.ttl),
	})
}

// sweep deletes the expired records and returns how many it deleted.
func (st *idempotencyStore) sweep(ctx context.Context) (int, error) {
	now := st.now()
	return billing.Sweep(ctx, st.store, idempotencyTable, func(v []byte) (bool, error) {
		var r struct {
			ExpiresAt time.Time `json:"expiresAt"`
		}
		err := json.Unmarshal(v, &r)
		return err == nil && !now.Before(r.ExpiresAt), err
	})
}

// SweepIdempotency deletes the expired answers of requests sent with an
// Idempotency-Key and returns how many it deleted. billingd serve runs it
// with its other housekeeping.
func (s *Server) SweepIdempotency(ctx context.Context) (int, error) {
	return s.idem.sweep(ctx)
}
