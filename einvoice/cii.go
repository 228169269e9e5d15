package einvoice

import (
	"encoding/xml"
	"fmt"
	"strings"

	"github.com/billingd/billing"
)

// The CII D16B namespaces.
const (
	nsRSM = "urn:un:unece:uncefact:data:standard:CrossIndustryInvoice:100"
	nsRAM = "urn:un:unece:uncefact:data:standard:ReusableAggregateBusinessInformationEntity:100"
	nsUDT = "urn:un:unece:uncefact:data:standard:UnqualifiedDataType:100"
	nsQDT = "urn:un:unece:uncefact:data:standard:QualifiedDataType:100"
)

// The CII document, in the element order of the D16B schema
// (CrossIndustryInvoice_100pD16B.xsd), which the validation checks.
type ciiDoc struct {
	XMLName     xml.Name       `xml:"rsm:CrossIndustryInvoice"`
	RSM         string         `xml:"xmlns:rsm,attr"`
	RAM         string         `xml:"xmlns:ram,attr"`
	UDT         string         `xml:"xmlns:udt,attr"`
	QDT         string         `xml:"xmlns:qdt,attr"`
	Context     ciiContext     `xml:"rsm:ExchangedDocumentContext"`
	Document    ciiDocument    `xml:"rsm:ExchangedDocument"`
	Transaction ciiTransaction `xml:"rsm:SupplyChainTradeTransaction"`
}

type ciiID struct {
	ID string `xml:"ram:ID"`
}

type ciiContext struct {
	Process   *ciiID `xml:"ram:BusinessProcessSpecifiedDocumentContextParameter"`
	Guideline ciiID  `xml:"ram:GuidelineSpecifiedDocumentContextParameter"`
}

type ciiDate struct {
	Value ciiDateString `xml:"udt:DateTimeString"`
}

type ciiDateString struct {
	Format string `xml:"format,attr"`
	Value  string `xml:",chardata"`
}

type ciiNote struct {
	Content string `xml:"ram:Content"`
}

type ciiDocument struct {
	ID        string    `xml:"ram:ID"`
	TypeCode  string    `xml:"ram:TypeCode"`
	IssueDate ciiDate   `xml:"ram:IssueDateTime"`
	Notes     []ciiNote `xml:"ram:IncludedNote"`
}

type ciiTransaction struct {
	Lines      []ciiLine     `xml:"ram:IncludedSupplyChainTradeLineItem"`
	Agreement  ciiAgreement  `xml:"ram:ApplicableHeaderTradeAgreement"`
	Delivery   ciiDelivery   `xml:"ram:ApplicableHeaderTradeDelivery"`
	Settlement ciiSettlement `xml:"ram:ApplicableHeaderTradeSettlement"`
}

type ciiDelivery struct {
	ShipTo *ciiShipTo `xml:"ram:ShipToTradeParty"`
}

type ciiShipTo struct {
	Address ciiAddress `xml:"ram:PostalTradeAddress"`
}

type ciiLine struct {
	Document   ciiLineDoc        `xml:"ram:AssociatedDocumentLineDocument"`
	Product    ciiProduct        `xml:"ram:SpecifiedTradeProduct"`
	Agreement  ciiLineAgreement  `xml:"ram:SpecifiedLineTradeAgreement"`
	Delivery   ciiLineDelivery   `xml:"ram:SpecifiedLineTradeDelivery"`
	Settlement ciiLineSettlement `xml:"ram:SpecifiedLineTradeSettlement"`
}

type ciiLineDoc struct {
	LineID string `xml:"ram:LineID"`
}

type ciiProduct struct {
	Name        string `xml:"ram:Name"`
	Description string `xml:"ram:Description,omitempty"`
}

type ciiLineAgreement struct {
	Price ciiPrice `xml:"ram:NetPriceProductTradePrice"`
}

type ciiPrice struct {
	Amount string `xml:"ram:ChargeAmount"`
}

type ciiLineDelivery struct {
	Quantity ciiQuantity `xml:"ram:BilledQuantity"`
}

type ciiQuantity struct {
	Unit  string `xml:"unitCode,attr"`
	Value string `xml:",chardata"`
}

type ciiLineSettlement struct {
	Tax       ciiTax      `xml:"ram:ApplicableTradeTax"`
	Period    *ciiPeriod  `xml:"ram:BillingSpecifiedPeriod"`
	Summation ciiLineNets `xml:"ram:SpecifiedTradeSettlementLineMonetarySummation"`
}

type ciiLineNets struct {
	Total string `xml:"ram:LineTotalAmount"`
}

