package billing

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// maxFilterIDs bounds the customers named in one customerIds or
// customerAliases filter (docs/api-guide.md, "Limits").
const maxFilterIDs = 100

// SeatMetric describes a seat type an account bills for.
type SeatMetric struct {
	ID string `json:"id"`
	// ServiceAccountID is the account that owns the metric.
	ServiceAccountID string `json:"serviceAccountId"`
	// SeatType is the name seat events use for this kind of seat.
	SeatType string `json:"seatType"`
	// CreatedBy is the id of the API key that created the metric.
	CreatedBy string `json:"createdBy"`
	// Label is free text for people.
	Label       string    `json:"label"`
	Description string    `json:"description,omitempty"`
	CreatedAt   time.Time `json:"createdAt"`
	UpdatedAt   time.Time `json:"updatedAt"`
}

// CreateSeatMetricParams are the fields of a new seat metric. CreatedBy is
// not a body field: the HTTP server sets it to the id of the API key, a
// library caller to a label of its own choosing.
type CreateSeatMetricParams struct {
	// SeatType is the name seat events use; required, unique in the account,
	// immutable.
	SeatType string `json:"seatType"`
	// Label is free text for people; required.
	Label       string `json:"label"`
	Description string `json:"description"`
	// CreatedBy records who created the metric (see above).
	CreatedBy string `json:"-"`
}

// UpdateSeatMetricParams are the fields of a seat metric that can change;
// the seat type is immutable.
type UpdateSeatMetricParams struct {
	// Label is free text for people; required.
	Label       string `json:"label"`
	Description string `json:"description"`
}

