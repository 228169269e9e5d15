package pgstore_test

import (
	"context"
	"errors"
	"fmt"
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

func TestUpgradeMovesUsageEventsToTheirOwnTables(t *testing.T) {
	t.Parallel()
	schema := pgtest.Schema(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgtest.ConnString())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	// A database as schema version 1 left it: every record in billing_kv.
	q := func(sql string) string {
		return strings.ReplaceAll(sql, "S.", pgx.Identifier{schema}.Sanitize()+".")
	}
	for _, sql := range []string{
		`create table S.billing_schema (version integer primary key, applied_at timestamptz not null default now())`,
		`create table S.billing_kv (tbl text not null, k bytea not null, v bytea not null, primary key (tbl, k))`,
		`insert into S.billing_schema (version) values (1)`,
		`insert into S.billing_kv values ('usage_events', 'e1', 'v1'), ('usage_event_ids', 'i1', 'l1'),
			('usage_event_keys', 'c1', 'e1'), ('customers', 'cus1', 'Acme')`,
	} {
		if _, err := conn.Exec(ctx, q(sql)); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	st, err := pgstore.Open(ctx, pgtest.ConnString(), &pgstore.Options{Schema: schema, MaxConns: 2})
	if err != nil {
		t.Fatalf("Open of a version 1 database: %v", err)
	}
	defer st.Close()
	want := map[billing.Table]string{"usage_events": "e1=v1", "usage_event_ids": "i1=l1", "usage_event_keys": "c1=e1", "customers": "cus1=Acme"}
	err = st.View(ctx, func(tx billing.Tx) error {
		for table, kv := range want {
			k, v, _ := strings.Cut(kv, "=")
			got, err := tx.Get(ctx, table, []byte(k))
			if err != nil || string(got) != v {
				t.Errorf("%s %s after the upgrade: %q, %v; want %q", table, k, got, err, v)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for table := range want {
		var n int
		if err := conn.QueryRow(ctx, q(`select count(*) from S.`+pgstore.Relation(table)+` where tbl = $1`), string(table)).Scan(&n); err != nil || n != 1 {
			t.Errorf("%s: %d rows in %s (err %v), want 1", table, n, pgstore.Relation(table), err)
		}
	}
	tables, err := st.Tables(ctx)
	if err != nil || len(tables) != 4 || tables[0] != "customers" || tables[3] != "usage_events" {
		t.Errorf("Tables = %v, %v; want the four tables in byte order", tables, err)
	}
}

// A transaction that overwrites many records it did not read first sends
// them with COPY, which fails on the existing keys; the store must undo
// that and overwrite them, within the same transaction.
func TestManyBlindOverwritesAndNewKeysInOneTransaction(t *testing.T) {
	t.Parallel()
	st := pgtest.Open(t, nil)
	ctx := context.Background()
	const n = 300
	put := func(value string, from, to int) {
		t.Helper()
		err := st.Update(ctx, func(tx billing.Tx) error {
			for i := from; i < to; i++ {
				for _, table := range []billing.Table{"usage_events", "customers"} {
					if err := tx.Put(ctx, table, fmt.Appendf(nil, "k%04d", i), []byte(value)); err != nil {
						return err
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Fatalf("Update putting %s: %v", value, err)
		}
	}
	put("first", 0, n)
	put("second", n/2, n+n/2) // half of them exist
	err := st.View(ctx, func(tx billing.Tx) error {
		for _, table := range []billing.Table{"usage_events", "customers"} {
			count := 0
			err := tx.Scan(ctx, table, billing.Range{}, func(k, v []byte) error {
				var i int
				fmt.Sscanf(string(k), "k%d", &i)
				if want := map[bool]string{true: "second", false: "first"}[i >= n/2]; string(v) != want {
					t.Errorf("%s %s = %q, want %q", table, k, v, want)
				}
				count++
				return nil
			})
			if err != nil {
				return err
			}
			if count != n+n/2 {
				t.Errorf("%s holds %d keys, want %d", table, count, n+n/2)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
