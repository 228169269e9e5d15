package pgstore

import (
	"context"
	"fmt"
	"slices"

	"github.com/billingd/billing"
	"github.com/jackc/pgx/v5"
)

// importChunk is how many rows Import sends in one COPY.
const importChunk = 10000

// Tables returns the names of the tables that hold at least one key, in
// byte order.
func (s *Store) Tables(ctx context.Context) ([]billing.Table, error) {
	if err := s.enter(ctx); err != nil {
		return nil, err
	}
	defer s.running.Done()
	// The tables of their own hold one Store table each: one row says
	// whether it has a key.
	q := `select distinct tbl from ` + sharedRelation
	for _, rel := range relations()[1:] {
		q += ` union (select tbl from ` + rel + ` limit 1)`
	}
	rows, err := s.pool.Query(ctx, q)
	if err != nil {
		return nil, classify(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, classify(err)
	}
	slices.Sort(names) // byte order, whatever the database's collation
	tables := make([]billing.Table, len(names))
	for i, n := range names {
		tables[i] = billing.Table(n)
	}
	return tables, nil
}

// Import loads records in bulk, in one transaction, with COPY: fn calls put
// for every record. The keys must not exist yet (an existing key fails the
// whole import, which then leaves nothing behind). It is meant for filling
// an empty database (billingd migrate-store), not for live traffic.
func (s *Store) Import(ctx context.Context, fn func(put func(table billing.Table, key, value []byte) error) error) error {
	if err := s.enter(ctx); err != nil {
		return err
	}
	defer s.running.Done()
	return classify(pgx.BeginTxFunc(ctx, s.pool, readWrite, func(ptx pgx.Tx) error {
		rows := make(map[string][][]any) // by relation
		send := func(rel string) error {
			if len(rows[rel]) == 0 {
				return nil
			}
			if _, err := ptx.CopyFrom(ctx, pgx.Identifier{rel}, []string{"tbl", "k", "v"}, pgx.CopyFromRows(rows[rel])); err != nil {
				return fmt.Errorf("copy: %w", err)
			}
			rows[rel] = rows[rel][:0]
			return nil
		}
		err := fn(func(table billing.Table, key, value []byte) error {
			rel := Relation(table)
			rows[rel] = append(rows[rel], []any{string(table), append([]byte(nil), key...), append([]byte{}, value...)})
			if len(rows[rel]) == importChunk {
				return send(rel)
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, rel := range relations() {
			if err := send(rel); err != nil {
				return err
			}
		}
		return nil
	}))
}
