package billing_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
)

// localMidnight is the instant day "YYYY-MM-DD" begins in zone.
func localMidnight(tb testing.TB, zone, day string) time.Time {
	tb.Helper()
	loc, err := billing.LoadTimeZone(zone)
	if err != nil {
		tb.Fatal(err)
	}
	d := *date(day)
	return time.Date(d.Year, d.Month, d.Day, 0, 0, 0, 0, loc).UTC()
}

// setAccountZone sets the fixture account's time zone.
func (f *sched) setAccountZone(zone string) {
	f.tb.Helper()
	_, err := f.svc.PutAccountSettings(f.ctx, f.account, billing.AccountSettings{TimeZone: zone})
	f.must(err)
}

// zonedCustomer creates a customer with its own time zone.
func (f *sched) zonedCustomer(zone string) string {
	f.tb.Helper()
	c, err := f.svc.CreateCustomer(f.ctx, f.account, billing.CustomerParams{LegalName: "Customer in " + zone, TimeZone: zone})
	f.must(err)
	return c.ID
}

// calculate computes the api_call metric of customer over a period.
func (f *sched) calculate(customer, start, end string) *billing.UsageCalculation {
	f.tb.Helper()
	calc, err := f.svc.CalculateUsage(f.ctx, f.account, billing.CalculateUsageParams{
		UsageMetricID: f.metric("api_call"), CustomerAliases: []string{customer}, PeriodStart: start, PeriodEnd: end})
	f.must(err)
	return calc
}

// monthStarts are the first days of the 13 months from January 2026.
func monthStarts() []string {
	var out []string
	for m := 1; m <= 13; m++ {
		out = append(out, fmt.Sprintf("%04d-%02d-01", 2026+(m-1)/12, (m-1)%12+1))
	}
	return out
}

// TestZonedBillingOverAYear bills a monthly fee in advance and usage in
// arrears for a year in four zones, two as the account's zone and two as
// the customer's own, with runs every 11 hours (so every hour of the day is
// visited, across the DST changes of Los Angeles and London). At every
// local midnight one event lands 1 second before it (the month ending) and
// ten at it (the month starting): every month's usage is exactly 11, every
// fee is billed once, and the calculation endpoint and the upcoming invoice
// count what the run counts.
func TestZonedBillingOverAYear(t *testing.T) {
	t.Parallel()
	for _, z := range []struct {
		zone       string
		ofCustomer bool
	}{
		{"Pacific/Kiritimati", true},
		{"Etc/GMT+12", true},
		{"America/Los_Angeles", false},
		{"Europe/London", false},
	} {
		parallelOn(t, z.zone, newSched, func(t *testing.T, f *sched) {
			f.clock.Set(ts("2025-12-01T00:00:00Z"))
			customer := f.customer
			if z.ofCustomer {
				f.setAccountZone("Asia/Tokyo") // the customer's own zone wins
				customer = f.zonedCustomer(z.zone)
			} else {
				f.setAccountZone(z.zone)
			}
			fixed := f.fixed("Plan", "100.00", billing.CurrencyUSD)
			usage := f.apiCalls("1")
			sc := f.schedule(customer, "2026-01-01", nil, phase("2026-01-01", fixed, usage))
			starts := monthStarts()
			at := func(i int) time.Time { return localMidnight(t, z.zone, starts[i]) }
			// Runs every 11 hours; events arrive a day before they happen.
			next := 0
			for now := ts("2025-12-31T00:00:00Z"); now.Before(ts("2027-01-03T00:00:00Z")); now = now.Add(11 * time.Hour) {
				f.clock.Set(now)
				for ; next < len(starts) && at(next).Before(now.Add(24*time.Hour)); next++ {
					f.events(customer, "api_call", at(next).Add(-time.Second), 1)
					f.events(customer, "api_call", at(next), 10)
				}
				if _, err := f.svc.RunBilling(f.ctx, now); err != nil {
					t.Fatal(err)
				}
			}
			f.wantYearBilled(z.zone, sc.ID, fixed, usage)
			// The calculation endpoint counts the same events for a month
			// given as dates, in the customer's calendar.
			for _, p := range []struct{ start, end string }{{"2026-03-01", "2026-03-31"}, {"2026-10-01", "2026-10-31"}} {
				if calc := f.calculate(customer, p.start, p.end); calc.Value.String() != "11" {
					t.Errorf("calculation of %s..%s: %s, want 11", p.start, p.end, calc.Value)
				}
			}
		})
	}
}

