// Package counter is the stored form of the Store port's counters
// (billing.Tx.Increment): an 8-byte big-endian unsigned integer. Every
// backend stores them the same way, so a copy between backends
// (storage/storecopy) carries counters as they are.
package counter

import (
	"encoding/binary"
	"fmt"
)

// Next returns the value that follows the counter stored as v (found false:
// never incremented, so 1) and its stored form. A stored value of another
// length than 8 is an error.
func Next(v []byte, found bool) (n uint64, stored []byte, err error) {
	if found {
		if len(v) != 8 {
			return 0, nil, fmt.Errorf("counter holds %d bytes, want 8", len(v))
		}
		n = binary.BigEndian.Uint64(v)
	}
	n++
	return n, binary.BigEndian.AppendUint64(nil, n), nil
}
