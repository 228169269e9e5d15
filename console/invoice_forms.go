package console

import (
	"context"
	"fmt"
	"slices"

	"github.com/billingd/billing"
)

// newInvoiceLines is how many line rows the new invoice form offers (rows
// left empty are skipped; more lines are added on the draft's page).
const newInvoiceLines = 3

// lineFields are the inputs of one line of a document being written, named
// prefix+"title" and so on (prefix is "" on the add-a-line form, where the
// Service's field names are the form's).
func lineFields(rq *request, prefix string, required bool) []field {
	return lineFieldsOf(rq, prefix, required, nil)
}

// lineFieldsOf are lineFields showing line's values (nil: empty, the tax
// rate 0.2) until the form is submitted.
func lineFieldsOf(rq *request, prefix string, required bool, line *billing.InvoiceLineItem) []field {
	def := map[string]string{}
	if line != nil {
		def = map[string]string{"title": line.Title, "quantity": line.Quantity.String(), "rate": line.Rate.String(), "taxRate": line.TaxRate.String()}
	} else if required {
		def["taxRate"] = "0.2"
	}
	v := func(name string) string { return rq.value(prefix+name, def[name]) }
	tax := v("taxRate")
	return []field{
		{Name: prefix + "title", Label: "Description", Value: v("title"), Required: required},
		{Name: prefix + "quantity", Label: "Quantity", Value: v("quantity"), Required: required},
		{Name: prefix + "rate", Label: "Unit price", Value: v("rate"), Required: required, Hint: "Exact, in the invoice's currency."},
		{Name: prefix + "taxRate", Label: "Tax rate", Value: tax, Required: required, Hint: "A fraction: 0.2 is 20%."},
	}
}

// lineParams reads the line of prefix; empty reports a row left blank.
func lineParams(rq *request, prefix string) (p billing.InvoiceLineItemParams, empty bool, err error) {
	p.Title, p.ExternalIDs = rq.formValue(prefix+"title"), []billing.KeyValue{}
	if p.Title == "" && rq.formValue(prefix+"quantity") == "" && rq.formValue(prefix+"rate") == "" {
		return p, true, nil
	}
	var qerr, rerr, terr error
	p.Quantity, qerr = decimalField(rq, prefix+"quantity", "The quantity", true)
	p.Rate, rerr = decimalField(rq, prefix+"rate", "The unit price", true)
	p.TaxRate, terr = decimalField(rq, prefix+"taxRate", "The tax rate", true)
	var title error
	if p.Title == "" {
		title = billing.FieldError(prefix+"title", "The description is required")
	}
	return p, false, joinErrors(title, qerr, rerr, terr)
}

// newInvoice shows (GET) and submits (POST) the form of a new invoice with
// its first lines: the invoice is created as a DRAFT, then its lines; when
// the Service refuses a line the draft is deleted again and the form shows
// the messages by their fields.
func (c *Console) newInvoice(rq *request) error {
	customerID := rq.value("customerId", rq.r.URL.Query().Get("customerId"))
	customers, err := rq.customerOptions(customerID)
	if err != nil {
		return err
	}
	cf := confirmation{Heading: "New invoice", Question: "The invoice is created as a draft: review it, then finalize it.",
		Action: Prefix + "invoices/new", Button: "Create draft invoice", Back: Prefix + "invoices", Wide: true,
		Fields: []field{
			{Name: "customerId", Label: "Customer", Type: "select", Options: customers, Required: true, Value: customerID},
			{Name: "currency", Label: "Currency", Type: "select", Options: currencyOptions(), Required: true, Value: rq.value("currency", "EUR")},
			{Name: "purchaseOrderNumber", Label: "Purchase order number", Value: rq.value("purchaseOrderNumber", "")},
			{Name: "memo", Label: "Memo", Type: "textarea", Value: rq.value("memo", ""), Hint: "Printed on the invoice."},
		}}
	for i := range newInvoiceLines {
		cf.Sets = append(cf.Sets, fieldset{Legend: fmt.Sprintf("Line %d", i+1), Fields: lineFields(rq, fmt.Sprintf("lines.%d.", i), i == 0)})
	}
	return rq.submit(cf, "created", func(ctx context.Context) (any, error) {
		var lines []billing.InvoiceLineItemParams
		var prefixes []string
		var errs []error
		for i := range newInvoiceLines {
			prefix := fmt.Sprintf("lines.%d.", i)
			p, empty, err := lineParams(rq, prefix)
			if !empty {
				lines, prefixes, errs = append(lines, p), append(prefixes, prefix), append(errs, err)
			}
		}
		if len(lines) == 0 {
			errs = append(errs, billing.FieldError("lines.0.title", "An invoice needs at least one line"))
		}
		if rq.formValue("customerId") == "" {
			errs = append(errs, errNoCustomer)
		}
		if err := joinErrors(errs...); err != nil {
			return nil, err
		}
		inv, err := c.svc.CreateInvoice(ctx, rq.account, billing.InvoiceParams{CustomerID: rq.formValue("customerId"),
			Currency: billing.Currency(rq.formValue("currency")), InvoiceUpdateParams: billing.InvoiceUpdateParams{
				PurchaseOrderNumber: rq.formValue("purchaseOrderNumber"), Memo: rq.formValue("memo")}})
		if err != nil {
			return nil, err
		}
		for i, p := range lines {
			if _, err := c.svc.CreateInvoiceLineItem(rq.ctx, rq.account, inv.ID, p); err != nil {
				if derr := c.svc.DeleteInvoice(rq.ctx, rq.account, inv.ID); derr != nil {
					return nil, derr
				}
				return nil, fieldErrors(prefixes[i], err)
			}
		}
		return inv, nil
	})
}

