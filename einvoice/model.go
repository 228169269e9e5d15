// Package einvoice writes finalized invoices and credit notes as electronic
// invoices under the European norm EN 16931: UBL 2.1 Invoice and CreditNote
// as Peppol BIS Billing 3.0 asks for them, UN/CEFACT Cross Industry Invoice
// (CII D16B, and the XRechnung CIUS for a German buyer with a buyer
// reference), and Factur-X / ZUGFeRD: the rendered PDF as PDF/A-3 with the
// CII invoice embedded.
//
// Everything is written from the stored document alone
// (billing.PrintableDocument: the document, its lines, the merchant details
// and buyer details frozen at finalization); nothing is recomputed. Every
// amount in the XML is an amount the document stores, or a sum of them:
// the totals are the document's, a VAT breakdown row sums the stored net and
// tax of its lines. Lines with a negative net amount (discounts, credit
// applied) are written as document-level allowances, since EN 16931 has no
// negative prices. docs/e-invoicing.md says which format suits which
// country and which fields to fill.
//
// The XML is written with encoding/xml; the Factur-X PDF is the PDF of
// package render with an incremental update appended (facturx.go).
package einvoice

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/billingd/billing"
)

// Format is a form of e-invoice.
type Format string

// The formats.
const (
	// UBL is UBL 2.1 (Peppol BIS Billing 3.0): application/xml.
	UBL Format = "ubl"
	// CII is UN/CEFACT CII D16B (XRechnung when it applies): application/xml.
	CII Format = "cii"
	// FacturX is the PDF/A-3 with the CII embedded: application/pdf.
	FacturX Format = "facturx"
)

// Specification identifiers (BT-24) and the Peppol business process (BT-23).
const (
	specEN16931   = "urn:cen.eu:en16931:2017"
	specPeppol    = "urn:cen.eu:en16931:2017#compliant#urn:fdc:peppol.eu:2017:poacc:billing:3.0"
	specXRechnung = "urn:cen.eu:en16931:2017#compliant#urn:xeinkauf.de:kosit:xrechnung_3.0"
	peppolProcess = "urn:fdc:peppol.eu:2017:poacc:billing:01:1.0"
)

// Invoice is the EN 16931 semantic model of one document: the business
// terms (BT-n) and groups (BG-n) billingd fills in, as the writers of both
// syntaxes read them.
type Invoice struct {
	// TypeCode is BT-3: 380 for an invoice, 381 for a credit note.
	TypeCode string
	// Number is BT-1, the document number.
	Number string
	// IssueDate is BT-2.
	IssueDate billing.Date
	// DueDate is BT-9; zero for a credit note.
	DueDate billing.Date
	// Currency is BT-5.
	Currency billing.Currency
	// BuyerReference is BT-10 (a Leitweg-ID for German public buyers).
	BuyerReference string
	// OrderReference is BT-13, the purchase order number.
	OrderReference string
	// Notes are BT-22: the memo and the reference.
	Notes []string
	// Preceding is BT-25, the number of the invoice a credit note credits.
	Preceding string
	// Period is BG-14, the billing period; nil when none.
	Period *Period
	// PaymentTerms is BT-20.
	PaymentTerms string
	// Seller is BG-4 and Buyer BG-7.
	Seller, Buyer Party
	// DeliverTo is BG-15, the deliver-to address (the customer's shipping
	// address, else its billing address): written for intra-community
	// supplies (K) only, which require its country (BT-80).
	DeliverTo *billing.Address
	// PaymentMeans are BG-16; empty when the merchant gave no bank details.
	PaymentMeans []PaymentMeans
	// Allowances are BG-20: the document's lines with a negative net amount.
	Allowances []Allowance
	// Lines are BG-25: the lines with a net amount of zero or more.
	Lines []Line
	// Taxes are BG-23, one per tax category and rate.
	Taxes []TaxSubtotal
	// LineTotal is BT-106, the sum of the Lines' net amounts.
	LineTotal billing.Decimal
	// AllowanceTotal is BT-107, the sum of the Allowances.
	AllowanceTotal billing.Decimal
	// TaxExclusive is BT-109: the document's net total.
	TaxExclusive billing.Decimal
	// TaxTotal is BT-110: the document's total tax.
	TaxTotal billing.Decimal
	// TaxInclusive is BT-112: the document's gross total.
	TaxInclusive billing.Decimal
	// Prepaid is BT-113: the paid credit (money on account) applied to the
	// invoice by its issue date, which the document deducts under its
	// total; zero (and not written) otherwise. Credit applied after the
	// issue date is a settlement like a payment and leaves the e-invoice
	// as it was issued.
	Prepaid billing.Decimal
	// Payable is BT-115: TaxInclusive less Prepaid.
	Payable billing.Decimal
}

