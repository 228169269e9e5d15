package billing

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Product groups prices: what is sold, whatever its pricing.
type Product struct {
	ID string `json:"id"`
	// ServiceAccountID is the account that owns the product.
	ServiceAccountID string    `json:"serviceAccountId"`
	Name             string    `json:"name"`
	CreatedAt        time.Time `json:"createdAt"`
}

// CreateProductParams are the fields of a new product.
type CreateProductParams struct {
	Name string `json:"name"`
}

// CreateProduct creates a product. Returns validation_failed for a missing
// or invalid name.
func (s *Service) CreateProduct(ctx context.Context, account string, p CreateProductParams) (*Product, error) {
	var v validator
	s.checkString(&v, "name", p.Name, true)
	if err := v.err(); err != nil {
		return nil, err
	}
	pr := &Product{ID: s.newID(), ServiceAccountID: account, Name: p.Name, CreatedAt: s.clock()}
	return createOwned(ctx, s, tableProducts, account, pr.ID, pr)
}

// GetProduct returns a product. Returns not_found if the account has no such
// product.
func (s *Service) GetProduct(ctx context.Context, account, id string) (*Product, error) {
	return getOne[Product](ctx, s, tableProducts, account, id, "product")
}

// ListProducts lists the account's products by creation, newest first
// unless order is ASC ("" means DESC). Returns validation_failed for a bad
// order, limit or cursor.
func (s *Service) ListProducts(ctx context.Context, account string, order SortOrder, p ListParams) (Page[Product], error) {
	return listByCreation[Product](ctx, s, "products", tableProducts, account, order, p)
}

// listByCreation lists the records of table for account in creation order
// without filters.
func listByCreation[T any](ctx context.Context, s *Service, name string, table Table, account string, order SortOrder, p ListParams) (Page[T], error) {
	order, err := ParseSortOrder(string(order), SortDesc)
	if err != nil {
		return Page[T]{}, err
	}
	q := listQuery[T]{name: name, table: table, prefix: prefix(account), desc: order == SortDesc, decode: decodeAll[T](nil)}
	return read(ctx, s, func(tx Tx) (Page[T], error) { return list(ctx, s, tx, q, p) })
}

// createOwned stores v, a new record of account with id, in t in a write
// of its own and answers it: the create of a record that needs no other
// record, as products and tax rates are.
func createOwned[T any](ctx context.Context, s *Service, t Table, account, id string, v *T) (*T, error) {
	return mutate(ctx, s, account, func(tx Tx) (*T, error) { return v, putRecord(ctx, tx, t, key(account, id), v) })
}

// TaxRate is a named tax rate; Amount is a fraction between 0 and 1
// ("0.2" is 20%). Billing schedules map prices to tax rates.
type TaxRate struct {
	ID string `json:"id"`
	// ServiceAccountID is the account that owns the tax rate.
	ServiceAccountID string `json:"serviceAccountId"`
	Name             string `json:"name"`
	// Amount is the rate as a fraction from 0 to 1 ("0.2" is 20%).
	Amount    Decimal   `json:"amount"`
	CreatedAt time.Time `json:"createdAt"`
}

// CreateTaxRateParams are the fields of a new tax rate. Amount is required.
type CreateTaxRateParams struct {
	Name string `json:"name"`
	// Amount is the rate as a fraction from 0 to 1; required.
	Amount *Decimal `json:"amount"`
}

// CreateTaxRate creates a tax rate. Returns validation_failed for a missing
// name or an amount missing or outside 0 to 1.
func (s *Service) CreateTaxRate(ctx context.Context, account string, p CreateTaxRateParams) (*TaxRate, error) {
	var v validator
	s.checkString(&v, "name", p.Name, true)
	switch {
	case p.Amount == nil:
		v.add("amount", "amount is required")
	case p.Amount.Sign() < 0 || p.Amount.Cmp(DecimalFromInt(1)) > 0:
		v.add("amount", "amount must be a fraction between 0 and 1, such as \"0.2\" for 20%%")
	}
	if err := v.err(); err != nil {
		return nil, err
	}
	r := &TaxRate{ID: s.newID(), ServiceAccountID: account, Name: p.Name, Amount: *p.Amount, CreatedAt: s.clock()}
	return createOwned(ctx, s, tableTaxRates, account, r.ID, r)
}

// GetTaxRate returns a tax rate. Returns not_found if the account has no
// such tax rate.
func (s *Service) GetTaxRate(ctx context.Context, account, id string) (*TaxRate, error) {
	return getOne[TaxRate](ctx, s, tableTaxRates, account, id, "tax rate")
}

