package billing

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// ScheduleStatus is the status of a billing schedule.
type ScheduleStatus string

// The billing schedule statuses.
const (
	ScheduleStatusDraft     ScheduleStatus = "DRAFT"
	ScheduleStatusPending   ScheduleStatus = "PENDING"
	ScheduleStatusActive    ScheduleStatus = "ACTIVE"
	ScheduleStatusSuspended ScheduleStatus = "SUSPENDED"
	ScheduleStatusCancelled ScheduleStatus = "CANCELLED"
	ScheduleStatusCompleted ScheduleStatus = "COMPLETED"
)

// RecurrencePreference says where a phase's billing periods are anchored.
type RecurrencePreference string

// The recurrence preferences.
const (
	// RecurrenceContinue keeps the schedule's period sequence (the default).
	RecurrenceContinue RecurrencePreference = "CONTINUE_FROM_PREVIOUS_PHASE"
	// RecurrenceReset starts a new period sequence on the phase's start date.
	RecurrenceReset RecurrencePreference = "RESET"
)

// DiscountType is PERCENTAGE (amount is a percent, 0-100) or NOMINAL (an
// amount in the schedule's currency).
type DiscountType string

// The discount types.
const (
	DiscountPercentage DiscountType = "PERCENTAGE"
	DiscountNominal    DiscountType = "NOMINAL"
)

// SeatDiscountType says which seats a discount applies to; only ALL_SEATS.
type SeatDiscountType string

// SeatDiscountAllSeats discounts every seat.
const SeatDiscountAllSeats SeatDiscountType = "ALL_SEATS"

// Number is a decimal that the API writes as a JSON number (discount and
// minimum amounts). It reads a JSON number or a decimal string, parsing the
// number's text as a decimal (never through float64), within the limits of
// decimal strings: at most 20 integer and 12 fraction digits.
type Number struct{ Decimal }

// MarshalJSON writes the decimal's text as a JSON number.
func (n Number) MarshalJSON() ([]byte, error) { return []byte(n.Decimal.String()), nil }

// UnmarshalJSON reads a JSON number or a decimal string.
func (n *Number) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return validationError(decimalSyntaxMessage)
		}
		d, err := ParseDecimal(s)
		if err == nil {
			n.Decimal = d
		}
		return err
	}
	if len(b) == 0 || (b[0] != '-' && (b[0] < '0' || b[0] > '9')) {
		return validationError("must be a number, not %s", jsonKind(b))
	}
	d, err := ParseDecimalNumber(string(b))
	if err != nil {
		return err
	}
	if d, err = ParseDecimal(d.String()); err != nil {
		return err
	}
	n.Decimal = d
	return nil
}

// Discount is a discount of a phase.
type Discount struct {
	ID string `json:"id"`
	// Type says how Amount reads: PERCENTAGE (a percent) or NOMINAL (money).
	Type DiscountType `json:"type"`
	// Amount is a percent from 0 to 100 for PERCENTAGE (15 is 15%), an amount in
	// the schedule's currency for NOMINAL; exact, written as a JSON number.
	Amount Number `json:"amount"`
	// Message is the title of the discount's own invoice line.
	Message string `json:"message"`
	// SeparateLineItem puts a PERCENTAGE discount on a line of its own per
	// discounted line; false folds it into the lines' rates. NOMINAL discounts are
	// always a separate line.
	SeparateLineItem bool `json:"separateLineItem"`
	// RestrictToPrices are the ids of the phase's prices the discount applies to;
	// empty means all of them.
	RestrictToPrices []string `json:"restrictToPrices"`
	// SeatDiscountType says which seats of a SEAT_BASED price the discount covers:
	// only ALL_SEATS; empty when not given.
	SeatDiscountType SeatDiscountType `json:"seatDiscountType,omitempty"`
}

// Minimum is a minimum commitment of a phase: an invoice whose net for the
// restricted prices falls below Amount gets a top-up line.
type Minimum struct {
	ID string `json:"id"`
	// ServiceAccountID is the account that owns the schedule.
	ServiceAccountID string `json:"serviceAccountId"`
	// BillingScheduleID is the schedule of the minimum's phase.
	BillingScheduleID string `json:"billingScheduleId"`
	// PhaseID is the phase the minimum belongs to.
	PhaseID string `json:"phaseId"`
	// Amount is the least net, in the schedule's currency, the restricted lines of
	// a billing date must reach (after discounts); the engine adds a "Minimum
	// commitment" line for the difference.
	Amount Number `json:"amount"`
	// RestrictToPrices are the ids of the prices whose lines count towards the
	// minimum; empty means all of the phase's prices.
	RestrictToPrices []string  `json:"restrictToPrices"`
	CreatedAt        time.Time `json:"createdAt"`
	UpdatedAt        time.Time `json:"updatedAt"`
}

