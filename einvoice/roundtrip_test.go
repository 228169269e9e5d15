package einvoice_test

import (
	"encoding/xml"
	"fmt"
	"strings"
	"testing"

	"github.com/billingd/billing"
	"github.com/billingd/billing/einvoice"
)

// The round trip: each XML is read back with encoding/xml and every
// amount, date, party and line is compared with the stored document (not
// with the model it was written from), as text, to the digit.

// back is what a reader of either syntax finds in the file.
type back struct {
	number, typeCode, issue, due, currency, buyerRef, orderRef, preceding string
	period                                                                [2]string
	seller, buyer                                                         backParty
	lineTotal, allowanceTotal, taxExclusive, taxTotal, taxInclusive       string
	payable, prepaid                                                      string
	lines                                                                 []backLine
	allowances                                                            []backAllowance
	taxes                                                                 []backTax
	notes                                                                 []string
	payment                                                               [2]string // means code, account
}

type backParty struct {
	name, vat, legal, line1, line2, town, postcode, country, endpoint string
}

type backLine struct {
	id, name, description, quantity, unit, net, price, category, percent string
	period                                                               [2]string
}

type backAllowance struct{ amount, reason, category, percent string }

type backTax struct{ taxable, amount, category, percent, reason, code string }

// UBL, read with local names only.
type uText struct {
	V string `xml:",chardata"`
}

type uParty struct {
	Endpoint uText `xml:"EndpointID"`
	Address  struct {
		Street, AdditionalStreetName, CityName, PostalZone string
		StreetName                                         string
		Country                                            struct{ IdentificationCode string }
	} `xml:"PostalAddress"`
	TaxScheme []struct{ CompanyID string }                 `xml:"PartyTaxScheme"`
	Legal     struct{ RegistrationName, CompanyID string } `xml:"PartyLegalEntity"`
}

type uCategory struct {
	ID, Percent, TaxExemptionReason, TaxExemptionReasonCode string
}

type uLine struct {
	ID       string
	Invoiced struct {
		Unit string `xml:"unitCode,attr"`
		V    string `xml:",chardata"`
	} `xml:"InvoicedQuantity"`
	Credited struct {
		Unit string `xml:"unitCode,attr"`
		V    string `xml:",chardata"`
	} `xml:"CreditedQuantity"`
	Net    string                              `xml:"LineExtensionAmount"`
	Period struct{ StartDate, EndDate string } `xml:"InvoicePeriod"`
	Item   struct {
		Name, Description string
		Cat               uCategory `xml:"ClassifiedTaxCategory"`
	} `xml:"Item"`
	Price string `xml:"Price>PriceAmount"`
}

type uDoc struct {
	ID, IssueDate, DueDate, InvoiceTypeCode, CreditNoteTypeCode, DocumentCurrencyCode, BuyerReference string
	Notes                                                                                             []string                            `xml:"Note"`
	Period                                                                                            struct{ StartDate, EndDate string } `xml:"InvoicePeriod"`
	Order                                                                                             string                              `xml:"OrderReference>ID"`
	Preceding                                                                                         string                              `xml:"BillingReference>InvoiceDocumentReference>ID"`
	Supplier                                                                                          uParty                              `xml:"AccountingSupplierParty>Party"`
	Customer                                                                                          uParty                              `xml:"AccountingCustomerParty>Party"`
	Allowances                                                                                        []struct {
		Reason string    `xml:"AllowanceChargeReason"`
		Amt    string    `xml:"Amount"`
		Cat    uCategory `xml:"TaxCategory"`
	} `xml:"AllowanceCharge"`
	TaxTotal struct {
		TaxAmount string
		Sub       []struct {
			TaxableAmount, TaxAmount string
			Cat                      uCategory `xml:"TaxCategory"`
		} `xml:"TaxSubtotal"`
	} `xml:"TaxTotal"`
	Monetary struct {
		LineExtensionAmount, TaxExclusiveAmount, TaxInclusiveAmount, AllowanceTotalAmount, PrepaidAmount, PayableAmount string
	} `xml:"LegalMonetaryTotal"`
	InvoiceLines    []uLine `xml:"InvoiceLine"`
	CreditNoteLines []uLine `xml:"CreditNoteLine"`
	PaymentCode     string  `xml:"PaymentMeans>PaymentMeansCode"`
	PaymentAccount  string  `xml:"PaymentMeans>PayeeFinancialAccount>ID"`
}

