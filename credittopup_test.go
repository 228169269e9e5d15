package billing_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
)

// topUpGrant creates a paid CASH grant of amount USD with an auto top-up
// rule for the fixture's customer.
func topUpGrant(f *sched, amount, threshold, topUp string) *billing.CreditGrant {
	f.tb.Helper()
	g, err := f.svc.CreateCreditGrant(f.ctx, f.account, billing.CreditGrantParams{
		CustomerID: f.customer, Name: "Wallet", CreditUnitType: billing.CreditUnitCurrency, Currency: billing.CurrencyUSD,
		Amount: dec(amount), CostOfCredit: dec(amount), EffectiveDate: date("2024-01-01"),
		AutoTopUp: &billing.AutoTopUpParams{ThresholdAmount: dec(threshold), TopUpAmount: dec(topUp)}})
	f.must(err)
	return g
}

// spend issues a manual invoice of amount USD and pays it with the
// customer's credit.
func spend(f *sched, svc *billing.Service, amount string) {
	f.tb.Helper()
	inv, err := svc.CreateInvoice(f.ctx, f.account, billing.InvoiceParams{Currency: billing.CurrencyUSD, CustomerID: f.customer})
	f.must(err)
	_, err = svc.CreateInvoiceLineItem(f.ctx, f.account, inv.ID, invLine("Usage", "1", amount, "0"))
	f.must(err)
	_, err = svc.SendInvoice(f.ctx, f.account, inv.ID)
	f.must(err)
	_, err = svc.ApplyCredits(f.ctx, f.account, inv.ID)
	f.must(err)
}

// topUps returns the grants auto top-up bought for rule grant id, oldest
// first, and the customer's USD balance.
func topUps(f *sched, id string) ([]billing.CreditGrant, string) {
	f.tb.Helper()
	gs := pages(f.tb, func(p billing.ListParams) (billing.Page[billing.CreditGrant], error) {
		return f.svc.ListCreditGrants(f.ctx, f.account, billing.CreditGrantFilter{CustomerID: f.customer, SortOrder: billing.SortAsc}, p)
	})
	var out []billing.CreditGrant
	for _, g := range gs {
		if g.TopUpOfGrantID == id {
			out = append(out, g)
		}
	}
	bs, err := f.svc.GetCreditBalances(f.ctx, f.account, f.customer, nil)
	f.must(err)
	for _, b := range bs.Items {
		if b.ID == "USD" {
			return out, b.Balance.String()
		}
	}
	return out, ""
}

// TestAutoTopUpOncePerCrossing: a fall below the threshold buys one
// top-up (a paid grant and its issued purchase invoice); a top-up too small
// to reach the threshold leaves the rule disarmed, so further falls buy
// nothing, until other credit lifts the balance to the threshold again.
func TestAutoTopUpOncePerCrossing(t *testing.T) {
	t.Parallel()
	f := newSched(t, billingtest.WithBolt())
	g := topUpGrant(f, "100.00", "20.00", "50.00")
	spend(f, f.svc, "85.00") // 15.00 left: below, top-up to 65.00
	ups, bal := topUps(f, g.ID)
	if len(ups) != 1 || bal != "65.00" {
		t.Fatalf("after the first fall: %d top-ups, balance %s", len(ups), bal)
	}
	up := ups[0]
	inv, err := f.svc.GetInvoice(f.ctx, f.account, up.InvoiceID)
	f.must(err)
	if up.OriginalAmount.String() != "50.00" || up.CostOfCredit == nil || up.CostOfCredit.String() != "50.00" ||
		inv.Status != billing.StatusSent || inv.GrossTotal.String() != "50.00" {
		t.Errorf("top-up %+v, its invoice %s %s", up, inv.Status, inv.GrossTotal)
	}
	spend(f, f.svc, "30.00") // 35.00: above, nothing
	if ups, bal = topUps(f, g.ID); len(ups) != 1 || bal != "35.00" {
		t.Fatalf("above the threshold: %d top-ups, balance %s", len(ups), bal)
	}
	spend(f, f.svc, "40.00") // 0.00: below again, one top-up
	if ups, bal = topUps(f, g.ID); len(ups) != 2 || bal != "50.00" {
		t.Fatalf("second crossing: %d top-ups, balance %s", len(ups), bal)
	}

	// A top-up that does not reach the threshold disarms the rule.
	f2 := newSched(t)
	small := topUpGrant(f2, "30.00", "20.00", "3.00")
	spend(f2, f2.svc, "15.00") // 15 -> 18
	spend(f2, f2.svc, "1.00")  // 17: still disarmed
	if ups, bal := topUps(f2, small.ID); len(ups) != 1 || bal != "17.00" {
		t.Fatalf("disarmed: %d top-ups, balance %s", len(ups), bal)
	}
	got, err := f2.svc.GetCreditGrant(f2.ctx, f2.account, small.ID)
	f2.must(err)
	if got.AutoTopUp == nil || got.AutoTopUp.Armed || got.AutoTopUp.LastTopUpGrantID == "" {
		t.Errorf("rule after a short top-up: %+v", got.AutoTopUp)
	}
	gift := cashGrant("Gift", "10.00")
	gift.CustomerID, gift.CreditUnitType = f2.customer, billing.CreditUnitCurrency
	_, err = f2.svc.CreateCreditGrant(f2.ctx, f2.account, gift) // 27: armed again
	f2.must(err)
	spend(f2, f2.svc, "10.00") // 17: a new crossing
	if ups, bal := topUps(f2, small.ID); len(ups) != 2 || bal != "20.00" {
		t.Fatalf("re-armed: %d top-ups, balance %s", len(ups), bal)
	}
}