// PhasePriceMetadata is stored and echoed: whether a price counts in ARR.
type PhasePriceMetadata struct {
	// PriceID is the price of the phase the metadata is about.
	PriceID string `json:"priceId"`
	// ArrCalculation is stored and echoed for reporting; the engine does not read
	// it.
	ArrCalculation string `json:"arrCalculation"`
}

// Phase is one phase of a schedule: which prices bill from StartDate to
// EndDate (inclusive; nil for the open-ended last phase).
type Phase struct {
	ID string `json:"id"`
	// Name is free text; empty when not given.
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"createdAt"`
	// BillingScheduleID is the schedule the phase belongs to.
	BillingScheduleID string `json:"billingScheduleId"`
	// PriceIDs are the prices billed during the phase, all in the schedule's
	// currency.
	PriceIDs []string `json:"priceIds"`
	// StartDate is the first day of the phase: the schedule's startDate for the
	// first phase, the day after the previous phase's EndDate for the others.
	StartDate Date `json:"startDate"`
	// EndDate is the last day of the phase (inclusive); nil only on the last
	// phase, which then runs until the schedule ends.
	EndDate *Date `json:"endDate,omitempty"`
	// Discounts are applied, in order, to the lines of every billing date in the
	// phase.
	Discounts []Discount `json:"discounts"`
	// Minimums are checked on every billing date in the phase, after the
	// discounts.
	Minimums []Minimum `json:"minimums"`
	// RecurrencePreference says whether the phase keeps the schedule's period
	// anchor (CONTINUE_FROM_PREVIOUS_PHASE, the default) or starts new periods at
	// its StartDate (RESET).
	RecurrencePreference RecurrencePreference `json:"recurrencePreference"`
	// PhasePriceMetadata is per-price metadata, stored and echoed.
	PhasePriceMetadata []PhasePriceMetadata `json:"phasePriceMetadata"`
	// Features are granted during the phase in addition to those of its
	// prices (docs/entitlements.md).
	Features []Feature `json:"features,omitempty"`
}

// ScheduleTaxRate maps a price of a schedule to a tax rate.
type ScheduleTaxRate struct {
	// PriceID is a price of the schedule.
	PriceID string `json:"priceId"`
	// TaxRateID is the tax rate every line of that price is taxed at (unless the
	// customer is TAX_EXEMPT or REVERSE_CHARGED).
	TaxRateID string `json:"taxRateId"`
}

// Asset is an attachment of a schedule (stored and echoed; none are created
// by this service yet).
type Asset struct {
	ID string `json:"id"`
	// CreatedBy is the id of the API key that uploaded the asset.
	CreatedBy string `json:"createdBy"`
	// Type is the kind of attachment, as given by its creator.
	Type string `json:"type"`
	// Format is the file format (for example PDF).
	Format string `json:"format"`
	// FileName is the file's name as given by its creator.
	FileName string `json:"fileName"`
	// FileSizeBytes is the size of the file in bytes.
	FileSizeBytes int64 `json:"fileSizeBytes"`
	// URL is where the file can be downloaded.
	URL       string    `json:"url"`
	CreatedAt time.Time `json:"createdAt"`
}

// Suspension is an interval in which a schedule was suspended: periods
// that start on or after Start and before End (open while nil) are not
// billed.
type Suspension struct {
	// Start is the day the schedule was suspended.
	Start Date `json:"start"`
	// End is the day it was activated again; nil while it is still suspended.
	// Periods that start in between are not billed.
	End *Date `json:"end,omitempty"`
}

// BillingSchedule is a customer's subscription: which prices bill from
// when, in phases. The billing engine turns it into invoices.
type BillingSchedule struct {
	ID string `json:"id"`
	// ServiceAccountID is the account that owns the schedule.
	ServiceAccountID string `json:"serviceAccountId"`
	// CustomerID is the customer billed.
	CustomerID string `json:"customerId"`
	// Status is DRAFT until activated, then ACTIVE, SUSPENDED, CANCELLED or
	// COMPLETED (set by the engine once the last period is invoiced).
	Status ScheduleStatus `json:"status"`
	// StartDate is the first day billed; it also anchors the periods unless
	// RecurrenceDayOfMonth says otherwise.
	StartDate Date `json:"startDate"`
	// EndDate is the last day billed (inclusive); nil for a schedule without end.
	// Cancel sets it.
	EndDate *Date `json:"endDate,omitempty"`
	// FirstBillingDate is the first billing date, set at activation; nil before.
	FirstBillingDate *Date `json:"firstBillingDate,omitempty"`
	// AutoIssueInvoices sends each invoice the engine creates at once (op 16);
	// false leaves them DRAFT for review.
	AutoIssueInvoices bool `json:"autoIssueInvoices"`
	// Prices are the prices of every phase, embedded in answers; they are not
	// stored with the schedule.
	Prices    []Price   `json:"prices"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
	// Phases are in order; they cover the schedule from StartDate without gaps.
	Phases []Phase `json:"phases"`
	// RollUpBilling is stored and echoed: the engine always puts everything due on
	// one date on one invoice.
	RollUpBilling bool `json:"rollUpBilling"`
	// IntegrationIDs are ids of the schedule in other systems; always present, []
	// when none.
	IntegrationIDs []IntegrationID `json:"integrationIds"`
	// AttachmentAssets are files attached to the schedule; always present, []
	// (billingd does not store attachments yet).
	AttachmentAssets []Asset `json:"attachmentAssets"`
	// TaxRates map the schedule's prices to tax rates; a price without one is
	// taxed at 0.
	TaxRates []ScheduleTaxRate `json:"taxRates"`
	// PurchaseOrderNumber is copied onto every invoice the engine creates.
	PurchaseOrderNumber string `json:"purchaseOrderNumber,omitempty"`
	// Reference is copied onto every invoice the engine creates.
	Reference string `json:"reference,omitempty"`
	// Label is free text for people; the engine does not read it.
	Label string `json:"label,omitempty"`
	// Memo is copied onto every invoice the engine creates.
	Memo string `json:"memo,omitempty"`
	// RecurrenceDayOfMonth is the day of the month (1-31) periods start on; in a
	// shorter month, its last day. Defaults to StartDate's day.
	RecurrenceDayOfMonth int `json:"recurrenceDayOfMonth"`
	// LastInvoiceID is the newest invoice the engine created; empty before the
	// first.
	LastInvoiceID string `json:"lastInvoiceId,omitempty"`
	// ArchivedAt is when the schedule was archived (no more billing, status
	// unchanged); nil when it is not.
	ArchivedAt *time.Time `json:"archivedAt,omitempty"`
	// ContractID is stored and echoed for API compatibility; billingd has no
	// contracts, so it is always empty.
	ContractID string `json:"contractId,omitempty"`
	// DefaultDueDateDays is the number of days after issue an invoice of the
	// schedule is due (default 30).
	DefaultDueDateDays int `json:"defaultDueDateDays"`
	// LastBillingError is why the last engine run could not bill the
	// schedule; cleared by the next successful run.
	LastBillingError string `json:"lastBillingError,omitempty"`
	// Suspensions are the intervals the schedule was suspended in.
	Suspensions []Suspension `json:"suspensions,omitempty"`
	// ThresholdAmount turns on progressive billing (docs/progressive-billing.md):
	// when the gross amount a period's usage has accrued and no invoice has
	// billed yet reaches it, a billing run issues an interim invoice for it,
	// and the period's final invoice deducts what the interim invoices
	// billed. In the schedule's currency, positive; nil: off.
	ThresholdAmount *Decimal `json:"thresholdAmount,omitempty"`
}

