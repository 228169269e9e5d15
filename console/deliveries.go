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
		}, csvExport[billing.Delivery]{"deliveries", deliveryCSV, deliveryRow, (*request).deliveryLinks})
}

// aboutLinks are the console pages of what deliveries are about, by
// DeliveryAbout.Kind.
var aboutLinks = map[string]struct{ path, label string }{
	"INVOICE": {"invoices/", "Invoice"}, "CREDIT_NOTE": {"credit-notes/", "Credit note"}, "CUSTOMER": {"customers/", "Customer"},
	"BILLING_SCHEDULE": {"schedules/", "Schedule"}, "CREDIT_GRANT": {"customers/", "Credit grant"},
}

// deliveryLinks returns, by delivery id, a link to what each delivery is
// about (a credit grant's is its customer's page), named by the
// document's number or the customer's name where it has one.
func (rq *request) deliveryLinks(items []billing.Delivery) (map[string]option, error) {
	ids := make([]string, len(items))
	for i := range items {
		ids[i] = items[i].ID
	}
	about, err := rq.c.svc.DeliveriesAbout(rq.ctx, rq.account, ids)
	if err != nil {
		return nil, err
	}
	names := rq.customerNames()
	out := make(map[string]option, len(about))
	for id, a := range about {
		l, ok := aboutLinks[a.Kind]
		if !ok {
			continue
		}
		target, label := a.ID, l.label
		switch a.Kind {
		case "CREDIT_GRANT":
			target = a.CustomerID
		case "CUSTOMER":
			label = names.Name(a.ID)
		case "INVOICE":
			if inv, err := rq.c.svc.GetInvoice(rq.ctx, rq.account, a.ID); err == nil {
				label = invoiceTitle(inv) + " · " + inv.CustomerLegalCompanyName
			}
		case "CREDIT_NOTE":
			if cn, err := rq.c.svc.GetCreditNote(rq.ctx, rq.account, a.ID); err == nil {
				label = creditNoteTitle(cn) + " · " + cn.CustomerLegalCompanyName
			}
		}
		if target != "" {
			out[id] = option{Prefix + l.path + target, label}
		}
	}
	return out, nil
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
