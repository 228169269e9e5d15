package billing_test

// Behaviours a mutation run found no test pinning down (docs/TESTING.md,
// "Mutation testing"): each test here fails when the rule it names is
// broken by a plausible careless edit.

import (
	"fmt"
	"testing"
	"time"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
)

// TestPaymentCapIsTheAmountStillDue: after a first payment, a payment of
// more than what is still due is refused although it is below the gross
// total; exactly what is due is accepted.
func TestPaymentCapIsTheAmountStillDue(t *testing.T) {
	t.Parallel()
	e := newDocEnv(t)
	inv := e.invoice(billing.CurrencyGBP, "")
	e.line(inv.ID, invLine("Fee", "1", "100.00", "0.2")) // 120.00 gross
	e.finalize(inv.ID)
	pay := func(amount string) error {
		_, err := e.svc.RecordPayment(e.ctx, e.acct, inv.ID, billing.PaymentParams{Amount: dec(amount), PaidAt: date("2024-07-30")})
		return err
	}
	if err := pay("100.00"); err != nil {
		t.Fatal(err)
	}
	if err := pay("20.01"); billing.CodeOf(err) != billing.CodeInvalidState {
		t.Errorf("a payment of 20.01 with 20.00 still due: %v, want invalid_state", err)
	}
	if err := pay("20.00"); err != nil {
		t.Errorf("a payment of exactly what is due: %v", err)
	}
	got := must(e.svc.GetInvoice(e.ctx, e.acct, inv.ID)).of(t, "GetInvoice")
	if got.AmountPaid.String() != "120.00" || got.AmountDue.String() != "0.00" || got.PaymentStatus != billing.PaymentStatusPaid {
		t.Errorf("paid %s, due %s, %s", got.AmountPaid, got.AmountDue, got.PaymentStatus)
	}
}

// TestEngineTaxOfReverseChargedCustomers: an engine invoice of a
// REVERSE_CHARGED customer has tax rate 0 on every line, its tax-mapped
// price's included; a separate percentage discount line of a taxed
// customer keeps the tax rate of the price it discounts.
func TestEngineTaxOfReverseChargedCustomers(t *testing.T) {
	t.Parallel()
	f := newSched(t)
	a, b := f.fixed("A", "100.00", billing.CurrencyUSD), f.fixed("B", "50.00", billing.CurrencyUSD)
	tr, err := f.svc.CreateTaxRate(f.ctx, f.account, billing.CreateTaxRateParams{Name: "VAT", Amount: dp("0.2")})
	f.must(err)
	mapTax := func(p *billing.BillingScheduleParams) {
		p.TaxRates = []billing.ScheduleTaxRate{{PriceID: a, TaxRateID: tr.ID}}
	}
	ph := phase("2024-01-01", a, b)
	ph.Discounts = []billing.DiscountParams{{Type: billing.DiscountPercentage, Amount: num("10"), Message: "Offer", SeparateLineItem: true, RestrictToPrices: []string{a}}}
	reverse := f.schedule(f.newCustomer(billing.TaxStatusReverseCharged), "2024-01-01", mapTax, ph)
	wantLines(t, f.renderDue(reverse.ID, "2024-01-01T00:00:00Z"),
		"2024-01-01: A|1|100.00|0|100.00|2024-01-01..2024-01-31; B|1|50.00|0|50.00|2024-01-01..2024-01-31; Offer|1|-10.00|0|-10.00|2024-01-01..2024-01-31;")
	taxed := f.schedule(f.customer, "2024-01-01", mapTax, ph)
	wantLines(t, f.renderDue(taxed.ID, "2024-01-01T00:00:00Z"),
		"2024-01-01: A|1|100.00|0.2|100.00|2024-01-01..2024-01-31; B|1|50.00|0|50.00|2024-01-01..2024-01-31; Offer|1|-10.00|0.2|-10.00|2024-01-01..2024-01-31;")
}