func readUBL(t *testing.T, data []byte) back {
	t.Helper()
	var u uDoc
	if err := xml.Unmarshal(data, &u); err != nil {
		t.Fatalf("reading the UBL back: %v", err)
	}
	b := back{number: u.ID, typeCode: u.InvoiceTypeCode + u.CreditNoteTypeCode, issue: u.IssueDate, due: u.DueDate,
		currency: u.DocumentCurrencyCode, buyerRef: u.BuyerReference, orderRef: u.Order, preceding: u.Preceding,
		period: [2]string{u.Period.StartDate, u.Period.EndDate}, notes: u.Notes,
		lineTotal: u.Monetary.LineExtensionAmount, allowanceTotal: u.Monetary.AllowanceTotalAmount,
		taxExclusive: u.Monetary.TaxExclusiveAmount, taxTotal: u.TaxTotal.TaxAmount, taxInclusive: u.Monetary.TaxInclusiveAmount,
		payable: u.Monetary.PayableAmount, prepaid: u.Monetary.PrepaidAmount, payment: [2]string{u.PaymentCode, u.PaymentAccount}}
	party := func(p uParty) backParty {
		out := backParty{name: p.Legal.RegistrationName, legal: p.Legal.CompanyID, line1: p.Address.StreetName,
			line2: p.Address.AdditionalStreetName, town: p.Address.CityName, postcode: p.Address.PostalZone,
			country: p.Address.Country.IdentificationCode, endpoint: p.Endpoint.V}
		if len(p.TaxScheme) > 0 {
			out.vat = p.TaxScheme[0].CompanyID
		}
		return out
	}
	b.seller, b.buyer = party(u.Supplier), party(u.Customer)
	for _, a := range u.Allowances {
		b.allowances = append(b.allowances, backAllowance{amount: a.Amt, reason: a.Reason, category: a.Cat.ID, percent: a.Cat.Percent})
	}
	for _, s := range u.TaxTotal.Sub {
		b.taxes = append(b.taxes, backTax{taxable: s.TaxableAmount, amount: s.TaxAmount, category: s.Cat.ID, percent: s.Cat.Percent,
			reason: s.Cat.TaxExemptionReason, code: s.Cat.TaxExemptionReasonCode})
	}
	for _, l := range append(u.InvoiceLines, u.CreditNoteLines...) {
		q := l.Invoiced
		if q.V == "" {
			q = l.Credited
		}
		b.lines = append(b.lines, backLine{id: l.ID, name: l.Item.Name, description: l.Item.Description, quantity: q.V, unit: q.Unit,
			net: l.Net, price: l.Price, category: l.Item.Cat.ID, percent: l.Item.Cat.Percent,
			period: [2]string{l.Period.StartDate, l.Period.EndDate}})
	}
	return b
}

// CII, read with local names only.
type cDate struct {
	V string `xml:"DateTimeString"`
}

type cTax struct {
	CalculatedAmount, TypeCode, ExemptionReason, BasisAmount, CategoryCode, ExemptionReasonCode, RateApplicablePercent string
}

type cParty struct {
	Name    string
	Legal   string                                                               `xml:"SpecifiedLegalOrganization>ID"`
	Address struct{ PostcodeCode, LineOne, LineTwo, CityName, CountryID string } `xml:"PostalTradeAddress"`
	URI     string                                                               `xml:"URIUniversalCommunication>URIID"`
	Reg     []string                                                             `xml:"SpecifiedTaxRegistration>ID"`
}

type cPeriod struct {
	Start cDate `xml:"StartDateTime"`
	End   cDate `xml:"EndDateTime"`
}