// addInvoiceLine shows (GET) and submits (POST) the form of a new line of
// a draft invoice.
func (c *Console) addInvoiceLine(rq *request) error {
	inv, err := c.svc.GetInvoice(rq.ctx, rq.account, rq.r.PathValue("id"))
	if err != nil {
		return err
	}
	page := Prefix + "invoices/" + inv.ID
	cf := confirmation{Heading: "Add a line · " + invoiceTitle(inv), Action: page + "/lines/new", Button: "Add line", Back: page,
		Fields: lineFields(rq, "", true)}
	_, groups, err := rq.groupOptions(inv.ID)
	if err != nil {
		return err
	}
	if len(groups) > 0 {
		cf.Fields = append(cf.Fields, field{Name: "groupId", Label: "Group", Type: "select", Options: groups, Value: rq.value("groupId", "")})
	}
	return rq.submit(cf, "line-added", func(ctx context.Context) (any, error) {
		p, _, err := lineParams(rq, "")
		if err != nil {
			return nil, err
		}
		p.GroupID = rq.formValue("groupId")
		if _, err := c.svc.CreateInvoiceLineItem(ctx, rq.account, inv.ID, p); err != nil {
			return nil, err
		}
		return inv, nil
	})
}

// invoiceLine returns the invoice of the path and its line of the path.
func (rq *request) invoiceLine() (*billing.Invoice, *billing.InvoiceLineItem, error) {
	inv, err := rq.c.svc.GetInvoice(rq.ctx, rq.account, rq.r.PathValue("id"))
	if err != nil {
		return nil, nil, err
	}
	p := billing.ListParams{Limit: 100}
	for {
		lines, err := rq.c.svc.ListInvoiceLineItems(rq.ctx, rq.account, inv.ID, billing.LineItemFilter{}, p)
		if err != nil {
			return nil, nil, err
		}
		for i := range lines.Items {
			if lines.Items[i].ID == rq.r.PathValue("line") {
				return inv, &lines.Items[i], nil
			}
		}
		if lines.After == "" {
			return nil, nil, notFound
		}
		p.After = lines.After
	}
}

// editInvoiceLine shows (GET) and submits (POST) the form of a line of a
// draft invoice; the line's other fields (period, price, group) are kept.
func (c *Console) editInvoiceLine(rq *request) error {
	inv, line, err := rq.invoiceLine()
	if err != nil {
		return err
	}
	page := Prefix + "invoices/" + inv.ID
	cf := confirmation{Heading: "Edit a line · " + invoiceTitle(inv), Action: page + "/lines/" + line.ID + "/edit", Button: "Save line", Back: page,
		Fields: lineFieldsOf(rq, "", true, line)}
	return rq.submit(cf, "line-saved", func(ctx context.Context) (any, error) {
		p, _, err := lineParams(rq, "")
		if err != nil {
			return nil, err
		}
		p.Description, p.ServicePeriodStart, p.ServicePeriodEnd, p.ServicePeriod = line.Description, line.ServicePeriodStart, line.ServicePeriodEnd, line.ServicePeriod
		p.GroupID, p.PriceID, p.ProductID, p.RateDisplay, p.ExternalIDs = line.GroupID, line.PriceID, line.ProductID, line.RateDisplay, line.ExternalIDs
		p.RevenueClassification, p.RevenueRecognitionMethod, p.UnitCode, p.TaxCategory = line.RevenueClassification, line.RevenueRecognitionMethod, line.UnitCode, line.TaxCategory
		if _, err := c.svc.UpdateInvoiceLineItem(ctx, rq.account, inv.ID, line.ID, p); err != nil {
			return nil, err
		}
		return inv, nil
	})
}

