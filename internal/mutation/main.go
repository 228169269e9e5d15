// Command mutation runs mutation testing over the money, pricing,
// document, credit and engine files of the root package: it changes one
// operator at a time (a plausible careless edit), runs the package's tests,
// and reports which changes no test noticed. docs/TESTING.md says how to
// run it and records the last score and every survivor.
//
//	go run ./internal/mutation [-n 40] [-seed 38] [-budget 30m] [-only 3,17]
//
// The candidate mutations are every operator of the kinds below found by
// go/scanner (so never in comments or strings) in the files listed; -n of
// them are drawn in a fixed pseudo-random order (-seed), so a run is
// repeatable and its numbers comparable. Each mutant is built first (one
// that does not compile is not counted), then `go test -count=1 -failfast`
// runs the root package's tests: a failure kills it. The original file is
// put back after every mutant, and on interrupt. Mutants listed in
// internal/mutation/equivalent.txt (one per line: file, the mutated line's
// text, the change, after a tab the reason) are known equivalent: they are
// reported but left out of the score.
//
// It edits the working tree: run it on a clean checkout and run nothing
// else in the module meanwhile.
package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"go/scanner"
	"go/token"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// files are the files mutated: money, pricing, documents (their totals,
// lines, numbering, payments), credits and the billing engine.
var files = []string{
	"money.go", "pricing.go", "document.go", "printable.go", "lines.go", "creditnotelines.go",
	"invoice.go", "invoicepatch.go", "invoicesummary.go", "creditnote.go", "payment.go",
	"credit.go", "creditdrawdown.go", "creditusage.go", "charges.go", "engine.go",
	"enginelease.go", "preview.go", "correction.go", "billingrun.go",
}

// swaps are the operator mutations: a token and what it becomes.
var swaps = map[token.Token]token.Token{
	token.LSS: token.LEQ, token.LEQ: token.LSS, token.GTR: token.GEQ, token.GEQ: token.GTR,
	token.EQL: token.NEQ, token.NEQ: token.EQL, token.LAND: token.LOR, token.LOR: token.LAND,
	token.ADD: token.SUB, token.SUB: token.ADD, token.INC: token.DEC, token.DEC: token.INC,
}

// methodSwaps are the decimal method mutations: .Add( ↔ .Sub(, and the
// rounding modes.
var methodSwaps = map[string]string{
	"Add": "Sub", "Sub": "Add", "RoundHalfUp": "RoundHalfEven", "RoundHalfEven": "RoundHalfUp",
}

// mutant is one change: in file, the bytes [off, off+len(old)) become new.
type mutant struct {
	id       int
	file     string
	off      int
	line     int
	old, new string
	lineText string
}

func (m mutant) String() string {
	return fmt.Sprintf("#%d %s:%d %s → %s  (%s)", m.id, m.file, m.line, m.old, m.new, m.lineText)
}

