package billing

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Kept counts and kept indexes: what makes a list cost its page.
//
// A list's TotalResultSize is read from counts kept in the transactions
// that write its records (list_counts: one per account and list, and one
// per value of each filter the list accepts alone), and a filtered list
// reads a kept index of that filter (list_index: its entries sort as the
// list does), so no page visits the records it does not return. With
// several filters a list reads the index of the filter with the fewest
// records and skips the others' non-matches by the values each index
// entry carries; its count is that scan's (bounded by what the narrowest
// index holds). docs/API.md's "Lists and their cost" says which filters
// are exact-and-fast.

// keptList is a list with kept counts and indexes: every write of one of
// its records goes through put, which keeps them exact.
type keptList struct {
	// name is the list's part of the keys of list_counts and list_index.
	name string
	// filters are the kept filters, in the order put's values give them.
	filters []string
}

// The kept lists.
var (
	keptInvoices    = keptList{name: "invoices", filters: []string{"customerId", "status", "billingScheduleId"}}
	keptCreditNotes = keptList{name: "credit_notes", filters: []string{"customerId", "invoiceId", "status"}}
	keptCustomers   = keptList{name: "customers"}
	keptJournal     = keptList{name: "journal", filters: []string{"sourceId", "sourceType"}}
	keptDeliveries  = keptList{name: "notification_deliveries", filters: []string{"policyId", "status", "notificationId"}}
)

// usageCountList is the usage events' name in list_counts. Their counts
// are kept by the ingestion (usagestore.go): per account, event type,
// customer alias and series; their indexes are the usage tables' own.
const usageCountList = "usage_events"

// encodeValues is the stored form of a record's filter values.
func encodeValues(values []string) []byte {
	return []byte("1" + strings.Join(values, "\x00"))
}

// decodeValues reads encodeValues' form back; n is the number of filters.
func decodeValues(b []byte, n int) ([]string, error) {
	if len(b) == 0 || b[0] != '1' {
		return nil, fmt.Errorf("billing: a list_index entry of unknown form %q", b)
	}
	if n == 0 {
		return nil, nil
	}
	v := strings.Split(string(b[1:]), "\x00")
	if len(v) != n {
		return nil, fmt.Errorf("billing: a list_index entry with %d values, not %d", len(v), n)
	}
	return v, nil
}

// put keeps the counts and indexes of the record id of account exact after
// a write: values are the record's filter values now (in kl.filters'
// order, "" where it has none), nil when the record was deleted. It reads
// the record's own entry (the values it was kept with) and changes only
// what differs.
func (kl keptList) put(ctx context.Context, tx Tx, account, id string, values []string) error {
	rk := key(account, kl.name, "", id)
	stored, err := tx.Get(ctx, tableListIndex, rk)
	present := err == nil
	if err != nil && !errors.Is(err, ErrNotFound) {
		return err
	}
	var enc []byte
	if values != nil {
		enc = encodeValues(values)
	}
	if present && bytes.Equal(stored, enc) || !present && values == nil {
		return nil
	}
	var old []string
	if present {
		if old, err = decodeValues(stored, len(kl.filters)); err != nil {
			return err
		}
	}
	deltas := map[string]int64{}
	deltas[string(key(account, kl.name))] += boolDelta(values != nil) - boolDelta(present)
	for i, f := range kl.filters {
		var was, now string
		if present {
			was = old[i]
		}
		if values != nil {
			now = values[i]
		}
		if was != "" && was != now {
			deltas[string(key(account, kl.name, f, was))]--
			if err := tx.Delete(ctx, tableListIndex, key(account, kl.name, f, was, id)); err != nil {
				return err
			}
		}
		if now == "" {
			continue
		}
		if now != was {
			deltas[string(key(account, kl.name, f, now))]++
		}
		if err := tx.Put(ctx, tableListIndex, key(account, kl.name, f, now, id), enc); err != nil {
			return err
		}
	}
	if values == nil {
		err = tx.Delete(ctx, tableListIndex, rk)
	} else {
		err = tx.Put(ctx, tableListIndex, rk, enc)
	}
	if err != nil {
		return err
	}
	return addCounts(ctx, tx, deltas)
}

