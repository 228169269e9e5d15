package boltstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/billingd/billing"
	"github.com/billingd/billing/storage/internal/counter"
	bolt "go.etcd.io/bbolt"
)

// errTxDone reports a Tx used after its transaction function returned.
var errTxDone = errors.New("boltstore: transaction used after its function returned")

// tx is a billing.Tx over a bbolt transaction.
type tx struct {
	btx     *bolt.Tx // nil once the transaction function has returned
	buckets map[billing.Table]*bolt.Bucket
}

func (t *tx) check(ctx context.Context, write bool) error {
	if t.btx == nil {
		return errTxDone
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if write && !t.btx.Writable() {
		return billing.ErrReadOnly
	}
	return nil
}

// bucket returns the bucket of table, or nil when it was never written.
func (t *tx) bucket(table billing.Table) *bolt.Bucket {
	if b := t.buckets[table]; b != nil {
		return b
	}
	b := t.btx.Bucket([]byte(table))
	if b != nil {
		t.cache(table, b)
	}
	return b
}

// writeBucket checks that t may write (check) and returns the bucket of
// table, creating it on first write.
func (t *tx) writeBucket(ctx context.Context, table billing.Table) (*bolt.Bucket, error) {
	if err := t.check(ctx, true); err != nil {
		return nil, err
	}
	if b := t.bucket(table); b != nil {
		return b, nil
	}
	b, err := t.btx.CreateBucket([]byte(table))
	if err != nil {
		return nil, fmt.Errorf("boltstore: create table %q: %w", table, err)
	}
	t.cache(table, b)
	return b, nil
}

// appendFill is the FillPercent of the tables that are appended to in key
// order (billing.Table.AppendMostly): bbolt splits a page that grows beyond
// it, so 0.9 leaves appended pages nine tenths full (bbolt's default of 0.5
// leaves every one half empty) and still room for an occasional key
// inserted between others.
const appendFill = 0.9

func (t *tx) cache(table billing.Table, b *bolt.Bucket) {
	if table.AppendMostly() {
		b.FillPercent = appendFill
	}
	if t.buckets == nil {
		t.buckets = make(map[billing.Table]*bolt.Bucket)
	}
	t.buckets[table] = b
}

// lookup returns bbolt's own slice for key; found distinguishes an empty
// value from a missing key, which bbolt's Get cannot.
func lookup(b *bolt.Bucket, key []byte) (v []byte, found bool) {
	k, v := b.Cursor().Seek(key)
	return v, k != nil && bytes.Equal(k, key)
}

// clone copies b out of bbolt's memory into a new non-nil slice.
func clone(b []byte) []byte {
	return append(make([]byte, 0, len(b)), b...)
}

// Get returns a copy of the value under key.
func (t *tx) Get(ctx context.Context, table billing.Table, key []byte) ([]byte, error) {
	if err := t.check(ctx, false); err != nil {
		return nil, err
	}
	b := t.bucket(table)
	if b == nil {
		return nil, billing.ErrNotFound
	}
	v, found := lookup(b, key)
	if !found {
		return nil, billing.ErrNotFound
	}
	return clone(v), nil
}

// Put stores value under key. bbolt keeps a reference to the value until
// commit, so it gets a copy the caller cannot change.
func (t *tx) Put(ctx context.Context, table billing.Table, key, value []byte) error {
	b, err := t.writeBucket(ctx, table)
	if err != nil {
		return err
	}
	return put(b, table, key, clone(value))
}

func put(b *bolt.Bucket, table billing.Table, key, value []byte) error {
	if err := b.Put(key, value); err != nil {
		return fmt.Errorf("boltstore: put %s/%q: %w", table, key, err)
	}
	return nil
}

// PutKept stores value under key without copying it: bbolt keeps it until
// the commit (billing.KeepingTx).
func (t *tx) PutKept(ctx context.Context, table billing.Table, key, value []byte) error {
	b, err := t.writeBucket(ctx, table)
	if err != nil {
		return err
	}
	return put(b, table, key, value)
}

// Insert stores value under key unless the key exists.
func (t *tx) Insert(ctx context.Context, table billing.Table, key, value []byte) error {
	b, err := t.writeBucket(ctx, table)
	if err != nil {
		return err
	}
	if _, found := lookup(b, key); found {
		return billing.ErrConflict
	}
	return put(b, table, key, clone(value))
}

// Delete removes key, which must exist.
func (t *tx) Delete(ctx context.Context, table billing.Table, key []byte) error {
	if err := t.check(ctx, true); err != nil {
		return err
	}
	b := t.bucket(table)
	if b == nil {
		return billing.ErrNotFound
	}
	if _, found := lookup(b, key); !found {
		return billing.ErrNotFound
	}
	if err := b.Delete(key); err != nil {
		return fmt.Errorf("boltstore: delete %s/%q: %w", table, key, err)
	}
	return nil
}

// Increment adds one to the counter under key (storage/internal/counter).
func (t *tx) Increment(ctx context.Context, table billing.Table, key []byte) (uint64, error) {
	b, err := t.writeBucket(ctx, table)
	if err != nil {
		return 0, err
	}
	v, found := lookup(b, key)
	n, stored, err := counter.Next(v, found)
	if err != nil {
		return 0, fmt.Errorf("boltstore: %s/%q: %w", table, key, err)
	}
	return n, put(b, table, key, stored)
}

// Scan walks a bbolt cursor over r. Keys and values are handed to fn
// straight from the memory map, without copying: the port makes them valid
// only during the call, which keeps large scans (usage calculation) free of
// allocation.
func (t *tx) Scan(ctx context.Context, table billing.Table, r billing.Range, fn func(key, value []byte) error) error {
	if err := t.check(ctx, false); err != nil {
		return err
	}
	b := t.bucket(table)
	if b == nil {
		return nil
	}
	c := b.Cursor()
	var k, v []byte
	if r.Reverse {
		k, v = seekLast(c, r)
	} else {
		k, v = seekFirst(c, r)
	}
	for ; k != nil; k, v = step(c, r.Reverse) {
		// Positioned past the bound on one side, the first key outside r
		// ends the walk on the other side.
		if !r.Contains(k) {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fn(k, v); err != nil {
			if errors.Is(err, billing.ErrStopScan) {
				return nil
			}
			return err
		}
	}
	return nil
}

func step(c *bolt.Cursor, reverse bool) ([]byte, []byte) {
	if reverse {
		return c.Prev()
	}
	return c.Next()
}

// seekFirst positions c on the first key >= max(Prefix, Start).
func seekFirst(c *bolt.Cursor, r billing.Range) ([]byte, []byte) {
	lower, _ := r.Bounds()
	if len(lower) == 0 {
		return c.First()
	}
	return c.Seek(lower)
}

// seekLast positions c on the last key below both End and
// PrefixEnd(Prefix).
func seekLast(c *bolt.Cursor, r billing.Range) ([]byte, []byte) {
	_, upper := r.Bounds()
	if upper == nil {
		return c.Last()
	}
	if k, _ := c.Seek(upper); k == nil {
		return c.Last()
	}
	return c.Prev()
}
