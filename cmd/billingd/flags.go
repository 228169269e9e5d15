package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// Defaults shared by several commands.
const (
	defaultAddr = "127.0.0.1:8080"
	defaultDB   = "./billingd.db"
)

// errFlagParse reports a command line the flag package rejected; it has
// already printed the problem and the command's usage.
var errFlagParse = errors.New("invalid flags")

// envName returns the environment variable of a flag: --rate-limit is
// BILLINGD_RATE_LIMIT.
func envName(flagName string) string {
	return "BILLINGD_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// newFlagSet returns the flag set of one command. synopsis is the usage
// line printed above the flags, for example "billingd keys revoke KEY_ID".
func (c *cli) newFlagSet(name, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	fs.Usage = func() { printFlags(fs.Output(), fs, synopsis) }
	return fs
}

// printFlags writes the usage of a command: its synopsis and every flag with
// its default and its environment variable.
func printFlags(w io.Writer, fs *flag.FlagSet, synopsis string) {
	fmt.Fprintf(w, "Usage: %s\n\nFlags (environment variable in brackets; the command line wins):\n", synopsis)
	fs.VisitAll(func(f *flag.Flag) {
		typ, usage := flag.UnquoteUsage(f)
		fmt.Fprintf(w, "  --%s", f.Name)
		if typ != "" {
			fmt.Fprintf(w, " %s", typ)
		}
		fmt.Fprintf(w, "\n    \t%s", usage)
		if f.DefValue != "" && f.DefValue != "false" {
			fmt.Fprintf(w, " (default %s)", f.DefValue)
		}
		if fromEnv(fs.Name(), f.Name) {
			fmt.Fprintf(w, " [$%s]", envName(f.Name))
		}
		fmt.Fprintln(w)
	})
}

// fromEnv reports whether flag of command reads its environment variable:
// every flag of serve, and only --db and --admin-socket of the other
// commands, so that a variable exported for serve's environment (or by
// accident: BILLINGD_NAME, BILLINGD_JSON, BILLINGD_OUT) never changes what a
// one-off command does.
func fromEnv(command, flag string) bool {
	return command == "serve" || flag == "db" || flag == "admin-socket"
}

// parseFlags parses args into fs, then sets every flag not given on the
// command line from its environment variable (empty counts as unset). Flags
// and positional arguments may be mixed ("keys revoke ID --db x"); the
// positional arguments are returned in order. Everything after "--" is
// positional.
func (c *cli) parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	for _, a := range args {
		if a == "--" {
			break
		}
		if isHelp(a) && a != "help" {
			fs.SetOutput(c.stdout) // asked for: the usage is the answer, on stdout
			fs.Usage()
			return nil, flag.ErrHelp
		}
	}
	var positional []string
	for {
		if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
			return nil, err
		} else if err != nil {
			return nil, errFlagParse
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		if len(rest) < len(args) && args[len(args)-len(rest)-1] == "--" {
			positional = append(positional, rest...)
			break
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
	return positional, c.applyEnv(fs)
}

// applyEnv sets the flags of fs that the command line left alone from their
// environment variables.
func (c *cli) applyEnv(fs *flag.FlagSet) error {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if !fromEnv(fs.Name(), f.Name) {
			return
		}
		v := c.getenv(envName(f.Name))
		if given[f.Name] || v == "" || err != nil {
			return
		}
		if serr := fs.Set(f.Name, v); serr != nil {
			err = usagef("invalid value %q for %s: %v", v, envName(f.Name), serr)
		}
	})
	return err
}

// parseCommand parses the flags of a command that takes no positional
// arguments.
func (c *cli) parseCommand(fs *flag.FlagSet, name string, args []string) error {
	pos, err := c.parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("%s takes no arguments, got %q", name, pos)
	}
	return nil
}

// adminFlags are the flags every admin command shares.
type adminFlags struct {
	db          string
	adminSocket string
}

// register defines the shared admin flags on fs.
func (a *adminFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&a.db, "db", defaultDB, "database: a bbolt file `path`, or a PostgreSQL postgres:// URL or key=value connection string")
	fs.StringVar(&a.adminSocket, "admin-socket", "", "admin Unix socket `path` of a running server (default <db>.sock; none on PostgreSQL, where commands use the database directly)")
}

// socket returns the admin socket path: --admin-socket, or <db>.sock.
func (a *adminFlags) socket() string {
	return socketPath(a.db, a.adminSocket)
}

// socketPath returns flagValue, or the default <db>.sock when it is empty.
// On PostgreSQL there is no default socket (""): several processes may use
// the database at once, so admin commands use it directly.
func socketPath(db, flagValue string) string {
	if flagValue != "" {
		return flagValue
	}
	if isPostgres(db) {
		return ""
	}
	return db + ".sock"
}

// optionalBool is a boolean flag that knows whether it was given (on the
// command line or in its environment variable).
type optionalBool struct {
	set, value bool
}

func (b *optionalBool) String() string {
	if b == nil || !b.set {
		return ""
	}
	return strconv.FormatBool(b.value)
}

// Set parses a boolean as the flag package does.
func (b *optionalBool) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	b.set, b.value = true, v
	return nil
}

// IsBoolFlag lets the flag be given without a value.
func (b *optionalBool) IsBoolFlag() bool { return true }

// or is the flag's value, or def when it was not given.
func (b optionalBool) or(def bool) bool {
	if b.set {
		return b.value
	}
	return def
}

// isLoopback reports whether the listen address addr is on a loopback
// interface (127.0.0.0/8, ::1, localhost) only.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// parseProxies parses --trusted-proxies: addresses or CIDR prefixes,
// separated by commas.
func parseProxies(list string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.Split(list, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if p, err := netip.ParsePrefix(f); err == nil {
			out = append(out, p.Masked())
			continue
		}
		ip, err := netip.ParseAddr(f)
		if err != nil {
			return nil, usagef("--trusted-proxies: %q is not an address or a CIDR prefix", f)
		}
		out = append(out, netip.PrefixFrom(ip.Unmap(), ip.Unmap().BitLen()))
	}
	return out, nil
}