// boolDelta is 1 for true, 0 for false.
func boolDelta(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// addCounts adds each delta to its count in list_counts (addDelta: a row
// of its own, folded now and then, with concurrent writers; into the base
// row with one writer at a time), in key order.
func addCounts(ctx context.Context, tx Tx, deltas map[string]int64) error {
	keys := make([]string, 0, len(deltas))
	for k, d := range deltas {
		if d != 0 {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		v := binary.BigEndian.AppendUint64(nil, uint64(deltas[k]))
		if err := addDelta(ctx, tx, tableListCounts, []byte(k), v, new(keptCount)); err != nil {
			return err
		}
	}
	return nil
}

// keep makes q, a list of kl over records keyed (account, id) in q.table,
// read kl's kept counts and indexes for the filters given (parallel to
// kl.filters, "" where not given): no filter reads q.table and the
// account's count; one filter reads its index and its count; several read
// the index of the one with the smallest count, and count by it. q.decode
// still decides each record it loads.
func keep[T any](ctx context.Context, tx Tx, kl keptList, account string, given []string, q *listQuery[T]) error {
	narrowest, best, set, err := kl.narrowest(ctx, tx, account, given)
	if err != nil {
		return err
	}
	if narrowest < 0 {
		q.count = func(ctx context.Context, tx Tx) (int, error) {
			n, err := readCount(ctx, tx, key(account, kl.name))
			return int(n), err
		}
		return nil
	}
	matches := func(v []byte) (bool, error) {
		values, err := decodeValues(v, len(kl.filters))
		if err != nil {
			return false, err
		}
		for i, g := range given {
			if g != "" && values[i] != g {
				return false, nil
			}
		}
		return true, nil
	}
	idx := prefix(account, kl.name, kl.filters[narrowest], given[narrowest])
	q.scanTable, q.scanPrefix = tableListIndex, idx
	if set == 1 {
		q.count = func(context.Context, Tx) (int, error) { return int(best), nil }
	} else {
		q.count = func(ctx context.Context, tx Tx) (int, error) {
			n := 0
			err := tx.Scan(ctx, tableListIndex, Range{Prefix: idx}, func(_, v []byte) error {
				ok, err := matches(v)
				if ok {
					n++
				}
				return err
			})
			return n, err
		}
	}
	decode := q.decode
	q.decode = func(_, v []byte) (T, bool, error) {
		var zero T
		ok, err := matches(v)
		return zero, ok, err
	}
	q.load = keptLoad(kl, account, q.table, decode)
	return nil
}

// keptLoad returns the load of a list of kl read through its index: the
// records of the page's positions (record ids) of account in table, read in
// one request and decoded by decode.
func keptLoad[T any](kl keptList, account string, table Table, decode func(k, v []byte) (T, bool, error)) func(context.Context, Tx, [][]byte) ([]T, error) {
	return func(ctx context.Context, tx Tx, pos [][]byte) ([]T, error) {
		keys := make([][]byte, len(pos))
		for i, id := range pos {
			keys[i] = key(account, string(id))
		}
		vals, err := getMany(ctx, tx, table, keys)
		if err != nil {
			return nil, err
		}
		items := make([]T, len(pos))
		for i, v := range vals {
			if v == nil {
				return nil, fmt.Errorf("billing: %s index entry of %q without its record", kl.name, pos[i])
			}
			if items[i], _, err = decode(keys[i], v); err != nil {
				return nil, err
			}
		}
		return items, nil
	}
}

// invoiceValues are an invoice's values of keptInvoices' filters.
func invoiceValues(r *invoiceRecord) []string {
	return []string{r.CustomerID, string(r.Status), r.BillingScheduleID}
}

// creditNoteValues are a credit note's values of keptCreditNotes' filters.
func creditNoteValues(c *CreditNote) []string {
	return []string{c.CustomerID, c.InvoiceID, string(c.Status)}
}

// journalValues are an entry's values of keptJournal's filters.
func journalValues(e *JournalEntry) []string {
	return []string{e.SourceID, string(e.SourceType)}
}

// deliveryValues are a delivery's values of keptDeliveries' filters.
func deliveryValues(d *Delivery) []string {
	return []string{d.PolicyID, string(d.Status), d.NotificationID}
}

// putDelivery stores the delivery id of account and keeps its list's
// counts and indexes.
func putDelivery(ctx context.Context, tx Tx, account, id string, d *deliveryRecord) error {
	if err := putRecord(ctx, tx, tableDeliveries, key(account, id), d); err != nil {
		return err
	}
	return keptDeliveries.put(ctx, tx, account, id, deliveryValues(&d.Delivery))
}

// narrowest returns which of the filters given has the smallest kept count
// (-1: none is given), that count, and how many filters are given.
func (kl keptList) narrowest(ctx context.Context, tx Tx, account string, given []string) (narrowest int, best int64, set int, err error) {
	narrowest = -1
	for i, v := range given {
		if v == "" {
			continue
		}
		set++
		n, err := readCount(ctx, tx, key(account, kl.name, kl.filters[i], v))
		if err != nil {
			return 0, 0, 0, err
		}
		if narrowest < 0 || n < best {
			narrowest, best = i, n
		}
	}
	return narrowest, best, set, nil
}

// listKept is list over q, a list of kl, through kl's kept counts and
// indexes for the filters given (keep).
func listKept[T any](ctx context.Context, s *Service, tx Tx, kl keptList, account string, given []string, q listQuery[T], p ListParams) (Page[T], error) {
	if err := keep(ctx, tx, kl, account, given, &q); err != nil {
		return Page[T]{}, err
	}
	return list(ctx, s, tx, q, p)
}
