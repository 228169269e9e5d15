package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"text/tabwriter"
	"time"

	"github.com/billingd/billing"
	"github.com/billingd/billing/storage/boltstore"
)

// accountsCreate creates an account and its first API key.
func (c *cli) accountsCreate(ctx context.Context, args []string) error {
	cmd := adminCommand{name: "accounts create", synopsis: "billingd accounts create --name NAME [--db PATH] [--json]",
		flag: "name", flagUsage: "account `name` (required)", jsonUsage: jsonCredential, create: true}
	return c.runCreate(ctx, args, cmd, admin.CreateAccount)
}

// accountsList lists every account.
func (c *cli) accountsList(ctx context.Context, args []string) error {
	cmd := adminCommand{name: "accounts list", synopsis: "billingd accounts list [--db PATH] [--json]", jsonUsage: jsonArray}
	return c.runAdmin(ctx, args, cmd, func(a admin, _ string, asJSON bool) error {
		accounts, err := a.ListAccounts(ctx)
		if err != nil {
			return err
		}
		return printList(c.stdout, asJSON, accounts, "ID\tNAME\tCREATED", func(acct billing.Account) []any {
			return []any{acct.ID, acct.Name, acct.CreatedAt.UTC().Format(time.RFC3339)}
		})
	})
}

// keysCreate creates an API key for an existing account.
func (c *cli) keysCreate(ctx context.Context, args []string) error {
	cmd := adminCommand{name: "keys create", synopsis: "billingd keys create --account ID [--db PATH] [--json]",
		flag: "account", flagUsage: accountUsage, jsonUsage: jsonCredential}
	return c.runCreate(ctx, args, cmd, admin.CreateKey)
}

// runCreate runs a command that creates a credential (an account's first
// key, or another key) with create, called with the command's required
// flag, and prints it.
func (c *cli) runCreate(ctx context.Context, args []string, cmd adminCommand, create func(admin, context.Context, string) (*credential, error)) error {
	return c.runAdmin(ctx, args, cmd, func(a admin, arg string, asJSON bool) error {
		cred, err := create(a, ctx, arg)
		if err != nil {
			return err
		}
		return c.printCredential(cred, asJSON)
	})
}

// keysList lists the API keys of an account.
func (c *cli) keysList(ctx context.Context, args []string) error {
	cmd := adminCommand{name: "keys list", synopsis: "billingd keys list --account ID [--db PATH] [--json]",
		flag: "account", flagUsage: accountUsage, jsonUsage: jsonArray}
	return c.runAdmin(ctx, args, cmd, func(a admin, account string, asJSON bool) error {
		keys, err := a.ListKeys(ctx, account)
		if err != nil {
			return err
		}
		return printList(c.stdout, asJSON, keys, "KEY ID\tCREATED\tREVOKED", func(k billing.APIKey) []any {
			revoked := "-"
			if k.RevokedAt != nil {
				revoked = k.RevokedAt.UTC().Format(time.RFC3339)
			}
			return []any{k.ID, k.CreatedAt.UTC().Format(time.RFC3339), revoked}
		})
	})
}

// The help texts the account and key commands share.
const (
	accountUsage   = "`id` of the account (serviceAccountId, required)"
	jsonCredential = "print the credential as one JSON object"
	jsonArray      = "print a JSON array"
)

// adminCommand is the shape of the account and key commands: the admin
// flags, at most one required string flag, --json, then one call on the
// admin.
type adminCommand struct {
	name, synopsis  string
	flag, flagUsage string // the required flag, without "--"; "" for none
	jsonUsage       string // the help of --json
	create          bool   // create the database when it does not exist
}

// runAdmin parses args as cmd says, refuses a missing required flag, and
// runs fn with the flag's value and --json on the admin of the database.
func (c *cli) runAdmin(ctx context.Context, args []string, cmd adminCommand, fn func(a admin, value string, asJSON bool) error) error {
	var af adminFlags
	fs := c.newFlagSet(cmd.name, cmd.synopsis)
	af.register(fs)
	value := new(string)
	if cmd.flag != "" {
		value = fs.String(cmd.flag, "", cmd.flagUsage)
	}
	asJSON := fs.Bool("json", false, cmd.jsonUsage)
	if err := c.parseCommand(fs, cmd.name, args); err != nil {
		return err
	}
	if cmd.flag != "" && *value == "" {
		return usagef("%s needs --%s", cmd.name, cmd.flag)
	}
	return c.withAdmin(ctx, af, cmd.create, func(a admin) error { return fn(a, *value, *asJSON) })
}

// printList prints items as a JSON array, or as a table for people under
// header (tab-separated column names) with one row of cells per item.
func printList[T any](w io.Writer, asJSON bool, items []T, header string, row func(T) []any) error {
	if asJSON {
		return writeJSON(w, items)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	for _, it := range items {
		cells := row(it)
		for i, cell := range cells {
			sep := "\t"
			if i == len(cells)-1 {
				sep = "\n"
			}
			fmt.Fprintf(tw, "%v%s", cell, sep)
		}
	}
	return tw.Flush()
}

// keysRevoke revokes an API key.
func (c *cli) keysRevoke(ctx context.Context, args []string) error {
	var af adminFlags
	fs := c.newFlagSet("keys revoke", "billingd keys revoke KEY_ID [--db PATH]")
	af.register(fs)
	pos, err := c.parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("keys revoke needs exactly one KEY_ID, got %d arguments", len(pos))
	}
	return c.withAdmin(ctx, af, false, func(a admin) error {
		key, err := a.RevokeKey(ctx, pos[0])
		if err != nil {
			return err
		}
		fmt.Fprintf(c.stdout, "revoked key %s of account %s\n", key.ID, key.ServiceAccountID)
		return nil
	})
}

