package billing

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// SeatBalance is a customer's seats at one moment (operation 8).
type SeatBalance struct {
	// ID is the customer's id.
	ID               string   `json:"id"`
	ServiceAccountID string   `json:"serviceAccountId"`
	LegalName        string   `json:"legalName"`
	CustomerAliases  []string `json:"customerAliases"`
	// Total is the sum of Balances.
	Total int64 `json:"total"`
	// ChangeTimestamp is the timestamp of the latest counted event; nil
	// when no event counts.
	ChangeTimestamp *time.Time        `json:"changeTimestamp,omitempty"`
	Balances        []SeatTypeBalance `json:"balances"`
}

// SeatTypeBalance is a customer's seats of one type: the total of the
// latest counted event of any of its aliases.
type SeatTypeBalance struct {
	SeatType        string    `json:"seatType"`
	Total           int64     `json:"total"`
	ChangeTimestamp time.Time `json:"changeTimestamp"`
}

// SeatBalanceFilter selects seat balances in ListSeatBalances. Given
// filters must all match.
type SeatBalanceFilter struct {
	// ExcludeZeroQuantity leaves out customers whose total is 0.
	ExcludeZeroQuantity bool
	// CustomerAliases keeps the customers that have any of these aliases
	// (or ids), at most 100.
	CustomerAliases []string
	// CustomerIDs keeps these customers, at most 100; ids that name no
	// customer of the account match nothing.
	CustomerIDs []string
	// AsOf is the moment of the balances; nil means now.
	AsOf *time.Time
}

// ListSeatBalances returns one balance per customer of the account
// (archived ones included), ordered by legal name (byte order) then id, and
// paginated (operation 8). Events count from their timestamp, so future
// events do not count yet; events of aliases no customer had when they
// arrived count once a customer claims the alias. Returns validation_failed
// for more than 100 customerIds or customerAliases, bad limits or cursors.
func (s *Service) ListSeatBalances(ctx context.Context, account string, f SeatBalanceFilter, p ListParams) (Page[SeatBalance], error) {
	var v validator
	v.check(len(f.CustomerIDs) <= maxFilterIDs, "customerIds", "customerIds names at most %d customers", maxFilterIDs)
	v.check(len(f.CustomerAliases) <= maxFilterIDs, "customerAliases", "customerAliases names at most %d aliases", maxFilterIDs)
	if err := v.err(); err != nil {
		return Page[SeatBalance]{}, err
	}
	asOf := s.clock()
	filterAsOf := ""
	if f.AsOf != nil {
		asOf = NormalizeTime(*f.AsOf)
		filterAsOf = FormatTimestamp(asOf)
	}
	var page Page[SeatBalance]
	err := s.view(ctx, func(tx Tx) error {
		keep, err := s.balanceCustomers(ctx, tx, account, f)
		if err != nil {
			return err
		}
		q := listQuery[SeatBalance]{
			name:   "seat_balances",
			filter: fmt.Sprintf("%t|%q|%q|%q", f.ExcludeZeroQuantity, f.CustomerAliases, f.CustomerIDs, filterAsOf),
			table:  tableCustomerNames, prefix: prefix(account),
			decode: func(_, id []byte) (SeatBalance, bool, error) {
				if keep != nil && !keep[string(id)] {
					return SeatBalance{}, false, nil
				}
				c, err := s.getCustomer(ctx, tx, account, string(id))
				if err != nil {
					return SeatBalance{}, false, err
				}
				b, err := s.seatBalance(ctx, tx, c, asOf)
				return b, err == nil && (!f.ExcludeZeroQuantity || b.Total != 0), err
			},
		}
		page, err = list(ctx, s, tx, q, p)
		return err
	})
	return page, err
}

// balanceCustomers returns the ids of the customers the id and alias
// filters keep; nil when neither filter is given.
func (s *Service) balanceCustomers(ctx context.Context, tx Tx, account string, f SeatBalanceFilter) (map[string]bool, error) {
	var keep map[string]bool
	if len(f.CustomerIDs) > 0 {
		keep = map[string]bool{}
		for _, id := range f.CustomerIDs {
			keep[id] = true
		}
	}
	if len(f.CustomerAliases) == 0 {
		return keep, nil
	}
	byAlias := map[string]bool{}
	for _, a := range f.CustomerAliases {
		c, err := s.customerByAlias(ctx, tx, account, a)
		if err != nil {
			return nil, err
		}
		if c != nil && (keep == nil || keep[c.ID]) {
			byAlias[c.ID] = true
		}
	}
	return byAlias, nil
}

