package einvoice

import (
	"bytes"
	"encoding/xml"

	"github.com/billingd/billing"
)

// The UBL 2.1 namespaces.
const (
	nsUBLInvoice    = "urn:oasis:names:specification:ubl:schema:xsd:Invoice-2"
	nsUBLCreditNote = "urn:oasis:names:specification:ubl:schema:xsd:CreditNote-2"
	nsCAC           = "urn:oasis:names:specification:ubl:schema:xsd:CommonAggregateComponents-2"
	nsCBC           = "urn:oasis:names:specification:ubl:schema:xsd:CommonBasicComponents-2"
)

// The UBL document. Element names carry their prefix (cbc:, cac:), declared
// on the root; fields are in the order of the UBL 2.1 schema. One struct
// serves Invoice and CreditNote: the fields only one of them has are empty
// in the other and left out.
type ublDoc struct {
	XMLName         xml.Name
	XMLNS           string          `xml:"xmlns,attr"`
	CAC             string          `xml:"xmlns:cac,attr"`
	CBC             string          `xml:"xmlns:cbc,attr"`
	CustomizationID string          `xml:"cbc:CustomizationID"`
	ProfileID       string          `xml:"cbc:ProfileID"`
	ID              string          `xml:"cbc:ID"`
	IssueDate       string          `xml:"cbc:IssueDate"`
	DueDate         string          `xml:"cbc:DueDate,omitempty"`
	InvoiceTypeCode string          `xml:"cbc:InvoiceTypeCode,omitempty"`
	CreditTypeCode  string          `xml:"cbc:CreditNoteTypeCode,omitempty"`
	Notes           []string        `xml:"cbc:Note"`
	Currency        string          `xml:"cbc:DocumentCurrencyCode"`
	BuyerReference  string          `xml:"cbc:BuyerReference,omitempty"`
	Period          *ublPeriod      `xml:"cac:InvoicePeriod"`
	OrderReference  *ublID          `xml:"cac:OrderReference"`
	Billing         *ublBillingRef  `xml:"cac:BillingReference"`
	Supplier        ublPartyWrap    `xml:"cac:AccountingSupplierParty"`
	Customer        ublPartyWrap    `xml:"cac:AccountingCustomerParty"`
	Delivery        *ublDelivery    `xml:"cac:Delivery"`
	PaymentMeans    []ublPayment    `xml:"cac:PaymentMeans"`
	PaymentTerms    *ublNote        `xml:"cac:PaymentTerms"`
	Allowances      []ublAllowance  `xml:"cac:AllowanceCharge"`
	TaxTotal        ublTaxTotal     `xml:"cac:TaxTotal"`
	Monetary        ublMonetary     `xml:"cac:LegalMonetaryTotal"`
	InvoiceLines    []ublLine       `xml:"cac:InvoiceLine"`
	CreditNoteLines []ublCreditLine `xml:"cac:CreditNoteLine"`
}

type ublDelivery struct {
	Address ublAddress `xml:"cac:DeliveryLocation>cac:Address"`
}

type ublAmount struct {
	Currency string `xml:"currencyID,attr"`
	Value    string `xml:",chardata"`
}

type ublCode struct {
	Scheme string `xml:"schemeID,attr,omitempty"`
	Value  string `xml:",chardata"`
}

type ublID struct {
	ID string `xml:"cbc:ID"`
}

type ublNote struct {
	Note string `xml:"cbc:Note"`
}

type ublPeriod struct {
	Start string `xml:"cbc:StartDate,omitempty"`
	End   string `xml:"cbc:EndDate,omitempty"`
}

type ublBillingRef struct {
	Invoice ublID `xml:"cac:InvoiceDocumentReference"`
}

type ublPartyWrap struct {
	Party ublParty `xml:"cac:Party"`
}

