package console

import (
	"fmt"
	"html/template"
	"time"

	"github.com/billingd/billing"
	"github.com/billingd/billing/console/chart"
)

// usageMonths is how many calendar months a customer's usage charts show;
// usageMetrics is how many of the account's metrics they cover (the
// oldest first).
const (
	usageMonths  = 6
	usageMetrics = 20
)

// customerUsage is the usage part of a customer's page: a chart per metric
// the customer used in the last usageMonths months.
type customerUsage struct {
	Charts []template.HTML
	// Unused names the metrics without usage in those months; Failed the
	// ones the Service could not calculate, with its message.
	Unused []string
	Failed []string
}

// customerUsage calculates, for each usage metric of the account, the
// customer's usage in each of the last usageMonths calendar months (the
// current one up to today) with the Service's usage calculation, and draws
// one chart per metric.
func (c *Console) customerUsage(rq *request, cu *billing.Customer) (*customerUsage, error) {
	metrics, err := c.svc.ListUsageMetrics(rq.ctx, rq.account, billing.UsageMetricFilter{SortOrder: billing.SortAsc}, billing.ListParams{Limit: usageMetrics})
	if err != nil {
		return nil, err
	}
	today, err := c.customerToday(rq, cu)
	if err != nil {
		return nil, err
	}
	out := &customerUsage{}
	for _, m := range metrics.Items {
		ch := chart.Chart{ID: "usage-" + m.ID, Title: m.Name + " per month", Style: chart.Line, XLabel: "Month", YLabel: m.Name,
			Description: fmt.Sprintf("%s of %s in each of the last %d calendar months (this month up to today); the table lists the same values.",
				m.Name, cu.LegalName, usageMonths)}
		used, failed := false, ""
		for i := usageMonths - 1; i >= 0 && failed == ""; i-- {
			start := time.Date(today.Year, today.Month-time.Month(i), 1, 0, 0, 0, 0, time.UTC)
			end := start.AddDate(0, 1, -1)
			if last := today.Time(); end.After(last) {
				end = last
			}
			calc, err := c.svc.CalculateUsage(rq.ctx, rq.account, billing.CalculateUsageParams{UsageMetricID: m.ID,
				CustomerAliases: []string{cu.ID}, PeriodStart: start.Format(time.DateOnly), PeriodEnd: end.Format(time.DateOnly)})
			switch code := billing.CodeOf(err); {
			case err == nil:
				used = used || calc.EventCount > 0
				ch.Points = append(ch.Points, chart.Point{Label: start.Format("January 2006"), Short: start.Format("Jan"), Value: calc.Value})
			case code == billing.CodeInternal || code == billing.CodeUnavailable:
				return nil, err
			default:
				failed = m.Name + ": " + err.Error()
			}
		}
		switch {
		case failed != "":
			out.Failed = append(out.Failed, failed)
		case !used:
			out.Unused = append(out.Unused, m.Name)
		default:
			h, err := chart.Render(ch)
			if err != nil {
				return nil, err
			}
			out.Charts = append(out.Charts, h)
		}
	}
	return out, nil
}

// customerToday is today's date in the customer's time zone (the
// account's when the customer has none): the date its usage periods count.
func (c *Console) customerToday(rq *request, cu *billing.Customer) (billing.Date, error) {
	zone := cu.TimeZone
	if zone == "" {
		settings, err := c.svc.GetAccountSettings(rq.ctx, rq.account)
		if err != nil {
			return billing.Date{}, err
		}
		zone = settings.TimeZone
	}
	loc, err := billing.LoadTimeZone(zone)
	if err != nil {
		loc = time.UTC // a stored zone was checked when it was set
	}
	t := c.cfg.Now().In(loc)
	return billing.Date{Year: t.Year(), Month: t.Month(), Day: t.Day()}, nil
}
