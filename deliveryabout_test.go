package billing_test

import (
	"testing"

	"github.com/billingd/billing"
)

// TestDeliveriesAboutNamesTheResource: a webhook of INVOICE_ISSUED and an
// e-mail of CUSTOMER_UPDATED are about the invoice and the customer; the
// document e-mail of a sent invoice is about the invoice; an unknown id has
// no entry.
func TestDeliveriesAboutNamesTheResource(t *testing.T) {
	t.Parallel()
	e := newDocEnv(t)
	for _, p := range []billing.CreateNotificationPolicyParams{
		{Name: "erp", Channel: billing.ChannelWebhook, Recipients: []string{"https://erp.example/hook"},
			NotificationTypes: []billing.NotificationType{billing.NotificationInvoiceIssued}},
		{Name: "ops", Channel: billing.ChannelEmail, Recipients: []string{"ops@acme.test"},
			NotificationTypes: []billing.NotificationType{billing.NotificationCustomerUpdated}},
	} {
		if _, err := e.svc.CreateNotificationPolicy(e.ctx, e.acct, p); err != nil {
			t.Fatal(err)
		}
	}
	inv := e.finalInvoice("1", "10.00", "0")
	if _, err := e.svc.SendInvoice(e.ctx, e.acct, inv.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.UpdateCustomer(e.ctx, e.acct, e.cust.ID, billing.CustomerParams{LegalName: "Globex plc"}); err != nil {
		t.Fatal(err)
	}
	list, err := e.svc.ListDeliveries(e.ctx, e.acct, billing.DeliveryFilter{}, billing.ListParams{})
	if err != nil {
		t.Fatal(err)
	}
	ids := []string{"no-such-delivery"}
	for _, d := range list.Items {
		ids = append(ids, d.ID)
	}
	about, err := e.svc.DeliveriesAbout(e.ctx, e.acct, ids)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, d := range list.Items {
		a := about[d.ID]
		got[string(d.NotificationType)+" "+a.Kind+" "+a.ID]++
	}
	want := map[string]int{
		"INVOICE_ISSUED INVOICE " + inv.ID:       1,
		"CUSTOMER_UPDATED CUSTOMER " + e.cust.ID: 1,
		" INVOICE " + inv.ID:                     1, // the invoice's e-mail to its customer
	}
	if len(about) != len(list.Items) || len(got) != len(want) {
		t.Fatalf("about %v for deliveries %v", got, list.Items)
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("%q: %d deliveries, want %d (all: %v)", k, got[k], n, got)
		}
	}
}
