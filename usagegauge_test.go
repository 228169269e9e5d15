package billing_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
)

// gaugeEvent is a usage event as the brute-force reference sees it: seq
// is its creation order (ties in time go to the later created).
type gaugeEvent struct {
	seq            int
	alias, evType  string
	at             time.Time
	value          *string // nil: no property v
	region, zone   *string // nil: no property
	customerEvent  string
	valueIsNumeric bool
}

// gaugeWorld is a generated set of usage events, their live set after
// supersede, and the customers they belong to.
type gaugeWorld struct {
	live   []gaugeEvent
	owners map[string]string // alias → customer id
}

// gaugeRef is what a calculation must answer.
type gaugeRef struct {
	count, invalid int64
	value          billing.Decimal
	groups         map[string]gaugeGroup
}

type gaugeGroup struct {
	count int64
	value billing.Decimal
}

// TestGaugeAggregationsMatchBruteForce checks MAX, MIN, LATEST,
// TIME_WEIGHTED_SUM and PERCENTILE, SIMPLE and GROUPED, with plain,
// negated and case-sensitive property filters, against a brute-force
// reference over random events: values with 12 decimal places (some
// negative, some missing or not numbers), many ties in time, supersede by
// customerEventId (within and across batches), events before and after
// the period, several aliases of one customer and two customers in one
// calculation. On memstore, bbolt and (with BILLINGD_TEST_POSTGRES)
// PostgreSQL. BILLING_GAUGE_SEED replays a seed; BILLING_GAUGE_CASES sets
// the number of worlds per store.
func TestGaugeAggregationsMatchBruteForce(t *testing.T) {
	t.Parallel()
	seed := billingtest.Seed(t, "BILLING_GAUGE_SEED")
	cases := billingtest.EnvCount(t, "BILLING_GAUGE_CASES", 4, 1)
	for name, open := range realStores() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			checked := 0
			for i := range cases {
				r := rand.New(rand.NewPCG(seed, uint64(i)))
				checked += checkGaugeWorld(t, open(t), r, fmt.Sprintf("seed %d case %d", seed, i))
			}
			t.Logf("%d calculations compared with the reference", checked)
		})
	}
}

var gaugeTypes = []billing.AggregationType{
	billing.AggregationMax, billing.AggregationMin, billing.AggregationLatest,
	billing.AggregationTimeWeightedSum, billing.AggregationPercentile,
}

