package console

import (
	"context"
	"strings"

	"github.com/billingd/billing"
)

// taxStatusOptions are the choices of a customer's tax status.
var taxStatusOptions = []option{
	{string(billing.TaxStatusTaxed), "Taxed"}, {string(billing.TaxStatusTaxExempt), "Tax exempt"},
	{string(billing.TaxStatusReverseCharged), "Reverse charged"},
}

// customerFields are the inputs of the customer form: what was submitted,
// or cu's values (nil: a new customer's defaults).
func customerFields(rq *request, cu *billing.Customer) []field {
	var cur billing.Customer
	if cu != nil {
		cur = *cu
	}
	addr := cur.Address
	if addr == nil {
		addr = &billing.Address{}
	}
	var contact billing.Contact
	if len(cur.Contacts) > 0 {
		contact = cur.Contacts[0]
	}
	taxStatus := string(cur.TaxStatus)
	if taxStatus == "" {
		taxStatus = string(billing.TaxStatusTaxed)
	}
	v := rq.value
	return []field{
		{Name: "legalName", Label: "Legal name", Value: v("legalName", cur.LegalName), Required: true},
		{Name: "customerAliases", Label: "Aliases", Value: v("customerAliases", strings.Join(cur.CustomerAliases, ", ")),
			Hint: "Your own ids of the customer, separated by commas (usage events may name the customer by them)."},
		{Name: "contacts[0].name", Label: "Billing contact's name", Value: v("contacts[0].name", contact.Name)},
		{Name: "contacts[0].email", Label: "Billing contact's e-mail", Type: "email", Value: v("contacts[0].email", contact.Email),
			Hint: "Invoices and credit notes are sent here."},
		{Name: "address.line1", Label: "Address line 1", Value: v("address.line1", addr.Line1)},
		{Name: "address.line2", Label: "Address line 2", Value: v("address.line2", addr.Line2)},
		{Name: "address.town", Label: "Town", Value: v("address.town", addr.Town)},
		{Name: "address.postcode", Label: "Postcode", Value: v("address.postcode", addr.Postcode)},
		{Name: "address.state", Label: "State or region", Value: v("address.state", addr.State)},
		{Name: "address.country", Label: "Country", Value: v("address.country", addr.Country), Hint: "Two letters: GB, DE, US."},
		{Name: "timeZone", Label: "Time zone", Value: v("timeZone", cur.TimeZone),
			Hint: "An IANA time zone such as Europe/London; empty: the account's."},
		{Name: "taxStatus", Label: "Tax status", Type: "select", Value: v("taxStatus", taxStatus), Options: taxStatusOptions, Required: true},
		{Name: "taxId", Label: "Tax id", Value: v("taxId", cur.TaxID)},
		{Name: "label", Label: "Label", Value: v("label", cur.Label), Hint: "A note for your team; not printed."},
	}
}

// customerParams reads the customer form into the Service's parameters,
// keeping base's fields that the form does not show (nil: none).
func customerParams(rq *request, base *billing.Customer) billing.CustomerParams {
	var p billing.CustomerParams
	if base != nil {
		p = billing.CustomerParams{LegalName: base.LegalName, CustomerAliases: base.CustomerAliases, Address: base.Address,
			Contacts: base.Contacts, TaxStatus: base.TaxStatus, TaxID: base.TaxID, URL: base.URL, Label: base.Label,
			TimeZone: base.TimeZone, CustomerEInvoicing: base.CustomerEInvoicing}
	}
	f := rq.formValue
	p.LegalName, p.TimeZone, p.TaxStatus, p.TaxID, p.Label = f("legalName"), f("timeZone"), billing.TaxStatus(f("taxStatus")), f("taxId"), f("label")
	p.CustomerAliases = []string{}
	for a := range strings.SplitSeq(f("customerAliases"), ",") {
		if a = strings.TrimSpace(a); a != "" {
			p.CustomerAliases = append(p.CustomerAliases, a)
		}
	}
	addr := billing.Address{Line1: f("address.line1"), Line2: f("address.line2"), Town: f("address.town"),
		Postcode: f("address.postcode"), State: f("address.state"), Country: strings.ToUpper(f("address.country"))}
	p.Address = nil
	if addr != (billing.Address{}) {
		p.Address = &addr
	}
	var rest []billing.Contact
	if len(p.Contacts) > 1 {
		rest = p.Contacts[1:]
	}
	p.Contacts = []billing.Contact{}
	if name, email := f("contacts[0].name"), f("contacts[0].email"); name != "" || email != "" {
		p.Contacts = append(p.Contacts, billing.Contact{Name: name, Email: email, BillingPreference: billing.BillingPreferencePrimary})
	}
	p.Contacts = append(p.Contacts, rest...)
	return p
}