type ublParty struct {
	Endpoint  *ublCode       `xml:"cbc:EndpointID"`
	Address   ublAddress     `xml:"cac:PostalAddress"`
	TaxScheme []ublTaxScheme `xml:"cac:PartyTaxScheme"`
	Legal     ublLegal       `xml:"cac:PartyLegalEntity"`
	Contact   *ublContact    `xml:"cac:Contact"`
}

type ublAddress struct {
	Street     string `xml:"cbc:StreetName,omitempty"`
	Additional string `xml:"cbc:AdditionalStreetName,omitempty"`
	City       string `xml:"cbc:CityName,omitempty"`
	Postcode   string `xml:"cbc:PostalZone,omitempty"`
	Subentity  string `xml:"cbc:CountrySubentity,omitempty"`
	Country    ublCountry
}

type ublCountry struct {
	XMLName xml.Name `xml:"cac:Country"`
	Code    string   `xml:"cbc:IdentificationCode"`
}

type ublTaxScheme struct {
	CompanyID string `xml:"cbc:CompanyID"`
	Scheme    ublID  `xml:"cac:TaxScheme"`
}

type ublLegal struct {
	Name      string `xml:"cbc:RegistrationName"`
	CompanyID string `xml:"cbc:CompanyID,omitempty"`
}

type ublContact struct {
	Name  string `xml:"cbc:Name,omitempty"`
	Phone string `xml:"cbc:Telephone,omitempty"`
	Email string `xml:"cbc:ElectronicMail,omitempty"`
}

type ublPayment struct {
	Code    string      `xml:"cbc:PaymentMeansCode"`
	Account *ublAccount `xml:"cac:PayeeFinancialAccount"`
}

type ublAccount struct {
	ID     string `xml:"cbc:ID"`
	Name   string `xml:"cbc:Name,omitempty"`
	Branch *ublID `xml:"cac:FinancialInstitutionBranch"`
}

type ublCategory struct {
	ID         string `xml:"cbc:ID"`
	Percent    string `xml:"cbc:Percent,omitempty"`
	ReasonCode string `xml:"cbc:TaxExemptionReasonCode,omitempty"`
	Reason     string `xml:"cbc:TaxExemptionReason,omitempty"`
	Scheme     ublID  `xml:"cac:TaxScheme"`
}

type ublAllowance struct {
	Charge   bool        `xml:"cbc:ChargeIndicator"`
	Reason   string      `xml:"cbc:AllowanceChargeReason"`
	Amount   ublAmount   `xml:"cbc:Amount"`
	Category ublCategory `xml:"cac:TaxCategory"`
}

type ublTaxTotal struct {
	Amount    ublAmount        `xml:"cbc:TaxAmount"`
	Subtotals []ublTaxSubtotal `xml:"cac:TaxSubtotal"`
}

type ublTaxSubtotal struct {
	Taxable  ublAmount   `xml:"cbc:TaxableAmount"`
	Amount   ublAmount   `xml:"cbc:TaxAmount"`
	Category ublCategory `xml:"cac:TaxCategory"`
}

type ublMonetary struct {
	LineExtension  ublAmount  `xml:"cbc:LineExtensionAmount"`
	TaxExclusive   ublAmount  `xml:"cbc:TaxExclusiveAmount"`
	TaxInclusive   ublAmount  `xml:"cbc:TaxInclusiveAmount"`
	AllowanceTotal *ublAmount `xml:"cbc:AllowanceTotalAmount"`
	Prepaid        *ublAmount `xml:"cbc:PrepaidAmount"`
	Payable        ublAmount  `xml:"cbc:PayableAmount"`
}

type ublQuantity struct {
	Unit  string `xml:"unitCode,attr"`
	Value string `xml:",chardata"`
}

type ublLine struct {
	ID       string      `xml:"cbc:ID"`
	Quantity ublQuantity `xml:"cbc:InvoicedQuantity"`
	ublLineBody
}

type ublCreditLine struct {
	ID       string      `xml:"cbc:ID"`
	Quantity ublQuantity `xml:"cbc:CreditedQuantity"`
	ublLineBody
}