// ListTaxRates lists the account's tax rates by creation, newest first
// unless order is ASC. Returns validation_failed for a bad order, limit or
// cursor.
func (s *Service) ListTaxRates(ctx context.Context, account string, order SortOrder, p ListParams) (Page[TaxRate], error) {
	return listByCreation[TaxRate](ctx, s, "tax_rates", tableTaxRates, account, order, p)
}

// BillingFrequency is how often a price bills.
type BillingFrequency string

// The billing frequencies.
const (
	FrequencyOneTime    BillingFrequency = "ONE_TIME"
	FrequencyMonthly    BillingFrequency = "MONTHLY"
	FrequencyQuarterly  BillingFrequency = "QUARTERLY"
	FrequencyHalfYearly BillingFrequency = "HALF_YEARLY"
	FrequencyYearly     BillingFrequency = "YEARLY"
)

// BillingType says whether a price bills at the start of its period
// (IN_ADVANCE) or at its end (IN_ARREARS).
type BillingType string

// The billing types.
const (
	BillingTypeInArrears BillingType = "IN_ARREARS"
	BillingTypeInAdvance BillingType = "IN_ADVANCE"
)

// PriceStatus is the status of a price: only ACTIVE prices can be used by
// an activated schedule.
type PriceStatus string

// The price statuses.
const (
	PriceStatusActive PriceStatus = "ACTIVE"
	PriceStatusDraft  PriceStatus = "DRAFT"
)

// UsageCalculationPeriod is the period over which usage is aggregated.
type UsageCalculationPeriod struct {
	// Frequency is the unit of the period (MONTHLY, ...).
	Frequency BillingFrequency `json:"frequency"`
	// Interval is how many Frequency units one period spans (only 1 is
	// accepted for now).
	Interval int `json:"interval"`
}

// IntegrationID links a record to an external system; stored and echoed.
type IntegrationID struct {
	// Service names the external system.
	Service string `json:"service"`
	ID      string `json:"id"`
	// IsPending is the external system's pending flag, stored and echoed.
	IsPending bool `json:"isPending"`
	// LastSynced is when the record was last synced there; nil when never.
	LastSynced *time.Time `json:"lastSynced,omitempty"`
	// URL is the record's page in the external system, if any.
	URL string `json:"url,omitempty"`
}

// CustomMetricParameter overrides the default value of a parameter of the
// price's usage metric.
type CustomMetricParameter struct {
	// ParameterID is the id of the metric's parameter to override.
	ParameterID string `json:"parameterId"`
	// Value replaces the parameter's default value.
	Value string `json:"value"`
}

// Price is what a product costs: a pricing structure, a currency and a
// billing rhythm. Prices are immutable but for their name and status, so
// issued invoices stay explainable.
type Price struct {
	ID string `json:"id"`
	// ServiceAccountID is the account that owns the price.
	ServiceAccountID string `json:"serviceAccountId"`
	// ProductID is the product the price sells.
	ProductID string `json:"productId"`
	// Name is the title of the invoice lines the price produces.
	Name string `json:"name"`
	// Currency of every amount of Structure; a schedule's prices all share one.
	Currency Currency `json:"currency"`
	// Structure says how a charge is computed from the period's usage or seats.
	Structure PriceStructure `json:"structure"`
	// BillingFrequency is how long one period of the price is (ONE_TIME bills
	// once, at the start of its phase).
	BillingFrequency BillingFrequency `json:"billingFrequency"`
	// BillingType says whether a period is billed on its first day (IN_ADVANCE) or
	// after its last (IN_ARREARS).
	BillingType BillingType `json:"billingType"`
	CreatedAt   time.Time   `json:"createdAt"`
	UpdatedAt   time.Time   `json:"updatedAt"`
	// IntegrationIDs are the price's ids in other systems; always present.
	IntegrationIDs []IntegrationID `json:"integrationIds"`
	// CustomMetricParameters are the values passed to a CUSTOM usage metric's
	// parameters; always present.
	CustomMetricParameters []CustomMetricParameter `json:"customMetricParameters"`
	// ListPriceID is stored and echoed; empty when not given.
	ListPriceID string `json:"listPriceId,omitempty"`
	// UsageCalculationPeriod is the period usage is measured over; usage-based
	// prices always carry it (the billing frequency, interval 1: the only value
	// accepted for now); nil for the others.
	UsageCalculationPeriod *UsageCalculationPeriod `json:"usageCalculationPeriod,omitempty"`
	// Status is ACTIVE (the default) or DRAFT; a DRAFT price cannot be on a
	// schedule that is activated.
	Status PriceStatus `json:"status"`
	// Features are the features the price grants to the customers billed
	// for it (docs/entitlements.md); omitted when none.
	Features []Feature `json:"features,omitempty"`
}

