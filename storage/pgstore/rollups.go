package pgstore

import "github.com/billingd/billing"

var _ billing.RollupTx = (*tx)(nil)

// KeepsUsageRollups reports true: on PostgreSQL every event a scan reads
// travels from the server, so the Service keeps hourly usage rollups here
// (in billing_usage_rollups) and a plain COUNT, SUM, MIN or MAX
// calculation reads one rollup per hour instead of every event.
func (t *tx) KeepsUsageRollups() bool { return true }