// Period is a range of dates, both included.
type Period struct {
	// Start is the first day.
	Start billing.Date
	// End is the last day, included.
	End billing.Date
}

// Party is the seller (BG-4) or the buyer (BG-7).
type Party struct {
	// Name is BT-27 / BT-44.
	Name string
	// LegalRegistrationID is BT-30 / BT-47.
	LegalRegistrationID string
	// VATID is BT-31 / BT-48: a tax id starting with a country prefix.
	VATID string
	// TaxRegistrationID is BT-32 (seller only): a tax id without one.
	TaxRegistrationID string
	// Address is BG-5 / BG-8.
	Address billing.Address
	// ElectronicAddress is BT-34 / BT-49; nil when unknown.
	ElectronicAddress *billing.ElectronicAddress
	// Contact is BG-6 / BG-9: a name, a phone number, an e-mail.
	ContactName, Phone, Email string
}

// PaymentMeans is one way to pay (BG-16).
type PaymentMeans struct {
	// Code is BT-81: 58 (SEPA credit transfer) for an IBAN, 30 (credit
	// transfer) for other accounts, 68 (online payment service) for a
	// payment link.
	Code string
	// Account is BT-84: the IBAN or the account number; empty for a link.
	Account string
	// IBAN says Account is an IBAN.
	IBAN bool
	// AccountName is BT-85.
	AccountName string
	// Institution is BT-86: the BIC or national bank code.
	Institution string
}

// Category is a VAT category and rate.
type Category struct {
	// Code is BT-151 / BT-95 / BT-118.
	Code billing.TaxCategory
	// Percent is the rate in percent (BT-152 / BT-96 / BT-119): the stored
	// fraction times 100.
	Percent billing.Decimal
}

// Line is an invoice line (BG-25).
type Line struct {
	// ID is BT-126: the line's index from 1.
	ID string
	// Name is BT-153 (the title) and Description BT-154.
	Name, Description string
	// Quantity is BT-129: the stored quantity (its sign turned with Price's).
	Quantity billing.Decimal
	// UnitCode is BT-130: the line's unit code, C62 when it has none.
	UnitCode string
	// Net is BT-131, the stored net amount.
	Net billing.Decimal
	// Price is BT-146, the stored rate (with Quantity's sign turned when the
	// rate is negative, so the price is never negative).
	Price billing.Decimal
	// Period is BG-26; nil when the line has none.
	Period *Period
	// Tax is the line's category and rate (BG-30).
	Tax Category
	// Index is the stored line's index.
	Index int
}

// Allowance is a document-level allowance (BG-20): a stored line with a
// negative net amount.
type Allowance struct {
	// Amount is BT-92: minus the line's net amount.
	Amount billing.Decimal
	// Reason is BT-97: the line's title.
	Reason string
	// Tax is the allowance's category and rate (BT-95, BT-96).
	Tax Category
	// Index is the stored line's index.
	Index int
}

// TaxSubtotal is a row of the VAT breakdown (BG-23).
type TaxSubtotal struct {
	// Tax is the row's category and rate.
	Tax Category
	// Taxable is BT-116: the sum of the net amounts of its lines and
	// allowances.
	Taxable billing.Decimal
	// Amount is BT-117: the sum of their stored tax.
	Amount billing.Decimal
	// ExemptionReason and ExemptionCode are BT-120 and BT-121, for the
	// categories that need them.
	ExemptionReason, ExemptionCode string
}

// stored is a line of either document as the model needs it.
type stored struct {
	item   *billing.LineItem
	period *Period
}

