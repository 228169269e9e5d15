package pgstore

import (
	"context"
	"fmt"

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
	rows, err := s.pool.Query(ctx, `select distinct tbl from billing_kv order by tbl`)
	if err != nil {
		return nil, classify(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, classify(err)
	}
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
		rows := make([][]any, 0, importChunk)
		send := func() error {
			if len(rows) == 0 {
				return nil
			}
			if _, err := ptx.CopyFrom(ctx, pgx.Identifier{"billing_kv"}, []string{"tbl", "k", "v"}, pgx.CopyFromRows(rows)); err != nil {
				return fmt.Errorf("copy: %w", err)
			}
			rows = rows[:0]
			return nil
		}
		err := fn(func(table billing.Table, key, value []byte) error {
			rows = append(rows, []any{string(table), append([]byte(nil), key...), append([]byte{}, value...)})
			if len(rows) == importChunk {
				return send()
			}
			return nil
		})
		if err != nil {
			return err
		}
		return send()
	}))
}