// ciiTax is a trade tax: on a line (category and rate), in the breakdown
// (with the amounts and the exemption) or on an allowance.
type ciiTax struct {
	Calculated string `xml:"ram:CalculatedAmount,omitempty"`
	TypeCode   string `xml:"ram:TypeCode"`
	Reason     string `xml:"ram:ExemptionReason,omitempty"`
	Basis      string `xml:"ram:BasisAmount,omitempty"`
	Category   string `xml:"ram:CategoryCode"`
	ReasonCode string `xml:"ram:ExemptionReasonCode,omitempty"`
	Percent    string `xml:"ram:RateApplicablePercent,omitempty"`
}

type ciiPeriod struct {
	Start *ciiDate `xml:"ram:StartDateTime"`
	End   *ciiDate `xml:"ram:EndDateTime"`
}

type ciiAgreement struct {
	BuyerReference string     `xml:"ram:BuyerReference,omitempty"`
	Seller         ciiParty   `xml:"ram:SellerTradeParty"`
	Buyer          ciiParty   `xml:"ram:BuyerTradeParty"`
	OrderReference *ciiRefDoc `xml:"ram:BuyerOrderReferencedDocument"`
}

type ciiRefDoc struct {
	ID string `xml:"ram:IssuerAssignedID"`
}

type ciiParty struct {
	Name         string            `xml:"ram:Name"`
	Legal        *ciiLegal         `xml:"ram:SpecifiedLegalOrganization"`
	Contact      *ciiContact       `xml:"ram:DefinedTradeContact"`
	Address      ciiAddress        `xml:"ram:PostalTradeAddress"`
	URI          *ciiURI           `xml:"ram:URIUniversalCommunication"`
	Registration []ciiRegistration `xml:"ram:SpecifiedTaxRegistration"`
}

type ciiLegal struct {
	ID string `xml:"ram:ID"`
}

type ciiContact struct {
	Name  string       `xml:"ram:PersonName,omitempty"`
	Phone *ciiNumber   `xml:"ram:TelephoneUniversalCommunication"`
	Email *ciiURIPlain `xml:"ram:EmailURIUniversalCommunication"`
}

type ciiNumber struct {
	Number string `xml:"ram:CompleteNumber"`
}

type ciiURIPlain struct {
	ID string `xml:"ram:URIID"`
}

type ciiURI struct {
	ID ciiSchemeID `xml:"ram:URIID"`
}

type ciiSchemeID struct {
	Scheme string `xml:"schemeID,attr"`
	Value  string `xml:",chardata"`
}

type ciiRegistration struct {
	ID ciiSchemeID `xml:"ram:ID"`
}

type ciiAddress struct {
	Postcode string `xml:"ram:PostcodeCode,omitempty"`
	Line1    string `xml:"ram:LineOne,omitempty"`
	Line2    string `xml:"ram:LineTwo,omitempty"`
	City     string `xml:"ram:CityName,omitempty"`
	Country  string `xml:"ram:CountryID"`
	State    string `xml:"ram:CountrySubDivisionName,omitempty"`
}

type ciiSettlement struct {
	Currency     string         `xml:"ram:InvoiceCurrencyCode"`
	PaymentMeans []ciiPayment   `xml:"ram:SpecifiedTradeSettlementPaymentMeans"`
	Taxes        []ciiTax       `xml:"ram:ApplicableTradeTax"`
	Period       *ciiPeriod     `xml:"ram:BillingSpecifiedPeriod"`
	Allowances   []ciiAllowance `xml:"ram:SpecifiedTradeAllowanceCharge"`
	Terms        *ciiTerms      `xml:"ram:SpecifiedTradePaymentTerms"`
	Summation    ciiSummation   `xml:"ram:SpecifiedTradeSettlementHeaderMonetarySummation"`
	Preceding    *ciiRefDoc     `xml:"ram:InvoiceReferencedDocument"`
}

type ciiPayment struct {
	TypeCode    string          `xml:"ram:TypeCode"`
	Account     *ciiPayAccount  `xml:"ram:PayeePartyCreditorFinancialAccount"`
	Institution *ciiInstitution `xml:"ram:PayeeSpecifiedCreditorFinancialInstitution"`
}

type ciiPayAccount struct {
	IBAN        string `xml:"ram:IBANID,omitempty"`
	Name        string `xml:"ram:AccountName,omitempty"`
	Proprietary string `xml:"ram:ProprietaryID,omitempty"`
}

type ciiInstitution struct {
	BIC string `xml:"ram:BICID"`
}

type ciiAllowance struct {
	Charge   ciiIndicator `xml:"ram:ChargeIndicator"`
	Amount   string       `xml:"ram:ActualAmount"`
	Reason   string       `xml:"ram:Reason"`
	Category ciiTax       `xml:"ram:CategoryTradeTax"`
}

type ciiIndicator struct {
	Value bool `xml:"udt:Indicator"`
}

type ciiTerms struct {
	Description string   `xml:"ram:Description,omitempty"`
	Due         *ciiDate `xml:"ram:DueDateDateTime"`
}