type cDoc struct {
	ID    string   `xml:"ExchangedDocument>ID"`
	Type  string   `xml:"ExchangedDocument>TypeCode"`
	Issue cDate    `xml:"ExchangedDocument>IssueDateTime"`
	Notes []string `xml:"ExchangedDocument>IncludedNote>Content"`
	Tx    struct {
		Lines []struct {
			ID       string `xml:"AssociatedDocumentLineDocument>LineID"`
			Name     string `xml:"SpecifiedTradeProduct>Name"`
			Desc     string `xml:"SpecifiedTradeProduct>Description"`
			Price    string `xml:"SpecifiedLineTradeAgreement>NetPriceProductTradePrice>ChargeAmount"`
			Quantity struct {
				Unit string `xml:"unitCode,attr"`
				V    string `xml:",chardata"`
			} `xml:"SpecifiedLineTradeDelivery>BilledQuantity"`
			Tax    cTax    `xml:"SpecifiedLineTradeSettlement>ApplicableTradeTax"`
			Period cPeriod `xml:"SpecifiedLineTradeSettlement>BillingSpecifiedPeriod"`
			Net    string  `xml:"SpecifiedLineTradeSettlement>SpecifiedTradeSettlementLineMonetarySummation>LineTotalAmount"`
		} `xml:"IncludedSupplyChainTradeLineItem"`
		Agreement struct {
			BuyerReference string
			Seller         cParty `xml:"SellerTradeParty"`
			Buyer          cParty `xml:"BuyerTradeParty"`
			Order          string `xml:"BuyerOrderReferencedDocument>IssuerAssignedID"`
		} `xml:"ApplicableHeaderTradeAgreement"`
		Settlement struct {
			Currency   string  `xml:"InvoiceCurrencyCode"`
			Taxes      []cTax  `xml:"ApplicableTradeTax"`
			Period     cPeriod `xml:"BillingSpecifiedPeriod"`
			Allowances []struct {
				Amount string `xml:"ActualAmount"`
				Reason string
				Tax    cTax `xml:"CategoryTradeTax"`
			} `xml:"SpecifiedTradeAllowanceCharge"`
			Due     cDate `xml:"SpecifiedTradePaymentTerms>DueDateDateTime"`
			Payment struct {
				TypeCode    string
				IBAN        string `xml:"PayeePartyCreditorFinancialAccount>IBANID"`
				Proprietary string `xml:"PayeePartyCreditorFinancialAccount>ProprietaryID"`
			} `xml:"SpecifiedTradeSettlementPaymentMeans"`
			Sum struct {
				LineTotalAmount, AllowanceTotalAmount, TaxBasisTotalAmount, TaxTotalAmount, GrandTotalAmount, TotalPrepaidAmount, DuePayableAmount string
			} `xml:"SpecifiedTradeSettlementHeaderMonetarySummation"`
			Preceding string `xml:"InvoiceReferencedDocument>IssuerAssignedID"`
		} `xml:"ApplicableHeaderTradeSettlement"`
	} `xml:"SupplyChainTradeTransaction"`
}

// isoDate turns a CII date (YYYYMMDD) into YYYY-MM-DD; "" stays "".
func isoDate(s string) string {
	if len(s) != 8 {
		return s
	}
	return s[:4] + "-" + s[4:6] + "-" + s[6:]
}

func readCII(t *testing.T, data []byte) back {
	t.Helper()
	var c cDoc
	if err := xml.Unmarshal(data, &c); err != nil {
		t.Fatalf("reading the CII back: %v", err)
	}
	s, a := &c.Tx.Settlement, &c.Tx.Agreement
	b := back{number: c.ID, typeCode: c.Type, issue: isoDate(c.Issue.V), due: isoDate(s.Due.V), currency: s.Currency,
		buyerRef: a.BuyerReference, orderRef: a.Order, preceding: s.Preceding, notes: c.Notes,
		period:    [2]string{isoDate(s.Period.Start.V), isoDate(s.Period.End.V)},
		lineTotal: s.Sum.LineTotalAmount, allowanceTotal: s.Sum.AllowanceTotalAmount, taxExclusive: s.Sum.TaxBasisTotalAmount,
		taxTotal: s.Sum.TaxTotalAmount, taxInclusive: s.Sum.GrandTotalAmount, payable: s.Sum.DuePayableAmount, prepaid: s.Sum.TotalPrepaidAmount,
		payment: [2]string{s.Payment.TypeCode, s.Payment.IBAN + s.Payment.Proprietary}}
	party := func(p cParty) backParty {
		out := backParty{name: p.Name, legal: p.Legal, line1: p.Address.LineOne, line2: p.Address.LineTwo, town: p.Address.CityName,
			postcode: p.Address.PostcodeCode, country: p.Address.CountryID, endpoint: p.URI}
		if len(p.Reg) > 0 {
			out.vat = p.Reg[0]
		}
		return out
	}
	b.seller, b.buyer = party(a.Seller), party(a.Buyer)
	for _, x := range s.Allowances {
		b.allowances = append(b.allowances, backAllowance{amount: x.Amount, reason: x.Reason, category: x.Tax.CategoryCode, percent: x.Tax.RateApplicablePercent})
	}
	for _, x := range s.Taxes {
		b.taxes = append(b.taxes, backTax{taxable: x.BasisAmount, amount: x.CalculatedAmount, category: x.CategoryCode,
			percent: x.RateApplicablePercent, reason: x.ExemptionReason, code: x.ExemptionReasonCode})
	}
	for _, l := range c.Tx.Lines {
		b.lines = append(b.lines, backLine{id: l.ID, name: l.Name, description: l.Desc, quantity: l.Quantity.V, unit: l.Quantity.Unit,
			net: l.Net, price: l.Price, category: l.Tax.CategoryCode, percent: l.Tax.RateApplicablePercent,
			period: [2]string{isoDate(l.Period.Start.V), isoDate(l.Period.End.V)}})
	}
	return b
}

