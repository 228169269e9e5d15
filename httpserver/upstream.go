package httpserver

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"

	"github.com/billingd/billing"
)

// This file holds what the server does for clients of the upstream API (the
// public billing API whose names the wire follows): merchant details in
// their full shape, null for an empty list, and, when
// Config.UpstreamFieldNames is set, sequenceAccountId beside every
// serviceAccountId.

// wire returns the value to encode for result: documents and merchant
// details get merchantDetails in its full shape (merchantJSON); everything
// else is result itself.
func wire(result any) any {
	switch r := result.(type) {
	case *billing.Invoice:
		return invoiceJSON{r, merchantJSON{r.MerchantDetails}}
	case *billing.CreditNote:
		return creditNoteJSON{r, merchantJSON{r.MerchantDetails}}
	case *billing.UpcomingInvoice:
		var md *billing.MerchantDetails
		if r.Invoice != nil {
			md = r.MerchantDetails
		}
		return upcomingInvoiceJSON{r, merchantJSON{md}}
	case *billing.MerchantDetails:
		return merchantJSON{r}
	case billing.Page[billing.Invoice]:
		return wirePage(r, func(v *billing.Invoice) any { return invoiceJSON{v, merchantJSON{v.MerchantDetails}} })
	case billing.Page[billing.CreditNote]:
		return wirePage(r, func(v *billing.CreditNote) any { return creditNoteJSON{v, merchantJSON{v.MerchantDetails}} })
	}
	return result
}

// wirePage converts the items of a page with conv.
func wirePage[T any](p billing.Page[T], conv func(*T) any) billing.Page[any] {
	out := billing.Page[any]{Items: make([]any, len(p.Items)), After: p.After, Before: p.Before, TotalResultSize: p.TotalResultSize}
	for i := range p.Items {
		out.Items[i] = conv(&p.Items[i])
	}
	return out
}

// invoiceJSON, creditNoteJSON and upcomingInvoiceJSON replace the embedded
// document's merchantDetails (the shallower field wins in encoding/json).
type invoiceJSON struct {
	*billing.Invoice
	MerchantDetails merchantJSON `json:"merchantDetails"`
}

type creditNoteJSON struct {
	*billing.CreditNote
	MerchantDetails merchantJSON `json:"merchantDetails"`
}

type upcomingInvoiceJSON struct {
	*billing.UpcomingInvoice
	MerchantDetails merchantJSON `json:"merchantDetails"`
}

// merchantJSON encodes merchant details (nil: none set) with every field of
// the specification's MerchantDetails present: empty strings, empty
// addresses and bank details, [] for customFields. Typed clients generated
// from the upstream document require them.
type merchantJSON struct{ md *billing.MerchantDetails }

// MarshalJSON writes the full shape.
func (m merchantJSON) MarshalJSON() ([]byte, error) {
	v := reflect.ValueOf(m.md)
	if m.md == nil {
		v = reflect.ValueOf(&billing.MerchantDetails{})
	}
	return appendFull(nil, v)
}

var marshalerType = reflect.TypeFor[json.Marshaler]()

// appendFull appends v as JSON with every field present, omitempty or not;
// a nil pointer to a struct is written as the empty struct, a nil slice as
// [].
func appendFull(b []byte, v reflect.Value) ([]byte, error) {
	t := v.Type()
	if t.Kind() == reflect.Pointer {
		if v.IsNil() {
			v = reflect.New(t.Elem())
		}
		return appendFull(b, v.Elem())
	}
	switch {
	case t.Implements(marshalerType) || t.Kind() != reflect.Struct && t.Kind() != reflect.Slice:
		j, err := json.Marshal(v.Interface())
		return append(b, j...), err
	case t.Kind() == reflect.Slice:
		b = append(b, '[')
		for i := range v.Len() {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendFull(b, v.Index(i)); err != nil {
				return nil, err
			}
		}
		return append(b, ']'), nil
	}
	b = append(b, '{')
	first := true
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "-" || name == "" {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, '"')
		b = append(b, name...)
		b = append(b, `":`...)
		var err error
		if b, err = appendFull(b, v.Field(i)); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

// encodeResult encodes a successful answer: wire(result) as JSON, with
// sequenceAccountId added when the server was configured so.
func (s *Server) encodeResult(result any) ([]byte, error) {
	b, err := json.Marshal(wire(result))
	if err != nil {
		return nil, err
	}
	return s.upstreamNames(b), nil
}

var serviceAccountKey = []byte(`"serviceAccountId":"`)

// upstreamNames adds "sequenceAccountId" with the same value after every
// "serviceAccountId" member of the JSON answer b, when
// Config.UpstreamFieldNames is set. The key can only be a member name here:
// inside a JSON string its quotes would be escaped.
func (s *Server) upstreamNames(b []byte) []byte {
	if !s.cfg.UpstreamFieldNames || !bytes.Contains(b, serviceAccountKey) {
		return b
	}
	out := make([]byte, 0, len(b)+len(b)/4)
	for {
		i := bytes.Index(b, serviceAccountKey)
		if i < 0 {
			return append(out, b...)
		}
		start := i + len(serviceAccountKey)
		end := bytes.IndexByte(b[start:], '"')
		if end < 0 {
			return append(out, b...)
		}
		end += start
		value := b[start:end] // an id: no escapes
		out = append(out, b[:end+1]...)
		out = append(out, `,"sequenceAccountId":"`...)
		out = append(out, value...)
		out = append(out, '"')
		b = b[end+1:]
	}
}

// emptyNullLists sets every list field of the struct dst points to (and of
// the structs it holds) that body sends as null to an empty list: a list
// sent as null means empty, where an empty list is allowed; an absent list
// stays nil (for example a required externalIds is still missing).
func emptyNullLists(body []byte, dst any) {
	if !bytes.Contains(body, []byte("null")) {
		return
	}
	emptyNulls(body, reflect.ValueOf(dst))
}

func emptyNulls(raw []byte, v reflect.Value) {
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return
		}
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.Slice:
		var items []json.RawMessage
		if json.Unmarshal(raw, &items) != nil || len(items) != v.Len() {
			return
		}
		for i := range items {
			emptyNulls(items[i], v.Index(i))
		}
	case reflect.Struct:
		var members map[string]json.RawMessage
		if json.Unmarshal(raw, &members) != nil {
			return
		}
		emptyNullFields(members, v)
	}
}

func emptyNullFields(members map[string]json.RawMessage, v reflect.Value) {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			emptyNullFields(members, v.Field(i))
			continue
		}
		if name == "" {
			name = f.Name
		}
		raw, ok := members[name]
		if !ok || !f.IsExported() {
			continue
		}
		fv := v.Field(i)
		if fv.Kind() == reflect.Slice && string(bytes.TrimSpace(raw)) == "null" {
			fv.Set(reflect.MakeSlice(fv.Type(), 0, 0))
			continue
		}
		emptyNulls(raw, fv)
	}
}
