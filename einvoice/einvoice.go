package einvoice

import (
	"context"
	"fmt"
	"strings"

	"github.com/billingd/billing"
	"github.com/billingd/billing/render"
)

// ParseFormat reads a format as the download endpoint takes it: ubl, cii
// or facturx (any case). ok is false for anything else.
func ParseFormat(s string) (f Format, ok bool) {
	switch f := Format(strings.ToLower(s)); f {
	case UBL, CII, FacturX:
		return f, true
	}
	return "", false
}

// Write writes document d in format f, with the content type it is served
// with. It returns an invalid_state *billing.Error when d cannot be an
// e-invoice (see Build).
func Write(d *billing.PrintableDocument, f Format) (data []byte, contentType string, err error) {
	return WriteIn(context.Background(), nil, d, f)
}

// WriteIn is Write within pool's limits (render.Pool): the XML and the
// Factur-X file's PDF are made in its render slots and an issued
// document's files come from its cache; a nil pool writes at once. A full
// pool refuses with render.ErrBusy.
func WriteIn(ctx context.Context, pool *render.Pool, d *billing.PrintableDocument, f Format) (data []byte, contentType string, err error) {
	inv, err := Build(d)
	if err != nil {
		return nil, "", err
	}
	xml := func(write func(*Invoice) ([]byte, error)) ([]byte, error) {
		return pool.Render(ctx, d, "einvoice-"+string(f), func(*billing.PrintableDocument) ([]byte, error) { return write(inv) })
	}
	switch f {
	case UBL:
		data, err = xml(WriteUBL)
		return data, "application/xml", err
	case CII:
		data, err = xml(WriteCII)
		return data, "application/xml", err
	case FacturX:
		pdf, err := pool.PDF(ctx, d)
		if err != nil {
			return nil, "", err
		}
		data, err = facturX(d, inv, pdf)
		return data, "application/pdf", err
	}
	return nil, "", fmt.Errorf("einvoice: unknown format %q", f)
}

// Filename is the name of the document's file in format f: its number
// (or id) with the format, "INV00001-ubl.xml", "INV00001-cii.xml",
// "INV00001-facturx.pdf".
func Filename(d *billing.PrintableDocument, f Format) string {
	base := d.Number()
	if base == "" {
		base = d.ID()
	}
	if f == FacturX {
		return base + "-facturx.pdf"
	}
	return base + "-" + string(f) + ".xml"
}

// Renderer renders the e-mails of sent documents for the Dispatcher
// (dispatch.Config.Documents) with the attachments the document's
// EmailAttachments name: the PDF, the Factur-X PDF, UBL, CII. It replaces
// render.Renderer where e-invoices are wanted; with only the PDF chosen its
// e-mails are render.Email's. A document that cannot be an e-invoice while
// one is asked for fails the e-mail with the reason (the delivery records
// it), rather than silently sending less.
type Renderer struct {
	// Pool, when set, renders the attachments within its limits (shared
	// with the server's downloads); a render it refuses fails the
	// delivery's attempt, which is retried later. Nil renders at once.
	Pool *render.Pool
}

var _ billing.DocumentRenderer = Renderer{}

// DocumentEmail renders d's e-mail with its attachments.
func (r Renderer) DocumentEmail(d *billing.PrintableDocument) (*billing.Email, error) {
	ctx := context.Background()
	formats := d.EmailAttachments
	if len(formats) == 0 || len(formats) == 1 && formats[0] == billing.AttachmentPDF {
		return r.Pool.Email(ctx, d)
	}
	var atts []billing.Attachment
	for _, f := range formats {
		if f == billing.AttachmentPDF {
			pdf, err := r.Pool.PDF(ctx, d)
			if err != nil {
				return nil, err
			}
			atts = append(atts, billing.Attachment{Filename: render.Filename(d), ContentType: "application/pdf", Data: pdf})
			continue
		}
		format := map[billing.AttachmentFormat]Format{billing.AttachmentFacturX: FacturX, billing.AttachmentUBL: UBL, billing.AttachmentCII: CII}[f]
		data, ct, err := WriteIn(ctx, r.Pool, d, format)
		if err != nil {
			return nil, fmt.Errorf("attaching the %s e-invoice: %w", f, err)
		}
		atts = append(atts, billing.Attachment{Filename: Filename(d, format), ContentType: ct, Data: data})
	}
	return render.EmailWith(d, atts)
}