// withAdmin connects to the admin of af's database, runs fn and releases
// the connection.
func (c *cli) withAdmin(ctx context.Context, af adminFlags, create bool, fn func(admin) error) error {
	a, release, err := connectAdmin(ctx, af, create)
	if err != nil {
		return err
	}
	err = fn(a)
	if cerr := release(); err == nil {
		err = cerr
	}
	return err
}

// printCredential prints a new key: one JSON object, or lines for people.
func (c *cli) printCredential(cred *credential, asJSON bool) error {
	if asJSON {
		return writeJSON(c.stdout, cred)
	}
	_, err := fmt.Fprintf(c.stdout, "account id:    %s\nkey id:        %s\nsecret:        %s\nAuthorization: %s\n"+
		"The secret is shown only this once.\n", cred.ServiceAccountID, cred.KeyID, cred.Secret, cred.Authorization)
	return err
}

// writeJSON writes v as indented JSON and a newline.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// backup writes a consistent copy of the database, through the running
// server when there is one.
func (c *cli) backup(ctx context.Context, args []string) error {
	var af adminFlags
	fs := c.newFlagSet("backup", "billingd backup --out FILE [--db PATH]")
	af.register(fs)
	out := fs.String("out", "", "`file` to write the backup to (required; replaced atomically)")
	if err := c.parseCommand(fs, "backup", args); err != nil {
		return err
	}
	if *out == "" {
		return usagef("backup needs --out")
	}
	if isPostgres(af.db) {
		return errBackupPostgres
	}
	return c.withAdmin(ctx, af, false, func(a admin) error {
		n, err := writeFileAtomic(*out, func(w io.Writer) (int64, error) { return a.Backup(ctx, w) })
		if err != nil {
			return err
		}
		fmt.Fprintf(c.stdout, "wrote %d bytes to %s\n", n, *out)
		return nil
	})
}

// writeFileAtomic writes path through a temporary file in the same
// directory, synced and then renamed into place, so path is either the old
// file or the complete new one.
func writeFileAtomic(path string, write func(io.Writer) (int64, error)) (n int64, err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-")
	if err != nil {
		return 0, err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if n, err = write(f); err != nil {
		return n, err
	}
	if err = f.Sync(); err != nil {
		return n, err
	}
	if err = f.Close(); err != nil {
		return n, err
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return n, err
	}
	return n, syncDir(filepath.Dir(path))
}

// syncDir makes a renamed file's directory entry durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// compact rewrites the database file without its free pages. The server
// must be stopped.
func (c *cli) compact(ctx context.Context, args []string) error {
	var af adminFlags
	fs := c.newFlagSet("compact", "billingd compact [--db PATH]")
	af.register(fs)
	if err := c.parseCommand(fs, "compact", args); err != nil {
		return err
	}
	if isPostgres(af.db) {
		return usagef("billingd compact rewrites a bbolt file; PostgreSQL reclaims space itself (autovacuum)")
	}
	if adminAnswers(af.socket(), adminPingTimeout) {
		return fmt.Errorf("a server answers on the admin socket %s: stop billingd serve before compacting %s", af.socket(), af.db)
	}
	before, err := os.Stat(af.db)
	if err != nil {
		return fmt.Errorf("no database at %s: %w", af.db, err)
	}
	if err := compactFile(af.db); err != nil {
		return err
	}
	after, err := os.Stat(af.db)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "compacted %s: %d bytes → %d bytes\n", af.db, before.Size(), after.Size())
	return nil
}

// compactFile compacts db into a temporary file and renames it over db.
// It holds a shared lock on db throughout, so no server can open the file
// for writing while its copy is made and swapped in.
func compactFile(db string) error {
	hold, err := boltstore.Open(db, &boltstore.Options{ReadOnly: true, LockTimeout: directLockTimeout})
	if err != nil {
		return fmt.Errorf("%w (stop billingd serve before compacting)", err)
	}
	defer hold.Close()
	tmp := fmt.Sprintf("%s.compact-%d.tmp", db, os.Getpid())
	if err := boltstore.Compact(db, tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, db); err != nil {
		os.Remove(tmp)
		return err
	}
	return syncDir(filepath.Dir(db))
}

// version prints the module version and the Go version.
func (c *cli) version(args []string) error {
	fs := c.newFlagSet("version", "billingd version")
	if err := c.parseCommand(fs, "version", args); err != nil {
		return err
	}
	v := "devel"
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		v = bi.Main.Version
	}
	_, err := fmt.Fprintf(c.stdout, "billingd %s %s\n", v, runtime.Version())
	return err
}