func checkGaugeWorld(t *testing.T, store billing.Store, r *rand.Rand, label string) int {
	t.Helper()
	ctx := context.Background()
	svc, clock := billingtest.NewService(t, billingtest.WithStore(store))
	acct := billingtest.Account(t, svc, "acme")
	start := time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)
	end := start.Add(24 * time.Hour)
	clock.Set(end.Add(48 * time.Hour))
	c := must(svc.CreateCustomer(ctx, acct, billing.CustomerParams{LegalName: "C", CustomerAliases: []string{"c-a", "c-b"}})).of(t, "CreateCustomer")
	d := must(svc.CreateCustomer(ctx, acct, billing.CustomerParams{LegalName: "D", CustomerAliases: []string{"d"}})).of(t, "CreateCustomer")
	w := gaugeWorld{owners: map[string]string{"c-a": c.ID, "c-b": c.ID, c.ID: c.ID, "d": d.ID, d.ID: d.ID}}
	w.live = ingestGaugeEvents(t, svc, acct, r, start, []string{"c-a", "c-b", c.ID, "d"})

	checked := 0
	percentiles := []string{"95", "50", "0.5", "99.9", "33.333333333333"}
	units := []billing.TimeUnit{"", billing.TimeUnitSecond, billing.TimeUnitMinute, billing.TimeUnitHour, billing.TimeUnitDay}
	filters := []struct {
		filter map[string][]string
		negate []string
		cs     bool
	}{
		{}, {filter: map[string][]string{"region": {"eu"}}}, {filter: map[string][]string{"region": {"eu"}}, negate: []string{"region"}},
		{filter: map[string][]string{"region": {"EU", "us"}}, cs: true},
	}
	for _, agg := range gaugeTypes {
		for _, grouped := range []bool{false, true} {
			for fi, f := range filters {
				p := billing.UsageMetricParams{
					Name: fmt.Sprintf("%s-%t-%d", agg, grouped, fi), MetricType: billing.MetricTypeSimple, EventType: "gauge",
					AggregationType: agg, AggregationProperty: "v", PropertyFilters: f.filter, PropertiesToNegate: f.negate, CaseSensitive: f.cs,
				}
				if grouped {
					p.MetricType, p.GroupingProperty = billing.MetricTypeGrouped, "zone"
				}
				switch agg {
				case billing.AggregationPercentile:
					p.Percentile = dp(percentiles[r.IntN(len(percentiles))])
				case billing.AggregationTimeWeightedSum:
					p.TimeUnit = units[r.IntN(len(units))]
				}
				m := createMetric(t, svc, acct, p)
				customers := []string{c.ID}
				if r.IntN(3) == 0 {
					customers = []string{"c-b", "d"}
				}
				got, err := svc.CalculateUsage(ctx, acct, billing.CalculateUsageParams{
					UsageMetricID: m.ID, CustomerAliases: customers,
					PeriodStart: billing.FormatTimestamp(start), PeriodEnd: billing.FormatTimestamp(end),
				})
				if err != nil {
					t.Fatalf("%s: %s: %v", label, m.Name, err)
				}
				want := w.reference(m, customers, start, end)
				compareGauge(t, fmt.Sprintf("%s: %s (percentile %v, unit %s, customers %v)", label, m.Name, m.Percentile, m.TimeUnit, customers), got, want)
				checked++
			}
		}
	}
	return checked
}

func compareGauge(t *testing.T, label string, got *billing.UsageCalculation, want gaugeRef) {
	t.Helper()
	if got.EventCount != want.count || got.InvalidEventCount != want.invalid || got.Value.Cmp(want.value) != 0 {
		t.Errorf("%s: eventCount %d, invalid %d, value %s; want %d, %d, %s", label, got.EventCount, got.InvalidEventCount, got.Value, want.count, want.invalid, want.value)
	}
	if want.groups == nil {
		return
	}
	var g, w []string
	for _, x := range got.Groups {
		g = append(g, fmt.Sprintf("%q:%d:%s", x.Group, x.EventCount, x.Value.Canonical()))
	}
	for _, k := range sortedStrings(want.groups) {
		w = append(w, fmt.Sprintf("%q:%d:%s", k, want.groups[k].count, want.groups[k].value.Canonical()))
	}
	if !slices.Equal(g, w) {
		t.Errorf("%s: groups\n%v\nwant\n%v", label, g, w)
	}
}

