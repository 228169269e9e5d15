package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/billingd/billing"
	"github.com/billingd/billing/storage/boltstore"
	"github.com/billingd/billing/storage/pgstore"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// pgBase is -store: the PostgreSQL database the run's servers use instead
// of bbolt files, each in a schema of its own named after its file ("" on
// bbolt). Set once by run before any measure.
var pgBase string

// onBolt runs fn with the run's servers on bbolt files, also under -store
// (measures run one at a time, so pgBase is theirs meanwhile).
func onBolt(fn func() error) error {
	saved := pgBase
	pgBase = ""
	defer func() { pgBase = saved }()
	return fn()
}

// pgSchemas are the schemas the run created, dropped by dropSchemas, and
// the stores it opened.
var pgSchemas struct {
	sync.Mutex
	names  []string
	stores []*pgstore.Store
}

// schemaOf is the schema standing for the database file path.
func schemaOf(path string) string {
	name := strings.TrimSuffix(filepath.Base(path), ".db")
	name = strings.NewReplacer("-", "_", ".", "_").Replace(name)
	return fmt.Sprintf("billingbench_%s_%s", filepath.Base(filepath.Dir(path))[len("billingbench-"):], name)
}

// openStore opens the database of path: the bbolt file, or its schema on
// PostgreSQL under -store. There opts only says whether the server is a
// read-only one, and whether it sets up what is not measured (NoSync): its
// sessions then commit with synchronous_commit off, as bbolt skips its
// fsyncs (PostgreSQL's fsync stays on; a crash could lose the last
// commits of the set-up, never corrupt it).
func openStore(ctx context.Context, path string, opts *boltstore.Options) (billing.Store, error) {
	if pgBase == "" {
		return boltstore.Open(path, opts)
	}
	schema := strings.ToLower(schemaOf(path))
	pgSchemas.Lock()
	pgSchemas.names = append(pgSchemas.names, schema)
	pgSchemas.Unlock()
	conn := withAppName(pgBase)
	if opts != nil && opts.NoSync {
		conn = withParam(conn, "synchronous_commit", "off")
	}
	st, err := pgstore.Open(ctx, conn, &pgstore.Options{Schema: schema, MaxConns: 32})
	if err == nil {
		pgSchemas.Lock()
		pgSchemas.stores = append(pgSchemas.stores, st)
		pgSchemas.Unlock()
	}
	return st, err
}

// pgRetries is how many transactions the run's PostgreSQL stores have
// run again after a serialization failure or a deadlock.
func pgRetries() int64 {
	pgSchemas.Lock()
	defer pgSchemas.Unlock()
	var n int64
	for _, st := range pgSchemas.stores {
		n += st.Retries()
	}
	return n
}

// dropSchemas drops the schemas of the run.
func dropSchemas() error {
	if pgBase == "" {
		return nil
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgBase)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	pgSchemas.Lock()
	defer pgSchemas.Unlock()
	for _, s := range pgSchemas.names {
		// The store's schema, and that of its reporting views.
		for _, name := range []string{s, s + "_reporting"} {
			if _, err := conn.Exec(ctx, `drop schema if exists `+pgx.Identifier{name}.Sanitize()+` cascade`); err != nil {
				return err
			}
		}
	}
	pgSchemas.names = nil
	return nil
}

// storeSize is the size of path's database: the file, or on PostgreSQL
// the billing table with its index and TOAST data.
func storeSize(ctx context.Context, path string) (int64, error) {
	if pgBase == "" {
		return fileSize(path)
	}
	conn, err := pgx.Connect(ctx, pgBase)
	if err != nil {
		return 0, err
	}
	defer conn.Close(ctx)
	var n int64
	// Every table of the store (billing_kv and the tables of their own),
	// with their indexes and TOAST data.
	err = conn.QueryRow(ctx, `select coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint
		from pg_class c join pg_namespace s on s.oid = c.relnamespace
		where s.nspname = $1 and c.relkind = 'r' and c.relname like 'billing%'`, strings.ToLower(schemaOf(path))).Scan(&n)
	return n, err
}

