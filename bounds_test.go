package billing_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/billingd/billing"
)

// TestDatesOutOfBoundsRefused: dates and timestamps outside 2000-01-01 ..
// 2199-12-31 are refused with validation_failed naming the field, in the
// library as on the wire (a schedule from 0001-01-01 once made one run
// create 24,311 invoices).
func TestDatesOutOfBoundsRefused(t *testing.T) {
	t.Parallel()
	f := newSched(t)
	fixed := f.fixed("Plan", "10.00", billing.CurrencyUSD)
	no := false
	old := billing.Date{Year: 1, Month: time.January, Day: 1}
	_, err := f.svc.CreateBillingSchedule(f.ctx, f.account, billing.BillingScheduleParams{
		CustomerID: f.customer, StartDate: &old, AutoIssueInvoices: &no, IsDraft: &no,
		Phases: []billing.PhaseParams{{StartDate: &old, PriceIDs: []string{fixed}}},
	})
	wantFields(t, err, "startDate", "phases[0].startDate")
	if msg := billing.Errors(err)[0].Message; msg != "startDate must be between 2000-01-01 and 2199-12-31" {
		t.Errorf("message %q", msg)
	}

	before := time.Date(1999, 12, 31, 23, 59, 59, 0, time.UTC)
	_, err = f.svc.CreateUsageEvent(f.ctx, f.account, billing.UsageEventParams{CustomerAlias: "a", EventType: "t", EventTimestamp: &before})
	wantFields(t, err, "eventTimestamp")

	for _, s := range []string{"1999-12-31", "2200-01-01", "0001-01-01"} {
		if _, err := billing.ParseDate(s); billing.CodeOf(err) != billing.CodeValidationFailed {
			t.Errorf("ParseDate(%q): %v", s, err)
		}
	}
	for _, s := range []string{"1999-12-31T23:59:59Z", "2200-01-01T00:00:00Z", "2000-01-01T00:30:00+01:00"} {
		if _, err := billing.ParseTimestamp(s); billing.CodeOf(err) != billing.CodeValidationFailed {
			t.Errorf("ParseTimestamp(%q): %v", s, err)
		}
	}
	for _, s := range []string{"2000-01-01T00:00:00Z", "2199-12-31T23:59:59Z"} {
		if _, err := billing.ParseTimestamp(s); err != nil {
			t.Errorf("ParseTimestamp(%q): %v", s, err)
		}
	}
}

// wantFields checks that err is validation_failed on exactly fields.
func wantFields(tb testing.TB, err error, fields ...string) {
	tb.Helper()
	var got []string
	for _, e := range billing.Errors(err) {
		if e.Code != billing.CodeValidationFailed {
			tb.Errorf("code %s: %v", e.Code, e)
		}
		got = append(got, e.Field)
	}
	slices.Sort(got)
	if want := slices.Sorted(slices.Values(fields)); !slices.Equal(got, want) {
		tb.Errorf("fields %q, want %q (%v)", got, want, err)
	}
}

// TestRunBillingCatchUpIsBounded: a schedule five years behind gets at most
// MaxCatchUpInvoices (36) invoices per run, the run says it is catching up,
// and the next run finishes the job, each period charged once.
func TestRunBillingCatchUpIsBounded(t *testing.T) {
	t.Parallel()
	f := newSched(t)
	fixed := f.fixed("Plan", "10.00", billing.CurrencyUSD)
	sc := f.schedule(f.customer, "2020-01-01", nil, phase("2020-01-01", fixed))

	first := f.run("2024-12-15T00:00:00Z")
	if first.InvoicesCreated != 36 || !slices.Equal(first.CatchingUp, []string{sc.ID}) {
		t.Fatalf("first run: %d invoices, catchingUp %v; want 36 and the schedule", first.InvoicesCreated, first.CatchingUp)
	}
	second := f.run("2024-12-15T00:00:00Z")
	if second.InvoicesCreated != 24 || len(second.CatchingUp) != 0 {
		t.Fatalf("second run: %d invoices, catchingUp %v; want 24 and none", second.InvoicesCreated, second.CatchingUp)
	}
	if n := f.wantOnce(sc.ID); n != 60 {
		t.Errorf("%d charges, want 60 (2020-01 .. 2024-12)", n)
	}
}

// TestBillingFailureNamesScheduleAndPrice: a charge the engine cannot bill
// is reported with the schedule, the account, the price and a reason a
// person can act on, and is readable on the schedule (lastBillingError).
func TestBillingFailureNamesScheduleAndPrice(t *testing.T) {
	t.Parallel()
	f := newSched(t)
	huge := f.price("Huge calls", billing.CurrencyUSD, billing.FrequencyMonthly, billing.BillingTypeInArrears,
		billing.PriceStructure{PricingType: billing.PricingLinear, PricePerUnit: dp("99999999999999999999"), UsageMetricID: f.metric("api_call")})
	f.events(f.customer, "api_call", ts("2024-01-10T00:00:00Z"), 10)
	sc := f.schedule(f.customer, "2024-01-01", nil, phase("2024-01-01", huge))

	run := f.run("2024-02-02T00:00:00Z")
	if len(run.Failures) != 1 {
		t.Fatalf("failures %+v, want one", run.Failures)
	}
	got := run.Failures[0]
	if got.BillingScheduleID != sc.ID || got.ServiceAccountID != f.account || got.PriceID != huge || got.Code == "" {
		t.Errorf("failure %+v: want the schedule, account, price and a code", got)
	}
	if !strings.Contains(got.Error, `"Huge calls"`) || !strings.Contains(got.Error, "digits") {
		t.Errorf("error %q does not name the price and the reason", got.Error)
	}
	t.Logf("failure: %+v", got)
	stored, err := f.svc.GetBillingSchedule(f.ctx, f.account, sc.ID)
	f.must(err)
	if stored.LastBillingError != got.Error {
		t.Errorf("lastBillingError %q, want %q", stored.LastBillingError, got.Error)
	}
}

// TestNormalizeTime: a time comes back in UTC, truncated to the second,
// without a monotonic reading, whether or not it had a fraction (whole
// seconds take a shorter way).
func TestNormalizeTime(t *testing.T) {
	t.Parallel()
	zone := time.FixedZone("+02:00", 2*60*60)
	for _, in := range []time.Time{
		time.Date(2024, 7, 1, 14, 0, 0, 0, zone),
		time.Date(2024, 7, 1, 14, 0, 0, 500_000_000, zone),
		time.Date(2024, 7, 1, 12, 0, 0, 0, time.UTC),
		time.Now(), // with a monotonic reading
	} {
		got := billing.NormalizeTime(in)
		want := time.Unix(in.Unix(), 0).UTC()
		if got != want {
			t.Errorf("NormalizeTime(%v) = %v (%v), want %v", in, got, got.Location(), want)
		}
	}
}
