package console

import (
	"net/http"
	"strings"

	"github.com/billingd/billing"
)

// metricList is the data of the usage metrics page.
type metricList struct {
	Search  search
	Metrics []billing.UsageMetric
	Pager   pager
	CSV     string
}

// usageMetrics lists the account's usage metrics, newest first; ?q= keeps
// those whose name contains it (the API's name filter).
func (c *Console) usageMetrics(rq *request) error {
	data := metricList{Search: search{Query: strings.TrimSpace(rq.r.URL.Query().Get("q")), Placeholder: "Part of a name"}, CSV: rq.csvLink()}
	if rq.wantsCSV() {
		return exportCSV(rq, "usage-metrics", metricCSV, func(p billing.ListParams) (billing.Page[billing.UsageMetric], error) {
			return c.svc.ListUsageMetrics(rq.ctx, rq.account, billing.UsageMetricFilter{Name: data.Search.Query}, p)
		}, func(m *billing.UsageMetric) []string {
			return []string{m.ID, text(m.Name), string(m.MetricType), text(m.EventType), string(m.AggregationType), text(m.AggregationProperty), instant(m.CreatedAt)}
		})
	}
	page, err := c.svc.ListUsageMetrics(rq.ctx, rq.account, billing.UsageMetricFilter{Name: data.Search.Query}, rq.list())
	if err != nil {
		return err
	}
	data.Metrics, data.Pager = page.Items, rq.pager(page.Before, page.After, page.TotalResultSize)
	return rq.render(http.StatusOK, "usagemetrics", "Usage metrics", data)
}
