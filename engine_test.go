package billing_test

import (
	"encoding/json"
	"fmt"
	"iter"
	"sync"
	"testing"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
	"github.com/billingd/billing/storage/faultstore"
)

// invoices returns the schedule's invoices, oldest first, with their lines.
func (f *sched) invoices(scheduleID string) ([]billing.Invoice, [][]billing.InvoiceLineItem) {
	f.tb.Helper()
	invs := pages(f.tb, func(p billing.ListParams) (billing.Page[billing.Invoice], error) {
		return f.svc.ListInvoices(f.ctx, f.account, billing.InvoiceFilter{BillingScheduleID: scheduleID, SortOrder: billing.SortAsc}, p)
	})
	lines := make([][]billing.InvoiceLineItem, len(invs))
	for i, inv := range invs {
		ls, err := f.svc.ListInvoiceLineItems(f.ctx, f.account, inv.ID, billing.LineItemFilter{}, billing.ListParams{Limit: 100})
		f.must(err)
		lines[i] = ls.Items
	}
	return invs, lines
}

// wantOnce fails unless every (price, service period) of the schedule's
// invoices is charged exactly once, and returns how many charges there are.
func (f *sched) wantOnce(scheduleID string) int {
	f.tb.Helper()
	seen := map[string]int{}
	_, lines := f.invoices(scheduleID)
	for _, ls := range lines {
		for _, l := range ls {
			if l.PriceID == "" || l.ServicePeriod == nil {
				continue
			}
			k := l.PriceID + "/" + l.ServicePeriod.StartDate.String() + "/" + l.Title
			seen[k]++
			if seen[k] > 1 {
				f.tb.Errorf("schedule %s: %s charged %d times", scheduleID, k, seen[k])
			}
		}
	}
	return len(seen)
}

func (f *sched) run(asOf string) *billing.BillingRun {
	f.tb.Helper()
	r, err := f.svc.RunBilling(f.ctx, ts(asOf))
	f.must(err)
	return r
}

// usageSchedule creates a schedule with a monthly FIXED fee in advance and
// a LINEAR usage price in arrears from 2024-01-01.
func (f *sched) usageSchedule(customer string, mod func(*billing.BillingScheduleParams)) (*billing.BillingSchedule, string, string) {
	f.tb.Helper()
	fixed := f.fixed("Plan", "100.00", billing.CurrencyUSD)
	usage := f.apiCalls("0.25")
	return f.schedule(customer, "2024-01-01", mod, phase("2024-01-01", fixed, usage)), fixed, usage
}

func TestRunBillingInvoicesEveryDueDateOnce(t *testing.T) {
	t.Parallel()
	f := newSched(t, billingtest.WithBolt())
	f.events(f.customer, "api_call", ts("2024-01-10T00:00:00Z"), 4)
	f.events(f.customer, "api_call", ts("2024-02-10T00:00:00Z"), 6)
	sc, _, _ := f.usageSchedule(f.customer, nil)

	r := f.run("2024-03-01T02:00:00Z")
	if r.InvoicesCreated != 3 || len(r.Failures) != 0 {
		t.Fatalf("first run: %+v", r)
	}
	invs, lines := f.invoices(sc.ID)
	var got []string
	for i, inv := range invs {
		got = append(got, fmt.Sprintf("%s %s %s %d", inv.BillingPeriod.Start, inv.Status, inv.NetTotal, len(lines[i])))
	}
	want := []string{"2024-01-01 DRAFT 100.00 1", "2024-02-01 DRAFT 101.00 2", "2024-03-01 DRAFT 101.50 2"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("invoices %v, want %v", got, want)
	}
	if invs[2].CalculatedAt == nil || invs[2].BillingScheduleID != sc.ID {
		t.Errorf("engine invoice lacks calculatedAt or billingScheduleId: %+v", invs[2])
	}
	again := f.run("2024-03-01T02:00:00Z")
	if again.InvoicesCreated != 0 {
		t.Errorf("second run created %d invoices", again.InvoicesCreated)
	}
	if n := f.wantOnce(sc.ID); n != 5 {
		t.Errorf("%d charges, want 5", n)
	}
	got2, err := f.svc.GetBillingSchedule(f.ctx, f.account, sc.ID)
	f.must(err)
	if got2.LastInvoiceID != invs[2].ID {
		t.Errorf("lastInvoiceId = %q, want %q", got2.LastInvoiceID, invs[2].ID)
	}
}

