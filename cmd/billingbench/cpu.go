package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// appName is the application_name of the run's PostgreSQL connections,
// so that cpuUse finds their server processes.
const appName = "billingbench"

// cpuSample is the CPU time used so far by this process and by the
// PostgreSQL server processes of the run's connections (read from /proc:
// the server must run on this machine; 0 otherwise).
type cpuSample struct {
	self time.Duration
	pg   map[int]time.Duration
	// retries counts the PostgreSQL transactions run again (pgRetries).
	retries int64
}

// sampleCPU reads a cpuSample.
func sampleCPU(ctx context.Context) cpuSample {
	s := cpuSample{pg: map[int]time.Duration{}, retries: pgRetries()}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		s.self = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	if pgBase == "" {
		return s
	}
	conn, err := pgx.Connect(ctx, pgBase)
	if err != nil {
		return s
	}
	defer conn.Close(ctx)
	pids, err := column[int32](ctx, conn, `select pid from pg_stat_activity where application_name = $1`, appName)
	if err != nil {
		return s
	}
	for _, pid := range pids {
		if d, ok := procCPU(int(pid)); ok {
			s.pg[int(pid)] = d
		}
	}
	return s
}

// procCPU returns the user and system CPU time of process pid.
func procCPU(pid int) (time.Duration, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	// The fields after the command (which may hold spaces) in parentheses:
	// utime and stime are the 14th and 15th fields of the line.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, false
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	const ticks = 100 // USER_HZ on Linux
	return time.Duration(u+st) * time.Second / ticks, true
}

// cpuUse is the CPU time used between two samples: by this process, and by
// the server processes of the run's PostgreSQL connections (those that
// ended in between are not counted; those that started count whole).
type cpuUse struct {
	self, pg time.Duration
	retries  int64
}

func (a cpuSample) until(b cpuSample) cpuUse {
	u := cpuUse{self: b.self - a.self, retries: b.retries - a.retries}
	for pid, d := range b.pg {
		u.pg += d - a.pg[pid]
	}
	return u
}

// describe says the CPU time used per wall second over elapsed: how many of
// the machine's cores the run kept busy.
func (u cpuUse) describe(elapsed time.Duration) string {
	return fmt.Sprintf("CPU: billingd %.1f s, PostgreSQL backends %.1f s, %.2f cores busy over %.1f s; %d transactions run again",
		u.self.Seconds(), u.pg.Seconds(), (u.self+u.pg).Seconds()/elapsed.Seconds(), elapsed.Seconds(), u.retries)
}

// withAppName adds appName to a PostgreSQL URL or key=value string.
func withAppName(conn string) string {
	if strings.Contains(conn, "application_name") {
		return conn
	}
	return withParam(conn, "application_name", appName)
}

// withParam adds the run-time parameter name=value to the connection
// string conn (a URL or key=value pairs).
func withParam(conn, name, value string) string {
	if strings.HasPrefix(conn, "postgres://") || strings.HasPrefix(conn, "postgresql://") {
		if strings.Contains(conn, "?") {
			return conn + "&" + name + "=" + value
		}
		return conn + "?" + name + "=" + value
	}
	return conn + " " + name + "=" + value
}

// column returns the first column of every row sql answers.
func column[T any](ctx context.Context, conn *pgx.Conn, sql string, args ...any) ([]T, error) {
	rows, err := conn.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[T])
}
