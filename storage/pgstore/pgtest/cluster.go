package pgtest

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"
)

// BinEnvVar names the environment variable holding the directory of
// PostgreSQL's server programs (initdb, pg_ctl, postgres) for StartCluster.
// Without it, StartCluster looks in PATH and then in Debian's
// /usr/lib/postgresql/<version>/bin.
const BinEnvVar = "BILLINGD_TEST_PG_BIN"

// Cluster is a PostgreSQL server of one test's own, in a temporary
// directory, which the test may stop and start again: for tests of what
// billingd does while its database is down. Tests that only need a
// database use Open, URL or Schema (one shared server, a schema each).
type Cluster struct {
	bin, dir string
	port     int
	// owner runs the server programs as another user: PostgreSQL refuses
	// to run as root, so as root they run as the postgres user (as the
	// CI script does).
	owner *user.User
}

// StartCluster creates a database cluster with initdb in a temporary
// directory, starts its server on a free loopback port, and stops and
// removes it when tb ends. Like every test that needs PostgreSQL it runs
// only when BILLINGD_TEST_POSTGRES is set (it does not use that database);
// it also needs the server programs (see BinEnvVar), and when running as
// root, a postgres user to run them as. Without them tb is skipped with
// SkipMessage's prefix, which the CI script refuses, and under CI=true it
// fails.
func StartCluster(tb testing.TB) *Cluster {
	tb.Helper()
	Require(tb)
	c := &Cluster{bin: serverBin()}
	if c.bin == "" {
		unusable(tb, "no PostgreSQL server programs (initdb, pg_ctl) in PATH or /usr/lib/postgresql/*/bin; install them or set "+BinEnvVar)
	}
	dir, err := os.MkdirTemp("", "billingd-pgcluster-")
	if err != nil {
		tb.Fatal(err)
	}
	c.dir = dir
	tb.Cleanup(func() { os.RemoveAll(dir) })
	if os.Geteuid() == 0 {
		// Not t.TempDir(): its parent is private to root, and the server
		// runs as the postgres user.
		if c.owner, err = user.Lookup("postgres"); err != nil {
			unusable(tb, "running as root and there is no postgres user to run the server as")
		}
		uid, _ := strconv.Atoi(c.owner.Uid)
		if err := os.Chown(dir, uid, -1); err != nil {
			tb.Fatal(err)
		}
	}
	c.port = freePort(tb)
	if out, err := c.run("initdb", "-D", c.data(), "-A", "trust", "-U", "postgres", "--no-sync"); err != nil {
		tb.Fatalf("initdb: %v\n%s", err, out)
	}
	tb.Cleanup(func() { c.run("pg_ctl", "-D", c.data(), "-m", "immediate", "stop") })
	c.Start(tb)
	return c
}

// unusable skips tb (fails it under CI=true) for want of what a cluster
// needs.
func unusable(tb testing.TB, why string) {
	tb.Helper()
	if os.Getenv("CI") == "true" {
		tb.Fatalf("%s (CI=true: not skipped)", why)
	}
	tb.Skipf("PostgreSQL test skipped: %s", why)
}

// serverBin returns the directory of initdb and pg_ctl, or "".
func serverBin() string {
	if d := os.Getenv(BinEnvVar); d != "" {
		return d
	}
	if p, err := exec.LookPath("pg_ctl"); err == nil {
		if _, err := exec.LookPath("initdb"); err == nil {
			return filepath.Dir(p)
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int { return versionOf(b) - versionOf(a) }) // newest first
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d
		}
	}
	return ""
}

// versionOf is the major version in /usr/lib/postgresql/<version>/bin.
func versionOf(dir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
	return v
}

// freePort returns a loopback TCP port nothing listens on now.
func freePort(tb testing.TB) int {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func (c *Cluster) data() string { return filepath.Join(c.dir, "data") }

// run runs a server program, as the cluster's owner when there is one.
func (c *Cluster) run(program string, args ...string) ([]byte, error) {
	name, args := filepath.Join(c.bin, program), args
	if c.owner != nil {
		name, args = "runuser", append([]string{"-u", c.owner.Username, "--", name}, args...)
	}
	cmd := exec.Command(name, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.Bytes(), err
}

// URL is the connection string of the cluster's postgres database. It
// sets a short connect_timeout: while the server is down, a request
// should fail fast.
func (c *Cluster) URL() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?connect_timeout=2", c.port)
}

// Start starts the server and waits until it accepts connections. It
// keeps synchronous_commit on, so an acknowledged commit survives Stop;
// fsync is off (the operating system keeps what was written, and the tests
// never crash it).
func (c *Cluster) Start(tb testing.TB) {
	tb.Helper()
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off -c max_connections=100", c.port, c.dir)
	start := time.Now()
	if out, err := c.run("pg_ctl", "-D", c.data(), "-l", filepath.Join(c.dir, "log"), "-w", "-t", "120", "-o", opts, "start"); err != nil {
		log, _ := os.ReadFile(filepath.Join(c.dir, "log"))
		tb.Fatalf("pg_ctl start: %v\n%s\n%s", err, out, log)
	}
	tb.Logf("PostgreSQL on port %d started in %v", c.port, time.Since(start).Round(time.Millisecond))
}

// Stop stops the server the hard way (pg_ctl stop -m immediate: every
// connection is cut, nothing is shut down cleanly, the next Start
// recovers from the write-ahead log), as a crash of the database server
// would.
func (c *Cluster) Stop(tb testing.TB) {
	tb.Helper()
	if out, err := c.run("pg_ctl", "-D", c.data(), "-m", "immediate", "-w", "stop"); err != nil {
		tb.Fatalf("pg_ctl stop: %v\n%s", err, out)
	}
}