type ciiSummation struct {
	LineTotal      string    `xml:"ram:LineTotalAmount"`
	AllowanceTotal string    `xml:"ram:AllowanceTotalAmount,omitempty"`
	TaxBasis       string    `xml:"ram:TaxBasisTotalAmount"`
	TaxTotal       ciiAmount `xml:"ram:TaxTotalAmount"`
	GrandTotal     string    `xml:"ram:GrandTotalAmount"`
	Prepaid        string    `xml:"ram:TotalPrepaidAmount,omitempty"`
	DuePayable     string    `xml:"ram:DuePayableAmount"`
}

type ciiAmount struct {
	Currency string `xml:"currencyID,attr"`
	Value    string `xml:",chardata"`
}

// XRechnung reports whether the CII of inv is written as an XRechnung: the
// buyer is German and has a buyer reference (its Leitweg-ID).
func XRechnung(inv *Invoice) bool {
	return inv.BuyerReference != "" && inv.Buyer.Address.Country == "DE"
}

// WriteCII writes inv as a UN/CEFACT Cross Industry Invoice (D16B) under
// EN 16931, or under the XRechnung CIUS when XRechnung(inv). It returns an
// invalid_state *billing.Error when an XRechnung lacks a field that CIUS
// requires.
func WriteCII(inv *Invoice) ([]byte, error) {
	if XRechnung(inv) {
		if err := checkXRechnung(inv); err != nil {
			return nil, err
		}
		return writeCII(inv, specXRechnung, true)
	}
	return writeCII(inv, specEN16931, false)
}

// checkXRechnung refuses an XRechnung without the fields its CIUS
// requires beyond EN 16931 (the BR-DE rules).
func checkXRechnung(inv *Invoice) error {
	var missing []string
	need := func(ok bool, what string) {
		if !ok {
			missing = append(missing, what)
		}
	}
	s, b := &inv.Seller, &inv.Buyer
	need(s.Address.Town != "" && s.Address.Postcode != "", "the seller's town and postcode (merchantDetails.address, BR-DE-3, BR-DE-4)")
	need(s.Phone != "", "the seller's phone number (merchantDetails.phoneNumber, BR-DE-6)")
	need(s.Email != "", "the seller's e-mail (merchantDetails.email, BR-DE-7)")
	need(b.Address.Town != "" && b.Address.Postcode != "", "the buyer's town and postcode (customerBillingAddress, BR-DE-8, BR-DE-9)")
	need(len(inv.PaymentMeans) > 0 || inv.TypeCode == "381", "payment instructions (merchantDetails.iban, BR-DE-1)")
	need(b.ElectronicAddress != nil, "the buyer's electronic address (customer electronicAddress or a billing e-mail, BT-49)")
	need(s.ElectronicAddress != nil, "the seller's electronic address (merchantDetails.electronicAddress or email, BT-34)")
	if len(missing) == 0 {
		return nil
	}
	return &billing.Error{Code: billing.CodeInvalidState, Field: "format", Message: fmt.Sprintf(
		"%s is an XRechnung (a German buyer with buyer reference %s), which also requires %s",
		inv.Number, inv.BuyerReference, strings.Join(missing, ", "))}
}