// Build makes the EN 16931 model of a finalized document. It returns a
// *billing.Error (invalid_state) when the document cannot be an e-invoice:
// it is not FINAL or SENT, or it lacks a fact EN 16931 requires (the
// message names the field to fill and the business term).
func Build(d *billing.PrintableDocument) (*Invoice, error) {
	if st := d.Status(); st != billing.StatusFinal && st != billing.StatusSent {
		return nil, billing.Errorf(billing.CodeInvalidState,
			"a %s document is not an e-invoice: only FINAL and SENT documents can be downloaded as UBL, CII or Factur-X", st)
	}
	inv := &Invoice{}
	var lines []stored
	var f facts
	switch d.Kind {
	case billing.DocumentInvoice:
		lines = invoiceHeader(inv, d, &f)
	case billing.DocumentCreditNote:
		lines = creditNoteHeader(inv, d, &f)
	default:
		return nil, fmt.Errorf("einvoice: unknown document kind %q", d.Kind)
	}
	inv.Seller = seller(&d.Merchant)
	if err := f.check(inv, d); err != nil {
		return nil, err
	}
	if err := inv.addLines(d, lines); err != nil {
		return nil, err
	}
	if err := inv.checkTaxes(d, &f); err != nil {
		return nil, err
	}
	if d.Kind == billing.DocumentInvoice {
		inv.PaymentMeans = paymentMeans(&d.Merchant, d.Invoice.Currency, d.Invoice.PaymentOptions)
	}
	return inv, nil
}

// facts are the document's header fields Build checks.
type facts struct {
	buyerName    string
	buyerAddress billing.Address
	shipTo       billing.Address
	buyerTaxID   string
	emails       []string
	totals       billing.Totals
	prepaid      billing.Decimal
}

// prepaidBy is the paid credit applied to r by its issue date (BT-113).
func prepaidBy(r *billing.Invoice) billing.Decimal {
	sum := r.Currency.Zero()
	for _, a := range r.CreditApplications {
		if !a.Date.After(r.IssueDate) {
			sum = sum.Add(a.Amount)
		}
	}
	return sum
}

// invoiceHeader fills in the header of an invoice and returns its lines.
func invoiceHeader(inv *Invoice, d *billing.PrintableDocument, f *facts) []stored {
	r := d.Invoice
	inv.TypeCode, inv.Number, inv.IssueDate, inv.DueDate, inv.Currency = "380", r.InvoiceNumber, r.IssueDate, r.DueDate, r.Currency
	inv.BuyerReference, inv.OrderReference = r.BuyerReference, r.PurchaseOrderNumber
	inv.Notes = slices.DeleteFunc([]string{r.Memo, prefixed("Reference: ", r.Reference)}, func(s string) bool { return s == "" })
	if bp := r.BillingPeriod; bp != nil {
		inv.Period = &Period{Start: bp.Start, End: bp.EndInclusive}
	}
	if !r.DueDate.IsZero() {
		inv.PaymentTerms = fmt.Sprintf("Payment due by %s", r.DueDate)
	}
	*f = facts{buyerName: r.CustomerLegalCompanyName, buyerAddress: r.CustomerBillingAddress, shipTo: r.CustomerShippingAddress, buyerTaxID: r.CustomerTaxID,
		emails: r.CustomerEmails, totals: r.Totals, prepaid: prepaidBy(r)}
	out := make([]stored, len(d.InvoiceLines))
	for i := range d.InvoiceLines {
		l := &d.InvoiceLines[i]
		out[i] = stored{item: &l.LineItem}
		switch {
		case l.ServicePeriod != nil:
			out[i].period = &Period{Start: l.ServicePeriod.StartDate, End: l.ServicePeriod.EndDate}
		default:
			out[i].period = timePeriod(d.Calendar, l.ServicePeriodStart, l.ServicePeriodEnd)
		}
	}
	return out
}

// creditNoteHeader fills in the header of a credit note and returns its
// lines.
func creditNoteHeader(inv *Invoice, d *billing.PrintableDocument, f *facts) []stored {
	cn := d.CreditNote
	inv.TypeCode, inv.Number, inv.IssueDate, inv.Currency = "381", cn.CreditNoteNumber, cn.IssueDate, cn.Currency
	inv.BuyerReference, inv.OrderReference, inv.Preceding = cn.BuyerReference, cn.PurchaseOrderNumber, cn.InvoiceNumber
	if cn.Memo != "" {
		inv.Notes = []string{cn.Memo}
	}
	inv.Period = timePeriod(d.Calendar, cn.BillingPeriodStart, cn.BillingPeriodEnd)
	*f = facts{buyerName: cn.CustomerLegalCompanyName, buyerAddress: cn.CustomerBillingAddress, shipTo: cn.CustomerShippingAddress, buyerTaxID: cn.CustomerTaxID,
		emails: cn.CustomerEmails, totals: cn.Totals}
	out := make([]stored, len(d.CreditNoteLines))
	for i := range d.CreditNoteLines {
		l := &d.CreditNoteLines[i]
		out[i] = stored{item: &l.LineItem}
		if sp := l.ServicePeriod; sp != nil {
			out[i].period = &Period{Start: sp.Start, End: sp.EndInclusive}
		}
	}
	return out
}

