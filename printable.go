package billing

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"time"

	"github.com/billingd/billing/internal/logo"
)

// An invoice or a credit note is also a document people read: package
// render lays it out as PDF and HTML. This file gathers what a rendering is
// made from, and freezes what comes from outside the document when the
// document is finalized, so an issued document always renders the same.

// TemplateVersion is the version of the document layout that documents
// finalized now are frozen with. A change to the layout that would alter
// the rendering of documents already issued comes with a new version, and
// the renderer keeps drawing older documents with the version they were
// frozen with.
const TemplateVersion = 1

// DocumentKind is the kind of a rendered document.
type DocumentKind string

// The kinds of documents.
const (
	DocumentInvoice    DocumentKind = "INVOICE"
	DocumentCreditNote DocumentKind = "CREDIT_NOTE"
)

// PrintableDocument is everything a rendering of an invoice or a credit note
// is made from: the document as stored with its lines and groups in index
// order, and the merchant details, logo and customer tax status as they were
// when it was finalized (the current ones while it is a draft). Exactly one
// of Invoice and CreditNote is set.
type PrintableDocument struct {
	// Kind says which of Invoice and CreditNote is set.
	Kind DocumentKind
	// Invoice, with its lines and groups, when Kind is INVOICE.
	Invoice *Invoice
	// InvoiceLines are the invoice's lines in index order.
	InvoiceLines []InvoiceLineItem
	// InvoiceGroups are the invoice's line groups in index order.
	InvoiceGroups []InvoiceLineItemGroup
	// CreditNote, with its lines and groups, when Kind is CREDIT_NOTE.
	CreditNote *CreditNote
	// CreditNoteLines are the credit note's lines in index order.
	CreditNoteLines []CreditNoteLineItem
	// CreditNoteGroups are the credit note's line groups in index order.
	CreditNoteGroups []CreditNoteLineItemGroup
	// Merchant is the merchant as printed: the copy taken at finalization,
	// the account's current details for a draft.
	Merchant MerchantDetails
	// Logo is the merchant's logo as PNG; nil when there is none.
	Logo []byte
	// CustomerTaxStatus prints the reverse charge or tax exemption note.
	CustomerTaxStatus TaxStatus
	// Buyer are the customer's e-invoice details (legal registration,
	// electronic address, exemption reason) as they were at finalization,
	// the current ones for a draft; empty when unknown.
	Buyer BuyerDetails
	// EmailAttachments are what the document's e-mail carries (the
	// customer's choice, else the account's, else the PDF), as they are
	// now: a delivery choice, not part of the document.
	EmailAttachments []AttachmentFormat
	// TemplateVersion is the layout version to draw with.
	TemplateVersion int
	// Date is the PDF's creation date (it has no modification date): the
	// finalization time of an issued document, the last change of a draft.
	Date time.Time
	// Calendar is the customer's calendar (its time zone, else the
	// account's): the days that periods given as timestamps are printed as.
	Calendar Calendar
}

// Status returns the document's status.
func (d *PrintableDocument) Status() DocumentStatus {
	if d.Kind == DocumentCreditNote {
		return d.CreditNote.Status
	}
	return d.Invoice.Status
}

// Number returns the document's number, or "" while it has none.
func (d *PrintableDocument) Number() string {
	if d.Kind == DocumentCreditNote {
		return d.CreditNote.CreditNoteNumber
	}
	return d.Invoice.InvoiceNumber
}

// ID returns the document's id.
func (d *PrintableDocument) ID() string {
	if d.Kind == DocumentCreditNote {
		return d.CreditNote.ID
	}
	return d.Invoice.ID
}

// source returns what the frame of the rendering is taken from: the
// document's customer, the merchant details it copied at finalization (nil
// before) and its last change.
func (d *PrintableDocument) source() (customerID string, copied *MerchantDetails, updated time.Time) {
	if d.Kind == DocumentCreditNote {
		return d.CreditNote.CustomerID, d.CreditNote.MerchantDetails, d.CreditNote.UpdatedAt
	}
	return d.Invoice.CustomerID, d.Invoice.MerchantDetails, d.Invoice.UpdatedAt
}

// DocumentRenderer renders the e-mail that carries a sent invoice or credit
// note to the customer: subject, text and HTML bodies, and the document's
// PDF attached. Package render implements it (render.Renderer); the
// Dispatcher calls it when it sends such an e-mail.
type DocumentRenderer interface {
	DocumentEmail(d *PrintableDocument) (*Email, error)
}

// renderSnapshot is what a document was frozen with at finalization,
// besides its own fields (the merchant details are copied into the document
// itself).
type renderSnapshot struct {
	TemplateVersion   int       `json:"templateVersion"`
	LogoSHA256        string    `json:"logoSha256,omitempty"`
	CustomerTaxStatus TaxStatus `json:"customerTaxStatus,omitempty"`
	FinalizedAt       time.Time `json:"finalizedAt"`
	// Buyer are the customer's e-invoice details at finalization; nil for
	// documents finalized before they were recorded.
	Buyer *BuyerDetails `json:"buyer,omitempty"`
}

