package billing

import (
	"slices"
	"strconv"
	"time"
)

// appendJSON appends m's JSON encoding, byte for byte what json.Marshal
// gives (TestUsageMetricAppendJSON compares them), without reflection: the
// list of usage metrics is one of the hot reads (BENCHMARKS.md, P3).
func (m *UsageMetric) appendJSON(b []byte) ([]byte, error) {
	var err error
	b = append(b, `{"id":`...)
	b = appendJSONString(b, m.ID)
	b = append(b, `,"serviceAccountId":`...)
	b = appendJSONString(b, m.ServiceAccountID)
	b = append(b, `,"name":`...)
	b = appendJSONString(b, m.Name)
	b = appendOmitEmpty(b, `,"description":`, m.Description)
	b = append(b, `,"metricType":`...)
	b = appendJSONString(b, string(m.MetricType))
	b = append(b, `,"eventType":`...)
	b = appendJSONString(b, m.EventType)
	b = append(b, `,"aggregationType":`...)
	b = appendJSONString(b, string(m.AggregationType))
	b = appendOmitEmpty(b, `,"aggregationProperty":`, m.AggregationProperty)
	b = appendOmitEmpty(b, `,"groupingProperty":`, m.GroupingProperty)
	b = appendOmitEmpty(b, `,"unit":`, m.Unit)
	b = append(b, `,"createdAt":`...)
	if b, err = appendJSONTime(b, m.CreatedAt); err != nil {
		return nil, err
	}
	if m.DeletedAt != nil {
		b = append(b, `,"deletedAt":`...)
		if b, err = appendJSONTime(b, *m.DeletedAt); err != nil {
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
			b = appendJSONString(b, k)
			b = append(b, ':')
			b = appendJSONStrings(b, m.PropertyFilters[k])
		}
		b = append(b, '}')
	}
	b = append(b, `,"caseSensitive":`...)
	b = strconv.AppendBool(b, m.CaseSensitive)
	if len(m.PropertiesToNegate) > 0 {
		b = append(b, `,"propertiesToNegate":`...)
		b = appendJSONStrings(b, m.PropertiesToNegate)
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
			b = append(b, `{"id":`...)
			b = appendJSONString(b, p.ID)
			b = append(b, `,"usageMetricId":`...)
			b = appendJSONString(b, p.UsageMetricID)
			b = append(b, `,"name":`...)
			b = appendJSONString(b, p.Name)
			b = append(b, `,"type":`...)
			b = appendJSONString(b, string(p.Type))
			b = appendOmitEmpty(b, `,"description":`, p.Description)
			b = appendOmitEmpty(b, `,"defaultValue":`, p.DefaultValue)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	return append(b, '}'), nil
}

// appendOmitEmpty appends name and s as JSON unless s is empty (omitempty).
func appendOmitEmpty(b []byte, name, s string) []byte {
	if s == "" {
		return b
	}
	return appendJSONString(append(b, name...), s)
}

// appendJSONStrings appends ss as a JSON array of strings, null when nil.
func appendJSONStrings(b []byte, ss []string) []byte {
	if ss == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, s)
	}
	return append(b, ']')
}

// appendJSONTime appends t as time.Time's MarshalJSON does (RFC 3339 with
// nanoseconds, quoted; an error for years outside 0-9999).
func appendJSONTime(b []byte, t time.Time) ([]byte, error) {
	b = append(b, '"')
	b, err := t.AppendText(b)
	if err != nil {
		return nil, err
	}
	return append(b, '"'), nil
}
