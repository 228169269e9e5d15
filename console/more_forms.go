package console

import (
	"context"
	"fmt"

	"github.com/billingd/billing"
)

// newCreditNote shows (GET) and submits (POST) the form of a credit note
// against the invoice of ?invoiceId=: one row per line of the invoice,
// prefilled with its quantity and unit price (set a quantity to 0 to leave
// the line out). The credit note is created as a DRAFT with the rows
// kept; when the Service refuses a row, the draft is voided and the form
// shows the messages by their fields.
func (c *Console) newCreditNote(rq *request) error {
	invoiceID := rq.r.URL.Query().Get("invoiceId")
	if invoiceID == "" {
		return billing.FieldError("invoiceId", "Open the invoice to credit and choose “Credit note…” there.")
	}
	inv, err := c.svc.GetInvoice(rq.ctx, rq.account, invoiceID)
	if err != nil {
		return err
	}
	lines, err := c.svc.ListInvoiceLineItems(rq.ctx, rq.account, inv.ID, billing.LineItemFilter{}, billing.ListParams{Limit: 100})
	if err != nil {
		return err
	}
	page := Prefix + "invoices/" + inv.ID
	cf := confirmation{Heading: "Credit note · " + invoiceTitle(inv) + " · " + inv.CustomerLegalCompanyName,
		Question: "Credit the lines of the invoice: set a quantity to 0 to leave a line out. The credit note is created as a draft.",
		Action:   Prefix + "credit-notes/new?invoiceId=" + inv.ID, Button: "Create draft credit note", Back: page, Wide: true,
		Fields: []field{{Name: "memo", Label: "Reason", Type: "textarea", Value: rq.value("memo", ""), Hint: "Printed on the credit note."}}}
	for i, l := range lines.Items {
		prefix := fmt.Sprintf("lines.%d.", i)
		cf.Sets = append(cf.Sets, fieldset{Legend: l.Title + " · " + money(l.GrossTotal, inv.Currency), Fields: []field{
			{Name: prefix + "quantity", Label: "Quantity to credit", Value: rq.value(prefix+"quantity", l.Quantity.String()), Required: true,
				Hint: "Invoiced: " + l.Quantity.String() + "."},
			{Name: prefix + "rate", Label: "Unit price", Value: rq.value(prefix+"rate", l.Rate.String()), Required: true},
		}})
	}
	return rq.submit(cf, "cn-created", func(ctx context.Context) (any, error) {
		rows, prefixes, err := creditNoteRows(rq, lines.Items)
		if err != nil {
			return nil, err
		}
		cn, err := c.svc.CreateCreditNote(ctx, rq.account, billing.CreditNoteParams{Currency: inv.Currency, CustomerID: inv.CustomerID,
			InvoiceID: inv.ID, Memo: rq.formValue("memo"), Metadata: []billing.KeyValue{}})
		if err != nil {
			return nil, err
		}
		for i, row := range rows {
			row.CreditNoteID = cn.ID
			if _, err := c.svc.CreateCreditNoteLineItem(rq.ctx, rq.account, cn.ID, row); err != nil {
				if _, verr := c.svc.VoidCreditNote(rq.ctx, rq.account, cn.ID); verr != nil {
					return nil, verr
				}
				return nil, fieldErrors(prefixes[i], err)
			}
		}
		return cn, nil
	})
}

