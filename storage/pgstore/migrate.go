package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/billingd/billing"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// migrations are the schema changes, in order; migrations[i] brings the
// schema to version i+1. Append only: a released migration never changes.
// "{reporting}" in a migration stands for the quoted reporting schema.
var migrations = []string{
	// 1: every Store table in one table; the primary key is the ordered
	// index every Get, Scan and Insert uses.
	`create table billing_kv (
		tbl text not null,
		k bytea not null,
		v bytea not null,
		primary key (tbl, k)
	)`,
	// 2: the usage event tables move to tables of their own (see
	// ownRelations): same columns, rows moved as they are.
	ownTable("usage_events") + ownTable("usage_event_ids") + ownTable("usage_event_keys"),
	// 3: the reporting schema and its read-only views (see reporting.go).
	reportingMigration,
	// 4: the hourly usage rollups the Service keeps on this store
	// (billing.RollupTx) get a table of their own.
	ownTable("usage_rollups"),
	// 5: the creation-order index of each customer alias's usage events
	// (billing's usage_alias_ids) gets a table of its own.
	ownTable("usage_alias_ids"),
	// 6: the day totals of the usage rollups (billing's usage_rollup_days)
	// get a table of their own.
	ownTable("usage_rollup_days"),
}

// ownTable is the SQL that creates the table of its own of a Store table
// and moves its rows there from billing_kv.
func ownTable(table string) string {
	rel := ownRelations[billing.Table(table)]
	return `create table ` + rel + ` (
		tbl text not null,
		k bytea not null,
		v bytea not null,
		primary key (tbl, k)
	);
	insert into ` + rel + ` (tbl, k, v) select tbl, k, v from billing_kv where tbl = '` + table + `';
	delete from billing_kv where tbl = '` + table + `';
	`
}

// SchemaVersion is the schema version this package creates and knows.
var SchemaVersion = len(migrations)

// ErrSchemaTooNew reports a database migrated by a newer billingd.
var ErrSchemaTooNew = errors.New("pgstore: the database schema is newer than this billingd")

// migrate creates the schema, or brings it up to SchemaVersion, in one
// transaction. Several processes opening a new database at once are safe:
// the losers of the race fail to serialize, or find an object already
// created, and look again.
func (s *Store) migrate(ctx context.Context) error {
	var err error
	for range 10 {
		if err = s.migrateOnce(ctx); err == nil || !raced(err) {
			break
		}
	}
	if err != nil && !errors.Is(err, ErrSchemaTooNew) {
		return fmt.Errorf("pgstore: migrating the schema: %w", classify(err))
	}
	return err
}

// raced reports the errors of two migrations running at once.
func raced(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return false
	}
	switch pgErr.Code {
	case "40001", "40P01", "23505", "42P06", "42P07":
		return true
	}
	return false
}

func (s *Store) migrateOnce(ctx context.Context) error {
	if s.opts.Schema != "" {
		if _, err := s.pool.Exec(ctx, `create schema if not exists `+pgx.Identifier{s.opts.Schema}.Sanitize()); err != nil {
			return err
		}
	}
	if _, err := s.pool.Exec(ctx, `create table if not exists billing_schema (
		version integer primary key,
		applied_at timestamptz not null default now()
	)`); err != nil {
		return err
	}
	return pgx.BeginTxFunc(ctx, s.pool, readWrite, func(ptx pgx.Tx) error {
		var version int
		// "for update" makes a concurrent migration wait for this one.
		rows, err := ptx.Query(ctx, `select version from billing_schema for update`)
		if err != nil {
			return err
		}
		for rows.Next() {
			var v int
			if err := rows.Scan(&v); err != nil {
				return err
			}
			version = max(version, v)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if version > SchemaVersion {
			return fmt.Errorf("%w: the database is at schema version %d, this binary knows versions up to %d; run a billingd at least as new as the one that last upgraded it",
				ErrSchemaTooNew, version, SchemaVersion)
		}
		reporting, err := s.reportingSchema(ctx, ptx)
		if err != nil {
			return err
		}
		s.reporting = reporting
		for v := version + 1; v <= SchemaVersion; v++ {
			if _, err := ptx.Exec(ctx, withReportingSchema(migrations[v-1], reporting)); err != nil {
				return fmt.Errorf("migration %d: %w", v, err)
			}
			if _, err := ptx.Exec(ctx, `insert into billing_schema (version) values ($1)`, v); err != nil {
				return err
			}
		}
		return nil
	})
}