// CreatePriceParams are the fields of a new price. Status defaults to
// ACTIVE; UsageCalculationPeriod of a usage-based price defaults to its
// billing frequency with interval 1.
type CreatePriceParams struct {
	// ProductID is the product the price sells; required, of this account.
	ProductID string `json:"productId"`
	Name      string `json:"name"`
	// Currency of every amount of Structure; required.
	Currency Currency `json:"currency"`
	// Structure is the pricing structure; required (see PriceStructure).
	Structure PriceStructure `json:"structure"`
	// BillingFrequency is how long one period of the price is; required.
	BillingFrequency BillingFrequency `json:"billingFrequency"`
	// BillingType is IN_ADVANCE or IN_ARREARS; required.
	BillingType BillingType `json:"billingType"`
	// UsageCalculationPeriod is only for usage-based prices; nil takes the
	// billing frequency, interval 1.
	UsageCalculationPeriod *UsageCalculationPeriod `json:"usageCalculationPeriod"`
	// CustomMetricParameters override parameters of the price's usage
	// metric; may be empty.
	CustomMetricParameters []CustomMetricParameter `json:"customMetricParameters"`
	// ListPriceID, when set, is another price of this account; stored and
	// echoed.
	ListPriceID string `json:"listPriceId"`
	// IntegrationIDs are the price's ids in other systems; stored and echoed.
	IntegrationIDs []IntegrationID `json:"integrationIds"`
	// Status is ACTIVE (the default when empty) or DRAFT.
	Status PriceStatus `json:"status"`
	// Features the price grants: boolean, or metered with a limit per
	// billing period (docs/entitlements.md).
	Features []Feature `json:"features"`
}

// UpdatePriceParams are the fields of a price that can change.
type UpdatePriceParams struct {
	Name string `json:"name"`
	// Status is ACTIVE or DRAFT; required. A price an ACTIVE schedule uses
	// cannot go back to DRAFT.
	Status PriceStatus `json:"status"`
}

// PriceFilter selects prices in ListPrices. Empty fields do not filter.
type PriceFilter struct {
	// Currency keeps prices in this currency.
	Currency Currency
	Name     string // substring of the name, ignoring case
	// BillingFrequency keeps prices of this frequency.
	BillingFrequency BillingFrequency
	// ProductID keeps the prices of this product.
	ProductID string
	// SortOrder orders by creation: DESC (newest first, the default) or ASC.
	SortOrder SortOrder
}

func checkFrequency(v *validator, field string, f BillingFrequency) {
	switch f {
	case FrequencyOneTime, FrequencyMonthly, FrequencyQuarterly, FrequencyHalfYearly, FrequencyYearly:
	case "":
		v.add(field, "%s is required", field)
	default:
		v.add(field, "%s must be ONE_TIME, MONTHLY, QUARTERLY, HALF_YEARLY or YEARLY", field)
	}
}

func checkPriceStatus(v *validator, st PriceStatus, required bool) {
	switch {
	case st == "" && !required, st == PriceStatusActive, st == PriceStatusDraft:
	case st == "":
		v.add("status", "status is required")
	default:
		v.add("status", "status must be ACTIVE or DRAFT")
	}
}

// validatePrice checks the fields of p that need no store.
func (s *Service) validatePrice(p *CreatePriceParams) error {
	var v validator
	validateFeatures(&v, "features", p.Features)
	checkKey(&v, "productId", p.ProductID, true)
	s.checkString(&v, "name", p.Name, true)
	if !p.Currency.Valid() {
		v.add("currency", "currency is required and must be a supported ISO 4217 code")
	}
	checkFrequency(&v, "billingFrequency", p.BillingFrequency)
	switch p.BillingType {
	case BillingTypeInAdvance:
		v.check(!p.Structure.PricingType.UsageBased(), "billingType", "usage-based prices must be IN_ARREARS")
	case BillingTypeInArrears:
	case "":
		v.add("billingType", "billingType is required")
	default:
		v.add("billingType", "billingType must be IN_ARREARS or IN_ADVANCE")
	}
	v.merge("structure", p.Structure.validate())
	if ucp := p.UsageCalculationPeriod; ucp != nil {
		switch {
		case !p.Structure.PricingType.UsageBased():
			v.add("usageCalculationPeriod", "usageCalculationPeriod is only allowed on usage-based prices")
		case ucp.Frequency != p.BillingFrequency || ucp.Interval != 1:
			v.add("usageCalculationPeriod", "usageCalculationPeriod must be the billing frequency with interval 1")
		}
	}
	if len(p.CustomMetricParameters) > 0 && p.Structure.UsageMetricID == "" {
		v.add("customMetricParameters", "customMetricParameters need a usage metric")
	}
	if len(p.IntegrationIDs) > s.limits.MaxEntries {
		v.add("integrationIds", "at most %d integration ids", s.limits.MaxEntries)
	}
	for i, id := range p.IntegrationIDs {
		s.checkString(&v, fmt.Sprintf("integrationIds[%d].service", i), id.Service, true)
		s.checkString(&v, fmt.Sprintf("integrationIds[%d].id", i), id.ID, true)
		s.checkString(&v, fmt.Sprintf("integrationIds[%d].url", i), id.URL, false)
	}
	checkKey(&v, "listPriceId", p.ListPriceID, false)
	checkPriceStatus(&v, p.Status, false)
	return v.err()
}

