package billing_test

import (
	"context"
	"testing"
	"time"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
	"github.com/google/go-cmp/cmp"
)

// catalog is an account with a product and a usage metric to price.
type catalog struct {
	account, product, metric string
}

func newCatalog(tb testing.TB, svc *billing.Service, name string) catalog {
	tb.Helper()
	acct := billingtest.Account(tb, svc, name)
	m, err := svc.CreateUsageMetric(context.Background(), acct, metricParams("calls"))
	if err != nil {
		tb.Fatal(err)
	}
	return catalog{account: acct, product: createProduct(tb, svc, acct, "Platform").ID, metric: m.ID}
}

// newCatalogs is a fresh Service with the catalogs of accounts "a" and "b":
// the set-up of the tests that check what one account may use of another's.
func newCatalogs(tb testing.TB) (svc *billing.Service, ctx context.Context, a, b catalog) {
	tb.Helper()
	svc, _ = billingtest.NewService(tb)
	return svc, context.Background(), newCatalog(tb, svc, "a"), newCatalog(tb, svc, "b")
}

func (c catalog) linear(name string) billing.CreatePriceParams {
	return billing.CreatePriceParams{
		ProductID: c.product, Name: name, Currency: billing.CurrencyUSD,
		Structure:        billing.PriceStructure{PricingType: billing.PricingLinear, PricePerUnit: dec("0.01"), UsageMetricID: c.metric},
		BillingFrequency: billing.FrequencyMonthly, BillingType: billing.BillingTypeInArrears,
	}
}

