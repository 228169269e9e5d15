package httpserver

import (
	"context"
	"slices"
	"strconv"

	"github.com/billingd/billing"
	"github.com/billingd/billing/internal/appendjson"
)

// usageMetricJSON renders usage metrics for GET /usage-metrics; the
// Service keeps each metric's rendering while the metric is unchanged.
var usageMetricJSON = billing.NewRendering(func(m *billing.UsageMetric) ([]byte, error) {
	return appendUsageMetric(nil, m)
})

// appendUsageMetricsPage appends to b the JSON of the page that
// ListUsageMetrics returns for the same arguments, byte for byte what
// json.Marshal gives for it, rendered from the kept encodings of the
// metrics (TestAppendUsageMetricsJSON compares them).
func (s *Server) appendUsageMetricsPage(ctx context.Context, b []byte, account string, f billing.UsageMetricFilter, p billing.ListParams) ([]byte, error) {
	page, err := s.usageMetricsJSON(ctx, account, f, p)
	if err != nil {
		return nil, err
	}
	return appendEncodedPage(b, page), nil
}

// appendEncodedPage appends a page whose items are already JSON, in the
// shape of billing.Page's MarshalJSON.
func appendEncodedPage(b []byte, p billing.Page[[]byte]) []byte {
	b = append(b, `{"items":[`...)
	for i, item := range p.Items {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, item...)
	}
	b = append(b, `],"pagination":{`...)
	if p.After != "" {
		b = appendjson.Member(b, `"after":`, p.After)
		b = append(b, ',')
	}
	if p.Before != "" {
		b = appendjson.Member(b, `"before":`, p.Before)
		b = append(b, ',')
	}
	b = append(b, `"totalResultSize":`...)
	b = strconv.AppendInt(b, int64(p.TotalResultSize), 10)
	return append(b, "}}"...)
}

// appendUsageMetric appends m's JSON encoding, byte for byte what
// json.Marshal gives (TestUsageMetricAppendJSON compares them), without
// reflection: the list of usage metrics is one of the hot reads
// (BENCHMARKS.md, P3).
//
// Long on purpose: one append per field of UsageMetric in its declaration
// order, so that it can be compared with the struct line by line.
func appendUsageMetric(b []byte, m *billing.UsageMetric) ([]byte, error) {
	var err error
	b = appendjson.Member(b, `{"id":`, m.ID)
	b = appendjson.Member(b, `,"serviceAccountId":`, m.ServiceAccountID)
	b = appendjson.Member(b, `,"name":`, m.Name)
	b = appendjson.Field(b, `,"description":`, m.Description)
	b = appendjson.Member(b, `,"metricType":`, string(m.MetricType))
	b = appendjson.Member(b, `,"eventType":`, m.EventType)
	b = appendjson.Member(b, `,"aggregationType":`, string(m.AggregationType))
	b = appendjson.Field(b, `,"aggregationProperty":`, m.AggregationProperty)
	b = appendjson.Field(b, `,"groupingProperty":`, m.GroupingProperty)
	b = appendjson.Field(b, `,"unit":`, m.Unit)
	b = append(b, `,"createdAt":`...)
	if b, err = appendjson.Time(b, m.CreatedAt); err != nil {
		return nil, err
	}
	if m.DeletedAt != nil {
		b = append(b, `,"deletedAt":`...)
		if b, err = appendjson.Time(b, *m.DeletedAt); err != nil {
			return nil, err
		}
	}
	b = append(b, `,"propertyFilters":`...)
	if m.PropertyFilters == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '{')
		keys := make([]string, 0, len(m.PropertyFilters))
		for k := range m.PropertyFilters {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendjson.String(b, k)
			b = append(b, ':')
			b = appendjson.Strings(b, m.PropertyFilters[k])
		}
		b = append(b, '}')
	}
	b = append(b, `,"caseSensitive":`...)
	b = strconv.AppendBool(b, m.CaseSensitive)
	if len(m.PropertiesToNegate) > 0 {
		b = append(b, `,"propertiesToNegate":`...)
		b = appendjson.Strings(b, m.PropertiesToNegate)
	}
	b = append(b, `,"parameters":`...)
	if m.Parameters == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range m.Parameters {
			p := &m.Parameters[i]
			if i > 0 {
				b = append(b, ',')
			}
			b = appendjson.Member(b, `{"id":`, p.ID)
			b = appendjson.Member(b, `,"usageMetricId":`, p.UsageMetricID)
			b = appendjson.Member(b, `,"name":`, p.Name)
			b = appendjson.Member(b, `,"type":`, string(p.Type))
			b = appendjson.Field(b, `,"description":`, p.Description)
			b = appendjson.Field(b, `,"defaultValue":`, p.DefaultValue)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if m.Percentile != nil {
		b = appendjson.Member(b, `,"percentile":`, m.Percentile.String())
	}
	b = appendjson.Field(b, `,"timeUnit":`, string(m.TimeUnit))
	return append(b, '}'), nil
}