// check fills in the buyer and the totals, and refuses a document whose
// seller or buyer lacks what EN 16931 requires of every invoice.
func (f *facts) check(inv *Invoice, d *billing.PrintableDocument) error {
	inv.Buyer = Party{Name: f.buyerName, Address: f.buyerAddress, LegalRegistrationID: d.Buyer.LegalRegistrationID,
		ElectronicAddress: d.Buyer.ElectronicAddress}
	if hasCountryPrefix(f.buyerTaxID) {
		inv.Buyer.VATID = f.buyerTaxID
	}
	if inv.Buyer.ElectronicAddress == nil && len(f.emails) > 0 {
		inv.Buyer.ElectronicAddress = &billing.ElectronicAddress{Scheme: "EM", ID: f.emails[0]}
	}
	if len(f.emails) > 0 {
		inv.Buyer.Email = f.emails[0]
	}
	inv.TaxExclusive, inv.TaxTotal, inv.TaxInclusive = f.totals.NetTotal, f.totals.TotalTax, f.totals.GrossTotal
	inv.Prepaid = inv.Currency.Zero()
	if !f.prepaid.IsZero() {
		inv.Prepaid = f.prepaid
	}
	inv.Payable = f.totals.GrossTotal.Sub(inv.Prepaid)
	var missing []string
	need := func(ok bool, what string) {
		if !ok {
			missing = append(missing, what)
		}
	}
	need(inv.Seller.Name != "", "merchantDetails.legalCompanyName (seller name, BT-27)")
	need(inv.Seller.Address.Country != "", "merchantDetails.address with its country (seller address, BG-5, BT-40)")
	need(inv.Buyer.Name != "", "customerLegalCompanyName (buyer name, BT-44)")
	need(inv.Buyer.Address.Country != "", "customerBillingAddress with its country (buyer address, BG-8, BT-55)")
	if len(missing) > 0 {
		field, hint := strings.Fields(missing[0])[0], "the document's customer fields are fixed once it is finalized: set them on the customer or the document before finalizing"
		if strings.HasPrefix(field, "merchantDetails") {
			field, hint = "merchantDetails", "merchant details are frozen into a document when it is finalized: set them before finalizing"
		}
		return &billing.Error{Code: billing.CodeInvalidState, Field: field, Message: fmt.Sprintf(
			"%s %s cannot be issued as an e-invoice: EN 16931 requires %s (%s)",
			kindName(d), d.Number(), strings.Join(missing, ", "), hint)}
	}
	return nil
}

// seller is the seller party of the merchant details.
func seller(md *billing.MerchantDetails) Party {
	p := Party{Name: md.LegalCompanyName, LegalRegistrationID: md.LegalRegistrationID, ElectronicAddress: md.ElectronicAddress,
		ContactName: md.LegalCompanyName, Phone: md.PhoneNumber, Email: md.Email}
	if md.Address != nil {
		p.Address = *md.Address
	}
	switch {
	case hasCountryPrefix(md.TaxID):
		p.VATID = md.TaxID
	case md.TaxID != "":
		p.TaxRegistrationID = md.TaxID
	}
	if p.ElectronicAddress == nil && md.Email != "" {
		p.ElectronicAddress = &billing.ElectronicAddress{Scheme: "EM", ID: md.Email}
	}
	return p
}

