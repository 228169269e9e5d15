package billing

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"
)

// Feature is a feature a price or a billing schedule phase grants to the
// customers whose billing schedule includes the price, or the phase, in
// the phase in effect: a boolean feature (no UsageMetricID: access or
// not), or a metered one, tied to a usage metric, with a Limit per billing
// period of the price (of a phase: of its first recurring price; nil:
// unlimited).
type Feature struct {
	// FeatureKey names the feature ("sso", "api_calls"); unique in a price.
	FeatureKey string `json:"featureKey"`
	// UsageMetricID makes the feature metered: its usage is the metric's
	// value over the price's current billing period.
	UsageMetricID string `json:"usageMetricId,omitempty"`
	// Limit is the usage allowed per billing period of a metered feature;
	// nil means unlimited. Not allowed on boolean features.
	Limit *Decimal `json:"limit,omitempty"`
}

// Entitlement answers "may this customer use feature X now, and how much
// is left?" at one moment.
type Entitlement struct {
	// FeatureKey is the feature.
	FeatureKey string `json:"featureKey"`
	// HasAccess is true when a phase in effect, or one of its prices,
	// grants the feature and, for a metered feature with a limit, usage is
	// below it.
	HasAccess bool `json:"hasAccess"`
	// Limit is the usage allowed in the period (the sum of the limits of the
	// prices and phases granting it); nil for a boolean or an unlimited
	// feature.
	Limit *Decimal `json:"limit"`
	// Usage is the usage of the current billing period; nil for a boolean
	// feature.
	Usage *Decimal `json:"usage"`
	// Remaining is Limit - Usage, never below 0; nil without a Limit.
	Remaining *Decimal `json:"remaining"`
	// ResetsAt is when the current billing period ends and usage starts
	// again from 0 (in UTC); nil for a boolean feature.
	ResetsAt *time.Time `json:"resetsAt"`
}

// MaxFeatures bounds the features of one price or phase.
const MaxFeatures = 100

// validateFeatures checks the features of a price or a phase, named name
// in messages ("features", "phases[1].features"): keys required and
// unique, a limit only on a metered feature and not negative.
func validateFeatures(v *validator, name string, features []Feature) {
	v.check(len(features) <= MaxFeatures, name, "at most %d features are allowed", MaxFeatures)
	seen := map[string]bool{}
	for i, f := range features {
		field := fmt.Sprintf("%s[%d]", name, i)
		checkKey(v, field+".featureKey", f.FeatureKey, true)
		v.check(!seen[f.FeatureKey], field+".featureKey", "featureKey %q appears twice", f.FeatureKey)
		seen[f.FeatureKey] = true
		checkKey(v, field+".usageMetricId", f.UsageMetricID, false)
		if f.Limit != nil {
			v.check(f.UsageMetricID != "", field+".limit", "limit is only allowed on metered features (with a usageMetricId)")
			v.check(f.Limit.Sign() >= 0, field+".limit", "limit must not be negative")
		}
	}
}

// checkFeatureMetrics adds an error for each feature (of the list named
// name) whose usage metric is not a live metric of the account.
func checkFeatureMetrics(ctx context.Context, tx Tx, v *validator, account, name string, features []Feature) error {
	for i, f := range features {
		if f.UsageMetricID == "" {
			continue
		}
		m, err := findRecord[UsageMetric](ctx, tx, tableUsageMetrics, key(account, f.UsageMetricID))
		if err != nil {
			return err
		}
		v.check(m != nil && m.DeletedAt == nil, fmt.Sprintf("%s[%d].usageMetricId", name, i), "no usage metric %q in this account", f.UsageMetricID)
	}
	return nil
}

// grant is one price's grant of a feature in one billing period.
type grant struct {
	feature Feature
	period  billingPeriod
}

// Entitlements returns the features the customer is entitled to at
// instant at (zero: now), sorted by key: those granted by the phases in
// effect on that day (in the customer's time zone) of its billing
// schedules that the engine bills, and by their prices, with the usage of metered features over
// each price's billing period containing that day. Returns not_found for an
// unknown customer.
func (s *Service) Entitlements(ctx context.Context, account, customerID string, at time.Time) ([]Entitlement, error) {
	if at.IsZero() {
		at = s.clock()
	}
	return read(ctx, s, func(tx Tx) ([]Entitlement, error) {
		tx, done, err := s.readAhead(ctx, tx, "entitlements\x00"+account+"\x00"+customerID)
		if err != nil {
			return nil, err
		}
		out, err := s.entitlements(ctx, tx, account, customerID, at)
		if err == nil {
			done()
		}
		return out, err
	})
}

