package render

import (
	"fmt"
	"strings"
	"time"

	"github.com/billingd/billing"
)

// view is a document as it is printed: every text already formatted, in
// the order the layout shows it. The PDF and the HTML renderings draw the
// same view, so they never say different things.
type view struct {
	Title    string // "Invoice", "Credit note"
	Number   string // the document number; "" for a draft
	Mark     string // "DRAFT" for drafts, "VOID" for voided documents, else ""
	Colour   [3]uint8
	Logo     []byte // PNG
	Merchant party
	BillTo   party
	ShipTo   *party // only when it differs from the billing address
	Header   []fact // number and dates, beside the title
	Refs     []fact // billing period, purchase order, reference, credited invoice
	Sections []section
	TaxRows  []taxRow
	Totals   []fact // the last one is emphasised (amount due, total credited)
	Notes    []string
	Memo     string
	Payment  []paymentBlock
	Custom   []fact
	Footer   string // merchant and number, beside "Page n of m"
	Date     time.Time
}

// party is a block of the header: a name and its lines.
type party struct {
	Heading string
	Name    string
	Lines   []string
}

// fact is a label and a value.
type fact struct {
	Label, Value string
	// Link, when set, is where the value points: a link in the HTML and a
	// link annotation over the value's lines in the PDF (a payment link).
	Link string
}

// section is the ungrouped lines (no title) or one group of lines with its
// subtotal.
type section struct {
	Title, Description string
	Lines              []line
	Subtotal           string // net; "" for the ungrouped lines
}

// line is one printed line item.
type line struct {
	Title, Description, Period           string
	Quantity, UnitPrice, TaxRate, Amount string
}

// taxRow is one rate of the tax summary.
type taxRow struct{ Rate, Net, Tax string }

// paymentBlock is one way to pay: a heading and its details.
type paymentBlock struct {
	Heading string
	Rows    []fact
}

// defaultColour colours rules and headings when the merchant chose none.
var defaultColour = [3]uint8{0x2b, 0x4c, 0x7e}

// build turns the stored document into its view.
func build(d *billing.PrintableDocument) (*view, error) {
	if d.TemplateVersion != 1 {
		return nil, fmt.Errorf("render: template version %d is not known to this renderer", d.TemplateVersion)
	}
	v := &view{Colour: colour(d.Merchant.PrimaryColour), Logo: d.Logo, Date: d.Date.UTC()}
	v.Merchant = merchantParty(&d.Merchant)
	switch d.Kind {
	case billing.DocumentInvoice:
		if d.Invoice == nil {
			return nil, fmt.Errorf("render: the printable invoice has no invoice")
		}
		buildInvoice(v, d)
	case billing.DocumentCreditNote:
		if d.CreditNote == nil {
			return nil, fmt.Errorf("render: the printable credit note has no credit note")
		}
		buildCreditNote(v, d)
	default:
		return nil, fmt.Errorf("render: unknown document kind %q", d.Kind)
	}
	switch st := d.Status(); st {
	case billing.StatusDraft, billing.StatusInProgress:
		v.Mark = "DRAFT"
	case billing.StatusVoided:
		v.Mark = "VOID"
	}
	// The reason a document carries no tax is printed only when it carries
	// none (a document stored before the rule may hold tax).
	switch untaxed := carriesNoTax(d); {
	case !untaxed:
	case d.CustomerTaxStatus == billing.TaxStatusReverseCharged:
		v.Notes = append(v.Notes, "Reverse charge: the customer accounts for the tax.")
	case d.CustomerTaxStatus == billing.TaxStatusTaxExempt:
		v.Notes = append(v.Notes, "Tax exempt.")
	}
	v.Custom = keyValues(d.Merchant.CustomFields)
	v.Footer = strings.Join(nonEmpty(d.Merchant.LegalCompanyName, v.Title+" "+numberOrDraft(v.Number)), " · ")
	return v, nil
}

// carriesNoTax reports whether no line of the document carries tax.
func carriesNoTax(d *billing.PrintableDocument) bool {
	for _, l := range d.InvoiceLines {
		if !l.TaxRate.IsZero() {
			return false
		}
	}
	for _, l := range d.CreditNoteLines {
		if !l.TaxRate.IsZero() {
			return false
		}
	}
	return true
}

