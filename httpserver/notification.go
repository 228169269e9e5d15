package httpserver

import (
	"strings"

	"github.com/billingd/billing"
)

// recipientsBody is the body of operation 20.
type recipientsBody struct {
	Recipients []string `json:"recipients"`
}

// typesBody is the body of POST /notifications/policies/{id}/notification-types.
type typesBody struct {
	NotificationTypes []billing.NotificationType `json:"notificationTypes"`
}

// notificationRoutes mounts notification policies (operations 20 and 21
// and the policy endpoints of docs/concepts.md), the deliveries, and the
// usage and spend alerts that notify (docs/alerts.md).
func (a api) notificationRoutes() {
	a.post("/notifications/policies", 201, withBody(a.svc.CreateNotificationPolicy))
	getList(a, "/notifications/policies", a.svc.ListNotificationPolicies)
	a.get("/notifications/policies/:id", 200, onID(a.svc.GetNotificationPolicy))
	a.delete("/notifications/policies/:id", 200, onID(a.svc.DeleteNotificationPolicy))
	a.post("/notifications/policies/:id/recipients", 200, body(func(c *call, p *recipientsBody) (any, error) {
		return a.svc.AddNotificationPolicyRecipients(c.ctx, c.account, c.param("id"), p.Recipients)
	}))
	// The recipient is the URL-escaped last segment; a webhook URL holds
	// slashes, so the route takes the rest of the path. Routing happens on
	// the decoded path (gin's default) or the raw one (UseRawPath, with
	// UnescapePathValues): either way the parameter is the recipient with
	// one level of escaping removed, so an escaped "/" survives as "/".
	a.delete("/notifications/policies/:id/recipients/*recipient", 200, func(c *call) (any, error) {
		return a.svc.RemoveNotificationPolicyRecipient(c.ctx, c.account, c.param("id"),
			strings.TrimPrefix(c.param("recipient"), "/"))
	})
	a.post("/notifications/policies/:id/notification-types", 200, body(func(c *call, p *typesBody) (any, error) {
		return a.svc.AddNotificationPolicyTypes(c.ctx, c.account, c.param("id"), p.NotificationTypes)
	}))
	a.delete("/notifications/policies/:id/notification-types/:type", 200, func(c *call) (any, error) {
		return a.svc.RemoveNotificationPolicyType(c.ctx, c.account, c.param("id"), billing.NotificationType(c.param("type")))
	})
	a.post("/notifications/policies/:id/rotate-secret", 200, onID(a.svc.RotateNotificationPolicySecret))
	getList(a, "/notifications/deliveries", a.svc.ListDeliveries)
	a.post("/notifications/deliveries/:id/retry", 200, onID(a.svc.RetryDelivery))
	a.post("/usage-alerts", 201, withBody(a.svc.CreateUsageAlert))
	getList(a, "/usage-alerts", a.svc.ListUsageAlerts)
	a.get("/usage-alerts/:id", 200, onID(a.svc.GetUsageAlert))
	a.delete("/usage-alerts/:id", 200, onID(a.svc.DeleteUsageAlert))
}