func sortedStrings[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// ingestGaugeEvents sends random events in random batches and returns the
// live ones (after supersede) in creation order.
func ingestGaugeEvents(t *testing.T, svc *billing.Service, acct string, r *rand.Rand, start time.Time, aliases []string) []gaugeEvent {
	t.Helper()
	var all []gaugeEvent
	n := 60 + r.IntN(120)
	for len(all) < n {
		var batch billing.UsageEventBatchParams
		for range 1 + r.IntN(15) {
			e, p := randomGaugeEvent(r, len(all), start, aliases)
			batch.Events = append(batch.Events, p)
			all = append(all, e)
		}
		if _, err := svc.CreateUsageEventBatch(context.Background(), acct, batch); err != nil {
			t.Fatalf("CreateUsageEventBatch: %v", err)
		}
	}
	return liveAfterSupersede(all)
}

// randomGaugeEvent returns a random event, number seq, of one of aliases:
// timestamps in 45-minute steps from 6 hours before start to 26 hours
// after it (many ties), a value with 12 decimal places (or negative, a
// whole number, a decimal string, not a number, or missing), optional
// region and zone, and a customerEventId of a small pool half the time.
func randomGaugeEvent(r *rand.Rand, seq int, start time.Time, aliases []string) (gaugeEvent, billing.UsageEventParams) {
	pick := func(vals ...string) *string {
		if i := r.IntN(len(vals) + 1); i < len(vals) {
			return &vals[i]
		}
		return nil
	}
	e := gaugeEvent{
		seq: seq, alias: aliases[r.IntN(len(aliases))], evType: "gauge",
		at:     start.Add(time.Duration(r.IntN(44))*45*time.Minute - 6*time.Hour),
		region: pick("eu", "EU", "us", "US"), zone: pick("a", "A", "b"),
	}
	if r.IntN(12) == 0 {
		e.evType = "other"
	}
	if r.IntN(2) == 0 {
		e.customerEvent = fmt.Sprintf("k%d", r.IntN(30))
	}
	props := billing.EventProperties{}
	switch k := r.IntN(20); {
	case k < 15:
		s := fmt.Sprintf("%d.%012d", r.IntN(1000), r.Int64N(1_000_000_000_000))
		if r.IntN(8) == 0 {
			s = "-" + s
		}
		if r.IntN(6) == 0 {
			s = fmt.Sprint(r.IntN(50)) // some whole numbers, stored small
		}
		e.value, e.valueIsNumeric = &s, true
		props["v"] = billing.NumberProperty(billing.MustDecimal(s))
	case k < 17:
		s := fmt.Sprintf("%d.5", r.IntN(100))
		e.value, e.valueIsNumeric = &s, true
		props["v"] = billing.StringProperty(s)
	case k < 18:
		s := "n/a"
		e.value = &s
		props["v"] = billing.StringProperty(s)
	}
	if e.region != nil {
		props["region"] = billing.StringProperty(*e.region)
	}
	if e.zone != nil {
		props["zone"] = billing.StringProperty(*e.zone)
	}
	at := e.at
	return e, billing.UsageEventParams{
		CustomerAlias: e.alias, EventType: e.evType, CustomerEventID: e.customerEvent, EventTimestamp: &at, EventProperties: props,
	}
}

// liveAfterSupersede returns the events of all (in creation order) that
// count: the last event of a customerEventId replaces the others.
func liveAfterSupersede(all []gaugeEvent) []gaugeEvent {
	last := map[string]int{}
	for i, e := range all {
		if e.customerEvent != "" {
			last[e.customerEvent] = i
		}
	}
	var live []gaugeEvent
	for i, e := range all {
		if e.customerEvent == "" || last[e.customerEvent] == i {
			live = append(live, e)
		}
	}
	return live
}

// reference computes metric m for customers over [start, end) by brute
// force, from the definitions in docs/metering.md.
//
// Long on purpose: one definition per aggregation, written plainly.
func (w *gaugeWorld) reference(m *billing.UsageMetric, customers []string, start, end time.Time) gaugeRef {
	fold := func(s string) string {
		if m.CaseSensitive {
			return s
		}
		return strings.ToLower(s)
	}
	owner := map[string]bool{}
	for _, c := range customers {
		owner[w.owners[c]] = true
	}
	passes := func(e gaugeEvent) bool {
		if e.evType != m.EventType || !owner[w.owners[e.alias]] {
			return false
		}
		for k, vals := range m.PropertyFilters {
			in := false
			if k == "region" && e.region != nil {
				for _, v := range vals {
					in = in || fold(v) == fold(*e.region)
				}
			}
			if in == slices.Contains(m.PropertiesToNegate, k) {
				return false
			}
		}
		return true
	}
	group := func(e gaugeEvent) string {
		if m.MetricType != billing.MetricTypeGrouped || e.zone == nil {
			return ""
		}
		return fold(*e.zone)
	}
	inPeriod := func(e gaugeEvent) bool { return !e.at.Before(start) && e.at.Before(end) }
	type bucket struct {
		count, invalid int64
		valid          []gaugeEvent
		before         map[string]gaugeEvent // TIME_WEIGHTED_SUM: latest valid before start, by customer
	}
	buckets := map[string]*bucket{}
	get := func(g string) *bucket {
		if buckets[g] == nil {
			buckets[g] = &bucket{before: map[string]gaugeEvent{}}
		}
		return buckets[g]
	}
	for _, e := range w.live {
		if !passes(e) {
			continue
		}
		if !inPeriod(e) {
			if e.at.Before(start) && e.valueIsNumeric && m.AggregationType == billing.AggregationTimeWeightedSum {
				b, o := get(group(e)), w.owners[e.alias]
				if prev, ok := b.before[o]; !ok || prev.at.Before(e.at) || prev.at.Equal(e.at) && prev.seq < e.seq {
					b.before[o] = e
				}
			}
			continue
		}
		b := get(group(e))
		b.count++
		if !e.valueIsNumeric {
			b.invalid++
			continue
		}
		b.valid = append(b.valid, e)
	}
	val := func(e gaugeEvent) billing.Decimal { return billing.MustDecimal(*e.value) }
	value := func(b *bucket) billing.Decimal {
		zero := billing.DecimalFromInt(0)
		switch m.AggregationType {
		case billing.AggregationMax, billing.AggregationMin:
			if len(b.valid) == 0 {
				return zero
			}
			best := val(b.valid[0])
			for _, e := range b.valid {
				if c := val(e).Cmp(best); c > 0 && m.AggregationType == billing.AggregationMax || c < 0 && m.AggregationType == billing.AggregationMin {
					best = val(e)
				}
			}
			return best
		case billing.AggregationLatest:
			if len(b.valid) == 0 {
				return zero
			}
			best := b.valid[0]
			for _, e := range b.valid {
				if e.at.After(best.at) || e.at.Equal(best.at) && e.seq > best.seq {
					best = e
				}
			}
			return val(best)
		case billing.AggregationPercentile:
			if len(b.valid) == 0 {
				return zero
			}
			vals := make([]billing.Decimal, len(b.valid))
			for i, e := range b.valid {
				vals[i] = val(e)
			}
			slices.SortFunc(vals, billing.Decimal.Cmp)
			// the smallest rank k with k / n >= p / 100
			n := int64(len(vals))
			for k := int64(1); ; k++ {
				if billing.DecimalFromInt(k*100).Cmp(m.Percentile.Mul(billing.DecimalFromInt(n))) >= 0 {
					return vals[k-1]
				}
			}
		}
		// TIME_WEIGHTED_SUM: per customer, each value held until the next.
		total := zero
		byOwner := map[string][]gaugeEvent{}
		for _, e := range b.valid {
			o := w.owners[e.alias]
			byOwner[o] = append(byOwner[o], e)
		}
		for o, e := range b.before {
			e.at = start
			e.seq = -1
			byOwner[o] = append(byOwner[o], e)
		}
		for _, evs := range byOwner {
			slices.SortFunc(evs, func(x, y gaugeEvent) int {
				if c := x.at.Compare(y.at); c != 0 {
					return c
				}
				return x.seq - y.seq
			})
			for i, e := range evs {
				until := end
				if i+1 < len(evs) {
					until = evs[i+1].at
				}
				total = total.Add(val(e).Mul(billing.DecimalFromInt(int64(until.Sub(e.at) / time.Second))))
			}
		}
		unit := map[billing.TimeUnit]int64{billing.TimeUnitSecond: 1, billing.TimeUnitMinute: 60, billing.TimeUnitHour: 3600, billing.TimeUnitDay: 86400}[m.TimeUnit]
		q, err := total.Quo(billing.DecimalFromInt(unit))
		if err != nil {
			panic(err)
		}
		return q
	}
	var out gaugeRef
	if m.MetricType != billing.MetricTypeGrouped {
		b := get("")
		return gaugeRef{count: b.count, invalid: b.invalid, value: value(b)}
	}
	out.value = billing.DecimalFromInt(0)
	out.groups = map[string]gaugeGroup{}
	for g, b := range buckets {
		if b.count == 0 && len(b.before) == 0 {
			continue
		}
		v := value(b)
		out.count += b.count
		out.invalid += b.invalid
		out.value = out.value.Add(v)
		out.groups[g] = gaugeGroup{b.count, v}
	}
	return out
}

// TestGaugeAggregationsThroughTheBillingEngine: a usage price on each new
// aggregation bills, on the upcoming invoice and on the invoice the run
// creates, exactly the reference value of the billing period (random
// events with 12 decimal places, ties, supersede, events before and after
// the period), as the line's quantity: of a SIMPLE metric, and of a
// GROUPED one with a property filter (the sum of its groups' values).
func TestGaugeAggregationsThroughTheBillingEngine(t *testing.T) {
	t.Parallel()
	seed := billingtest.Seed(t, "BILLING_GAUGE_SEED")
	for k := range 2 * len(gaugeTypes) {
		i, agg, grouped := k/2, gaugeTypes[k/2], k%2 == 1
		name := string(agg)
		if grouped {
			name += "/GroupedFiltered"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := rand.New(rand.NewPCG(seed, uint64(100+k)))
			opts := []billingtest.Option{}
			if i%2 == 0 {
				opts = append(opts, billingtest.WithBolt())
			}
			f := newSched(t, opts...)
			start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
			end := start.AddDate(0, 1, 0)
			f.clock.Set(end.Add(time.Hour))
			p := billing.UsageMetricParams{Name: "gauge", MetricType: billing.MetricTypeSimple, EventType: "gauge", AggregationType: agg, AggregationProperty: "v"}
			if agg == billing.AggregationPercentile {
				p.Percentile = dp("95")
			}
			if grouped { // the line's quantity is the sum of the groups' values
				p.MetricType, p.GroupingProperty, p.PropertyFilters = billing.MetricTypeGrouped, "zone", map[string][]string{"region": {"eu"}}
			}
			m := createMetric(t, f.svc, f.account, p)
			pr := f.price("Gauge", billing.CurrencyUSD, billing.FrequencyMonthly, billing.BillingTypeInArrears,
				billing.PriceStructure{PricingType: billing.PricingLinear, PricePerUnit: dp("1"), UsageMetricID: m.ID})
			w := gaugeWorld{owners: map[string]string{f.customer: f.customer}}
			w.live = ingestGaugeEventsOver(t, f.svc, f.account, r, start, end, f.customer)
			want := w.reference(m, []string{f.customer}, start, end)
			sc := f.schedule(f.customer, "2024-01-01", nil, phase("2024-01-01", pr))

			t.Logf("%s: reference %s over %d events", agg, want.value, want.count)
			up := f.upcoming(sc.ID, "2024-01-31T23:00:00Z")
			if len(up.LineItems) != 1 || up.LineItems[0].Quantity.Cmp(want.value) != 0 {
				t.Fatalf("upcoming invoice lines %+v, want one of quantity %s", up.LineItems, want.value)
			}
			f.run("2024-02-01T02:00:00Z")
			invs, lines := f.invoices(sc.ID)
			if len(invs) != 1 || len(lines[0]) != 1 || lines[0][0].Quantity.Cmp(want.value) != 0 || lines[0][0].PriceID != pr {
				t.Fatalf("invoices %d, lines %+v; want one line of quantity %s", len(invs), lines, want.value)
			}
			if want.value.Sign() > 0 && want.value.Cmp(invs[0].NetTotal) != 0 && billing.CurrencyUSD.Round(want.value, billing.RoundHalfUp).Cmp(invs[0].NetTotal) != 0 {
				t.Errorf("net total %s for quantity %s at 1.00", invs[0].NetTotal, want.value)
			}
		})
	}
}

