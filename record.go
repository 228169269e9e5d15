package billing

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// keySep separates the parts of a composite key. It sorts before every
// printable character, so a key is ordered by its parts from left to right.
const keySep = 0x00

// key joins parts into a composite store key.
func key(parts ...string) []byte {
	n := len(parts)
	for _, p := range parts {
		n += len(p)
	}
	b := make([]byte, 0, n)
	for i, p := range parts {
		if i > 0 {
			b = append(b, keySep)
		}
		b = append(b, p...)
	}
	return b
}

// prefix returns the key prefix selecting every key that starts with parts.
func prefix(parts ...string) []byte {
	return append(key(parts...), keySep)
}

// getRecord reads and decodes the JSON record under k. A missing record
// returns ErrNotFound.
func getRecord[T any](ctx context.Context, tx Tx, t Table, k []byte) (*T, error) {
	b, err := tx.Get(ctx, t, k)
	if err != nil {
		return nil, err
	}
	v := new(T)
	if err := json.Unmarshal(b, v); err != nil {
		return nil, fmt.Errorf("decoding %s record: %w", t, err)
	}
	return v, nil
}

// getOwned reads the record id of account from table, answering not_found
// for kind when the account has no such record (another account's record
// included: its key is under another prefix).
func getOwned[T any](ctx context.Context, tx Tx, t Table, account, id, kind string) (*T, error) {
	v, err := getRecord[T](ctx, tx, t, key(account, id))
	return v, lookupErr(err, kind)
}

// putRecord encodes v as JSON and stores it under k.
func putRecord(ctx context.Context, tx Tx, t Table, k []byte, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encoding %s record: %w", t, err)
	}
	return tx.Put(ctx, t, k, b)
}

// decodeAll returns a listQuery decode function for JSON records, keeping
// the records for which keep returns true (all of them when keep is nil).
func decodeAll[T any](keep func(*T) bool) func(k, v []byte) (T, bool, error) {
	return func(_, v []byte) (T, bool, error) {
		var item T
		if err := json.Unmarshal(v, &item); err != nil {
			return item, false, err
		}
		return item, keep == nil || keep(&item), nil
	}
}

// checkString validates a free-text field: at most the configured length,
// valid UTF-8, no control characters other than newlines and tabs.
func (s *Service) checkString(v *validator, field, value string, required bool) {
	switch {
	case value == "" && required:
		v.add(field, "%s is required", field)
	case !utf8.ValidString(value):
		v.add(field, "%s must be valid UTF-8", field)
	case utf8.RuneCountInString(value) > s.limits.MaxStringLength:
		v.add(field, "%s must be at most %d characters", field, s.limits.MaxStringLength)
	case strings.ContainsFunc(value, func(r rune) bool { return r < 0x20 && r != '\n' && r != '\t' || r == 0x7f }):
		v.add(field, "%s must not contain control characters", field)
	}
}

// checkKey validates a client-supplied key (customerEventId, alias, event
// type): 1 to 255 printable characters.
func checkKey(v *validator, field, value string, required bool) {
	switch {
	case value == "":
		if required {
			v.add(field, "%s is required", field)
		}
	case !utf8.ValidString(value):
		v.add(field, "%s must be valid UTF-8", field)
	case utf8.RuneCountInString(value) > 255:
		v.add(field, "%s must be at most 255 characters", field)
	case strings.ContainsFunc(value, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		v.add(field, "%s must contain printable characters only", field)
	}
}
