package render

import (
	"bytes"
	"context"
	"fmt"
	"html/template"
	"strings"

	"github.com/billingd/billing"
)

// Renderer renders the e-mails of sent documents for the Dispatcher
// (dispatch.Config.Documents).
type Renderer struct {
	// Pool, when set, renders the attached PDFs within its limits (shared
	// with the server's downloads); a render it refuses fails the
	// delivery's attempt, which is retried later. Nil renders at once.
	Pool *Pool
}

var _ billing.DocumentRenderer = Renderer{}

// DocumentEmail is Email, rendered in the Renderer's Pool.
func (r Renderer) DocumentEmail(d *billing.PrintableDocument) (*billing.Email, error) {
	return r.Pool.Email(context.Background(), d)
}

// Email renders the e-mail that carries a document to its customer: a
// subject, a short plain-text and HTML message (who sends it, the number,
// the amount due and the due date, or the amount credited) and the PDF
// attached under Filename. To is left for the caller.
func Email(d *billing.PrintableDocument) (*billing.Email, error) {
	pdf, err := PDF(d)
	if err != nil {
		return nil, err
	}
	return email(d, pdf)
}

// email is the e-mail of d with pdf, its rendering, attached.
func email(d *billing.PrintableDocument, pdf []byte) (*billing.Email, error) {
	v, err := build(d)
	if err != nil {
		return nil, err
	}
	m := message(v, d, Filename(d))
	var html bytes.Buffer
	if err := mailPage.Execute(&html, m); err != nil {
		return nil, err
	}
	return &billing.Email{
		Subject: m.Subject, Text: m.text(), HTML: html.String(),
		Attachments: []billing.Attachment{{Filename: Filename(d), ContentType: "application/pdf", Data: pdf}},
	}, nil
}

// EmailWith renders the e-mail of a document as Email does, carrying
// attachments instead of the PDF (package einvoice attaches e-invoices with
// it); the message names every attachment.
func EmailWith(d *billing.PrintableDocument, attachments []billing.Attachment) (*billing.Email, error) {
	v, err := build(d)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(attachments))
	for i, a := range attachments {
		names[i] = a.Filename
	}
	m := message(v, d, strings.Join(names, ", "))
	var html bytes.Buffer
	if err := mailPage.Execute(&html, m); err != nil {
		return nil, err
	}
	return &billing.Email{Subject: m.Subject, Text: m.text(), HTML: html.String(), Attachments: attachments}, nil
}

// mail is the content of a document's e-mail.
type mail struct {
	Subject  string
	Greeting string
	Lead     string // "Acme Ltd has sent you invoice INV00001."
	Facts    []fact
	Attached string
	Sender   string
	Colour   template.CSS
}

// message composes the e-mail of the view.
func message(v *view, d *billing.PrintableDocument, filename string) *mail {
	sender := v.Merchant.Name
	from := ""
	if sender != "" {
		from = " from " + sender
	}
	who := sender
	if who == "" {
		who = "We"
	}
	m := &mail{Greeting: "Hello " + strings.TrimSpace(v.BillTo.Name) + ",", Sender: sender, Attached: filename,
		Colour: template.CSS(fmt.Sprintf("#%02x%02x%02x", v.Colour[0], v.Colour[1], v.Colour[2]))}
	total := v.Totals[len(v.Totals)-1]
	if d.Kind == billing.DocumentCreditNote {
		cn := d.CreditNote
		m.Subject = fmt.Sprintf("Credit note %s%s: %s", v.Number, from, total.Value)
		m.Lead = fmt.Sprintf("%s issued credit note %s to you.", who, v.Number)
		m.Facts = facts("Credits invoice", cn.InvoiceNumber, "Issue date", date(cn.IssueDate), total.Label, total.Value)
	} else {
		inv := d.Invoice
		due := date(inv.DueDate)
		m.Subject = fmt.Sprintf("Invoice %s%s: %s due %s", v.Number, from, total.Value, due)
		m.Lead = fmt.Sprintf("%s sent you invoice %s.", who, v.Number)
		m.Facts = facts(total.Label, total.Value, "Due date", due, "Issue date", date(inv.IssueDate),
			"Invoice total", money(inv.Currency, inv.GrossTotal))
	}
	return m
}

// text is the plain-text body.
func (m *mail) text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\n%s\n\n", m.Greeting, m.Lead)
	for _, f := range m.Facts {
		fmt.Fprintf(&b, "%s: %s\n", f.Label, f.Value)
	}
	fmt.Fprintf(&b, "\nThe document is attached as %s.\n", m.Attached)
	if m.Sender != "" {
		fmt.Fprintf(&b, "\n%s\n", m.Sender)
	}
	return b.String()
}

// mailPage is the HTML body: inline styles only, as mail clients want.
var mailPage = template.Must(template.New("mail").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Subject}}</title></head>
<body style="margin:0;padding:24px;background:#f3f4f6;font-family:Arial,Helvetica,sans-serif;color:#1f2937">
<div style="max-width:560px;margin:0 auto;background:#ffffff;padding:28px;border-top:4px solid {{.Colour}}">
<p style="margin:0 0 12px">{{.Greeting}}</p>
<p style="margin:0 0 18px">{{.Lead}}</p>
<table style="border-collapse:collapse;width:100%">{{range $i, $f := .Facts}}
<tr><td style="padding:6px 0;color:#6b7280">{{$f.Label}}</td><td style="padding:6px 0;text-align:right;{{if eq $i 0}}font-size:18px;font-weight:bold{{end}}">{{$f.Value}}</td></tr>{{end}}
</table>
<p style="margin:18px 0 0">The document is attached as <strong>{{.Attached}}</strong>.</p>
{{with .Sender}}<p style="margin:18px 0 0;color:#6b7280">{{.}}</p>{{end}}
</div>
</body></html>
`))