// removeInvoiceLine confirms (GET) and deletes (POST) a line of a draft
// invoice.
func (c *Console) removeInvoiceLine(rq *request) error {
	inv, line, err := rq.invoiceLine()
	if err != nil {
		return err
	}
	page := Prefix + "invoices/" + inv.ID
	cf := confirmation{Heading: "Remove a line · " + invoiceTitle(inv), Question: "The line “" + line.Title + "” (" +
		money(line.GrossTotal, inv.Currency) + ") is removed from the invoice.",
		Action: page + "/lines/" + line.ID + "/remove", Button: "Remove line", Danger: true, Back: page}
	return rq.submit(cf, "line-removed", func(ctx context.Context) (any, error) {
		return inv, c.svc.DeleteInvoiceLineItem(ctx, rq.account, inv.ID, line.ID)
	})
}

// groupOptions are the groups of a draft invoice to put a line in.
func (rq *request) groupOptions(invoiceID string) ([]billing.InvoiceLineItemGroup, []option, error) {
	groups, err := rq.c.svc.ListInvoiceLineItemGroups(rq.ctx, rq.account, invoiceID, billing.LineItemFilter{}, billing.ListParams{Limit: 100})
	if err != nil {
		return nil, nil, err
	}
	var out []option
	for _, g := range groups.Items {
		out = append(out, option{g.ID, g.Title})
	}
	return groups.Items, out, nil
}

// addInvoiceGroup shows (GET) and submits (POST) the form of a new group
// of lines of a draft invoice (printed as a heading with its subtotal).
func (c *Console) addInvoiceGroup(rq *request) error {
	inv, err := c.svc.GetInvoice(rq.ctx, rq.account, rq.r.PathValue("id"))
	if err != nil {
		return err
	}
	page := Prefix + "invoices/" + inv.ID
	cf := confirmation{Heading: "Add a group · " + invoiceTitle(inv), Question: "A group gathers lines under a heading with their subtotal; choose it on a line's form.",
		Action: page + "/groups/new", Button: "Add group", Back: page, Fields: []field{
			{Name: "title", Label: "Title", Value: rq.value("title", ""), Required: true},
			{Name: "description", Label: "Description", Value: rq.value("description", "")},
		}}
	return rq.submit(cf, "group-added", func(ctx context.Context) (any, error) {
		_, err := c.svc.CreateInvoiceLineItemGroup(ctx, rq.account, inv.ID, billing.InvoiceLineItemGroupParams{
			Title: rq.formValue("title"), Description: rq.formValue("description")})
		return inv, err
	})
}

// removeInvoiceGroup confirms (GET) and deletes (POST) a group of a draft
// invoice.
func (c *Console) removeInvoiceGroup(rq *request) error {
	inv, err := c.svc.GetInvoice(rq.ctx, rq.account, rq.r.PathValue("id"))
	if err != nil {
		return err
	}
	groups, _, err := rq.groupOptions(inv.ID)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(groups, func(g billing.InvoiceLineItemGroup) bool { return g.ID == rq.r.PathValue("group") })
	if i < 0 {
		return notFound
	}
	page := Prefix + "invoices/" + inv.ID
	cf := confirmation{Heading: "Remove a group · " + invoiceTitle(inv), Question: "The group “" + groups[i].Title + "” is removed from the invoice.",
		Action: page + "/groups/" + groups[i].ID + "/remove", Button: "Remove group", Danger: true, Back: page}
	return rq.submit(cf, "group-removed", func(ctx context.Context) (any, error) {
		return inv, c.svc.DeleteInvoiceLineItemGroup(ctx, rq.account, inv.ID, groups[i].ID)
	})
}