// measureP8: POST /usage-events/batch with 1,000 events per request on
// PostgreSQL, against pgx CopyFrom of the same stored rows into an
// identical table, 1,000 rows per transaction. Best of 3 rounds each:
// with a database server sharing the machine, rates vary more between
// rounds than on bbolt.
func measureP8(ctx context.Context, b *bench) ([]row, error) {
	name := fmt.Sprintf("POST /usage-events/batch on PostgreSQL, %d/request", batchSize)
	bodies := make([][]byte, b.cfg.batchEvents/batchSize)
	at := spread(b.cfg.batchEvents)
	for i := range bodies {
		bodies[i] = appendBatchJSON(nil, alias(i%16), refType, i*batchSize, batchSize, at)
	}
	var best, ceiling float64
	for range 3 {
		got, ceil, err := p8Round(ctx, b, bodies)
		if err != nil {
			return nil, err
		}
		best, ceiling = max(best, got), max(ceiling, ceil)
	}
	return []row{{id: "P8", name: fmt.Sprintf("%s, %d conns", name, b.cfg.batchConns),
		value: best, unit: "events/s", ceiling: ceiling, ceilingName: "pgx CopyFrom",
		atLeast: true, target: 0.5, note: "best of 3 rounds of (billingd, then CopyFrom of its stored usage_events rows)"}}, nil
}

// p8Round ingests bodies into a fresh billingd on PostgreSQL, then copies
// the rows it stored into a fresh identical table; it returns both rates
// in events per second.
func p8Round(ctx context.Context, b *bench, bodies [][]byte) (got, ceiling float64, err error) {
	srv, err := startServer(ctx, b.path("p8"), nil)
	if err != nil {
		return 0, 0, err
	}
	res, err := ingestBatches(ctx, b, srv, bodies)
	if err != nil {
		return 0, 0, err
	}
	var rows [][]any
	err = srv.store.View(ctx, func(tx billing.Tx) error {
		return tx.Scan(ctx, billing.Table(eventsBucket), billing.Range{}, func(k, v []byte) error {
			rows = append(rows, []any{string(eventsBucket), append([]byte(nil), k...), append([]byte(nil), v...)})
			return nil
		})
	})
	if err = errors.Join(err, srv.stop()); err != nil {
		return 0, 0, err
	}
	if len(rows) != res.requests*batchSize {
		return 0, 0, fmt.Errorf("billingd stored %d events, want %d", len(rows), res.requests*batchSize)
	}
	d, err := copyCeiling(ctx, b.path("p8-ceiling"), rows)
	if err != nil {
		return 0, 0, err
	}
	return res.perSecond(batchSize), float64(len(rows)) / d.Seconds(), nil
}

// copyCeiling creates billingd's tables in a fresh schema (by opening a
// store there) and copies rows into the one that holds usage events with COPY, batchSize rows per
// transaction, one after the other.
func copyCeiling(ctx context.Context, path string, rows [][]any) (time.Duration, error) {
	st, err := openStore(ctx, path, nil) // creates the identical, empty table
	if err != nil {
		return 0, err
	}
	st.Close()
	cfg, err := pgxpool.ParseConfig(pgBase)
	if err != nil {
		return 0, err
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = strings.ToLower(schemaOf(path))
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return 0, err
	}
	defer pool.Close()
	start := time.Now()
	for i := 0; i < len(rows); i += batchSize {
		chunk := rows[i:min(i+batchSize, len(rows))]
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			_, err := tx.CopyFrom(ctx, pgx.Identifier{pgstore.Relation(billing.Table(eventsBucket))}, []string{"tbl", "k", "v"}, pgx.CopyFromRows(chunk))
			return err
		})
		if err != nil {
			return 0, err
		}
	}
	return time.Since(start), nil
}