// DiscountParams are the fields of a new discount.
type DiscountParams struct {
	// Type is PERCENTAGE or NOMINAL (required).
	Type DiscountType `json:"type"`
	// Amount is required: a percent 0-100 for PERCENTAGE, an amount in the
	// schedule's currency for NOMINAL; a JSON number or a decimal string, never
	// read through float64.
	Amount *Number `json:"amount"`
	// Message is the title of the discount line.
	Message string `json:"message"`
	// SeparateLineItem: see Discount.SeparateLineItem.
	SeparateLineItem bool `json:"separateLineItem"`
	// RestrictToPrices must name prices of the phase; empty means all.
	RestrictToPrices []string `json:"restrictToPrices"`
	// SeatDiscountType is optional; only ALL_SEATS is accepted.
	SeatDiscountType SeatDiscountType `json:"seatDiscountType"`
}

// MinimumParams are the fields of a new minimum.
type MinimumParams struct {
	// Amount is required: money in the schedule's currency, a JSON number or a
	// decimal string.
	Amount *Number `json:"amount"`
	// RestrictToPrices must name prices of the phase; empty means all.
	RestrictToPrices []string `json:"restrictToPrices"`
}

// PhaseParams are the fields of a phase.
type PhaseParams struct {
	// Name is optional free text.
	Name string `json:"name"`
	// PriceIDs are required: active prices of the account, all in one currency.
	PriceIDs []string `json:"priceIds"`
	// StartDate is required: the schedule's startDate for the first phase, the day
	// after the previous phase's endDate for the others.
	StartDate *Date `json:"startDate"`
	// EndDate is the phase's last day (inclusive); only the last phase may leave
	// it out.
	EndDate *Date `json:"endDate"`
	// Discounts of the phase, applied in order.
	Discounts []DiscountParams `json:"discounts"`
	// Minimums of the phase.
	Minimums []MinimumParams `json:"minimums"`
	// RecurrencePreference defaults to CONTINUE_FROM_PREVIOUS_PHASE.
	RecurrencePreference RecurrencePreference `json:"recurrencePreference"`
	// PhasePriceMetadata is stored and echoed.
	PhasePriceMetadata []PhasePriceMetadata `json:"phasePriceMetadata"`
	// Features the phase grants besides its prices' features: boolean, or
	// metered with a limit per billing period (Feature).
	Features []Feature `json:"features"`
}