// creditNoteRows reads the credit note form's rows of the invoice's lines:
// the lines to credit (a quantity other than 0) and their rows' prefixes.
func creditNoteRows(rq *request, lines []billing.InvoiceLineItem) ([]billing.CreateCreditNoteLineItemParams, []string, error) {
	var rows []billing.CreateCreditNoteLineItemParams
	var prefixes []string
	var errs []error
	for i, l := range lines {
		prefix := fmt.Sprintf("lines.%d.", i)
		q, qerr := decimalField(rq, prefix+"quantity", "The quantity", true)
		r, rerr := decimalField(rq, prefix+"rate", "The unit price", true)
		if err := joinErrors(qerr, rerr); err != nil {
			errs = append(errs, err)
			continue
		}
		if q.Sign() == 0 {
			continue
		}
		rows = append(rows, billing.CreateCreditNoteLineItemParams{LineItemID: l.ID, CreditNoteLineItemParams: billing.CreditNoteLineItemParams{
			Title: l.Title, Description: l.Description, Quantity: q, Rate: r, TaxRate: &l.TaxRate, ExternalIDs: []billing.KeyValue{},
			RateDisplay: l.RateDisplay, ProductID: l.ProductID, UnitCode: l.UnitCode, TaxCategory: l.TaxCategory}})
		prefixes = append(prefixes, prefix)
	}
	if err := joinErrors(errs...); err != nil {
		return nil, nil, err
	}
	if len(rows) == 0 {
		return nil, nil, billing.FieldError("lines.0.quantity", "Credit at least one line: a quantity above 0")
	}
	return rows, prefixes, nil
}

// newCredit shows (GET) and submits (POST) the form of a cash credit grant
// to the customer of ?customerId=.
func (c *Console) newCredit(rq *request) error {
	customerID := rq.value("customerId", rq.r.URL.Query().Get("customerId"))
	customers, err := rq.customerOptions(customerID)
	if err != nil {
		return err
	}
	back := Prefix + "customers"
	if customerID != "" {
		back += "/" + customerID
	}
	cf := confirmation{Heading: "Grant credit", Question: "Cash credit in a currency, drawn down by the customer's invoices (or applied to one from its page).",
		Action: Prefix + "credits/new", Button: "Grant credit", Back: back, Fields: []field{
			{Name: "customerId", Label: "Customer", Type: "select", Options: customers, Value: customerID, Required: true},
			{Name: "name", Label: "Name", Value: rq.value("name", ""), Hint: "For example: Goodwill credit, November."},
			{Name: "currency", Label: "Currency", Type: "select", Options: currencyOptions(), Value: rq.value("currency", "EUR"), Required: true},
			{Name: "amount", Label: "Amount", Value: rq.value("amount", ""), Required: true},
			{Name: "costOfCredit", Label: "Paid by the customer", Value: rq.value("costOfCredit", ""),
				Hint: "What the customer pays for the credit; empty: free credit."},
			{Name: "effectiveDate", Label: "Usable from", Type: "date", Value: rq.value("effectiveDate", ""), Hint: "Empty: today."},
			{Name: "expiryDate", Label: "Expires after", Type: "date", Value: rq.value("expiryDate", ""), Hint: "Empty: never."},
		}}
	return rq.submit(cf, "granted", func(ctx context.Context) (any, error) {
		amount, aerr := decimalField(rq, "amount", "The amount", true)
		cost, cerr := decimalField(rq, "costOfCredit", "What the customer pays", false)
		from, ferr := dateField(rq, "effectiveDate", "The first day", false)
		until, uerr := dateField(rq, "expiryDate", "The expiry date", false)
		var cust error
		if rq.formValue("customerId") == "" {
			cust = errNoCustomer
		}
		if err := joinErrors(cust, aerr, cerr, ferr, uerr); err != nil {
			return nil, err
		}
		return c.svc.CreateCreditGrant(ctx, rq.account, billing.CreditGrantParams{CustomerID: rq.formValue("customerId"),
			Name: rq.formValue("name"), CreditUnitType: billing.CreditUnitCurrency, Currency: billing.Currency(rq.formValue("currency")),
			Amount: amount, CostOfCredit: cost, EffectiveDate: from, ExpiryDate: until})
	})
}

// newSchedulePrices is how many prices the new schedule form offers.
const newSchedulePrices = 4