// wantYearBilled checks the invoices of TestZonedBillingOverAYear: every
// charge once, the fee of each month of 2026 billed, 11 events of usage in
// each, every line starting at the zone's midnight.
func (f *sched) wantYearBilled(zone, scheduleID, fixed, usage string) {
	t := f.tb
	t.Helper()
	invs, lines := f.invoices(scheduleID)
	if n := f.wantOnce(scheduleID); n != 25 {
		t.Errorf("%d charges, want 13 fees (January 2027's in advance) and 12 usage periods", n)
	}
	fees, used := map[string]bool{}, map[string]string{}
	for i, ls := range lines {
		for _, l := range ls {
			p := l.ServicePeriod.StartDate.String()
			if want := localMidnight(t, zone, p); !l.ServicePeriodStart.Equal(want) {
				t.Errorf("line %s of %s starts at %s, want the local midnight %s", l.Title, p, l.ServicePeriodStart, want)
			}
			switch l.PriceID {
			case fixed:
				fees[p] = true
				if invs[i].BillingPeriod == nil || invs[i].BillingPeriod.Start.String() != p {
					t.Errorf("the fee of %s is on an invoice of period %v", p, invs[i].BillingPeriod)
				}
			case usage:
				used[p] = l.Quantity.String()
			}
		}
	}
	for _, p := range monthStarts()[:12] {
		if !fees[p] {
			t.Errorf("the fee of the month of %s was never billed", p)
		}
		if used[p] != "11" {
			t.Errorf("usage of the month of %s is %q, want 11 (ten at its midnight, one a second before its end)", p, used[p])
		}
	}
}

// TestZonedUpcomingInvoiceAgreesWithTheRun previews the invoice of a
// month's usage in Los Angeles and compares it with the one the run then
// creates: same lines, same quantities, same service period instants.
func TestZonedUpcomingInvoiceAgreesWithTheRun(t *testing.T) {
	t.Parallel()
	f := newSched(t)
	f.clock.Set(ts("2026-02-01T00:00:00Z"))
	f.setAccountZone("America/Los_Angeles")
	usage := f.apiCalls("1")
	sc := f.schedule(f.customer, "2026-03-01", nil, phase("2026-03-01", usage))
	f.clock.Set(ts("2026-04-01T09:00:00Z"))
	f.events(f.customer, "api_call", ts("2026-03-01T07:59:59Z"), 1)  // February in Los Angeles
	f.events(f.customer, "api_call", ts("2026-03-01T08:00:00Z"), 3)  // March's first second
	f.events(f.customer, "api_call", ts("2026-04-01T06:59:55Z"), 5)  // March's last five seconds (PDT)
	f.events(f.customer, "api_call", ts("2026-04-01T07:00:00Z"), 20) // April
	up := f.upcoming(sc.ID, "2026-04-01T09:00:00Z")
	run := f.run("2026-04-01T09:00:00Z")
	if run.InvoicesCreated != 1 {
		t.Fatalf("run created %d invoices", run.InvoicesCreated)
	}
	_, lines := f.invoices(sc.ID)
	if len(up.LineItems) != 1 || len(lines[0]) != 1 {
		t.Fatalf("upcoming %d lines, run %d", len(up.LineItems), len(lines[0]))
	}
	u, r := up.LineItems[0], lines[0][0]
	if u.Quantity.String() != "8" || r.Quantity.String() != "8" {
		t.Errorf("quantities: upcoming %s, run %s; want 8", u.Quantity, r.Quantity)
	}
	if !u.ServicePeriodStart.Equal(*r.ServicePeriodStart) || !r.ServicePeriodStart.Equal(ts("2026-03-01T08:00:00Z")) ||
		!r.ServicePeriodEnd.Equal(ts("2026-04-01T07:00:00Z")) {
		t.Errorf("service period: upcoming %s..%s, run %s..%s", u.ServicePeriodStart, u.ServicePeriodEnd, r.ServicePeriodStart, r.ServicePeriodEnd)
	}
	// The rendering prints the period in the customer's days.
	invs, _ := f.invoices(sc.ID)
	doc, err := f.svc.PrintableInvoice(f.ctx, f.account, invs[0].ID)
	f.must(err)
	if first, last := doc.Calendar.DateOf(*r.ServicePeriodStart), doc.Calendar.DateOf(r.ServicePeriodEnd.Add(-time.Second)); first.String() != "2026-03-01" || last.String() != "2026-03-31" {
		t.Errorf("the printable invoice's calendar reads the period as %s..%s", first, last)
	}
	// An in-arrears charge is due one grace period after the local
	// midnight that ends it, not after UTC's.
	f2 := newSched(t)
	f2.clock.Set(ts("2026-02-01T00:00:00Z"))
	f2.setAccountZone("America/Los_Angeles")
	u2 := f2.price("API calls", billing.CurrencyUSD, billing.FrequencyMonthly, billing.BillingTypeInArrears,
		billing.PriceStructure{PricingType: billing.PricingLinear, PricePerUnit: dp("1"), UsageMetricID: f2.metric("api_call")})
	f2.schedule(f2.customer, "2026-03-01", nil, phase("2026-03-01", u2))
	f2.clock.Set(ts("2026-04-01T09:00:00Z"))
	f2.events(f2.customer, "api_call", ts("2026-03-20T00:00:00Z"), 1)
	if n := f2.run("2026-04-01T07:59:59Z").InvoicesCreated; n != 0 {
		t.Errorf("%d invoices before the grace period after Los Angeles' midnight ended", n)
	}
	if n := f2.run("2026-04-01T08:00:00Z").InvoicesCreated; n != 1 {
		t.Errorf("%d invoices once the grace period after Los Angeles' midnight ended", n)
	}
}

