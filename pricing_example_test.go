package billing_test

import (
	"fmt"

	"github.com/billingd/billing"
)

// A GRADUATED price turned into invoice lines: each reached tier charges the
// units inside it, plus its fee once.
func ExamplePriceStructure_Charge() {
	bound := billing.MustDecimal("100")
	p := billing.PriceStructure{
		PricingType: billing.PricingGraduated,
		Tiers: []billing.Tier{
			{UpperBound: &bound, Price: billing.MustDecimal("0.10")},
			{Price: billing.MustDecimal("0.05"), Fee: billing.MustDecimal("5")},
		},
	}
	c := p.Charge(billing.ChargeInput{Quantity: billing.MustDecimal("150")}, billing.CurrencyUSD, billing.RoundHalfUp)
	for _, l := range c.Lines {
		fmt.Printf("tier %d fee=%t: %s × %s = %s\n", l.Tier, l.Fee, l.Quantity, l.Rate, l.Amount)
	}
	fmt.Println("total", c.Total)
	// Output:
	// tier 1 fee=false: 100 × 0.10 = 10.00
	// tier 2 fee=false: 50 × 0.05 = 2.50
	// tier 2 fee=true: 1 × 5 = 5.00
	// total 17.50
}
