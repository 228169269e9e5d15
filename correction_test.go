package billing_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
	docrender "github.com/billingd/billing/render"
	"github.com/billingd/billing/storage/faultstore"
)

// lateFixture is a schedule with a SUM usage price (0.50 per unit, in
// arrears, tax 20%) whose January invoice is finalized with 10 units.
type lateFixture struct {
	*sched
	sc      *billing.BillingSchedule
	price   string
	invoice *billing.Invoice
}

func newLateFixture(t *testing.T, opts ...billingtest.Option) *lateFixture {
	t.Helper()
	f := newSched(t, opts...)
	m, err := f.svc.CreateUsageMetric(f.ctx, f.account, billing.CreateUsageMetricParams{UsageMetricParams: billing.UsageMetricParams{
		Name: "GB", MetricType: billing.MetricTypeSimple, EventType: "gb", AggregationType: billing.AggregationSum, AggregationProperty: "gb",
	}})
	f.must(err)
	pr := f.price("Storage", billing.CurrencyUSD, billing.FrequencyMonthly, billing.BillingTypeInArrears,
		billing.PriceStructure{PricingType: billing.PricingLinear, PricePerUnit: dp("0.50"), UsageMetricID: m.ID})
	tr, err := f.svc.CreateTaxRate(f.ctx, f.account, billing.CreateTaxRateParams{Name: "VAT", Amount: dp("0.2")})
	f.must(err)
	lf := &lateFixture{sched: f, price: pr}
	lf.gb("a", "2024-01-10T00:00:00Z", "10")
	lf.sc = f.schedule(f.customer, "2024-01-01", func(p *billing.BillingScheduleParams) {
		p.TaxRates = []billing.ScheduleTaxRate{{PriceID: pr, TaxRateID: tr.ID}}
	}, phase("2024-01-01", pr))
	f.run("2024-02-01T02:00:00Z")
	invs, _ := f.invoices(lf.sc.ID)
	if len(invs) != 1 || invs[0].NetTotal.String() != "5.00" {
		t.Fatalf("January invoice %+v", invs)
	}
	lf.invoice, err = f.svc.SendInvoice(f.ctx, f.account, invs[0].ID)
	f.must(err)
	return lf
}

// gb records (or, with the same id, supersedes) a usage event of n GB.
func (f *lateFixture) gb(id, at, n string) {
	f.tb.Helper()
	t := ts(at)
	_, err := f.svc.CreateUsageEvent(f.ctx, f.account, billing.UsageEventParams{CustomerAlias: f.customer, EventType: "gb",
		CustomerEventID: id, EventTimestamp: &t, EventProperties: billing.EventProperties{"gb": billing.NumberProperty(billing.MustDecimal(n))}})
	f.must(err)
}

// corrections returns the schedule's invoices after the first and the
// credit notes of the January invoice.
func (f *lateFixture) corrections() ([]billing.Invoice, [][]billing.InvoiceLineItem, []billing.CreditNote) {
	f.tb.Helper()
	invs, lines := f.invoices(f.sc.ID)
	cns, err := f.svc.ListCreditNotes(f.ctx, f.account, billing.CreditNoteFilter{InvoiceID: f.invoice.ID}, billing.ListParams{Limit: 100})
	f.must(err)
	return invs[1:], lines[1:], cns.Items
}

// wantJournalBalances fails unless debits equal credits for source id.
func (f *lateFixture) wantJournalBalances(id string) {
	f.tb.Helper()
	page, err := f.svc.ListJournalEntries(f.ctx, f.account, billing.JournalFilter{SourceID: id}, billing.ListParams{Limit: 100})
	f.must(err)
	debit, credit := billing.Decimal{}, billing.Decimal{}
	for _, e := range page.Items {
		debit, credit = debit.Add(e.Debit), credit.Add(e.Credit)
	}
	if len(page.Items) == 0 || debit.Cmp(credit) != 0 {
		f.tb.Errorf("journal of %s: %d entries, debits %s, credits %s", id, len(page.Items), debit, credit)
	}
}

