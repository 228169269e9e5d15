package billing

import (
	"fmt"
	"slices"
)

// PricingType selects the shape of a price structure and how it charges.
type PricingType string

// The pricing types.
const (
	PricingOneTime   PricingType = "ONE_TIME"
	PricingFixed     PricingType = "FIXED"
	PricingLinear    PricingType = "LINEAR"
	PricingPackage   PricingType = "PACKAGE"
	PricingGraduated PricingType = "GRADUATED"
	PricingVolume    PricingType = "VOLUME"
	PricingSeatBased PricingType = "SEAT_BASED"
)

// UsageBased reports whether prices of type t charge for metered usage.
func (t PricingType) UsageBased() bool {
	switch t {
	case PricingLinear, PricingPackage, PricingGraduated, PricingVolume:
		return true
	}
	return false
}

// UsageCalculationMode is how a GRADUATED price aggregates usage; only
// BILLING_PERIOD exists.
type UsageCalculationMode string

// UsageCalculationBillingPeriod aggregates usage over each billing period.
const UsageCalculationBillingPeriod UsageCalculationMode = "BILLING_PERIOD"

// Tier is one tier of a GRADUATED or VOLUME price. It covers usage above
// the previous tier's UpperBound (0 for the first) up to and including its
// own; the last tier has no UpperBound. With IsPricePercentage, Price is a
// fraction of the units' amount ("0.02" is 2%).
type Tier struct {
	// UpperBound is the last unit of the tier (inclusive); nil on the last tier,
	// which has no end.
	UpperBound *Decimal `json:"upperBound,omitempty"`
	// Price is the price of one unit in the tier, in the price's currency (a
	// fraction when IsPricePercentage).
	Price Decimal `json:"price"`
	// Fee is charged once when usage reaches the tier; zero for none.
	Fee Decimal `json:"fee"`
	// IsPricePercentage makes Price a percentage of the unit value rather than
	// money.
	IsPricePercentage bool `json:"isPricePercentage"`
}

// PriceStructure is how a price charges. PricingType says which of the other
// fields apply (docs/concepts.md, "Pricing structures"); the others must be empty.
type PriceStructure struct {
	// PricingType says which of the other fields apply (FIXED, LINEAR, PACKAGE,
	// GRADUATED, VOLUME, SEAT_BASED, ...).
	PricingType PricingType `json:"pricingType"`
	// Price is the amount of a FIXED or ONE_TIME price per period; nil for the
	// other types.
	Price *Decimal `json:"price,omitempty"`
	// PricePerUnit is the rate of a LINEAR price per unit of usage; nil for the
	// other types.
	PricePerUnit *Decimal `json:"pricePerUnit,omitempty"`
	// IsPricePercentage makes PricePerUnit a percentage (the line's rateDisplay is
	// then PERCENTAGE).
	IsPricePercentage *bool `json:"isPricePercentage,omitempty"`
	// PackageSize is the units in one package of a PACKAGE price (usage is rounded
	// up to whole packages).
	PackageSize *Decimal `json:"packageSize,omitempty"`
	// PricePerPackage is the price of one package of a PACKAGE price.
	PricePerPackage *Decimal `json:"pricePerPackage,omitempty"`
	// Tiers of a GRADUATED or VOLUME price, in increasing UpperBound.
	Tiers []Tier `json:"tiers,omitempty"`
	// UsageMetricID is the usage metric whose value is the usage of LINEAR,
	// PACKAGE, GRADUATED and VOLUME prices.
	UsageMetricID string `json:"usageMetricId,omitempty"`
	// UsageCalculationMode says how the metric is calculated over the period;
	// empty for the default.
	UsageCalculationMode UsageCalculationMode `json:"usageCalculationMode,omitempty"`
	// SeatMetricID is the seat metric counted by a SEAT_BASED price.
	SeatMetricID string `json:"seatMetricId,omitempty"`
	// PricePerSeat is the price of one seat for a whole period of a SEAT_BASED
	// price.
	PricePerSeat *Decimal `json:"pricePerSeat,omitempty"`
	// ContractedMinimumSeats is the least number of seats billed, whatever the
	// balance; nil for none.
	ContractedMinimumSeats *int64 `json:"contractedMinimumSeats,omitempty"`
}

// structureFields lists which optional fields each pricing type takes.
var structureFields = map[PricingType][]string{
	PricingOneTime:   {"price"},
	PricingFixed:     {"price"},
	PricingLinear:    {"pricePerUnit", "usageMetricId", "isPricePercentage"},
	PricingPackage:   {"packageSize", "pricePerPackage", "usageMetricId"},
	PricingGraduated: {"tiers", "usageMetricId", "usageCalculationMode"},
	PricingVolume:    {"tiers", "usageMetricId"},
	PricingSeatBased: {"seatMetricId", "pricePerSeat", "contractedMinimumSeats"},
}