// TestRoundTrip reads every UBL and CII file of the corpus back and
// compares it with the stored document.
func TestRoundTrip(t *testing.T) {
	for _, s := range sharedCorpus(t) {
		for _, f := range []einvoice.Format{einvoice.UBL, einvoice.CII} {
			t.Run(s.name+"/"+string(f), func(t *testing.T) {
				data, _, err := einvoice.Write(s.doc, f)
				if err != nil {
					t.Fatal(err)
				}
				var b back
				if f == einvoice.UBL {
					b = readUBL(t, data)
				} else {
					b = readCII(t, data)
				}
				checkBack(t, s.doc, &b)
			})
		}
	}
}

// stored is what the stored document says, in the terms checkBack
// compares.
type storedDoc struct {
	number, typeCode, issue, due, buyerRef, orderRef, preceding string
	currency                                                    billing.Currency
	totals                                                      billing.Totals
	buyerName, buyerTaxID                                       string
	buyerAddress                                                billing.Address
	lines                                                       []*billing.LineItem
	periods                                                     [][2]string
}

func storedOf(d *billing.PrintableDocument) storedDoc {
	if d.Kind == billing.DocumentCreditNote {
		cn := d.CreditNote
		s := storedDoc{number: cn.CreditNoteNumber, typeCode: "381", issue: cn.IssueDate.String(), buyerRef: cn.BuyerReference,
			orderRef: cn.PurchaseOrderNumber, preceding: cn.InvoiceNumber, currency: cn.Currency, totals: cn.Totals,
			buyerName: cn.CustomerLegalCompanyName, buyerTaxID: cn.CustomerTaxID, buyerAddress: cn.CustomerBillingAddress}
		for i := range d.CreditNoteLines {
			l := &d.CreditNoteLines[i]
			s.lines = append(s.lines, &l.LineItem)
			p := [2]string{}
			if l.ServicePeriod != nil {
				p = [2]string{l.ServicePeriod.Start.String(), l.ServicePeriod.EndInclusive.String()}
			}
			s.periods = append(s.periods, p)
		}
		return s
	}
	inv := d.Invoice
	s := storedDoc{number: inv.InvoiceNumber, typeCode: "380", issue: inv.IssueDate.String(), due: inv.DueDate.String(),
		buyerRef: inv.BuyerReference, orderRef: inv.PurchaseOrderNumber, currency: inv.Currency, totals: inv.Totals,
		buyerName: inv.CustomerLegalCompanyName, buyerTaxID: inv.CustomerTaxID, buyerAddress: inv.CustomerBillingAddress}
	for i := range d.InvoiceLines {
		l := &d.InvoiceLines[i]
		s.lines = append(s.lines, &l.LineItem)
		p := [2]string{}
		switch {
		case l.ServicePeriod != nil:
			p = [2]string{l.ServicePeriod.StartDate.String(), l.ServicePeriod.EndDate.String()}
		case l.ServicePeriodStart != nil && l.ServicePeriodEnd != nil:
			p = [2]string{d.Calendar.DateOf(*l.ServicePeriodStart).String(), d.Calendar.DateOf(*l.ServicePeriodEnd).AddDays(-1).String()}
		}
		s.periods = append(s.periods, p)
	}
	return s
}

