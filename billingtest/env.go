package billingtest

import (
	"os"
	"strconv"
	"testing"
	"time"
)

// The knobs of long and randomized tests are environment variables, so
// that go test's own flags stay the usual ones.

// EnvCount returns the integer in the environment variable name, or def
// when it is unset. A value that is not an integer of at least atLeast fails
// tb: a mistyped knob must not silently run the default.
func EnvCount(tb testing.TB, name string, def, atLeast int) int {
	tb.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < atLeast {
		tb.Fatalf("%s=%q: want an integer >= %d", name, v, atLeast)
	}
	return n
}

// Seed returns the seed of a randomized test: the unsigned integer in the
// environment variable name, which replays a run, or a new seed when it is
// unset. It logs name=seed, so that a failed run says how to replay it; a
// value that is not an unsigned integer fails tb.
func Seed(tb testing.TB, name string) uint64 {
	tb.Helper()
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv(name); v != "" {
		var err error
		if seed, err = strconv.ParseUint(v, 10, 64); err != nil {
			tb.Fatalf("%s=%q: %v", name, v, err)
		}
	}
	tb.Logf("%s=%d", name, seed)
	return seed
}