// TestMinimumCountsOnlyItsPrices: a minimum commitment restricted to the
// usage price tops up to its amount from that price's charges alone; the
// fixed price beside it does not count.
func TestMinimumCountsOnlyItsPrices(t *testing.T) {
	t.Parallel()
	f := newSched(t)
	usage, plan := f.apiCalls("0.25"), f.fixed("Plan", "100.00", billing.CurrencyUSD)
	f.events(f.customer, "api_call", ts("2024-01-05T00:00:00Z"), 7)
	ph := phase("2024-01-01", usage, plan)
	ph.Minimums = []billing.MinimumParams{{Amount: num("10"), RestrictToPrices: []string{usage}}}
	sc := f.schedule(f.customer, "2024-01-01", nil, ph)
	wantLines(t, f.renderDue(sc.ID, "2024-02-01T01:00:00Z"),
		"2024-01-01: Plan|1|100.00|0|100.00|2024-01-01..2024-01-31;",
		"2024-02-01: API calls|7|0.25|0|1.75|2024-01-01..2024-01-31; Plan|1|100.00|0|100.00|2024-02-01..2024-02-29;"+
			" Minimum commitment|1|8.25|0|8.25|2024-01-01..2024-01-31;")
}

// TestSeatsInArrearsBillThePeriod: an in-arrears seat price bills the
// seats held during the period (the peak in the period, docs/money.md),
// not the count that starts at the period's end instant.
func TestSeatsInArrearsBillThePeriod(t *testing.T) {
	t.Parallel()
	f := newSched(t)
	pr := f.seatPrice("Seats", f.seatMetric("editor"), billing.BillingTypeInArrears)
	f.seats(f.customer, "editor", "2023-12-20T00:00:00Z", 3)
	f.seats(f.customer, "editor", "2024-02-01T00:00:00Z", 100) // February's
	sc := f.schedule(f.customer, "2024-01-01", nil, phase("2024-01-01", pr))
	wantLines(t, f.renderDue(sc.ID, "2024-02-01T01:00:00Z"), "2024-02-01: Seats|3|10.00|0|30.00|2024-01-01..2024-01-31;")
}

// TestInvoiceNumbersArePerAccount: two accounts both start at INV00001.
func TestInvoiceNumbersArePerAccount(t *testing.T) {
	t.Parallel()
	e := newDocEnv(t)
	first := e.invoice(billing.CurrencyGBP, "")
	e.line(first.ID, invLine("Fee", "1", "1.00", "0"))
	if n := e.finalize(first.ID).InvoiceNumber; n != "INV00001" {
		t.Fatalf("the first account's first number is %q", n)
	}
	other := billingtest.Account(t, e.svc, "other")
	cust := must(e.svc.CreateCustomer(e.ctx, other, billing.CustomerParams{LegalName: "Initech"})).of(t, "CreateCustomer")
	inv := must(e.svc.CreateInvoice(e.ctx, other, billing.InvoiceParams{Currency: billing.CurrencyGBP, CustomerID: cust.ID})).of(t, "CreateInvoice")
	must(e.svc.CreateInvoiceLineItem(e.ctx, other, inv.ID, invLine("Fee", "1", "1.00", "0"))).of(t, "CreateInvoiceLineItem")
	if got := must(e.svc.FinalizeInvoice(e.ctx, other, inv.ID)).of(t, "FinalizeInvoice"); got.InvoiceNumber != "INV00001" {
		t.Errorf("the second account's first number is %q, want INV00001", got.InvoiceNumber)
	}
}

