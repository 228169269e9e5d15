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
}

// usageMetrics lists the account's usage metrics, newest first; ?q= keeps
// those whose name contains it (the API's name filter).
func (c *Console) usageMetrics(rq *request) error {
	data := metricList{Search: search{Query: strings.TrimSpace(rq.r.URL.Query().Get("q")), Placeholder: "Part of a name"}}
	page, err := c.svc.ListUsageMetrics(rq.ctx, rq.account, billing.UsageMetricFilter{Name: data.Search.Query}, rq.list())
	if err != nil {
		return err
	}
	data.Metrics, data.Pager = page.Items, rq.pager(page.Before, page.After, page.TotalResultSize)
	return rq.render(http.StatusOK, "usagemetrics", "Usage metrics", data)
}
