//go:build race

package httpserver

// raceEnabled: the race detector slows rendering about tenfold, so the
// render load test runs only without it (.ci/run's PostgreSQL pass).
const raceEnabled = true
