// Package storecopy moves a billing database from the embedded bbolt file
// to PostgreSQL (billingd migrate-store): every table copied in one
// transaction, then verified table by table, record count and checksum.
package storecopy

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/billingd/billing"
	"github.com/billingd/billing/storage/boltstore"
	"github.com/billingd/billing/storage/pgstore"
)

// ErrNotEmpty reports a destination that already holds billing data.
var ErrNotEmpty = errors.New("storecopy: the PostgreSQL database already holds billingd data: migrate-store copies into an empty database only")

// Table is the verification of one copied table.
type Table struct {
	// Name is the table's name.
	Name billing.Table
	// Count is the number of records of the source.
	Count int
	// Sum is the SHA-256 of the source's records in key order, each key
	// and value prefixed with its length.
	Sum [sha256.Size]byte
	// Match reports that the copy has the same count and checksum.
	Match bool
}

// sum is a table's count and checksum.
type sum struct {
	count int
	sum   [sha256.Size]byte
}

// sums reads every table of tables in one read transaction of st.
func sums(ctx context.Context, st billing.Store, tables []billing.Table) (map[billing.Table]sum, error) {
	out := make(map[billing.Table]sum, len(tables))
	err := st.View(ctx, func(tx billing.Tx) error {
		for _, t := range tables {
			h := sha256.New()
			var n int
			var lenBuf [4]byte
			err := tx.Scan(ctx, t, billing.Range{}, func(k, v []byte) error {
				n++
				h.Write(binary.BigEndian.AppendUint32(lenBuf[:0], uint32(len(k))))
				h.Write(k)
				h.Write(binary.BigEndian.AppendUint32(lenBuf[:0], uint32(len(v))))
				h.Write(v)
				return nil
			})
			if err != nil {
				return fmt.Errorf("reading table %s: %w", t, err)
			}
			s := sum{count: n}
			h.Sum(s.sum[:0])
			out[t] = s
		}
		return nil
	})
	return out, err
}

// ToPostgres copies every table of src into dst, which must hold no
// billing data, in one transaction (a failed copy leaves dst empty), then
// verifies it. It returns the verification of every table; the error is
// non-nil when a table differs or dst holds a table src does not.
func ToPostgres(ctx context.Context, src *boltstore.Store, dst *pgstore.Store) ([]Table, error) {
	existing, err := dst.Tables(ctx)
	if err != nil {
		return nil, err
	}
	if len(existing) > 0 {
		return nil, fmt.Errorf("%w (it has %d tables)", ErrNotEmpty, len(existing))
	}
	tables, err := src.Tables()
	if err != nil {
		return nil, err
	}
	err = dst.Import(ctx, func(put func(billing.Table, []byte, []byte) error) error {
		return src.View(ctx, func(tx billing.Tx) error {
			for _, t := range tables {
				if err := tx.Scan(ctx, t, billing.Range{}, func(k, v []byte) error { return put(t, k, v) }); err != nil {
					return err
				}
			}
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("storecopy: copying (nothing was written): %w", err)
	}
	return Verify(ctx, src, dst)
}

// Verify compares every table of src with dst.
func Verify(ctx context.Context, src *boltstore.Store, dst *pgstore.Store) ([]Table, error) {
	tables, err := src.Tables()
	if err != nil {
		return nil, err
	}
	want, err := sums(ctx, src, tables)
	if err != nil {
		return nil, err
	}
	got, err := sums(ctx, dst, tables)
	if err != nil {
		return nil, err
	}
	copied, err := dst.Tables(ctx)
	if err != nil {
		return nil, err
	}
	var report []Table
	var bad []string
	for _, t := range tables {
		w := want[t]
		r := Table{Name: t, Count: w.count, Sum: w.sum, Match: got[t] == w}
		if !r.Match {
			bad = append(bad, string(t))
		}
		report = append(report, r)
	}
	for _, t := range copied {
		if !slices.Contains(tables, t) {
			bad = append(bad, string(t))
		}
	}
	if len(bad) > 0 {
		return report, fmt.Errorf("storecopy: the copy differs from %s in tables %v", src.Path(), bad)
	}
	return report, nil
}
