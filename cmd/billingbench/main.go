// Command billingbench measures billingd against its performance targets
// (BENCHMARKS.md, P1-P7; P8 and P9 on PostgreSQL) and prints one table.
//
// Everything runs in this process on loopback: the billingd server
// (httpserver.New over a bbolt file in a temporary directory, rate limiting
// off), and the ceilings each target is a ratio of, measured in the same run
// so that the ratios survive a noisy machine:
//
//	go run ./cmd/billingbench                  # quick scale, about a minute
//	go run ./cmd/billingbench -scale full      # the scale of the targets, a few minutes
//	go run ./cmd/billingbench -only P1,P4      # a subset
//
// Explicit counts (-events, -others, -requests, ...) override the scale's.
// The exit status is 0 when every measured row passes, 1 when one fails and
// 2 on bad flags or when a measurement could not run.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gin-gonic/gin"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// run parses args, runs the selected measures, prints the table to stdout
// and progress to stderr, and returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "billingbench:", err)
		return 2
	}
	if os.Getenv(gin.EnvGinMode) == "" {
		gin.SetMode(gin.ReleaseMode) // as billingd serve does
	}
	if cfg.cpuProfile != "" {
		stopProfile, err := startCPUProfile(cfg.cpuProfile)
		if err != nil {
			fmt.Fprintln(stderr, "billingbench:", err)
			return 2
		}
		defer stopProfile()
	}
	dir, err := os.MkdirTemp(cfg.dir, "billingbench-")
	if err != nil {
		fmt.Fprintln(stderr, "billingbench:", err)
		return 2
	}
	if cfg.keep {
		fmt.Fprintln(stderr, "billingbench: keeping the run's databases: bbolt files in", dir, "and PostgreSQL schemas billingbench_"+strings.TrimPrefix(filepath.Base(dir), "billingbench-")+"_*")
	} else {
		defer os.RemoveAll(dir)
	}
	if cfg.store != "" {
		pgBase = cfg.store
		defer func() { pgBase = "" }()
	}
	b := &bench{cfg: cfg, dir: dir, log: stderr}
	defer b.close()
	var rows []row
	for _, m := range measures {
		if !cfg.selected(m.id) {
			continue
		}
		fmt.Fprintf(stderr, "billingbench: %s %s...\n", m.id, m.name)
		start := time.Now()
		got, err := m.rows(ctx, b)
		if err != nil {
			got = []row{{id: m.id, name: m.name, err: err}}
		}
		rows = append(rows, got...)
		fmt.Fprintf(stderr, "billingbench: %s done in %v\n", m.id, time.Since(start).Round(time.Millisecond))
		if ctx.Err() != nil {
			break
		}
	}
	printTable(stdout, cfg, rows)
	return exitStatus(rows)
}

// config is the parsed command line.
type config struct {
	scale
	only []string // measure ids; empty for all
	dir  string   // parent of the temporary directory
	// cpuProfile is where to write a CPU profile of the whole run.
	cpuProfile string
	// store is -store: a PostgreSQL URL, or "" for bbolt files.
	store string
	// keep is -keep: the run's databases are left for inspection.
	keep bool
}

// selected reports whether the measure id is to run.
func (c *config) selected(id string) bool {
	return len(c.only) == 0 || slices.Contains(c.only, id)
}

// scale holds the sizes of one run.
type scale struct {
	name string
	// conns is the number of concurrent connections of P1 and P3.
	conns int
	// requests bounds the requests of each side of P1 and P3; duration
	// bounds each side's time.
	requests int
	duration time.Duration
	// batchEvents is the number of events of each side of P2, sent 1,000
	// per request over batchConns connections.
	batchEvents int
	batchConns  int
	// prestored is the number of events stored before the one-connection
	// P2 starts; seqEvents the number it then sends, 1,000 per request.
	prestored int
	seqEvents int
	// events is the number of reference events of P7, which P4 then
	// calculates over; others times as many other events are added for P5.
	events int
	others int
	// runs is how many times P4 and P5 are timed (the fastest is reported:
	// noise only ever adds time).
	runs int
	// schedules is the number of billing schedules of P6.
	schedules int
}

// scales are the named scales of -scale.
var scales = map[string]scale{
	"tiny": {name: "tiny", conns: 8, requests: 300, duration: 2 * time.Second, batchEvents: 3000, batchConns: 2,
		prestored: 3000, seqEvents: 3000,
		events: 3000, others: 2, runs: 3, schedules: 20},
	"quick": {name: "quick", conns: 64, requests: 20_000, duration: 8 * time.Second, batchEvents: 100_000, batchConns: 4,
		prestored: 200_000, seqEvents: 100_000,
		events: 200_000, others: 10, runs: 5, schedules: 1000},
	"full": {name: "full", conns: 64, requests: 100_000, duration: 30 * time.Second, batchEvents: 1_000_000, batchConns: 4,
		prestored: 1_000_000, seqEvents: 300_000,
		events: 1_000_000, others: 10, runs: 7, schedules: 10_000},
}

