package billing_test

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
)

// grant creates a grant for the env's customer, failing the test on error.
func (e *docEnv) grant(p billing.CreditGrantParams) *billing.CreditGrant {
	e.t.Helper()
	if p.CustomerID == "" {
		p.CustomerID = e.cust.ID
	}
	if p.CreditUnitType == "" {
		p.CreditUnitType = billing.CreditUnitCurrency
	}
	return must(e.svc.CreateCreditGrant(e.ctx, e.acct, p)).of(e.t, "CreateCreditGrant")
}

func cashGrant(name, amount string) billing.CreditGrantParams {
	return billing.CreditGrantParams{Name: name, Currency: billing.CurrencyUSD, Amount: dec(amount)}
}

// cashGrantUntil is cashGrant with expiry as its expiry date.
func cashGrantUntil(name, amount, expiry string) billing.CreditGrantParams {
	p := cashGrant(name, amount)
	p.ExpiryDate = date(expiry)
	return p
}

// engineInvoice stores a DRAFT invoice as the billing engine does, with one
// line per (quantity, rate, taxRate) triple.
func (e *docEnv) engineInvoice(cur billing.Currency, lines ...[3]string) *billing.Invoice {
	e.t.Helper()
	ps := make([]billing.InvoiceLineItemParams, len(lines))
	for i, l := range lines {
		ps[i] = invLine(fmt.Sprintf("Charge %d", i), l[0], l[1], l[2])
	}
	return e.engineDraft(cur, ps)
}

// engineDraft stores a DRAFT invoice of lines for the env's customer, as
// the billing engine does (past the checks of CreateInvoiceLineItem).
func (e *docEnv) engineDraft(cur billing.Currency, lines []billing.InvoiceLineItemParams) *billing.Invoice {
	e.t.Helper()
	return billing.CreateEngineInvoiceForTest(e.t, e.svc, e.acct, billing.InvoiceParams{Currency: cur, CustomerID: e.cust.ID}, lines)
}

// manyLines is n lines of quantity 1 at rate without tax, the i-th (from 1)
// titled title(i).
func manyLines(n int, rate string, title func(i int) string) []billing.InvoiceLineItemParams {
	lines := make([]billing.InvoiceLineItemParams, n)
	for i := range lines {
		lines[i] = invLine(title(i+1), "1", rate, "0")
	}
	return lines
}

func (e *docEnv) finalize(id string) *billing.Invoice {
	e.t.Helper()
	return must(e.svc.FinalizeInvoice(e.ctx, e.acct, id)).of(e.t, "FinalizeInvoice")
}

func (e *docEnv) getGrant(id string) *billing.CreditGrant {
	e.t.Helper()
	return must(e.svc.GetCreditGrant(e.ctx, e.acct, id)).of(e.t, "GetCreditGrant")
}

func (e *docEnv) ledger(grantID string) []billing.CreditTransaction {
	e.t.Helper()
	return pages(e.t, func(p billing.ListParams) (billing.Page[billing.CreditTransaction], error) {
		return e.svc.ListCreditTransactions(e.ctx, e.acct, grantID, "", p)
	})
}

// burndown returns the BURNDOWN lines of an invoice as "grant:amount".
func (e *docEnv) burndown(invID string) (lines []string, total billing.Decimal) {
	e.t.Helper()
	total = billing.DecimalFromInt(0)
	for _, l := range allInvoiceLines(e.t.(*testing.T), e, invID) {
		if l.RevenueClassification == billing.RevenueClassificationBurndown {
			lines = append(lines, l.Title+":"+l.GrossTotal.String())
			total = total.Sub(l.GrossTotal)
			if l.CreditGrantID == "" || l.Quantity.String() != "1" {
				e.t.Errorf("burndown line %+v", l)
			}
		}
	}
	return lines, total
}

// checkCreditInvariants checks every grant of the account: a balance never
// negative and equal to the sum of its transactions, a status that agrees
// with it, and the journal balanced per source.
func (e *docEnv) checkCreditInvariants(t *testing.T) {
	t.Helper()
	grants := pages(t, func(p billing.ListParams) (billing.Page[billing.CreditGrant], error) {
		return e.svc.ListCreditGrants(e.ctx, e.acct, billing.CreditGrantFilter{}, p)
	})
	for _, g := range grants {
		if g.CurrentBalance.Sign() < 0 {
			t.Errorf("grant %s: balance %s", g.Name, g.CurrentBalance)
		}
		sum := billing.DecimalFromInt(0)
		for _, tx := range e.ledger(g.ID) {
			sum = sum.Add(tx.Amount)
		}
		if sum.Cmp(g.CurrentBalance) != 0 {
			t.Errorf("grant %s: transactions sum to %s, balance %s", g.Name, sum, g.CurrentBalance)
		}
		switch g.Status {
		case billing.CreditGrantActive:
			if g.CurrentBalance.Sign() == 0 {
				t.Errorf("grant %s: ACTIVE with nothing left", g.Name)
			}
		default:
			if g.CurrentBalance.Sign() != 0 {
				t.Errorf("grant %s: %s with %s left", g.Name, g.Status, g.CurrentBalance)
			}
		}
	}
	entries := pages(t, func(p billing.ListParams) (billing.Page[billing.JournalEntry], error) {
		return e.svc.ListJournalEntries(e.ctx, e.acct, billing.JournalFilter{}, p)
	})
	bySource := map[string]billing.Decimal{}
	for _, je := range entries {
		d := bySource[je.SourceID]
		if d == (billing.Decimal{}) {
			d = billing.DecimalFromInt(0)
		}
		if (je.Debit.Sign() == 0) == (je.Credit.Sign() == 0) || je.Debit.Sign() < 0 || je.Credit.Sign() < 0 {
			t.Errorf("journal entry %+v has not exactly one positive side", je)
		}
		bySource[je.SourceID] = d.Add(je.Debit).Sub(je.Credit)
	}
	for src, d := range bySource {
		if d.Sign() != 0 {
			t.Errorf("journal of %s does not balance: debits - credits = %s", src, d)
		}
	}
}