// ingestGaugeEventsOver sends random events of alias over [start - 5 days,
// end + 1 day) in hour steps (so many share a timestamp), with a region
// and a zone, some superseding others, and returns the live ones.
func ingestGaugeEventsOver(t *testing.T, svc *billing.Service, acct string, r *rand.Rand, start, end time.Time, alias string) []gaugeEvent {
	t.Helper()
	hours := int(end.Sub(start)/time.Hour) + 6*24
	var all []gaugeEvent
	var batch billing.UsageEventBatchParams
	for i := range 150 {
		s := fmt.Sprintf("%d.%012d", r.IntN(100), r.Int64N(1_000_000_000_000))
		region, zone := []string{"eu", "us"}[r.IntN(2)], []string{"a", "b", "c"}[r.IntN(3)]
		e := gaugeEvent{seq: i, alias: alias, evType: "gauge", at: start.Add(time.Duration(r.IntN(hours/4)*4-5*24) * time.Hour), value: &s, valueIsNumeric: true,
			region: &region, zone: &zone}
		if r.IntN(3) == 0 {
			e.customerEvent = fmt.Sprintf("k%d", r.IntN(40))
		}
		at := e.at
		batch.Events = append(batch.Events, billing.UsageEventParams{CustomerAlias: alias, EventType: "gauge", CustomerEventID: e.customerEvent,
			EventTimestamp: &at, EventProperties: billing.EventProperties{"v": billing.NumberProperty(billing.MustDecimal(s)),
				"region": billing.StringProperty(region), "zone": billing.StringProperty(zone)}})
		all = append(all, e)
		if len(batch.Events) == 10 {
			if _, err := svc.CreateUsageEventBatch(context.Background(), acct, batch); err != nil {
				t.Fatal(err)
			}
			batch.Events = nil
		}
	}
	return liveAfterSupersede(all)
}