// checkPriceReferences checks, inside tx, that the records p names exist
// in the account: another account's records count as missing.
func (s *Service) checkPriceReferences(ctx context.Context, tx Tx, account string, p *CreatePriceParams) error {
	var v validator
	ok, err := exists(ctx, tx, tableProducts, key(account, p.ProductID))
	if err != nil {
		return err
	}
	v.check(ok, "productId", "no product %q in this account", p.ProductID)
	if p.ListPriceID != "" {
		if ok, err = exists(ctx, tx, tablePrices, key(account, p.ListPriceID)); err != nil {
			return err
		}
		v.check(ok, "listPriceId", "no price %q in this account", p.ListPriceID)
	}
	if id := p.Structure.SeatMetricID; id != "" {
		if ok, err = exists(ctx, tx, tableSeatMetrics, key(account, id)); err != nil {
			return err
		}
		v.check(ok, "structure.seatMetricId", "no seat metric %q in this account", id)
	}
	if id := p.Structure.UsageMetricID; id != "" {
		m, err := findRecord[UsageMetric](ctx, tx, tableUsageMetrics, key(account, id))
		switch {
		case err != nil:
			return err
		case m == nil || m.DeletedAt != nil:
			v.add("structure.usageMetricId", "no usage metric %q in this account", id)
		default:
			checkCustomParameters(&v, m, p.CustomMetricParameters)
		}
	}
	if err := checkFeatureMetrics(ctx, tx, &v, account, "features", p.Features); err != nil {
		return err
	}
	return v.err()
}

// checkCustomParameters checks that each parameter names a parameter of m
// once, with a value of its type.
func checkCustomParameters(v *validator, m *UsageMetric, params []CustomMetricParameter) {
	seen := map[string]bool{}
	for i, cp := range params {
		field := fmt.Sprintf("customMetricParameters[%d]", i)
		j := slices.IndexFunc(m.Parameters, func(p UsageMetricParameter) bool { return p.ID == cp.ParameterID })
		switch {
		case j < 0:
			v.add(field+".parameterId", "the usage metric has no parameter %q", cp.ParameterID)
		case seen[cp.ParameterID]:
			v.add(field+".parameterId", "parameter %q is given twice", cp.ParameterID)
		default:
			if err := checkParameterValue(m.Parameters[j].Type, cp.Value); err != nil {
				v.add(field+".value", "value %s", err.Error())
			}
		}
		seen[cp.ParameterID] = true
	}
}

// CreatePrice creates a price. Returns validation_failed for invalid
// fields (all at once), including a productId, listPriceId, usageMetricId
// (deleted metrics included) or seatMetricId that names no record of the
// account.
func (s *Service) CreatePrice(ctx context.Context, account string, p CreatePriceParams) (*Price, error) {
	if err := s.validatePrice(&p); err != nil {
		return nil, err
	}
	now := s.clock()
	pr := &Price{
		ID: s.newID(), ServiceAccountID: account, ProductID: p.ProductID, Name: p.Name,
		Currency: p.Currency, Structure: p.Structure.normalized(), BillingFrequency: p.BillingFrequency,
		BillingType: p.BillingType, CreatedAt: now, UpdatedAt: now,
		IntegrationIDs:         append([]IntegrationID{}, p.IntegrationIDs...),
		CustomMetricParameters: append([]CustomMetricParameter{}, p.CustomMetricParameters...),
		ListPriceID:            p.ListPriceID, Status: p.Status,
		Features: slices.Clone(p.Features),
	}
	if pr.Status == "" {
		pr.Status = PriceStatusActive
	}
	if pr.Structure.PricingType.UsageBased() {
		pr.UsageCalculationPeriod = &UsageCalculationPeriod{Frequency: p.BillingFrequency, Interval: 1}
	}
	return mutate(ctx, s, account, func(tx Tx) (*Price, error) {
		if err := s.checkPriceReferences(ctx, tx, account, &p); err != nil {
			return nil, err
		}
		if err := trackFeatureRollups(ctx, tx, account, p.Features); err != nil {
			return nil, err
		}
		return pr, putRecord(ctx, tx, tablePrices, key(account, pr.ID), pr)
	})
}

