package billing

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// TaxStatus says how a customer is taxed.
type TaxStatus string

// The tax statuses.
const (
	TaxStatusTaxed          TaxStatus = "TAXED"
	TaxStatusTaxExempt      TaxStatus = "TAX_EXEMPT"
	TaxStatusReverseCharged TaxStatus = "REVERSE_CHARGED"
)

// BillingPreference says whether a contact receives invoices and credit
// notes: PRIMARY and STANDARD contacts do, NONE contacts do not.
type BillingPreference string

// The billing preferences.
const (
	BillingPreferencePrimary  BillingPreference = "PRIMARY"
	BillingPreferenceStandard BillingPreference = "STANDARD"
	BillingPreferenceNone     BillingPreference = "NONE"
)

// maxCustomerAliases bounds the aliases of one customer.
const maxCustomerAliases = 100

// Address is a postal address. Line1, Town, Postcode and Country are
// required; Country is a 2-letter ISO 3166-1 code.
type Address struct {
	// Line1 is the first address line (required in an address).
	Line1 string `json:"line1"`
	// Line2 is optional.
	Line2 string `json:"line2,omitempty"`
	// Town is required in an address.
	Town string `json:"town"`
	// State is optional.
	State string `json:"state,omitempty"`
	// Postcode is required in an address.
	Postcode string `json:"postcode"`
	// Country is required in an address.
	Country string `json:"country"`
}

// Contact is a person at a customer.
type Contact struct {
	Name string `json:"name"`
	// Email is where the documents go when BillingPreference makes the contact a
	// billing contact.
	Email string `json:"email"`
	// BillingPreference is required: whether and how the contact receives invoices
	// and credit notes.
	BillingPreference BillingPreference `json:"billingPreference"`
}

// Customer is a customer of an account. Its id and its aliases identify it
// wherever an alias is accepted (usage events, seat events, filters).
type Customer struct {
	ID string `json:"id"`
	// ServiceAccountID is the account that owns the customer.
	ServiceAccountID string    `json:"serviceAccountId"`
	CreatedAt        time.Time `json:"createdAt"`
	UpdatedAt        time.Time `json:"updatedAt"`
	// LegalName is printed on the customer's documents unless a document overrides
	// it.
	LegalName string `json:"legalName"`
	// CustomerAliases are the names usage and seat events use for the customer;
	// unique per account, at most 100, no commas; always present.
	CustomerAliases []string `json:"customerAliases"`
	// Address is copied onto documents as both billing and shipping address; nil
	// when unknown.
	Address *Address `json:"address,omitempty"`
	// Contacts; the billing contacts' e-mails become the documents'
	// customerEmails.
	Contacts []Contact `json:"contacts"`
	// TaxStatus decides whether the schedule's tax rates apply (TAX_EXEMPT and
	// REVERSE_CHARGED customers are taxed at 0).
	TaxStatus TaxStatus `json:"taxStatus"`
	// TaxID is printed on the customer's documents.
	TaxID string `json:"taxId,omitempty"`
	// URL is the customer's web site; free text for people.
	URL string `json:"url,omitempty"`
	// Label is free text for people.
	Label string `json:"label,omitempty"`
	// TimeZone is the IANA time zone whose calendar dates the customer's
	// dates are (periods, service periods, due dates); absent: the account's
	// (AccountSettings.TimeZone). A change applies to days that have not
	// begun.
	TimeZone string `json:"timeZone,omitempty"`
	// ArchivedAt is when the customer was archived (no new invoices; credit notes
	// still allowed); nil while active.
	ArchivedAt *time.Time `json:"archivedAt,omitempty"`
	CustomerEInvoicing
}

// CustomerEInvoicing are a customer's details for electronic invoices
// (docs/e-invoicing.md): they are frozen into each document when it is
// finalized, except EmailAttachments, which is read when an e-mail is sent.
type CustomerEInvoicing struct {
	// LegalRegistrationID is the customer's company registration number
	// (EN 16931 BT-47); empty when not given.
	LegalRegistrationID string `json:"legalRegistrationId,omitempty"`
	// BuyerReference is copied onto the customer's new invoices and credit
	// notes unless they give their own (BT-10): for a German public buyer
	// its Leitweg-ID. Empty when not given.
	BuyerReference string `json:"buyerReference,omitempty"`
	// ElectronicAddress is where the customer receives e-invoices (BT-49);
	// nil when not given (its first billing e-mail is then used).
	ElectronicAddress *ElectronicAddress `json:"electronicAddress,omitempty"`
	// TaxExemptionReason replaces the default text explaining why the
	// customer's documents carry no tax (BT-120: "Reverse charge" for a
	// REVERSE_CHARGED customer, "Exempt from VAT" for a TAX_EXEMPT one).
	TaxExemptionReason string `json:"taxExemptionReason,omitempty"`
	// TaxExemptionReasonCode is the VATEX code of that reason (BT-121), such
	// as "VATEX-EU-132-1I"; empty for the default (VATEX-EU-AE for reverse
	// charge, none for an exemption).
	TaxExemptionReasonCode string `json:"taxExemptionReasonCode,omitempty"`
	// EmailAttachments are what the e-mails of the customer's documents
	// carry (PDF, FACTURX, UBL, CII); empty: the account's choice.
	EmailAttachments []AttachmentFormat `json:"emailAttachments,omitempty"`
}