// paymentMeans is the way to pay the merchant details give for cur: the
// IBAN as SEPA credit transfer (58), else UK account details for GBP as
// credit transfer (30), else, when the invoice offers a payment link, an
// online payment service (68). One only: EN 16931 wants every payment
// means of an invoice to share one code (UBL-SR-47, CII-SR-467).
func paymentMeans(md *billing.MerchantDetails, cur billing.Currency, options []billing.PaymentOption) []PaymentMeans {
	if md.IBAN != "" {
		return []PaymentMeans{{Code: "58", Account: strings.ReplaceAll(md.IBAN, " ", ""), IBAN: true,
			AccountName: md.LegalCompanyName, Institution: md.BIC}}
	}
	if uk := md.UKAccountDetails; uk != nil && cur == "GBP" && uk.AccountNumber != "" {
		return []PaymentMeans{{Code: "30", Account: uk.AccountNumber, AccountName: md.LegalCompanyName,
			Institution: strings.ReplaceAll(uk.SortCode, "-", "")}}
	}
	if slices.Contains(options, billing.PaymentOptionLink) {
		return []PaymentMeans{{Code: "68"}}
	}
	return nil
}

// hasCountryPrefix reports whether a tax id starts with a two-letter
// country prefix, as a VAT identifier does ("GB123456789", "DE123456789").
func hasCountryPrefix(id string) bool {
	return len(id) > 2 && id[0] >= 'A' && id[0] <= 'Z' && id[1] >= 'A' && id[1] <= 'Z'
}

// addLines turns the stored lines into lines and allowances, and sums the
// VAT breakdown from them.
func (inv *Invoice) addLines(d *billing.PrintableDocument, lines []stored) error {
	if len(lines) == 0 {
		return billing.Errorf(billing.CodeInvalidState, "%s %s has no lines; an e-invoice has at least one (BG-25)", kindName(d), d.Number())
	}
	cur := inv.Currency
	inv.LineTotal, inv.AllowanceTotal = cur.Zero(), cur.Zero()
	type key struct{ code, percent string }
	rows := map[key]*TaxSubtotal{}
	var order []key
	for _, s := range lines {
		l := s.item
		tax, err := category(d, l)
		if err != nil {
			return err
		}
		k := key{string(tax.Code), tax.Percent.Canonical()}
		row := rows[k]
		if row == nil {
			row = &TaxSubtotal{Tax: tax, Taxable: cur.Zero(), Amount: cur.Zero()}
			rows[k] = row
			order = append(order, k)
		}
		row.Taxable, row.Amount = row.Taxable.Add(l.NetTotal), row.Amount.Add(l.TotalTax)
		if l.NetTotal.Sign() < 0 {
			inv.Allowances = append(inv.Allowances, Allowance{Amount: l.NetTotal.Neg(), Reason: l.Title, Tax: tax, Index: l.Index})
			inv.AllowanceTotal = inv.AllowanceTotal.Add(l.NetTotal.Neg())
			continue
		}
		line := Line{ID: fmt.Sprint(l.Index + 1), Name: l.Title, Description: l.Description, Quantity: l.Quantity,
			UnitCode: l.UnitCode, Net: l.NetTotal, Price: l.Rate, Period: s.period, Tax: tax, Index: l.Index}
		if line.UnitCode == "" {
			line.UnitCode = "C62"
		}
		if l.Rate.Sign() < 0 {
			line.Quantity, line.Price = l.Quantity.Neg(), l.Rate.Neg()
		}
		inv.Lines = append(inv.Lines, line)
		inv.LineTotal = inv.LineTotal.Add(l.NetTotal)
	}
	slices.SortFunc(order, func(a, b key) int {
		if c := strings.Compare(a.code, b.code); c != 0 {
			return c
		}
		return rows[a].Tax.Percent.Cmp(rows[b].Tax.Percent)
	})
	for _, k := range order {
		row := rows[k]
		row.ExemptionReason, row.ExemptionCode = exemption(row.Tax.Code, &d.Buyer)
		if err := checkRounding(d, row); err != nil {
			return err
		}
		inv.Taxes = append(inv.Taxes, *row)
	}
	if inv.LineTotal.Sub(inv.AllowanceTotal).Cmp(inv.TaxExclusive) != 0 {
		return fmt.Errorf("einvoice: %s: the lines' net amounts add up to %s, the stored net total is %s",
			d.Number(), inv.LineTotal.Sub(inv.AllowanceTotal), inv.TaxExclusive)
	}
	return nil
}