// checkBack compares what was read back with the stored document.
//
// Long on purpose: one comparison per business term, in the order of the
// norm, so a failure names the term.
func checkBack(t *testing.T, d *billing.PrintableDocument, b *back) {
	t.Helper()
	s := storedOf(d)
	eq := func(what, got, want string) {
		t.Helper()
		if got != want {
			t.Errorf("%s: read back %q, stored %q", what, got, want)
		}
	}
	eq("BT-1 number", b.number, s.number)
	eq("BT-3 type code", b.typeCode, s.typeCode)
	eq("BT-2 issue date", b.issue, s.issue)
	if s.typeCode == "380" {
		eq("BT-9 due date", b.due, s.due)
	}
	eq("BT-5 currency", b.currency, string(s.currency))
	eq("BT-10 buyer reference", b.buyerRef, s.buyerRef)
	eq("BT-13 purchase order", b.orderRef, s.orderRef)
	eq("BT-25 preceding invoice", b.preceding, s.preceding)
	m := &d.Merchant
	outside := len(b.taxes) == 1 && b.taxes[0].category == "O"
	eq("BT-27 seller name", b.seller.name, m.LegalCompanyName)
	if outside {
		eq("BT-31 seller VAT id (none outside the scope of VAT)", b.seller.vat, "")
	} else {
		eq("BT-31 seller VAT id", b.seller.vat, m.TaxID)
	}
	eq("BT-30 seller registration", b.seller.legal, m.LegalRegistrationID)
	eq("BT-35 seller street", b.seller.line1, m.Address.Line1)
	eq("BT-37 seller town", b.seller.town, m.Address.Town)
	eq("BT-38 seller postcode", b.seller.postcode, m.Address.Postcode)
	eq("BT-40 seller country", b.seller.country, m.Address.Country)
	eq("BT-44 buyer name", b.buyer.name, s.buyerName)
	if id := s.buyerTaxID; len(id) > 2 && strings.ToUpper(id[:2]) == id[:2] && !outside {
		eq("BT-48 buyer VAT id", b.buyer.vat, id)
	}
	eq("BT-47 buyer registration", b.buyer.legal, d.Buyer.LegalRegistrationID)
	eq("BT-50 buyer street", b.buyer.line1, s.buyerAddress.Line1)
	eq("BT-51 buyer street 2", b.buyer.line2, s.buyerAddress.Line2)
	eq("BT-52 buyer town", b.buyer.town, s.buyerAddress.Town)
	eq("BT-53 buyer postcode", b.buyer.postcode, s.buyerAddress.Postcode)
	eq("BT-55 buyer country", b.buyer.country, s.buyerAddress.Country)
	if a := d.Buyer.ElectronicAddress; a != nil {
		eq("BT-49 buyer electronic address", b.buyer.endpoint, a.ID)
	}
	// Payment instructions: the merchant's bank account, else the link.
	var pay [2]string
	switch {
	case s.typeCode == "381":
	case m.IBAN != "":
		pay = [2]string{"58", m.IBAN}
	case m.UKAccountDetails != nil && s.currency == "GBP":
		pay = [2]string{"30", m.UKAccountDetails.AccountNumber}
	case d.Invoice != nil && len(d.Invoice.PaymentOptions) > 0:
		pay = [2]string{"68", ""}
	}
	eq("BT-81 payment means, BT-84 account", b.payment[0]+" "+b.payment[1], pay[0]+" "+pay[1])
	// Totals: the document's, to the digit.
	eq("BT-109 net total", b.taxExclusive, s.totals.NetTotal.String())
	eq("BT-110 tax total", b.taxTotal, s.totals.TotalTax.String())
	eq("BT-112 gross total", b.taxInclusive, s.totals.GrossTotal.String())
	prepaid := ""
	if s.typeCode == "380" {
		for _, a := range d.Invoice.CreditApplications {
			if !a.Date.After(d.Invoice.IssueDate) {
				prepaid = a.Amount.Add(parseOr(s.currency, prepaid)).String()
			}
		}
	}
	eq("BT-113 prepaid", b.prepaid, prepaid)
	eq("BT-115 payable", b.payable, s.totals.GrossTotal.Sub(parseOr(s.currency, prepaid)).String())
	// Lines: the positive ones as lines, the negative ones as allowances,
	// each in the stored order.
	zero := s.currency.Zero()
	lineSum, allowSum := zero, zero
	var li, ai int
	byRate := map[string][2]billing.Decimal{}
	for i, l := range s.lines {
		k := fmt.Sprint(l.TaxRate.Mul(billing.DecimalFromInt(100)).Canonical())
		r, ok := byRate[k]
		if !ok {
			r = [2]billing.Decimal{zero, zero}
		}
		byRate[k] = [2]billing.Decimal{r[0].Add(l.NetTotal), r[1].Add(l.TotalTax)}
		if l.NetTotal.Sign() < 0 {
			if ai >= len(b.allowances) {
				t.Fatalf("line %d (%s) is negative but no allowance is left", i, l.Title)
			}
			a := b.allowances[ai]
			ai++
			allowSum = allowSum.Add(l.NetTotal.Neg())
			eq("BT-92 allowance amount", a.amount, l.NetTotal.Neg().String())
			eq("BT-97 allowance reason", a.reason, l.Title)
			samePercent(t, "BT-96 allowance rate", a.percent, l.TaxRate)
			continue
		}
		if li >= len(b.lines) {
			t.Fatalf("line %d (%s) was not read back", i, l.Title)
		}
		got := b.lines[li]
		li++
		lineSum = lineSum.Add(l.NetTotal)
		eq("BT-126 line id", got.id, fmt.Sprint(l.Index+1))
		eq("BT-153 item name", got.name, l.Title)
		eq("BT-154 item description", got.description, l.Description)
		eq("BT-131 line net", got.net, l.NetTotal.String())
		q, p := l.Quantity, l.Rate
		if p.Sign() < 0 {
			q, p = q.Neg(), p.Neg()
		}
		eq("BT-129 quantity", got.quantity, q.String())
		eq("BT-146 price", got.price, p.String())
		unit := l.UnitCode
		if unit == "" {
			unit = "C62"
		}
		eq("BT-130 unit", got.unit, unit)
		samePercent(t, "BT-152 line rate", got.percent, l.TaxRate)
		eq("BG-26 line period", got.period[0]+"/"+got.period[1], s.periods[i][0]+"/"+s.periods[i][1])
	}
	if li != len(b.lines) || ai != len(b.allowances) {
		t.Errorf("read back %d lines and %d allowances, the document has %d and %d", len(b.lines), len(b.allowances), li, ai)
	}
	eq("BT-106 sum of line nets", b.lineTotal, lineSum.String())
	if ai > 0 {
		eq("BT-107 sum of allowances", b.allowanceTotal, allowSum.String())
	}
	// The breakdown: per rate, the stored nets and taxes summed.
	taxable, tax := zero, zero
	for _, x := range b.taxes {
		pct := x.percent
		if x.category == "O" && pct == "" {
			pct = "0"
		}
		r, ok := byRate[billing.MustDecimal(pct).Canonical()]
		if !ok {
			t.Errorf("breakdown rate %s%% has no stored line", x.percent)
			continue
		}
		eq("BT-116 taxable at "+x.percent+"%", x.taxable, r[0].String())
		eq("BT-117 tax at "+x.percent+"%", x.amount, r[1].String())
		taxable, tax = taxable.Add(billing.MustDecimal(x.taxable)), tax.Add(billing.MustDecimal(x.amount))
		if x.category == "AE" || x.category == "E" {
			if x.reason == "" && x.code == "" {
				t.Errorf("category %s has no exemption reason", x.category)
			}
		}
	}
	eq("sum of BT-116", taxable.String(), s.totals.NetTotal.String())
	eq("sum of BT-117", tax.String(), s.totals.TotalTax.String())
	if len(b.taxes) != len(byRate) {
		t.Errorf("%d breakdown rows, the document has %d rates", len(b.taxes), len(byRate))
	}
}

// samePercent checks a percent read back against a stored fraction (no
// percent at all stands for a zero rate: category O has none).
func samePercent(t *testing.T, what, got string, rate billing.Decimal) {
	t.Helper()
	if got == "" && rate.IsZero() {
		return
	}
	g, err := billing.ParseDecimal(got)
	if err != nil || g.Cmp(rate.Mul(billing.DecimalFromInt(100))) != 0 {
		t.Errorf("%s: read back %q, stored rate %s", what, got, rate)
	}
}

// parseOr reads an amount written in a file, or zero in cur for "".
func parseOr(cur billing.Currency, s string) billing.Decimal {
	if s == "" {
		return cur.Zero()
	}
	d, err := billing.ParseDecimal(s)
	if err != nil {
		panic(err)
	}
	return d
}