// TestCorrectedLatestCorrectsTheInvoice: a LATEST value superseded after
// its invoice was sent is late usage: the next run issues an adjustment
// invoice for the difference, as for SUM.
func TestCorrectedLatestCorrectsTheInvoice(t *testing.T) {
	t.Parallel()
	f := newSched(t, billingtest.WithBolt())
	m := createMetric(t, f.svc, f.account, billing.UsageMetricParams{Name: "instances", MetricType: billing.MetricTypeSimple,
		EventType: "instances", AggregationType: billing.AggregationLatest, AggregationProperty: "n"})
	pr := f.price("Instances", billing.CurrencyUSD, billing.FrequencyMonthly, billing.BillingTypeInArrears,
		billing.PriceStructure{PricingType: billing.PricingLinear, PricePerUnit: dp("2.00"), UsageMetricID: m.ID})
	send := func(id, at, n string) {
		t.Helper()
		tm := ts(at)
		_, err := f.svc.CreateUsageEvent(f.ctx, f.account, billing.UsageEventParams{CustomerAlias: f.customer, EventType: "instances",
			CustomerEventID: id, EventTimestamp: &tm, EventProperties: billing.EventProperties{"n": billing.NumberProperty(billing.MustDecimal(n))}})
		f.must(err)
	}
	send("a", "2024-01-05T00:00:00Z", "10")
	send("b", "2024-01-20T00:00:00Z", "7")
	send("c", "2024-01-20T00:00:00Z", "3") // same second, created later: the latest
	sc := f.schedule(f.customer, "2024-01-01", nil, phase("2024-01-01", pr))
	f.run("2024-02-01T02:00:00Z")
	invs, _ := f.invoices(sc.ID)
	if len(invs) != 1 || invs[0].NetTotal.String() != "6.00" {
		t.Fatalf("January invoices %+v, want one of 6.00 (3 instances)", invs)
	}
	_, err := f.svc.SendInvoice(f.ctx, f.account, invs[0].ID)
	f.must(err)
	send("c", "2024-01-20T00:00:00Z", "5") // corrected: 5 instances
	f.run("2024-02-03T00:00:00Z")
	invs, lines := f.invoices(sc.ID)
	if len(invs) != 2 || invs[1].NetTotal.String() != "4.00" || len(lines[1]) != 1 || !strings.Contains(lines[1][0].Description, "changed from 3 to 5") {
		t.Fatalf("after the correction: %d invoices, lines %+v; want an adjustment of 4.00 for 3 → 5", len(invs), lines)
	}
}

