package httpserver

import "github.com/billingd/billing"

// usageMetricRoutes mounts operations 1-4 of the specification and GET
// /usage-metrics/{id} (usage.md, "Usage metrics").
func (a api) usageMetricRoutes() {
	a.get("/usage-metrics", 200, func(c *call) (any, error) {
		p, err := c.listParams()
		if err != nil {
			return nil, err
		}
		f := billing.UsageMetricFilter{
			Name:             c.query.Get("name"),
			EventTypes:       c.csv("eventType"),
			AggregationTypes: csvOf[billing.AggregationType](c, "aggregationType"),
			SortOrder:        sortOrder(c),
		}
		// Rendered into the answer's buffer from the kept encodings of
		// the metrics (appendUsageMetricsPage): the hot read of the API.
		return appendJSONFunc(func(b []byte) ([]byte, error) {
			return appendUsageMetricsPage(c.ctx, a.svc, b, c.account, f, p)
		}), nil
	}, listed("name", "eventType", "aggregationType", "sortOrder"))
	a.post("/usage-metrics", 201, body(func(c *call, p *billing.CreateUsageMetricParams) (any, error) {
		return a.svc.CreateUsageMetric(c.ctx, c.account, *p)
	}))
	a.get("/usage-metrics/:id", 200, func(c *call) (any, error) {
		return a.svc.GetUsageMetric(c.ctx, c.account, c.param("id"))
	})
	a.put("/usage-metrics/:id", 200, body(func(c *call, p *billing.UsageMetricParams) (any, error) {
		return a.svc.UpdateUsageMetric(c.ctx, c.account, c.param("id"), *p)
	}))
	a.delete("/usage-metrics/:id", 200, func(c *call) (any, error) {
		return a.svc.DeleteUsageMetric(c.ctx, c.account, c.param("id"))
	})
}
