//go:build !race

package httpserver

// raceEnabled: see race_on_test.go.
const raceEnabled = false