// main draws the mutants, runs them and prints the report.
//
// Long on purpose: the flags, the draw and the report of one run, read top
// to bottom.
func main() {
	n := flag.Int("n", 40, "how many mutants to run")
	seed := flag.Uint64("seed", 38, "the seed of the order mutants are drawn in")
	budget := flag.Duration("budget", 30*time.Minute, "stop starting mutants after this long")
	only := flag.String("only", "", "comma-separated mutant numbers or ranges to run (from an earlier run's report), for example 3,17-40")
	list := flag.Bool("list", false, "list the drawn mutants and run nothing")
	flag.Parse()

	all, err := candidates()
	if err != nil {
		fail(err)
	}
	rng := rand.New(rand.NewPCG(*seed, 0))
	rng.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	for i := range all {
		all[i].id = i + 1
	}
	drawn := all[:min(*n, len(all))]
	if *only != "" {
		drawn = nil
		for _, f := range strings.Split(*only, ",") {
			lo, hi, isRange := strings.Cut(strings.TrimSpace(f), "-")
			if !isRange {
				hi = lo
			}
			i, err1 := strconv.Atoi(lo)
			j, err2 := strconv.Atoi(hi)
			if err1 != nil || err2 != nil || i < 1 || j > len(all) || i > j {
				fail(fmt.Errorf("-only: no mutants %q", f))
			}
			drawn = append(drawn, all[i-1:j]...)
		}
	}
	fmt.Printf("%d candidate mutations in %d files; running %d (seed %d)\n", len(all), len(files), len(drawn), *seed)
	if *list {
		for _, m := range drawn {
			fmt.Println(m)
		}
		return
	}
	equivalent, err := readEquivalent()
	if err != nil {
		fail(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	start := time.Now()
	var killed, survived, broken, equiv []mutant
	for _, m := range drawn {
		if ctx.Err() != nil || time.Since(start) > *budget {
			fmt.Printf("stopped after %v (budget %v)\n", time.Since(start).Round(time.Second), *budget)
			break
		}
		t0 := time.Now()
		outcome, err := run(ctx, m)
		if err != nil {
			fail(err)
		}
		reason, isEquiv := equivalent[m.key()]
		switch {
		case outcome == "broken":
			broken = append(broken, m)
		case outcome == "killed":
			killed = append(killed, m)
		case isEquiv:
			equiv = append(equiv, m)
			outcome = "equivalent: " + reason
		default:
			survived = append(survived, m)
		}
		fmt.Printf("%-8s %v  %s\n", strings.SplitN(outcome, ":", 2)[0], time.Since(t0).Round(time.Second), m)
	}
	counted := len(killed) + len(survived)
	fmt.Printf("\n%d killed, %d survived, %d equivalent, %d did not compile; in %v\n",
		len(killed), len(survived), len(equiv), len(broken), time.Since(start).Round(time.Second))
	if counted > 0 {
		fmt.Printf("kill rate: %d/%d = %.1f%% of the non-equivalent mutants\n", len(killed), counted, 100*float64(len(killed))/float64(counted))
	}
	for _, m := range survived {
		fmt.Println("SURVIVED", m)
	}
	for _, m := range equiv {
		fmt.Println("EQUIVALENT", m, "--", equivalent[m.key()])
	}
}

// key identifies a mutant across runs: its file, its line's text and the
// change.
func (m mutant) key() string { return m.file + "\t" + m.lineText + "\t" + m.old + " → " + m.new }

// candidates finds every mutation of the files.
func candidates() ([]mutant, error) {
	var out []mutant
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("run from the module's root: %w", err)
		}
		fset := token.NewFileSet()
		file := fset.AddFile(f, -1, len(src))
		var s scanner.Scanner
		s.Init(file, src, nil, 0)
		var prev token.Token
		for {
			pos, tok, lit := s.Scan()
			if tok == token.EOF {
				break
			}
			off := file.Offset(pos)
			add := func(old, new string) {
				line := file.Line(pos)
				out = append(out, mutant{file: f, off: off, line: line, old: old, new: new, lineText: lineAt(src, off)})
			}
			if to, ok := swaps[tok]; ok && !(tok == token.SUB && prev != token.IDENT && prev != token.RPAREN && prev != token.RBRACK && prev != token.INT) {
				add(tok.String(), to.String()) // a binary minus (not a sign), or any other operator
			}
			if tok == token.IDENT && (prev == token.PERIOD || strings.HasPrefix(lit, "Round")) {
				if to, ok := methodSwaps[lit]; ok {
					add(lit, to)
				}
			}
			prev = tok
		}
	}
	return out, nil
}

// lineAt is the trimmed text of the line holding offset off.
func lineAt(src []byte, off int) string {
	start := bytes.LastIndexByte(src[:off], '\n') + 1
	end := bytes.IndexByte(src[off:], '\n')
	if end < 0 {
		end = len(src) - off
	}
	return strings.TrimSpace(string(src[start : off+end]))
}

// run applies m, tests it and puts the file back: "killed", "survived" or
// "broken" (does not compile).
func run(ctx context.Context, m mutant) (string, error) {
	orig, err := os.ReadFile(m.file)
	if err != nil {
		return "", err
	}
	if string(orig[m.off:m.off+len(m.old)]) != m.old {
		return "", fmt.Errorf("%s changed since the mutants were drawn", m.file)
	}
	mutated := slices.Concat(orig[:m.off], []byte(m.new), orig[m.off+len(m.old):])
	if err := os.WriteFile(m.file, mutated, 0o644); err != nil {
		return "", err
	}
	defer func() {
		if err := os.WriteFile(m.file, orig, 0o644); err != nil {
			fmt.Fprintf(os.Stderr, "PUT BACK %s BY HAND (git checkout): %v\n", m.file, err)
		}
	}()
	if err := exec.CommandContext(ctx, "go", "build", ".").Run(); err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		return "broken", nil
	}
	// The first failing test kills the mutant: the run stops there rather
	// than waiting for the tests already running beside it.
	cmd := exec.CommandContext(ctx, "go", "test", "-count=1", "-failfast", "-timeout", "3m", "-v", ".")
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", err
	}
	cmd.Stderr = cmd.Stdout
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // so the test binary goes with go test
	if err := cmd.Start(); err != nil {
		return "", err
	}
	failed := false
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if strings.HasPrefix(strings.TrimSpace(sc.Text()), "--- FAIL") {
			failed = true
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			break
		}
	}
	_, _ = io.Copy(io.Discard, out)
	werr := cmd.Wait()
	if ctx.Err() != nil {
		return "", ctx.Err()
	}
	if failed || werr != nil {
		return "killed", nil
	}
	return "survived", nil
}

// readEquivalent reads the known equivalent mutants: key → reason.
func readEquivalent() (map[string]string, error) {
	out := map[string]string{}
	f, err := os.Open(filepath.Join("internal", "mutation", "equivalent.txt"))
	if os.IsNotExist(err) {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		// file \t line text \t change \t reason
		parts := strings.SplitN(line, "\t", 4)
		if len(parts) != 4 {
			return nil, fmt.Errorf("equivalent.txt: %q is not file, line, change and reason separated by tabs", line)
		}
		out[strings.Join(parts[:3], "\t")] = parts[3]
	}
	return out, sc.Err()
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "mutation:", err)
	os.Exit(2)
}