// writeCII writes the CII with guideline spec.
//
// Long on purpose: one element tree of the schema, filled in its order.
func writeCII(inv *Invoice, spec string, xrechnung bool) ([]byte, error) {
	doc := &ciiDoc{RSM: nsRSM, RAM: nsRAM, UDT: nsUDT, QDT: nsQDT}
	doc.Context.Guideline = ciiID{spec}
	if xrechnung {
		doc.Context.Process = &ciiID{peppolProcess}
	}
	doc.Document = ciiDocument{ID: inv.Number, TypeCode: inv.TypeCode, IssueDate: ciiDateOf(inv.IssueDate)}
	for _, n := range inv.Notes {
		doc.Document.Notes = append(doc.Document.Notes, ciiNote{n})
	}
	t := &doc.Transaction
	for i := range inv.Lines {
		l := &inv.Lines[i]
		t.Lines = append(t.Lines, ciiLine{
			Document: ciiLineDoc{l.ID}, Product: ciiProduct{Name: l.Name, Description: l.Description},
			Agreement: ciiLineAgreement{ciiPrice{l.Price.String()}},
			Delivery:  ciiLineDelivery{ciiQuantity{Unit: l.UnitCode, Value: l.Quantity.String()}},
			Settlement: ciiLineSettlement{
				Tax:    ciiTax{TypeCode: "VAT", Category: string(l.Tax.Code), Percent: l.Tax.PercentText()},
				Period: ciiPeriodOf(l.Period), Summation: ciiLineNets{l.Net.String()},
			},
		})
	}
	t.Agreement = ciiAgreement{BuyerReference: inv.BuyerReference, Seller: ciiPartyOf(&inv.Seller), Buyer: ciiPartyOf(&inv.Buyer)}
	if inv.OrderReference != "" {
		t.Agreement.OrderReference = &ciiRefDoc{inv.OrderReference}
	}
	if a := inv.DeliverTo; a != nil {
		t.Delivery.ShipTo = &ciiShipTo{ciiAddressOf(a)}
	}
	s := &t.Settlement
	s.Currency = string(inv.Currency)
	for _, pm := range inv.PaymentMeans {
		p := ciiPayment{TypeCode: pm.Code}
		switch {
		case pm.IBAN:
			p.Account = &ciiPayAccount{IBAN: pm.Account, Name: pm.AccountName}
		case pm.Account != "":
			p.Account = &ciiPayAccount{Proprietary: pm.Account, Name: pm.AccountName}
		}
		if pm.Institution != "" && pm.IBAN {
			p.Institution = &ciiInstitution{pm.Institution}
		}
		s.PaymentMeans = append(s.PaymentMeans, p)
	}
	for _, x := range inv.Taxes {
		s.Taxes = append(s.Taxes, ciiTax{Calculated: x.Amount.String(), TypeCode: "VAT", Reason: x.ExemptionReason,
			Basis: x.Taxable.String(), Category: string(x.Tax.Code), ReasonCode: x.ExemptionCode, Percent: x.Tax.PercentText()})
	}
	s.Period = ciiPeriodOf(inv.Period)
	for _, a := range inv.Allowances {
		s.Allowances = append(s.Allowances, ciiAllowance{Amount: a.Amount.String(), Reason: a.Reason,
			Category: ciiTax{TypeCode: "VAT", Category: string(a.Tax.Code), Percent: a.Tax.PercentText()}})
	}
	if inv.PaymentTerms != "" || !inv.DueDate.IsZero() {
		s.Terms = &ciiTerms{Description: inv.PaymentTerms}
		if !inv.DueDate.IsZero() {
			due := ciiDateOf(inv.DueDate)
			s.Terms.Due = &due
		}
	}
	s.Summation = ciiSummation{LineTotal: inv.LineTotal.String(), TaxBasis: inv.TaxExclusive.String(),
		TaxTotal: ciiAmount{Currency: string(inv.Currency), Value: inv.TaxTotal.String()}, GrandTotal: inv.TaxInclusive.String(),
		DuePayable: inv.Payable.String()}
	if len(inv.Allowances) > 0 {
		s.Summation.AllowanceTotal = inv.AllowanceTotal.String()
	}
	if !inv.Prepaid.IsZero() {
		s.Summation.Prepaid = inv.Prepaid.String()
	}
	if inv.Preceding != "" {
		s.Preceding = &ciiRefDoc{inv.Preceding}
	}
	return marshal(doc)
}

// ciiPartyOf is the CII trade party of p.
func ciiPartyOf(p *Party) ciiParty {
	out := ciiParty{Name: p.Name, Address: ciiAddressOf(&p.Address)}
	if p.LegalRegistrationID != "" {
		out.Legal = &ciiLegal{p.LegalRegistrationID}
	}
	if p.ContactName != "" || p.Phone != "" || p.Email != "" {
		out.Contact = &ciiContact{Name: p.ContactName}
		if p.Phone != "" {
			out.Contact.Phone = &ciiNumber{p.Phone}
		}
		if p.Email != "" {
			out.Contact.Email = &ciiURIPlain{p.Email}
		}
	}
	if e := p.ElectronicAddress; e != nil {
		out.URI = &ciiURI{ciiSchemeID{Scheme: e.Scheme, Value: e.ID}}
	}
	if p.VATID != "" {
		out.Registration = append(out.Registration, ciiRegistration{ciiSchemeID{Scheme: "VA", Value: p.VATID}})
	}
	if p.TaxRegistrationID != "" {
		out.Registration = append(out.Registration, ciiRegistration{ciiSchemeID{Scheme: "FC", Value: p.TaxRegistrationID}})
	}
	return out
}

// ciiAddressOf is the CII address of a.
func ciiAddressOf(a *billing.Address) ciiAddress {
	return ciiAddress{Postcode: a.Postcode, Line1: a.Line1, Line2: a.Line2, City: a.Town, Country: a.Country, State: a.State}
}

// ciiDateOf is a date in format 102 (YYYYMMDD).
func ciiDateOf(d billing.Date) ciiDate {
	return ciiDate{ciiDateString{Format: "102", Value: strings.ReplaceAll(d.String(), "-", "")}}
}

// ciiPeriodOf is the CII period of p; nil for none.
func ciiPeriodOf(p *Period) *ciiPeriod {
	if p == nil {
		return nil
	}
	start, end := ciiDateOf(p.Start), ciiDateOf(p.End)
	return &ciiPeriod{Start: &start, End: &end}
}