// parseFlags parses the command line; explicit counts override the scale's.
func parseFlags(args []string, stderr io.Writer) (*config, error) {
	fs := flag.NewFlagSet("billingbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: billingbench [-scale quick|full|tiny] [-only P1,P4] [counts]\n\n")
		fs.PrintDefaults()
	}
	name := fs.String("scale", "quick", "`scale` of the run: quick (about a minute), full (the targets' sizes) or tiny (smoke test)")
	only := fs.String("only", "", "comma-separated `measures` to run (P1-P10); default all")
	dir := fs.String("dir", "", "`directory` for the temporary databases (default the system's)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the run to `file`")
	keep := fs.Bool("keep", false, "keep the run's bbolt files and PostgreSQL schemas for inspection (the log names them; drop them yourself)")
	store := fs.String("store", "", "run on PostgreSQL: a postgres:// `URL` of a database the run may create schemas in (one per server, dropped at the end); default bbolt files")
	var o scale
	fs.IntVar(&o.conns, "conns", 0, "concurrent connections of P1 and P3 (default: the scale's, 64 for quick and full)")
	fs.IntVar(&o.requests, "requests", 0, "requests per side of P1 and P3 (default: the scale's)")
	fs.DurationVar(&o.duration, "duration", 0, "time limit per side of P1 and P3 (default: the scale's)")
	fs.IntVar(&o.batchEvents, "batch-events", 0, "events per side of P2, a multiple of 1000 (default: the scale's)")
	fs.IntVar(&o.batchConns, "batch-conns", 0, "concurrent connections of P2 and of the P7 ingestion (default: the scale's)")
	fs.IntVar(&o.prestored, "prestored", 0, "events stored before the one-connection P2, a multiple of 1000 (default: the scale's, 1000000 for full)")
	fs.IntVar(&o.seqEvents, "seq-events", 0, "events the one-connection P2 sends, a multiple of 1000 (default: the scale's)")
	fs.IntVar(&o.events, "events", 0, "reference events of P7 and P4 (default: the scale's)")
	fs.IntVar(&o.others, "others", 0, "P5 stores this many times P4's events of other customers and types (default 10)")
	fs.IntVar(&o.runs, "runs", 0, "timed calculations of P4 and P5, the fastest reported (default: the scale's)")
	fs.IntVar(&o.schedules, "schedules", 0, "billing schedules of P6 (default: the scale's)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	sc, ok := scales[*name]
	if !ok {
		return nil, fmt.Errorf("-scale must be quick, full or tiny, got %q", *name)
	}
	override(&sc.conns, o.conns)
	override(&sc.requests, o.requests)
	override(&sc.duration, o.duration)
	override(&sc.batchEvents, o.batchEvents)
	override(&sc.batchConns, o.batchConns)
	override(&sc.prestored, o.prestored)
	override(&sc.seqEvents, o.seqEvents)
	override(&sc.events, o.events)
	override(&sc.others, o.others)
	override(&sc.runs, o.runs)
	override(&sc.schedules, o.schedules)
	cfg := &config{scale: sc, dir: *dir, cpuProfile: *cpuProfile, store: *store, keep: *keep}
	if *only != "" {
		for id := range strings.SplitSeq(strings.ToUpper(*only), ",") {
			id = strings.TrimSpace(id)
			if !slices.ContainsFunc(measures, func(m measure) bool { return m.id == id }) {
				return nil, fmt.Errorf("-only: unknown measure %q (want P1 to P10)", id)
			}
			cfg.only = append(cfg.only, id)
		}
	}
	return cfg, cfg.validate()
}

// override sets *v to o when o is not zero.
func override[T comparable](v *T, o T) {
	var zero T
	if o != zero {
		*v = o
	}
}

func (c *config) validate() error {
	switch {
	case c.conns < 1 || c.requests < 1 || c.duration <= 0 || c.batchConns < 1 || c.runs < 1 || c.schedules < 1:
		return errors.New("counts and durations must be positive")
	case c.batchEvents < batchSize || c.batchEvents%batchSize != 0:
		return fmt.Errorf("-batch-events must be a positive multiple of %d", batchSize)
	case c.prestored < batchSize || c.prestored%batchSize != 0 || c.seqEvents < batchSize || c.seqEvents%batchSize != 0:
		return fmt.Errorf("-prestored and -seq-events must be positive multiples of %d", batchSize)
	case c.events < batchSize || c.others < 1:
		return fmt.Errorf("-events must be at least %d and -others at least 1", batchSize)
	}
	return nil
}

// measure is one target of BENCHMARKS.md; run returns its rows. A measure
// that runs on one kind of store only says why in notOnPostgres or
// notOnBolt: on the other kind its row is n/a with that note.
type measure struct {
	id, name      string
	run           func(ctx context.Context, b *bench) ([]row, error)
	notOnPostgres string
	notOnBolt     string
}

// onReference adapts a measure of the reference data set, built on first
// use and shared by the measures that read it.
func onReference(fn func(ctx context.Context, b *bench, ref *refData) ([]row, error)) func(ctx context.Context, b *bench) ([]row, error) {
	return func(ctx context.Context, b *bench) ([]row, error) {
		ref, err := b.reference(ctx)
		if err != nil {
			return nil, err
		}
		return fn(ctx, b, ref)
	}
}

