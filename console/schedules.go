package console

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/billingd/billing"
)

// scheduleStatuses are the choices of the schedules page's filter.
var scheduleStatuses = []billing.ScheduleStatus{billing.ScheduleStatusDraft, billing.ScheduleStatusPending, billing.ScheduleStatusActive,
	billing.ScheduleStatusSuspended, billing.ScheduleStatusCancelled, billing.ScheduleStatusCompleted}

// scheduleList is the data of the schedules page.
type scheduleList struct {
	Status    string
	Failing   bool
	Statuses  []billing.ScheduleStatus
	Schedules []billing.BillingSchedule
	Pager     pager
	CSV       string
	Names     *customerNames // the customers' names, by id
}

// schedules lists the account's billing schedules, newest first, filtered
// by status and by billing failure.
func (c *Console) schedules(rq *request) error {
	q := rq.r.URL.Query()
	data := scheduleList{Status: q.Get("status"), Failing: q.Get("failing") != "", Statuses: scheduleStatuses}
	f := billing.BillingScheduleFilter{Status: billing.ScheduleStatus(data.Status), Failing: data.Failing}
	list := func(p billing.ListParams) (billing.Page[billing.BillingSchedule], error) {
		return c.svc.ListBillingSchedules(rq.ctx, rq.account, f, p)
	}
	names := rq.customerNames()
	if rq.wantsCSV() {
		return exportCSV(rq, "schedules", scheduleCSV, list, func(s *billing.BillingSchedule) []string {
			return []string{s.ID, text(s.Label), s.CustomerID, text(names.Name(s.CustomerID)), string(s.Status), isoDate(s.StartDate), isoDate(s.EndDate),
				strconv.Itoa(len(s.Phases)), text(s.LastBillingError)}
		})
	}
	page, err := list(rq.list())
	if data.Schedules, data.Pager, err = listed(rq, page, err); err != nil {
		return err
	}
	data.CSV, data.Names = rq.csvLink(), names
	return rq.render(http.StatusOK, "schedules", "Billing schedules", data)
}

// schedulePage is the data of a schedule's page.
type schedulePage struct {
	Schedule *billing.BillingSchedule
	Customer *billing.Customer
	Phases   []phaseView
	// Upcoming is the next invoice as the engine would create it; nil when
	// none is coming (NoUpcoming says why, or that the engine cannot bill it).
	Upcoming   *billing.UpcomingInvoice
	NoUpcoming string
	Invoices   []billing.Invoice
	Actions    []option // the actions its status allows: URL name and button
}

// scheduleIn is the allowed of an action of a schedule that is not
// archived and has one of the statuses sts.
func scheduleIn(sts ...billing.ScheduleStatus) func(*billing.BillingSchedule) bool {
	return func(sc *billing.BillingSchedule) bool { return slices.Contains(sts, sc.Status) && sc.ArchivedAt == nil }
}

// scheduleActionOrder is the order of the schedule page's buttons.
var scheduleActionOrder = []string{"activate", "suspend", "cancel"}

