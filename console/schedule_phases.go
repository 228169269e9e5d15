package console

import (
	"context"
	"fmt"

	"github.com/billingd/billing"
)

// maxPhases is how many phases the phase form offers: the schedule's and
// one more, at most this many.
const maxPhases = 6

// editSchedulePhases shows the form of a schedule's phases (GET) or
// replaces them (POST) through UpdateBillingSchedule, the call of the API's
// PUT /billing-schedules/{id}: each phase's name, last day and prices; the
// first starts on the schedule's start date, each other on the day after
// the previous one's last day. A phase keeps the discounts, minimums,
// recurrence preference and price metadata of the phase at its place; the
// schedule's other fields stay as they are, and it stays DRAFT. Only a
// DRAFT schedule can be edited: the Service's refusal of another is shown
// on the form.
func (c *Console) editSchedulePhases(rq *request) error {
	sc, err := c.svc.GetBillingSchedule(rq.ctx, rq.account, rq.r.PathValue("id"))
	if err != nil {
		return err
	}
	priceOptions, err := rq.priceOptions()
	if err != nil {
		return err
	}
	page := Prefix + "schedules/" + sc.ID
	cf := confirmation{Heading: "Phases · " + scheduleName(sc), Wide: true, Action: page + "/phases", Button: "Save phases", Back: page,
		Question: fmt.Sprintf("The first phase starts on %s, the schedule's start date; each other phase on the day after the previous one's last day, "+
			"which every phase but the last needs. Leave a phase's fields empty to remove it. Only a DRAFT schedule can be edited.", sc.StartDate)}
	n := min(len(sc.Phases)+1, maxPhases)
	for i := range n {
		var ph billing.Phase
		if i < len(sc.Phases) {
			ph = sc.Phases[i]
		}
		cf.Sets = append(cf.Sets, phaseFieldset(rq, i, &ph, priceOptions))
	}
	return rq.submit(cf, "schedule-phases-saved", func(ctx context.Context) (any, error) {
		p, at, err := phasesParams(rq, sc, n)
		if err != nil {
			return nil, err
		}
		updated, err := c.svc.UpdateBillingSchedule(ctx, rq.account, sc.ID, *p)
		if err != nil {
			return nil, phaseErrors(err, at)
		}
		return updated, nil
	})
}

// phaseField is the form's name of a field of phase i: the API's
// ("phases[1].endDate"), so that the Service's messages find it.
func phaseField(i int, name string) string { return fmt.Sprintf("phases[%d].%s", i, name) }

// phaseFieldset is the fields of phase i of the phase form, filled from
// ph (the schedule's) or from the submitted form.
func phaseFieldset(rq *request, i int, ph *billing.Phase, prices []option) fieldset {
	end := ""
	if ph.EndDate != nil {
		end = ph.EndDate.String()
	}
	fs := fieldset{Legend: fmt.Sprintf("Phase %d", i+1), Fields: []field{
		{Name: phaseField(i, "name"), Label: "Name", Value: rq.value(phaseField(i, "name"), ph.Name)},
		{Name: phaseField(i, "endDate"), Label: "Last day", Type: "date", Value: rq.value(phaseField(i, "endDate"), end)},
	}}
	for j := range newSchedulePrices {
		name := phaseField(i, fmt.Sprintf("priceIds[%d]", j))
		def := ""
		if j < len(ph.PriceIDs) {
			def = ph.PriceIDs[j]
		}
		fs.Fields = append(fs.Fields, field{Name: name, Label: fmt.Sprintf("Price %d", j+1), Type: "select", Options: prices, Value: rq.value(name, def)})
	}
	return fs
}