// BillingEmails returns the e-mails of the customer's contacts whose billing
// preference is PRIMARY or STANDARD, PRIMARY ones first, in contact order.
func (c *Customer) BillingEmails() []string {
	emails := []string{}
	for _, pref := range []BillingPreference{BillingPreferencePrimary, BillingPreferenceStandard} {
		for _, ct := range c.Contacts {
			if ct.BillingPreference == pref && !slices.Contains(emails, ct.Email) {
				emails = append(emails, ct.Email)
			}
		}
	}
	return emails
}

// CustomerParams are the editable fields of a customer, for create and for
// update (a full replace: fields left empty are cleared). TaxStatus defaults
// to TAXED.
type CustomerParams struct {
	// LegalName is required.
	LegalName string `json:"legalName"`
	// CustomerAliases: see Customer.CustomerAliases.
	CustomerAliases []string `json:"customerAliases"`
	// Address is optional; when given, line1, town, postcode and country are
	// required.
	Address *Address `json:"address"`
	// Contacts: see Customer.Contacts; may be empty.
	Contacts []Contact `json:"contacts"`
	// TaxStatus defaults to TAXED.
	TaxStatus TaxStatus `json:"taxStatus"`
	// TaxID is printed on the customer's documents; optional.
	TaxID string `json:"taxId"`
	// URL is the customer's web site, free text; optional.
	URL string `json:"url"`
	// Label is free text for people; optional.
	Label string `json:"label"`
	// TimeZone: see Customer.TimeZone; empty means the account's.
	TimeZone string `json:"timeZone"`
	// CustomerEInvoicing: see Customer; all optional.
	CustomerEInvoicing
}

// CustomerFilter selects customers in ListCustomers.
type CustomerFilter struct {
	// SortOrder orders by creation: DESC (newest first, the default) or ASC.
	SortOrder SortOrder
}

func (s *Service) validateCustomer(p *CustomerParams) error {
	var v validator
	s.checkName(&v, "legalName", &p.LegalName, true)
	s.checkString(&v, "taxId", p.TaxID, false)
	s.checkString(&v, "url", p.URL, false)
	s.checkString(&v, "label", p.Label, false)
	checkTimeZone(&v, "timeZone", p.TimeZone)
	switch p.TaxStatus {
	case "", TaxStatusTaxed, TaxStatusTaxExempt, TaxStatusReverseCharged:
	default:
		v.add("taxStatus", "taxStatus must be TAXED, TAX_EXEMPT or REVERSE_CHARGED")
	}
	checkAliases(&v, "customerAliases", p.CustomerAliases)
	s.checkCustomerEInvoicing(&v, &p.CustomerEInvoicing)
	if p.Address != nil {
		s.checkAddress(&v, "address", p.Address)
	}
	if len(p.Contacts) > s.limits.MaxEntries {
		v.add("contacts", "a customer has at most %d contacts", s.limits.MaxEntries)
	}
	for i, c := range p.Contacts {
		field := fmt.Sprintf("contacts[%d]", i)
		s.checkString(&v, field+".name", c.Name, false)
		checkEmail(&v, field+".email", c.Email)
		switch c.BillingPreference {
		case BillingPreferencePrimary, BillingPreferenceStandard, BillingPreferenceNone:
		default:
			v.add(field+".billingPreference", "billingPreference must be PRIMARY, STANDARD or NONE")
		}
	}
	return v.err()
}

