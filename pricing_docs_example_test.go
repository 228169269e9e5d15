package billing_test

import (
	"fmt"

	"github.com/billingd/billing"
)

// The worked examples of docs/concepts.md ("Pricing structures"): each
// prints what the document shows.
func ExamplePriceStructure_Charge_structures() {
	d := billing.MustDecimal
	ptr := func(s string) *billing.Decimal { v := d(s); return &v }
	seats := int64(10)
	show := func(name string, p billing.PriceStructure, in billing.ChargeInput) {
		c := p.Charge(in, billing.CurrencyGBP, billing.RoundHalfUp)
		fmt.Printf("%s:", name)
		for _, l := range c.Lines {
			fmt.Printf(" [%s × %s = %s]", l.Quantity, l.Rate, l.Amount)
		}
		fmt.Println(" total", c.Total)
	}
	show("FIXED, 12 of 30 days", billing.PriceStructure{PricingType: billing.PricingFixed, Price: ptr("49.00")},
		billing.ChargeInput{Factor: ptr("0.4")})
	show("LINEAR 1,234 calls", billing.PriceStructure{PricingType: billing.PricingLinear, PricePerUnit: ptr("0.002")},
		billing.ChargeInput{Quantity: d("1234")})
	show("PACKAGE 2,500 emails", billing.PriceStructure{PricingType: billing.PricingPackage, PackageSize: ptr("1000"), PricePerPackage: ptr("5.00")},
		billing.ChargeInput{Quantity: d("2500")})
	show("VOLUME 150 units", billing.PriceStructure{PricingType: billing.PricingVolume, Tiers: []billing.Tier{
		{UpperBound: ptr("100"), Price: d("0.10")}, {Price: d("0.05"), Fee: d("5")}}},
		billing.ChargeInput{Quantity: d("150")})
	show("SEAT_BASED 7 seats, minimum 10", billing.PriceStructure{PricingType: billing.PricingSeatBased, PricePerSeat: ptr("12.00"), ContractedMinimumSeats: &seats},
		billing.ChargeInput{Quantity: d("7")})
	// Output:
	// FIXED, 12 of 30 days: [0.4 × 49.00 = 19.60] total 19.60
	// LINEAR 1,234 calls: [1234 × 0.002 = 2.47] total 2.47
	// PACKAGE 2,500 emails: [3 × 5.00 = 15.00] total 15.00
	// VOLUME 150 units: [150 × 0.05 = 7.50] [1 × 5 = 5.00] total 12.50
	// SEAT_BASED 7 seats, minimum 10: [10 × 12.00 = 120.00] total 120.00
}
