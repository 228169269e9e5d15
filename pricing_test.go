package billing_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/billingd/billing"
	"github.com/google/go-cmp/cmp"
)

func dec(s string) *billing.Decimal {
	d := billing.MustDecimal(s)
	return &d
}

// tiers builds tiers from "upper:price:fee[:%]" specs; an empty upper is
// the open last tier.
func tiers(specs ...string) []billing.Tier {
	out := make([]billing.Tier, len(specs))
	for i, s := range specs {
		parts := strings.Split(s, ":")
		t := billing.Tier{Price: billing.MustDecimal(parts[1]), Fee: billing.MustDecimal(parts[2])}
		if parts[0] != "" {
			t.UpperBound = dec(parts[0])
		}
		t.IsPricePercentage = len(parts) > 3
		out[i] = t
	}
	return out
}

// renderCharge writes a charge as "total = line + line" with each line as
// [tN][fee] quantity×rate=amount, so a table row reads like the invoice.
func renderCharge(c billing.Charge) string {
	parts := make([]string, len(c.Lines))
	for i, l := range c.Lines {
		prefix := ""
		if l.Tier > 0 {
			prefix = fmt.Sprintf("t%d ", l.Tier)
		}
		if l.Fee {
			prefix += "fee "
		}
		if l.Percentage {
			prefix += "% "
		}
		parts[i] = fmt.Sprintf("%s%s×%s=%s", prefix, l.Quantity, l.Rate, l.Amount)
	}
	return c.Total.String() + " = " + strings.Join(parts, " + ")
}