type ublLineBody struct {
	Net    ublAmount  `xml:"cbc:LineExtensionAmount"`
	Period *ublPeriod `xml:"cac:InvoicePeriod"`
	Item   ublItem    `xml:"cac:Item"`
	Price  ublPrice   `xml:"cac:Price"`
}

type ublItem struct {
	Description string        `xml:"cbc:Description,omitempty"`
	Name        string        `xml:"cbc:Name"`
	Category    ublLineTaxCat `xml:"cac:ClassifiedTaxCategory"`
}

type ublLineTaxCat struct {
	ID      string `xml:"cbc:ID"`
	Percent string `xml:"cbc:Percent,omitempty"`
	Scheme  ublID  `xml:"cac:TaxScheme"`
}

type ublPrice struct {
	Amount ublAmount `xml:"cbc:PriceAmount"`
}

// WriteUBL writes inv as a UBL 2.1 Invoice (type 380) or CreditNote (381)
// per Peppol BIS Billing 3.0.
//
// Long on purpose: one element tree of the schema, filled in its order.
func WriteUBL(inv *Invoice) ([]byte, error) {
	cur := string(inv.Currency)
	amt := func(d billing.Decimal) ublAmount { return ublAmount{Currency: cur, Value: d.String()} }
	doc := &ublDoc{
		CAC: nsCAC, CBC: nsCBC, CustomizationID: specPeppol, ProfileID: peppolProcess,
		ID: inv.Number, IssueDate: inv.IssueDate.String(), Notes: inv.Notes, Currency: cur, BuyerReference: inv.BuyerReference,
		Supplier: ublPartyWrap{ublPartyOf(&inv.Seller)}, Customer: ublPartyWrap{ublPartyOf(&inv.Buyer)},
	}
	if inv.TypeCode == "381" {
		doc.XMLName, doc.XMLNS, doc.CreditTypeCode = xml.Name{Local: "CreditNote"}, nsUBLCreditNote, inv.TypeCode
	} else {
		doc.XMLName, doc.XMLNS, doc.InvoiceTypeCode = xml.Name{Local: "Invoice"}, nsUBLInvoice, inv.TypeCode
		if !inv.DueDate.IsZero() {
			doc.DueDate = inv.DueDate.String()
		}
	}
	doc.Period = ublPeriodOf(inv.Period)
	if a := inv.DeliverTo; a != nil {
		doc.Delivery = &ublDelivery{ublAddressOf(a)}
	}
	if inv.OrderReference != "" {
		doc.OrderReference = &ublID{inv.OrderReference}
	}
	if inv.Preceding != "" {
		doc.Billing = &ublBillingRef{Invoice: ublID{inv.Preceding}}
	}
	for _, pm := range inv.PaymentMeans {
		p := ublPayment{Code: pm.Code}
		if pm.Account != "" {
			p.Account = &ublAccount{ID: pm.Account, Name: pm.AccountName}
			if pm.Institution != "" {
				p.Account.Branch = &ublID{pm.Institution}
			}
		}
		doc.PaymentMeans = append(doc.PaymentMeans, p)
	}
	if inv.PaymentTerms != "" {
		doc.PaymentTerms = &ublNote{inv.PaymentTerms}
	}
	reasons := exemptions(inv)
	for _, a := range inv.Allowances {
		doc.Allowances = append(doc.Allowances, ublAllowance{Reason: a.Reason, Amount: amt(a.Amount), Category: ublCategoryOf(a.Tax, reasons)})
	}
	doc.TaxTotal.Amount = amt(inv.TaxTotal)
	for _, t := range inv.Taxes {
		doc.TaxTotal.Subtotals = append(doc.TaxTotal.Subtotals, ublTaxSubtotal{Taxable: amt(t.Taxable), Amount: amt(t.Amount),
			Category: ublCategoryOf(t.Tax, reasons)})
	}
	doc.Monetary = ublMonetary{LineExtension: amt(inv.LineTotal), TaxExclusive: amt(inv.TaxExclusive),
		TaxInclusive: amt(inv.TaxInclusive), Payable: amt(inv.Payable)}
	if len(inv.Allowances) > 0 {
		a := amt(inv.AllowanceTotal)
		doc.Monetary.AllowanceTotal = &a
	}
	if !inv.Prepaid.IsZero() {
		p := amt(inv.Prepaid)
		doc.Monetary.Prepaid = &p
	}
	for i := range inv.Lines {
		l := &inv.Lines[i]
		body := ublLineBody{Net: amt(l.Net), Period: ublPeriodOf(l.Period), Price: ublPrice{amt(l.Price)},
			Item: ublItem{Description: l.Description, Name: l.Name, Category: ublLineTaxCat{
				ID: string(l.Tax.Code), Percent: l.Tax.PercentText(), Scheme: ublID{"VAT"}}}}
		q := ublQuantity{Unit: l.UnitCode, Value: l.Quantity.String()}
		if inv.TypeCode == "381" {
			doc.CreditNoteLines = append(doc.CreditNoteLines, ublCreditLine{ID: l.ID, Quantity: q, ublLineBody: body})
		} else {
			doc.InvoiceLines = append(doc.InvoiceLines, ublLine{ID: l.ID, Quantity: q, ublLineBody: body})
		}
	}
	return marshal(doc)
}