// present returns the JSON names of the fields of p that are set.
func (p *PriceStructure) present() []string {
	set := []struct {
		name string
		ok   bool
	}{
		{"price", p.Price != nil}, {"pricePerUnit", p.PricePerUnit != nil},
		{"isPricePercentage", p.IsPricePercentage != nil}, {"packageSize", p.PackageSize != nil},
		{"pricePerPackage", p.PricePerPackage != nil}, {"tiers", p.Tiers != nil},
		{"usageMetricId", p.UsageMetricID != ""}, {"usageCalculationMode", p.UsageCalculationMode != ""},
		{"seatMetricId", p.SeatMetricID != ""}, {"pricePerSeat", p.PricePerSeat != nil},
		{"contractedMinimumSeats", p.ContractedMinimumSeats != nil},
	}
	var out []string
	for _, f := range set {
		if f.ok {
			out = append(out, f.name)
		}
	}
	return out
}

// validate checks p on its own (references are checked against the store
// by the caller). Field paths are relative to the structure.
func (p *PriceStructure) validate() error {
	var v validator
	allowed, ok := structureFields[p.PricingType]
	if !ok {
		v.add("pricingType", "pricingType must be ONE_TIME, FIXED, LINEAR, PACKAGE, GRADUATED, VOLUME or SEAT_BASED")
		return v.err()
	}
	for _, f := range p.present() {
		if !slices.Contains(allowed, f) {
			v.add(f, "%s is not a field of %s prices", f, p.PricingType)
		}
	}
	amount := func(field string, d *Decimal) {
		switch {
		case d == nil:
			v.add(field, "%s is required for %s prices", field, p.PricingType)
		case d.Sign() < 0:
			v.add(field, "%s must not be negative", field)
		}
	}
	switch p.PricingType {
	case PricingOneTime, PricingFixed:
		amount("price", p.Price)
	case PricingLinear:
		amount("pricePerUnit", p.PricePerUnit)
	case PricingPackage:
		amount("pricePerPackage", p.PricePerPackage)
		amount("packageSize", p.PackageSize)
		v.check(p.PackageSize == nil || p.PackageSize.Sign() > 0, "packageSize", "packageSize must be greater than 0")
	case PricingGraduated, PricingVolume:
		v.merge("", validateTiers(p.Tiers))
		m := p.UsageCalculationMode
		v.check(m == "" || m == UsageCalculationBillingPeriod, "usageCalculationMode", "usageCalculationMode must be BILLING_PERIOD")
	case PricingSeatBased:
		amount("pricePerSeat", p.PricePerSeat)
		checkKey(&v, "seatMetricId", p.SeatMetricID, true)
		v.check(p.ContractedMinimumSeats == nil || *p.ContractedMinimumSeats >= 0, "contractedMinimumSeats", "contractedMinimumSeats must be an integer >= 0")
	}
	if p.PricingType.UsageBased() {
		checkKey(&v, "usageMetricId", p.UsageMetricID, true)
	}
	return v.err()
}

// validateTiers checks the tiers rules: at least one tier, bounds strictly
// increasing from above 0, only the last tier open, amounts not negative.
func validateTiers(tiers []Tier) error {
	var v validator
	if len(tiers) == 0 {
		v.add("tiers", "at least one tier is required")
	}
	prev := Decimal{}
	for i, t := range tiers {
		field := fmt.Sprintf("tiers[%d]", i)
		last := i == len(tiers)-1
		switch {
		case last && t.UpperBound != nil:
			v.add(field+".upperBound", "the last tier has no upperBound")
		case !last && t.UpperBound == nil:
			v.add(field+".upperBound", "only the last tier may omit upperBound")
		case t.UpperBound != nil && t.UpperBound.Cmp(prev) <= 0:
			v.add(field+".upperBound", "upperBound must be greater than %s", prev)
		}
		if t.UpperBound != nil {
			prev = *t.UpperBound
		}
		v.check(t.Price.Sign() >= 0, field+".price", "price must not be negative")
		v.check(t.Fee.Sign() >= 0, field+".fee", "fee must not be negative")
	}
	return v.err()
}

// normalized returns p with the defaults that responses always carry.
func (p PriceStructure) normalized() PriceStructure {
	p.Tiers = append([]Tier(nil), p.Tiers...)
	switch p.PricingType {
	case PricingLinear:
		if p.IsPricePercentage == nil {
			p.IsPricePercentage = new(bool)
		}
	case PricingGraduated:
		if p.UsageCalculationMode == "" {
			p.UsageCalculationMode = UsageCalculationBillingPeriod
		}
	case PricingSeatBased:
		if p.ContractedMinimumSeats == nil {
			p.ContractedMinimumSeats = new(int64)
		}
	}
	return p
}

// ChargeInput is what a structure charges for over one period.
type ChargeInput struct {
	// Quantity is the usage for usage-based structures and the number of
	// seats for SEAT_BASED; FIXED and ONE_TIME ignore it.
	Quantity Decimal
	// Factor prorates a partial period of FIXED, ONE_TIME and SEAT_BASED
	// structures (days in the partial period / days in the full one); nil
	// means a full period. It is rounded half-up to 12 places. Usage is
	// never prorated.
	Factor *Decimal
}