// checkAliases validates a list of aliases: keys without commas, no
// duplicates, at most maxCustomerAliases.
func checkAliases(v *validator, field string, aliases []string) {
	if len(aliases) > maxCustomerAliases {
		v.add(field, "a customer has at most %d aliases", maxCustomerAliases)
	}
	seen := map[string]bool{}
	for i, a := range aliases {
		f := fmt.Sprintf("%s[%d]", field, i)
		checkKey(v, f, a, true)
		switch {
		case strings.Contains(a, ","):
			v.add(f, "an alias must not contain commas")
		case seen[a]:
			v.add(f, "alias %q is given twice", a)
		}
		seen[a] = true
	}
}

// checkAddress validates an address: line1, town, postcode and a 2-letter
// upper-case country code are required.
func (s *Service) checkAddress(v *validator, field string, a *Address) {
	s.checkString(v, field+".line1", a.Line1, true)
	s.checkString(v, field+".line2", a.Line2, false)
	s.checkString(v, field+".town", a.Town, true)
	s.checkString(v, field+".state", a.State, false)
	s.checkString(v, field+".postcode", a.Postcode, true)
	if len(a.Country) != 2 || a.Country[0] < 'A' || a.Country[0] > 'Z' || a.Country[1] < 'A' || a.Country[1] > 'Z' {
		v.add(field+".country", "country must be a 2-letter upper-case ISO 3166-1 code such as \"GB\"")
	}
}

// checkEmail validates a required e-mail address: one @ with text on both
// sides, no spaces or control characters, at most 254 characters.
func checkEmail(v *validator, field, email string) {
	local, domain, ok := strings.Cut(email, "@")
	switch {
	case email == "":
		v.add(field, "%s is required", field)
	case !ok || local == "" || domain == "" || strings.Contains(domain, "@") || len(email) > 254 ||
		strings.ContainsFunc(email, func(r rune) bool { return r <= ' ' || r == 0x7f }):
		v.add(field, "%s must be an e-mail address", field)
	}
}

// CreateCustomer creates a customer. Returns validation_failed for invalid
// fields (all at once) and conflict when an alias is already an alias or the
// id of a customer of the account.
func (s *Service) CreateCustomer(ctx context.Context, account string, p CustomerParams) (*Customer, error) {
	if err := s.validateCustomer(&p); err != nil {
		return nil, err
	}
	now := s.clock()
	c := &Customer{ID: s.newID(), ServiceAccountID: account, CreatedAt: now, UpdatedAt: now}
	applyCustomer(c, &p)
	return mutate(ctx, s, account, func(tx Tx) (*Customer, error) {
		if err := s.claimAliases(ctx, tx, c, nil); err != nil {
			return nil, err
		}
		if err := tx.Put(ctx, tableCustomerNames, key(account, c.LegalName, c.ID), []byte(c.ID)); err != nil {
			return nil, err
		}
		if err := putRecord(ctx, tx, tableCustomers, key(account, c.ID), c); err != nil {
			return nil, err
		}
		if err := keptCustomers.put(ctx, tx, account, c.ID, []string{}); err != nil {
			return nil, err
		}
		if c.TimeZone != "" { // the customer's zone from the start: it has no period yet
			if err := putRecord(ctx, tx, tableTimeZones, key(account, c.ID), []zoneChange{{Zone: c.TimeZone}}); err != nil {
				return nil, err
			}
		}
		return c, s.emit(ctx, tx, account, NotificationCustomerCreated, c)
	})
}

func applyCustomer(c *Customer, p *CustomerParams) {
	c.LegalName, c.TaxID, c.URL, c.Label, c.TimeZone = p.LegalName, p.TaxID, p.URL, p.Label, p.TimeZone
	c.CustomerAliases = append([]string{}, p.CustomerAliases...)
	c.Contacts = append([]Contact{}, p.Contacts...)
	c.TaxStatus = p.TaxStatus
	if c.TaxStatus == "" {
		c.TaxStatus = TaxStatusTaxed
	}
	c.Address = copyOf(p.Address)
	c.CustomerEInvoicing = p.CustomerEInvoicing
	c.ElectronicAddress = copyOf(p.ElectronicAddress)
	c.EmailAttachments = slices.Clone(p.EmailAttachments)
}

// claimAliases reserves c's aliases that are not in old, and releases the
// aliases of old that c no longer has.
func (s *Service) claimAliases(ctx context.Context, tx Tx, c *Customer, old []string) error {
	for _, a := range old {
		if !slices.Contains(c.CustomerAliases, a) {
			if err := deleteIfPresent(ctx, tx, tableCustomerAliases, key(c.ServiceAccountID, a)); err != nil {
				return err
			}
		}
	}
	for i, a := range c.CustomerAliases {
		if slices.Contains(old, a) {
			continue
		}
		field := fmt.Sprintf("customerAliases[%d]", i)
		taken, err := exists(ctx, tx, tableCustomers, key(c.ServiceAccountID, a))
		switch {
		case err != nil:
			return err
		case taken || a == c.ID:
			return &Error{Code: CodeConflict, Field: field, Message: fmt.Sprintf("alias %q is the id of a customer", a)}
		}
		err = claimKey(ctx, tx, tableCustomerAliases, key(c.ServiceAccountID, a), c.ID, field, fmt.Sprintf("alias %q belongs to another customer", a))
		if err != nil {
			return err
		}
	}
	return nil
}

