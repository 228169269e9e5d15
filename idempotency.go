package billing

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"slices"
	"time"
)

// IdempotencyRecord is the stored outcome of a request sent with an
// Idempotency-Key: a retry with the same key and the same request is
// answered with Status and Body and changes nothing.
type IdempotencyRecord struct {
	Key         string    `json:"key"`
	AccountID   string    `json:"serviceAccountId"`
	Fingerprint string    `json:"fingerprint"`
	Status      int       `json:"status"`
	Body        []byte    `json:"body"`
	CreatedAt   time.Time `json:"createdAt"`
	ExpiresAt   time.Time `json:"expiresAt"`
}

// IdempotencyRequest asks a Service operation to store its response under
// an idempotency key in the same transaction as its change. The caller (the
// HTTP layer) sets Key, Fingerprint and Render; the operation sets Status and
// Body to the stored response, which the caller then sends as it is.
type IdempotencyRequest struct {
	Key         string
	Fingerprint string
	// Render turns the operation's result into the response to store.
	Render func(result any) (status int, body []byte, err error)

	// Status and Body are the stored response, set when Stored is true.
	Status int
	Body   []byte
	Stored bool
}

// RequestFingerprint returns the fingerprint of a request for idempotency:
// the hex SHA-256 of its method, path and raw body bytes.
func RequestFingerprint(method, path string, body []byte) string {
	h := sha256.New()
	h.Write([]byte(method))
	h.Write([]byte{0})
	h.Write([]byte(path))
	h.Write([]byte{0})
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil))
}

type idempotencyKey struct{}

// WithIdempotency returns a context that makes the next mutating operation
// run with it store its response under req.Key (see IdempotencyRequest).
func WithIdempotency(ctx context.Context, req *IdempotencyRequest) context.Context {
	return context.WithValue(ctx, idempotencyKey{}, req)
}

// recordIdempotent stores the response for result when ctx carries an
// idempotency request. It runs inside the operation's transaction.
func (s *Service) recordIdempotent(ctx context.Context, tx Tx, account string, result any) error {
	req, _ := ctx.Value(idempotencyKey{}).(*IdempotencyRequest)
	if req == nil || req.Render == nil {
		return nil
	}
	status, body, err := req.Render(result)
	if err != nil {
		return err
	}
	if err := s.putIdempotency(ctx, tx, account, req, status, body); err != nil {
		return err
	}
	req.Status, req.Body, req.Stored = status, body, true
	return nil
}

func (s *Service) putIdempotency(ctx context.Context, tx Tx, account string, req *IdempotencyRequest, status int, body []byte) error {
	now := s.clock()
	k := key(account, req.Key)
	old, err := getRecord[IdempotencyRecord](ctx, tx, tableIdempotency, k)
	switch {
	case err == nil && now.Before(old.ExpiresAt):
		// Another process answered this key first.
		return Errorf(CodeIdempotencyKeyInUse, "a request with this Idempotency-Key was processed concurrently")
	case err != nil && !errors.Is(err, ErrNotFound):
		return err
	}
	return putRecord(ctx, tx, tableIdempotency, k, IdempotencyRecord{
		Key: req.Key, AccountID: account, Fingerprint: req.Fingerprint,
		Status: status, Body: body, CreatedAt: now, ExpiresAt: now.Add(s.idemTTL),
	})
}

// IdempotentResponse returns the unexpired record stored under key for an
// account, or nil when there is none.
func (s *Service) IdempotentResponse(ctx context.Context, account, idemKey string) (*IdempotencyRecord, error) {
	now := s.clock()
	var rec *IdempotencyRecord
	err := s.view(ctx, func(tx Tx) error {
		r, err := getRecord[IdempotencyRecord](ctx, tx, tableIdempotency, key(account, idemKey))
		if errors.Is(err, ErrNotFound) {
			return nil
		}
		if err == nil && now.Before(r.ExpiresAt) {
			rec = r
		}
		return err
	})
	return rec, err
}

// StoreIdempotentResponse stores a response that no operation stored
// itself: an error answer, which changed nothing and so needs no shared
// transaction.
func (s *Service) StoreIdempotentResponse(ctx context.Context, account string, req *IdempotencyRequest, status int, body []byte) error {
	return internal(s.store.Update(ctx, func(tx Tx) error {
		return s.putIdempotency(ctx, tx, account, req, status, body)
	}))
}

// SweepIdempotency deletes expired idempotency records and returns how many
// it deleted. billingd runs it periodically.
func (s *Service) SweepIdempotency(ctx context.Context) (int, error) {
	now := s.clock()
	var expired [][]byte
	err := s.view(ctx, func(tx Tx) error {
		return tx.Scan(ctx, tableIdempotency, Range{}, func(k, v []byte) error {
			var r struct {
				ExpiresAt time.Time `json:"expiresAt"`
			}
			if err := json.Unmarshal(v, &r); err != nil {
				return err
			}
			if !now.Before(r.ExpiresAt) {
				expired = append(expired, append([]byte(nil), k...))
			}
			return nil
		})
	})
	if err != nil || len(expired) == 0 {
		return 0, err
	}
	deleted := 0
	for chunk := range slices.Chunk(expired, 1000) {
		n := 0
		err := s.store.Update(ctx, func(tx Tx) error {
			n = 0
			for _, k := range chunk {
				// Check again: the key may have been reused since the scan.
				r, err := getRecord[IdempotencyRecord](ctx, tx, tableIdempotency, k)
				if errors.Is(err, ErrNotFound) || err == nil && now.Before(r.ExpiresAt) {
					continue
				}
				if err != nil {
					return err
				}
				if err := tx.Delete(ctx, tableIdempotency, k); err != nil {
					return err
				}
				n++
			}
			return nil
		})
		if err != nil {
			return deleted, internal(err)
		}
		deleted += n
	}
	return deleted, nil
}
