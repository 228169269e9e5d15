package billing_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/billingd/billing"
)

// TestAgeReceivablesBucketsByDaysPastDue ages issuedInvoices' two GBP
// invoices with something due (100.00 due 29 August, 100.00 left of one
// due 10 October; the uncollectible and the voided USD ones count
// nowhere) on the days around the buckets' edges, and checks the total
// against SummarizeInvoices' amount due.
func TestAgeReceivablesBucketsByDaysPastDue(t *testing.T) {
	t.Parallel()
	e := newDocEnv(t)
	issuedInvoices(e, func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	})
	for _, c := range []struct {
		today string
		want  string // current, 1-30, 31-60, 61-90, over 90, total / invoices
	}{
		{"2024-08-29", "200.00 0.00 0.00 0.00 0.00 200.00/2"},   // due today: current
		{"2024-09-28", "100.00 100.00 0.00 0.00 0.00 200.00/2"}, // 30 days late
		{"2024-09-29", "100.00 0.00 100.00 0.00 0.00 200.00/2"}, // 31
		{"2024-11-27", "0.00 0.00 100.00 100.00 0.00 200.00/2"}, // 90, and 48
		{"2024-11-28", "0.00 0.00 100.00 0.00 100.00 200.00/2"}, // 91, and 49
	} {
		day, _ := billing.ParseDate(c.today)
		e.clock.Set(day.Time().Add(9 * time.Hour))
		rec, err := e.svc.AgeReceivables(e.ctx, e.acct)
		if err != nil {
			t.Fatal(err)
		}
		sum, err := e.svc.SummarizeInvoices(e.ctx, e.acct, 1)
		if err != nil {
			t.Fatal(err)
		}
		if len(rec.Currencies) != 1 || rec.Today != day {
			t.Fatalf("%s: %+v", c.today, rec)
		}
		g := rec.Currencies[0]
		b := g.Total
		got := fmt.Sprintf("%s %s %s %s %s %s/%d", b.Current, b.Days1To30, b.Days31To60, b.Days61To90, b.Over90, b.Total, g.Invoices)
		if g.Currency != billing.CurrencyGBP || got != c.want || len(g.Customers) != 1 || g.Customers[0].Total.String() != b.Total.String() {
			t.Errorf("%s: %s %s (%d customers), want %s", c.today, g.Currency, got, len(g.Customers), c.want)
		}
		if sum.Currencies[0].Currency != billing.CurrencyGBP || sum.Currencies[0].AmountDue.String() != b.Total.String() {
			t.Errorf("%s: the summary's amount due %s, the receivables' %s", c.today, sum.Currencies[0].AmountDue, b.Total)
		}
	}
}
