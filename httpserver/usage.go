package httpserver

import (
	"strings"

	"github.com/billingd/billing"
)

// usageEventRoutes mounts usage event ingestion and listing, and the
// calculation of a usage metric (docs/concepts.md, "Usage metering"). The ingestion bodies take the fast path of
// usagedecode.go and their answers the append encoding of usageencode.go.
func (a api) usageEventRoutes() {
	a.post("/usage-events", 201, func(c *call) (any, error) {
		var p billing.UsageEventParams
		if err := bindUsage(c, &p, fastUsageEvent); err != nil {
			return nil, err
		}
		e, err := a.svc.CreateUsageEvent(c.ctx, c.account, p)
		if err != nil {
			return nil, err
		}
		return usageEventJSON{e}, nil
	})
	a.post("/usage-events/batch", 201, a.createUsageEventBatch, batchBody, reusedBody)
	a.get("/usage-events", 200, paged(func(c *call, p billing.ListParams) (any, error) {
		var ts timestampParams
		f := billing.UsageEventFilter{
			CustomerAlias:        c.query.Get("customerAlias"),
			EventType:            c.query.Get("eventType"),
			EventTimestampAfter:  ts.parse(c, "eventTimestampAfter"),
			EventTimestampBefore: ts.parse(c, "eventTimestampBefore"),
		}
		if err := ts.err(); err != nil {
			return nil, err
		}
		return a.svc.ListUsageEvents(c.ctx, c.account, f, p)
	}), listed("customerAlias", "eventType", "eventTimestampAfter", "eventTimestampBefore"))
	a.get("/usage-metrics/:id/calculate", 200, func(c *call) (any, error) {
		params, err := parseCustomParameters(c.query.Get("customParameters"))
		if err != nil {
			return nil, err
		}
		return a.svc.CalculateUsage(c.ctx, c.account, billing.CalculateUsageParams{
			UsageMetricID:    c.param("id"),
			CustomerAliases:  c.csv("customerAliases"),
			PeriodStart:      c.query.Get("periodStart"),
			PeriodEnd:        c.query.Get("periodEnd"),
			CustomParameters: params,
		})
	}, accepts("customerAliases", "periodStart", "periodEnd", "customParameters"))
}

// createUsageEventBatch is POST /usage-events/batch. The request decodes
// into, and answers from, memory of an earlier batch (batchScratch), given
// back once the answer is written.
func (a api) createUsageEventBatch(c *call) (any, error) {
	sc := newBatchScratch()
	var p billing.UsageEventBatchParams
	if err := bindUsage(c, &p, sc.decode); err != nil {
		sc.release()
		return nil, err
	}
	// The answer echoes every event: it is encoded while the batch
	// commits and syncs, and sent only once that succeeded.
	var answer *aheadAnswer
	_, err := a.svc.CreateUsageEventBatchFunc(c.ctx, c.account, p, func(events []billing.UsageEvent) {
		answer = encodeAhead(usageEventsJSON{Items: events}, sc)
	})
	switch {
	case err == nil:
		return answer, nil
	case answer != nil:
		answer.written() // not written: waits for the encoder, then releases sc
	default:
		sc.release()
	}
	return nil, err
}

// parseCustomParameters parses the customParameters query parameter:
// name=value pairs separated by commas.
func parseCustomParameters(s string) (map[string]string, error) {
	out := map[string]string{}
	if s == "" {
		return out, nil
	}
	for pair := range strings.SplitSeq(s, ",") {
		name, value, ok := strings.Cut(pair, "=")
		if !ok || name == "" {
			return nil, billing.FieldError("customParameters", "customParameters must be name=value pairs separated by commas")
		}
		out[name] = value
	}
	return out, nil
}
