package client_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/billingd/billing/billingtest"
	"github.com/billingd/billing/client"
	"github.com/billingd/billing/httpserver"
)

// TestClientEndToEnd drives a real server (httptest, the real Service on
// the test kit's store) through the generated client: a metric, a customer,
// an invoice with a line, sent; and an error answer decoded.
//
// Long on purpose: one scenario walked in order; each step starts from the
// state the previous steps left, so pieces would repeat the set-up.
func TestClientEndToEnd(t *testing.T) {
	t.Parallel()
	svc, _ := billingtest.NewService(t)
	ctx := context.Background()
	account := billingtest.Account(t, svc, "acme")
	key, err := svc.CreateAPIKey(ctx, account)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(httpserver.New(svc, nil))
	defer srv.Close()
	c, err := client.NewClientWithResponses(srv.URL, client.WithRequestEditorFn(client.BasicAuth(key.ID, key.Secret)))
	if err != nil {
		t.Fatal(err)
	}

	created, err := c.CreateUsageMetricWithResponse(ctx, nil, client.CreateUsageMetricRequest{
		Name: "API calls", MetricType: client.SIMPLE, EventType: "api_call", AggregationType: client.COUNT})
	if err != nil || created.JSON201 == nil {
		t.Fatalf("CreateUsageMetric: %v %s", err, created.Body)
	}
	if created.JSON201.ServiceAccountId != account {
		t.Errorf("serviceAccountId = %q, want %q", created.JSON201.ServiceAccountId, account)
	}
	limit := 10
	list, err := c.ListUsageMetricsWithResponse(ctx, &client.ListUsageMetricsParams{Limit: &limit})
	if err != nil || list.JSON200 == nil || len(list.JSON200.Items) != 1 || list.JSON200.Items[0].Id != created.JSON201.Id {
		t.Fatalf("ListUsageMetrics: %v %s", err, list.Body)
	}

	aliases := []string{"globex"}
	cust, err := c.CreateCustomerWithResponse(ctx, nil, client.CustomerRequest{LegalName: "Globex Ltd", CustomerAliases: &aliases})
	if err != nil || cust.JSON201 == nil {
		t.Fatalf("CreateCustomer: %v %s", err, cust.Body)
	}
	inv, err := c.CreateInvoiceWithResponse(ctx, nil, client.InvoiceRequest{CustomerId: cust.JSON201.Id, Currency: client.GBP})
	if err != nil || inv.JSON201 == nil {
		t.Fatalf("CreateInvoice: %v %s", err, inv.Body)
	}
	title, qty, rate, tax := "Platform", "2", "24.50", "0.2"
	ids := []client.KeyValueInput{}
	line, err := c.CreateInvoiceLineItemWithResponse(ctx, inv.JSON201.Id, nil, client.InvoiceLineItemRequest{
		Title: &title, Quantity: &qty, Rate: &rate, TaxRate: &tax, ExternalIds: &ids})
	if err != nil || line.JSON201 == nil {
		t.Fatalf("CreateInvoiceLineItem: %v %s", err, line.Body)
	}
	if line.JSON201.GrossTotal != "58.80" {
		t.Errorf("grossTotal = %q, want 58.80", line.JSON201.GrossTotal)
	}
	sent, err := c.SendInvoiceWithResponse(ctx, inv.JSON201.Id, nil)
	if err != nil || sent.JSON200 == nil {
		t.Fatalf("SendInvoice: %v %s", err, sent.Body)
	}
	if sent.JSON200.Status != client.DocumentStatusSENT || sent.JSON200.InvoiceNumber == nil || sent.JSON200.GrossTotal != "58.80" {
		t.Errorf("sent invoice: status %s, number %v, gross %s", sent.JSON200.Status, sent.JSON200.InvoiceNumber, sent.JSON200.GrossTotal)
	}

	t.Run("ErrNotFound", func(t *testing.T) {
		missing, err := c.GetUsageMetricWithResponse(ctx, "0190ffff-ffff-7fff-bfff-ffffffffffff", nil)
		if err != nil || missing.StatusCode() != http.StatusNotFound || missing.JSON404 == nil ||
			missing.JSON404.Errors[0].Code != client.ErrorErrorsCodeNotFound {
			t.Fatalf("GetUsageMetric of a missing id: %v %d %s", err, missing.StatusCode(), missing.Body)
		}
	})
	t.Run("ErrUnauthorized", func(t *testing.T) {
		anon, err := client.NewClientWithResponses(srv.URL, client.WithRequestEditorFn(client.Authorization("Basic eDp5")))
		if err != nil {
			t.Fatal(err)
		}
		r, err := anon.ListUsageMetricsWithResponse(ctx, nil)
		if err != nil || r.StatusCode() != http.StatusUnauthorized || r.JSON401 == nil {
			t.Fatalf("ListUsageMetrics with a bad key: %v %d %s", err, r.StatusCode(), r.Body)
		}
	})
}