// Long on purpose: one scenario walked in order; each step starts from the
// state the previous steps left, so pieces would repeat the set-up.
func TestLateUsageIsCorrectedOnce(t *testing.T) {
	t.Parallel()
	t.Run("PositiveDifferenceMakesAnAdjustmentInvoice", func(t *testing.T) {
		t.Parallel()
		f := newLateFixture(t, billingtest.WithBolt())
		_, err := f.svc.CreateNotificationPolicy(f.ctx, f.account, billing.CreateNotificationPolicyParams{
			Name: "ops", Channel: billing.ChannelEmail, Recipients: []string{"ops@acme.test"}})
		f.must(err)
		f.gb("b", "2024-01-20T00:00:00Z", "4") // 4 GB more for January, after the invoice was sent
		r1 := f.run("2024-02-03T00:00:00Z")
		r2 := f.run("2024-02-04T00:00:00Z")
		if r1.CorrectionsIssued != 1 || r1.InvoicesCreated != 1 || r2.CorrectionsIssued != 0 || r2.InvoicesCreated != 0 {
			t.Fatalf("runs %+v then %+v, want one correction in the first only", r1, r2)
		}
		invs, lines, cns := f.corrections()
		if len(invs) != 1 || len(cns) != 0 {
			t.Fatalf("%d adjustment invoices and %d credit notes, want 1 and 0", len(invs), len(cns))
		}
		adj, l := invs[0], lines[0]
		if adj.NetTotal.String() != "2.00" || adj.TotalTax.String() != "0.40" || len(l) != 1 || l[0].PriceID != f.price ||
			l[0].ServicePeriod.StartDate.String() != "2024-01-01" || adj.BillingPeriod.Start.String() != "2024-01-01" {
			t.Fatalf("adjustment invoice %s/%s, lines %+v", adj.NetTotal, adj.TotalTax, l)
		}
		if !strings.Contains(l[0].Description, "changed from 10 to 14 after INV00001") || !strings.Contains(adj.Memo, "INV00001") {
			t.Errorf("line %q, memo %q: the reason is missing", l[0].Description, adj.Memo)
		}
		if !hasMeta(adj.Metadata, "lateUsageCorrectionOfInvoiceId", f.invoice.ID) {
			t.Errorf("metadata %v does not link the original invoice", adj.Metadata)
		}
		sent, err := f.svc.SendInvoice(f.ctx, f.account, adj.ID)
		f.must(err)
		f.wantJournalBalances(sent.ID)
		lu, err := f.svc.ListLateUsage(f.ctx, f.account, f.sc.ID, billing.ListParams{})
		f.must(err)
		if len(lu.Items) != 1 || len(lu.Items[0].CorrectionInvoiceIDs) != 1 || lu.Items[0].CorrectionInvoiceIDs[0] != adj.ID {
			t.Errorf("late usage %+v does not name the correction", lu.Items)
		}
		created := billing.NotificationPayloadsForTest(t, f.svc, f.account, billing.NotificationInvoiceCreated)
		var n billing.Notification
		if len(created) == 1 {
			f.must(json.Unmarshal([]byte(created[0]), &n))
		}
		if len(created) != 1 || !strings.Contains(docrender.NotificationEmail(&n).Text, "Memo: Correction of invoice INV00001 after it was finalized: usage of Storage for 2024-01-01..2024-01-31 changed from 10 to 14") {
			t.Errorf("INVOICE_CREATED of the correction does not say what happened: %v", created)
		}
	})
	t.Run("NegativeDifferenceMakesACreditNote", func(t *testing.T) {
		t.Parallel()
		f := newLateFixture(t, billingtest.WithBolt())
		f.gb("a", "2024-01-10T00:00:00Z", "6") // the 10 GB were 6 GB
		f.run("2024-02-03T00:00:00Z")
		f.run("2024-02-04T00:00:00Z")
		invs, _, cns := f.corrections()
		if len(invs) != 0 || len(cns) != 1 {
			t.Fatalf("%d adjustment invoices and %d credit notes, want 0 and 1", len(invs), len(cns))
		}
		cn := cns[0]
		if cn.NetTotal.String() != "2.00" || cn.GrossTotal.String() != "2.40" || cn.InvoiceID != f.invoice.ID || cn.Status != billing.StatusDraft {
			t.Fatalf("credit note %s/%s for %s, %s", cn.NetTotal, cn.GrossTotal, cn.InvoiceID, cn.Status)
		}
		ls, err := f.svc.ListCreditNoteLineItems(f.ctx, f.account, cn.ID, billing.LineItemFilter{}, billing.ListParams{Limit: 10})
		f.must(err)
		if len(ls.Items) != 1 || !strings.Contains(ls.Items[0].Description, "changed from 10 to 6") || ls.Items[0].ServicePeriod.Start.String() != "2024-01-01" {
			t.Errorf("credit note lines %+v", ls.Items)
		}
		sent, err := f.svc.SendCreditNote(f.ctx, f.account, cn.ID)
		f.must(err)
		f.wantJournalBalances(sent.ID)
		inv, err := f.svc.GetInvoice(f.ctx, f.account, f.invoice.ID)
		f.must(err)
		if inv.AmountDue.String() != "3.60" {
			t.Errorf("amount due after the credit %s, want 3.60", inv.AmountDue)
		}
	})
	t.Run("AgainAfterAnotherChange", func(t *testing.T) {
		t.Parallel()
		f := newLateFixture(t)
		f.gb("b", "2024-01-20T00:00:00Z", "4")
		f.run("2024-02-03T00:00:00Z")
		f.gb("b", "2024-01-20T00:00:00Z", "1") // 14 → 11: credit the 3 GB of the first correction
		f.run("2024-02-04T00:00:00Z")
		f.run("2024-02-05T00:00:00Z")
		invs, _, cns := f.corrections()
		if len(invs) != 1 || invs[0].NetTotal.String() != "2.00" || len(cns) != 1 || cns[0].NetTotal.String() != "1.50" {
			t.Fatalf("corrections: %d invoices, %d credit notes", len(invs), len(cns))
		}
	})
	t.Run("NotAfterTheWindow", func(t *testing.T) {
		t.Parallel()
		f := newLateFixture(t, billingtest.WithConfig(billing.Config{LateUsageWindow: 48 * time.Hour}))
		f.run("2024-02-04T00:00:00Z") // the window of the February 1 invoice closes
		f.gb("b", "2024-01-20T00:00:00Z", "4")
		f.run("2024-02-05T00:00:00Z")
		if invs, _, cns := f.corrections(); len(invs)+len(cns) != 0 {
			t.Errorf("a correction after the window: %d invoices, %d credit notes", len(invs), len(cns))
		}
	})
}

