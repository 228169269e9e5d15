package boltstore

import (
	"os"
	"time"
)

// OpenWithSeams is Open with the clock of the reopen interval and the file
// opener replaced, so tests can inject write failures and skip the wait.
func OpenWithSeams(path string, opts *Options, now func() time.Time, openFile func(string, int, os.FileMode) (*os.File, error)) (*Store, error) {
	return open(path, opts, now, openFile)
}