// GetCustomer returns a customer. Returns not_found if the account has no
// such customer.
func (s *Service) GetCustomer(ctx context.Context, account, id string) (*Customer, error) {
	return getOne[Customer](ctx, s, tableCustomers, account, id, "customer")
}

func (s *Service) getCustomer(ctx context.Context, tx Tx, account, id string) (*Customer, error) {
	return getOwned[Customer](ctx, tx, tableCustomers, account, id, "customer")
}

// UpdateCustomer replaces the editable fields of a customer, aliases
// included; an alias it drops is free for another customer at once.
// Returns not_found, and validation_failed and conflict as CreateCustomer.
func (s *Service) UpdateCustomer(ctx context.Context, account, id string, p CustomerParams) (*Customer, error) {
	if err := s.validateCustomer(&p); err != nil {
		return nil, err
	}
	now := s.clock()
	return updateOwned(ctx, s, tableCustomers, account, id, "customer", func(tx Tx, c *Customer) error {
		oldAliases, oldName := c.CustomerAliases, c.LegalName
		applyCustomer(c, &p)
		c.UpdatedAt = now
		if err := s.claimAliases(ctx, tx, c, oldAliases); err != nil {
			return err
		}
		if oldName != c.LegalName {
			if err := deleteIfPresent(ctx, tx, tableCustomerNames, key(account, oldName, id)); err != nil {
				return err
			}
			if err := tx.Put(ctx, tableCustomerNames, key(account, c.LegalName, id), []byte(id)); err != nil {
				return err
			}
		}
		if err := setZone(ctx, tx, key(account, id), "", c.TimeZone, now); err != nil {
			return err
		}
		return s.emit(ctx, tx, account, NotificationCustomerUpdated, c)
	})
}

// ArchiveCustomer archives a customer: it gets no new invoices, schedules
// or credit purchases, and its invoices say isCustomerArchived. Archiving
// twice changes nothing. A customer with schedules that would still bill
// (ACTIVE, SUSPENDED, PENDING or DRAFT, not archived) is refused with
// invalid_state listing them: cancel them first, or archive with
// ArchiveCustomerParams.CancelSchedules. Returns not_found.
func (s *Service) ArchiveCustomer(ctx context.Context, account, id string) (*Customer, error) {
	return s.ArchiveCustomerWith(ctx, account, id, ArchiveCustomerParams{})
}

// ArchiveCustomerParams say how a customer is archived.
type ArchiveCustomerParams struct {
	// CancelSchedules ends, in the archiving transaction, every schedule of
	// the customer that would still bill: ACTIVE, SUSPENDED and PENDING ones
	// become CANCELLED on the last day they invoiced (the day before their
	// start when they invoiced nothing) and DRAFT ones stay DRAFT; all are
	// archived, so the engine bills them no more. Bill what is still due
	// before (a billing run): nothing more is invoiced for them. False:
	// such schedules refuse the archiving.
	CancelSchedules bool
}

// ArchiveCustomerWith is ArchiveCustomer with p (POST
// /customers/{id}/archive?cancelSchedules=true).
func (s *Service) ArchiveCustomerWith(ctx context.Context, account, id string, p ArchiveCustomerParams) (*Customer, error) {
	now := s.clock()
	return mutate(ctx, s, account, func(tx Tx) (*Customer, error) {
		c, err := s.getCustomer(ctx, tx, account, id)
		if err != nil || c.ArchivedAt != nil {
			return c, err
		}
		if err := s.endCustomerSchedules(ctx, tx, account, id, p.CancelSchedules, now); err != nil {
			return nil, err
		}
		c.ArchivedAt, c.UpdatedAt = &now, now
		if err := putRecord(ctx, tx, tableCustomers, key(account, id), c); err != nil {
			return nil, err
		}
		if err := s.markInvoicesCustomerArchived(ctx, tx, account, id); err != nil {
			return nil, err
		}
		return c, s.emit(ctx, tx, account, NotificationCustomerArchived, c)
	})
}

