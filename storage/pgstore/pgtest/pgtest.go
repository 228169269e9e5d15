// Package pgtest runs tests against a real PostgreSQL server: every store
// it opens lives in a fresh schema of the database named by the
// BILLINGD_TEST_POSTGRES environment variable, dropped when the test ends,
// so tests stay isolated and can run in parallel on one database.
//
// Without the variable, tests that need PostgreSQL are skipped with a
// message saying how to run them:
//
//	BILLINGD_TEST_POSTGRES='postgres://postgres@127.0.0.1:5432/postgres' go test ./...
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/billingd/billing/storage/pgstore"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// EnvVar names the environment variable holding the connection string of
// the test database.
const EnvVar = "BILLINGD_TEST_POSTGRES"

// SkipMessage is the message of a test skipped for want of PostgreSQL.
const SkipMessage = "PostgreSQL test skipped: set " + EnvVar +
	"=postgres://user@host:port/db (any PostgreSQL 15+ database the tests may create schemas in) to run it"

// ConnString returns the test database's connection string, or "" when
// tests on PostgreSQL are not enabled.
func ConnString() string { return os.Getenv(EnvVar) }

// Enabled reports whether BILLINGD_TEST_POSTGRES is set.
func Enabled() bool { return ConnString() != "" }

// Require skips tb unless BILLINGD_TEST_POSTGRES is set.
func Require(tb testing.TB) {
	tb.Helper()
	if !Enabled() {
		tb.Skip(SkipMessage)
	}
}

var (
	adminOnce sync.Once
	admin     *pgxpool.Pool
	adminErr  error
)

// adminPool is the process's one pool for creating and dropping schemas.
func adminPool(tb testing.TB) *pgxpool.Pool {
	tb.Helper()
	adminOnce.Do(func() {
		cfg, err := pgxpool.ParseConfig(ConnString())
		if err != nil {
			adminErr = err
			return
		}
		cfg.MaxConns = 2
		admin, adminErr = pgxpool.NewWithConfig(context.Background(), cfg)
	})
	if adminErr != nil {
		tb.Fatalf("pgtest: connecting to %s: %v", EnvVar, adminErr)
	}
	return admin
}

// Schema creates a fresh, empty schema and returns its name; it is dropped
// with everything in it when tb ends. Skips tb without PostgreSQL.
func Schema(tb testing.TB) string {
	tb.Helper()
	Require(tb)
	pool := adminPool(tb)
	var b [8]byte
	_, _ = rand.Read(b[:])
	name := "billingtest_" + hex.EncodeToString(b[:])
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := pool.Exec(ctx, `create schema `+pgx.Identifier{name}.Sanitize()); err != nil {
		tb.Fatalf("pgtest: create schema: %v", err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := pool.Exec(ctx, `drop schema `+pgx.Identifier{name}.Sanitize()+` cascade`); err != nil {
			tb.Errorf("pgtest: drop schema %s: %v", name, err)
		}
		// The schema of the store's reporting views, named after it.
		if _, err := pool.Exec(ctx, `drop schema if exists `+pgx.Identifier{name + "_reporting"}.Sanitize()+` cascade`); err != nil {
			tb.Errorf("pgtest: drop schema %s_reporting: %v", name, err)
		}
	})
	return name
}

// URL returns a connection string for a fresh schema (as Schema), for
// programs that take a connection string, such as billingd's --db.
func URL(tb testing.TB) string {
	tb.Helper()
	return WithSearchPath(ConnString(), Schema(tb))
}

// WithSearchPath returns connString with its search path set to schema.
func WithSearchPath(connString, schema string) string {
	if strings.HasPrefix(connString, "postgres://") || strings.HasPrefix(connString, "postgresql://") {
		u, err := url.Parse(connString)
		if err != nil {
			return connString
		}
		q := u.Query()
		q.Set("search_path", schema)
		u.RawQuery = q.Encode()
		return u.String()
	}
	return connString + " search_path=" + schema
}

// Open opens a pgstore.Store on a fresh schema with a small pool (tests
// run many stores at once) and closes it when tb ends. opts may be nil;
// its Schema is replaced. Skips tb without PostgreSQL.
func Open(tb testing.TB, opts *pgstore.Options) *pgstore.Store {
	tb.Helper()
	var o pgstore.Options
	if opts != nil {
		o = *opts
	}
	o.Schema = Schema(tb)
	if o.MaxConns == 0 {
		o.MaxConns = 4
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := pgstore.Open(ctx, ConnString(), &o)
	if err != nil {
		tb.Fatalf("pgstore.Open: %v", err)
	}
	// Registered after Schema's cleanup, so it runs first.
	tb.Cleanup(func() {
		if err := s.Close(); err != nil {
			tb.Errorf("closing the store: %v", err)
		}
	})
	return s
}