// entitlements is Entitlements in transaction tx.
func (s *Service) entitlements(ctx context.Context, tx Tx, account, customerID string, at time.Time) ([]Entitlement, error) {
	c, err := s.getCustomer(ctx, tx, account, customerID)
	if err != nil {
		return nil, err
	}
	owners := map[string]string{c.ID: c.ID} // as aliasOwners answers
	for _, a := range c.CustomerAliases {
		owners[a] = c.ID
	}
	cal, err := s.calendarFor(ctx, tx, account, customerID)
	if err != nil {
		return nil, err
	}
	grants, err := s.grantsOn(ctx, tx, account, customerID, cal.DateOf(at))
	if err != nil {
		return nil, err
	}
	out := make([]Entitlement, 0, len(grants))
	for _, k := range sortedKeys(grants) {
		e, err := s.entitlement(ctx, tx, account, owners, cal, k, grants[k])
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// Entitlement returns the customer's entitlement to one feature at instant
// at (zero: now), as Entitlements; a feature no price grants answers
// HasAccess false. Returns not_found for an unknown customer.
func (s *Service) Entitlement(ctx context.Context, account, customerID, featureKey string, at time.Time) (*Entitlement, error) {
	all, err := s.Entitlements(ctx, account, customerID, at)
	if err != nil {
		return nil, err
	}
	for i := range all {
		if all[i].FeatureKey == featureKey {
			return &all[i], nil
		}
	}
	return &Entitlement{FeatureKey: featureKey}, nil
}

// grantsOn returns, by feature key, the grants of the prices billed for
// day d by the customer's schedules (the engine's charges: phases, ends and
// suspensions as it bills them), then those of the phases of these
// prices: a phase's features while one of its recurring prices is billed
// for d, over the billing period of the first of them in the phase's
// order.
func (s *Service) grantsOn(ctx context.Context, tx Tx, account, customerID string, d Date) (map[string][]grant, error) {
	out := map[string][]grant{}
	err := eachRecord(ctx, tx, tableBillingSchedules, Range{Prefix: prefix(account)}, func(sc *BillingSchedule) error {
		if sc.CustomerID != customerID || !sc.runnable() {
			return nil
		}
		prices, err := s.schedulePrices(ctx, tx, sc)
		if err != nil {
			return err
		}
		phases := map[int]charge{} // phase → its first recurring price's charge on d
		for _, ch := range scheduleCharges(sc, prices, d.AddDays(1)) {
			if d.Before(ch.Period.Start) || !d.Before(ch.Period.End) {
				continue
			}
			for _, f := range ch.Price.Features {
				out[f.FeatureKey] = append(out[f.FeatureKey], grant{feature: f, period: ch.Period})
			}
			if first, ok := phases[ch.Phase]; !oneTime(ch.Price) && (!ok || pricePosition(sc, ch) < pricePosition(sc, first)) {
				phases[ch.Phase] = ch
			}
		}
		for _, i := range slices.Sorted(maps.Keys(phases)) {
			for _, f := range sc.Phases[i].Features {
				out[f.FeatureKey] = append(out[f.FeatureKey], grant{feature: f, period: phases[i].Period})
			}
		}
		return nil
	})
	return out, err
}

// pricePosition is the position of ch's price in its phase.
func pricePosition(sc *BillingSchedule, ch charge) int {
	return slices.Index(sc.Phases[ch.Phase].PriceIDs, ch.Price.ID)
}

// trackPhaseRollups tracks the metrics of the metered features of sc's
// phases (trackFeatureRollups).
func trackPhaseRollups(ctx context.Context, tx Tx, account string, sc *BillingSchedule) error {
	for _, ph := range sc.Phases {
		if err := trackFeatureRollups(ctx, tx, account, ph.Features); err != nil {
			return err
		}
	}
	return nil
}

// entitlement combines the grants of one feature: access when any grants
// it; limits add up (unlimited when any is); usage is the metric's value
// over the billing period of the first metered grant.
func (s *Service) entitlement(ctx context.Context, tx Tx, account string, owners map[string]string, cal Calendar, k string, gs []grant) (Entitlement, error) {
	e := Entitlement{FeatureKey: k, HasAccess: true}
	i := slices.IndexFunc(gs, func(g grant) bool { return g.feature.UsageMetricID != "" })
	if i < 0 {
		return e, nil
	}
	g := gs[i]
	m, err := s.getUsageMetric(ctx, tx, account, g.feature.UsageMetricID)
	if err != nil {
		return e, err
	}
	calc, err := s.calculateOwned(ctx, tx, account, m, owners, cal.Period(g.period.Start, g.period.End), nil)
	if err != nil {
		return e, err
	}
	resets := NormalizeTime(cal.Start(g.period.End)) // in UTC, as every timestamp of the API
	e.Usage, e.ResetsAt = &calc.Value, &resets
	limit, unlimited := DecimalFromInt(0), false
	for _, g := range gs {
		if g.feature.UsageMetricID == "" {
			continue
		}
		if g.feature.Limit == nil {
			unlimited = true
			break
		}
		limit = limit.Add(*g.feature.Limit)
	}
	if unlimited {
		return e, nil
	}
	remaining := limit.Sub(calc.Value)
	if remaining.Sign() < 0 {
		remaining = DecimalFromInt(0)
	}
	e.Limit, e.Remaining, e.HasAccess = &limit, &remaining, calc.Value.Cmp(limit) < 0
	return e, nil
}
