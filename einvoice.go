package billing

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Electronic invoices (EN 16931, written by package einvoice as UBL, CII and
// Factur-X) need a few facts a printed invoice does not: the parties'
// electronic addresses and legal registration ids, the buyer's reference,
// a tax category per line and the reason of an exemption, a unit code per
// line. This file holds those facts of the domain, their checks, and the
// account's choice of what the invoice e-mail attaches. Everything an
// e-invoice is written from is frozen when its document is finalized, like
// the rest of a rendering (PrintableDocument).

// ElectronicAddress is where a party receives electronic documents: EN 16931
// BT-34 (seller) and BT-49 (buyer). Scheme is a code of the EAS list (for
// example "0088" for a GLN, "0204" for a German Leitweg-ID, "9930" for a
// German VAT number, "EM" for an e-mail address) and ID the address in it.
type ElectronicAddress struct {
	// Scheme is the EAS code of the identifier's scheme: four digits, or "EM".
	Scheme string `json:"scheme"`
	// ID is the identifier in that scheme.
	ID string `json:"id"`
}

// TaxCategory is the EN 16931 VAT category of a line (BT-151): it says why
// the line is taxed at its rate.
type TaxCategory string

// The tax categories (UNCL 5305, as EN 16931 restricts it).
const (
	// TaxCategoryStandard (S): taxed at a positive rate.
	TaxCategoryStandard TaxCategory = "S"
	// TaxCategoryZeroRated (Z): taxable at a rate of zero.
	TaxCategoryZeroRated TaxCategory = "Z"
	// TaxCategoryExempt (E): exempt from VAT; the exemption reason is printed.
	TaxCategoryExempt TaxCategory = "E"
	// TaxCategoryReverseCharge (AE): the buyer accounts for the VAT.
	TaxCategoryReverseCharge TaxCategory = "AE"
	// TaxCategoryIntraCommunity (K): an intra-community supply of goods or
	// services, exempt in the seller's country.
	TaxCategoryIntraCommunity TaxCategory = "K"
	// TaxCategoryExport (G): an export outside the EU, free of VAT.
	TaxCategoryExport TaxCategory = "G"
	// TaxCategoryOutsideScope (O): not subject to VAT at all.
	TaxCategoryOutsideScope TaxCategory = "O"
)

// taxCategories are the categories a line may name.
var taxCategories = []TaxCategory{TaxCategoryStandard, TaxCategoryZeroRated, TaxCategoryExempt, TaxCategoryReverseCharge,
	TaxCategoryIntraCommunity, TaxCategoryExport, TaxCategoryOutsideScope}

// AttachmentFormat is a form in which the e-mail of a sent invoice or
// credit note carries the document.
type AttachmentFormat string

// The attachment formats.
const (
	// AttachmentPDF is the rendered PDF (the default).
	AttachmentPDF AttachmentFormat = "PDF"
	// AttachmentFacturX is the rendered PDF as a Factur-X / ZUGFeRD PDF/A-3
	// with the CII e-invoice embedded: one file for people and machines.
	AttachmentFacturX AttachmentFormat = "FACTURX"
	// AttachmentUBL is the UBL 2.1 e-invoice (Peppol BIS Billing 3.0).
	AttachmentUBL AttachmentFormat = "UBL"
	// AttachmentCII is the UN/CEFACT CII e-invoice (XRechnung for a German
	// buyer with a buyer reference).
	AttachmentCII AttachmentFormat = "CII"
)

// attachmentFormats are the formats an e-mail may carry.
var attachmentFormats = []AttachmentFormat{AttachmentPDF, AttachmentFacturX, AttachmentUBL, AttachmentCII}

// DefaultEmailAttachments is what a document's e-mail carries unless the
// account or the customer chose otherwise: the PDF.
var DefaultEmailAttachments = []AttachmentFormat{AttachmentPDF}

// BuyerDetails are the customer's e-invoice details as a document was
// finalized with (the customer's current ones while it is a draft).
type BuyerDetails struct {
	// LegalRegistrationID is the buyer's company registration (BT-47); empty
	// when not given.
	LegalRegistrationID string `json:"legalRegistrationId,omitempty"`
	// ElectronicAddress is where the buyer receives e-invoices (BT-49); nil
	// when not given (the first billing e-mail is then used).
	ElectronicAddress *ElectronicAddress `json:"electronicAddress,omitempty"`
	// TaxExemptionReason is the text printed for exempt and reverse-charge
	// lines (BT-120); empty for the category's default text.
	TaxExemptionReason string `json:"taxExemptionReason,omitempty"`
	// TaxExemptionReasonCode is the VATEX code of that reason (BT-121); empty
	// for the category's default code.
	TaxExemptionReasonCode string `json:"taxExemptionReasonCode,omitempty"`
}

// buyerDetails returns the e-invoice details of customer c.
func buyerDetails(c *Customer) *BuyerDetails {
	return &BuyerDetails{
		LegalRegistrationID: c.LegalRegistrationID, ElectronicAddress: copyOf(c.ElectronicAddress),
		TaxExemptionReason: c.TaxExemptionReason, TaxExemptionReasonCode: c.TaxExemptionReasonCode,
	}
}

// checkElectronicAddress validates an optional electronic address.
func (s *Service) checkElectronicAddress(v *validator, field string, a *ElectronicAddress) {
	if a == nil {
		return
	}
	s.checkString(v, field+".id", a.ID, true)
	if !isEASCode(a.Scheme) {
		v.add(field+".scheme", "%s.scheme must be a code of the EAS list: four digits such as \"0088\", or \"EM\"", field)
	}
}

// isEASCode reports whether code has the form of an EAS code.
func isEASCode(code string) bool {
	if code == "EM" || code == "AN" || code == "AQ" || code == "AS" || code == "AU" {
		return true
	}
	if len(code) != 4 {
		return false
	}
	for _, r := range code {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// checkTaxCategory validates an optional tax category.
func checkTaxCategory(v *validator, field string, c TaxCategory) {
	if c != "" && !slices.Contains(taxCategories, c) {
		v.add(field, "%s must be one of S, Z, E, AE, K, G, O", field)
	}
}

// checkUnitCode validates an optional UN/ECE Recommendation 20 unit code:
// two or three upper-case letters or digits.
func checkUnitCode(v *validator, field, code string) {
	if code == "" {
		return
	}
	ok := len(code) >= 2 && len(code) <= 3
	for _, r := range code {
		ok = ok && (r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
	}
	v.check(ok, field, "%s must be a UN/ECE Recommendation 20 unit code such as \"C62\", \"HUR\" or \"E34\"", field)
}

// checkAttachments validates a list of attachment formats: known, each at
// most once.
func checkAttachments(v *validator, field string, list []AttachmentFormat) {
	for i, f := range list {
		switch {
		case !slices.Contains(attachmentFormats, f):
			v.add(fmt.Sprintf("%s[%d]", field, i), "%s entries must be PDF, FACTURX, UBL or CII", field)
		case slices.Index(list, f) != i:
			v.add(fmt.Sprintf("%s[%d]", field, i), "%s names %s twice", field, f)
		}
	}
}

// UnitCode maps a unit written for people (a usage metric's unit: "GB",
// "hours", "requests") to its UN/ECE Recommendation 20 code, as an
// e-invoice line's unit (BT-130) needs one. A unit it does not know, or
// none, is "C62" ("one": a count of things). Note that Recommendation 20's
// own code "GB" is a gallon per day: a gigabyte is E34.
func UnitCode(unit string) string {
	u := strings.ToLower(strings.TrimSpace(unit))
	if code, ok := unitCodes[u]; ok {
		return code
	}
	if code, ok := unitCodes[strings.TrimSuffix(u, "s")]; ok {
		return code
	}
	return "C62"
}

// unitCodes are the units UnitCode knows, singular and lower case.
var unitCodes = map[string]string{
	"second": "SEC", "sec": "SEC", "s": "SEC",
	"minute": "MIN", "min": "MIN",
	"hour": "HUR", "hr": "HUR", "h": "HUR",
	"day": "DAY", "week": "WEE", "month": "MON", "year": "ANN",
	"byte": "AD", "kb": "2P", "kilobyte": "2P", "mb": "4L", "megabyte": "4L",
	"gb": "E34", "gigabyte": "E34", "tb": "E35", "terabyte": "E35",
	"kwh": "KWH", "kilowatt hour": "KWH",
	"piece": "H87", "item": "C62", "unit": "C62", "seat": "C62", "user": "C62", "request": "C62", "call": "C62",
	"kg": "KGM", "kilogram": "KGM", "km": "KMT", "kilometre": "KMT", "kilometer": "KMT", "m": "MTR", "metre": "MTR", "meter": "MTR",
}

// priceUnitCode is the unit code of a line billing price priceID: the
// unit of the price's usage metric for a LINEAR price charged per unit,
// else "" (the line's unit is then C62).
func (s *Service) priceUnitCode(ctx context.Context, tx Tx, account, priceID string) (string, error) {
	p, err := findRecord[Price](ctx, tx, tablePrices, key(account, priceID))
	if err != nil || p == nil {
		return "", err
	}
	st := p.Structure
	if st.PricingType != PricingLinear || st.IsPricePercentage != nil && *st.IsPricePercentage || st.UsageMetricID == "" {
		return "", nil
	}
	m, err := findRecord[UsageMetric](ctx, tx, tableUsageMetrics, key(account, st.UsageMetricID))
	if err != nil || m == nil || m.Unit == "" {
		return "", err
	}
	return UnitCode(m.Unit), nil
}

// accountPreferences are the account's settings other than its time zone.
type accountPreferences struct {
	EmailAttachments []AttachmentFormat `json:"emailAttachments,omitempty"`
}

// preferences reads the account's preferences; the defaults when none
// were set.
func preferences(ctx context.Context, tx Tx, account string) (accountPreferences, error) {
	p, err := getRecord[accountPreferences](ctx, tx, tableAccountPreferences, key(account))
	if errors.Is(err, ErrNotFound) {
		return accountPreferences{}, nil
	}
	if err != nil {
		return accountPreferences{}, err
	}
	return *p, nil
}

// emailAttachments returns what the e-mail of a document of customer
// customerID carries: the customer's choice, else the account's, else the
// PDF.
func (s *Service) emailAttachments(ctx context.Context, tx Tx, account, customerID string) ([]AttachmentFormat, error) {
	c, err := findRecord[Customer](ctx, tx, tableCustomers, key(account, customerID))
	if err != nil {
		return nil, err
	}
	if c != nil && len(c.EmailAttachments) > 0 {
		return slices.Clone(c.EmailAttachments), nil
	}
	p, err := preferences(ctx, tx, account)
	if err != nil {
		return nil, err
	}
	if len(p.EmailAttachments) > 0 {
		return slices.Clone(p.EmailAttachments), nil
	}
	return slices.Clone(DefaultEmailAttachments), nil
}

// checkCustomerEInvoicing validates a customer's e-invoice details.
func (s *Service) checkCustomerEInvoicing(v *validator, e *CustomerEInvoicing) {
	s.checkString(v, "legalRegistrationId", e.LegalRegistrationID, false)
	s.checkString(v, "buyerReference", e.BuyerReference, false)
	s.checkString(v, "taxExemptionReason", e.TaxExemptionReason, false)
	s.checkString(v, "taxExemptionReasonCode", e.TaxExemptionReasonCode, false)
	s.checkElectronicAddress(v, "electronicAddress", e.ElectronicAddress)
	checkAttachments(v, "emailAttachments", e.EmailAttachments)
}

// attachments returns the account's e-mail attachments: the default when
// it chose none.
func (p accountPreferences) attachments() []AttachmentFormat {
	if len(p.EmailAttachments) == 0 {
		return slices.Clone(DefaultEmailAttachments)
	}
	return slices.Clone(p.EmailAttachments)
}
