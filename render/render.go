// Package render lays invoices and credit notes out as the documents people
// read: a PDF (A4, fonts embedded, deterministic bytes) and a self-contained
// HTML page (inline CSS, the logo as a data URI, no external resource), both
// drawn from the same view of the stored document, and the e-mail that
// carries the PDF to the customer.
//
// Everything is pure Go: no browser, converter or font on the host. The
// text is set in the Go fonts (golang.org/x/image/font/gofont, BSD licence,
// covering Latin, Greek and Cyrillic), embedded as subsets; the PDF is
// written by github.com/signintech/gopdf.
//
// A rendering is a pure function of a billing.PrintableDocument, which
// Service.PrintableInvoice and Service.PrintableCreditNote read from the
// store: a finalized document carries what it was frozen with, so it renders
// to the same bytes for as long as its template version is drawn the same.
package render

import (
	"github.com/billingd/billing"
)

// PDF renders the document as a PDF. A draft carries a DRAFT mark on every
// page, a voided document a VOID mark.
func PDF(d *billing.PrintableDocument) ([]byte, error) {
	v, err := build(d)
	if err != nil {
		return nil, err
	}
	return writePDF(v)
}

// HTML renders the document as one self-contained HTML page with the same
// content as the PDF.
func HTML(d *billing.PrintableDocument) ([]byte, error) {
	v, err := build(d)
	if err != nil {
		return nil, err
	}
	return writeHTML(v)
}

// Filename is the name of the document's PDF: its number ("INV00001.pdf"),
// or its id while it has none.
func Filename(d *billing.PrintableDocument) string {
	if n := d.Number(); n != "" {
		return n + ".pdf"
	}
	return d.ID() + ".pdf"
}