// buildInvoice fills in what an invoice prints.
func buildInvoice(v *view, d *billing.PrintableDocument) {
	inv := d.Invoice
	cur := inv.Currency
	v.Title, v.Number = "Invoice", inv.InvoiceNumber
	v.BillTo, v.ShipTo = customerParties(inv.CustomerLegalCompanyName, &inv.CustomerBillingAddress, &inv.CustomerShippingAddress, inv.CustomerTaxID, inv.CustomerEmails)
	v.Header = facts("Invoice number", inv.InvoiceNumber, "Issue date", date(inv.IssueDate), "Due date", date(inv.DueDate))
	period := ""
	if inv.BillingPeriod != nil {
		period = dateRange(inv.BillingPeriod.Start, inv.BillingPeriod.EndInclusive)
	}
	v.Refs = facts("Billing period", period, "Purchase order", inv.PurchaseOrderNumber, "Reference", inv.Reference)
	lines := make([]lineSource, len(d.InvoiceLines))
	for i := range d.InvoiceLines {
		l := &d.InvoiceLines[i]
		lines[i] = lineSource{item: &l.LineItem, period: invoiceLinePeriod(d.Calendar, l)}
	}
	groups := make([]*billing.LineItemGroup, len(d.InvoiceGroups))
	for i := range d.InvoiceGroups {
		groups[i] = &d.InvoiceGroups[i].LineItemGroup
	}
	v.Sections, v.TaxRows = sections(cur, lines, groups)
	v.Totals = facts("Net total", money(cur, inv.NetTotal), "Tax", money(cur, inv.TotalTax), "Total", money(cur, inv.GrossTotal))
	for _, a := range inv.CreditApplications { // money on account, after tax
		v.Totals = append(v.Totals, fact{Label: "Credit applied: " + a.Name, Value: money(cur, a.Amount.Neg())})
	}
	v.Totals = append(v.Totals, facts("Amount paid", money(cur, inv.AmountPaid), "Amount credited", money(cur, inv.AmountCredited),
		"Amount due", money(cur, inv.AmountDue))...)
	if inv.CreditBalances != "" {
		v.Notes = append(v.Notes, inv.CreditBalances)
	}
	v.Memo = inv.Memo
	v.Payment = paymentBlocks(&d.Merchant, cur, inv.PaymentOptions)
	if inv.PaymentLink != "" && inv.RenderSettings.PaymentLinkDisplay != billing.HidePaymentLink {
		v.Payment = append(v.Payment, paymentBlock{Heading: "Pay online", Rows: []fact{{Label: "Payment link", Value: inv.PaymentLink, Link: inv.PaymentLink}}})
	}
}

// buildCreditNote fills in what a credit note prints.
func buildCreditNote(v *view, d *billing.PrintableDocument) {
	cn := d.CreditNote
	cur := cn.Currency
	v.Title, v.Number = "Credit note", cn.CreditNoteNumber
	v.BillTo, v.ShipTo = customerParties(cn.CustomerLegalCompanyName, &cn.CustomerBillingAddress, &cn.CustomerShippingAddress, cn.CustomerTaxID, cn.CustomerEmails)
	v.Header = facts("Credit note number", cn.CreditNoteNumber, "Issue date", date(cn.IssueDate))
	credited := cn.InvoiceNumber
	if credited == "" && cn.InvoiceID != "" {
		credited = cn.InvoiceID
	}
	v.Refs = facts("Credits invoice", credited, "Billing period", timeRange(d.Calendar, cn.BillingPeriodStart, cn.BillingPeriodEnd),
		"Purchase order", cn.PurchaseOrderNumber)
	lines := make([]lineSource, len(d.CreditNoteLines))
	for i := range d.CreditNoteLines {
		l := &d.CreditNoteLines[i]
		p := ""
		if l.ServicePeriod != nil {
			p = dateRange(l.ServicePeriod.Start, l.ServicePeriod.EndInclusive)
		}
		lines[i] = lineSource{item: &l.LineItem, period: p}
	}
	groups := make([]*billing.LineItemGroup, len(d.CreditNoteGroups))
	for i := range d.CreditNoteGroups {
		groups[i] = &d.CreditNoteGroups[i].LineItemGroup
	}
	v.Sections, v.TaxRows = sections(cur, lines, groups)
	v.Totals = facts("Net total", money(cur, cn.NetTotal), "Tax", money(cur, cn.TotalTax), "Total credited", money(cur, cn.GrossTotal))
	v.Memo = cn.Memo
}

// invoiceLinePeriod is the service period of an invoice line: its dates,
// else its timestamps.
func invoiceLinePeriod(cal billing.Calendar, l *billing.InvoiceLineItem) string {
	if l.ServicePeriod != nil {
		return dateRange(l.ServicePeriod.StartDate, l.ServicePeriod.EndDate)
	}
	return timeRange(cal, l.ServicePeriodStart, l.ServicePeriodEnd)
}

// lineSource is a stored line of either document with its printed period.
type lineSource struct {
	item   *billing.LineItem
	period string
}

