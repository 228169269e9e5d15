package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/billingd/billing/storage/pgstore/pgtest"
	"github.com/jackc/pgx/v5"
)

// TestSmoke runs every measure at the tiny scale and checks that the table
// has a row per target with a measured value. It asserts no timing: a slow
// machine may FAIL a target, never the test.
func TestSmoke(t *testing.T) {
	t.Parallel()
	var stdout, stderr bytes.Buffer
	status := run(context.Background(), []string{"-scale", "tiny", "-dir", t.TempDir()}, &stdout, &stderr)
	out := stdout.String()
	if status != 0 && status != 1 {
		t.Fatalf("exit status %d, want 0 (all pass) or 1 (a target missed)\nstdout:\n%s\nstderr:\n%s", status, out, stderr.String())
	}
	if !strings.Contains(out, "measure") || !strings.Contains(out, "ceiling") || !strings.Contains(out, "cores") {
		t.Errorf("no table header:\n%s", out)
	}
	// The status is whatever the table says: 1 exactly when a row FAILs.
	failed := false
	for _, id := range []string{"P1", "P2", "P3", "P4", "P5", "P6", "P7"} {
		failed = failed || strings.Contains(lineOf(out, id+" "), "FAIL")
	}
	if want := map[bool]int{false: 0, true: 1}[failed]; status != want {
		t.Errorf("exit status %d, but the table has a failed row: %v; want %d\n%s", status, failed, want, out)
	}
	for _, id := range []string{"P1", "P2", "P3", "P4", "P5", "P6", "P7"} {
		line := lineOf(out, id+" ")
		switch {
		case line == "":
			t.Errorf("no row for %s:\n%s", id, out)
		case strings.Contains(line, "ERROR"):
			t.Errorf("%s could not be measured:\n%s", id, out)
		case !strings.Contains(line, "PASS") && !strings.Contains(line, "FAIL"):
			t.Errorf("%s has no result: %q", id, line)
		}
	}
}

// TestExitStatus: 0 when every row passes (or is not available), 1 when a
// target is missed, 2 when a measure could not run, whatever the order.
func TestExitStatus(t *testing.T) {
	t.Parallel()
	pass := row{id: "P1", value: 1, target: 2}
	fail := row{id: "P2", value: 3, target: 2}
	floor := row{id: "P3", value: 0.9, ceiling: 1, target: 0.8, atLeast: true}
	broken := row{id: "P4", err: context.Canceled}
	na := row{id: "P5", value: 3, target: 2, notAvailable: true}
	for _, c := range []struct {
		rows []row
		want int
	}{
		{[]row{pass, floor, na}, 0}, {[]row{pass, fail}, 1}, {[]row{fail, pass}, 1},
		{[]row{fail, broken}, 2}, {[]row{broken, fail}, 2}, {nil, 0},
	} {
		if got := exitStatus(c.rows); got != c.want {
			t.Errorf("exitStatus(%+v) = %d, want %d", c.rows, got, c.want)
		}
	}
}

// TestOnlyRunsTheSubset checks that -only limits the table to its measures.
func TestOnlyRunsTheSubset(t *testing.T) {
	t.Parallel()
	var stdout, stderr bytes.Buffer
	status := run(context.Background(), []string{"-scale", "tiny", "-only", "p6,P3", "-dir", t.TempDir()}, &stdout, &stderr)
	out := stdout.String()
	if status == 2 {
		t.Fatalf("exit status 2\n%s\n%s", out, stderr.String())
	}
	if lineOf(out, "P3 ") == "" || lineOf(out, "P6 ") == "" || lineOf(out, "P1 ") != "" || lineOf(out, "P4 ") != "" {
		t.Errorf("want rows P3 and P6 only:\n%s", out)
	}
}

// TestBadFlags checks that bad flags are refused with status 2 before any
// measuring.
func TestBadFlags(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"-scale", "huge"}, {"-only", "P11"}, {"-batch-events", "1500"}, {"extra"}} {
		var stdout, stderr bytes.Buffer
		if status := run(context.Background(), args, &stdout, &stderr); status != 2 || stdout.Len() != 0 {
			t.Errorf("%q: status %d, stdout %q; want 2 and nothing printed", args, status, stdout.String())
		}
	}
}

// lineOf returns the first line of s starting with prefix.
func lineOf(s, prefix string) string {
	for line := range strings.Lines(s) {
		if strings.HasPrefix(line, prefix) {
			return line
		}
	}
	return ""
}

// TestPostgres runs the measures at the tiny scale on PostgreSQL
// (BILLINGD_TEST_POSTGRES). Not parallel: -store sets the run's store for
// the whole package.
func TestPostgres(t *testing.T) {
	pgtest.Require(t)
	var stdout, stderr bytes.Buffer
	status := run(context.Background(), []string{"-scale", "tiny", "-only", "P1,P2,P8,P9,P10", "-schedules", "20", "-store", pgtest.ConnString(), "-dir", t.TempDir()}, &stdout, &stderr)
	out := stdout.String()
	if status != 0 && status != 1 {
		t.Fatalf("exit status %d\nstdout:\n%s\nstderr:\n%s", status, out, stderr.String())
	}
	for _, id := range []string{"P1", "P2", "P8", "P9", "P10"} {
		if line := lineOf(out, id+" "); !strings.Contains(line, "PASS") && !strings.Contains(line, "FAIL") {
			t.Errorf("%s has no result: %q\n%s", id, line, out)
		}
	}
	if !strings.Contains(lineOf(out, "P8 "), "pgx CopyFrom") {
		t.Errorf("P8 is not measured against CopyFrom:\n%s", out)
	}
	if !strings.Contains(out, "two instances at once") {
		t.Errorf("P9 has no row for two instances:\n%s", out)
	}
	// P10 compares PostgreSQL's calculation with bbolt's over the same data.
	if line := lineOf(out, "P10  calculate the largest customer's month (2000 events) on PostgreSQL"); !strings.Contains(line, "(bbolt, the same data)") ||
		(!strings.Contains(line, "PASS") && !strings.Contains(line, "FAIL")) {
		t.Errorf("P10 has no measured row against bbolt: %q\n%s", line, out)
	}
}

// TestWithParam checks that a run-time parameter added to a connection
// string, with or without parameters of its own, reaches the PostgreSQL
// session, and its key=value form.
func TestWithParam(t *testing.T) {
	if got := withParam("host=/tmp port=5432", "synchronous_commit", "off"); got != "host=/tmp port=5432 synchronous_commit=off" {
		t.Errorf("key=value form: %q", got)
	}
	pgtest.Require(t)
	ctx := context.Background()
	for _, conn := range []string{pgtest.ConnString(), withAppName(pgtest.ConnString())} {
		conn = withParam(conn, "synchronous_commit", "off")
		c, err := pgx.Connect(ctx, conn)
		if err != nil {
			t.Fatal(err)
		}
		var got string
		err = c.QueryRow(ctx, "show synchronous_commit").Scan(&got)
		c.Close(ctx)
		if err != nil || got != "off" {
			t.Errorf("synchronous_commit %q, %v; want off", got, err)
		}
	}
}
