package main

import (
	"context"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/billingd/billing/storage/boltstore"
	"github.com/billingd/billing/storage/pgstore"
	"github.com/billingd/billing/storage/storecopy"
)

// migrateStore copies a bbolt file into an empty PostgreSQL database and
// verifies the copy table by table (record count and checksum).
func (c *cli) migrateStore(ctx context.Context, args []string) error {
	fs := c.newFlagSet("migrate-store", "billingd migrate-store --from FILE --to postgres://...")
	from := fs.String("from", "", "the bbolt database `file` to copy (stop the server that uses it first)")
	to := fs.String("to", "", "the PostgreSQL database to copy into: a postgres:// `URL` or key=value connection string; it must hold no billingd data yet")
	if err := c.parseCommand(fs, "migrate-store", args); err != nil {
		return err
	}
	switch {
	case *from == "" || *to == "":
		return usagef("migrate-store needs --from FILE and --to URL")
	case isPostgres(*from):
		return usagef("--from must be a bbolt file, got a PostgreSQL connection string")
	case !isPostgres(*to):
		return usagef("--to must be a PostgreSQL postgres:// URL or key=value connection string, got %q", *to)
	}
	src, err := boltstore.Open(*from, &boltstore.Options{ReadOnly: true, LockTimeout: directLockTimeout})
	if err != nil {
		return fmt.Errorf("opening %s (stop the billingd that serves it first): %w", *from, err)
	}
	defer src.Close()
	st, err := openStore(ctx, *to, 0)
	if err != nil {
		return err
	}
	dst := st.(*pgstore.Store)
	defer dst.Close()
	start := time.Now()
	report, err := storecopy.ToPostgres(ctx, src, dst)
	total := 0
	for _, t := range report {
		status := "ok"
		if !t.Match {
			status = "MISMATCH"
		}
		total += t.Count
		fmt.Fprintf(c.stdout, "%-22s %9d records  sha256 %s  %s\n", t.Name, t.Count, hex.EncodeToString(t.Sum[:8]), status)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "copied and verified %d records in %d tables in %v; now run billingd serve --db with the PostgreSQL URL\n",
		total, len(report), time.Since(start).Round(time.Millisecond))
	return nil
}