// TestCashGrantsEarliestExpiryFirst: of two expiring CASH grants the one
// that expires first is drawn down first, whatever the order of their
// creation; a grant is still usable on its expiry day and not after.
func TestCashGrantsEarliestExpiryFirst(t *testing.T) {
	t.Parallel()
	e := newDocEnv(t) // the clock is at 2024-07-30
	late := e.grant(cashGrantUntil("Late", "50.00", "2024-12-31"))
	soon := e.grant(cashGrantUntil("Soon", "30.00", "2024-08-31"))
	today := e.grant(cashGrantUntil("Today", "5.00", "2024-07-30"))
	inv := e.finalize(e.engineInvoice(billing.CurrencyUSD, [3]string{"1", "45.00", "0"}).ID)
	lines, applied := e.burndown(inv.ID)
	if fmt.Sprint(lines) != "[Credit applied: Today:-5.00 Credit applied: Soon:-30.00 Credit applied: Late:-10.00]" || applied.String() != "45.00" {
		t.Errorf("burndown %v (%s), want Today, then Soon, then Late", lines, applied)
	}
	if g := e.getGrant(late.ID); g.CurrentBalance.String() != "40.00" {
		t.Errorf("the later grant has %s left, want 40.00", g.CurrentBalance)
	}
	if g := e.getGrant(soon.ID); g.Status != billing.CreditGrantDepleted {
		t.Errorf("the sooner grant is %s", g.Status)
	}
	if g := e.getGrant(today.ID); g.Status != billing.CreditGrantDepleted {
		t.Errorf("the grant expiring today is %s: not usable on its expiry day", g.Status)
	}
	// The next day the grant that expired yesterday is not used.
	e2 := newDocEnv(t)
	yesterday := cashGrantUntil("Yesterday", "5.00", "2024-07-29")
	yesterday.EffectiveDate = date("2024-07-01")
	e2.grant(yesterday)
	inv2 := e2.finalize(e2.engineInvoice(billing.CurrencyUSD, [3]string{"1", "45.00", "0"}).ID)
	if lines, _ := e2.burndown(inv2.ID); len(lines) != 0 {
		t.Errorf("an expired grant was drawn down: %v", lines)
	}
	e.checkCreditInvariants(t)
}

// TestUsageGrantSharedByTwoPrices: two usage prices on one metric draw
// from one USAGE grant smaller than their usage: together they take the
// grant's units once, never more.
func TestUsageGrantSharedByTwoPrices(t *testing.T) {
	t.Parallel()
	f := newSched(t)
	f.clock.Set(time.Date(2024, 2, 2, 0, 0, 0, 0, time.UTC))
	metric := f.metric("call")
	linear := func(name, rate string) string {
		return f.price(name, billing.CurrencyUSD, billing.FrequencyMonthly, billing.BillingTypeInArrears,
			billing.PriceStructure{PricingType: billing.PricingLinear, PricePerUnit: dp(rate), UsageMetricID: metric})
	}
	a, b := linear("Calls A", "1.00"), linear("Calls B", "0.10")
	g, err := f.svc.CreateCreditGrant(f.ctx, f.account, billing.CreditGrantParams{CustomerID: f.customer, Name: "Units",
		CreditUnitType: billing.CreditUnitMetric, MetricID: metric, Amount: dp("30"), EffectiveDate: date("2024-01-01")})
	f.must(err)
	f.events(f.customer, "call", ts("2024-01-10T00:00:00Z"), 20) // each price counts 20 calls: 40 units for a 30-unit grant
	f.schedule(f.customer, "2024-01-01", nil, phase("2024-01-01", a, b))
	inv, err := f.svc.FinalizeInvoice(f.ctx, f.account, f.runOnce(t))
	f.must(err)
	lines, err := f.svc.ListInvoiceLineItems(f.ctx, f.account, inv.ID, billing.LineItemFilter{}, billing.ListParams{Limit: 100})
	f.must(err)
	units := billing.MustDecimal("40") // both prices' calls, less what is billed
	var got []string
	for _, l := range lines.Items {
		got = append(got, fmt.Sprintf("%s|%s|%s", l.Title, l.Quantity, l.NetTotal))
		units = units.Sub(l.Quantity)
	}
	grant, err := f.svc.GetCreditGrant(f.ctx, f.account, g.ID)
	f.must(err)
	if units.String() != "30" || grant.Status != billing.CreditGrantDepleted || grant.CurrentBalance.Sign() != 0 {
		t.Errorf("lines %v took %s units off, grant %s with %s left; want 30 units taken once", got, units, grant.Status, grant.CurrentBalance)
	}
	// The earlier price of the phase draws first: A's 20 calls are free
	// (a fully credited line is left out), B pays for 10 of its 20.
	if fmt.Sprint(got) != "[Calls B|10|1.00]" {
		t.Errorf("lines %v", got)
	}
}

// drawdownStep is an invoice of one line (net at tax) finalized against a
// grant: what it applied (the BURNDOWN lines' gross for free credit,
// creditsApplied for paid credit; "" for nothing), what is then due, and
// what the grant has left.
type drawdownStep struct {
	net, tax           string
	applied, due, left string
}

