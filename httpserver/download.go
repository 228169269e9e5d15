package httpserver

import (
	"context"
	"mime"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/billingd/billing"
	"github.com/billingd/billing/einvoice"
	"github.com/billingd/billing/render"
)

// renderedRoutes mounts the documents as people read them (docs/concepts.md):
// the PDF or HTML of an invoice or credit note, and the merchant logo they
// print.
func (a api) renderedRoutes() {
	a.get("/invoices/:id/download", 200, func(c *call) (any, error) {
		return download(c, a.svc.PrintableInvoice, a.renders)
	}, accepts("format"), renderCost)
	a.get("/credit-notes/:id/download", 200, func(c *call) (any, error) {
		return download(c, a.svc.PrintableCreditNote, a.renders)
	}, accepts("format"), renderCost)
	a.put("/merchant-details/logo", 200, func(c *call) (any, error) {
		mt, _, err := mime.ParseMediaType(c.contentType)
		if err != nil || mt != "image/png" && mt != "image/jpeg" {
			return nil, billing.Errorf(CodeUnsupportedMediaType, "the logo must be sent with Content-Type: image/png or image/jpeg")
		}
		return a.svc.PutMerchantLogo(c.ctx, c.account, c.body)
	}, logoBody)
	a.get("/merchant-details/logo", 200, func(c *call) (any, error) {
		png, err := a.svc.GetMerchantLogo(c.ctx, c.account)
		if err != nil {
			return nil, err
		}
		return &fileAnswer{contentType: "image/png", data: png}, nil
	})
	a.delete("/merchant-details/logo", 200, func(c *call) (any, error) {
		return a.svc.DeleteMerchantLogo(c.ctx, c.account)
	})
}

// logoBody gives the logo upload its own limit: the 1 MiB a logo may have,
// whatever the JSON body limit is.
func logoBody(_ *Server, r *route) { r.maxBody = 1 << 20 }

// renderCost makes a route that renders a document count as RenderCost
// requests in the rate limiter.
func renderCost(_ *Server, r *route) { r.cost = RenderCost }

// download renders the printable document that read returns, in the
// server's render pool: the PDF as an attachment named after its number,
// the HTML page with ?format=html, or the e-invoice with ?format=ubl, cii
// or facturx.
func download(c *call, read func(ctx context.Context, account, id string) (*billing.PrintableDocument, error), pool *render.Pool) (any, error) {
	format := c.query.Get("format")
	einv, isEInvoice := einvoice.ParseFormat(format)
	if format != "" && format != "pdf" && format != "html" && !isEInvoice {
		return nil, billing.FieldError("format", "format must be pdf, html, ubl, cii or facturx")
	}
	d, err := read(c.ctx, c.account, c.param("id"))
	if err != nil {
		return nil, err
	}
	if isEInvoice {
		// An e-invoice (docs/e-invoicing.md): a FINAL or SENT document only.
		data, contentType, err := einvoice.WriteIn(c.ctx, pool, d, einv)
		if err != nil {
			return nil, err
		}
		return &fileAnswer{contentType: contentType, filename: einvoice.Filename(d, einv), data: data}, nil
	}
	if format == "html" {
		page, err := pool.HTML(c.ctx, d)
		return &fileAnswer{contentType: "text/html; charset=utf-8", data: page}, err
	}
	pdf, err := pool.PDF(c.ctx, d)
	return &fileAnswer{contentType: "application/pdf", filename: render.Filename(d), data: pdf}, err
}

// fileAnswer is an answer that is not JSON: a document or an image.
type fileAnswer struct {
	contentType string
	filename    string // set: sent as an attachment of that name
	data        []byte
}

// write sends the file.
func (f *fileAnswer) write(g *gin.Context, status int) {
	if f.filename != "" {
		// Names are document numbers or ids; quotes and backslashes could
		// not occur, but are dropped so the header can never be broken.
		name := strings.NewReplacer(`"`, "", `\`, "").Replace(f.filename)
		g.Header("Content-Disposition", `attachment; filename="`+name+`"`)
	}
	g.Header("X-Content-Type-Options", "nosniff")
	if f.contentType != "application/pdf" {
		// The HTML page loads nothing; forbid it anything else.
		g.Header("Content-Security-Policy", "default-src 'none'; img-src data:; style-src 'unsafe-inline'")
	}
	g.Data(status, f.contentType, f.data)
}