// phasesParams are the schedule sc with the n phases of the submitted form
// (the empty ones left out): UpdateBillingSchedule's full replacement. at
// maps the index of each phase of the result to its place on the form.
func phasesParams(rq *request, sc *billing.BillingSchedule, n int) (p *billing.BillingScheduleParams, at []int, err error) {
	start, draft := sc.StartDate, true
	p = &billing.BillingScheduleParams{CustomerID: sc.CustomerID, StartDate: &start, EndDate: sc.EndDate, AutoIssueInvoices: &sc.AutoIssueInvoices,
		IsDraft: &draft, RollUpBilling: sc.RollUpBilling, RecurrenceDayOfMonth: &sc.RecurrenceDayOfMonth, PurchaseOrderNumber: sc.PurchaseOrderNumber,
		Reference: sc.Reference, Label: sc.Label, Memo: sc.Memo, DefaultDueDateDays: &sc.DefaultDueDateDays, TaxRates: sc.TaxRates}
	var errs []error
	next := &start
	for i := range n {
		pp := billing.PhaseParams{Name: rq.formValue(phaseField(i, "name")), StartDate: next}
		end, err := dateField(rq, phaseField(i, "endDate"), "The last day", false)
		errs = append(errs, err)
		for j := range newSchedulePrices {
			if id := rq.formValue(phaseField(i, fmt.Sprintf("priceIds[%d]", j))); id != "" {
				pp.PriceIDs = append(pp.PriceIDs, id)
			}
		}
		if pp.Name == "" && end == nil && len(pp.PriceIDs) == 0 && err == nil {
			continue // an empty phase: left out
		}
		if len(pp.PriceIDs) == 0 {
			errs = append(errs, billing.FieldError(phaseField(i, "priceIds[0]"), "Choose at least one price"))
		}
		if next == nil {
			errs = append(errs, billing.FieldError(phaseField(at[len(at)-1], "endDate"), "A phase followed by another needs its last day"))
		}
		if i < len(sc.Phases) {
			keepPhaseTerms(&pp, &sc.Phases[i])
		}
		pp.EndDate, next = end, nil
		if end != nil {
			d := end.AddDays(1)
			next = &d
		}
		p.Phases, at = append(p.Phases, pp), append(at, i)
	}
	if len(p.Phases) == 0 {
		errs = append(errs, billing.FieldError(phaseField(0, "priceIds[0]"), "A schedule needs at least one phase: choose its prices"))
	}
	return p, at, joinErrors(errs...)
}

// keepPhaseTerms copies the discounts, minimums, recurrence preference and
// price metadata of the schedule's phase ph into the form's phase pp.
func keepPhaseTerms(pp *billing.PhaseParams, ph *billing.Phase) {
	for _, d := range ph.Discounts {
		pp.Discounts = append(pp.Discounts, billing.DiscountParams{Type: d.Type, Amount: &d.Amount, Message: d.Message,
			SeparateLineItem: d.SeparateLineItem, RestrictToPrices: d.RestrictToPrices, SeatDiscountType: d.SeatDiscountType})
	}
	for _, m := range ph.Minimums {
		pp.Minimums = append(pp.Minimums, billing.MinimumParams{Amount: &m.Amount, RestrictToPrices: m.RestrictToPrices})
	}
	pp.RecurrencePreference, pp.PhasePriceMetadata = ph.RecurrencePreference, ph.PhasePriceMetadata
}

// phaseErrors renames the fields of err's validation errors about the
// phases of the result ("phases[1].endDate") to those of the form
// (at[1]), keeping their messages; other errors are returned as they are.
func phaseErrors(err error, at []int) error {
	errs := billing.Errors(err)
	out := make(billing.ValidationErrors, 0, len(errs))
	for _, e := range errs {
		if e.Code != billing.CodeValidationFailed {
			return err
		}
		c := *e
		var k int
		var rest string
		if _, serr := fmt.Sscanf(c.Field, "phases[%d]", &k); serr == nil && k < len(at) {
			rest = c.Field[len(fmt.Sprintf("phases[%d]", k)):]
			c.Field = fmt.Sprintf("phases[%d]%s", at[k], rest)
		}
		out = append(out, &c)
	}
	return out
}