// Long on purpose: a table of cases, one line each; its length is the cases, not logic.
func TestCreatePriceValidation(t *testing.T) {
	t.Parallel()
	svc, ctx, c, other := newCatalogs(t)
	deleted, err := svc.CreateUsageMetric(ctx, c.account, metricParams("old"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.DeleteUsageMetric(ctx, c.account, deleted.ID); err != nil {
		t.Fatal(err)
	}
	neg := int64(-1)
	refuseFields(t, func() billing.CreatePriceParams { return c.linear("p") }, func(p billing.CreatePriceParams) error {
		return errOf(svc.CreatePrice(ctx, c.account, p))
	}, []fieldCase[billing.CreatePriceParams]{
		{"ErrEverythingMissing", func(p *billing.CreatePriceParams) { *p = billing.CreatePriceParams{} },
			[]string{"productId", "name", "currency", "billingFrequency", "billingType", "structure.pricingType"}},
		{"ErrBadEnums", func(p *billing.CreatePriceParams) {
			p.BillingFrequency, p.BillingType, p.Status = "DAILY", "LATER", "GONE"
		}, []string{"billingFrequency", "billingType", "status"}},
		{"ErrUsageBasedInAdvance", func(p *billing.CreatePriceParams) { p.BillingType = billing.BillingTypeInAdvance }, []string{"billingType"}},
		{"ErrUsagePeriodNotFrequency", func(p *billing.CreatePriceParams) {
			p.UsageCalculationPeriod = &billing.UsageCalculationPeriod{Frequency: billing.FrequencyYearly, Interval: 1}
		}, []string{"usageCalculationPeriod"}},
		{"ErrUsagePeriodInterval", func(p *billing.CreatePriceParams) {
			p.UsageCalculationPeriod = &billing.UsageCalculationPeriod{Frequency: billing.FrequencyMonthly, Interval: 2}
		}, []string{"usageCalculationPeriod"}},
		{"ErrUsagePeriodOnFixed", func(p *billing.CreatePriceParams) {
			p.Structure = billing.PriceStructure{PricingType: billing.PricingFixed, Price: dec("1")}
			p.UsageCalculationPeriod = &billing.UsageCalculationPeriod{Frequency: billing.FrequencyMonthly, Interval: 1}
		}, []string{"usageCalculationPeriod"}},
		{"ErrForeignFields", func(p *billing.CreatePriceParams) {
			p.Structure = billing.PriceStructure{PricingType: billing.PricingFixed, Price: dec("1"), UsageMetricID: c.metric, PackageSize: dec("1")}
		}, []string{"structure.packageSize", "structure.usageMetricId"}},
		{"ErrFixedWithoutPrice", func(p *billing.CreatePriceParams) {
			p.Structure = billing.PriceStructure{PricingType: billing.PricingFixed}
		}, []string{"structure.price"}},
		{"ErrNegativePrice", func(p *billing.CreatePriceParams) {
			p.Structure = billing.PriceStructure{PricingType: billing.PricingOneTime, Price: dec("-1")}
		}, []string{"structure.price"}},
		{"ErrPackageSizeZero", func(p *billing.CreatePriceParams) {
			p.Structure = billing.PriceStructure{PricingType: billing.PricingPackage, PackageSize: dec("0"), PricePerPackage: dec("1"), UsageMetricID: c.metric}
		}, []string{"structure.packageSize"}},
		{"ErrLinearWithoutMetric", func(p *billing.CreatePriceParams) { p.Structure.UsageMetricID = "" }, []string{"structure.usageMetricId"}},
		{"ErrTiers", func(p *billing.CreatePriceParams) {
			p.Structure = billing.PriceStructure{PricingType: billing.PricingGraduated, UsageMetricID: c.metric,
				Tiers: tiers("10:1:0", "10:1:0", ":1:-1", "20:1:0"), UsageCalculationMode: "DAILY"}
		}, []string{"structure.tiers[1].upperBound", "structure.tiers[2].upperBound", "structure.tiers[2].fee", "structure.tiers[3].upperBound", "structure.usageCalculationMode"}},
		{"ErrFirstBoundZero", func(p *billing.CreatePriceParams) {
			p.Structure = billing.PriceStructure{PricingType: billing.PricingVolume, UsageMetricID: c.metric, Tiers: tiers("0:1:0", ":1:0")}
		}, []string{"structure.tiers[0].upperBound"}},
		{"ErrNoTiers", func(p *billing.CreatePriceParams) {
			p.Structure = billing.PriceStructure{PricingType: billing.PricingVolume, UsageMetricID: c.metric}
		}, []string{"structure.tiers"}},
		{"ErrSeatBased", func(p *billing.CreatePriceParams) {
			p.Structure = billing.PriceStructure{PricingType: billing.PricingSeatBased, ContractedMinimumSeats: &neg}
			p.BillingType = billing.BillingTypeInAdvance
		}, []string{"structure.pricePerSeat", "structure.seatMetricId", "structure.contractedMinimumSeats"}},
		{"ErrUnknownPricingType", func(p *billing.CreatePriceParams) { p.Structure.PricingType = "FREE" }, []string{"structure.pricingType"}},
		{"ErrMissingReferences", func(p *billing.CreatePriceParams) {
			p.ProductID, p.ListPriceID = "nope", "nope"
		}, []string{"productId", "listPriceId"}},
		{"ErrOtherAccountsReferences", func(p *billing.CreatePriceParams) {
			p.ProductID, p.Structure.UsageMetricID = other.product, other.metric
		}, []string{"productId", "structure.usageMetricId"}},
		{"ErrDeletedMetric", func(p *billing.CreatePriceParams) { p.Structure.UsageMetricID = deleted.ID }, []string{"structure.usageMetricId"}},
		{"ErrOtherAccountsSeatMetric", func(p *billing.CreatePriceParams) {
			sm := createSeatMetric(t, svc, other.account, "editor")
			p.Structure = billing.PriceStructure{PricingType: billing.PricingSeatBased, PricePerSeat: dec("1"), SeatMetricID: sm.ID}
		}, []string{"structure.seatMetricId"}},
		{"ErrCustomParameters", func(p *billing.CreatePriceParams) {
			p.CustomMetricParameters = []billing.CustomMetricParameter{{ParameterID: "x", Value: "1"}}
		}, []string{"customMetricParameters[0].parameterId"}},
	})
	listsNothing(t, svc.ListPrices, c.account, "invalid creates stored prices")
}

func TestPriceLifecycle(t *testing.T) {
	t.Parallel()
	stores(t, func(t *testing.T, svc *billing.Service, clock *billingtest.Clock) {
		ctx := context.Background()
		c := newCatalog(t, svc, "a")
		p := c.linear("API")
		p.Status = billing.PriceStatusDraft
		p.IntegrationIDs = []billing.IntegrationID{{Service: "crm", ID: "42"}}
		pr, err := svc.CreatePrice(ctx, c.account, p)
		if err != nil {
			t.Fatal(err)
		}
		ucp := pr.UsageCalculationPeriod
		if pr.Status != billing.PriceStatusDraft || ucp == nil || ucp.Frequency != billing.FrequencyMonthly || ucp.Interval != 1 ||
			pr.Structure.IsPricePercentage == nil || *pr.Structure.IsPricePercentage || pr.CustomMetricParameters == nil {
			t.Fatalf("created = %+v", pr)
		}
		got, err := svc.GetPrice(ctx, c.account, pr.ID)
		if diff := cmp.Diff(pr, got, decimalText); err != nil || diff != "" {
			t.Fatalf("read back (-created +read):\n%s %v", diff, err)
		}
		// A DRAFT price does not pin its metric; an ACTIVE one does.
		if _, err := svc.UpdateUsageMetric(ctx, c.account, c.metric, metricParams("renamed").UsageMetricParams); err != nil {
			t.Fatalf("a DRAFT price blocks a metric update: %v", err)
		}
		clock.Advance(time.Minute)
		up, err := svc.UpdatePrice(ctx, c.account, pr.ID, billing.UpdatePriceParams{Name: "API v2", Status: billing.PriceStatusActive})
		if err != nil || up.Name != "API v2" || up.Status != billing.PriceStatusActive || !up.UpdatedAt.Equal(clock.Now()) || up.Structure.UsageMetricID != c.metric {
			t.Fatalf("UpdatePrice = %+v, %v", up, err)
		}
		if _, err := svc.DeleteUsageMetric(ctx, c.account, c.metric); billing.CodeOf(err) != billing.CodeInvalidState {
			t.Fatalf("deleting a metric an ACTIVE price uses: %v, want invalid_state", err)
		}
		if _, err := svc.UpdateUsageMetric(ctx, c.account, c.metric, metricParams("again").UsageMetricParams); billing.CodeOf(err) != billing.CodeInvalidState {
			t.Fatalf("redefining a metric an ACTIVE price uses: %v, want invalid_state", err)
		}
		if _, err := svc.UpdatePrice(ctx, c.account, pr.ID, billing.UpdatePriceParams{Name: "x", Status: "OLD"}); billing.CodeOf(err) != billing.CodeValidationFailed {
			t.Fatalf("bad status: %v", err)
		}
		if _, err := svc.UpdatePrice(ctx, c.account, pr.ID, billing.UpdatePriceParams{Name: "x", Status: billing.PriceStatusDraft}); err != nil {
			t.Fatalf("back to DRAFT without schedules: %v", err)
		}
		if _, err := svc.DeleteUsageMetric(ctx, c.account, c.metric); err != nil {
			t.Fatalf("deleting a metric only a DRAFT price uses: %v", err)
		}
	})
}

func TestPricesOfOtherAccounts(t *testing.T) {
	t.Parallel()
	svc, ctx, a, b := newCatalogs(t)
	pr, err := svc.CreatePrice(ctx, a.account, a.linear("p"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.GetPrice(ctx, b.account, pr.ID); billing.CodeOf(err) != billing.CodeNotFound {
		t.Fatalf("B reads A's price: %v", err)
	}
	if _, err := svc.UpdatePrice(ctx, b.account, pr.ID, billing.UpdatePriceParams{Name: "x", Status: billing.PriceStatusActive}); billing.CodeOf(err) != billing.CodeNotFound {
		t.Fatalf("B updates A's price: %v", err)
	}
	p := b.linear("q")
	p.ListPriceID = pr.ID
	if _, err := svc.CreatePrice(ctx, b.account, p); billing.CodeOf(err) != billing.CodeValidationFailed {
		t.Fatalf("B names A's price as list price: %v", err)
	}
	// B's ACTIVE prices do not pin A's metric.
	if _, err := svc.DeleteUsageMetric(ctx, b.account, b.metric); err != nil {
		t.Fatal(err)
	}
}

func TestListPricesFilters(t *testing.T) {
	t.Parallel()
	svc, _ := billingtest.NewService(t)
	ctx := context.Background()
	c := newCatalog(t, svc, "a")
	other := createProduct(t, svc, c.account, "Support")
	mk := func(name string, cur billing.Currency, freq billing.BillingFrequency, product string) string {
		p := c.linear(name)
		p.Currency, p.BillingFrequency, p.ProductID = cur, freq, product
		pr, err := svc.CreatePrice(ctx, c.account, p)
		if err != nil {
			t.Fatal(err)
		}
		return pr.ID
	}
	usd := mk("Basic API", "USD", billing.FrequencyMonthly, c.product)
	eur := mk("Premium api", "EUR", billing.FrequencyMonthly, c.product)
	yearly := mk("Support", "USD", billing.FrequencyYearly, other.ID)
	filterTable(t, svc.ListPrices, c.account, func(p billing.Price) string { return p.ID }, []filterCase[billing.PriceFilter]{
		{"All", billing.PriceFilter{}, []string{yearly, eur, usd}},
		{"Ascending", billing.PriceFilter{SortOrder: billing.SortAsc}, []string{usd, eur, yearly}},
		{"Currency", billing.PriceFilter{Currency: "EUR"}, []string{eur}},
		{"NameIgnoringCase", billing.PriceFilter{Name: "API"}, []string{eur, usd}},
		{"BillingFrequency", billing.PriceFilter{BillingFrequency: billing.FrequencyYearly}, []string{yearly}},
		{"ProductID", billing.PriceFilter{ProductID: c.product}, []string{eur, usd}},
		{"Combined", billing.PriceFilter{Currency: "USD", ProductID: c.product}, []string{usd}},
		{"OtherAccountsProduct", billing.PriceFilter{ProductID: "missing"}, nil},
	})
	for _, f := range []billing.PriceFilter{{Currency: "usd"}, {BillingFrequency: "DAILY"}, {SortOrder: "UP"}} {
		if _, err := svc.ListPrices(ctx, c.account, f, billing.ListParams{}); billing.CodeOf(err) != billing.CodeValidationFailed {
			t.Fatalf("filter %+v: %v, want validation_failed", f, err)
		}
	}
}

func createProduct(tb testing.TB, svc *billing.Service, account, name string) *billing.Product {
	tb.Helper()
	return must(svc.CreateProduct(context.Background(), account, billing.CreateProductParams{Name: name})).of(tb, "CreateProduct")
}

func TestProducts(t *testing.T) {
	t.Parallel()
	stores(t, func(t *testing.T, svc *billing.Service, _ *billingtest.Clock) {
		ctx, a, b := tenants(t, svc)
		if _, err := svc.CreateProduct(ctx, a, billing.CreateProductParams{}); billing.CodeOf(err) != billing.CodeValidationFailed {
			t.Fatalf("product without a name: %v", err)
		}
		p1 := createProduct(t, svc, a, "Platform")
		p2 := createProduct(t, svc, a, "Support")
		got, err := svc.GetProduct(ctx, a, p1.ID)
		if err != nil || got.Name != "Platform" || !got.CreatedAt.Equal(billingtest.Start) {
			t.Fatalf("GetProduct = %+v, %v", got, err)
		}
		if _, err := svc.GetProduct(ctx, b, p1.ID); billing.CodeOf(err) != billing.CodeNotFound {
			t.Fatalf("B reads A's product: %v", err)
		}
		page, err := svc.ListProducts(ctx, a, "", billing.ListParams{})
		if err != nil || page.TotalResultSize != 2 || page.Items[0].ID != p2.ID {
			t.Fatalf("ListProducts = %+v, %v", page, err)
		}
		page, err = svc.ListProducts(ctx, a, billing.SortAsc, billing.ListParams{Limit: 1})
		if err != nil || len(page.Items) != 1 || page.Items[0].ID != p1.ID || page.After == "" {
			t.Fatalf("ListProducts ASC = %+v, %v", page, err)
		}
		if page, err := svc.ListProducts(ctx, b, "", billing.ListParams{}); err != nil || page.TotalResultSize != 0 {
			t.Fatalf("B lists A's products: %+v, %v", page, err)
		}
	})
}

func TestTaxRates(t *testing.T) {
	t.Parallel()
	svc, ctx, a, b := newTenants(t)
	for _, tc := range []struct {
		name, amount string
		ok           bool
	}{{"Zero", "0", true}, {"One", "1", true}, {"Fraction", "0.20", true}, {"ErrNegative", "-0.01", false}, {"ErrAboveOne", "1.0001", false}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			amount := billing.MustDecimal(tc.amount)
			r, err := svc.CreateTaxRate(ctx, a, billing.CreateTaxRateParams{Name: "VAT", Amount: &amount})
			if !tc.ok {
				if billing.CodeOf(err) != billing.CodeValidationFailed || billing.Errors(err)[0].Field != "amount" {
					t.Fatalf("amount %s: %v, want validation_failed on amount", tc.amount, err)
				}
				return
			}
			if err != nil || r.Amount.String() != tc.amount {
				t.Fatalf("CreateTaxRate = %+v, %v", r, err)
			}
			if got, err := svc.GetTaxRate(ctx, a, r.ID); err != nil || got.Amount.String() != tc.amount {
				t.Fatalf("GetTaxRate = %+v, %v", got, err)
			}
			if _, err := svc.GetTaxRate(ctx, b, r.ID); billing.CodeOf(err) != billing.CodeNotFound {
				t.Fatalf("B reads A's tax rate: %v", err)
			}
		})
	}
	if _, err := svc.CreateTaxRate(ctx, a, billing.CreateTaxRateParams{Name: "VAT"}); billing.CodeOf(err) != billing.CodeValidationFailed {
		t.Fatalf("tax rate without amount: %v", err)
	}
}
