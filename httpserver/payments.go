package httpserver

import (
	"context"
	"errors"
	"io"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/billingd/billing"
)

// collectionRoutes mounts the upstream API's payments settings surface,
// the invoices' collection and the customers' payment-method set-up
// (docs/payments.md).
func (a api) collectionRoutes() {
	a.get("/payments/settings", 200, func(c *call) (any, error) { return a.svc.GetAccountPaymentSettings(c.ctx, c.account) })
	a.put("/payments/settings/:id", 200, onIDWithBody(a.svc.UpdateAccountPaymentSettings))
	for _, k := range []struct{ path, kind, forPath string }{
		{"/payments/settings/customers", "customer", ""},
		{"/payments/settings/billing-schedules", "billing_schedule", "/for-billing-schedule/:id"},
		{"/payments/settings/invoices", "invoice", "/for-invoice/:id"},
	} {
		kind := k.kind
		a.post(k.path, 201, body(func(c *call, p *billing.PaymentSettingsParams) (any, error) {
			return a.svc.CreatePaymentSettings(c.ctx, c.account, kind, *p)
		}))
		a.get(k.path+"/:id", 200, func(c *call) (any, error) { return a.svc.GetPaymentSettings(c.ctx, c.account, kind, c.param("id")) })
		a.put(k.path+"/:id", 200, body(func(c *call, p *billing.PaymentSettingsParams) (any, error) {
			return a.svc.UpdatePaymentSettings(c.ctx, c.account, kind, c.param("id"), *p)
		}))
		a.delete(k.path+"/:id", 200, func(c *call) (any, error) { return a.svc.DeletePaymentSettings(c.ctx, c.account, kind, c.param("id")) })
		if k.forPath != "" {
			a.get(k.path+k.forPath, 200, func(c *call) (any, error) {
				return a.svc.GetPaymentSettingsFor(c.ctx, c.account, kind, c.param("id"))
			})
		}
	}
	a.get("/invoices/render-settings", 200, func(c *call) (any, error) { return a.svc.GetInvoiceRenderSettings(c.ctx, c.account) })
	a.put("/invoices/render-settings/:id", 200, onIDWithBody(a.svc.UpdateInvoiceRenderSettings))
	a.post("/invoices/:id/send-payment-reminder", 200, onID(a.svc.SendPaymentReminder))
	a.get("/invoices/:id/collection", 200, onID(a.svc.GetInvoiceCollection))
	a.post("/invoices/:id/collection/retry", 200, onID(a.svc.RetryCollectionNow))
	a.post("/credit-notes/:id/refund", 200, onID(a.svc.RefundCreditNote))
	a.post("/customers/:id/payment-method-setup", 200, onIDWithBody(func(ctx context.Context, account, id string, p billing.PaymentMethodSetupParams) (*billing.HostedPage, error) {
		return a.svc.PaymentMethodSetup(ctx, account, id, p)
	}))
}

// maxWebhookBody bounds an inbound provider webhook.
const maxWebhookBody = 1 << 20

// providerWebhookRoutes mounts POST /webhooks/stripe/{accountId}: no API
// key (the provider's signature, checked with the account's signing
// secret, authenticates it); 200 for an event handled or replayed, 400 for
// a bad signature, 404 for an account without a provider.
func (s *Server) providerWebhookRoutes(r gin.IRouter) {
	r.POST("/webhooks/stripe/:accountId", func(g *gin.Context) {
		payload, err := io.ReadAll(http.MaxBytesReader(g.Writer, g.Request.Body, maxWebhookBody))
		if err != nil {
			var tooLarge *http.MaxBytesError
			if errors.As(err, &tooLarge) {
				s.writeError(g, billing.Errorf(CodePayloadTooLarge, "a webhook body is at most %d bytes", maxWebhookBody))
				return
			}
			s.writeError(g, billing.FieldError("body", "the body could not be read"))
			return
		}
		res, err := s.svc.HandleProviderWebhook(g.Request.Context(), g.Param("accountId"), payload, g.Request.Header)
		if err != nil {
			s.writeError(g, err)
			return
		}
		g.JSON(http.StatusOK, res)
	})
}