// TestCashDrawdownFixedExamples is a second, fixed example for rules the
// randomized TestCreditProperty also checks, for both kinds of CASH credit:
// each invoice decrements the grant by exactly what it used; free credit
// is a discount before tax (BURNDOWN lines that take the net and its tax
// off, the grant falling by the net), paid credit is money on account
// after tax (creditsApplied, capped at the invoice's gross total, tax
// included, not its net or the grant); a grant of exactly what the invoice
// needs pays it in full and is depleted at zero.
func TestCashDrawdownFixedExamples(t *testing.T) {
	t.Parallel()
	t.Run("free", func(t *testing.T) {
		t.Parallel()
		checkCashDrawdown(t, false, []drawdownStep{
			{"25.00", "0.2", "30.00", "0.00", "75.00"}, // net 25.00 and its 5.00 tax off; the grant falls by the net
			{"50.00", "0", "50.00", "0.00", "25.00"},   // decremented again
			{"40.00", "0.1", "27.50", "16.50", "0.00"}, // 25.00 of the 40.00 net, with its tax: the rest of the grant
			{"10.00", "0", "", "10.00", "0.00"},        // nothing left
		}, "30.00")
	})
	t.Run("paid", func(t *testing.T) {
		t.Parallel()
		checkCashDrawdown(t, true, []drawdownStep{
			{"25.00", "0.2", "30.00", "0.00", "70.00"}, // gross 30.00: all of it
			{"50.00", "0", "50.00", "0.00", "20.00"},   // decremented again
			{"40.00", "0.1", "20.00", "24.00", "0.00"}, // gross 44.00: the rest of the grant
			{"10.00", "0", "", "10.00", "0.00"},        // nothing left
		}, "36.00")
	})
}

// checkCashDrawdown finalizes the steps' invoices against a grant of
// 100.00 (paid or free), then one invoice of 3 × 10.00 at 20% against a
// grant of exact, which must pay it in full.
func checkCashDrawdown(t *testing.T, paid bool, steps []drawdownStep, exact string) {
	grant := func(name, amount string) billing.CreditGrantParams {
		p := cashGrant(name, amount)
		if paid {
			p.CostOfCredit = dec(amount)
		}
		return p
	}
	e := newDocEnv(t)
	g := e.grant(grant("Prepaid", "100.00"))
	for i, s := range steps {
		inv := e.finalize(e.engineInvoice(billing.CurrencyUSD, [3]string{"1", s.net, s.tax}).ID)
		lines, applied := e.burndown(inv.ID)
		if paid && len(lines) > 0 || !paid && !inv.CreditsApplied.IsZero() {
			t.Errorf("invoice %d: paid %v credit made BURNDOWN lines %v and applied %s after tax", i+1, paid, lines, inv.CreditsApplied)
		}
		got := ""
		switch {
		case paid && !inv.CreditsApplied.IsZero():
			got = inv.CreditsApplied.String()
		case !paid && len(lines) > 0:
			got = applied.String()
		}
		if got != s.applied || inv.AmountDue.String() != s.due {
			t.Errorf("invoice %d: applied %q, due %s; want %q and %s", i+1, got, inv.AmountDue, s.applied, s.due)
		}
		if left := e.getGrant(g.ID).CurrentBalance.String(); left != s.left {
			t.Errorf("after invoice %d the grant has %s, want %s", i+1, left, s.left)
		}
	}
	if st := e.getGrant(g.ID).Status; st != billing.CreditGrantDepleted {
		t.Errorf("the used-up grant is %s", st)
	}
	e2 := newDocEnv(t)
	ex := e2.grant(grant("Exact", exact))
	inv := e2.finalize(e2.engineInvoice(billing.CurrencyUSD, [3]string{"3", "10.00", "0.2"}).ID)
	if inv.AmountDue.String() != "0.00" || inv.PaymentStatus != billing.PaymentStatusPaid {
		t.Errorf("an invoice credited in full: due %s, %s", inv.AmountDue, inv.PaymentStatus)
	}
	if got := e2.getGrant(ex.ID); got.Status != billing.CreditGrantDepleted || got.CurrentBalance.String() != "0.00" {
		t.Errorf("a grant of exactly what the invoice needs: %s with %s", got.Status, got.CurrentBalance)
	}
	e.checkCreditInvariants(t)
	e2.checkCreditInvariants(t)
}