// seatStep is one seat snapshot of a timeline: from ts on (a timestamp in
// TimestampLayout, which sorts as text), the customer holds total seats.
// id is the seat event's id; ids are time ordered, so they order events by
// creation.
type seatStep struct {
	ts, id string
	total  int64
}

// seatTimeline is one seat type's balance over time: its steps ordered by
// timestamp, where of several events at the same timestamp only the latest
// created remains. It is the one implementation of "seat balance over time"
// (the latest event by eventTimestamp, then by creation): op 8's balances
// and the engine's seats both read it.
type seatTimeline []seatStep

// loadSeatTimelines reads the seat timelines of c from the events of its id
// and every alias, by seat type; seatType "" reads every type.
func loadSeatTimelines(ctx context.Context, tx Tx, c *Customer, seatType string) (map[string]seatTimeline, error) {
	out := map[string]seatTimeline{}
	for _, alias := range append([]string{c.ID}, c.CustomerAliases...) {
		pre := prefix(c.ServiceAccountID, alias)
		if seatType != "" {
			pre = prefix(c.ServiceAccountID, alias, seatType)
		}
		base := len(prefix(c.ServiceAccountID, alias))
		err := tx.Scan(ctx, tableSeatTimeline, Range{Prefix: pre}, func(k, v []byte) error {
			parts := bytes.Split(k[base:], []byte{keySep})
			if len(parts) != 3 {
				return fmt.Errorf("malformed seat timeline key %q", k)
			}
			total, err := strconv.ParseInt(string(v), 10, 64)
			typ := string(parts[0])
			out[typ] = append(out[typ], seatStep{ts: string(parts[1]), id: string(parts[2]), total: total})
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	for typ, tl := range out {
		slices.SortFunc(tl, func(a, b seatStep) int {
			if c := strings.Compare(a.ts, b.ts); c != 0 {
				return c
			}
			return strings.Compare(a.id, b.id)
		})
		// Keep only the last created of each timestamp.
		kept := tl[:0]
		for i, st := range tl {
			if i+1 < len(tl) && tl[i+1].ts == st.ts {
				continue
			}
			kept = append(kept, st)
		}
		out[typ] = kept
	}
	return out, nil
}

// at returns the step in force at the instant ts (the last step at or
// before it); ok is false before the first step.
func (tl seatTimeline) at(ts string) (st seatStep, ok bool) {
	i, _ := slices.BinarySearchFunc(tl, ts, func(s seatStep, t string) int {
		if s.ts <= t {
			return -1
		}
		return 1
	})
	if i == 0 {
		return seatStep{}, false
	}
	return tl[i-1], true
}

// highest returns the highest balance during [from, to): the balance at
// from and every step inside the span.
func (tl seatTimeline) highest(from, to string) int64 {
	best, _ := tl.at(from)
	n := best.total
	for _, st := range tl {
		if st.ts > from && st.ts < to {
			n = max(n, st.total)
		}
	}
	return n
}

// seatBalance computes c's balance at asOf from the timelines of its id and
// aliases.
func (s *Service) seatBalance(ctx context.Context, tx Tx, c *Customer, asOf time.Time) (SeatBalance, error) {
	b := SeatBalance{
		ID: c.ID, ServiceAccountID: c.ServiceAccountID, LegalName: c.LegalName,
		CustomerAliases: c.CustomerAliases, Balances: []SeatTypeBalance{},
	}
	timelines, err := loadSeatTimelines(ctx, tx, c, "")
	if err != nil {
		return b, err
	}
	limit := FormatTimestamp(asOf)
	for _, seatType := range sortedKeys(timelines) {
		pos, ok := timelines[seatType].at(limit)
		if !ok {
			continue
		}
		ts, err := time.Parse(TimestampLayout, pos.ts)
		if err != nil {
			return b, err
		}
		b.Balances = append(b.Balances, SeatTypeBalance{SeatType: seatType, Total: pos.total, ChangeTimestamp: ts})
		b.Total += pos.total
		if b.ChangeTimestamp == nil || ts.After(*b.ChangeTimestamp) {
			b.ChangeTimestamp = &ts
		}
	}
	b.CustomerAliases = slices.Clip(append([]string{}, b.CustomerAliases...))
	return b, nil
}