// endCustomerSchedules finds the customer's schedules that would still
// bill and refuses (invalid_state, naming them) unless cancel, when it ends
// them as ArchiveCustomerParams.CancelSchedules says.
func (s *Service) endCustomerSchedules(ctx context.Context, tx Tx, account, customerID string, cancel bool, now time.Time) error {
	var live []*BillingSchedule
	err := eachRecord(ctx, tx, tableBillingSchedules, Range{Prefix: prefix(account)}, func(sc *BillingSchedule) error {
		switch sc.Status {
		case ScheduleStatusActive, ScheduleStatusSuspended, ScheduleStatusPending, ScheduleStatusDraft:
			if sc.CustomerID == customerID && sc.ArchivedAt == nil {
				live = append(live, sc)
			}
		}
		return nil
	})
	if err != nil || len(live) == 0 {
		return err
	}
	if !cancel {
		names := make([]string, len(live))
		for i, sc := range live {
			names[i] = sc.ID + " (" + string(sc.Status) + ")"
		}
		return Errorf(CodeInvalidState, "the customer has billing schedules that would still bill: %s; cancel them first, or archive with cancelSchedules=true",
			strings.Join(names, ", "))
	}
	for _, sc := range live {
		typ := NotificationBillingScheduleArchived
		if sc.Status != ScheduleStatusDraft {
			end, err := s.lastBilledDay(ctx, tx, sc)
			if err != nil {
				return err
			}
			if end.IsZero() {
				end = sc.StartDate.AddDays(-1)
			}
			sc.EndDate, sc.Status, typ = &end, ScheduleStatusCancelled, NotificationBillingScheduleUpdated
		}
		sc.ArchivedAt, sc.UpdatedAt = &now, now
		if err := deleteIfPresent(ctx, tx, tableBillingRunnable, key(account, sc.ID)); err != nil {
			return err
		}
		if err := s.putSchedule(ctx, tx, sc); err != nil {
			return err
		}
		if _, err := s.emitSchedule(ctx, tx, sc, typ); err != nil {
			return err
		}
	}
	return nil
}

// ListCustomers lists the account's customers, archived ones included,
// newest first unless f.SortOrder says ASC. Returns validation_failed for a
// bad sort order, limit or cursor.
func (s *Service) ListCustomers(ctx context.Context, account string, f CustomerFilter, p ListParams) (Page[Customer], error) {
	order, err := ParseSortOrder(string(f.SortOrder), SortDesc)
	if err != nil {
		return Page[Customer]{}, err
	}
	q := listQuery[Customer]{name: "customers", table: tableCustomers, prefix: prefix(account), desc: order == SortDesc, decode: decodeAll[Customer](nil)}
	return read(ctx, s, func(tx Tx) (Page[Customer], error) { return listKept(ctx, s, tx, keptCustomers, account, nil, q, p) })
}

// customerByAlias returns the customer whose id or alias is value, or nil
// when there is none in the account.
func (s *Service) customerByAlias(ctx context.Context, tx Tx, account, value string) (*Customer, error) {
	c, err := findRecord[Customer](ctx, tx, tableCustomers, key(account, value))
	if c != nil || err != nil {
		return c, err
	}
	id, err := tx.Get(ctx, tableCustomerAliases, key(account, value))
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return getRecord[Customer](ctx, tx, tableCustomers, key(account, string(id)))
}

// resolveAliases expands customer references for usage and seat
// calculations: each value that is the id or an alias of a customer of the
// account stands for that customer's id and all its aliases; any other value
// stands for itself (an alias no customer has claimed yet). The result is
// deduplicated and sorted. Aliases resolve at calculation time, so moving an
// alias to another customer moves its events with it.
func (s *Service) resolveAliases(ctx context.Context, tx Tx, account string, values []string) ([]string, error) {
	owners, err := s.aliasOwners(ctx, tx, account, values)
	return sortedKeys(owners), err
}

// aliasOwners is resolveAliases with the customer each alias stands for:
// alias → customer id ("" for an alias no customer has claimed).
func (s *Service) aliasOwners(ctx context.Context, tx Tx, account string, values []string) (map[string]string, error) {
	out := make(map[string]string, len(values))
	for _, v := range values {
		c, err := s.customerByAlias(ctx, tx, account, v)
		if err != nil {
			return nil, err
		}
		if c == nil {
			if _, ok := out[v]; !ok {
				out[v] = ""
			}
			continue
		}
		out[c.ID] = c.ID
		for _, a := range c.CustomerAliases {
			out[a] = c.ID
		}
	}
	return out, nil
}