// TestFinalizedCreditNotePrintsItsFrozenTaxStatus: a finalized credit
// note prints the customer's tax status as it was at its finalization
// (the render snapshot), not the customer's current one.
func TestFinalizedCreditNotePrintsItsFrozenTaxStatus(t *testing.T) {
	t.Parallel()
	e := newDocEnv(t)
	setStatus := func(st billing.TaxStatus) {
		t.Helper()
		must(e.svc.UpdateCustomer(e.ctx, e.acct, e.cust.ID, billing.CustomerParams{LegalName: e.cust.LegalName, TaxStatus: st,
			Address: e.cust.Address, Contacts: e.cust.Contacts})).of(t, "UpdateCustomer")
	}
	setStatus(billing.TaxStatusReverseCharged)
	inv := e.finalInvoice("1", "10.00", "0")
	cn := e.creditNote(inv, "1", "5.00", "0")
	must(e.svc.FinalizeCreditNote(e.ctx, e.acct, cn.ID)).of(t, "FinalizeCreditNote")
	setStatus(billing.TaxStatusTaxed)
	d := must(e.svc.PrintableCreditNote(e.ctx, e.acct, cn.ID)).of(t, "PrintableCreditNote")
	if d.CustomerTaxStatus != billing.TaxStatusReverseCharged {
		t.Errorf("the finalized credit note prints tax status %q, want REVERSE_CHARGED as frozen", d.CustomerTaxStatus)
	}
}

// TestUnusedUsageCreditLeavesTheLinesAlone: finalizing an engine invoice
// of a customer whose USAGE credit is for another metric changes none of
// its lines (they keep their ids: nothing is rewritten).
func TestUnusedUsageCreditLeavesTheLinesAlone(t *testing.T) {
	t.Parallel()
	f := newSched(t)
	f.clock.Set(time.Date(2024, 2, 2, 0, 0, 0, 0, time.UTC))
	_, err := f.svc.CreateCreditGrant(f.ctx, f.account, billing.CreditGrantParams{CustomerID: f.customer, Name: "Other units",
		CreditUnitType: billing.CreditUnitMetric, MetricID: f.metric("call"), Amount: dp("30"), EffectiveDate: date("2024-01-01")})
	f.must(err)
	f.events(f.customer, "api_call", ts("2024-01-10T00:00:00Z"), 4)
	f.schedule(f.customer, "2024-01-01", nil, phase("2024-01-01", f.apiCalls("0.25")))
	run, err := f.svc.RunBilling(f.ctx, f.clock.Now())
	f.must(err)
	ids := func(invID string) []string {
		ls, err := f.svc.ListInvoiceLineItems(f.ctx, f.account, invID, billing.LineItemFilter{}, billing.ListParams{Limit: 100})
		f.must(err)
		var out []string
		for _, l := range ls.Items {
			out = append(out, l.ID+" "+l.NetTotal.String())
		}
		return out
	}
	var before, after []string
	for _, id := range run.InvoiceIDs {
		before = append(before, ids(id)...)
		_, err := f.svc.FinalizeInvoice(f.ctx, f.account, id)
		f.must(err)
		after = append(after, ids(id)...)
	}
	if len(before) == 0 || fmt.Sprint(before) != fmt.Sprint(after) {
		t.Errorf("lines before finalizing %v, after %v: want them unchanged", before, after)
	}
}

// TestCompletedScheduleLeavesTheRunnableIndex: once the run has billed a
// schedule's last period and completed it, and the late-usage window of
// its invoices has passed, the engine stops visiting it (it leaves the
// index of runnable schedules).
func TestCompletedScheduleLeavesTheRunnableIndex(t *testing.T) {
	t.Parallel()
	f := newSched(t)
	yes := true
	sc := f.schedule(f.customer, "2024-01-01", func(p *billing.BillingScheduleParams) { p.EndDate, p.AutoIssueInvoices = date("2024-02-29"), &yes },
		phase("2024-01-01", f.fixed("Plan", "10.00", billing.CurrencyUSD)))
	if got := billing.RunnableSchedulesForTest(t, f.svc, f.account); fmt.Sprint(got) != fmt.Sprint([]string{sc.ID}) {
		t.Fatalf("runnable before the run: %v", got)
	}
	r := f.run("2024-03-01T00:00:00Z")
	if r.SchedulesCompleted != 1 {
		t.Fatalf("run %+v", r)
	}
	f.run("2024-04-15T00:00:00Z") // past the late-usage window of February's (issued) invoice
	if got := billing.RunnableSchedulesForTest(t, f.svc, f.account); len(got) != 0 {
		t.Errorf("the completed schedule is still runnable: %v", got)
	}
}

