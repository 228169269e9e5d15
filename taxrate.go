package billing

import (
	"context"
	"time"
)

// TaxRate is a named tax rate; Amount is a fraction between 0 and 1
// ("0.2" is 20%). Billing schedules map prices to tax rates.
type TaxRate struct {
	ID               string    `json:"id"`
	ServiceAccountID string    `json:"serviceAccountId"`
	Name             string    `json:"name"`
	Amount           Decimal   `json:"amount"`
	CreatedAt        time.Time `json:"createdAt"`
}

// CreateTaxRateParams are the fields of a new tax rate. Amount is required.
type CreateTaxRateParams struct {
	Name   string   `json:"name"`
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
	return mutate(ctx, s, account, func(tx Tx) (*TaxRate, error) {
		return r, putRecord(ctx, tx, tableTaxRates, key(account, r.ID), r)
	})
}

// GetTaxRate returns a tax rate. Returns not_found if the account has no
// such tax rate.
func (s *Service) GetTaxRate(ctx context.Context, account, id string) (*TaxRate, error) {
	var r *TaxRate
	err := s.view(ctx, func(tx Tx) (err error) {
		r, err = getRecord[TaxRate](ctx, tx, tableTaxRates, key(account, id))
		return lookupErr(err, "tax rate")
	})
	return r, err
}

// ListTaxRates lists the account's tax rates by creation, newest first
// unless order is ASC. Returns validation_failed for a bad order, limit or
// cursor.
func (s *Service) ListTaxRates(ctx context.Context, account string, order SortOrder, p ListParams) (Page[TaxRate], error) {
	return listByCreation[TaxRate](ctx, s, "tax_rates", tableTaxRates, account, order, p)
}