// checkSeatType validates a seat type: lower snake case, at most 64
// characters.
func checkSeatType(v *validator, field, value string, required bool) {
	switch {
	case value == "":
		v.check(!required, field, "%s is required", field)
	case len(value) > 64:
		v.add(field, "%s must be at most 64 characters", field)
	case value[0] < 'a' || value[0] > 'z' || strings.ContainsFunc(value, func(r rune) bool {
		return (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '_'
	}):
		v.add(field, "%s must be lower snake case, such as \"editor_seats\"", field)
	}
}

// CreateSeatMetric creates a seat metric. Returns validation_failed for
// invalid fields (all at once) and conflict when the account already has a
// seat metric of that seat type.
func (s *Service) CreateSeatMetric(ctx context.Context, account string, p CreateSeatMetricParams) (*SeatMetric, error) {
	var v validator
	checkSeatType(&v, "seatType", p.SeatType, true)
	s.checkString(&v, "label", p.Label, true)
	s.checkString(&v, "description", p.Description, false)
	s.checkString(&v, "createdBy", p.CreatedBy, false)
	if err := v.err(); err != nil {
		return nil, err
	}
	now := s.clock()
	m := &SeatMetric{
		ID: s.newID(), ServiceAccountID: account, SeatType: p.SeatType, CreatedBy: p.CreatedBy,
		Label: p.Label, Description: p.Description, CreatedAt: now, UpdatedAt: now,
	}
	return mutate(ctx, s, account, func(tx Tx) (*SeatMetric, error) {
		err := claimKey(ctx, tx, tableSeatMetricTypes, key(account, m.SeatType), m.ID,
			"seatType", fmt.Sprintf("a seat metric for seat type %q already exists", m.SeatType))
		if err != nil {
			return nil, err
		}
		return m, putRecord(ctx, tx, tableSeatMetrics, key(account, m.ID), m)
	})
}

// GetSeatMetric returns a seat metric. Returns not_found if the account has
// no such seat metric.
func (s *Service) GetSeatMetric(ctx context.Context, account, id string) (*SeatMetric, error) {
	return getOne[SeatMetric](ctx, s, tableSeatMetrics, account, id, "seat metric")
}

func (s *Service) getSeatMetric(ctx context.Context, tx Tx, account, id string) (*SeatMetric, error) {
	return getOwned[SeatMetric](ctx, tx, tableSeatMetrics, account, id, "seat metric")
}

// UpdateSeatMetric replaces a seat metric's label and description. Returns
// not_found and validation_failed.
func (s *Service) UpdateSeatMetric(ctx context.Context, account, id string, p UpdateSeatMetricParams) (*SeatMetric, error) {
	var v validator
	s.checkString(&v, "label", p.Label, true)
	s.checkString(&v, "description", p.Description, false)
	if err := v.err(); err != nil {
		return nil, err
	}
	now := s.clock()
	return updateOwned(ctx, s, tableSeatMetrics, account, id, "seat metric", func(_ Tx, m *SeatMetric) error {
		m.Label, m.Description, m.UpdatedAt = p.Label, p.Description, now
		return nil
	})
}

// DeleteSeatMetric deletes a seat metric and frees its seat type; seat
// events of that type are kept. It returns the deleted metric. Returns
// not_found, and invalid_state when an ACTIVE price uses the metric.
func (s *Service) DeleteSeatMetric(ctx context.Context, account, id string) (*SeatMetric, error) {
	return mutate(ctx, s, account, func(tx Tx) (*SeatMetric, error) {
		m, err := s.getSeatMetric(ctx, tx, account, id)
		if err != nil {
			return nil, err
		}
		used, err := s.activePriceUses(ctx, tx, account, func(p *PriceStructure) bool { return p.SeatMetricID == id })
		if err != nil {
			return nil, err
		}
		if used {
			return nil, Errorf(CodeInvalidState, "an ACTIVE price uses this seat metric")
		}
		if err := deleteIfPresent(ctx, tx, tableSeatMetricTypes, key(account, m.SeatType)); err != nil {
			return nil, err
		}
		return m, tx.Delete(ctx, tableSeatMetrics, key(account, id))
	})
}

// ListSeatMetrics lists the account's seat metrics by creation, newest
// first unless order is ASC (operation 7). Returns validation_failed for a
// bad order, limit or cursor.
func (s *Service) ListSeatMetrics(ctx context.Context, account string, order SortOrder, p ListParams) (Page[SeatMetric], error) {
	return listByCreation[SeatMetric](ctx, s, "seat_metrics", tableSeatMetrics, account, order, p)
}

// SeatEvent says that from EventTimestamp on a customer alias holds Total
// seats of SeatType (a snapshot, not a delta).
type SeatEvent struct {
	ID string `json:"id"`
	// ServiceAccountID is the account that owns the event.
	ServiceAccountID string `json:"serviceAccountId"`
	// CustomerEventID is the caller's own id of the event.
	CustomerEventID string `json:"customerEventId"`
	// CustomerAlias names the customer by one of its aliases.
	CustomerAlias string `json:"customerAlias"`
	// SeatType is the seat metric's seat type.
	SeatType string `json:"seatType"`
	// EventTimestamp is when the seat count changed (UTC).
	EventTimestamp time.Time `json:"eventTimestamp"`
	// Total is the customer's number of seats of the type from EventTimestamp on
	// (a level, not a change).
	Total     int64     `json:"total"`
	CreatedAt time.Time `json:"createdAt"`
}

// CreateSeatEventParams are the fields of a new seat event. Total is
// required; CustomerEventID defaults to the event's id.
type CreateSeatEventParams struct {
	// CustomerAlias is a customer id or alias; required.
	CustomerAlias string `json:"customerAlias"`
	// SeatType names a seat metric of the account; required.
	SeatType string `json:"seatType"`
	// EventTimestamp is when the seat count changed; required.
	EventTimestamp time.Time `json:"eventTimestamp"`
	// Total is the customer's number of seats of the type from
	// EventTimestamp on (not a change); required, not negative.
	Total *int64 `json:"total"`
	// CustomerEventID is the caller's id of the event; empty: the event's id.
	CustomerEventID string `json:"customerEventId"`
}

// CreateSeatEvent records a seat event. An event with the customerEventId
// of an earlier seat event of the account replaces it, as if the earlier one
// had never been sent (the new event has a new id). The alias need not
// belong to a customer yet, and the seat type need not have a seat metric.
// Returns validation_failed for invalid fields, all at once.
func (s *Service) CreateSeatEvent(ctx context.Context, account string, p CreateSeatEventParams) (*SeatEvent, error) {
	var v validator
	checkKey(&v, "customerAlias", p.CustomerAlias, true)
	v.check(!strings.Contains(p.CustomerAlias, ","), "customerAlias", "customerAlias must not contain commas")
	checkSeatType(&v, "seatType", p.SeatType, true)
	checkKey(&v, "customerEventId", p.CustomerEventID, false)
	if p.EventTimestamp.IsZero() {
		v.add("eventTimestamp", "eventTimestamp is required")
	} else {
		checkTime(&v, "eventTimestamp", p.EventTimestamp)
	}
	switch {
	case p.Total == nil:
		v.add("total", "total is required")
	case *p.Total < 0:
		v.add("total", "total must be an integer >= 0")
	}
	if err := v.err(); err != nil {
		return nil, err
	}
	e := &SeatEvent{
		ID: s.newID(), ServiceAccountID: account, CustomerEventID: p.CustomerEventID, CustomerAlias: p.CustomerAlias,
		SeatType: p.SeatType, EventTimestamp: NormalizeTime(p.EventTimestamp), Total: *p.Total, CreatedAt: s.clock(),
	}
	if e.CustomerEventID == "" {
		e.CustomerEventID = e.ID
	}
	return mutate(ctx, s, account, func(tx Tx) (*SeatEvent, error) {
		if err := s.dropSupersededSeatEvent(ctx, tx, account, e.CustomerEventID); err != nil {
			return nil, err
		}
		return e, s.putSeatEvent(ctx, tx, e)
	})
}

// seatEventKeys returns the keys of e in each of its tables.
func seatEventKeys(e *SeatEvent) map[Table][]byte {
	ts := FormatTimestamp(e.EventTimestamp)
	a := e.ServiceAccountID
	return map[Table][]byte{
		tableSeatEvents:       key(a, e.ID),
		tableSeatEventsByTime: key(a, ts, e.ID),
		tableSeatTimeline:     key(a, e.CustomerAlias, e.SeatType, ts, e.ID),
		tableSeatEventIDs:     key(a, e.CustomerEventID),
	}
}

func (s *Service) putSeatEvent(ctx context.Context, tx Tx, e *SeatEvent) error {
	for t, k := range seatEventKeys(e) {
		var err error
		switch t {
		case tableSeatEventIDs:
			err = tx.Put(ctx, t, k, []byte(e.ID))
		case tableSeatTimeline:
			err = tx.Put(ctx, t, k, fmt.Appendf(nil, "%d", e.Total))
		default:
			err = putRecord(ctx, tx, t, k, e)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// dropSupersededSeatEvent deletes the account's seat event with
// customerEventID, if any, from every table.
func (s *Service) dropSupersededSeatEvent(ctx context.Context, tx Tx, account, customerEventID string) error {
	id, err := tx.Get(ctx, tableSeatEventIDs, key(account, customerEventID))
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	old, err := getRecord[SeatEvent](ctx, tx, tableSeatEvents, key(account, string(id)))
	if err != nil {
		return err
	}
	for t, k := range seatEventKeys(old) {
		if err := deleteIfPresent(ctx, tx, t, k); err != nil {
			return err
		}
	}
	return nil
}

// GetSeatEvent returns a seat event. Returns not_found if the account has no
// such event (superseded events are gone).
func (s *Service) GetSeatEvent(ctx context.Context, account, id string) (*SeatEvent, error) {
	return getOne[SeatEvent](ctx, s, tableSeatEvents, account, id, "seat event")
}

// SeatEventSortBy is the sort column of ListSeatEvents.
type SeatEventSortBy string

// The sort columns of seat events.
const (
	SeatEventSortByCreatedAt      SeatEventSortBy = "createdAt"
	SeatEventSortByEventTimestamp SeatEventSortBy = "eventTimestamp"
)

// SeatEventFilter selects seat events in ListSeatEvents (operation 6). Empty
// fields do not filter; given fields must all match.
type SeatEventFilter struct {
	// CustomerAlias matches events sent with exactly this alias.
	CustomerAlias string
	// CustomerIDs matches events of every alias and the id of these
	// customers (at most 100); ids that name no customer of the account
	// match nothing.
	CustomerIDs []string
	// SeatTypes matches events of any of these seat types.
	SeatTypes []string
	// CustomerEventID keeps the events with this caller's id.
	CustomerEventID string
	// EventTimestampBefore and EventTimestampAfter are strict bounds.
	EventTimestampBefore *time.Time
	// EventTimestampAfter: see EventTimestampBefore.
	EventTimestampAfter *time.Time
	// SortBy is createdAt (the default) or eventTimestamp; ties on the
	// timestamp are broken by creation.
	SortBy SeatEventSortBy
	// SortOrder is DESC (the default) or ASC.
	SortOrder SortOrder
}

func (f *SeatEventFilter) validate() (SortOrder, error) {
	var v validator
	v.check(len(f.CustomerIDs) <= maxFilterIDs, "customerIds", "customerIds names at most %d customers", maxFilterIDs)
	for _, st := range f.SeatTypes {
		checkSeatType(&v, "seatType", st, true)
	}
	switch f.SortBy {
	case "", SeatEventSortByCreatedAt, SeatEventSortByEventTimestamp:
	default:
		v.add("sortBy", "sortBy must be createdAt or eventTimestamp")
	}
	order, err := ParseSortOrder(string(f.SortOrder), SortDesc)
	v.merge("", err)
	return order, v.err()
}

// ListSeatEvents lists the account's seat events (operation 6), newest
// first by creation unless f says otherwise. Returns validation_failed for
// bad filters (more than 100 customerIds included), limits or cursors.
func (s *Service) ListSeatEvents(ctx context.Context, account string, f SeatEventFilter, p ListParams) (Page[SeatEvent], error) {
	order, err := f.validate()
	if err != nil {
		return Page[SeatEvent]{}, err
	}
	table := tableSeatEvents
	if f.SortBy == SeatEventSortByEventTimestamp {
		table = tableSeatEventsByTime
	}
	var page Page[SeatEvent]
	err = s.view(ctx, func(tx Tx) error {
		aliases, err := s.customerIDAliases(ctx, tx, account, f.CustomerIDs)
		if err != nil {
			return err
		}
		q := listQuery[SeatEvent]{
			name:   "seat_events",
			filter: fmt.Sprintf("%q|%q|%q|%q|%v|%v|%q", f.CustomerAlias, f.CustomerIDs, f.SeatTypes, f.CustomerEventID, f.EventTimestampBefore, f.EventTimestampAfter, table),
			table:  table, prefix: prefix(account), desc: order == SortDesc,
			decode: decodeAll(func(e *SeatEvent) bool {
				return (f.CustomerAlias == "" || e.CustomerAlias == f.CustomerAlias) &&
					(aliases == nil || slices.Contains(aliases, e.CustomerAlias)) &&
					(len(f.SeatTypes) == 0 || slices.Contains(f.SeatTypes, e.SeatType)) &&
					(f.CustomerEventID == "" || e.CustomerEventID == f.CustomerEventID) &&
					(f.EventTimestampBefore == nil || e.EventTimestamp.Before(*f.EventTimestampBefore)) &&
					(f.EventTimestampAfter == nil || e.EventTimestamp.After(*f.EventTimestampAfter))
			}),
		}
		page, err = list(ctx, s, tx, q, p)
		return err
	})
	return page, err
}

// customerIDAliases returns the ids and aliases of the account's customers
// among ids; nil when ids is empty (no filter), empty when none exists.
func (s *Service) customerIDAliases(ctx context.Context, tx Tx, account string, ids []string) ([]string, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	out := []string{}
	for _, id := range ids {
		c, err := getRecord[Customer](ctx, tx, tableCustomers, key(account, id))
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(append(out, c.ID), c.CustomerAliases...)
	}
	return out, nil
}

// SeatBalance is a customer's seats at one moment (operation 8).
type SeatBalance struct {
	// ID is the customer's id.
	ID string `json:"id"`
	// ServiceAccountID is the account that owns the customer.
	ServiceAccountID string `json:"serviceAccountId"`
	// LegalName is the customer's.
	LegalName string `json:"legalName"`
	// CustomerAliases are the customer's.
	CustomerAliases []string `json:"customerAliases"`
	// Total is the sum of Balances.
	Total int64 `json:"total"`
	// ChangeTimestamp is the timestamp of the latest counted event, or the
	// customer's creation when no event counts. Always set (a pointer for
	// compatibility).
	ChangeTimestamp *time.Time `json:"changeTimestamp,omitempty"`
	// Balances hold one balance per seat type the customer has events of.
	Balances []SeatTypeBalance `json:"balances"`
}

// SeatTypeBalance is a customer's seats of one type: the total of the
// latest counted event of any of its aliases.
type SeatTypeBalance struct {
	// SeatType is the seat metric's seat type.
	SeatType string `json:"seatType"`
	// Total is the total of the latest counted event.
	Total int64 `json:"total"`
	// ChangeTimestamp is that event's timestamp.
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
	// AsOf is the moment of the balances; nil means now (or AsOfDate).
	AsOf *time.Time
	// AsOfDate, when set (and AsOf is nil), is the day at whose start each
	// customer's balance is taken, in the customer's calendar (its time
	// zone, else the account's): the moment an IN_ADVANCE seat charge of a
	// period starting that day reads.
	AsOfDate *Date
}

// GetSeatBalance returns the seat balance of one customer at asOf (now
// when nil), as ListSeatBalances answers it for that customer, reading
// only that customer's records: the console's customer page uses it.
// Returns not_found for a customer the account does not have.
func (s *Service) GetSeatBalance(ctx context.Context, account, customerID string, asOf *time.Time) (*SeatBalance, error) {
	at := s.clock()
	if asOf != nil {
		at = NormalizeTime(*asOf)
	}
	var b SeatBalance
	err := s.view(ctx, func(tx Tx) error {
		c, err := s.getCustomer(ctx, tx, account, customerID)
		if err != nil {
			return err
		}
		b, err = s.seatBalance(ctx, tx, c, at)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &b, nil
}

// ListSeatBalances returns one balance per customer of the account
// (archived ones included), ordered by legal name (byte order) then id, and
// paginated (operation 8). Events count from their timestamp, so future
// events do not count yet; events of aliases no customer had when they
// arrived count once a customer claims the alias. Returns validation_failed
// for more than 100 customerIds or customerAliases, bad limits or cursors.
func (s *Service) ListSeatBalances(ctx context.Context, account string, f SeatBalanceFilter, p ListParams) (Page[SeatBalance], error) {
	var v validator
	checkDate(&v, "asOf", f.AsOfDate)
	v.check(len(f.CustomerIDs) <= maxFilterIDs, "customerIds", "customerIds names at most %d customers", maxFilterIDs)
	v.check(len(f.CustomerAliases) <= maxFilterIDs, "customerAliases", "customerAliases names at most %d aliases", maxFilterIDs)
	if err := v.err(); err != nil {
		return Page[SeatBalance]{}, err
	}
	asOf := s.clock()
	filterAsOf := ""
	switch {
	case f.AsOf != nil:
		asOf = NormalizeTime(*f.AsOf)
		filterAsOf = FormatTimestamp(asOf)
	case f.AsOfDate != nil:
		filterAsOf = f.AsOfDate.String()
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
				at := asOf
				if f.AsOf == nil && f.AsOfDate != nil {
					cal, err := s.calendarFor(ctx, tx, account, c.ID)
					if err != nil {
						return SeatBalance{}, false, err
					}
					at = cal.Start(*f.AsOfDate)
				}
				b, err := s.seatBalance(ctx, tx, c, at)
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
	if b.ChangeTimestamp == nil { // no seat events: the customer's creation
		created := c.CreatedAt
		b.ChangeTimestamp = &created
	}
	b.CustomerAliases = slices.Clip(append([]string{}, b.CustomerAliases...))
	return b, nil
}