// TestAutoTopUpValidation: the rule is for CURRENCY credit, with positive
// amounts in the currency's digits, each error naming its field.
func TestAutoTopUpValidation(t *testing.T) {
	t.Parallel()
	f := newSched(t)
	for _, c := range []struct {
		p     billing.AutoTopUpParams
		field string
	}{
		{billing.AutoTopUpParams{TopUpAmount: dec("5")}, "autoTopUp.thresholdAmount"},
		{billing.AutoTopUpParams{ThresholdAmount: dec("5"), TopUpAmount: dec("0")}, "autoTopUp.topUpAmount"},
		{billing.AutoTopUpParams{ThresholdAmount: dec("5.001"), TopUpAmount: dec("5")}, "autoTopUp.thresholdAmount"},
	} {
		p := cashGrant("Wallet", "10.00")
		p.CustomerID, p.CreditUnitType, p.AutoTopUp = f.customer, billing.CreditUnitCurrency, &c.p
		_, err := f.svc.CreateCreditGrant(f.ctx, f.account, p)
		if es := billing.Errors(err); len(es) != 1 || es[0].Field != c.field {
			t.Errorf("%+v: %v, want an error on %s", c.p, err, c.field)
		}
	}
}

// TestAutoTopUpChargedAutomatically: with a payment provider configured
// and the customer's payment settings naming it, the top-up's purchase
// invoice is collected by an automatic charge, once.
func TestAutoTopUpChargedAutomatically(t *testing.T) {
	t.Parallel()
	e := newPayEnv(t)
	_, err := e.svc.CreatePaymentSettings(e.ctx, e.account, "customer", billing.PaymentSettingsParams{
		CustomerID: e.customer, PaymentProvider: billing.PaymentProviderStripe})
	e.must(err)
	g := topUpGrant(e.sched, "100.00", "20.00", "50.00")
	spend(e.sched, e.svc, "90.00")
	ups, _ := topUps(e.sched, g.ID)
	if len(ups) != 1 {
		t.Fatalf("%d top-ups", len(ups))
	}
	if inv := e.invoice(ups[0].InvoiceID); inv.DunningStatus != billing.DunningScheduled {
		t.Fatalf("the purchase invoice's dunningStatus %q, want the charge scheduled", inv.DunningStatus)
	}
	e.collect()
	e.collect()
	var charged []string
	for _, c := range e.fake.Charges {
		charged = append(charged, fmt.Sprintf("%s %s", c.InvoiceID, c.Amount))
	}
	if len(charged) != 1 || charged[0] != ups[0].InvoiceID+" 50.00" {
		t.Fatalf("charges %v, want one of 50.00 for %s", charged, ups[0].InvoiceID)
	}
	if inv := e.invoice(ups[0].InvoiceID); inv.PaymentStatus != billing.PaymentStatusPaid {
		t.Errorf("the purchase invoice is %s after the charge", inv.PaymentStatus)
	}
}

// TestAutoTopUpOnceAcrossInstances: two Services on one store (PostgreSQL
// with BILLINGD_TEST_POSTGRES) pay invoices with the same credit at once;
// the balance crosses the threshold once, and one top-up is bought.
func TestAutoTopUpOnceAcrossInstances(t *testing.T) {
	t.Parallel()
	store := billingtest.Store(t)
	cfg := billing.Config{NewID: billingtest.IDs()}
	f := newSched(t, billingtest.WithStore(store), billingtest.WithConfig(cfg))
	cfg.Now = f.clock.Now
	other, err := billing.New(store, &cfg)
	f.must(err)
	g := topUpGrant(f, "100.00", "50.00", "1.00") // the top-up never reaches the threshold again
	var wg sync.WaitGroup
	for i := range 20 {
		svc := []*billing.Service{f.svc, other}[i%2]
		wg.Go(func() { spend(f, svc, "5.00") })
	}
	wg.Wait()
	ups, bal := topUps(f, g.ID)
	if len(ups) != 1 || bal != "1.00" {
		t.Fatalf("%d top-ups, balance %s; want 1 and 1.00 (101.00 of credit, 100.00 spent)", len(ups), bal)
	}
}