// Long on purpose: a table of cases, one line each; its length is the cases, not logic.
func TestPriceStructureCharge(t *testing.T) {
	t.Parallel()
	pct := true
	graduated := billing.PriceStructure{PricingType: billing.PricingGraduated,
		Tiers: tiers("100:0.10:0", "1000:0.05:5", ":0.01:10")}
	volume := billing.PriceStructure{PricingType: billing.PricingVolume,
		Tiers: tiers("100:0.10:0", "1000:0.05:5", ":0.01:10")}
	seats := billing.PriceStructure{PricingType: billing.PricingSeatBased, PricePerSeat: dec("12.50"), ContractedMinimumSeats: new(int64)}
	*seats.ContractedMinimumSeats = 5
	tests := []struct {
		name     string
		p        billing.PriceStructure
		quantity string
		factor   string
		currency billing.Currency
		want     string
	}{
		{"Fixed", billing.PriceStructure{PricingType: billing.PricingFixed, Price: dec("49.99")}, "0", "", "USD", "49.99 = 1×49.99=49.99"},
		{"FixedProrated", billing.PriceStructure{PricingType: billing.PricingFixed, Price: dec("100")}, "0", "10/30", "USD",
			"33.33 = 0.333333333333×100=33.33"},
		{"OneTimeJPY", billing.PriceStructure{PricingType: billing.PricingOneTime, Price: dec("1000")}, "0", "", "JPY", "1000 = 1×1000=1000"},
		{"Linear", billing.PriceStructure{PricingType: billing.PricingLinear, PricePerUnit: dec("0.015")}, "333", "", "USD", "5.00 = 333×0.015=5.00"},
		{"LinearRoundsHalfUp", billing.PriceStructure{PricingType: billing.PricingLinear, PricePerUnit: dec("0.005")}, "1", "", "USD", "0.01 = 1×0.005=0.01"},
		{"LinearPercentage", billing.PriceStructure{PricingType: billing.PricingLinear, PricePerUnit: dec("0.02"), IsPricePercentage: &pct}, "1234.50", "", "USD",
			"24.69 = % 1234.50×0.02=24.69"},
		{"LinearJPY", billing.PriceStructure{PricingType: billing.PricingLinear, PricePerUnit: dec("0.4")}, "3", "", "JPY", "1 = 3×0.4=1"},
		{"LinearZeroUsage", billing.PriceStructure{PricingType: billing.PricingLinear, PricePerUnit: dec("1")}, "0", "", "USD", "0.00 = "},
		{"LinearNegativeUsage", billing.PriceStructure{PricingType: billing.PricingLinear, PricePerUnit: dec("1")}, "-5", "", "USD", "0.00 = "},
		{"PackageRoundsUp", billing.PriceStructure{PricingType: billing.PricingPackage, PackageSize: dec("100"), PricePerPackage: dec("7")}, "101", "", "USD",
			"14.00 = 2×7=14.00"},
		{"PackageExact", billing.PriceStructure{PricingType: billing.PricingPackage, PackageSize: dec("100"), PricePerPackage: dec("7")}, "200", "", "USD",
			"14.00 = 2×7=14.00"},
		{"PackageFractionalUsage", billing.PriceStructure{PricingType: billing.PricingPackage, PackageSize: dec("2.5"), PricePerPackage: dec("1")}, "0.1", "", "USD",
			"1.00 = 1×1=1.00"},
		{"PackageZero", billing.PriceStructure{PricingType: billing.PricingPackage, PackageSize: dec("10"), PricePerPackage: dec("7")}, "0", "", "USD", "0.00 = "},
		{"GraduatedFirstTier", graduated, "50", "", "USD", "5.00 = t1 50×0.10=5.00"},
		{"GraduatedOnUpperBound", graduated, "100", "", "USD", "10.00 = t1 100×0.10=10.00"},
		{"GraduatedJustAboveBound", graduated, "100.5", "", "USD", "15.03 = t1 100×0.10=10.00 + t2 0.5×0.05=0.03 + t2 fee 1×5=5.00"},
		{"GraduatedAllTiers", graduated, "1500", "", "USD",
			"75.00 = t1 100×0.10=10.00 + t2 900×0.05=45.00 + t2 fee 1×5=5.00 + t3 500×0.01=5.00 + t3 fee 1×10=10.00"},
		{"GraduatedZeroChargesNoFee", billing.PriceStructure{PricingType: billing.PricingGraduated, Tiers: tiers("10:1:3", ":1:0")}, "0", "", "USD", "0.00 = "},
		{"GraduatedFeeOnFirstTier", billing.PriceStructure{PricingType: billing.PricingGraduated, Tiers: tiers("10:1:3", ":1:0")}, "1", "", "USD",
			"4.00 = t1 1×1=1.00 + t1 fee 1×3=3.00"},
		{"GraduatedPercentageTier", billing.PriceStructure{PricingType: billing.PricingGraduated, Tiers: tiers("1000:0.03:0:%", ":0.01:0:%")}, "1500", "", "USD",
			"35.00 = t1 % 1000×0.03=30.00 + t2 % 500×0.01=5.00"},
		{"GraduatedJPY", billing.PriceStructure{PricingType: billing.PricingGraduated, Tiers: tiers("10:15.5:0", ":7.25:100")}, "13", "", "JPY",
			"277 = t1 10×15.5=155 + t2 3×7.25=22 + t2 fee 1×100=100"},
		{"VolumeOnUpperBound", volume, "100", "", "USD", "10.00 = t1 100×0.10=10.00"},
		{"VolumeSecondTier", volume, "1000", "", "USD", "55.00 = t2 1000×0.05=50.00 + t2 fee 1×5=5.00"},
		{"VolumeLastTier", volume, "1001", "", "USD", "20.01 = t3 1001×0.01=10.01 + t3 fee 1×10=10.00"},
		{"VolumeZero", volume, "0", "", "USD", "0.00 = "},
		{"VolumePercentage", billing.PriceStructure{PricingType: billing.PricingVolume, Tiers: tiers("100:0.05:0:%", ":0.02:0:%")}, "250", "", "EUR",
			"5.00 = t2 % 250×0.02=5.00"},
		{"SeatsAboveMinimum", seats, "8", "", "USD", "100.00 = 8×12.50=100.00"},
		{"SeatsMinimum", seats, "2", "", "USD", "62.50 = 5×12.50=62.50"},
		{"SeatsProrated", seats, "10", "0.5", "USD", "62.50 = 5.0×12.50=62.50"},
		{"SeatsNoMinimumNoSeats", billing.PriceStructure{PricingType: billing.PricingSeatBased, PricePerSeat: dec("3")}, "0", "", "USD", "0.00 = "},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := billing.ChargeInput{Quantity: billing.MustDecimal(tc.quantity)}
			if n, d, ok := strings.Cut(tc.factor, "/"); ok {
				f, err := billing.MustDecimal(n).Quo(billing.MustDecimal(d))
				if err != nil {
					t.Fatal(err)
				}
				in.Factor = &f
			} else if tc.factor != "" {
				in.Factor = dec(tc.factor)
			}
			got := renderCharge(tc.p.Charge(in, tc.currency, billing.RoundHalfUp))
			if got != tc.want {
				t.Fatalf("charge = %q\n          want %q", got, tc.want)
			}
		})
	}
}

func TestChargeRoundingMode(t *testing.T) {
	t.Parallel()
	p := billing.PriceStructure{PricingType: billing.PricingLinear, PricePerUnit: dec("0.025")}
	in := billing.ChargeInput{Quantity: billing.MustDecimal("1")}
	if got := p.Charge(in, "USD", billing.RoundHalfEven).Total.String(); got != "0.02" {
		t.Fatalf("half-even total = %s, want 0.02", got)
	}
	if got := p.Charge(in, "USD", billing.RoundHalfUp).Total.String(); got != "0.03" {
		t.Fatalf("half-up total = %s, want 0.03", got)
	}
}

// decimalText compares decimals by their text, so "1.50" and "1.5" differ
// as they would on the wire.
var decimalText = cmp.Comparer(func(a, b billing.Decimal) bool { return a.String() == b.String() })