// BillingScheduleParams are the fields of a schedule, for create and for
// update (a full replace). CustomerID, StartDate, AutoIssueInvoices and
// Phases are required. IsDraft defaults to true; false activates the
// schedule (on create, and on update of a DRAFT).
type BillingScheduleParams struct {
	// CustomerID is required: a customer of the account.
	CustomerID string `json:"customerId"`
	// StartDate is required: the first day billed.
	StartDate *Date `json:"startDate"`
	// EndDate is the last day billed (inclusive); nil for no end.
	EndDate *Date `json:"endDate"`
	// AutoIssueInvoices is required (a pointer so that false and absent differ).
	AutoIssueInvoices *bool `json:"autoIssueInvoices"`
	// Phases are required, in order, at least one.
	Phases []PhaseParams `json:"phases"`
	// IsDraft defaults to true: the schedule is created DRAFT; false activates it
	// at creation (the activation rules apply).
	IsDraft *bool `json:"isDraft"`
	// RollUpBilling is stored and echoed.
	RollUpBilling bool `json:"rollUpBilling"`
	// RecurrenceDayOfMonth (1-31) defaults to StartDate's day.
	RecurrenceDayOfMonth *int `json:"recurrenceDayOfMonth"`
	// PurchaseOrderNumber is copied onto the schedule's invoices.
	PurchaseOrderNumber string `json:"purchaseOrderNumber"`
	// Reference is copied onto the schedule's invoices.
	Reference string `json:"reference"`
	// Label is free text for people.
	Label string `json:"label"`
	// Memo is copied onto the schedule's invoices.
	Memo string `json:"memo"`
	// DefaultDueDateDays defaults to 30.
	DefaultDueDateDays *int `json:"defaultDueDateDays"`
	// TaxRates map prices of the phases to tax rates of the account.
	TaxRates []ScheduleTaxRate `json:"taxRates"`
	// ThresholdAmount turns on progressive billing: see
	// BillingSchedule.ThresholdAmount. Positive, with at most the digits of
	// the schedule's currency; nil: off.
	ThresholdAmount *Decimal `json:"thresholdAmount"`
}

// CancelBillingScheduleParams are the fields of a cancellation. At is the
// schedule's new inclusive end date; nil means today.
type CancelBillingScheduleParams struct {
	// At is the schedule's new last day (inclusive); nil means today. It may not
	// be before the end of the last invoiced period.
	At *Date `json:"at"`
}

// BillingScheduleFilter selects schedules in ListBillingSchedules.
type BillingScheduleFilter struct {
	// CustomerID keeps the schedules of one customer; empty keeps all.
	CustomerID string
	// Status keeps the schedules in one status; empty keeps all.
	Status ScheduleStatus
	// Failing keeps only the schedules the billing engine could not bill on
	// its last visit (lastBillingError set).
	Failing bool
	// SortOrder orders by creation: DESC (newest first, the default) or ASC.
	SortOrder SortOrder
}

// maxPhases bounds the phases of a schedule; maxPhasePrices the prices of
// one phase.
const (
	maxPhases      = 100
	maxPhasePrices = 100
)