// sections groups the lines (in index order) into the ungrouped lines
// first, then one section per group in group index order, each with its
// stored net total as subtotal; and sums the stored line amounts per tax
// rate for the tax summary (the sums of all rates are the document's
// totals, which are themselves the sums of its lines).
func sections(cur billing.Currency, lines []lineSource, groups []*billing.LineItemGroup) ([]section, []taxRow) {
	byGroup := map[string][]line{}
	type rateSum struct{ net, tax billing.Decimal }
	var rates []billing.Decimal
	sums := map[string]*rateSum{}
	for _, src := range lines {
		l := src.item
		byGroup[l.GroupID] = append(byGroup[l.GroupID], line{
			Title: l.Title, Description: l.Description, Period: src.period,
			Quantity: number(l.Quantity), UnitPrice: price(cur, l.Rate, l.RateDisplay),
			TaxRate: percent(l.TaxRate), Amount: money(cur, l.NetTotal),
		})
		k := l.TaxRate.Canonical()
		if sums[k] == nil {
			sums[k] = &rateSum{net: cur.Zero(), tax: cur.Zero()}
			rates = append(rates, l.TaxRate)
		}
		sums[k].net, sums[k].tax = sums[k].net.Add(l.NetTotal), sums[k].tax.Add(l.TotalTax)
	}
	var out []section
	if ls := byGroup[""]; len(ls) > 0 {
		out = append(out, section{Lines: ls})
	}
	for _, g := range groups {
		if ls := byGroup[g.ID]; len(ls) > 0 {
			out = append(out, section{Title: g.Title, Description: g.Description, Lines: ls, Subtotal: money(cur, g.NetTotal)})
		}
	}
	sortDecimals(rates)
	taxes := make([]taxRow, len(rates))
	for i, r := range rates {
		s := sums[r.Canonical()]
		taxes[i] = taxRow{Rate: percent(r), Net: money(cur, s.net), Tax: money(cur, s.tax)}
	}
	return out, taxes
}

// sortDecimals sorts ds in descending order (the highest rate first).
func sortDecimals(ds []billing.Decimal) {
	for i := 1; i < len(ds); i++ {
		for j := i; j > 0 && ds[j].Cmp(ds[j-1]) > 0; j-- {
			ds[j], ds[j-1] = ds[j-1], ds[j]
		}
	}
}

// merchantParty is the "From" block.
func merchantParty(md *billing.MerchantDetails) party {
	p := party{Heading: "From", Name: md.LegalCompanyName, Lines: addressLines(md.Address)}
	if md.TaxID != "" {
		p.Lines = append(p.Lines, "Tax ID: "+md.TaxID)
	}
	p.Lines = append(p.Lines, nonEmpty(md.Email, md.PhoneNumber)...)
	return p
}

// customerParties are the "Bill to" block and, when the shipping address
// is given and differs from the billing one, the "Ship to" block.
func customerParties(name string, billingAddr, shipping *billing.Address, taxID string, emails []string) (party, *party) {
	bill := party{Heading: "Bill to", Name: name, Lines: addressLines(billingAddr)}
	if taxID != "" {
		bill.Lines = append(bill.Lines, "Tax ID: "+taxID)
	}
	bill.Lines = append(bill.Lines, emails...)
	if lines := addressLines(shipping); len(lines) > 0 && *shipping != *billingAddr {
		return bill, &party{Heading: "Ship to", Name: name, Lines: lines}
	}
	return bill, nil
}

// paymentBlocks are the merchant's bank details that fit the currency (all
// of them when none does), and the payment options.
func paymentBlocks(md *billing.MerchantDetails, cur billing.Currency, options []billing.PaymentOption) []paymentBlock {
	all := bankBlocks(md)
	var out []paymentBlock
	for _, b := range all {
		if b.fits(cur) {
			out = append(out, b.paymentBlock)
		}
	}
	if len(out) == 0 {
		for _, b := range all {
			out = append(out, b.paymentBlock)
		}
	}
	if len(out) > 0 && md.IncludeBeneficiaryAddressInPaymentDetails {
		if a := addressLines(md.Address); len(a) > 0 {
			out = append(out, paymentBlock{Heading: "Beneficiary", Rows: facts("Name", md.LegalCompanyName, "Address", strings.Join(a, ", "))})
		}
	}
	var ways []string
	for _, o := range options {
		switch o {
		case billing.PaymentOptionBankTransfer:
			ways = append(ways, "bank transfer")
		case billing.PaymentOptionLink:
			ways = append(ways, "payment link")
		}
	}
	if len(ways) > 0 {
		out = append(out, paymentBlock{Heading: "Payment options", Rows: []fact{{Label: "Pay by", Value: strings.Join(ways, ", ")}}})
	}
	return out
}

// bankBlock is a way to pay and the currencies it is printed for (none:
// any currency).
type bankBlock struct {
	paymentBlock
	currencies []billing.Currency
}

func (b bankBlock) fits(cur billing.Currency) bool {
	for _, c := range b.currencies {
		if c == cur {
			return true
		}
	}
	return false
}

