package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/billingd/billing"
	"github.com/billingd/billing/storage/boltstore"
	"github.com/billingd/billing/storage/pgstore"
)

// pgOpenTimeout bounds connecting to PostgreSQL and migrating its schema
// when a command starts.
const pgOpenTimeout = 30 * time.Second

// isPostgres reports whether --db names a PostgreSQL database (a
// postgres:// or postgresql:// URL, or a libpq key=value string) rather
// than a bbolt file.
func isPostgres(db string) bool { return pgstore.IsURL(db) }

// openStore opens --db: PostgreSQL (several processes may use it at once),
// or the bbolt file, waiting at most lockTimeout for another process to let
// go of it. The error never shows a password.
func openStore(ctx context.Context, db string, lockTimeout time.Duration) (billing.Store, error) {
	if isPostgres(db) {
		ctx, cancel := context.WithTimeout(ctx, pgOpenTimeout)
		defer cancel()
		st, err := pgstore.Open(ctx, db, nil)
		if err != nil {
			return nil, fmt.Errorf("opening the PostgreSQL database: %w", err)
		}
		return st, nil
	}
	st, err := boltstore.Open(db, &boltstore.Options{LockTimeout: lockTimeout})
	if errors.Is(err, boltstore.ErrLocked) {
		return nil, fmt.Errorf("the database %s is held by another process, probably another billingd (serve, or another command); waited %v for its lock", db, lockTimeout)
	}
	return st, err
}

// dbName is --db as it may appear in logs and messages: a PostgreSQL
// connection string loses its password.
func dbName(db string) string {
	if isPostgres(db) {
		return pgstore.Redact(db)
	}
	return db
}

// errBackupPostgres answers billingd backup on PostgreSQL.
var errBackupPostgres = errors.New("billingd backup copies a bbolt file; on PostgreSQL, back up with the database's own tools (pg_dump, or base backups and WAL archiving)")
