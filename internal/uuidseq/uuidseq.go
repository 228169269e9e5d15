// Package uuidseq makes the ids of a batch of usage events: a sequence of
// UUIDv7s drawn with one read of randomness (V7s).
package uuidseq

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/google/uuid"
)

// V7s returns n UUIDv7s in ascending order, made from one
// uuid.NewV7: its 48-bit millisecond time and 12-bit sub-millisecond
// sequence (which google/uuid keeps increasing within the process, so any
// later id of the process sorts after all of these), then its 62 random
// bits, the first of which is cleared and the rest incremented by 1 from
// one id to the next (RFC 9562, section 6.2, method 2: the random bits
// used as a counter). Every id is a valid UUIDv7 (version and variant
// bits untouched), they are unique within the process (every batch has a
// time and sequence of its own) and across processes as much as 61 random
// bits make them (two batches would need the same millisecond and
// sequence and counters within n of each other), and a batch's ids share
// one millisecond, which keeps its id index to one record. One read of
// randomness and three allocations per batch, instead of a read and two
// allocations per event. raw holds the ids' 16 bytes, id i at 16*i: what a
// record stores, without parsing the text back.
func V7s(n int) (ids []string, raw []byte) {
	if n == 0 {
		return nil, nil
	}
	first, err := uuid.NewV7()
	if err != nil {
		panic(fmt.Sprintf("uuidseq: generating a UUIDv7: %v", err))
	}
	first[8] &^= 0x20 // the top random bit: room for 2^61 increments below the variant bits
	counter := binary.BigEndian.Uint64(first[8:])
	// The ids differ only in their last 8 bytes: the text of the first 8
	// is written once and copied.
	var head [19]byte
	hex.Encode(head[:8], first[:4])
	hex.Encode(head[9:13], first[4:6])
	hex.Encode(head[14:18], first[6:8])
	head[8], head[13], head[18] = '-', '-', '-'
	var text strings.Builder
	text.Grow(36 * n)
	raw = make([]byte, 16*n)
	b := [36]byte{23: '-'}
	copy(b[:], head[:])
	for i := range n {
		id := raw[16*i : 16*i+16]
		copy(id, first[:8])
		binary.BigEndian.PutUint64(id[8:], counter+uint64(i))
		hex.Encode(b[19:23], id[8:10])
		hex.Encode(b[24:], id[10:])
		text.Write(b[:])
	}
	all := text.String()
	ids = make([]string, n)
	for i := range ids {
		ids[i] = all[36*i : 36*i+36]
	}
	return ids, raw
}