// ChargeLine is one line of a charge, as it goes on an invoice:
// Amount = round(Quantity × Rate) to the currency's minor units.
type ChargeLine struct {
	// Tier is the 1-based tier of GRADUATED and VOLUME lines; 0 otherwise.
	Tier int
	// Fee marks a tier's flat fee line (Quantity 1, Rate the fee).
	Fee bool
	// Percentage marks a Rate that is a fraction of Quantity, an amount
	// (rateDisplay PERCENTAGE).
	Percentage bool
	// Quantity is the line's quantity (units, seats, packages, or 1).
	Quantity Decimal
	// Rate is the price of one unit of Quantity (or the fraction, with
	// Percentage).
	Rate Decimal
	// Amount is round(Quantity × Rate) in the currency's minor units.
	Amount Decimal
}

// Charge is the result of pricing one period: its lines, in invoice order,
// and their total. Usage is the usage the charge was computed from (for
// PACKAGE line descriptions).
type Charge struct {
	// Lines are the charge's lines in invoice order.
	Lines []ChargeLine
	// Total is the sum of the lines' amounts.
	Total Decimal
	// Usage is the usage the charge was computed from.
	Usage Decimal
}

// Charge prices one period of p in cur, rounding each line with mode
// (docs/concepts.md, "The billing engine"). Usage of zero or less charges nothing, tier fees
// included; a SEAT_BASED price charges at least ContractedMinimumSeats.
func (p PriceStructure) Charge(in ChargeInput, cur Currency, mode Rounding) Charge {
	c := Charge{Total: cur.Zero(), Usage: in.Quantity}
	factor := DecimalFromInt(1)
	if in.Factor != nil {
		// Reduced, so a factor of 0.5 shows as "0.5", not "0.500000000000".
		factor = MustDecimal(in.Factor.Round(12, RoundHalfUp).Canonical())
	}
	add := func(l ChargeLine) {
		l.Amount = cur.Round(l.Quantity.Mul(l.Rate), mode)
		c.Lines = append(c.Lines, l)
		c.Total = c.Total.Add(l.Amount)
	}
	usage := in.Quantity
	switch p.PricingType {
	case PricingOneTime, PricingFixed:
		add(ChargeLine{Quantity: factor, Rate: deref(p.Price)})
	case PricingSeatBased:
		seats := in.Quantity
		if minimum := DecimalFromInt(derefInt(p.ContractedMinimumSeats)); seats.Cmp(minimum) < 0 {
			seats = minimum
		}
		if seats.Sign() > 0 {
			if in.Factor != nil {
				seats = seats.Mul(factor)
			}
			add(ChargeLine{Quantity: seats, Rate: deref(p.PricePerSeat)})
		}
	default:
		if usage.Sign() <= 0 {
			return c
		}
		p.chargeUsage(usage, add)
	}
	return c
}

// chargeUsage adds the lines of a usage-based structure for usage > 0.
func (p PriceStructure) chargeUsage(usage Decimal, add func(ChargeLine)) {
	switch p.PricingType {
	case PricingLinear:
		add(ChargeLine{Quantity: usage, Rate: deref(p.PricePerUnit), Percentage: p.IsPricePercentage != nil && *p.IsPricePercentage})
	case PricingPackage:
		packages, err := usage.ceilQuo(deref(p.PackageSize))
		if err != nil {
			return // unreachable: validation keeps packageSize > 0
		}
		add(ChargeLine{Quantity: packages, Rate: deref(p.PricePerPackage)})
	case PricingGraduated:
		lower := Decimal{}
		for i, t := range p.Tiers {
			if usage.Cmp(lower) <= 0 {
				break
			}
			upper := usage
			if t.UpperBound != nil && t.UpperBound.Cmp(usage) < 0 {
				upper = *t.UpperBound
			}
			add(ChargeLine{Tier: i + 1, Quantity: upper.Sub(lower), Rate: t.Price, Percentage: t.IsPricePercentage})
			if t.Fee.Sign() != 0 {
				add(ChargeLine{Tier: i + 1, Fee: true, Quantity: DecimalFromInt(1), Rate: t.Fee})
			}
			if t.UpperBound != nil {
				lower = *t.UpperBound
			}
		}
	case PricingVolume:
		if len(p.Tiers) == 0 {
			return // unreachable: validation requires a tier
		}
		i := tierOf(p.Tiers, usage)
		t := p.Tiers[i]
		add(ChargeLine{Tier: i + 1, Quantity: usage, Rate: t.Price, Percentage: t.IsPricePercentage})
		if t.Fee.Sign() != 0 {
			add(ChargeLine{Tier: i + 1, Fee: true, Quantity: DecimalFromInt(1), Rate: t.Fee})
		}
	}
}

// tierOf returns the index of the tier usage falls in: the first whose
// upperBound is at least usage, or the last.
func tierOf(tiers []Tier, usage Decimal) int {
	for i, t := range tiers {
		if t.UpperBound == nil || usage.Cmp(*t.UpperBound) <= 0 {
			return i
		}
	}
	return len(tiers) - 1
}

func deref(d *Decimal) Decimal {
	if d == nil {
		return Decimal{}
	}
	return *d
}

func derefInt(i *int64) int64 {
	if i == nil {
		return 0
	}
	return *i
}
