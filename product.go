package billing

import (
	"context"
	"time"
)

// Product groups prices: what is sold, whatever its pricing.
type Product struct {
	ID               string    `json:"id"`
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
	return mutate(ctx, s, account, func(tx Tx) (*Product, error) {
		return pr, putRecord(ctx, tx, tableProducts, key(account, pr.ID), pr)
	})
}

// GetProduct returns a product. Returns not_found if the account has no such
// product.
func (s *Service) GetProduct(ctx context.Context, account, id string) (*Product, error) {
	var p *Product
	err := s.view(ctx, func(tx Tx) (err error) {
		p, err = getRecord[Product](ctx, tx, tableProducts, key(account, id))
		return lookupErr(err, "product")
	})
	return p, err
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
	var page Page[T]
	err = s.view(ctx, func(tx Tx) (err error) {
		page, err = list(ctx, s, tx, q, p)
		return err
	})
	return page, err
}