// Long on purpose: a table of cases, one line each; its length is the cases, not logic.
func TestCreditGrantValidation(t *testing.T) {
	t.Parallel()
	e := newDocEnv(t)
	metric, err := e.svc.CreateUsageMetric(e.ctx, e.acct, billing.CreateUsageMetricParams{UsageMetricParams: billing.UsageMetricParams{
		Name: "calls", MetricType: billing.MetricTypeSimple, EventType: "call", AggregationType: billing.AggregationCount}})
	if err != nil {
		t.Fatal(err)
	}
	ok := billing.CreditGrantParams{CustomerID: e.cust.ID, Name: "Prepaid", CreditUnitType: billing.CreditUnitCurrency,
		Currency: billing.CurrencyUSD, Amount: dec("10.00")}
	refuseFields(t, func() billing.CreditGrantParams { return ok }, func(p billing.CreditGrantParams) error {
		return errOf(e.svc.CreateCreditGrant(e.ctx, e.acct, p))
	}, []fieldCase[billing.CreditGrantParams]{
		{"Empty", func(p *billing.CreditGrantParams) { *p = billing.CreditGrantParams{} },
			[]string{"name", "creditUnitType", "amount", "customerId"}},
		{"UnknownCustomer", func(p *billing.CreditGrantParams) { p.CustomerID = "nope" }, []string{"customerId"}},
		{"BadUnitType", func(p *billing.CreditGrantParams) { p.CreditUnitType = "GOLD" }, []string{"creditUnitType"}},
		{"NoCurrency", func(p *billing.CreditGrantParams) { p.Currency = "" }, []string{"currency"}},
		{"ZeroAmount", func(p *billing.CreditGrantParams) { p.Amount = dec("0") }, []string{"amount"}},
		{"NegativeAmount", func(p *billing.CreditGrantParams) { p.Amount = dec("-1") }, []string{"amount"}},
		{"TooManyDigits", func(p *billing.CreditGrantParams) { p.Amount = dec("1.001") }, []string{"amount"}},
		{"CashWithMetric", func(p *billing.CreditGrantParams) { p.MetricID = metric.ID }, []string{"metricId"}},
		{"MetricWithoutID", func(p *billing.CreditGrantParams) {
			p.CreditUnitType, p.Currency = billing.CreditUnitMetric, ""
		}, []string{"metricId"}},
		{"UnknownMetric", func(p *billing.CreditGrantParams) {
			p.CreditUnitType, p.Currency, p.MetricID = billing.CreditUnitMetric, "", "nope"
		}, []string{"metricId"}},
		{"UsageCostWithoutCurrency", func(p *billing.CreditGrantParams) {
			p.CreditUnitType, p.Currency, p.MetricID, p.CostOfCredit = billing.CreditUnitMetric, "", metric.ID, dec("5")
		}, []string{"currency"}},
		{"NegativeCost", func(p *billing.CreditGrantParams) { p.CostOfCredit = dec("-5") }, []string{"costOfCredit"}},
		{"InvoiceWithoutCost", func(p *billing.CreditGrantParams) { p.CreateInvoice = true }, []string{"createInvoice"}},
		{"UnknownTaxRate", func(p *billing.CreditGrantParams) { p.CostOfCredit, p.TaxRateID = dec("5"), "nope" }, []string{"taxRateId"}},
		{"ExpiryBeforeEffective", func(p *billing.CreditGrantParams) {
			p.EffectiveDate, p.ExpiryDate = date("2024-08-01"), date("2024-07-31")
		}, []string{"expiryDate"}},
		{"DatesOutOfBounds", func(p *billing.CreditGrantParams) {
			p.EffectiveDate, p.ExpiryDate = &billing.Date{Year: 1999, Month: 12, Day: 31}, &billing.Date{Year: 2200, Month: 1, Day: 1}
		}, []string{"effectiveDate", "expiryDate"}},
		{"ExpiryBeforeToday", func(p *billing.CreditGrantParams) { p.ExpiryDate = date("2024-07-01") }, []string{"expiryDate"}},
	})
	listsNothing(t, e.svc.ListCreditGrants, e.acct, "refused grants were stored")
}