func TestRunBillingConcurrentRunsChargeOnce(t *testing.T) {
	t.Parallel()
	f := newSched(t, billingtest.WithBolt())
	var ids []string
	for i := range 12 {
		c := f.newCustomer(billing.TaxStatusTaxed)
		f.events(c, "api_call", ts("2024-01-10T00:00:00Z"), i+1)
		sc, _, _ := f.usageSchedule(c, nil)
		ids = append(ids, sc.ID)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 4 {
		wg.Go(func() {
			for _, at := range []string{"2024-01-15T00:00:00Z", "2024-02-01T05:00:00Z"} {
				if _, err := f.svc.RunBilling(f.ctx, ts(at)); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for _, id := range ids {
		if n := f.wantOnce(id); n != 3 {
			t.Errorf("schedule %s: %d charges, want 3", id, n)
		}
		if invs, _ := f.invoices(id); len(invs) != 2 {
			t.Errorf("schedule %s: %d invoices, want 2", id, len(invs))
		}
	}
}

func TestRunBillingAfterCrashChargesOnce(t *testing.T) {
	t.Parallel()
	fs := faultstore.New(billingtest.DurableStore(t))
	f := newSched(t, billingtest.WithStore(fs))
	var ids []string
	for range 130 {
		sc := f.schedule(f.newCustomer(billing.TaxStatusTaxed), "2024-01-01", nil, phase("2024-01-01", f.fixed("Plan", "10.00", billing.CurrencyUSD)))
		ids = append(ids, sc.ID)
	}
	// The first batch commits, the second one's commit fails: a crash
	// between two engine transactions.
	fs.Inject(faultstore.Fault{Op: faultstore.OpCommit, After: 1, Count: 1})
	if _, err := f.svc.RunBilling(f.ctx, ts("2024-02-01T00:00:00Z")); billing.CodeOf(err) != billing.CodeUnavailable {
		t.Fatalf("run over a failing store: %v, want unavailable", err)
	}
	fs.Clear()
	billed := 0
	for _, id := range ids {
		if invs, _ := f.invoices(id); len(invs) > 0 {
			billed++
		}
	}
	if billed != 100 {
		t.Errorf("%d schedules billed before the crash, want the first batch of 100", billed)
	}
	r := f.run("2024-02-01T00:00:00Z")
	if r.InvoicesCreated != 2*130-2*100 {
		t.Errorf("rerun created %d invoices, want %d", r.InvoicesCreated, 2*130-2*100)
	}
	for _, id := range ids {
		if n := f.wantOnce(id); n != 2 {
			t.Errorf("schedule %s: %d charges, want 2", id, n)
		}
	}
}

func TestRunBillingIsDeterministic(t *testing.T) {
	t.Parallel()
	render := func() string {
		f := newSched(t, billingtest.WithBolt())
		f.events(f.customer, "api_call", ts("2024-01-10T00:00:00Z"), 5)
		sc, _, _ := f.usageSchedule(f.customer, nil)
		f.run("2024-02-01T03:00:00Z")
		invs, lines := f.invoices(sc.ID)
		// Two runs that billed nothing would agree too: the runs must
		// have billed January's plan and, in arrears, its 5 calls.
		var got []string
		for i, inv := range invs {
			got = append(got, fmt.Sprintf("%s %s %d", inv.BillingPeriod.Start, inv.NetTotal, len(lines[i])))
		}
		if want := []string{"2024-01-01 100.00 1", "2024-02-01 101.25 2"}; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("the run billed %v, want %v", got, want)
		}
		b, err := json.Marshal([]any{invs, lines})
		f.must(err)
		return string(b)
	}
	if a, b := render(), render(); a != b {
		t.Errorf("two runs over the same state differ:\n%s\n%s", a, b)
	}
}

func TestPreviewInvoiceIsDeterministicAndStoresNothing(t *testing.T) {
	t.Parallel()
	f := newSched(t, billingtest.WithBolt())
	f.events(f.customer, "api_call", ts("2024-01-10T00:00:00Z"), 5)
	sc, _, _ := f.usageSchedule(f.customer, nil)
	preview := func() string {
		up, err := f.svc.PreviewInvoice(f.ctx, f.account, sc.ID, ts("2024-01-20T00:00:00Z"))
		f.must(err)
		if up.ID != "" || len(up.LineItems) == 0 || up.LineItems[0].ID != "" {
			t.Errorf("preview has ids or no lines: id %q, %d lines", up.ID, len(up.LineItems))
		}
		b, err := json.Marshal(up)
		f.must(err)
		return string(b)
	}
	if a, b := preview(), preview(); a != b {
		t.Errorf("two previews of the same state differ:\n%s\n%s", a, b)
	}
	if invs, _ := f.invoices(sc.ID); len(invs) != 0 {
		t.Errorf("a preview stored %d invoices", len(invs))
	}
}

// Long on purpose: one scenario walked in order; each step starts from the state the previous steps
// left, so pieces would repeat the set-up.
func TestRunBillingLifecycle(t *testing.T) {
	t.Parallel()
	parallelOn(t, "AutoIssueAndCompleted", newSched, func(t *testing.T, f *sched) {
		f.events(f.customer, "api_call", ts("2024-01-10T00:00:00Z"), 2)
		f.events(f.customer, "api_call", ts("2024-02-05T00:00:00Z"), 2)
		sc, _, _ := f.usageSchedule(f.customer, func(p *billing.BillingScheduleParams) {
			yes := true
			p.AutoIssueInvoices, p.EndDate = &yes, date("2024-02-15")
		})
		r := f.run("2024-02-16T02:00:00Z")
		if r.InvoicesIssued != r.InvoicesCreated || r.InvoicesCreated != 3 || r.SchedulesCompleted != 1 {
			t.Fatalf("run: %+v", r)
		}
		invs, lines := f.invoices(sc.ID)
		for _, inv := range invs {
			if inv.Status != billing.StatusSent {
				t.Errorf("invoice %s is %s, want SENT", inv.ID, inv.Status)
			}
		}
		// The last invoice (2024-02-16) carries the cut usage period only; the
		// cut fixed period was billed in advance on 2024-02-01, prorated.
		if q := lines[1][0].Quantity.String(); q != "0.51724137931" {
			t.Errorf("February fixed quantity %s, want 15/29", q)
		}
		got, err := f.svc.GetBillingSchedule(f.ctx, f.account, sc.ID)
		f.must(err)
		if got.Status != billing.ScheduleStatusCompleted {
			t.Errorf("status %s, want COMPLETED", got.Status)
		}
	})
	parallelOn(t, "CancelProratesTheLastPeriod", newSched, func(t *testing.T, f *sched) {
		sc := f.schedule(f.customer, "2024-01-01", nil, phase("2024-01-01", f.fixed("Plan", "31.00", billing.CurrencyUSD)))
		f.clock.Set(ts("2024-01-20T00:00:00Z"))
		f.run("2024-01-20T00:00:00Z")
		if _, err := f.svc.CancelBillingSchedule(f.ctx, f.account, sc.ID, billing.CancelBillingScheduleParams{At: date("2024-01-20")}); billing.CodeOf(err) != billing.CodeValidationFailed {
			t.Errorf("cancel inside a billed period: %v, want validation_failed", err)
		}
		c, err := f.svc.CancelBillingSchedule(f.ctx, f.account, sc.ID, billing.CancelBillingScheduleParams{At: date("2024-02-10")})
		f.must(err)
		if c.Status != billing.ScheduleStatusCancelled || c.EndDate.String() != "2024-02-10" {
			t.Errorf("cancelled: %s %v", c.Status, c.EndDate)
		}
		f.run("2024-03-01T00:00:00Z")
		invs, lines := f.invoices(sc.ID)
		if len(invs) != 2 || lines[1][0].Quantity.String() != "0.344827586207" || invs[1].NetTotal.String() != "10.69" {
			t.Errorf("after cancel: %d invoices, last %v", len(invs), lines[len(lines)-1])
		}
	})
	parallelOn(t, "SuspendedPeriodsSkipped", newSched, func(t *testing.T, f *sched) {
		sc := f.schedule(f.customer, "2024-01-01", nil, phase("2024-01-01", f.fixed("Plan", "10.00", billing.CurrencyUSD)))
		f.clock.Set(ts("2024-01-20T00:00:00Z"))
		_, err := f.svc.SuspendBillingSchedule(f.ctx, f.account, sc.ID)
		f.must(err)
		f.clock.Set(ts("2024-02-10T00:00:00Z"))
		_, err = f.svc.ActivateBillingSchedule(f.ctx, f.account, sc.ID)
		f.must(err)
		f.run("2024-03-01T00:00:00Z")
		invs, _ := f.invoices(sc.ID)
		var starts []string
		for _, inv := range invs {
			starts = append(starts, inv.BillingPeriod.Start.String())
		}
		if fmt.Sprint(starts) != "[2024-01-01 2024-03-01]" {
			t.Errorf("billed periods %v, want January and March", starts)
		}
	})
	t.Run("FailingScheduleSkippedThenCleared", func(t *testing.T) {
		t.Parallel()
		store := billingtest.DurableStore(t)
		f := newSched(t, billingtest.WithStore(store))
		m, err := f.svc.CreateUsageMetric(f.ctx, f.account, billing.CreateUsageMetricParams{UsageMetricParams: billing.UsageMetricParams{
			Name: "weird", MetricType: billing.MetricTypeSimple, EventType: "x", AggregationType: billing.AggregationCustom,
		}})
		f.must(err)
		custom := f.price("Custom", billing.CurrencyUSD, billing.FrequencyMonthly, billing.BillingTypeInArrears,
			billing.PriceStructure{PricingType: billing.PricingLinear, PricePerUnit: dp("1"), UsageMetricID: m.ID})
		bad := f.schedule(f.customer, "2024-01-01", nil, phase("2024-01-01", custom))
		good := f.schedule(f.newCustomer(billing.TaxStatusTaxed), "2024-01-01", nil, phase("2024-01-01", f.fixed("Plan", "1.00", billing.CurrencyUSD)))
		r := f.run("2024-02-01T02:00:00Z")
		if len(r.Failures) != 1 || r.Failures[0].BillingScheduleID != bad.ID || r.InvoicesCreated != 2 {
			t.Fatalf("run: %+v", r)
		}
		got, err := f.svc.GetBillingSchedule(f.ctx, f.account, bad.ID)
		f.must(err)
		if got.LastBillingError == "" {
			t.Error("lastBillingError not recorded")
		}
		if n := f.wantOnce(good.ID); n != 2 {
			t.Errorf("good schedule: %d charges, want 2", n)
		}
		// A restart with the function registered bills it and clears the error.
		n := 0
		svc2, _ := billingtest.NewService(t, billingtest.WithStore(store), billingtest.WithConfig(billing.Config{
			NewID: func() string { n++; return fmt.Sprintf("%08x-0000-7000-8000-000000000000", 100000+n) },
			CustomAggregations: map[string]billing.CustomAggregation{
				"weird": func(_ iter.Seq[billing.UsageEvent], _ map[string]billing.Decimal) (billing.Decimal, error) {
					return billing.MustDecimal("3"), nil
				},
			},
		}))
		f.svc = svc2
		if r := f.run("2024-02-01T02:00:00Z"); len(r.Failures) != 0 || r.InvoicesCreated != 1 {
			t.Fatalf("rerun: %+v", r)
		}
		got, err = f.svc.GetBillingSchedule(f.ctx, f.account, bad.ID)
		f.must(err)
		if got.LastBillingError != "" || got.LastInvoiceID == "" {
			t.Errorf("after success: lastBillingError %q, lastInvoiceId %q", got.LastBillingError, got.LastInvoiceID)
		}
	})
}

func TestRunBillingRecomputesDraftsAndRecordsLateUsage(t *testing.T) {
	t.Parallel()
	f := newSched(t)
	f.events(f.customer, "api_call", ts("2024-01-10T00:00:00Z"), 4)
	sc, _, usage := f.usageSchedule(f.customer, nil)
	f.run("2024-02-01T02:00:00Z")
	f.events(f.customer, "api_call", ts("2024-01-11T00:00:00Z"), 2) // late, while the invoice is a draft
	r := f.run("2024-02-01T03:00:00Z")
	if r.InvoicesUpdated != 1 || r.InvoicesCreated != 0 {
		t.Fatalf("recompute run: %+v", r)
	}
	invs, lines := f.invoices(sc.ID)
	if got := lines[1][1].Quantity.String() + " " + invs[1].NetTotal.String(); got != "6 101.50" {
		t.Errorf("recomputed usage line and total: %s, want 6 101.50", got)
	}
	if r := f.run("2024-02-01T04:00:00Z"); r.InvoicesUpdated != 0 {
		t.Errorf("unchanged usage updated %d invoices", r.InvoicesUpdated)
	}
	_, err := f.svc.FinalizeInvoice(f.ctx, f.account, invs[1].ID)
	f.must(err)
	f.events(f.customer, "api_call", ts("2024-01-12T00:00:00Z"), 3) // after finalization
	f.run("2024-02-02T00:00:00Z")
	page, err := f.svc.ListLateUsage(f.ctx, f.account, sc.ID, billing.ListParams{})
	f.must(err)
	if len(page.Items) != 1 {
		t.Fatalf("late usage: %+v", page.Items)
	}
	lu := page.Items[0]
	if got := fmt.Sprintf("%t %s %s %s %s", lu.PriceID == usage, lu.BilledUsage, lu.CurrentUsage, lu.Difference, lu.ServicePeriod.StartDate); got != "true 6 9 3 2024-01-01" {
		t.Errorf("late usage %s", got)
	}
	_, lines = f.invoices(sc.ID)
	if q := lines[1][1].Quantity.String(); q != "6" {
		t.Errorf("finalized invoice changed: quantity %s", q)
	}
}
