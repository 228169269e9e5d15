package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/billingd/billing"
	"github.com/billingd/billing/httpserver"
	"github.com/billingd/billing/storage/boltstore"
)

// bench is the state of one run: the temporary directory, and the
// reference data set P7 ingests and P4 and P5 calculate over, built once.
type bench struct {
	cfg *config
	dir string
	log io.Writer

	ref    *refData // nil until built
	refErr error
	files  int
}

// close releases what the run still holds.
func (b *bench) close() {
	if b.ref != nil {
		b.ref.close()
	}
	if b.cfg.keep {
		return
	}
	if err := dropSchemas(); err != nil {
		fmt.Fprintln(b.log, "billingbench: dropping the run's PostgreSQL schemas:", err)
	}
}

// path returns a new database path in the run's directory.
func (b *bench) path(name string) string {
	b.files++
	return filepath.Join(b.dir, fmt.Sprintf("%02d-%s.db", b.files, name))
}

// progress writes a progress line to the run's log.
func (b *bench) progress(format string, args ...any) {
	fmt.Fprintf(b.log, "billingbench:   "+format+"\n", args...)
}

// server is an in-process billingd: the store, Service and handler wired
// as cmd/billingd's serve wires them (its http.Server timeouts included),
// on a loopback port, with rate limiting off and a discarding logger.
type server struct {
	store billing.Store
	svc   *billing.Service
	http  *http.Server
	url   string
	done  chan error
	// account and auth are the bench account and its Authorization value.
	account string
	auth    string
}

// startServer opens (or creates) the database at path and serves it. It
// creates an API key, except on a read-only store, where account and auth
// must be those of an earlier server on the file (and are ignored
// otherwise).
func startServer(ctx context.Context, path string, opts *boltstore.Options) (*server, error) {
	return startServerAs(ctx, path, opts, "", "")
}

// startServerAs is startServer with the account and auth of a read-only
// server.
func startServerAs(ctx context.Context, path string, opts *boltstore.Options, account, auth string) (*server, error) {
	return startServerWith(ctx, path, opts, billing.Config{}, account, auth)
}

// startServerWith is startServerAs with the Service's configuration (its
// Logger is replaced by one that discards).
func startServerWith(ctx context.Context, path string, opts *boltstore.Options, cfg billing.Config, account, auth string) (*server, error) {
	st, err := openStore(ctx, path, opts)
	if err != nil {
		return nil, err
	}
	log := slog.New(slog.DiscardHandler)
	cfg.Logger = log
	// On PostgreSQL the server runs as billingd runs there: other
	// processes may share the database.
	if pgBase != "" {
		severalInstances(&cfg)
	}
	svc, err := billing.New(st, &cfg)
	if err != nil {
		st.Close()
		return nil, err
	}
	s := &server{store: st, svc: svc}
	if opts != nil && opts.ReadOnly {
		// A read-only server serves an earlier server's account and key.
		s.account, s.auth = account, auth
	} else if err := s.createAccount(ctx); err != nil {
		st.Close()
		return nil, err
	}
	handler := httpserver.New(svc, &httpserver.Config{Logger: log, RateLimit: -1, MarkIdempotencyKeysInFlight: cfg.ConcurrentBillingRuns})
	if s.url, s.http, s.done, err = listen(handler); err != nil {
		st.Close()
		return nil, err
	}
	return s, nil
}

// createAccount uses the database's first account, or creates one, and
// gives it a new API key.
func (s *server) createAccount(ctx context.Context) error {
	accounts, err := s.svc.ListAccounts(ctx)
	if err != nil {
		return err
	}
	if len(accounts) > 0 {
		s.account = accounts[0].ID
	} else {
		a, err := s.svc.CreateAccount(ctx, billing.CreateAccountParams{Name: "bench"})
		if err != nil {
			return err
		}
		s.account = a.ID
	}
	k, err := s.svc.CreateAPIKey(ctx, s.account)
	if err != nil {
		return err
	}
	s.auth = k.Authorization()
	return nil
}

// stop shuts the HTTP server down and closes the store.
func (s *server) stop() error {
	err := shutdown(s.http, s.done)
	return errors.Join(err, s.store.Close())
}

// listen serves handler on a fresh loopback port with the timeouts of
// billingd serve, and returns its base URL, the server and the channel its
// Serve result arrives on.
func listen(handler http.Handler) (string, *http.Server, chan error, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, nil, err
	}
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	return "http://" + ln.Addr().String(), srv, done, nil
}

// shutdown stops srv and waits for Serve to return.
func shutdown(srv *http.Server, done chan error) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := srv.Shutdown(ctx)
	if serr := <-done; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	return err
}

// fileSize returns the size of the file at path.
func fileSize(path string) (int64, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

// severalInstances sets what billingd sets on PostgreSQL, where several
// instances (and admin commands) share the database: leased billing runs,
// usage series in transactions of their own, the id records every release
// reads, and a bounded key cache.
func severalInstances(cfg *billing.Config) {
	cfg.ConcurrentBillingRuns, cfg.SeriesInOwnTransaction, cfg.LegacyUsageIDRecords = true, true, true
	if cfg.KeyCacheTTL == 0 {
		cfg.KeyCacheTTL = time.Second
	}
}