// TestCreditDrawdown checks the order grants are applied in, the lines,
// the amounts, the ledger, creditBalances and the journal of one engine
// invoice.
//
// Long on purpose: one scenario walked in order; each step starts from the state the previous steps
// left, so pieces would repeat the set-up.
func TestCreditDrawdown(t *testing.T) {
	t.Parallel()
	e := newDocEnv(t)
	a := e.grant(cashGrant("A", "30.00"))
	bg := e.grant(cashGrantUntil("B", "20.00", "2024-12-31"))
	c := cashGrant("C", "50.00")
	c.EffectiveDate = date("2024-09-01") // not yet effective
	cg := e.grant(c)
	gbp := e.grant(billing.CreditGrantParams{Name: "Pounds", Currency: billing.CurrencyGBP, Amount: dec("5.00")})

	inv := e.engineInvoice(billing.CurrencyUSD, [3]string{"1", "50.00", "0.2"}) // 60.00 gross
	inv = e.finalize(inv.ID)
	// Free credit is a discount before tax: B (expires first), then A,
	// at the 20% they offset.
	lines, applied := e.burndown(inv.ID)
	if fmt.Sprint(lines) != "[Credit applied: B:-24.00 Credit applied: A:-36.00]" || applied.String() != "60.00" {
		t.Errorf("burndown lines %v (%s)", lines, applied)
	}
	if inv.NetTotal.String() != "0.00" || inv.TotalTax.String() != "0.00" || inv.GrossTotal.String() != "0.00" ||
		inv.AmountDue.String() != "0.00" || inv.PaymentStatus != billing.PaymentStatusPaid {
		t.Errorf("invoice net %s tax %s gross %s due %s %s", inv.NetTotal, inv.TotalTax, inv.GrossTotal, inv.AmountDue, inv.PaymentStatus)
	}
	if inv.CreditBalances != "Remaining credit: 5.00 GBP, 0.00 USD" {
		t.Errorf("creditBalances %q", inv.CreditBalances)
	}
	for _, g := range []*billing.CreditGrant{a, bg} {
		got := e.getGrant(g.ID)
		l := e.ledger(g.ID)
		if got.Status != billing.CreditGrantDepleted || len(l) != 2 || l[1].Type != billing.CreditTxConsumption ||
			l[1].InvoiceID != inv.ID || l[1].Amount.String() != "-"+g.OriginalAmount.String() {
			t.Errorf("grant %s: %s, ledger %+v", g.Name, got.Status, l)
		}
	}
	if got := e.getGrant(cg.ID); got.CurrentBalance.String() != "50.00" {
		t.Errorf("a grant not yet effective was used: %s", got.CurrentBalance)
	}
	if got := e.getGrant(gbp.ID); got.CurrentBalance.String() != "5.00" {
		t.Errorf("a grant of another currency was used: %s", got.CurrentBalance)
	}
	// The invoice's journal books its discounted lines; the free grant's
	// consumption books the discount as promotional expense against
	// revenue.
	entries := pages(t, func(p billing.ListParams) (billing.Page[billing.JournalEntry], error) {
		return e.svc.ListJournalEntries(e.ctx, e.acct, billing.JournalFilter{SourceID: a.ID}, p)
	})
	if len(entries) != 2 || entries[0].Account != billing.LedgerPromotionalExpense || entries[0].Debit.String() != "30.00" ||
		entries[1].Account != billing.LedgerRevenue || entries[1].Credit.String() != "30.00" {
		t.Errorf("journal of grant A: %+v", entries)
	}
	e.checkCreditInvariants(t)

	bal, err := e.svc.GetCreditBalances(e.ctx, e.acct, e.cust.ID, date("2024-09-01"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, b := range bal.Items {
		got = append(got, fmt.Sprintf("%s %s %s %d/%d", b.Type, b.ID, b.Balance, len(b.Grants), len(b.Transactions)))
	}
	if fmt.Sprint(got) != "[CASH GBP 5.00 1/1 CASH USD 50.00 3/5]" {
		t.Errorf("balances on 2024-09-01: %v", got)
	}
	// A manual invoice is left alone unless credit is asked for.
	manual := e.invoice(billing.CurrencyGBP, "")
	e.line(manual.ID, invLine("Fee", "1", "3.00", "0"))
	if m := e.finalize(manual.ID); m.AmountDue.String() != "3.00" {
		t.Errorf("manual invoice paid with credit: due %s", m.AmountDue)
	}
	manual = e.invoice(billing.CurrencyGBP, "")
	e.line(manual.ID, invLine("Fee", "1", "3.00", "0"))
	// ApplyCredits leaves the draft a draft; applying again gives the
	// credit back and takes it again (the balance moves once).
	for range 2 {
		m, err := e.svc.ApplyCredits(e.ctx, e.acct, manual.ID)
		if err != nil || m.Status != billing.StatusDraft || m.GrossTotal.String() != "0.00" || m.AmountDue.String() != "0.00" {
			t.Fatalf("ApplyCredits: %+v, %v", m, err)
		}
	}
	if m := e.finalize(manual.ID); m.PaymentStatus != billing.PaymentStatusPaid {
		t.Errorf("finalized after ApplyCredits: %s", m.PaymentStatus)
	}
	if _, err := e.svc.ApplyCredits(e.ctx, e.acct, manual.ID); billing.CodeOf(err) != billing.CodeInvalidState {
		t.Errorf("ApplyCredits on a FINAL invoice with nothing due: %v", err)
	}
	if g := e.getGrant(gbp.ID); g.CurrentBalance.String() != "2.00" {
		t.Errorf("GBP grant after apply: %s", g.CurrentBalance)
	}
	e.checkCreditInvariants(t)
}

// TestCreditGrantStateTable runs every grant operation in every grant
// status: allowed ones end in the right status with the right ledger,
// refused ones answer invalid_state and change nothing.
//
// Long on purpose: a state table: one row per operation, read as one table against every state.
func TestCreditGrantStateTable(t *testing.T) {
	t.Parallel()
	states := []billing.CreditGrantStatus{billing.CreditGrantActive, billing.CreditGrantDepleted, billing.CreditGrantExpired, billing.CreditGrantVoided}
	// inState returns a grant of 10.00 USD (expiring 2024-08-10) in st.
	inState := func(t *testing.T, e *docEnv, st billing.CreditGrantStatus) *billing.CreditGrant {
		g := e.grant(cashGrantUntil("G", "10.00", "2024-08-10"))
		switch st {
		case billing.CreditGrantDepleted:
			e.finalize(e.engineInvoice(billing.CurrencyUSD, [3]string{"1", "10.00", "0"}).ID)
		case billing.CreditGrantExpired:
			e.clock.Set(time.Date(2024, 8, 11, 0, 0, 0, 0, time.UTC))
			if run, err := e.svc.RunBilling(e.ctx, e.clock.Now()); err != nil || run.CreditGrantsExpired != 1 {
				t.Fatalf("RunBilling: %+v %v", run, err)
			}
		case billing.CreditGrantVoided:
			if _, err := e.svc.VoidCreditGrant(e.ctx, e.acct, g.ID); err != nil {
				t.Fatal(err)
			}
		}
		g = e.getGrant(g.ID)
		if g.Status != st {
			t.Fatalf("fixture in %s, want %s", g.Status, st)
		}
		return g
	}
	ops := []struct {
		name    string
		allowed []billing.CreditGrantStatus
		run     func(e *docEnv, g *billing.CreditGrant) error
		want    billing.CreditGrantStatus
		ledger  string // the types of the transactions it adds
	}{
		{"Void", []billing.CreditGrantStatus{billing.CreditGrantActive, billing.CreditGrantDepleted},
			func(e *docEnv, g *billing.CreditGrant) error {
				_, err := e.svc.VoidCreditGrant(e.ctx, e.acct, g.ID)
				return err
			}, billing.CreditGrantVoided, "VOID"},
		{"Apply", []billing.CreditGrantStatus{billing.CreditGrantActive},
			func(e *docEnv, g *billing.CreditGrant) error {
				inv := e.finalize(e.engineInvoice(billing.CurrencyUSD, [3]string{"1", "4.00", "0"}).ID)
				if _, applied := e.burndown(inv.ID); applied.IsZero() {
					return billing.Errorf(billing.CodeInvalidState, "nothing applied")
				}
				return nil
			}, billing.CreditGrantActive, "CONSUMPTION"},
		{"Expire", []billing.CreditGrantStatus{billing.CreditGrantActive},
			func(e *docEnv, g *billing.CreditGrant) error {
				e.clock.Set(time.Date(2024, 8, 12, 0, 0, 0, 0, time.UTC))
				run, err := e.svc.RunBilling(e.ctx, e.clock.Now())
				if err == nil && run.CreditGrantsExpired == 0 {
					return billing.Errorf(billing.CodeInvalidState, "nothing expired")
				}
				return err
			}, billing.CreditGrantExpired, "EXPIRY"},
	}
	for _, op := range ops {
		for _, st := range states {
			parallelOn(t, op.name+"/"+string(st), newDocEnv, func(t *testing.T, e *docEnv) {
				g := inState(t, e, st)
				before := jsonOf(t, g) + fmt.Sprint(len(e.ledger(g.ID)))
				err := op.run(e, g)
				after := e.getGrant(g.ID)
				l := e.ledger(g.ID)
				if !contains(op.allowed, st) {
					if billing.CodeOf(err) != billing.CodeInvalidState {
						t.Fatalf("%s on %s: %v", op.name, st, err)
					}
					if got := jsonOf(t, after) + fmt.Sprint(len(l)); got != before {
						t.Errorf("refused %s changed the grant:\n%s\n%s", op.name, before, got)
					}
					return
				}
				if err != nil {
					t.Fatalf("%s on %s: %v", op.name, st, err)
				}
				last := l[len(l)-1]
				if after.Status != op.want || string(last.Type) != op.ledger {
					t.Errorf("%s on %s: status %s, last transaction %+v", op.name, st, after.Status, last)
				}
				e.checkCreditInvariants(t)
			})
		}
	}
}

func contains[T comparable](s []T, v T) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// TestCreditProperty runs random documents and credits (free and paid
// grants, engine and manual invoices, credit applied to drafts and to
// issued invoices, drafts changed after it, payments, credit notes, voids,
// expiries), in both rounding modes, and checks after every step
// (checkDocumentMoney): the tax of each rate is the sum of that rate's
// lines and free credit never takes a rate below zero; amountDue is
// grossTotal − creditsApplied − amountCredited − amountPaid, never below
// zero, and 0 when VOIDED; every grant's balance fell by exactly what the
// live invoices hold of it; the journal balances per document; balances
// are never negative. CREDIT_SEED replays a run.
//
// Long on purpose: a property test: the generator and its operations read together.
func TestCreditProperty(t *testing.T) {
	t.Parallel()
	for _, mode := range []billing.Rounding{billing.RoundHalfUp, billing.RoundHalfEven} {
		t.Run(fmt.Sprint(mode), func(t *testing.T) {
			t.Parallel()
			seed := billingtest.Seed(t, "CREDIT_SEED")
			rng := rand.New(rand.NewPCG(seed, 7))
			e := newDocEnv(t, billingtest.WithConfig(billing.Config{Rounding: mode}))
			amount := func(max int) string { return fmt.Sprintf("%d.%02d", rng.IntN(max), rng.IntN(100)) }
			rate := func() string { return fmt.Sprintf("%d.%03d", rng.IntN(40), rng.IntN(1000)) } // ties to round
			taxRate := func() string { return []string{"0", "0.07", "0.1", "0.19", "0.2"}[rng.IntN(5)] }
			var invoices, drafts, grants []string
			tally := map[string]int{}
			for step := range 120 {
				today := billing.DateOf(e.clock.Now())
				op := rng.IntN(12)
				switch {
				case op < 2:
					p := cashGrant(fmt.Sprintf("g%d", step), "0.01")
					if p.Amount = dec(amount(80)); p.Amount.Sign() == 0 {
						p.Amount = dec("0.01")
					}
					if rng.IntN(2) == 0 { // paid: money on account
						p.CostOfCredit = p.Amount
					}
					if rng.IntN(2) == 0 {
						p.ExpiryDate = date(today.AddDays(rng.IntN(15)).String())
					}
					p.EffectiveDate = date(today.AddDays(rng.IntN(10) - 7).String())
					if p.ExpiryDate != nil && p.ExpiryDate.Before(*p.EffectiveDate) {
						p.ExpiryDate = p.EffectiveDate
					}
					grants = append(grants, e.grant(p).ID)
				case op < 4: // an engine invoice, finalized with credit
					lines := make([][3]string, 1+rng.IntN(3))
					for i := range lines {
						lines[i] = [3]string{strconv.Itoa(1 + rng.IntN(3)), rate(), taxRate()}
					}
					invoices = append(invoices, e.finalize(e.engineInvoice(billing.CurrencyUSD, lines...).ID).ID)
				case op < 6: // a manual draft, maybe given credit
					inv := e.invoice(billing.CurrencyUSD, "")
					for range 1 + rng.IntN(3) {
						e.line(inv.ID, invLine("Fee", strconv.Itoa(1+rng.IntN(2)), rate(), taxRate()))
					}
					if rng.IntN(3) > 0 {
						must(e.svc.ApplyCredits(e.ctx, e.acct, inv.ID)).of(t, "ApplyCredits")
					}
					drafts = append(drafts, inv.ID)
				case op == 6 && len(drafts) > 0: // a draft changes, is finalized or deleted
					i := rng.IntN(len(drafts))
					id := drafts[i]
					if e.getInvoice(id).Status == billing.StatusVoided {
						drafts = append(drafts[:i], drafts[i+1:]...)
						break
					}
					sub := rng.IntN(3)
					switch sub {
					case 0:
						e.line(id, invLine("More", "1", rate(), taxRate()))
					case 1:
						e.finalize(id)
						invoices = append(invoices, id)
						drafts = append(drafts[:i], drafts[i+1:]...)
					default:
						if err := e.svc.DeleteInvoice(e.ctx, e.acct, id); err != nil {
							t.Fatalf("step %d: DeleteInvoice: %v", step, err)
						}
						drafts = append(drafts[:i], drafts[i+1:]...)
					}
				case op == 7 && len(invoices) > 0: // money after issue: credit, a payment, a credit note
					inv := e.getInvoice(invoices[rng.IntN(len(invoices))])
					if inv.Status == billing.StatusVoided || inv.AmountDue.Sign() <= 0 {
						break
					}
					switch rng.IntN(3) {
					case 0:
						must(e.svc.ApplyCredits(e.ctx, e.acct, inv.ID)).of(t, "ApplyCredits on an issued invoice")
					case 1:
						must(e.svc.RecordPayment(e.ctx, e.acct, inv.ID, billing.PaymentParams{Amount: dec("0.01"), PaidAt: &today})).of(t, "RecordPayment")
					default:
						cn := e.creditNote(inv, "1", "0.01", "0")
						if rng.IntN(2) == 0 {
							must(e.svc.UpdateCreditNote(e.ctx, e.acct, cn.ID, billing.CreditNoteUpdateParams{
								Settings: billing.Some(billing.CreditNoteSettings{GenerateCashCreditGrant: billing.CashCreditGrantEnabled})})).of(t, "UpdateCreditNote")
						}
						must(e.svc.FinalizeCreditNote(e.ctx, e.acct, cn.ID)).of(t, "FinalizeCreditNote")
					}
				case op == 8 && len(invoices)+len(drafts) > 0:
					all := append(append([]string{}, invoices...), drafts...)
					if _, err := e.svc.VoidInvoice(e.ctx, e.acct, all[rng.IntN(len(all))]); err != nil && billing.CodeOf(err) != billing.CodeInvalidState {
						t.Fatalf("step %d: VoidInvoice: %v", step, err)
					}
				case op == 9 && len(grants) > 0:
					_, err := e.svc.VoidCreditGrant(e.ctx, e.acct, grants[rng.IntN(len(grants))])
					if err != nil && billing.CodeOf(err) != billing.CodeInvalidState {
						t.Fatalf("step %d: VoidCreditGrant: %v", step, err)
					}
				default:
					e.clock.Advance(time.Duration(1+rng.IntN(6)) * 24 * time.Hour)
					if _, err := e.svc.RunBilling(e.ctx, e.clock.Now()); err != nil {
						t.Fatalf("step %d: RunBilling: %v", step, err)
					}
				}
				e.checkDocumentMoney(t, tally)
				e.checkCreditInvariants(t)
				if t.Failed() {
					t.Fatalf("after step %d", step)
				}
			}
			t.Logf("applied: %v", tally)
			if tally["free"] == 0 || tally["on account"] == 0 {
				t.Errorf("the run applied no free or no paid credit: %v", tally)
			}
		})
	}
}

// checkDocumentMoney checks every invoice of the account and every grant
// against the documents (TestCreditProperty), counting into tally the
// kinds of credit it finds applied.
func (e *docEnv) checkDocumentMoney(t *testing.T, tally map[string]int) {
	t.Helper()
	held := map[string]billing.Decimal{} // grant id → what live invoices hold of it
	add := func(g string, d billing.Decimal) { held[g] = held[g].Add(d) }
	invs := pages(t, func(p billing.ListParams) (billing.Page[billing.Invoice], error) {
		return e.svc.ListInvoices(e.ctx, e.acct, billing.InvoiceFilter{}, p)
	})
	for _, inv := range invs {
		e.checkInvoiceMoney(t, inv, add, tally)
	}
	grants := pages(t, func(p billing.ListParams) (billing.Page[billing.CreditGrant], error) {
		return e.svc.ListCreditGrants(e.ctx, e.acct, billing.CreditGrantFilter{}, p)
	})
	for _, g := range grants {
		used := billing.DecimalFromInt(0)
		for _, tx := range e.ledger(g.ID) {
			if tx.Type == billing.CreditTxConsumption || tx.Type == billing.CreditTxReversal {
				used = used.Sub(tx.Amount)
			}
		}
		if used.Cmp(held[g.ID]) != 0 {
			t.Errorf("grant %s: its balance fell by %s through invoices, the invoices hold %s of it", g.Name, used, held[g.ID])
		}
	}
}

// checkInvoiceMoney checks one invoice (checkDocumentMoney), passing to
// hold what it holds of each grant.
func (e *docEnv) checkInvoiceMoney(t *testing.T, inv billing.Invoice, hold func(grant string, d billing.Decimal), tally map[string]int) {
	t.Helper()
	net, tax, count := map[string]billing.Decimal{}, map[string]billing.Decimal{}, map[string]int64{}
	supplied := map[string]bool{}
	sumTax := billing.DecimalFromInt(0)
	for _, l := range allInvoiceLines(t, e, inv.ID) {
		k := l.TaxRate.String()
		net[k], tax[k], sumTax = net[k].Add(l.NetTotal), tax[k].Add(l.TotalTax), sumTax.Add(l.TotalTax)
		count[k]++
		if l.RevenueClassification == billing.RevenueClassificationBurndown && l.CreditGrantID != "" {
			if inv.Status != billing.StatusVoided {
				hold(l.CreditGrantID, l.NetTotal.Neg())
			}
			tally["free"]++
			if !supplied[k] {
				t.Errorf("invoice %s: free credit at %s, a rate none of its earlier lines has", inv.ID, k)
			}
		} else {
			supplied[k] = true
		}
	}
	// Each rate's row of the tax summary (the sum of that rate's lines)
	// is its rate times its base, but for a cent of rounding per line;
	// free credit takes neither below zero.
	for k, n := range net {
		drift := tax[k].Sub(n.Mul(billing.MustDecimal(k))).Abs()
		if n.Sign() < 0 || tax[k].Sign() < 0 || drift.Cmp(billing.MustDecimal("0.01").Mul(billing.DecimalFromInt(count[k]))) > 0 {
			t.Errorf("invoice %s: rate %s has net %s, tax %s (%d lines)", inv.ID, k, n, tax[k], count[k])
		}
	}
	if sumTax.Cmp(inv.TotalTax) != 0 {
		t.Errorf("invoice %s: lines' tax %s, totalTax %s", inv.ID, sumTax, inv.TotalTax)
	}
	applied := billing.DecimalFromInt(0)
	for _, a := range inv.CreditApplications {
		applied = applied.Add(a.Amount)
		hold(a.CreditGrantID, a.Amount)
		tally["on account"]++
	}
	if applied.Cmp(inv.CreditsApplied) != 0 {
		t.Errorf("invoice %s: applications %s, creditsApplied %s", inv.ID, applied, inv.CreditsApplied)
	}
	want := inv.GrossTotal.Sub(inv.CreditsApplied).Sub(inv.AmountCredited).Sub(inv.AmountPaid)
	if inv.GrossTotal.Sub(inv.CreditsApplied).Sub(inv.AmountPaid).Sign() < 0 {
		t.Errorf("invoice %s: credit and payments exceed its total: %+v", inv.ID, inv)
	}
	if want.Sign() < 0 || inv.Status == billing.StatusVoided {
		want = billing.DecimalFromInt(0)
	}
	if inv.AmountDue.Cmp(want) != 0 {
		t.Errorf("invoice %s (%s): amountDue %s, want %s (gross %s − credit %s − credited %s − paid %s)", inv.ID, inv.Status,
			inv.AmountDue, want, inv.GrossTotal, inv.CreditsApplied, inv.AmountCredited, inv.AmountPaid)
	}
}

// TestCreditConcurrentConsumption races two billing runs (whose invoices
// are issued at once) and a manual application on one customer with one
// grant: every unit is consumed once, whoever wins. On bbolt, or on
// PostgreSQL under BILLINGD_TEST_POSTGRES (where a transaction function may
// run again after a serialization failure).
//
// Long on purpose: the set-up, the concurrent run and the checks of its
// outcome belong together.
func TestCreditConcurrentConsumption(t *testing.T) {
	t.Parallel()
	for round := range 3 {
		t.Run(fmt.Sprint(round), func(t *testing.T) {
			t.Parallel()
			f := newSched(t, billingtest.WithStore(billingtest.DurableStore(t)))
			g, err := f.svc.CreateCreditGrant(f.ctx, f.account, billing.CreditGrantParams{
				CustomerID: f.customer, Name: "Prepaid", CreditUnitType: billing.CreditUnitCurrency,
				Currency: billing.CurrencyUSD, Amount: dec("100.00"), EffectiveDate: date("2024-01-01")})
			f.must(err)
			yes := true
			// Three monthly invoices of 60.00 (May, June, July), issued at once.
			f.schedule(f.customer, "2024-05-01", func(p *billing.BillingScheduleParams) { p.AutoIssueInvoices = &yes },
				phase("2024-05-01", f.fixed("Plan", "60.00", billing.CurrencyUSD)))
			manual, err := f.svc.CreateInvoice(f.ctx, f.account, billing.InvoiceParams{Currency: billing.CurrencyUSD, CustomerID: f.customer})
			f.must(err)
			_, err = f.svc.CreateInvoiceLineItem(f.ctx, f.account, manual.ID, invLine("Extra", "1", "60.00", "0"))
			f.must(err)

			var wg sync.WaitGroup
			errs := make(chan error, 3)
			for range 2 {
				wg.Go(func() {
					_, err := f.svc.RunBilling(f.ctx, f.clock.Now())
					errs <- err
				})
			}
			wg.Go(func() {
				_, err := f.svc.ApplyCredits(f.ctx, f.account, manual.ID)
				errs <- err
			})
			wg.Wait()
			close(errs)
			for err := range errs {
				f.must(err)
			}
			invs := pages(t, func(p billing.ListParams) (billing.Page[billing.Invoice], error) {
				return f.svc.ListInvoices(f.ctx, f.account, billing.InvoiceFilter{}, p)
			})
			if len(invs) != 4 {
				t.Fatalf("%d invoices, want 3 engine invoices and the manual one", len(invs))
			}
			onLines := billing.DecimalFromInt(0)
			due := billing.DecimalFromInt(0)
			for _, inv := range invs {
				lines, err := f.svc.ListInvoiceLineItems(f.ctx, f.account, inv.ID, billing.LineItemFilter{}, billing.ListParams{Limit: 100})
				f.must(err)
				for _, l := range lines.Items {
					if l.CreditGrantID == g.ID {
						onLines = onLines.Sub(l.GrossTotal)
					}
				}
				due = due.Add(inv.AmountDue)
			}
			txs, err := f.svc.ListCreditTransactions(f.ctx, f.account, g.ID, "", billing.ListParams{Limit: 100})
			f.must(err)
			consumed := billing.DecimalFromInt(0)
			for _, tx := range txs.Items {
				if tx.Type == billing.CreditTxConsumption {
					consumed = consumed.Sub(tx.Amount)
				}
			}
			got, err := f.svc.GetCreditGrant(f.ctx, f.account, g.ID)
			f.must(err)
			if onLines.String() != "100.00" || consumed.String() != "100.00" || got.CurrentBalance.String() != "0.00" || due.String() != "140.00" {
				t.Errorf("on lines %s, consumed %s, balance %s, due %s; want 100.00, 100.00, 0.00, 140.00", onLines, consumed, got.CurrentBalance, due)
			}
		})
	}
}

// TestCreditNoteGeneratesGrantOnce finalizes a credit note with
// generateCashCreditGrant ENABLED through every path: one grant of its
// gross total, linked both ways, the invoice's amount due unchanged, and
// the grant pays the next engine invoice.
//
// Long on purpose: one scenario walked in order; each step starts from the state the previous steps
// left, so pieces would repeat the set-up.
func TestCreditNoteGeneratesGrantOnce(t *testing.T) {
	t.Parallel()
	e := newDocEnv(t)
	inv := e.finalInvoice("1", "100.00", "0.2") // GBP 120.00
	cn := e.creditNote(inv, "1", "10.00", "0.2")
	if cn.Settings.GenerateCashCreditGrant != billing.CashCreditGrantDisabled {
		t.Errorf("default settings %+v", cn.Settings)
	}
	cn, err := e.svc.UpdateCreditNote(e.ctx, e.acct, cn.ID, billing.CreditNoteUpdateParams{
		Settings: billing.Some(billing.CreditNoteSettings{GenerateCashCreditGrant: billing.CashCreditGrantEnabled})})
	if err != nil {
		t.Fatal(err)
	}
	if cn, err = e.svc.MarkCreditNoteSent(e.ctx, e.acct, cn.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.MarkCreditNoteSent(e.ctx, e.acct, cn.ID); err != nil { // SENT: unchanged
		t.Fatal(err)
	}
	if _, err := e.svc.SendCreditNote(e.ctx, e.acct, cn.ID); billing.CodeOf(err) != billing.CodeInvalidState {
		t.Errorf("send of a SENT credit note: %v", err)
	}
	if _, err := e.svc.FinalizeCreditNote(e.ctx, e.acct, cn.ID); billing.CodeOf(err) != billing.CodeInvalidState {
		t.Errorf("finalize of a SENT credit note: %v", err)
	}
	grants, err := e.svc.ListCustomerCreditGrants(e.ctx, e.acct, e.cust.ID, billing.CreditGrantFilter{}, billing.ListParams{})
	if err != nil || len(grants.Items) != 1 {
		t.Fatalf("grants %+v, %v", grants, err)
	}
	g := grants.Items[0]
	if g.SourceCreditNoteID != cn.ID || cn.CreditGrantID != g.ID || g.Type != billing.CreditCash || g.Currency != billing.CurrencyGBP ||
		g.OriginalAmount.String() != "12.00" || g.CurrentBalance.String() != "12.00" || g.ExpiryDate != nil {
		t.Errorf("grant %+v of credit note %s (creditGrantId %s)", g, cn.ID, cn.CreditGrantID)
	}
	if got := e.getInvoice(inv.ID); got.AmountDue.String() != "120.00" || got.AmountCredited.String() != "0.00" {
		t.Errorf("the credited invoice: due %s credited %s", got.AmountDue, got.AmountCredited)
	}
	next := e.finalize(e.engineInvoice(billing.CurrencyGBP, [3]string{"1", "5.00", "0"}).ID)
	if next.AmountDue.String() != "0.00" || e.getGrant(g.ID).CurrentBalance.String() != "7.00" {
		t.Errorf("next invoice due %s, grant %s", next.AmountDue, e.getGrant(g.ID).CurrentBalance)
	}
	// The grant was used: the credit note can no longer be voided.
	if _, err := e.svc.VoidCreditNote(e.ctx, e.acct, cn.ID); billing.CodeOf(err) != billing.CodeInvalidState {
		t.Errorf("void of a credit note whose grant was used: %v", err)
	}
	// An unused one can, and its grant goes with it.
	cn2 := e.creditNote(inv, "1", "1.00", "0")
	cn2, _ = e.svc.UpdateCreditNote(e.ctx, e.acct, cn2.ID, billing.CreditNoteUpdateParams{
		Settings: billing.Some(billing.CreditNoteSettings{GenerateCashCreditGrant: billing.CashCreditGrantEnabled})})
	cn2, err = e.svc.FinalizeCreditNote(e.ctx, e.acct, cn2.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.VoidCreditNote(e.ctx, e.acct, cn2.ID); err != nil {
		t.Fatal(err)
	}
	if g2 := e.getGrant(cn2.CreditGrantID); g2.Status != billing.CreditGrantVoided || g2.CurrentBalance.String() != "0.00" {
		t.Errorf("grant of a voided credit note: %+v", g2)
	}
	e.checkCreditInvariants(t)
}

// TestVoidedGrantIsNotApplied voids a grant with credit left: the next
// engine invoice is not paid with it.
func TestVoidedGrantIsNotApplied(t *testing.T) {
	t.Parallel()
	e := newDocEnv(t)
	g := e.grant(cashGrant("Promo", "50.00"))
	e.finalize(e.engineInvoice(billing.CurrencyUSD, [3]string{"1", "20.00", "0"}).ID)
	v, err := e.svc.VoidCreditGrant(e.ctx, e.acct, g.ID)
	if err != nil || v.Status != billing.CreditGrantVoided || v.CurrentBalance.String() != "0.00" {
		t.Fatalf("VoidCreditGrant: %+v %v", v, err)
	}
	l := e.ledger(g.ID)
	if len(l) != 3 || l[2].Type != billing.CreditTxVoid || l[2].Amount.String() != "-30.00" {
		t.Errorf("ledger %+v", l)
	}
	inv := e.finalize(e.engineInvoice(billing.CurrencyUSD, [3]string{"1", "20.00", "0"}).ID)
	if lines, _ := e.burndown(inv.ID); len(lines) != 0 || inv.AmountDue.String() != "20.00" {
		t.Errorf("a voided grant was applied: %v, due %s", lines, inv.AmountDue)
	}
	e.checkCreditInvariants(t)
}

// TestInvoiceVoidGivesCreditBack voids invoices paid with credit: credit
// of a live grant comes back; credit of a grant that expired since is
// given back and expired again.
func TestInvoiceVoidGivesCreditBack(t *testing.T) {
	t.Parallel()
	e := newDocEnv(t)
	live := e.grant(cashGrant("Live", "10.00"))
	short := e.grant(cashGrantUntil("Short", "10.00", "2024-08-05"))
	inv := e.finalize(e.engineInvoice(billing.CurrencyUSD, [3]string{"1", "15.00", "0"}).ID)
	if inv.AmountDue.String() != "0.00" || inv.PaymentStatus != billing.PaymentStatusPaid {
		t.Fatalf("invoice paid with credit: due %s %s", inv.AmountDue, inv.PaymentStatus)
	}
	e.clock.Set(time.Date(2024, 8, 7, 0, 0, 0, 0, time.UTC))
	if _, err := e.svc.RunBilling(e.ctx, e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.VoidInvoice(e.ctx, e.acct, inv.ID); err != nil {
		t.Fatalf("void of an invoice paid with credit only: %v", err)
	}
	if g := e.getGrant(live.ID); g.CurrentBalance.String() != "10.00" || g.Status != billing.CreditGrantActive {
		t.Errorf("live grant after the void: %s %s", g.CurrentBalance, g.Status)
	}
	if g := e.getGrant(short.ID); g.CurrentBalance.String() != "0.00" || g.Status != billing.CreditGrantExpired {
		t.Errorf("expired grant after the void: %s %s", g.CurrentBalance, g.Status)
	}
	var types []string
	for _, tx := range e.ledger(short.ID) {
		types = append(types, string(tx.Type)+" "+tx.Amount.String())
	}
	if fmt.Sprint(types) != "[GRANT 10.00 CONSUMPTION -10.00 REVERSAL 10.00 EXPIRY -10.00]" {
		t.Errorf("ledger of the expired grant: %v", types)
	}
	e.checkCreditInvariants(t)
}

// TestCreditNotifications checks the notifications of credit: created,
// consumed (one per grant, beside the invoice's own), expired.
func TestCreditNotifications(t *testing.T) {
	t.Parallel()
	e := newDocEnv(t)
	emitted := recordAll(t, e.svc, e.acct)
	e.grant(cashGrantUntil("Promo", "5.00", "2024-08-01"))
	e.grant(cashGrant("Other", "5.00"))
	if got := fmt.Sprint(emitted()); got != "[CREDIT_GRANT_CREATED CREDIT_GRANT_CREATED]" {
		t.Errorf("create: %s", got)
	}
	inv := e.engineInvoice(billing.CurrencyUSD, [3]string{"1", "7.00", "0"})
	emitted()
	e.finalize(inv.ID)
	if got := fmt.Sprint(emitted()); got != "[CREDIT_GRANT_CONSUMED CREDIT_GRANT_CONSUMED INVOICE_UPDATED]" {
		t.Errorf("finalize: %s", got)
	}
	e.grant(cashGrantUntil("Soon", "5.00", "2024-08-01"))
	emitted()
	e.clock.Set(time.Date(2024, 8, 2, 0, 0, 0, 0, time.UTC))
	if _, err := e.svc.RunBilling(e.ctx, e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(emitted()); got != "[CREDIT_GRANT_EXPIRED]" {
		t.Errorf("expiry: %s (the depleted grant expires silently)", got)
	}
}

// TestUsageCreditDrawdown: USAGE credit reduces the billed usage of the
// prices on its metric before the price applies (the tiers see the
// reduced quantity), when the engine invoice is finalized: at once for an
// auto-issued invoice, at FinalizeInvoice for a draft.
//
// Long on purpose: one scenario walked in order; each step starts from the state the previous steps
// left, so pieces would repeat the set-up.
func TestUsageCreditDrawdown(t *testing.T) {
	t.Parallel()
	f := newSched(t)
	f.clock.Set(time.Date(2024, 2, 2, 0, 0, 0, 0, time.UTC))
	metric := f.metric("call")
	pr := f.price("Calls", billing.CurrencyUSD, billing.FrequencyMonthly, billing.BillingTypeInArrears,
		billing.PriceStructure{PricingType: billing.PricingGraduated, UsageMetricID: metric, Tiers: []billing.Tier{
			{UpperBound: dp("10"), Price: billing.MustDecimal("1.00"), Fee: billing.MustDecimal("5.00")},
			{UpperBound: dp("100"), Price: billing.MustDecimal("0.50"), Fee: billing.MustDecimal("0")},
			{Price: billing.MustDecimal("0.10"), Fee: billing.MustDecimal("2.00")},
		}})
	grant := func(customer, name, amount string, mod func(*billing.CreditGrantParams)) *billing.CreditGrant {
		p := billing.CreditGrantParams{CustomerID: customer, Name: name, CreditUnitType: billing.CreditUnitMetric, MetricID: metric,
			Amount: dp(amount), EffectiveDate: date("2024-01-01")}
		if mod != nil {
			mod(&p)
		}
		g, err := f.svc.CreateCreditGrant(f.ctx, f.account, p)
		f.must(err)
		return g
	}
	render := func(invID string) string {
		lines, err := f.svc.ListInvoiceLineItems(f.ctx, f.account, invID, billing.LineItemFilter{}, billing.ListParams{Limit: 100})
		f.must(err)
		var out []string
		for _, l := range lines.Items {
			out = append(out, fmt.Sprintf("%s|%s|%s|%s", l.Title, l.Quantity, l.NetTotal, l.Description))
		}
		return fmt.Sprint(out)
	}
	const credited = "[Calls (tier 1)|10|10.00|90 of 150 units from credits Calls (tier 1 fee)|1|5.00|90 of 150 units from credits " +
		"Calls (tier 2)|50|25.00|90 of 150 units from credits]"

	t.Run("AutoIssued", func(t *testing.T) {
		yes := true
		soon := grant(f.customer, "Soon", "30", func(p *billing.CreditGrantParams) { p.ExpiryDate = date("2024-03-31") })
		paid := grant(f.customer, "Paid", "60", func(p *billing.CreditGrantParams) {
			p.Currency, p.CostOfCredit, p.CreateInvoice = billing.CurrencyUSD, dp("12.00"), true
		})
		// The invoice selling the paid grant credits its cost to deferred
		// revenue when finalized.
		_, err := f.svc.FinalizeInvoice(f.ctx, f.account, paid.InvoiceID)
		f.must(err)
		sold, err := f.svc.ListJournalEntries(f.ctx, f.account, billing.JournalFilter{SourceID: paid.InvoiceID}, billing.ListParams{})
		f.must(err)
		if len(sold.Items) != 2 || sold.Items[1].Account != billing.LedgerDeferredRevenue || sold.Items[1].Credit.String() != "12.00" {
			t.Errorf("journal of the invoice selling the grant %+v", sold.Items)
		}
		f.events(f.customer, "call", ts("2024-01-10T00:00:00Z"), 150)
		f.schedule(f.customer, "2024-01-01", func(p *billing.BillingScheduleParams) { p.AutoIssueInvoices = &yes }, phase("2024-01-01", pr))
		inv, err := f.svc.GetInvoice(f.ctx, f.account, f.runOnce(t))
		f.must(err)
		if got := render(inv.ID); got != credited || inv.Status != billing.StatusSent || inv.NetTotal.String() != "40.00" {
			t.Errorf("invoice %s %s: %s", inv.Status, inv.NetTotal, got)
		}
		for _, g := range []*billing.CreditGrant{soon, paid} {
			got, err := f.svc.GetCreditGrant(f.ctx, f.account, g.ID)
			f.must(err)
			if got.Status != billing.CreditGrantDepleted {
				t.Errorf("grant %s: %s %s", g.Name, got.Status, got.CurrentBalance)
			}
		}
		// The paid grant's deferred revenue (its cost) becomes revenue.
		entries, err := f.svc.ListJournalEntries(f.ctx, f.account, billing.JournalFilter{SourceID: paid.ID}, billing.ListParams{})
		f.must(err)
		if len(entries.Items) != 2 || entries.Items[0].Account != billing.LedgerDeferredRevenue || entries.Items[0].Debit.String() != "12.00" ||
			entries.Items[1].Account != billing.LedgerRevenue || entries.Items[1].Credit.String() != "12.00" {
			t.Errorf("journal of the paid grant %+v", entries.Items)
		}
		// The credit is used: the invoice that sold it can no longer be voided.
		if _, err := f.svc.VoidInvoice(f.ctx, f.account, paid.InvoiceID); billing.CodeOf(err) != billing.CodeInvalidState {
			t.Errorf("void of the invoice selling a used grant: %v", err)
		}
	})
	t.Run("DraftFinalized", func(t *testing.T) {
		other := f.newCustomer(billing.TaxStatusTaxExempt)
		grant(other, "Units", "90", nil)
		f.events(other, "call", ts("2024-01-10T00:00:00Z"), 150)
		f.schedule(other, "2024-01-01", nil, phase("2024-01-01", pr))
		id := f.runOnce(t)
		if got := render(id); got == credited {
			t.Errorf("the draft already has credit applied: %s", got)
		}
		inv, err := f.svc.FinalizeInvoice(f.ctx, f.account, id)
		f.must(err)
		if got := render(id); got != credited || inv.NetTotal.String() != "40.00" {
			t.Errorf("finalized %s: %s", inv.NetTotal, got)
		}
	})
}

// TestPrepaidGrantInvoice: createInvoice makes a DRAFT invoice for the
// cost with a PREPAYMENT line at the grant's tax rate; voiding or deleting
// that invoice before the credit is used voids the grant, and the books
// balance.
func TestPrepaidGrantInvoice(t *testing.T) {
	t.Parallel()
	e := newDocEnv(t)
	vat, err := e.svc.CreateTaxRate(e.ctx, e.acct, billing.CreateTaxRateParams{Name: "VAT", Amount: dec("0.2")})
	if err != nil {
		t.Fatal(err)
	}
	buy := func() *billing.CreditGrant {
		p := cashGrant("Bought", "100.00")
		p.CostOfCredit, p.CreateInvoice, p.TaxRateID = dec("90.00"), true, vat.ID
		return e.grant(p)
	}
	g := buy()
	lines := allInvoiceLines(t, e, g.InvoiceID)
	inv := e.getInvoice(g.InvoiceID)
	if len(lines) != 1 || lines[0].RevenueClassification != billing.RevenueClassificationPrepayment || lines[0].CreditGrantID != g.ID ||
		inv.Status != billing.StatusDraft || inv.GrossTotal.String() != "90.00" || inv.TotalTax.String() != "0.00" || inv.Currency != billing.CurrencyUSD {
		t.Fatalf("invoice %s %s, lines %+v", inv.Status, inv.GrossTotal, lines)
	}
	e.finalize(g.InvoiceID)
	if _, err := e.svc.VoidInvoice(e.ctx, e.acct, g.InvoiceID); err != nil {
		t.Fatal(err)
	}
	if got := e.getGrant(g.ID); got.Status != billing.CreditGrantVoided || got.CurrentBalance.String() != "0.00" {
		t.Errorf("grant of a voided purchase: %s %s", got.Status, got.CurrentBalance)
	}
	d := buy()
	if err := e.svc.DeleteInvoice(e.ctx, e.acct, d.InvoiceID); err != nil {
		t.Fatal(err)
	}
	if got := e.getGrant(d.ID); got.Status != billing.CreditGrantVoided {
		t.Errorf("grant of a deleted purchase: %s", got.Status)
	}
	e.checkCreditInvariants(t)
}

// TestStoredInvoicesReadAsTheyWere: invoices stored before credit could be
// money on account (no creditsApplied, no creditApplications), or voided
// before voids zeroed amountDue, read with creditsApplied 0.00 and [], and
// a voided one with amountDue 0.00; their totals are kept.
func TestStoredInvoicesReadAsTheyWere(t *testing.T) {
	t.Parallel()
	e := newDocEnv(t)
	old := e.finalInvoice("1", "100.00", "0.19")
	voided := e.finalInvoice("1", "100.00", "0.19")
	for _, id := range []string{old.ID, voided.ID} {
		billing.RewriteStoredInvoiceForTest(t, e.svc, e.acct, id, func(m map[string]any) {
			delete(m, "creditsApplied")
			delete(m, "creditApplications")
			if id == voided.ID {
				m["status"], m["amountDue"] = "VOIDED", "119.00"
			}
		})
	}
	got := e.getInvoice(old.ID)
	if got.GrossTotal.String() != "119.00" || got.AmountDue.String() != "119.00" || got.CreditsApplied.String() != "0.00" ||
		got.CreditApplications == nil || len(got.CreditApplications) != 0 {
		t.Errorf("an invoice of the earlier release reads %s", jsonOf(t, got))
	}
	v := e.getInvoice(voided.ID)
	if v.AmountDue.String() != "0.00" || v.GrossTotal.String() != "119.00" {
		t.Errorf("a voided invoice of the earlier release reads due %s, gross %s", v.AmountDue, v.GrossTotal)
	}
	for _, inv := range pages(t, func(p billing.ListParams) (billing.Page[billing.Invoice], error) {
		return e.svc.ListInvoices(e.ctx, e.acct, billing.InvoiceFilter{}, p)
	}) {
		if inv.ID == voided.ID && inv.AmountDue.String() != "0.00" || inv.CreditApplications == nil {
			t.Errorf("the list reads %s", jsonOf(t, inv))
		}
	}
	// Paying the earlier invoice works on what it said.
	if _, err := e.svc.RecordPayment(e.ctx, e.acct, old.ID, billing.PaymentParams{Amount: dec("119.00"), PaidAt: date("2024-07-30")}); err != nil {
		t.Errorf("paying the earlier invoice: %v", err)
	}
}