// TestMeteringGuideExamples computes the worked examples of
// docs/metering.md.
func TestMeteringGuideExamples(t *testing.T) {
	t.Parallel()
	f := newSched(t)
	f.clock.Set(ts("2024-07-02T00:00:00Z"))
	c := must(f.svc.CreateCustomer(f.ctx, f.account, billing.CustomerParams{LegalName: "Guide", CustomerAliases: []string{"guide"}})).of(t, "CreateCustomer")
	send := func(typ, at string, props billing.EventProperties) {
		t.Helper()
		tm := ts(at)
		_, err := f.svc.CreateUsageEvent(f.ctx, f.account, billing.UsageEventParams{CustomerAlias: "guide", EventType: typ, EventTimestamp: &tm, EventProperties: props})
		f.must(err)
	}
	num := func(s string) billing.PropertyValue { return billing.NumberProperty(billing.MustDecimal(s)) }
	check := func(p billing.UsageMetricParams, rate, wantValue, wantCharge string) {
		t.Helper()
		m := createMetric(t, f.svc, f.account, p)
		calc := must(f.svc.CalculateUsage(f.ctx, f.account, billing.CalculateUsageParams{UsageMetricID: m.ID, CustomerAliases: []string{c.ID},
			PeriodStart: "2024-06-01", PeriodEnd: "2024-06-30"})).of(t, "CalculateUsage")
		st := billing.PriceStructure{PricingType: billing.PricingLinear, PricePerUnit: dp(rate), UsageMetricID: m.ID}
		charge := st.Charge(billing.ChargeInput{Quantity: calc.Value}, billing.CurrencyUSD, billing.RoundHalfUp)
		if calc.Value.Canonical() != wantValue || charge.Total.String() != wantCharge {
			t.Errorf("%s: value %s, charge %s; the guide says %s, %s", p.Name, calc.Value, charge.Total, wantValue, wantCharge)
		}
	}

	send("storage", "2024-05-28T00:00:00Z", billing.EventProperties{"gb": num("100")})
	send("storage", "2024-06-11T00:00:00Z", billing.EventProperties{"gb": num("250")})
	send("storage", "2024-06-21T00:00:00Z", billing.EventProperties{"gb": num("40")})
	check(billing.UsageMetricParams{Name: "Storage", MetricType: billing.MetricTypeSimple, EventType: "storage",
		AggregationType: billing.AggregationTimeWeightedSum, AggregationProperty: "gb", TimeUnit: billing.TimeUnitHour}, "0.0002", "93600", "18.72")

	for i := range 20 {
		send("bandwidth", fmt.Sprintf("2024-06-10T00:%02d:00Z", i), billing.EventProperties{"mbps": num(fmt.Sprint((i + 1) * 10))})
	}
	check(billing.UsageMetricParams{Name: "Bandwidth p95", MetricType: billing.MetricTypeSimple, EventType: "bandwidth",
		AggregationType: billing.AggregationPercentile, AggregationProperty: "mbps", Percentile: dp("95")}, "0.50", "190", "95.00")

	for _, e := range [][2]string{{"eu", "3"}, {"eu", "8"}, {"eu", "5"}, {"us", "4"}} {
		send("instances", "2024-06-05T00:00:00Z", billing.EventProperties{"region": billing.StringProperty(e[0]), "count": num(e[1])})
	}
	check(billing.UsageMetricParams{Name: "Peak instances", MetricType: billing.MetricTypeGrouped, EventType: "instances", GroupingProperty: "region",
		AggregationType: billing.AggregationMax, AggregationProperty: "count"}, "12.00", "12", "144.00")

	send("seats", "2024-06-03T00:00:00Z", billing.EventProperties{"seats": num("10")})
	send("seats", "2024-06-18T09:00:00Z", billing.EventProperties{"seats": num("14")})
	send("seats", "2024-06-18T09:00:00Z", billing.EventProperties{"seats": num("12")})
	for agg, want := range map[billing.AggregationType]string{billing.AggregationLatest: "12", billing.AggregationMin: "10", billing.AggregationMax: "14"} {
		check(billing.UsageMetricParams{Name: "Seats " + string(agg), MetricType: billing.MetricTypeSimple, EventType: "seats",
			AggregationType: agg, AggregationProperty: "seats"}, "1.00", want, want+".00")
	}
}

