package pgstore

import "github.com/billingd/billing"

// ownRelations are the Store tables that have a SQL table of their own
// instead of rows in billing_kv: the high-volume tables of usage
// ingestion. At SERIALIZABLE, PostgreSQL tracks what a transaction read by
// index page (and, past a few dozen pages, by whole index); in one shared
// index, a concurrent batch writing thousands of events touches the pages
// that other transactions read to look up an alias or an empty key range
// of a neighbouring table, and one of them fails to serialize and runs
// again. A table of their own keeps ingestion off everyone else's pages.
// The hourly usage rollups, their day totals and the creation-order index
// of each customer alias, written by every ingestion, are kept apart for
// the same reason.
// Every SQL table has the same three columns, so every statement is the
// same whichever table holds a key.
var ownRelations = map[billing.Table]string{
	"usage_events":     "billing_usage_events",
	"usage_event_ids":  "billing_usage_event_ids",
	"usage_event_keys": "billing_usage_event_keys",
	"usage_rollups":    "billing_usage_rollups",
	"usage_alias_ids":  "billing_usage_alias_ids",
	// The day totals beside the hourly rollups (billing's usagerollupday.go).
	"usage_rollup_days": "billing_usage_rollup_days",
}

// sharedRelation holds every Store table not in ownRelations.
const sharedRelation = "billing_kv"

// Relation returns the name of the SQL table that holds the records of
// table (in the store's schema): billing_kv, or a table of its own for the
// usage event tables.
func Relation(table billing.Table) string {
	if r, ok := ownRelations[table]; ok {
		return r
	}
	return sharedRelation
}

// relations returns every SQL table of the store, billing_kv first.
func relations() []string {
	rels := []string{sharedRelation}
	for _, table := range []billing.Table{"usage_event_ids", "usage_event_keys", "usage_events", "usage_rollups", "usage_alias_ids", "usage_rollup_days"} {
		rels = append(rels, ownRelations[table])
	}
	return rels
}

// statements are the SQL statements of one relation, built once.
type statements struct {
	get, lock, insert, del, delMany, upsert, copy string
	// scan is indexed by scanVariant.
	scan [8]string
}

var stmtsByRelation = func() map[string]*statements {
	m := make(map[string]*statements)
	for _, rel := range relations() {
		s := &statements{
			get:     `select v from ` + rel + ` where tbl = $1 and k = $2`,
			lock:    `select v from ` + rel + ` where tbl = $1 and k = $2 for update`,
			insert:  `insert into ` + rel + ` (tbl, k, v) values ($1, $2, $3) on conflict (tbl, k) do nothing`,
			del:     `delete from ` + rel + ` where tbl = $1 and k = $2`,
			delMany: `delete from ` + rel + ` where tbl = $1 and k = any($2::bytea[])`,
			copy:    `copy ` + rel + ` (tbl, k, v) from stdin binary`,
			upsert: `insert into ` + rel + ` (tbl, k, v) select $1, u.k, u.v from unnest($2::bytea[], $3::bytea[]) as u(k, v)
			 on conflict (tbl, k) do update set v = excluded.v`,
		}
		for v := range s.scan {
			s.scan[v] = scanSQL(rel, v&1 != 0, v&2 != 0, v&4 != 0)
		}
		m[rel] = s
	}
	return m
}()

// stmts returns the statements of the relation that holds table.
func stmts(table billing.Table) *statements { return stmtsByRelation[Relation(table)] }

// scanVariant numbers the eight forms of a chunk query.
func scanVariant(lowerOpen, upper, reverse bool) int {
	v := 0
	if lowerOpen {
		v |= 1
	}
	if upper {
		v |= 2
	}
	if reverse {
		v |= 4
	}
	return v
}

// scanSQL is a chunk query: $1 table, $2 lower bound, $3 limit, $4 upper
// bound (when upper).
func scanSQL(rel string, lowerOpen, upper, reverse bool) string {
	q := `select k, v from ` + rel + ` where tbl = $1 and k >= $2`
	if lowerOpen {
		q = `select k, v from ` + rel + ` where tbl = $1 and k > $2`
	}
	if upper {
		q += ` and k < $4`
	}
	if reverse {
		return q + ` order by k desc limit $3`
	}
	return q + ` order by k limit $3`
}