// A crash between the run that detects late usage and the next one (its
// commit fails) issues the correction exactly once, in the next run.
func TestLateUsageCorrectionSurvivesACrash(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, id, gb string }{{"Positive", "b", "4"}, {"Negative", "a", "6"}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fs := faultstore.New(billingtest.DurableStore(t))
			f := newLateFixture(t, billingtest.WithStore(fs))
			f.gb(tc.id, "2024-01-20T00:00:00Z", tc.gb)
			fs.Inject(faultstore.Fault{Op: faultstore.OpCommit, Count: 1})
			if _, err := f.svc.RunBilling(f.ctx, ts("2024-02-03T00:00:00Z")); billing.CodeOf(err) != billing.CodeUnavailable {
				t.Fatalf("run over a failing commit: %v", err)
			}
			fs.Clear()
			if invs, _, cns := f.corrections(); len(invs)+len(cns) != 0 {
				t.Fatalf("the failed run left %d invoices and %d credit notes", len(invs), len(cns))
			}
			f.run("2024-02-03T00:00:00Z")
			f.run("2024-02-04T00:00:00Z")
			if invs, _, cns := f.corrections(); len(invs)+len(cns) != 1 {
				t.Errorf("after the crash: %d adjustment invoices and %d credit notes, want one correction", len(invs), len(cns))
			}
		})
	}
}

func hasMeta(kvs []billing.KeyValue, k, v string) bool {
	for _, kv := range kvs {
		if kv.Key == k && kv.Value == v {
			return true
		}
	}
	return false
}

// A separate PERCENTAGE discount whose amount rounds to zero adds no line
// (a 0.00 line carries no money); the other discounted lines keep theirs.
func TestZeroSeparateDiscountLinesAreOmitted(t *testing.T) {
	t.Parallel()
	f := newSched(t)
	tiny, plan := f.fixed("Tiny", "0.04", billing.CurrencyUSD), f.fixed("Plan", "10.00", billing.CurrencyUSD)
	ph := phase("2024-01-01", tiny, plan)
	ph.Discounts = []billing.DiscountParams{{Type: billing.DiscountPercentage, Amount: num("10"), Message: "Promo", SeparateLineItem: true}}
	sc := f.schedule(f.customer, "2024-01-01", nil, ph)
	wantLines(t, f.renderDue(sc.ID, "2024-01-01T00:00:00Z"),
		"2024-01-01: Tiny|1|0.04|0|0.04|2024-01-01..2024-01-31; Plan|1|10.00|0|10.00|2024-01-01..2024-01-31; Promo|1|-1.00|0|-1.00|2024-01-01..2024-01-31;")
}