// bankBlocks are every bank detail the merchant gave.
func bankBlocks(md *billing.MerchantDetails) []bankBlock {
	var out []bankBlock
	add := func(heading string, rows []fact, curs ...billing.Currency) {
		if len(rows) > 0 {
			out = append(out, bankBlock{paymentBlock{heading, rows}, curs})
		}
	}
	add("Bank transfer (IBAN)", facts("IBAN", md.IBAN), billing.CurrencyEUR, billing.CurrencyGBP, billing.CurrencySEK,
		billing.CurrencyCHF, billing.CurrencyDKK, billing.CurrencyNOK, billing.CurrencyPLN, billing.CurrencyCZK, billing.CurrencyBGN)
	if u := md.UKAccountDetails; u != nil {
		add("UK bank transfer", facts("Sort code", u.SortCode, "Account number", u.AccountNumber), billing.CurrencyGBP)
	}
	if a := md.USAchDetails; a != nil {
		add("US ACH", facts("Account name", a.AccountName, "Bank", a.BankName, "Routing number", a.BankRoutingNumber,
			"Account number", a.AccountNumber), billing.CurrencyUSD)
	}
	if w := md.USWireDetails; w != nil {
		add("US wire", append(facts("Account name", w.AccountName, "Bank", w.BankName, "Routing number", w.BankRoutingNumber,
			"Account number", w.AccountNumber, "SWIFT", w.SwiftCode), addressFact("Bank address", w.BankAddress)...), billing.CurrencyUSD)
	}
	if c := md.CABankAccountDetails; c != nil {
		add("Canadian bank transfer", facts("Transit number", c.TransitNumber, "Institution number", c.InstitutionNumber,
			"Account number", c.AccountNumber), billing.CurrencyCAD)
	}
	if c := md.CanadianInternationalDestination; c != nil {
		rows := append(facts("Account name", c.LegalName, "Bank", c.BankName, "Transit number", c.TransitNumber,
			"Institution number", c.InstitutionNumber, "Account number", c.AccountNumber, "SWIFT", c.SwiftCode),
			addressFact("Bank address", c.BankAddress)...)
		if ib := c.IntermediaryBank; ib != nil {
			rows = append(rows, facts("Intermediary bank", ib.BankName, "Intermediary SWIFT", ib.SwiftCode,
				"Intermediary routing number", ib.RoutingNumber)...)
			rows = append(rows, addressFact("Intermediary address", ib.BankAddress)...)
		}
		add("Canadian international transfer", rows, billing.CurrencyCAD)
	}
	if a := md.AustralianDestination; a != nil {
		add("Australian bank transfer", facts("Account name", a.LegalName, "BSB", a.BSB, "Account number", a.AccountNumber,
			"SWIFT", a.SwiftCode), billing.CurrencyAUD)
	}
	if b := md.SwedishBankgiroDestination; b != nil {
		add("Bankgiro", facts("Bankgiro number", b.BankgiroNumber, "Account name", b.AccountName), billing.CurrencySEK)
	}
	return out
}

// addressFact is an address as one fact, or none.
func addressFact(label string, a *billing.Address) []fact {
	return facts(label, strings.Join(addressLines(a), ", "))
}

// facts pairs labels and values, leaving out empty values.
func facts(pairs ...string) []fact {
	var out []fact
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i+1] != "" {
			out = append(out, fact{Label: pairs[i], Value: pairs[i+1]})
		}
	}
	return out
}

// keyValues are custom fields as facts.
func keyValues(kvs []billing.KeyValue) []fact {
	var out []fact
	for _, kv := range kvs {
		out = append(out, fact{Label: kv.Key, Value: kv.Value})
	}
	return out
}

// nonEmpty returns the non-empty strings of ss.
func nonEmpty(ss ...string) []string {
	var out []string
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// numberOrDraft is the number, or "(draft)" while there is none.
func numberOrDraft(n string) string {
	if n == "" {
		return "(draft)"
	}
	return n
}

// colour parses "#1a2b3c" or "#abc"; anything else is the default.
func colour(hex string) [3]uint8 {
	if len(hex) == 4 {
		hex = "#" + strings.Repeat(hex[1:2], 2) + strings.Repeat(hex[2:3], 2) + strings.Repeat(hex[3:4], 2)
	}
	var c [3]uint8
	if len(hex) != 7 || hex[0] != '#' {
		return defaultColour
	}
	for i := range c {
		var v uint8
		for _, r := range hex[1+2*i : 3+2*i] {
			switch {
			case r >= '0' && r <= '9':
				v = v*16 + uint8(r-'0')
			case r >= 'a' && r <= 'f':
				v = v*16 + uint8(r-'a'+10)
			case r >= 'A' && r <= 'F':
				v = v*16 + uint8(r-'A'+10)
			default:
				return defaultColour
			}
		}
		c[i] = v
	}
	return c
}
