package httpserver

import "github.com/billingd/billing"

// usageMetricRoutes mounts operations 1-4 of the specification and GET
// /usage-metrics/{id} (docs/concepts.md, "Usage metering").
func (a api) usageMetricRoutes() {
	a.get("/usage-metrics", 200, paged(func(c *call, p billing.ListParams) (any, error) {
		f := billing.UsageMetricFilter{
			Name:             c.query.Get("name"),
			EventTypes:       c.csv("eventType"),
			AggregationTypes: csvOf[billing.AggregationType](c, "aggregationType"),
			SortOrder:        sortOrder(c),
		}
		// Rendered into the answer's buffer from the kept encodings of
		// the metrics (appendUsageMetricsPage): the hot read of the API.
		return appendJSONFunc(func(b []byte) ([]byte, error) {
			return a.appendUsageMetricsPage(c.ctx, b, c.account, f, p)
		}), nil
	}), listed("name", "eventType", "aggregationType", "sortOrder"))
	a.post("/usage-metrics", 201, withBody(a.svc.CreateUsageMetric))
	a.get("/usage-metrics/:id", 200, onID(a.svc.GetUsageMetric))
	a.put("/usage-metrics/:id", 200, onIDWithBody(a.svc.UpdateUsageMetric))
	a.delete("/usage-metrics/:id", 200, onID(a.svc.DeleteUsageMetric))
}