// logoPointer names the account's current logo in tableLogoImages.
type logoPointer struct {
	SHA256 string `json:"sha256"`
}

// freezeRendering records, inside the finalizing transaction, what the
// document docID will always be rendered with.
func (s *Service) freezeRendering(ctx context.Context, tx Tx, account, docID, customerID string, tax TaxStatus, now time.Time) error {
	snap := renderSnapshot{TemplateVersion: TemplateVersion, CustomerTaxStatus: tax, FinalizedAt: now}
	c, err := findRecord[Customer](ctx, tx, tableCustomers, key(account, customerID))
	if err != nil {
		return err
	}
	if c != nil {
		snap.Buyer = buyerDetails(c)
	}
	p, err := getRecord[logoPointer](ctx, tx, tableMerchantLogo, key(account))
	switch {
	case err == nil:
		snap.LogoSHA256 = p.SHA256
	case !errors.Is(err, ErrNotFound):
		return err
	}
	return putRecord(ctx, tx, tableDocumentRenders, key(account, docID), &snap)
}

// PrintableInvoice returns everything the rendering of invoice id is made
// from, read in one transaction. Returns not_found.
func (s *Service) PrintableInvoice(ctx context.Context, account, id string) (*PrintableDocument, error) {
	return printable(ctx, s, invoiceKind, account, id, func(_ Tx, r *invoiceRecord, lines []InvoiceLineItem, groups []InvoiceLineItemGroup) (*PrintableDocument, error) {
		return &PrintableDocument{
			Kind: DocumentInvoice, Invoice: &r.Invoice, InvoiceLines: lines, InvoiceGroups: groups,
			CustomerTaxStatus: r.CustomerTaxStatus,
		}, nil
	})
}

// PrintableCreditNote returns everything the rendering of credit note id is
// made from, read in one transaction. Returns not_found.
func (s *Service) PrintableCreditNote(ctx context.Context, account, id string) (*PrintableDocument, error) {
	return printable(ctx, s, creditNoteKind, account, id, func(tx Tx, cn *CreditNote, lines []CreditNoteLineItem, groups []CreditNoteLineItemGroup) (*PrintableDocument, error) {
		d := &PrintableDocument{Kind: DocumentCreditNote, CreditNote: cn, CreditNoteLines: lines, CreditNoteGroups: groups}
		var err error
		if !cn.Status.finalized() && cn.Status != StatusVoided {
			// A credit note copies no tax status: a draft prints the
			// customer's current one (a finalized one its snapshot's).
			d.CustomerTaxStatus, err = s.customerTaxStatus(ctx, tx, account, cn.CustomerID)
		}
		return d, err
	})
}

// printable reads, in one transaction, what the rendering of document id
// of kind k is made from: build makes the PrintableDocument of the
// document with its lines and groups, then the customer's calendar and the
// frame (printableFrame) are added to it.
func printable[D, L, G any](ctx context.Context, s *Service, k docKind[D], account, id string, build func(tx Tx, doc *D, lines []L, groups []G) (*PrintableDocument, error)) (*PrintableDocument, error) {
	return read(ctx, s, func(tx Tx) (*PrintableDocument, error) {
		doc, err := loadDoc(ctx, tx, k, account, id)
		if err != nil {
			return nil, err
		}
		lines, err := scanValues[L](ctx, tx, k.lines, account, id)
		if err != nil {
			return nil, err
		}
		groups, err := scanValues[G](ctx, tx, k.groups, account, id)
		if err != nil {
			return nil, err
		}
		d, err := build(tx, doc, lines, groups)
		if err != nil {
			return nil, err
		}
		customer, copied, updated := d.source()
		if d.Calendar, err = s.calendarFor(ctx, tx, account, customer); err != nil {
			return nil, err
		}
		if d.EmailAttachments, err = s.emailAttachments(ctx, tx, account, customer); err != nil {
			return nil, err
		}
		if !d.Status().finalized() && d.Status() != StatusVoided {
			c, err := findRecord[Customer](ctx, tx, tableCustomers, key(account, customer))
			if err != nil {
				return nil, err
			}
			if c != nil {
				d.Buyer = *buyerDetails(c)
			}
		}
		return d, s.printableFrame(ctx, tx, account, d, copied, updated)
	})
}