// measures are the targets in table order.
var measures = []measure{
	{id: "P1", name: "single-event ingestion", run: measureP1},
	{id: "P2", name: "batch ingestion", run: measureP2},
	{id: "P3", name: "list usage metrics", run: measureP3},
	{id: "P4", name: "calculate SUM", run: onReference(measureP4),
		notOnPostgres: "not measured on PostgreSQL: its ceiling scans the bbolt file directly"},
	{id: "P5", name: "calculate SUM among 10x other events", run: onReference(measureP5),
		notOnPostgres: "not measured on PostgreSQL: the measure works on a copy of the bbolt file"},
	{id: "P6", name: "RunBilling", run: measureP6},
	{id: "P7", name: "ingestion memory and disk", run: onReference(measureP7)},
	{id: "P8", name: "batch ingestion on PostgreSQL", run: measureP8, notOnBolt: "needs -store postgres://..."},
	{id: "P9", name: "RunBilling on PostgreSQL, one and two instances", run: measureP9, notOnBolt: "needs -store postgres://..."},
	{id: "P10", name: "costs as the account grows tenfold", run: measureP10},
}

// rows measures m, or returns its n/a row when it does not run on the
// run's store.
func (m measure) rows(ctx context.Context, b *bench) ([]row, error) {
	why := m.notOnBolt
	if pgBase != "" {
		why = m.notOnPostgres
	}
	if why != "" {
		return []row{{id: m.id, name: m.name, notAvailable: true, note: why}}, nil
	}
	return m.run(ctx, b)
}

// row is one line of the table. A ratio target is met when ratio >= min
// (throughputs) or ratio <= max (times); absolute targets compare value.
type row struct {
	id, name     string
	value        float64
	unit         string
	ceiling      float64 // 0: none
	ceilingName  string
	atLeast      bool    // the target is a lower bound
	target       float64 // of the ratio when there is a ceiling, else of value
	targetUnit   string
	note         string
	err          error
	notAvailable bool
}

// ratio returns value/ceiling, or 0 without a ceiling.
func (r row) ratio() float64 {
	if r.ceiling == 0 {
		return 0
	}
	return r.value / r.ceiling
}

// pass reports whether the row meets its target.
func (r row) pass() bool {
	v := r.value
	if r.ceiling != 0 {
		v = r.ratio()
	}
	if r.atLeast {
		return v >= r.target
	}
	return v <= r.target
}

// result is the row's last column.
func (r row) result() string {
	switch {
	case r.notAvailable:
		return "n/a"
	case r.err != nil:
		return "ERROR"
	case r.pass():
		return "PASS"
	}
	return "FAIL"
}

// printTable writes the machine and the table of rows to w.
func printTable(w io.Writer, cfg *config, rows []row) {
	fmt.Fprintf(w, "billingbench  %s  %s/%s  %d cores (GOMAXPROCS %d)  %s  scale %s\n",
		time.Now().UTC().Format(time.DateOnly), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(),
		runtime.GOMAXPROCS(0), runtime.Version(), cfg.name)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tmeasure\tvalue\tceiling\tratio\ttarget\tresult")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.id, r.name, r.valueText(), r.ceilingText(), r.ratioText(), r.targetText(), r.result())
	}
	tw.Flush()
	for _, r := range rows {
		switch {
		case r.err != nil:
			fmt.Fprintf(w, "%s: %v\n", r.id, r.err)
		case r.note != "":
			fmt.Fprintf(w, "%s: %s\n", r.id, r.note)
		}
	}
}

func (r row) valueText() string {
	if r.err != nil || r.notAvailable {
		return "-"
	}
	return number(r.value) + " " + r.unit
}

func (r row) ceilingText() string {
	if r.ceiling == 0 || r.err != nil {
		return "-"
	}
	return number(r.ceiling) + " " + r.unit + " (" + r.ceilingName + ")"
}

func (r row) ratioText() string {
	if r.ceiling == 0 || r.err != nil {
		return "-"
	}
	return fmt.Sprintf("%.2f", r.ratio())
}

func (r row) targetText() string {
	op := "<="
	if r.atLeast {
		op = ">="
	}
	if r.ceiling != 0 || r.targetUnit == "" {
		return fmt.Sprintf("%s %.2f", op, r.target)
	}
	return fmt.Sprintf("%s %s %s", op, number(r.target), r.targetUnit)
}

// number renders a measurement with a precision that suits its size.
func number(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

// exitStatus is 2 when a measure could not run, 1 when a target was
// missed, 0 otherwise.
func exitStatus(rows []row) int {
	status := 0
	for _, r := range rows {
		switch {
		case r.err != nil:
			return 2
		case !r.notAvailable && !r.pass():
			status = 1
		}
	}
	return status
}

// startCPUProfile profiles the process into the file at path until the
// returned function is called.
func startCPUProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}
