package billing

import (
	"context"
	"strings"

	"github.com/billingd/billing/internal/eventcodec"
)

// The kept counts of usage events (listcount.go): per account, per event
// type, per customer alias and per series (event type and alias), changed
// by every ingestion in its transaction, as it stores and supersedes.

// count records that the run changed the events of series name by d.
func (ew *eventWriter) count(name seriesName, d int64) {
	if ew.counts == nil {
		ew.counts = map[seriesName]int64{}
	}
	ew.counts[name] += d
}

// seriesNameOf returns the event type and alias of series no.
func seriesNameOf(ctx context.Context, tx Tx, no []byte) (seriesName, error) {
	v, err := tx.Get(ctx, tableUsageSeriesNames, no)
	if err != nil {
		return seriesName{}, err
	}
	et, alias, _ := strings.Cut(string(v), string(rune(keySep)))
	return seriesName{et, alias}, nil
}

// usageCountKey is the key of one usage count of account: in all (no
// filter), or of one filter's value.
func usageCountKey(account, filter, value string) []byte {
	if filter == "" {
		return key(account, usageCountList)
	}
	return key(account, usageCountList, filter, value)
}

// usageCountDeltas turns the changes of each series of account into the
// changes of its kept counts.
func usageCountDeltas(account string, counts map[seriesName]int64) map[string]int64 {
	deltas := make(map[string]int64, 3*len(counts)+1)
	for n, d := range counts {
		deltas[string(usageCountKey(account, "", ""))] += d
		deltas[string(usageCountKey(account, "eventType", n.eventType))] += d
		deltas[string(usageCountKey(account, "customerAlias", n.alias))] += d
		deltas[string(usageCountKey(account, "series", n.eventType+"\x00"+n.alias))] += d
	}
	return deltas
}

// countUsageEvents is the TotalResultSize of ListUsageEvents: a kept count
// when f has no time bounds; otherwise the keys of the matching series
// within the bounds are counted (no event is decoded).
func (s *Service) countUsageEvents(ctx context.Context, tx Tx, account string, acct []byte, f *UsageEventFilter) (int, error) {
	if f.EventTimestampAfter == nil && f.EventTimestampBefore == nil {
		var k []byte
		switch {
		case f.EventType != "" && f.CustomerAlias != "":
			k = usageCountKey(account, "series", f.EventType+"\x00"+f.CustomerAlias)
		case f.EventType != "":
			k = usageCountKey(account, "eventType", f.EventType)
		case f.CustomerAlias != "":
			k = usageCountKey(account, "customerAlias", f.CustomerAlias)
		default:
			k = usageCountKey(account, "", "")
		}
		n, err := readCount(ctx, tx, k)
		return int(n), err
	}
	var series [][]byte
	pfx := prefix(account)
	if f.EventType != "" {
		pfx = prefix(account, f.EventType)
	}
	err := tx.Scan(ctx, tableUsageSeries, Range{Prefix: pfx}, func(k, v []byte) error {
		_, alias, _ := strings.Cut(string(k[len(account)+1:]), string(rune(keySep)))
		if f.CustomerAlias == "" || alias == f.CustomerAlias {
			series = append(series, append([]byte(nil), v...))
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, no := range series {
		r := Range{Prefix: no}
		if f.EventTimestampAfter != nil {
			r.Start = eventcodec.AppendTime(append([]byte(nil), no...), NormalizeTime(*f.EventTimestampAfter))
		}
		if f.EventTimestampBefore != nil {
			r.End = eventcodec.AppendTime(append([]byte(nil), no...), NormalizeTime(*f.EventTimestampBefore))
		}
		err := tx.Scan(ctx, tableUsageEvents, r, func(_, _ []byte) error {
			n++
			return nil
		})
		if err != nil {
			return 0, err
		}
	}
	return n, nil
}

// idRecordOf is the key suffix of the usage_event_ids record holding the
// list position pos: pos itself, or for a record's other entries
// (eachIndexEntry) the first entry's UUID that starts it.
func idRecordOf(pos []byte) []byte {
	if len(pos) == 33 && pos[0] == eventcodec.IDKindUUID {
		return pos[:17]
	}
	return pos
}
