package memstore_test

import (
	"testing"

	"github.com/billingd/billing"
	"github.com/billingd/billing/storage/memstore"
	"github.com/billingd/billing/storage/storagetest"
)

func TestStore(t *testing.T) {
	t.Parallel()
	storagetest.Run(t, func(tb testing.TB) billing.Store {
		s := memstore.New()
		tb.Cleanup(func() { _ = s.Close() })
		return s
	})
}