// validateSchedule checks the fields of p that need no store.
func (s *Service) validateSchedule(p *BillingScheduleParams) error {
	var v validator
	checkKey(&v, "customerId", p.CustomerID, true)
	v.check(p.StartDate != nil, "startDate", "startDate is required")
	checkDate(&v, "startDate", p.StartDate)
	checkDate(&v, "endDate", p.EndDate)
	v.check(p.AutoIssueInvoices != nil, "autoIssueInvoices", "autoIssueInvoices is required")
	if p.EndDate != nil && p.StartDate != nil && p.EndDate.Before(*p.StartDate) {
		v.add("endDate", "endDate must not be before startDate")
	}
	if d := p.RecurrenceDayOfMonth; d != nil && (*d < 1 || *d > 31) {
		v.add("recurrenceDayOfMonth", "recurrenceDayOfMonth must be between 1 and 31")
	}
	if d := p.DefaultDueDateDays; d != nil && (*d < 0 || *d > 3650) {
		v.add("defaultDueDateDays", "defaultDueDateDays must be between 0 and 3650")
	}
	v.check(p.ThresholdAmount == nil || p.ThresholdAmount.Sign() > 0, "thresholdAmount", "thresholdAmount must be greater than 0")
	for _, f := range []struct{ name, value string }{
		{"purchaseOrderNumber", p.PurchaseOrderNumber}, {"reference", p.Reference},
		{"label", p.Label}, {"memo", p.Memo},
	} {
		s.checkString(&v, f.name, f.value, false)
	}
	switch {
	case len(p.Phases) == 0:
		v.add("phases", "at least one phase is required")
	case len(p.Phases) > maxPhases:
		v.add("phases", "a schedule has at most %d phases", maxPhases)
	}
	all := map[string]bool{}
	for i := range p.Phases {
		s.validatePhase(&v, p, i)
		for _, id := range p.Phases[i].PriceIDs {
			all[id] = true
		}
	}
	mapped := map[string]bool{}
	for i, tr := range p.TaxRates {
		field := fmt.Sprintf("taxRates[%d]", i)
		checkKey(&v, field+".taxRateId", tr.TaxRateID, true)
		switch {
		case !all[tr.PriceID]:
			v.add(field+".priceId", "priceId must name a price of the schedule's phases")
		case mapped[tr.PriceID]:
			v.add(field+".priceId", "price %q is mapped twice", tr.PriceID)
		}
		mapped[tr.PriceID] = true
	}
	return v.err()
}

// validatePhase checks phase i of p: its prices, dates, discounts and
// minimums.
//
// Long on purpose: a list of independent field checks of one phase, each a few
// lines, in the order of the phase's fields.
func (s *Service) validatePhase(v *validator, p *BillingScheduleParams, i int) {
	ph := &p.Phases[i]
	field := fmt.Sprintf("phases[%d]", i)
	s.checkString(v, field+".name", ph.Name, false)
	switch {
	case len(ph.PriceIDs) == 0:
		v.add(field+".priceIds", "a phase needs at least one price")
	case len(ph.PriceIDs) > maxPhasePrices:
		v.add(field+".priceIds", "a phase has at most %d prices", maxPhasePrices)
	}
	for j, id := range ph.PriceIDs {
		f := fmt.Sprintf("%s.priceIds[%d]", field, j)
		checkKey(v, f, id, true)
		v.check(!slices.Contains(ph.PriceIDs[:j], id), f, "price %q is given twice", id)
	}
	last := i == len(p.Phases)-1
	checkDate(v, field+".startDate", ph.StartDate)
	checkDate(v, field+".endDate", ph.EndDate)
	switch {
	case ph.StartDate == nil:
		v.add(field+".startDate", "startDate is required")
	case i == 0 && p.StartDate != nil && *ph.StartDate != *p.StartDate:
		v.add(field+".startDate", "the first phase starts on the schedule's startDate")
	case i > 0 && p.Phases[i-1].EndDate != nil && *ph.StartDate != p.Phases[i-1].EndDate.AddDays(1):
		v.add(field+".startDate", "a phase starts the day after the previous phase's endDate")
	case p.EndDate != nil && ph.StartDate.After(*p.EndDate):
		v.add(field+".startDate", "a phase must start no later than the schedule's endDate")
	}
	switch {
	case ph.EndDate == nil && !last:
		v.add(field+".endDate", "only the last phase may omit endDate")
	case ph.EndDate != nil && ph.StartDate != nil && ph.EndDate.Before(*ph.StartDate):
		v.add(field+".endDate", "endDate must not be before startDate")
	}
	switch ph.RecurrencePreference {
	case "", RecurrenceContinue, RecurrenceReset:
	default:
		v.add(field+".recurrencePreference", "recurrencePreference must be CONTINUE_FROM_PREVIOUS_PHASE or RESET")
	}
	restrict := func(f string, ids []string) {
		for k, id := range ids {
			v.check(slices.Contains(ph.PriceIDs, id), fmt.Sprintf("%s.restrictToPrices[%d]", f, k), "restrictToPrices must name prices of the phase")
		}
	}
	for k, d := range ph.Discounts {
		f := fmt.Sprintf("%s.discounts[%d]", field, k)
		switch {
		case d.Amount == nil:
			v.add(f+".amount", "amount is required")
		case d.Type == DiscountPercentage && (d.Amount.Sign() < 0 || d.Amount.Cmp(DecimalFromInt(100)) > 0):
			v.add(f+".amount", "a PERCENTAGE amount is a percent between 0 and 100")
		case d.Amount.Sign() < 0:
			v.add(f+".amount", "amount must not be negative")
		}
		v.check(d.Type == DiscountPercentage || d.Type == DiscountNominal, f+".type", "type must be PERCENTAGE or NOMINAL")
		v.check(d.SeatDiscountType == "" || d.SeatDiscountType == SeatDiscountAllSeats, f+".seatDiscountType", "seatDiscountType must be ALL_SEATS")
		s.checkString(v, f+".message", d.Message, false)
		restrict(f, d.RestrictToPrices)
	}
	for k, m := range ph.Minimums {
		f := fmt.Sprintf("%s.minimums[%d]", field, k)
		v.check(m.Amount != nil && m.Amount.Sign() > 0, f+".amount", "amount is required and must be greater than 0")
		restrict(f, m.RestrictToPrices)
	}
	for k, m := range ph.PhasePriceMetadata {
		f := fmt.Sprintf("%s.phasePriceMetadata[%d]", field, k)
		v.check(slices.Contains(ph.PriceIDs, m.PriceID), f+".priceId", "priceId must name a price of the phase")
		v.check(m.ArrCalculation == "INCLUDE" || m.ArrCalculation == "EXCLUDE", f+".arrCalculation", "arrCalculation must be INCLUDE or EXCLUDE")
	}
	validateFeatures(v, field+".features", ph.Features)
}

