package pgstore

import (
	"strings"
	"testing"
)

// TestRedactShowsNoSecret: whatever form the connection string has, the
// redacted form names host, port, database and user, and holds neither
// the password nor anything else of the string.
func TestRedactShowsNoSecret(t *testing.T) {
	t.Setenv("PGPASSWORD", "")
	for _, c := range []struct{ in, want string }{
		{"postgres://alice:s3cr3t@db.example:5433/billing?sslmode=disable&password=s3cr3t", "host=db.example port=5433 database=billing user=alice"},
		{"host=db.example port=5433 dbname=billing user=alice password=s3cr3t", "host=db.example port=5433 database=billing user=alice"},
		{"host=db.example dbname=billing user=alice password = s3cr3t", "host=db.example port=5432 database=billing user=alice"},
		{"host=db.example dbname=billing user=alice password= s3cr3t", "host=db.example port=5432 database=billing user=alice"},
		{"host=db.example dbname=billing user=alice password='s3 cr3t'", "host=db.example port=5432 database=billing user=alice"},
		{"host=db.example dbname=billing user=alice password='s3cr3t' sslpassword=s3cr3t", "host=db.example port=5432 database=billing user=alice"},
		{"postgres://alice@db.example/billing?password=s3cr3t", "host=db.example port=5432 database=billing user=alice"},
		{"host=db.example password='unterminated s3cr3t", "(unparsable connection string)"},
	} {
		got := Redact(c.in)
		if got != c.want || strings.Contains(got, "s3") || strings.Contains(got, "cr3t") {
			t.Errorf("Redact(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