// GetPrice returns a price. Returns not_found if the account has no such
// price.
func (s *Service) GetPrice(ctx context.Context, account, id string) (*Price, error) {
	return getOne[Price](ctx, s, tablePrices, account, id, "price")
}

// UpdatePrice changes a price's name and status, the only mutable fields.
// Returns not_found, validation_failed for a missing name or bad status,
// and invalid_state when an ACTIVE price used by an ACTIVE schedule would go
// back to DRAFT.
func (s *Service) UpdatePrice(ctx context.Context, account, id string, p UpdatePriceParams) (*Price, error) {
	var v validator
	s.checkString(&v, "name", p.Name, true)
	checkPriceStatus(&v, p.Status, true)
	if err := v.err(); err != nil {
		return nil, err
	}
	now := s.clock()
	return updateOwned(ctx, s, tablePrices, account, id, "price", func(tx Tx, pr *Price) error {
		if pr.Status == PriceStatusActive && p.Status == PriceStatusDraft {
			used, err := s.priceUsedByActiveSchedule(ctx, tx, account, id)
			if err != nil {
				return err
			}
			if used {
				return Errorf(CodeInvalidState, "an ACTIVE billing schedule uses this price: it cannot go back to DRAFT")
			}
		}
		pr.Name, pr.Status, pr.UpdatedAt = p.Name, p.Status, now
		return nil
	})
}

// priceUsedByActiveSchedule reports whether a schedule the engine still
// bills (ACTIVE, SUSPENDED or CANCELLED, not archived) uses the price.
func (s *Service) priceUsedByActiveSchedule(ctx context.Context, tx Tx, account, id string) (bool, error) {
	found := false
	err := eachRecord(ctx, tx, tableBillingSchedules, Range{Prefix: prefix(account)}, func(sc *BillingSchedule) error {
		if sc.runnable() && slices.Contains(scheduleDistinctPrices(sc), id) {
			found = true
			return ErrStopScan
		}
		return nil
	})
	return found, err
}

// ListPrices lists the account's prices by creation, newest first unless
// f.SortOrder says ASC (operation 5). Returns validation_failed for bad
// filters, limits or cursors.
func (s *Service) ListPrices(ctx context.Context, account string, f PriceFilter, p ListParams) (Page[Price], error) {
	var v validator
	if f.Currency != "" && !f.Currency.Valid() {
		v.add("currency", "currency must be a supported ISO 4217 code")
	}
	if f.BillingFrequency != "" {
		checkFrequency(&v, "billingFrequency", f.BillingFrequency)
	}
	order, err := ParseSortOrder(string(f.SortOrder), SortDesc)
	v.merge("", err)
	if err := v.err(); err != nil {
		return Page[Price]{}, err
	}
	name := strings.ToLower(f.Name)
	q := listQuery[Price]{
		name:   "prices",
		filter: fmt.Sprintf("%q|%q|%q|%q", f.Currency, f.Name, f.BillingFrequency, f.ProductID),
		table:  tablePrices,
		prefix: prefix(account),
		desc:   order == SortDesc,
		decode: decodeAll(func(pr *Price) bool {
			return (f.Currency == "" || pr.Currency == f.Currency) &&
				(name == "" || strings.Contains(strings.ToLower(pr.Name), name)) &&
				(f.BillingFrequency == "" || pr.BillingFrequency == f.BillingFrequency) &&
				(f.ProductID == "" || pr.ProductID == f.ProductID)
		}),
	}
	return read(ctx, s, func(tx Tx) (Page[Price], error) { return list(ctx, s, tx, q, p) })
}

// activePriceUses reports whether an ACTIVE price of the account satisfies
// uses. Prices are catalog-sized, so a scan is cheap.
func (s *Service) activePriceUses(ctx context.Context, tx Tx, account string, uses func(*PriceStructure) bool) (bool, error) {
	found := false
	err := tx.Scan(ctx, tablePrices, Range{Prefix: prefix(account)}, func(_, v []byte) error {
		pr, _, err := decodeAll[Price](nil)(nil, v)
		if err != nil {
			return err
		}
		if pr.Status == PriceStatusActive && uses(&pr.Structure) {
			found = true
			return ErrStopScan
		}
		return nil
	})
	return found, err
}