// ublPartyOf is the UBL party of p.
func ublPartyOf(p *Party) ublParty {
	out := ublParty{Address: ublAddressOf(&p.Address), Legal: ublLegal{Name: p.Name, CompanyID: p.LegalRegistrationID}}
	if e := p.ElectronicAddress; e != nil {
		out.Endpoint = &ublCode{Scheme: e.Scheme, Value: e.ID}
	}
	if p.VATID != "" {
		out.TaxScheme = append(out.TaxScheme, ublTaxScheme{CompanyID: p.VATID, Scheme: ublID{"VAT"}})
	}
	if p.TaxRegistrationID != "" {
		out.TaxScheme = append(out.TaxScheme, ublTaxScheme{CompanyID: p.TaxRegistrationID, Scheme: ublID{"TAX"}})
	}
	if p.ContactName != "" || p.Phone != "" || p.Email != "" {
		out.Contact = &ublContact{Name: p.ContactName, Phone: p.Phone, Email: p.Email}
	}
	return out
}

// ublAddressOf is the UBL address of a.
func ublAddressOf(a *billing.Address) ublAddress {
	return ublAddress{Street: a.Line1, Additional: a.Line2, City: a.Town, Postcode: a.Postcode, Subentity: a.State,
		Country: ublCountry{Code: a.Country}}
}

// ublPeriodOf is the UBL period of p; nil for none.
func ublPeriodOf(p *Period) *ublPeriod {
	if p == nil {
		return nil
	}
	return &ublPeriod{Start: p.Start.String(), End: p.End.String()}
}

// ublCategoryOf is a document-level tax category with its exemption reason.
func ublCategoryOf(c Category, reasons map[string][2]string) ublCategory {
	r := reasons[c.key()]
	return ublCategory{ID: string(c.Code), Percent: c.PercentText(), Reason: r[0], ReasonCode: r[1], Scheme: ublID{"VAT"}}
}

// exemptions maps each category of the breakdown to its exemption reason
// and code.
func exemptions(inv *Invoice) map[string][2]string {
	out := make(map[string][2]string, len(inv.Taxes))
	for _, t := range inv.Taxes {
		out[t.Tax.key()] = [2]string{t.ExemptionReason, t.ExemptionCode}
	}
	return out
}

// key is the same string for equal categories.
func (c Category) key() string { return string(c.Code) + "|" + c.Percent.Canonical() }

// marshal writes doc with the XML declaration, indented.
func marshal(doc any) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(xml.Header)
	enc := xml.NewEncoder(&b)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	b.WriteByte('\n')
	return b.Bytes(), nil
}