// TestCreditBalancesAreNamed: a USAGE balance is named after its usage
// metric and a CASH balance after its currency, and a balance of grants
// none of which is usable yet is zero in the balance's unit.
func TestCreditBalancesAreNamed(t *testing.T) {
	t.Parallel()
	f := newSched(t)
	metric := f.metric("call")
	_, err := f.svc.CreateCreditGrant(f.ctx, f.account, billing.CreditGrantParams{CustomerID: f.customer, Name: "Units",
		CreditUnitType: billing.CreditUnitMetric, MetricID: metric, Amount: dp("30"), EffectiveDate: date("2024-09-01")})
	f.must(err)
	_, err = f.svc.CreateCreditGrant(f.ctx, f.account, billing.CreditGrantParams{CustomerID: f.customer, Name: "Cash",
		CreditUnitType: billing.CreditUnitCurrency, Currency: billing.CurrencyUSD, Amount: dp("12.50"), EffectiveDate: date("2024-09-01")})
	f.must(err)
	bal, err := f.svc.GetCreditBalances(f.ctx, f.account, f.customer, date("2024-08-01"))
	f.must(err)
	var got []string
	for _, b := range bal.Items {
		got = append(got, fmt.Sprintf("%s %s %q %s", b.Type, b.ID, b.Name, b.Balance))
	}
	want := []string{`CASH USD "USD" 0.00`, fmt.Sprintf(`USAGE %s "metric call" 0`, metric)}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("balances before the grants are effective:\n got %v\nwant %v", got, want)
	}
}

// TestLineRateDisplay: a line keeps the rateDisplay it was given and
// defaults to ABSOLUTE without one.
func TestLineRateDisplay(t *testing.T) {
	t.Parallel()
	e := newDocEnv(t)
	inv := e.invoice(billing.CurrencyGBP, "")
	plain := e.line(inv.ID, invLine("Fee", "1", "10.00", "0"))
	pct := invLine("Share", "1", "0.15", "0")
	pct.RateDisplay = billing.RateDisplayPercentage
	shown := e.line(inv.ID, pct)
	if plain.RateDisplay != billing.RateDisplayAbsolute || shown.RateDisplay != billing.RateDisplayPercentage {
		t.Errorf("rateDisplay %q without one (want ABSOLUTE), %q given PERCENTAGE", plain.RateDisplay, shown.RateDisplay)
	}
}

// TestGraduatedPriceDefaultsItsCalculationMode: a graduated price created
// without usageCalculationMode carries BILLING_PERIOD, the only mode.
func TestGraduatedPriceDefaultsItsCalculationMode(t *testing.T) {
	t.Parallel()
	f := newSched(t)
	p, err := f.svc.CreatePrice(f.ctx, f.account, billing.CreatePriceParams{ProductID: f.product, Name: "Calls", Currency: billing.CurrencyUSD,
		BillingFrequency: billing.FrequencyMonthly, BillingType: billing.BillingTypeInArrears,
		Structure: billing.PriceStructure{PricingType: billing.PricingGraduated, UsageMetricID: f.metric("call"), Tiers: []billing.Tier{
			{UpperBound: dp("10"), Price: billing.MustDecimal("1.00"), Fee: billing.MustDecimal("0")},
			{Price: billing.MustDecimal("0.50"), Fee: billing.MustDecimal("0")},
		}}})
	f.must(err)
	if p.Structure.UsageCalculationMode != billing.UsageCalculationBillingPeriod {
		t.Errorf("usageCalculationMode %q, want BILLING_PERIOD", p.Structure.UsageCalculationMode)
	}
}
