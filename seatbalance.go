package billing

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strconv"
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

// seatPosition orders seat events: by timestamp, then by creation (ids
// are time ordered).
type seatPosition struct {
	ts, id string
	total  int64
}

// seatBalance computes c's balance at asOf from the timelines of its id and
// aliases.
func (s *Service) seatBalance(ctx context.Context, tx Tx, c *Customer, asOf time.Time) (SeatBalance, error) {
	b := SeatBalance{
		ID: c.ID, ServiceAccountID: c.ServiceAccountID, LegalName: c.LegalName,
		CustomerAliases: c.CustomerAliases, Balances: []SeatTypeBalance{},
	}
	limit := FormatTimestamp(asOf)
	latest := map[string]seatPosition{}
	for _, alias := range append([]string{c.ID}, c.CustomerAliases...) {
		pre := prefix(c.ServiceAccountID, alias)
		err := tx.Scan(ctx, tableSeatTimeline, Range{Prefix: pre}, func(k, v []byte) error {
			parts := bytes.Split(k[len(pre):], []byte{keySep})
			if len(parts) != 3 {
				return fmt.Errorf("malformed seat timeline key %q", k)
			}
			seatType, pos := string(parts[0]), seatPosition{ts: string(parts[1]), id: string(parts[2])}
			if pos.ts > limit {
				return nil
			}
			if cur, ok := latest[seatType]; ok && (cur.ts > pos.ts || cur.ts == pos.ts && cur.id > pos.id) {
				return nil
			}
			total, err := strconv.ParseInt(string(v), 10, 64)
			pos.total = total
			latest[seatType] = pos
			return err
		})
		if err != nil {
			return b, err
		}
	}
	for _, seatType := range sortedKeys(latest) {
		pos := latest[seatType]
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
