package billing_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
)

// summaryText renders a summary as "CUR invoiced=a,b,.. due=x/n overdue=y/m"
// per currency, one per line.
func summaryText(s *billing.InvoiceSummary) string {
	var b strings.Builder
	for _, c := range s.Currencies {
		var inv []string
		for _, d := range c.Invoiced {
			inv = append(inv, d.String())
		}
		fmt.Fprintf(&b, "%s invoiced=%s due=%s/%d overdue=%s/%d\n", c.Currency, strings.Join(inv, ","),
			c.AmountDue, c.UnpaidInvoices, c.AmountOverdue, c.OverdueInvoices)
	}
	return b.String()
}

// issuedInvoices gives e's account, by 5 October 2024: a GBP invoice
// issued 30 July (100.00, due 29 August), a draft, a GBP invoice issued 10
// September (120.00, 20.00 paid, due 10 October), an uncollectible USD
// invoice (30.00) and a voided one (999.00) issued the same day.
func issuedInvoices(e *docEnv, check func(error)) {
	e.finalInvoice("1", "100.00", "0")
	e.invoice(billing.CurrencyGBP, "")
	e.clock.Set(time.Date(2024, 9, 10, 9, 0, 0, 0, time.UTC))
	sept := e.finalInvoice("2", "50.00", "0.2")
	_, err := e.svc.RecordPayment(e.ctx, e.acct, sept.ID, billing.PaymentParams{Amount: dec("20.00"), PaidAt: date("2024-09-10")})
	check(err)
	for _, inv := range []struct {
		rate string
		last func(*billing.Service, context.Context, string, string) (*billing.Invoice, error)
	}{
		{"30.00", func(s *billing.Service, ctx context.Context, acct, id string) (*billing.Invoice, error) {
			return s.SetPaymentStatus(ctx, acct, id, billing.PaymentStatusUncollectible)
		}},
		{"999.00", (*billing.Service).VoidInvoice},
	} {
		usd := e.invoice(billing.CurrencyUSD, "")
		e.line(usd.ID, invLine("Setup", "1", inv.rate, "0"))
		_, err = e.svc.FinalizeInvoice(e.ctx, e.acct, usd.ID)
		check(err)
		_, err = inv.last(e.svc, e.ctx, e.acct, usd.ID)
		check(err)
	}
	e.clock.Set(time.Date(2024, 10, 5, 9, 0, 0, 0, time.UTC))
}

func TestSummarizeInvoicesAddsIssuedInvoicesPerMonthAndCurrency(t *testing.T) {
	t.Parallel()
	e := newDocEnv(t)
	check := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	issuedInvoices(e, check)

	// summary summarizes months months and checks its today and months.
	summary := func(months int, today, first, last string) *billing.InvoiceSummary {
		t.Helper()
		sum, err := e.svc.SummarizeInvoices(e.ctx, e.acct, months)
		check(err)
		if sum.Today.String() != today || len(sum.Months) != months || sum.Months[0].String() != first || sum.Months[months-1].String() != last {
			t.Errorf("today %s, months %v; want %s, %s .. %s", sum.Today, sum.Months, today, first, last)
		}
		return sum
	}
	sum := summary(4, "2024-10-05", "2024-07-01", "2024-10-01")
	// July's invoice is overdue (due 29 August); September's is due but not
	// overdue; the uncollectible USD invoice was invoiced but is not due; the
	// voided one counts nowhere.
	want := "GBP invoiced=100.00,0,120.00,0 due=200.00/2 overdue=100.00/1\n" +
		"USD invoiced=0,0,30.00,0 due=0/0 overdue=0/0\n"
	if got := summaryText(sum); got != want {
		t.Errorf("summary:\n%s\nwant:\n%s", got, want)
	}

	t.Run("MonthsOutOfRangeRefused", func(t *testing.T) {
		for _, n := range []int{0, 121} {
			if _, err := e.svc.SummarizeInvoices(e.ctx, e.acct, n); billing.CodeOf(err) != billing.CodeValidationFailed || !strings.Contains(err.Error(), "months") {
				t.Errorf("months %d: %v", n, err)
			}
		}
	})
	t.Run("TodayIsTheAccountsDate", func(t *testing.T) {
		// 20:00 UTC on 31 October is already 1 November in Auckland: the
		// summary's last month is November there.
		_, err := e.svc.PutAccountSettings(e.ctx, e.acct, billing.AccountSettings{TimeZone: "Pacific/Auckland"})
		check(err)
		e.clock.Set(time.Date(2024, 10, 31, 20, 0, 0, 0, time.UTC))
		summary(2, "2024-11-01", "2024-10-01", "2024-11-01")
	})
	t.Run("OtherAccountSeesNothing", func(t *testing.T) {
		other := billingtest.Account(t, e.svc, "other")
		sum, err := e.svc.SummarizeInvoices(e.ctx, other, 12)
		check(err)
		if len(sum.Currencies) != 0 || len(sum.Months) != 12 {
			t.Errorf("other account: %+v", sum)
		}
	})
}