// TestZonedProrationCountsCalendarDays prorates periods that contain a DST
// change by calendar days: 27 of March's 31 days in Los Angeles (which
// has one 23-hour day), 29 of October's 31 in London (one 25-hour day).
func TestZonedProrationCountsCalendarDays(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ zone, start, end, asOf, want string }{
		{"America/Los_Angeles", "2026-03-05", "", "2026-03-06T00:00:00Z", "2026-03-05: Plan|0.870967741935|93.00|0|81.00|2026-03-05..2026-03-31;"},
		{"Europe/London", "2026-10-01", "2026-10-29", "2026-10-02T00:00:00Z", "2026-10-01: Plan|0.935483870968|93.00|0|87.00|2026-10-01..2026-10-29;"},
	} {
		f := newSched(t)
		f.clock.Set(ts("2026-02-01T00:00:00Z"))
		f.setAccountZone(c.zone)
		fixed := f.fixed("Plan", "93.00", billing.CurrencyUSD)
		sc := f.schedule(f.customer, c.start, func(p *billing.BillingScheduleParams) {
			p.RecurrenceDayOfMonth = new(int)
			*p.RecurrenceDayOfMonth = 1
			if c.end != "" {
				p.EndDate = date(c.end)
			}
		}, phase(c.start, fixed))
		got := f.renderDue(sc.ID, c.asOf)
		if got != c.want+"\n" {
			t.Errorf("%s: due\n%s\nwant\n%s", c.zone, got, c.want)
		}
	}
}

