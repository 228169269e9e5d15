package billing

import "context"

// ResolveAliases exposes resolveAliases to the external tests, in its own
// read transaction.
func (s *Service) ResolveAliases(ctx context.Context, account string, values []string) ([]string, error) {
	var out []string
	err := s.view(ctx, func(tx Tx) (err error) {
		out, err = s.resolveAliases(ctx, tx, account, values)
		return err
	})
	return out, err
}
