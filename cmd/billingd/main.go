// Command billingd runs the billing engine as an HTTP server and administers
// its database: accounts, API keys, backups and compaction.
//
// Usage:
//
//	billingd serve [--addr 127.0.0.1:8080] [--db ./billingd.db|postgres://...] [flags]
//	billingd accounts create --name NAME [--db PATH|URL] [--json]
//	billingd accounts list [--db PATH|URL] [--json]
//	billingd keys create --account ID [--db PATH|URL] [--json]
//	billingd keys revoke KEY_ID [--db PATH|URL]
//	billingd payments configure --account ID --provider stripe [--db PATH|URL]
//	billingd backup --out FILE [--db PATH|URL]
//	billingd compact [--db PATH|URL]
//	billingd version
//
// Every flag can also be set by an environment variable: BILLINGD_ followed
// by the flag name in upper case with dashes as underscores (--addr is
// BILLINGD_ADDR, --rate-limit is BILLINGD_RATE_LIMIT). A flag given on the
// command line wins over its variable.
//
// While serve runs it holds the database file (bbolt allows one process per
// file), so the admin commands talk to it over its admin Unix socket
// (<db>.sock by default, mode 0600). With no server they open the file
// directly.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/gin-gonic/gin"
)

// Exit codes of run.
const (
	exitOK    = 0
	exitError = 1 // the command failed
	exitUsage = 2 // the command line was wrong
)

// main runs the command line and exits with its code. The first SIGINT or
// SIGTERM cancels the run's context; a second one kills the process.
func main() {
	if os.Getenv(gin.EnvGinMode) == "" {
		gin.SetMode(gin.ReleaseMode) // no route dump on stdout
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() { <-ctx.Done(); stop() }() // a second signal kills at once
	os.Exit(run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv))
}

// cli carries the process environment of one run, so tests can run commands
// in-process with their own streams and variables.
type cli struct {
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	getenv func(string) string
}

// usageError reports a wrong command line; run exits with exitUsage.
type usageError struct{ msg string }

// Error returns the description of the problem.
func (e *usageError) Error() string { return e.msg }

// usagef returns a usageError.
func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// run runs the command named by args[0] and returns the process exit code.
// ctx is cancelled on SIGINT and SIGTERM; serve shuts down gracefully then.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	c := &cli{stdin: stdin, stdout: stdout, stderr: stderr, getenv: getenv}
	err := c.dispatch(ctx, args)
	var uerr *usageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.Is(err, errFlagParse):
		return exitUsage // the flag package has printed the problem and the usage
	case errors.As(err, &uerr):
		fmt.Fprintf(stderr, "billingd: %s\nRun 'billingd help' for usage.\n", uerr.msg)
		return exitUsage
	default:
		fmt.Fprintf(stderr, "billingd: %v\n", err)
		return exitError
	}
}

// dispatch runs the command named by args[0].
func (c *cli) dispatch(ctx context.Context, args []string) error {
	if len(args) == 0 {
		c.printUsage(c.stderr)
		return usagef("no command given")
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "serve":
		return c.serve(ctx, rest)
	case "accounts":
		return c.subcommand(ctx, "accounts", rest, map[string]func(context.Context, []string) error{
			"create": c.accountsCreate, "list": c.accountsList,
		})
	case "keys":
		return c.subcommand(ctx, "keys", rest, map[string]func(context.Context, []string) error{
			"create": c.keysCreate, "list": c.keysList, "revoke": c.keysRevoke,
		})
	case "payments":
		return c.subcommand(ctx, "payments", rest, map[string]func(context.Context, []string) error{
			"configure": c.paymentsConfigure,
		})
	case "backup":
		return c.backup(ctx, rest)
	case "compact":
		return c.compact(ctx, rest)
	case "migrate-store":
		return c.migrateStore(ctx, rest)
	case "version":
		return c.version(rest)
	case "help", "-h", "-help", "--help":
		c.printUsage(c.stdout)
		return nil
	default:
		return usagef("unknown command %q", cmd)
	}
}

// subcommand runs the subcommand of group named by args[0].
func (c *cli) subcommand(ctx context.Context, group string, args []string, cmds map[string]func(context.Context, []string) error) error {
	if len(args) == 0 {
		return usagef("%s needs a subcommand", group)
	}
	if isHelp(args[0]) {
		c.printGroupUsage(c.stdout, group)
		return nil
	}
	fn, ok := cmds[args[0]]
	if !ok {
		return usagef("unknown command %q", group+" "+args[0])
	}
	return fn(ctx, args[1:])
}

// isHelp reports whether arg asks for help.
func isHelp(arg string) bool {
	switch arg {
	case "-h", "-help", "--help", "help":
		return true
	}
	return false
}

// printGroupUsage writes the usage lines of the commands of group ("keys")
// to w.
func (c *cli) printGroupUsage(w io.Writer, group string) {
	fmt.Fprintln(w, "Usage:")
	for line := range strings.Lines(usageText) {
		if strings.HasPrefix(line, "  billingd "+group+" ") {
			fmt.Fprint(w, line)
		}
	}
	fmt.Fprintf(w, "\nRun 'billingd %s SUBCOMMAND --help' for the flags of a subcommand.\n", group)
}

// printUsage writes the overview of the commands to w.
func (c *cli) printUsage(w io.Writer) {
	fmt.Fprint(w, usageText)
}

// usageText is the overview of the commands.
const usageText = `Usage:
  billingd serve [--addr 127.0.0.1:8080] [--db ./billingd.db|postgres://...] [flags]
  billingd accounts create --name NAME [--db PATH|URL] [--json]
  billingd accounts list [--db PATH|URL] [--json]
  billingd keys create --account ID [--db PATH|URL] [--json]
  billingd keys list --account ID [--db PATH|URL] [--json]
  billingd keys revoke KEY_ID [--db PATH|URL]
  billingd payments configure --account ID --provider stripe [--db PATH|URL]
                                              (secrets from BILLINGD_STRIPE_SECRET_KEY, BILLINGD_STRIPE_WEBHOOK_SECRET)
  billingd backup --out FILE [--db PATH]      (bbolt only; on PostgreSQL use pg_dump)
  billingd compact [--db PATH]                (bbolt only)
  billingd migrate-store --from FILE --to postgres://...
  billingd version

Every flag of serve can also be set by an environment variable: --addr is
BILLINGD_ADDR, --rate-limit is BILLINGD_RATE_LIMIT, and so on; the command line
wins. The other commands read only BILLINGD_DB and BILLINGD_ADMIN_SOCKET.
Run 'billingd COMMAND --help' for the flags of a command.
`