// buildSchedule applies p to sc (new or replaced), generating ids for its
// phases, discounts and minimums.
func (s *Service) buildSchedule(sc *BillingSchedule, p *BillingScheduleParams, now time.Time) {
	sc.CustomerID, sc.StartDate, sc.EndDate = p.CustomerID, *p.StartDate, p.EndDate
	sc.AutoIssueInvoices, sc.RollUpBilling = *p.AutoIssueInvoices, p.RollUpBilling
	sc.PurchaseOrderNumber, sc.Reference, sc.Label, sc.Memo = p.PurchaseOrderNumber, p.Reference, p.Label, p.Memo
	sc.RecurrenceDayOfMonth = sc.StartDate.Day
	if p.RecurrenceDayOfMonth != nil {
		sc.RecurrenceDayOfMonth = *p.RecurrenceDayOfMonth
	}
	sc.DefaultDueDateDays = 30
	if p.DefaultDueDateDays != nil {
		sc.DefaultDueDateDays = *p.DefaultDueDateDays
	}
	sc.TaxRates = append([]ScheduleTaxRate{}, p.TaxRates...)
	sc.ThresholdAmount = copyOf(p.ThresholdAmount)
	sc.Phases = make([]Phase, len(p.Phases))
	for i, pp := range p.Phases {
		ph := Phase{
			ID: s.newID(), Name: pp.Name, CreatedAt: now, BillingScheduleID: sc.ID,
			PriceIDs: append([]string{}, pp.PriceIDs...), StartDate: *pp.StartDate, EndDate: pp.EndDate,
			Discounts: []Discount{}, Minimums: []Minimum{}, RecurrencePreference: pp.RecurrencePreference,
			PhasePriceMetadata: append([]PhasePriceMetadata{}, pp.PhasePriceMetadata...),
			Features:           slices.Clone(pp.Features),
		}
		if ph.RecurrencePreference == "" {
			ph.RecurrencePreference = RecurrenceContinue
		}
		for _, d := range pp.Discounts {
			ph.Discounts = append(ph.Discounts, Discount{
				ID: s.newID(), Type: d.Type, Amount: *d.Amount, Message: d.Message, SeparateLineItem: d.SeparateLineItem,
				RestrictToPrices: append([]string{}, d.RestrictToPrices...), SeatDiscountType: d.SeatDiscountType,
			})
		}
		for _, m := range pp.Minimums {
			ph.Minimums = append(ph.Minimums, Minimum{
				ID: s.newID(), ServiceAccountID: sc.ServiceAccountID, BillingScheduleID: sc.ID, PhaseID: ph.ID,
				Amount: *m.Amount, RestrictToPrices: append([]string{}, m.RestrictToPrices...), CreatedAt: now, UpdatedAt: now,
			})
		}
		sc.Phases[i] = ph
	}
}

