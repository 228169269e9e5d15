package httpserver

import (
	"time"

	"github.com/billingd/billing"
)

// scheduleRoutes mounts billing schedules (operation 19 and the schedule
// endpoints of docs/concepts.md), their upcoming invoice and late usage, and
// billing runs.
func (a api) scheduleRoutes() {
	records(a, "/billing-schedules", a.svc.CreateBillingSchedule, a.svc.ListBillingSchedules, a.svc.GetBillingSchedule, a.svc.UpdateBillingSchedule)
	a.put("/billing-schedules/:id/activate", 200, onID(a.svc.ActivateBillingSchedule))
	transitions(a, "/billing-schedules", map[string]idOp[*billing.BillingSchedule]{
		"archive": a.svc.ArchiveBillingSchedule, "suspend": a.svc.SuspendBillingSchedule,
	})
	a.post("/billing-schedules/:id/cancel", 200, func(c *call) (any, error) {
		var p billing.CancelBillingScheduleParams
		if len(c.body) > 0 {
			if err := c.bind(&p); err != nil {
				return nil, err
			}
		}
		return a.svc.CancelBillingSchedule(c.ctx, c.account, c.param("id"), p)
	})
	a.get("/billing-schedules/:id/upcoming-invoice", 200, func(c *call) (any, error) {
		var asOf time.Time // zero: the Service's now
		if v, ok := c.query["asOf"]; ok {
			t, err := parseTimestampParam("asOf", v[0])
			if err != nil {
				return nil, err
			}
			asOf = t
		}
		return a.svc.PreviewInvoice(c.ctx, c.account, c.param("id"), asOf)
	}, accepts("asOf"))
	a.get("/billing-schedules/:id/late-usage", 200, paged(func(c *call, p billing.ListParams) (any, error) {
		return a.svc.ListLateUsage(c.ctx, c.account, c.param("id"), p)
	}), listed())
	a.post("/billing-runs", 200, func(c *call) (any, error) {
		var p billingRunParams
		if len(c.body) > 0 {
			if err := c.bind(&p); err != nil {
				return nil, err
			}
		}
		return a.svc.RunAccountBilling(c.ctx, c.account, p.AsOf)
	})
}

// billingRunParams is the body of POST /billing-runs.
type billingRunParams struct {
	AsOf *time.Time `json:"asOf"`
}
