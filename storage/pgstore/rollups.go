package pgstore

import "github.com/billingd/billing"

var _ billing.RollupTx = (*tx)(nil)

// KeepsUsageRollups reports true: on PostgreSQL every event a scan reads
// travels from the server, so the Service keeps hourly usage rollups here
// (in billing_usage_rollups) and day totals (billing_usage_rollup_days), and
// a plain COUNT, SUM, MIN or MAX calculation reads one record per whole UTC
// day and per other full hour instead of every event.
func (t *tx) KeepsUsageRollups() bool { return true }