// TestZoneChangeBetweenPeriodsBillsEachPeriodOnce bills usage recorded
// every 3 hours while the account's zone moves from UTC to UTC+14 and then to
// UTC-12: every period is billed once, no event is lost or counted twice,
// and the periods invoiced before a change keep their instants.
func TestZoneChangeBetweenPeriodsBillsEachPeriodOnce(t *testing.T) {
	t.Parallel()
	f := newSched(t, billingtest.WithBolt())
	f.clock.Set(ts("2026-01-01T00:00:00Z"))
	fixed := f.fixed("Plan", "100.00", billing.CurrencyUSD)
	usage := f.apiCalls("1")
	sc := f.schedule(f.customer, "2026-01-01", nil, phase("2026-01-01", fixed, usage))
	total := 0
	changes := map[string]string{"2026-02-10T00:00:00Z": "Pacific/Kiritimati", "2026-03-31T18:00:00Z": "Etc/GMT+12"}
	for now := ts("2026-01-01T00:00:00Z"); now.Before(ts("2026-06-03T00:00:00Z")); now = now.Add(3 * time.Hour) {
		f.clock.Set(now)
		if zone, ok := changes[billing.FormatTimestamp(now)]; ok {
			f.setAccountZone(zone)
		}
		if now.Before(ts("2026-06-01T00:00:00Z")) {
			f.events(f.customer, "api_call", now, 1)
			total++
		}
		if now.Hour()%7 == 0 {
			f.run(billing.FormatTimestamp(now))
		}
	}
	_, lines := f.invoices(sc.ID)
	if n := f.wantOnce(sc.ID); n != 11 {
		t.Errorf("%d charges, want 6 fees (June's in advance) and 5 usage periods", n)
	}
	billed := billing.MustDecimal("0")
	got := map[string]string{}
	for _, ls := range lines {
		for _, l := range ls {
			if l.PriceID == usage {
				billed = billed.Add(l.Quantity)
				got[l.ServicePeriod.StartDate.String()] = billing.FormatTimestamp(*l.ServicePeriodStart) + ".." + billing.FormatTimestamp(*l.ServicePeriodEnd)
			}
		}
	}
	// Usage of June is not billed yet: its period ends in July.
	if billed.String() != fmt.Sprint(total) {
		t.Errorf("billed %s events, recorded %d", billed, total)
	}
	want := map[string]string{
		"2026-01-01": "2026-01-01T00:00:00Z..2026-02-01T00:00:00Z", // invoiced before any change
		"2026-02-01": "2026-02-01T00:00:00Z..2026-02-28T10:00:00Z", // began in UTC, ends at Kiritimati's midnight
		"2026-03-01": "2026-02-28T10:00:00Z..2026-03-31T10:00:00Z", // April 1 began in Kiritimati before the change: it keeps that instant
		"2026-04-01": "2026-03-31T10:00:00Z..2026-05-01T12:00:00Z", // ends at the midnight of UTC-12
		"2026-05-01": "2026-05-01T12:00:00Z..2026-06-01T12:00:00Z",
	}
	for p, w := range want {
		if got[p] != w {
			t.Errorf("usage period of %s: %s, want %s", p, got[p], w)
		}
	}
	// January, invoiced in UTC, still counts what it counted.
	if calc := f.calculate(f.customer, "2026-01-01", "2026-01-31"); calc.Value.String() != "248" {
		t.Errorf("January counts %s events after the zone changes, want 248", calc.Value)
	}
}

// TestZonedDaysOfGrantsAndInvoices checks the dates that are "today" in
// the customer's zone: a grant's default effective date, its expiry at the
// end of its last day there, an invoice's issue and due dates.
func TestZonedDaysOfGrantsAndInvoices(t *testing.T) {
	t.Parallel()
	f := newSched(t)
	f.clock.Set(ts("2026-03-30T12:00:00Z")) // March 31 in Kiritimati, March 30 in UTC
	east := f.zonedCustomer("Pacific/Kiritimati")
	g, err := f.svc.CreateCreditGrant(f.ctx, f.account, billing.CreditGrantParams{CustomerID: east, Name: "Promo",
		CreditUnitType: billing.CreditUnitCurrency, Currency: billing.CurrencyUSD, Amount: dp("10.00"), ExpiryDate: date("2026-03-31")})
	f.must(err)
	if g.EffectiveDate.String() != "2026-03-31" {
		t.Errorf("effective %s, want Kiritimati's today 2026-03-31", g.EffectiveDate)
	}
	// March 31 ends in Kiritimati at 2026-03-31T10:00:00Z.
	if n := f.run("2026-03-31T09:59:59Z").CreditGrantsExpired; n != 0 {
		t.Errorf("%d grants expired before the end of their last day in Kiritimati", n)
	}
	f.clock.Set(ts("2026-03-31T10:00:00Z"))
	if n := f.run("2026-03-31T10:00:00Z").CreditGrantsExpired; n != 1 {
		t.Errorf("%d grants expired at the end of their last day in Kiritimati, want 1", n)
	}
	west := f.zonedCustomer("Etc/GMT+12")
	for _, c := range []struct{ customer, issued, due string }{{east, "2026-04-01", "2026-05-01"}, {west, "2026-03-30", "2026-04-29"}} {
		inv, err := f.svc.CreateInvoice(f.ctx, f.account, billing.InvoiceParams{Currency: billing.CurrencyUSD, CustomerID: c.customer})
		f.must(err)
		one := billing.MustDecimal("1")
		_, err = f.svc.CreateInvoiceLineItem(f.ctx, f.account, inv.ID, billing.InvoiceLineItemParams{Title: "Setup", Quantity: &one, Rate: dp("5.00"), TaxRate: dp("0"), ExternalIDs: []billing.KeyValue{}})
		f.must(err)
		inv, err = f.svc.FinalizeInvoice(f.ctx, f.account, inv.ID)
		f.must(err)
		if inv.IssueDate.String() != c.issued || inv.DueDate.String() != c.due {
			t.Errorf("issued %s due %s, want %s and %s", inv.IssueDate, inv.DueDate, c.issued, c.due)
		}
	}
}
