package pgtest

import (
	"context"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
)

// RoundTrips counts the requests a store sends to its server, as
// pgstore.Options.Tracer: each statement sent alone (BEGIN and COMMIT
// included), each pipeline (a batch of statements) and each COPY is one.
// Safe for concurrent use; the zero value is ready.
type RoundTrips struct {
	mu    sync.Mutex
	n     int
	stmts []string
}

var (
	_ pgx.QueryTracer    = (*RoundTrips)(nil)
	_ pgx.BatchTracer    = (*RoundTrips)(nil)
	_ pgx.CopyFromTracer = (*RoundTrips)(nil)
)

// count records one request described by what.
func (r *RoundTrips) count(what string) {
	r.mu.Lock()
	r.n++
	r.stmts = append(r.stmts, what)
	r.mu.Unlock()
}

// Reset forgets what was counted.
func (r *RoundTrips) Reset() {
	r.mu.Lock()
	r.n, r.stmts = 0, nil
	r.mu.Unlock()
}

// Count returns the requests counted since the last Reset.
func (r *RoundTrips) Count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}

// String lists the requests counted since the last Reset, one a line
// (each statement's first 100 characters; a pipeline's statements after
// "batch:"), for a test's failure message.
func (r *RoundTrips) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.stmts, "\n")
}

// short is the first line of a statement, at most 100 characters.
func short(sql string) string {
	sql, _, _ = strings.Cut(strings.TrimSpace(sql), "\n")
	if len(sql) > 100 {
		sql = sql[:100] + "…"
	}
	return sql
}

// TraceQueryStart counts a statement sent alone.
func (r *RoundTrips) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	r.count(short(d.SQL))
	return ctx
}

// TraceQueryEnd does nothing.
func (r *RoundTrips) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// TraceBatchStart counts a pipeline.
func (r *RoundTrips) TraceBatchStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceBatchStartData) context.Context {
	var qs []string
	if d.Batch != nil {
		for _, q := range d.Batch.QueuedQueries {
			qs = append(qs, short(q.SQL))
		}
	}
	r.count("batch: " + strings.Join(qs, " | "))
	return ctx
}

// TraceBatchQuery does nothing: the pipeline was counted.
func (r *RoundTrips) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}

// TraceBatchEnd does nothing.
func (r *RoundTrips) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// TraceCopyFromStart counts a COPY.
func (r *RoundTrips) TraceCopyFromStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceCopyFromStartData) context.Context {
	r.count("copy " + d.TableName.Sanitize())
	return ctx
}

// TraceCopyFromEnd does nothing.
func (r *RoundTrips) TraceCopyFromEnd(context.Context, *pgx.Conn, pgx.TraceCopyFromEndData) {}