// newSchedule shows (GET) and submits (POST) the form of a billing
// schedule of one phase over prices of the catalogue, created as a draft
// or active at once.
func (c *Console) newSchedule(rq *request) error {
	customerID := rq.value("customerId", rq.r.URL.Query().Get("customerId"))
	customers, err := rq.customerOptions(customerID)
	if err != nil {
		return err
	}
	priceOptions, err := rq.priceOptions()
	if err != nil {
		return err
	}
	today, err := rq.today()
	if err != nil {
		return err
	}
	cf := confirmation{Heading: "New billing schedule", Question: "The customer is billed the chosen prices from the start date.",
		Action: Prefix + "schedules/new", Button: "Create schedule", Back: Prefix + "schedules", Fields: []field{
			{Name: "customerId", Label: "Customer", Type: "select", Options: customers, Value: customerID, Required: true},
			{Name: "label", Label: "Label", Value: rq.value("label", ""), Hint: "For example: Pro plan, yearly."},
			{Name: "startDate", Label: "Start date", Type: "date", Value: rq.value("startDate", today.String()), Required: true},
			{Name: "endDate", Label: "End date", Type: "date", Value: rq.value("endDate", ""), Hint: "The last day billed; empty: no end."},
		}}
	for i := range newSchedulePrices {
		name := fmt.Sprintf("phases[0].priceIds[%d]", i)
		cf.Fields = append(cf.Fields, field{Name: name, Label: fmt.Sprintf("Price %d", i+1), Type: "select", Options: priceOptions,
			Value: rq.value(name, ""), Required: i == 0})
	}
	cf.Fields = append(cf.Fields,
		field{Name: "autoIssueInvoices", Label: "Invoices", Type: "select", Value: rq.value("autoIssueInvoices", "false"), Required: true,
			Options: []option{{"false", "Created as drafts to review"}, {"true", "Finalized and sent automatically"}}},
		field{Name: "isDraft", Label: "Status", Type: "select", Value: rq.value("isDraft", "false"), Required: true,
			Options: []option{{"false", "Active: billed from the start date"}, {"true", "Draft: activate it later"}}})
	return rq.submit(cf, "schedule-created", func(ctx context.Context) (any, error) {
		start, serr := dateField(rq, "startDate", "The start date", true)
		end, eerr := dateField(rq, "endDate", "The end date", false)
		var ids []string
		for i := range newSchedulePrices {
			if id := rq.formValue(fmt.Sprintf("phases[0].priceIds[%d]", i)); id != "" {
				ids = append(ids, id)
			}
		}
		var none, cust error
		if len(ids) == 0 {
			none = billing.FieldError("phases[0].priceIds[0]", "Choose at least one price")
		}
		if rq.formValue("customerId") == "" {
			cust = errNoCustomer
		}
		if err := joinErrors(cust, serr, eerr, none); err != nil {
			return nil, err
		}
		auto, draft := rq.formValue("autoIssueInvoices") == "true", rq.formValue("isDraft") == "true"
		return c.svc.CreateBillingSchedule(ctx, rq.account, billing.BillingScheduleParams{CustomerID: rq.formValue("customerId"),
			StartDate: start, EndDate: end, AutoIssueInvoices: &auto, IsDraft: &draft, Label: rq.formValue("label"),
			Phases: []billing.PhaseParams{{PriceIDs: ids, StartDate: start, EndDate: end}}})
	})
}

// priceOptions are the choices of a price in the schedule forms: the
// catalogue's first 100 prices, each by name, currency and frequency.
func (rq *request) priceOptions() ([]option, error) {
	prices, err := rq.c.svc.ListPrices(rq.ctx, rq.account, billing.PriceFilter{}, billing.ListParams{Limit: 100})
	if err != nil {
		return nil, err
	}
	var out []option
	for _, p := range prices.Items {
		out = append(out, option{p.ID, p.Name + " · " + string(p.Currency) + " · " + string(p.BillingFrequency)})
	}
	return out, nil
}