// checkScheduleReferences checks, inside tx, the customer, prices and tax
// rates p names, and that the prices share one currency.
func (s *Service) checkScheduleReferences(ctx context.Context, tx Tx, account string, p *BillingScheduleParams) error {
	var v validator
	c, err := findRecord[Customer](ctx, tx, tableCustomers, key(account, p.CustomerID))
	switch {
	case err != nil:
		return err
	case c == nil:
		v.add("customerId", "no customer %q in this account", p.CustomerID)
	case c.ArchivedAt != nil:
		v.add("customerId", "the customer is archived")
	}
	var currency Currency
	for i, ph := range p.Phases {
		for j, id := range ph.PriceIDs {
			field := fmt.Sprintf("phases[%d].priceIds[%d]", i, j)
			pr, err := findRecord[Price](ctx, tx, tablePrices, key(account, id))
			switch {
			case err != nil:
				return err
			case pr == nil:
				v.add(field, "no price %q in this account", id)
			case p.ThresholdAmount != nil && pr.Structure.PricingType == PricingVolume:
				v.add("thresholdAmount", "progressive billing needs prices whose amount never falls as usage grows; price %q is VOLUME", id)
			case currency == "":
				currency = pr.Currency
			case pr.Currency != currency:
				v.add(field, "all prices of a schedule share one currency: %s is not %s", pr.Currency, currency)
			}
		}
		if err := checkFeatureMetrics(ctx, tx, &v, account, fmt.Sprintf("phases[%d].features", i), ph.Features); err != nil {
			return err
		}
	}
	if t := p.ThresholdAmount; t != nil && currency.Valid() && currency.Round(*t, RoundHalfUp).Cmp(*t) != 0 {
		v.add("thresholdAmount", "thresholdAmount has more than the %d decimal places of %s", currency.MinorUnits(), currency)
	}
	for i, tr := range p.TaxRates {
		ok, err := exists(ctx, tx, tableTaxRates, key(account, tr.TaxRateID))
		if err != nil {
			return err
		}
		v.check(ok, fmt.Sprintf("taxRates[%d].taxRateId", i), "no tax rate %q in this account", tr.TaxRateID)
	}
	return v.err()
}

// CreateBillingSchedule creates a schedule, DRAFT unless p.IsDraft is
// false, in which case it is activated at once (see
// ActivateBillingSchedule). Returns validation_failed for invalid fields and
// references (all at once), and invalid_state when activation fails.
func (s *Service) CreateBillingSchedule(ctx context.Context, account string, p BillingScheduleParams) (*BillingSchedule, error) {
	if err := s.validateSchedule(&p); err != nil {
		return nil, err
	}
	now := s.clock()
	sc := &BillingSchedule{
		ID: s.newID(), ServiceAccountID: account, Status: ScheduleStatusDraft, CreatedAt: now, UpdatedAt: now,
		IntegrationIDs: []IntegrationID{}, AttachmentAssets: []Asset{},
	}
	s.buildSchedule(sc, &p, now)
	return mutate(ctx, s, account, func(tx Tx) (*BillingSchedule, error) {
		if err := s.checkScheduleReferences(ctx, tx, account, &p); err != nil {
			return nil, err
		}
		if err := trackPhaseRollups(ctx, tx, account, sc); err != nil {
			return nil, err
		}
		out := *sc
		if p.IsDraft != nil && !*p.IsDraft {
			if err := s.activate(ctx, tx, &out, now); err != nil {
				return nil, err
			}
		}
		if err := s.putSchedule(ctx, tx, &out); err != nil {
			return nil, err
		}
		return s.emitSchedule(ctx, tx, &out, NotificationBillingScheduleCreated)
	})
}

// GetBillingSchedule returns a schedule with its prices. Returns not_found.
func (s *Service) GetBillingSchedule(ctx context.Context, account, id string) (*BillingSchedule, error) {
	return read(ctx, s, func(tx Tx) (*BillingSchedule, error) {
		sc, err := s.getSchedule(ctx, tx, account, id)
		if err != nil {
			return nil, err
		}
		return sc, s.embedPrices(ctx, tx, sc)
	})
}

func (s *Service) getSchedule(ctx context.Context, tx Tx, account, id string) (*BillingSchedule, error) {
	return getOwned[BillingSchedule](ctx, tx, tableBillingSchedules, account, id, "billing schedule")
}

// putSchedule stores sc without its embedded prices and adds it to the
// engine's runnable index when the engine bills it. Only the engine (when
// it has nothing left to do) and archiving remove a schedule from the index.
func (s *Service) putSchedule(ctx context.Context, tx Tx, sc *BillingSchedule) error {
	if err := s.storeSchedule(ctx, tx, sc); err != nil {
		return err
	}
	if sc.runnable() {
		return tx.Put(ctx, tableBillingRunnable, key(sc.ServiceAccountID, sc.ID), []byte{1})
	}
	return nil
}

// runnable reports whether the engine still bills periods of sc.
func (sc *BillingSchedule) runnable() bool {
	if sc.ArchivedAt != nil {
		return false
	}
	switch sc.Status {
	case ScheduleStatusActive, ScheduleStatusSuspended, ScheduleStatusCancelled:
		return true
	}
	return false
}

