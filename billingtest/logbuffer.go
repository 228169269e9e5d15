package billingtest

import (
	"bytes"
	"sync"
)

// LogBuffer is a bytes.Buffer safe for a logger (the server's goroutines)
// and a test to share: tests give it to slog as a log destination and read
// what was logged with String.
type LogBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p under the buffer's lock.
func (s *LogBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns what was written so far.
func (s *LogBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
