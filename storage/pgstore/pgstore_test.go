package pgstore_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/billingd/billing"
	"github.com/billingd/billing/storage/pgstore"
	"github.com/billingd/billing/storage/pgstore/pgtest"
	"github.com/billingd/billing/storage/storagetest"
	"github.com/jackc/pgx/v5"
)

func TestStore(t *testing.T) {
	t.Parallel()
	pgtest.Require(t)
	storagetest.Run(t, func(tb testing.TB) billing.Store {
		return pgtest.Open(tb, nil)
	})
}

func TestNewerSchemaIsRefused(t *testing.T) {
	t.Parallel()
	schema := pgtest.Schema(t)
	ctx := context.Background()
	first, err := pgstore.Open(ctx, pgtest.ConnString(), &pgstore.Options{Schema: schema, MaxConns: 2})
	if err != nil {
		t.Fatalf("Open on an empty schema: %v", err)
	}
	first.Close()
	// Opening again finds the schema current and changes nothing.
	again, err := pgstore.Open(ctx, pgtest.ConnString(), &pgstore.Options{Schema: schema, MaxConns: 2})
	if err != nil {
		t.Fatalf("Open on a current schema: %v", err)
	}
	again.Close()
	bumpSchema(t, schema)
	_, err = pgstore.Open(ctx, pgtest.ConnString(), &pgstore.Options{Schema: schema, MaxConns: 2})
	if !errors.Is(err, pgstore.ErrSchemaTooNew) {
		t.Fatalf("Open on a newer schema: err = %v, want ErrSchemaTooNew", err)
	}
}

// bumpSchema records a schema version no binary knows yet.
func bumpSchema(tb testing.TB, schema string) {
	tb.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgtest.ConnString())
	if err != nil {
		tb.Fatal(err)
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, `insert into `+pgx.Identifier{schema, "billing_schema"}.Sanitize()+` (version) values ($1)`, pgstore.SchemaVersion+1)
	if err != nil {
		tb.Fatal(err)
	}
}

func TestIsURL(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]bool{
		"postgres://u@h/db":             true,
		"postgresql://u@h:5432/db":      true,
		"host=db dbname=billing":        true,
		"dbname=billing":                true,
		"billingd.db":                   false,
		"./data/billing.db":             false,
		"/var/lib/billingd/billingd.db": false,
		"my file=1.db":                  false,
	} {
		if got := pgstore.IsURL(s); got != want {
			t.Errorf("IsURL(%q) = %v, want %v", s, got, want)
		}
	}
}

func TestUnreachableDatabaseIsUnavailable(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = pgstore.Open(ctx, "postgres://billing:secret-pw@"+addr+"/billing?connect_timeout=2", nil)
	if !errors.Is(err, billing.ErrUnavailable) {
		t.Fatalf("Open of an unreachable database: err = %v, want ErrUnavailable", err)
	}
	if strings.Contains(err.Error(), "secret-pw") {
		t.Errorf("the error shows the password: %v", err)
	}
}