// checkRounding refuses a breakdown row whose tax (the sum of its lines'
// rounded tax) is one currency unit or more away from its taxable amount
// times its rate: EN 16931 rule BR-CO-17 allows less, and billingd rounds
// tax per line, so a document of many lines rounding the same way can
// stray that far. The stored amounts are never changed to hide it.
func checkRounding(d *billing.PrintableDocument, row *TaxSubtotal) error {
	if row.Tax.Percent.IsZero() {
		return nil
	}
	rate := row.Tax.Percent.Mul(billing.MustDecimal("0.01"))
	expected := row.Taxable.Abs().Mul(rate).Round(2, billing.RoundHalfUp)
	if row.Amount.Abs().Sub(expected).Abs().Cmp(billing.DecimalFromInt(1)) < 0 {
		return nil
	}
	return &billing.Error{Code: billing.CodeInvalidState, Field: "lines", Message: fmt.Sprintf(
		"%s %s cannot be issued as an e-invoice: its tax at %s%% is %s, the sum of its lines' rounded tax, while %s%% of their net %s is %s; "+
			"EN 16931 (BR-CO-17) allows less than one unit of difference. Fewer lines, or lines whose tax needs no rounding, avoid it",
		kindName(d), d.Number(), row.Tax.Percent.Canonical(), row.Amount, row.Tax.Percent.Canonical(), row.Taxable, expected)}
}

// category is the VAT category and rate of a stored line: as the line says,
// else AE for a reverse-charged customer, E for a tax-exempt one, S for a
// positive rate, Z for a zero rate. A category that contradicts the line's
// rate is refused.
func category(d *billing.PrintableDocument, l *billing.LineItem) (Category, error) {
	c := Category{Code: l.TaxCategory, Percent: percent(l.TaxRate)}
	if c.Code == "" {
		switch {
		case d.CustomerTaxStatus == billing.TaxStatusReverseCharged:
			c.Code = billing.TaxCategoryReverseCharge
		case d.CustomerTaxStatus == billing.TaxStatusTaxExempt:
			c.Code = billing.TaxCategoryExempt
		case l.TaxRate.Sign() > 0:
			c.Code = billing.TaxCategoryStandard
		default:
			c.Code = billing.TaxCategoryZeroRated
		}
	}
	positive := l.TaxRate.Sign() > 0
	if c.Code == billing.TaxCategoryStandard && !positive || c.Code != billing.TaxCategoryStandard && (positive || !l.TotalTax.IsZero()) {
		why := "category S needs a positive tax rate"
		if c.Code != billing.TaxCategoryStandard {
			why = fmt.Sprintf("category %s (%s) carries no tax", c.Code, categoryName(c.Code))
			if l.TaxCategory == "" {
				why += fmt.Sprintf(", as the customer is %s", d.CustomerTaxStatus)
			}
		}
		return c, &billing.Error{Code: billing.CodeInvalidState, Field: "taxCategory", Message: fmt.Sprintf(
			"%s %s cannot be issued as an e-invoice: line %d (%q) is taxed at %s%% but %s",
			kindName(d), d.Number(), l.Index+1, l.Title, c.Percent.Canonical(), why)}
	}
	return c, nil
}

