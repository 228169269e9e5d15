package console

import (
	"net/http"

	"github.com/billingd/billing"
)

// deliveryStatuses are the choices of the deliveries page's filter.
var deliveryStatuses = []billing.DeliveryStatus{billing.DeliveryPending, billing.DeliverySucceeded, billing.DeliveryFailed}

// deliveries lists the account's notification deliveries (webhooks and
// e-mails), newest first, filtered by status.
func (c *Console) deliveries(rq *request) error {
	return listByStatus(rq, "deliveries", "Notifications", deliveryStatuses,
		func(st billing.DeliveryStatus, p billing.ListParams) (billing.Page[billing.Delivery], error) {
			return c.svc.ListDeliveries(rq.ctx, rq.account, billing.DeliveryFilter{Status: st}, p)
		}, csvExport[billing.Delivery]{"deliveries", deliveryCSV, deliveryRow})
}

// retryDelivery confirms (GET) and queues again (POST) a failed delivery.
func (c *Console) retryDelivery(rq *request) error {
	d, err := c.svc.GetDelivery(rq.ctx, rq.account, rq.r.PathValue("id"))
	if err != nil {
		return err
	}
	cf := confirmation{Heading: "Retry delivery", Question: "The " + string(d.NotificationType) + " notification is sent again to " + recipients(d) + ".",
		Action: Prefix + "deliveries/" + d.ID + "/retry", Button: "Retry now", Back: Prefix + "deliveries"}
	if rq.r.Method != http.MethodPost {
		return rq.confirm(cf, nil)
	}
	if _, err := c.svc.RetryDelivery(rq.ctx, rq.account, d.ID); err != nil {
		return rq.confirm(cf, err)
	}
	return rq.done(Prefix+"deliveries", "retried")
}

// recipients names where a delivery goes.
func recipients(d *billing.Delivery) string {
	if len(d.Recipients) == 0 {
		return "its " + string(d.Channel) + " recipients"
	}
	out := d.Recipients[0]
	if n := len(d.Recipients) - 1; n > 0 {
		out += " and others"
	}
	return out
}
