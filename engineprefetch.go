package billing

import (
	"context"
	"time"
)

// prefetchBatch reads ahead, on a store whose Tx offers MultiGetTx
// (PostgreSQL), the single records billSchedule reads of each schedule of
// a batch: the schedule records in one request, then, stage by stage as
// each stage needs the records of the one before, the customers, time
// zones and prices, the charges' markers and date invoices with the usage
// metrics and alias records, the usage series, and the series' rollup
// markers. Each stage is one request for the whole batch, against about
// ten round trips per schedule without it; the records land in the
// transaction's known keys, where billSchedule's own Gets find them. It is
// only a hint: it writes nothing, and a record it did not foresee (or
// could not decode) is read by billSchedule as before. An error is the
// store's.
func (s *Service) prefetchBatch(ctx context.Context, tx Tx, keys [][]byte, asOf time.Time) error {
	if _, ok := tx.(MultiGetTx); !ok || len(keys) < 2 {
		return nil
	}
	vals, err := getMany(ctx, tx, tableBillingSchedules, keys)
	if err != nil {
		return err
	}
	var scs []*BillingSchedule
	var want []TableKey
	for i, v := range vals {
		if v == nil {
			continue
		}
		sc, err := getRecord[BillingSchedule](ctx, tx, tableBillingSchedules, keys[i]) // known now
		if err != nil {
			continue
		}
		scs = append(scs, sc)
		a := sc.ServiceAccountID
		want = append(want, TableKey{Table: tableCustomers, Key: key(a, sc.CustomerID)},
			TableKey{Table: tableTimeZones, Key: key(a)}, TableKey{Table: tableTimeZones, Key: key(a, sc.CustomerID)})
		for _, id := range scheduleDistinctPrices(sc) {
			want = append(want, TableKey{Table: tablePrices, Key: key(a, id)})
		}
	}
	if err := prefetch(ctx, tx, want); err != nil {
		return err
	}
	plans := s.prefetchPlans(ctx, tx, scs, asOf)
	want = want[:0]
	for _, p := range plans {
		want = append(want, p.markers...)
		want = append(want, TableKey{Table: tableBillingWatch, Prefix: prefix(p.sc.ServiceAccountID, p.sc.ID)})
	}
	if err := prefetch(ctx, tx, want); err != nil {
		return err
	}
	return s.prefetchSeries(ctx, tx, plans)
}

// schedulePlan is what prefetchBatch foresees of one schedule: the keys of
// its charges' markers, date invoices, metrics and alias records (markers),
// and the metrics and aliases its usage is read for.
type schedulePlan struct {
	sc      *BillingSchedule
	markers []TableKey
	metrics []string
	aliases []string
}

// prefetchPlans computes, from the records the first stages read, each
// schedule's charges due by asOf (as billSchedule does) and the keys they
// read.
func (s *Service) prefetchPlans(ctx context.Context, tx Tx, scs []*BillingSchedule, asOf time.Time) []schedulePlan {
	var plans []schedulePlan
	for _, sc := range scs {
		prices, err := s.schedulePrices(ctx, tx, sc)
		if err != nil {
			continue
		}
		c, err := s.getCustomer(ctx, tx, sc.ServiceAccountID, sc.CustomerID)
		if err != nil {
			continue
		}
		cal, err := s.calendarFor(ctx, tx, sc.ServiceAccountID, sc.CustomerID)
		if err != nil {
			continue
		}
		a := sc.ServiceAccountID
		p := schedulePlan{sc: sc, aliases: append([]string{c.ID}, c.CustomerAliases...)}
		dates := map[Date]bool{}
		for _, ch := range scheduleCharges(sc, prices, cal.DateOf(asOf).AddDays(1)) {
			p.markers = append(p.markers, TableKey{Table: tableBillingMarkers, Key: markerKey(sc, ch)})
			if !dates[ch.BillingDate] {
				dates[ch.BillingDate] = true
				p.markers = append(p.markers, TableKey{Table: tableBillingDateInvoices, Key: key(a, sc.ID, ch.BillingDate.String())})
			}
		}
		for _, pr := range prices {
			if id := pr.Structure.UsageMetricID; pr.Structure.PricingType.UsageBased() && id != "" {
				p.metrics = append(p.metrics, id)
				p.markers = append(p.markers, TableKey{Table: tableUsageMetrics, Key: key(a, id)})
			}
		}
		if len(p.metrics) > 0 {
			for _, al := range p.aliases[1:] {
				p.markers = append(p.markers, TableKey{Table: tableCustomers, Key: key(a, al)}, TableKey{Table: tableCustomerAliases, Key: key(a, al)})
			}
		}
		plans = append(plans, p)
	}
	return plans
}

// prefetchSeries reads the usage series of the plans' metrics and
// aliases, then, on a store that keeps rollups, their rollup markers.
func (s *Service) prefetchSeries(ctx context.Context, tx Tx, plans []schedulePlan) error {
	var want []TableKey
	for _, p := range plans {
		for _, id := range p.metrics {
			m, err := s.getUsageMetric(ctx, tx, p.sc.ServiceAccountID, id)
			if err != nil {
				continue
			}
			for _, al := range p.aliases {
				want = append(want, TableKey{Table: tableUsageSeries, Key: key(p.sc.ServiceAccountID, m.EventType, al)})
			}
		}
	}
	if err := prefetch(ctx, tx, want); err != nil || !keepsRollups(tx) {
		return err
	}
	var markers []TableKey
	for _, tk := range want {
		if no, err := tx.Get(ctx, tableUsageSeries, tk.Key); err == nil && len(no) >= 4 {
			markers = append(markers, TableKey{Table: tableUsageRollups, Key: no[:4]})
		}
	}
	return prefetch(ctx, tx, markers)
}

// prefetchNewInvoice reads ahead, in one request on a store whose Tx
// offers MultiGetTx, what storing the new invoice id reads of itself: its
// lines and groups (none), its standing and its entry of the kept list
// (missing). Without it, that is four round trips per invoice the engine
// creates.
func (s *Service) prefetchNewInvoice(ctx context.Context, tx Tx, account, id string) error {
	k := invoiceKind
	return prefetch(ctx, tx, []TableKey{
		{Table: k.lines, Prefix: prefix(account, id)},
		{Table: k.groups, Prefix: prefix(account, id)},
		{Table: tableInvoiceStanding, Key: key(account, id)},
		{Table: tableListIndex, Key: key(account, k.kept.name, "", id)},
	})
}