// embedPrices fills sc.Prices from the store, in phase order, each once.
func (s *Service) embedPrices(ctx context.Context, tx Tx, sc *BillingSchedule) error {
	prices, err := s.schedulePrices(ctx, tx, sc)
	if err != nil {
		return err
	}
	sc.Prices = make([]Price, 0, len(prices))
	for _, id := range scheduleDistinctPrices(sc) {
		sc.Prices = append(sc.Prices, *prices[id])
	}
	return nil
}

// scheduleDistinctPrices returns the price ids of sc's phases, each once, in
// phase order.
func scheduleDistinctPrices(sc *BillingSchedule) []string {
	var ids []string
	for _, ph := range sc.Phases {
		for _, id := range ph.PriceIDs {
			if !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
	}
	return ids
}

// schedulePrices loads the prices of sc by id.
func (s *Service) schedulePrices(ctx context.Context, tx Tx, sc *BillingSchedule) (map[string]*Price, error) {
	out := map[string]*Price{}
	for _, id := range scheduleDistinctPrices(sc) {
		pr, err := getRecord[Price](ctx, tx, tablePrices, key(sc.ServiceAccountID, id))
		if err != nil {
			return nil, fmt.Errorf("price %s of schedule %s: %w", id, sc.ID, err)
		}
		out[id] = pr
	}
	return out, nil
}

// emitSchedule embeds sc's prices and emits typ about it.
func (s *Service) emitSchedule(ctx context.Context, tx Tx, sc *BillingSchedule, typ NotificationType) (*BillingSchedule, error) {
	if err := s.embedPrices(ctx, tx, sc); err != nil {
		return nil, err
	}
	return sc, s.emit(ctx, tx, sc.ServiceAccountID, typ, sc)
}

// UpdateBillingSchedule replaces the fields of a DRAFT schedule (phases
// get new ids); with p.IsDraft false it is activated in the same step.
// Returns not_found, validation_failed as CreateBillingSchedule, and
// invalid_state when the schedule is not DRAFT or activation fails.
func (s *Service) UpdateBillingSchedule(ctx context.Context, account, id string, p BillingScheduleParams) (*BillingSchedule, error) {
	if err := s.validateSchedule(&p); err != nil {
		return nil, err
	}
	return s.scheduleOp(ctx, account, id, func(tx Tx, sc *BillingSchedule, now time.Time) (NotificationType, error) {
		if sc.Status != ScheduleStatusDraft || sc.ArchivedAt != nil {
			return "", Errorf(CodeInvalidState, "only a DRAFT schedule that is not archived can be edited; this one is %s", sc.Status)
		}
		if err := s.checkScheduleReferences(ctx, tx, account, &p); err != nil {
			return "", err
		}
		s.buildSchedule(sc, &p, now)
		if err := trackPhaseRollups(ctx, tx, account, sc); err != nil {
			return "", err
		}
		sc.UpdatedAt = now
		if p.IsDraft != nil && !*p.IsDraft {
			if err := s.activate(ctx, tx, sc, now); err != nil {
				return "", err
			}
		}
		return NotificationBillingScheduleUpdated, nil
	})
}

// ListBillingSchedules lists the account's schedules by creation, newest
// first unless f.SortOrder says ASC, filtered by customer, status and
// billing failure.
// Returns validation_failed for a bad status, sort order, limit or cursor.
func (s *Service) ListBillingSchedules(ctx context.Context, account string, f BillingScheduleFilter, p ListParams) (Page[BillingSchedule], error) {
	var v validator
	switch f.Status {
	case "", ScheduleStatusDraft, ScheduleStatusPending, ScheduleStatusActive, ScheduleStatusSuspended,
		ScheduleStatusCancelled, ScheduleStatusCompleted:
	default:
		v.add("status", "status must be DRAFT, PENDING, ACTIVE, SUSPENDED, CANCELLED or COMPLETED")
	}
	order, err := ParseSortOrder(string(f.SortOrder), SortDesc)
	v.merge("", err)
	if err := v.err(); err != nil {
		return Page[BillingSchedule]{}, err
	}
	q := listQuery[BillingSchedule]{
		name: "billing_schedules", filter: fmt.Sprintf("%q|%q|%t", f.CustomerID, f.Status, f.Failing),
		table: tableBillingSchedules, prefix: prefix(account), desc: order == SortDesc,
		decode: decodeAll(func(sc *BillingSchedule) bool {
			return (f.CustomerID == "" || sc.CustomerID == f.CustomerID) && (f.Status == "" || sc.Status == f.Status) &&
				(!f.Failing || sc.LastBillingError != "")
		}),
	}
	return read(ctx, s, func(tx Tx) (Page[BillingSchedule], error) {
		page, err := list(ctx, s, tx, q, p)
		if err != nil {
			return page, err
		}
		for i := range page.Items {
			if err := s.embedPrices(ctx, tx, &page.Items[i]); err != nil {
				return page, err
			}
		}
		return page, nil
	})
}