// checkTaxes refuses combinations of categories EN 16931 forbids, and
// parties without the tax ids their categories require.
//
// Long on purpose: one rule of the norm after the other, each with its
// message.
func (inv *Invoice) checkTaxes(d *billing.PrintableDocument, f *facts) error {
	codes := map[billing.TaxCategory]bool{}
	for _, t := range inv.Taxes {
		codes[t.Tax.Code] = true
	}
	refuse := func(field, format string, args ...any) error {
		return &billing.Error{Code: billing.CodeInvalidState, Field: field, Message: fmt.Sprintf("%s %s cannot be issued as an e-invoice: ",
			kindName(d), d.Number()) + fmt.Sprintf(format, args...)}
	}
	if codes[billing.TaxCategoryOutsideScope] && len(codes) > 1 {
		return refuse("taxCategory", "lines outside the scope of VAT (O) cannot share an invoice with taxed or exempt lines (BR-O-11)")
	}
	sellerTaxID := inv.Seller.VATID != "" || inv.Seller.TaxRegistrationID != ""
	for code := range codes {
		if code != billing.TaxCategoryOutsideScope && !sellerTaxID {
			return refuse("merchantDetails.taxId", "category %s (%s) requires the seller's VAT identifier (BT-31): set merchantDetails.taxId before finalizing",
				code, categoryName(code))
		}
	}
	if codes[billing.TaxCategoryReverseCharge] && inv.Buyer.VATID == "" && inv.Buyer.LegalRegistrationID == "" {
		return refuse("customerTaxId", "reverse charge (AE) requires the buyer's VAT identifier (BT-48, customerTaxId with its country prefix) or legal registration id (BT-47)")
	}
	if codes[billing.TaxCategoryIntraCommunity] && inv.Buyer.VATID == "" {
		return refuse("customerTaxId", "an intra-community supply (K) requires the buyer's VAT identifier (BT-48, customerTaxId with its country prefix)")
	}
	if codes[billing.TaxCategoryIntraCommunity] && inv.Seller.VATID == "" {
		return refuse("merchantDetails.taxId", "an intra-community supply (K) requires the seller's VAT identifier with its country prefix (BT-31)")
	}
	if codes[billing.TaxCategoryIntraCommunity] {
		if inv.Period == nil {
			return refuse("billingPeriod", "an intra-community supply (K) requires the invoicing period (BG-14, BR-IC-11)")
		}
		to := f.shipTo
		if to.Country == "" {
			to = f.buyerAddress
		}
		inv.DeliverTo = &to
	}
	if codes[billing.TaxCategoryOutsideScope] {
		// BR-O-02: no VAT identifiers on a supply outside the scope of VAT.
		inv.Seller.VATID, inv.Buyer.VATID = "", ""
	}
	return nil
}

// exemption returns the exemption reason and VATEX code of a category:
// the buyer's own when given, else the category's default. Categories S
// and Z have none.
func exemption(code billing.TaxCategory, b *billing.BuyerDetails) (reason, vatex string) {
	switch code {
	case billing.TaxCategoryStandard, billing.TaxCategoryZeroRated:
		return "", ""
	}
	if b.TaxExemptionReason != "" || b.TaxExemptionReasonCode != "" {
		return b.TaxExemptionReason, b.TaxExemptionReasonCode
	}
	switch code {
	case billing.TaxCategoryReverseCharge:
		return "Reverse charge", "VATEX-EU-AE"
	case billing.TaxCategoryIntraCommunity:
		return "Intra-community supply", "VATEX-EU-IC"
	case billing.TaxCategoryExport:
		return "Export outside the EU", "VATEX-EU-G"
	case billing.TaxCategoryOutsideScope:
		return "Not subject to VAT", "VATEX-EU-O"
	}
	return "Exempt from VAT", ""
}

// categoryName names a category for messages.
func categoryName(c billing.TaxCategory) string {
	return map[billing.TaxCategory]string{
		billing.TaxCategoryStandard: "standard rate", billing.TaxCategoryZeroRated: "zero rated", billing.TaxCategoryExempt: "exempt",
		billing.TaxCategoryReverseCharge: "reverse charge", billing.TaxCategoryIntraCommunity: "intra-community supply",
		billing.TaxCategoryExport: "export", billing.TaxCategoryOutsideScope: "outside the scope of VAT",
	}[c]
}

// PercentText is the rate as written: none for category O, which has no
// rate (BR-O-05, BR-O-08).
func (c Category) PercentText() string {
	if c.Code == billing.TaxCategoryOutsideScope {
		return ""
	}
	return c.Percent.String()
}

// percent is a stored tax rate (a fraction) in percent, reduced: "0.2" is
// "20", "0.075" is "7.5".
func percent(rate billing.Decimal) billing.Decimal {
	return billing.MustDecimal(rate.Mul(billing.DecimalFromInt(100)).Canonical())
}

// timePeriod is a period of timestamps (end exclusive) as the customer's
// dates it covers; nil unless both ends are set.
func timePeriod(cal billing.Calendar, start, end *time.Time) *Period {
	if start == nil || end == nil {
		return nil
	}
	first, last := cal.Days(*start, *end)
	return &Period{Start: first, End: last}
}

// kindName names the document's kind in messages.
func kindName(d *billing.PrintableDocument) string {
	if d.Kind == billing.DocumentCreditNote {
		return "credit note"
	}
	return "invoice"
}

// prefixed returns p+s, or "" for an empty s.
func prefixed(p, s string) string {
	if s == "" {
		return ""
	}
	return p + s
}