// scheduleActions are the schedule page's actions, by URL name.
var scheduleActions = map[string]pageAction[*billing.BillingSchedule]{
	"activate": {label: "Activate…", heading: "Activate schedule", button: "Activate", done: "schedule-activated",
		question: "The billing engine bills the schedule from its start date (a suspended one from today).",
		allowed:  scheduleIn(billing.ScheduleStatusDraft, billing.ScheduleStatusSuspended),
		run: func(ctx context.Context, rq *request, sc *billing.BillingSchedule) (any, error) {
			return rq.c.svc.ActivateBillingSchedule(ctx, rq.account, sc.ID)
		}},
	"suspend": {label: "Suspend…", heading: "Suspend schedule", button: "Suspend", done: "schedule-suspended",
		question: "The billing engine stops billing the schedule until it is activated again.",
		allowed:  scheduleIn(billing.ScheduleStatusActive, billing.ScheduleStatusPending),
		run: func(ctx context.Context, rq *request, sc *billing.BillingSchedule) (any, error) {
			return rq.c.svc.SuspendBillingSchedule(ctx, rq.account, sc.ID)
		}},
	"cancel": {label: "Cancel…", heading: "Cancel schedule", button: "Cancel schedule", done: "schedule-cancelled", danger: true,
		question: "The schedule ends on the day below (today when empty); nothing after it is billed. This cannot be undone.",
		allowed:  scheduleIn(billing.ScheduleStatusActive, billing.ScheduleStatusPending, billing.ScheduleStatusSuspended),
		run: func(ctx context.Context, rq *request, sc *billing.BillingSchedule) (any, error) {
			at, err := dateField(rq, "at", "The last day", false)
			if err != nil {
				return nil, err
			}
			return rq.c.svc.CancelBillingSchedule(ctx, rq.account, sc.ID, billing.CancelBillingScheduleParams{At: at})
		}},
}

// scheduleAction shows an action's confirmation (GET) or does it (POST).
func (c *Console) scheduleAction(rq *request) error {
	a, sc, err := requestedAction(rq, scheduleActions, c.svc.GetBillingSchedule)
	if err != nil {
		return err
	}
	return a.confirm(rq, sc, Prefix+"schedules/"+sc.ID, scheduleName(sc), func(cf *confirmation) error {
		if rq.r.PathValue("action") == "cancel" {
			cf.Fields = []field{{Name: "at", Label: "Last day billed", Type: "date", Value: rq.value("at", "")}}
		}
		return nil
	})
}

// phaseView is a phase with its number (from 1) and its prices.
type phaseView struct {
	billing.Phase
	Number int
	Prices []billing.Price
}

// schedule shows one billing schedule: its facts, its phases with their
// prices, discounts and minimums, the upcoming invoice and its invoices.
func (c *Console) schedule(rq *request) error {
	sc, err := c.svc.GetBillingSchedule(rq.ctx, rq.account, rq.r.PathValue("id"))
	if err != nil {
		return err
	}
	data := schedulePage{Schedule: sc}
	data.Actions = actionOptions(scheduleActions, scheduleActionOrder, sc)
	if sc.Status == billing.ScheduleStatusDraft && sc.ArchivedAt == nil {
		data.Actions = append([]option{{"phases", "Edit phases…"}}, data.Actions...)
	}
	if data.Customer, err = c.svc.GetCustomer(rq.ctx, rq.account, sc.CustomerID); err != nil {
		return err
	}
	prices := make(map[string]billing.Price, len(sc.Prices))
	for _, p := range sc.Prices {
		prices[p.ID] = p
	}
	for i, ph := range sc.Phases {
		v := phaseView{Phase: ph, Number: i + 1}
		for _, id := range ph.PriceIDs {
			v.Prices = append(v.Prices, prices[id])
		}
		data.Phases = append(data.Phases, v)
	}
	data.Upcoming, err = c.svc.PreviewInvoice(rq.ctx, rq.account, sc.ID, time.Time{})
	switch code := billing.CodeOf(err); {
	case err == nil:
	case code == billing.CodeNotFound:
		data.NoUpcoming = "No invoice is coming: every billing date of the schedule is billed, or it has nothing to charge."
	case code == billing.CodeInternal || code == billing.CodeUnavailable:
		return err
	default:
		data.NoUpcoming = "The billing engine cannot bill the next invoice: " + err.Error()
	}
	invoices, err := c.svc.ListInvoices(rq.ctx, rq.account, billing.InvoiceFilter{BillingScheduleID: sc.ID}, billing.ListParams{Limit: pageSize})
	if err != nil {
		return err
	}
	data.Invoices = invoices.Items
	return rq.render(http.StatusOK, "schedule", "Billing schedule · "+data.Customer.LegalName, data)
}
