package billing

import (
	"fmt"
	"strings"
	"testing"
)

func d(s string) Date { return mustDate(s) }

func mustDate(s string) Date {
	v, err := ParseDate(s)
	if err != nil {
		panic(err)
	}
	return v
}

func renderPeriods(ps []billingPeriod) string {
	var b strings.Builder
	for _, p := range ps {
		f := "1"
		if x := p.factor(); x != nil {
			f = x.String()
		}
		fmt.Fprintf(&b, "%s..%s/%s..%s=%s;", p.Start, p.EndInclusive(), p.FullStart, p.FullEnd.AddDays(-1), f)
	}
	return b.String()
}

func TestPeriodSequence(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name            string
		base            string
		anchor, months  int
		from, to, until string
		want            string
	}{
		{"MonthlyOnAnchor", "2024-01-01", 1, 1, "2024-01-01", "", "2024-03-02",
			"2024-01-01..2024-01-31/2024-01-01..2024-01-31=1;2024-02-01..2024-02-29/2024-02-01..2024-02-29=1;2024-03-01..2024-03-31/2024-03-01..2024-03-31=1;"},
		{"ShortFirstPeriod", "2024-01-15", 1, 1, "2024-01-15", "", "2024-02-01",
			"2024-01-15..2024-01-31/2024-01-01..2024-01-31=0.548387096774;"},
		{"AnchorAfterStartDay", "2024-01-10", 20, 1, "2024-01-10", "", "2024-02-21",
			"2024-01-10..2024-01-19/2023-12-20..2024-01-19=0.322580645161;2024-01-20..2024-02-19/2024-01-20..2024-02-19=1;2024-02-20..2024-03-19/2024-02-20..2024-03-19=1;"},
		{"MonthEndClamp", "2024-01-31", 31, 1, "2024-01-31", "", "2024-05-01",
			"2024-01-31..2024-02-28/2024-01-31..2024-02-28=1;2024-02-29..2024-03-30/2024-02-29..2024-03-30=1;2024-03-31..2024-04-29/2024-03-31..2024-04-29=1;2024-04-30..2024-05-30/2024-04-30..2024-05-30=1;"},
		{"QuarterlyCutByEnd", "2024-01-01", 1, 3, "2024-01-01", "2024-05-16", "2025-01-01",
			"2024-01-01..2024-03-31/2024-01-01..2024-03-31=1;2024-04-01..2024-05-15/2024-04-01..2024-06-30=0.494505494505;"},
		{"HalfYearly", "2024-03-01", 1, 6, "2024-03-01", "", "2024-09-02",
			"2024-03-01..2024-08-31/2024-03-01..2024-08-31=1;2024-09-01..2025-02-28/2024-09-01..2025-02-28=1;"},
		{"YearlyLeapAnchor", "2024-02-29", 29, 12, "2024-02-29", "", "2025-03-01",
			"2024-02-29..2025-02-27/2024-02-29..2025-02-27=1;2025-02-28..2026-02-27/2025-02-28..2026-02-27=1;"},
		{"ContinueFromMidPeriod", "2024-01-01", 1, 1, "2024-02-15", "", "2024-03-02",
			"2024-02-15..2024-02-29/2024-02-01..2024-02-29=0.51724137931;2024-03-01..2024-03-31/2024-03-01..2024-03-31=1;"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			q := periodSequence{base: d(tt.base), anchor: tt.anchor}
			var to Date
			if tt.to != "" {
				to = d(tt.to)
			}
			if got := renderPeriods(q.periods(tt.months, d(tt.from), to, d(tt.until))); got != tt.want {
				t.Errorf("periods\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestSuspendedPeriodsAreSkipped(t *testing.T) {
	t.Parallel()
	end := d("2024-03-10")
	sc := &BillingSchedule{
		StartDate: d("2024-01-01"), RecurrenceDayOfMonth: 1,
		Phases:      []Phase{{PriceIDs: []string{"p"}, StartDate: d("2024-01-01")}},
		Suspensions: []Suspension{{Start: d("2024-01-20"), End: &end}},
	}
	prices := map[string]*Price{"p": {ID: "p", BillingFrequency: FrequencyMonthly, BillingType: BillingTypeInAdvance,
		Structure: PriceStructure{PricingType: PricingFixed}}}
	var got []string
	for _, c := range scheduleCharges(sc, prices, d("2024-05-01")) {
		got = append(got, c.BillingDate.String())
	}
	if want := "2024-01-01 2024-04-01"; strings.Join(got, " ") != want {
		t.Errorf("billing dates %v, want %s (February and March started while suspended)", got, want)
	}
}