// printableFrame fills in the merchant, logo, template version and date of
// d: from its render snapshot once it was finalized, from the account's
// current details while it is a draft. A document finalized before
// snapshots existed renders with its copied merchant details and no logo.
func (s *Service) printableFrame(ctx context.Context, tx Tx, account string, d *PrintableDocument, copied *MerchantDetails, updated time.Time) error {
	snap, err := getRecord[renderSnapshot](ctx, tx, tableDocumentRenders, key(account, d.ID()))
	switch {
	case err == nil:
		if copied != nil {
			d.Merchant = *copied
		}
		if snap.CustomerTaxStatus != "" {
			d.CustomerTaxStatus = snap.CustomerTaxStatus
		}
		if snap.Buyer != nil {
			d.Buyer = *snap.Buyer
		}
		d.TemplateVersion, d.Date = snap.TemplateVersion, snap.FinalizedAt
		if snap.LogoSHA256 != "" {
			d.Logo, err = tx.Get(ctx, tableLogoImages, key(account, snap.LogoSHA256))
		}
		return err
	case !errors.Is(err, ErrNotFound):
		return err
	case copied != nil: // finalized before render snapshots existed
		d.Merchant, d.TemplateVersion, d.Date = *copied, TemplateVersion, updated
		return nil
	}
	md, err := s.merchantDetails(ctx, tx, account)
	if err != nil {
		return err
	}
	d.Merchant, d.TemplateVersion, d.Date = *md, TemplateVersion, updated
	d.Logo, err = s.currentLogo(ctx, tx, account)
	return err
}

// customerTaxStatus returns the tax status of a customer of account, or ""
// when the customer is gone.
func (s *Service) customerTaxStatus(ctx context.Context, tx Tx, account, id string) (TaxStatus, error) {
	c, err := getRecord[Customer](ctx, tx, tableCustomers, key(account, id))
	if errors.Is(err, ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return c.TaxStatus, nil
}

// scanValues returns every record of table t under the document's prefix,
// in key (index) order.
func scanValues[T any](ctx context.Context, tx Tx, t Table, account, docID string) ([]T, error) {
	return scanRecords[T](ctx, tx, t, Range{Prefix: prefix(account, docID)})
}

// MerchantLogoPath is the logoUrl of merchant details that have an uploaded
// logo: the API path that serves it.
const MerchantLogoPath = "/merchant-details/logo"

// PutMerchantLogo stores data, a PNG or JPEG image (at most 1 MiB and
// 2000×2000 pixels), as the account's logo: decoded, scaled down to at most
// 600×300 pixels, flattened onto white and re-encoded as PNG. Merchant
// details then carry logoUrl MerchantLogoPath, and documents finalized from
// now on print it; documents already finalized keep the logo they were
// finalized with. Emits MERCHANT_UPDATED. Returns validation_failed for
// anything that is not such an image.
func (s *Service) PutMerchantLogo(ctx context.Context, account string, data []byte) (*MerchantDetails, error) {
	img, err := logo.Normalize(data)
	if errors.Is(err, logo.ErrInvalid) {
		return nil, validationError("%s", strings.TrimPrefix(err.Error(), logo.ErrInvalid.Error()+": "))
	}
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(img)
	digest := hex.EncodeToString(sum[:])
	return mutate(ctx, s, account, func(tx Tx) (*MerchantDetails, error) {
		if err := tx.Put(ctx, tableLogoImages, key(account, digest), img); err != nil {
			return nil, err
		}
		if err := putRecord(ctx, tx, tableMerchantLogo, key(account), &logoPointer{SHA256: digest}); err != nil {
			return nil, err
		}
		return s.setLogoURL(ctx, tx, account, MerchantLogoPath)
	})
}

// GetMerchantLogo returns the account's logo as PNG. Returns not_found when
// it has none.
func (s *Service) GetMerchantLogo(ctx context.Context, account string) ([]byte, error) {
	return read(ctx, s, func(tx Tx) ([]byte, error) {
		img, err := s.currentLogo(ctx, tx, account)
		if err == nil && img == nil {
			return nil, Errorf(CodeNotFound, "the merchant has no logo")
		}
		return img, err
	})
}

// DeleteMerchantLogo removes the account's logo; documents already
// finalized keep theirs. Emits MERCHANT_UPDATED. Returns not_found when it
// has none.
func (s *Service) DeleteMerchantLogo(ctx context.Context, account string) (*MerchantDetails, error) {
	return mutate(ctx, s, account, func(tx Tx) (*MerchantDetails, error) {
		err := tx.Delete(ctx, tableMerchantLogo, key(account))
		if errors.Is(err, ErrNotFound) {
			return nil, Errorf(CodeNotFound, "the merchant has no logo")
		}
		if err != nil {
			return nil, err
		}
		return s.setLogoURL(ctx, tx, account, "")
	})
}

// setLogoURL stores the merchant details with logoUrl url and emits
// MERCHANT_UPDATED.
func (s *Service) setLogoURL(ctx context.Context, tx Tx, account, url string) (*MerchantDetails, error) {
	md, err := s.merchantDetails(ctx, tx, account)
	if err != nil {
		return nil, err
	}
	md.LogoURL = url
	if err := putRecord(ctx, tx, tableMerchantDetails, key(account), md); err != nil {
		return nil, err
	}
	return md, s.emit(ctx, tx, account, NotificationMerchantUpdated, md)
}

// currentLogo returns the account's current logo, or nil.
func (s *Service) currentLogo(ctx context.Context, tx Tx, account string) ([]byte, error) {
	p, err := getRecord[logoPointer](ctx, tx, tableMerchantLogo, key(account))
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return tx.Get(ctx, tableLogoImages, key(account, p.SHA256))
}