// failingSchedule creates a schedule whose usage price cannot be billed in
// January 2024 (its amount has too many digits) and one that bills.
func failingSchedule(f *sched) (bad, good *billing.BillingSchedule) {
	f.tb.Helper()
	huge := f.price("Huge calls", billing.CurrencyUSD, billing.FrequencyMonthly, billing.BillingTypeInArrears,
		billing.PriceStructure{PricingType: billing.PricingLinear, PricePerUnit: dp("99999999999999999999"), UsageMetricID: f.metric("api_call")})
	f.events(f.customer, "api_call", ts("2024-01-10T00:00:00Z"), 10)
	bad = f.schedule(f.customer, "2024-01-01", nil, phase("2024-01-01", huge))
	good = f.schedule(f.newCustomer(billing.TaxStatusTaxed), "2024-01-01", nil, phase("2024-01-01", f.fixed("Plan", "1.00", billing.CurrencyUSD)))
	return bad, good
}

func TestBillingRunsAreRecordedPerAccountWithTheirFailures(t *testing.T) {
	t.Parallel()
	f := newSched(t)
	bad, good := failingSchedule(f)
	other := billingtest.Account(t, f.svc, "other")

	f.run("2024-02-02T00:00:00Z")
	runs, err := f.svc.ListBillingRuns(f.ctx, f.account, billing.ListParams{})
	f.must(err)
	if runs.TotalResultSize != 1 {
		t.Fatalf("%d runs recorded, want 1", runs.TotalResultSize)
	}
	r := runs.Items[0]
	if r.ServiceAccountID != f.account || r.Requested || r.InvoicesCreated != 2 || r.SchedulesVisited != 1 ||
		len(r.Failures) != 1 || r.Failures[0].BillingScheduleID != bad.ID || !strings.Contains(r.Failures[0].Error, "Huge calls") {
		t.Errorf("record: %+v", r)
	}
	if !r.StartedAt.Equal(billingtest.Start) || r.AsOf.Format(time.RFC3339) != "2024-02-02T00:00:00Z" {
		t.Errorf("startedAt %s asOf %s", r.StartedAt, r.AsOf)
	}
	got, err := f.svc.GetBillingRun(f.ctx, f.account, r.ID)
	f.must(err)
	if got.ID != r.ID || len(got.Failures) != 1 {
		t.Errorf("GetBillingRun: %+v", got)
	}

	t.Run("FailingFilterKeepsTheFailingSchedule", func(t *testing.T) {
		page, err := f.svc.ListBillingSchedules(f.ctx, f.account, billing.BillingScheduleFilter{Failing: true}, billing.ListParams{})
		f.must(err)
		if page.TotalResultSize != 1 || page.Items[0].ID != bad.ID || page.Items[0].ID == good.ID {
			t.Errorf("failing schedules: %d", page.TotalResultSize)
		}
	})
	t.Run("RunsThatChangeNothingAreNotRecorded", func(t *testing.T) {
		// The other account has no schedules: a run of every account changes
		// nothing there, and leaves no record.
		if page, err := f.svc.ListBillingRuns(f.ctx, other, billing.ListParams{}); err != nil || page.TotalResultSize != 0 {
			t.Errorf("other account: %d records, %v", page.TotalResultSize, err)
		}
	})
	t.Run("OtherAccountsRecordIsNotFound", func(t *testing.T) {
		if _, err := f.svc.GetBillingRun(f.ctx, other, r.ID); billing.CodeOf(err) != billing.CodeNotFound {
			t.Errorf("another account's record: %v", err)
		}
	})
}

func TestRequestedBillingRunsAreAlwaysRecordedAndPruned(t *testing.T) {
	t.Parallel()
	svc, _ := billingtest.NewService(t)
	account := billingtest.Account(t, svc, "acme")
	ctx := t.Context()
	for range 102 {
		if _, err := svc.RunAccountBilling(ctx, account, nil); err != nil {
			t.Fatal(err)
		}
	}
	page, err := svc.ListBillingRuns(ctx, account, billing.ListParams{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if page.TotalResultSize != 100 || !page.Items[0].Requested || page.Items[0].SchedulesVisited != 0 {
		t.Errorf("%d records (want the newest 100), first %+v", page.TotalResultSize, page.Items[0])
	}
}