// newCustomer shows (GET) and submits (POST) the form of a new customer.
func (c *Console) newCustomer(rq *request) error {
	cf := confirmation{Heading: "New customer", Action: Prefix + "customers/new", Button: "Create customer",
		Back: Prefix + "customers", Fields: customerFields(rq, nil)}
	return rq.submit(cf, "customer-created", func(ctx context.Context) (any, error) {
		return c.svc.CreateCustomer(ctx, rq.account, customerParams(rq, nil))
	})
}

// editCustomer shows (GET) and submits (POST) the form of a customer's
// details; the fields the form does not show are kept.
func (c *Console) editCustomer(rq *request) error {
	cu, err := c.svc.GetCustomer(rq.ctx, rq.account, rq.r.PathValue("id"))
	if err != nil {
		return err
	}
	page := Prefix + "customers/" + cu.ID
	cf := confirmation{Heading: "Edit " + cu.LegalName, Action: page + "/edit", Button: "Save", Back: page, Fields: customerFields(rq, cu)}
	return rq.submit(cf, "customer-saved", func(ctx context.Context) (any, error) {
		return c.svc.UpdateCustomer(ctx, rq.account, cu.ID, customerParams(rq, cu))
	})
}

// archiveCustomer confirms (GET) and archives (POST) a customer, naming
// the billing schedules that archiving cancels.
func (c *Console) archiveCustomer(rq *request) error {
	cu, err := c.svc.GetCustomer(rq.ctx, rq.account, rq.r.PathValue("id"))
	if err != nil {
		return err
	}
	schedules, err := c.svc.ListBillingSchedules(rq.ctx, rq.account, billing.BillingScheduleFilter{CustomerID: cu.ID}, billing.ListParams{Limit: 100})
	if err != nil {
		return err
	}
	var live []string
	for _, s := range schedules.Items {
		switch s.Status {
		case billing.ScheduleStatusActive, billing.ScheduleStatusSuspended, billing.ScheduleStatusPending, billing.ScheduleStatusDraft:
			live = append(live, scheduleName(&s)+" ("+string(s.Status)+")")
		}
	}
	q := "An archived customer gets no new invoices; its documents stay. This cannot be undone."
	if len(live) > 0 {
		q += " Its billing schedules are cancelled on the last day they invoiced and archived: " + strings.Join(live, ", ") + "."
	}
	page := Prefix + "customers/" + cu.ID
	cf := confirmation{Heading: "Archive " + cu.LegalName, Question: q, Action: page + "/archive", Button: "Archive customer", Danger: true, Back: page}
	return rq.submit(cf, "customer-archived", func(ctx context.Context) (any, error) {
		return c.svc.ArchiveCustomerWith(ctx, rq.account, cu.ID, billing.ArchiveCustomerParams{CancelSchedules: true})
	})
}

// scheduleName names a schedule for people: its label, or its first
// phase's name, or its start.
func scheduleName(s *billing.BillingSchedule) string {
	switch {
	case s.Label != "":
		return s.Label
	case len(s.Phases) > 0 && s.Phases[0].Name != "":
		return s.Phases[0].Name
	}
	return "from " + day(s.StartDate)
}
