package console

import (
	"net/http"
	"strings"

	"github.com/billingd/billing"
)

// metricList is the data of the usage metrics page.
type metricList struct {
	Name    string
	Metrics []billing.UsageMetric
	Pager   pager
}

// usageMetrics lists the account's usage metrics, newest first; ?name=
// keeps those whose name contains it (the API's filter).
func (c *Console) usageMetrics(rq *request) error {
	data := metricList{Name: strings.TrimSpace(rq.r.URL.Query().Get("name"))}
	page, err := c.svc.ListUsageMetrics(rq.ctx, rq.account, billing.UsageMetricFilter{Name: data.Name}, rq.list())
	if err != nil {
		return err
	}
	data.Metrics, data.Pager = page.Items, rq.pager(page.Before, page.After, page.TotalResultSize)
	return rq.render(http.StatusOK, "usagemetrics", "Usage metrics", data)
}