// TestTimeWeightedSumInTheCustomersTimeZone: a period given as dates runs
// from midnight to midnight in the customer's zone (UTC+14 here), for the
// value carried over from before it and for the time each value is held,
// on a calculation and on the invoice line alike.
func TestTimeWeightedSumInTheCustomersTimeZone(t *testing.T) {
	t.Parallel()
	f := newSched(t)
	f.clock.Set(ts("2024-07-02T00:00:00Z"))
	customer := f.zonedCustomer("Pacific/Kiritimati")
	m := createMetric(t, f.svc, f.account, billing.UsageMetricParams{Name: "Storage", MetricType: billing.MetricTypeSimple, EventType: "storage",
		AggregationType: billing.AggregationTimeWeightedSum, AggregationProperty: "gb"})
	for at, gb := range map[string]string{"2024-05-31T09:00:00Z": "10", "2024-06-15T10:00:00Z": "20"} {
		tm := ts(at)
		_, err := f.svc.CreateUsageEvent(f.ctx, f.account, billing.UsageEventParams{CustomerAlias: customer, EventType: "storage",
			EventTimestamp: &tm, EventProperties: billing.EventProperties{"gb": billing.NumberProperty(billing.MustDecimal(gb))}})
		f.must(err)
	}
	// June in Kiritimati is 2024-05-31T10:00Z to 2024-06-30T10:00Z: 10 GB
	// (carried over from 09:00Z) for 360 hours, then 20 GB for 360 hours.
	calc := must(f.svc.CalculateUsage(f.ctx, f.account, billing.CalculateUsageParams{UsageMetricID: m.ID, CustomerAliases: []string{customer},
		PeriodStart: "2024-06-01", PeriodEnd: "2024-06-30"})).of(t, "CalculateUsage")
	if calc.Value.Canonical() != "10800" || calc.EventCount != 1 {
		t.Errorf("June in the customer's zone: %s GB-hours over %d events, want 10800 over 1", calc.Value, calc.EventCount)
	}
	pr := f.price("Storage", billing.CurrencyUSD, billing.FrequencyMonthly, billing.BillingTypeInArrears,
		billing.PriceStructure{PricingType: billing.PricingLinear, PricePerUnit: dp("0.01"), UsageMetricID: m.ID})
	sc := f.schedule(customer, "2024-06-01", nil, phase("2024-06-01", pr))
	f.run("2024-07-01T00:00:00Z")
	invs, lines := f.invoices(sc.ID)
	if len(invs) != 1 || len(lines[0]) != 1 || lines[0][0].Quantity.Canonical() != "10800" || invs[0].NetTotal.String() != "108.00" {
		t.Fatalf("June invoice: %+v", lines)
	}
}
