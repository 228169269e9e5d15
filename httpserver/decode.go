package httpserver

import (
	"bytes"
	"encoding"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/billingd/billing"
)

// maxDecodeErrors bounds the field errors of one body, so that a body of
// thousands of unknown fields cannot produce an answer larger than itself.
const maxDecodeErrors = 100

// decodeJSON is the one decoder of request bodies. body must be one JSON
// object in valid UTF-8 with nothing after it (else invalid_json). It is then
// checked against the type of dst (a non-nil pointer) by reflection, as
// encoding/json would decode it but strictly and completely: every unknown
// field (names match exactly, not ignoring case) and every value of the wrong
// type is reported, with its JSON path, in one billing.ValidationErrors.
// Only then is the body decoded into dst, with numbers in `any` values kept
// as json.Number. Required fields and business rules are the Service's job.
func decodeJSON(body []byte, dst any) error {
	if err := checkJSONSyntax(body); err != nil {
		return err
	}
	var w walker
	w.value("", body, reflect.TypeOf(dst).Elem())
	if len(w.errs) > 0 {
		return w.errs
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(dst); err != nil {
		// The walk accepts only what encoding/json accepts: a failure here
		// is a bug of the walk, not of the request.
		return fmt.Errorf("httpserver: decoding a checked body into %T: %w", dst, err)
	}
	emptyNullLists(body, dst)
	return nil
}

// checkJSONSyntax accepts exactly one JSON object in valid UTF-8.
func checkJSONSyntax(body []byte) error {
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) == 0 {
		return billing.Errorf(CodeInvalidJSON, "the request body is empty; send a JSON object")
	}
	if !utf8.Valid(body) {
		return billing.Errorf(CodeInvalidJSON, "the request body is not valid UTF-8")
	}
	var raw json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		msg := "the request body is not valid JSON"
		var se *json.SyntaxError
		if errors.As(err, &se) {
			msg = fmt.Sprintf("%s: %s (at byte %d)", msg, se.Error(), se.Offset)
		}
		return billing.Errorf(CodeInvalidJSON, "%s", msg)
	}
	if trimmed[0] != '{' {
		return billing.Errorf(CodeInvalidJSON, "the request body must be a JSON object")
	}
	return nil
}

var (
	unmarshalerType     = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
	timeType            = reflect.TypeFor[time.Time]()
	numberType          = reflect.TypeFor[json.Number]()
	decimalType         = reflect.TypeFor[billing.Decimal]()
)

// walker checks syntactically valid JSON against a Go type.
type walker struct {
	errs billing.ValidationErrors
}

// fail records that the value at path "must ..." (msg follows the path).
func (w *walker) fail(path, msg string) {
	if len(w.errs) >= maxDecodeErrors {
		return
	}
	label := path
	if label == "" {
		label = "the body"
	}
	w.errs = append(w.errs, &billing.Error{Code: billing.CodeValidationFailed, Field: path, Message: label + " " + msg})
}

// value checks the JSON value raw (valid JSON) against type t at path.
//
// Long on purpose: one case per JSON kind of the strict decoder's type switch;
// each case is short and they only make sense side by side.
func (w *walker) value(path string, raw []byte, t reflect.Type) {
	if len(w.errs) >= maxDecodeErrors {
		return
	}
	raw = bytes.TrimLeft(raw, " \t\r\n")
	null := raw[0] == 'n'
	if t.Kind() == reflect.Pointer {
		if !null {
			w.value(path, raw, t.Elem())
		}
		return
	}
	if vt, ok := optionalValue(t); ok {
		// A presence-aware field: null is its own meaning (the Service
		// decides whether the field may be cleared); any other value is
		// checked as its T, so errors inside it carry their full path.
		if !null {
			w.value(path, raw, vt)
		}
		return
	}
	if t == decimalType {
		w.decimal(path, raw)
		return
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		w.unmarshaler(path, raw, t)
		return
	}
	if t.Kind() != reflect.Interface && reflect.PointerTo(t).Implements(textUnmarshalerType) {
		w.textUnmarshaler(path, raw, t)
		return
	}
	if null {
		return // as encoding/json: null leaves the zero value
	}
	switch t.Kind() {
	case reflect.Interface:
		if t.NumMethod() != 0 {
			w.fail(path, "cannot be set")
		}
	case reflect.String:
		w.string(path, raw, t)
	case reflect.Bool:
		if raw[0] != 't' && raw[0] != 'f' {
			w.fail(path, "must be true or false, not "+jsonKind(raw))
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64:
		w.number(path, raw, t)
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 && !reflect.PointerTo(t.Elem()).Implements(unmarshalerType) &&
			!reflect.PointerTo(t.Elem()).Implements(textUnmarshalerType) {
			w.bytes(path, raw)
			return
		}
		w.array(path, raw, t, -1)
	case reflect.Array:
		w.array(path, raw, t, t.Len())
	case reflect.Map:
		w.object(path, raw, t)
	case reflect.Struct:
		w.object(path, raw, t)
	default:
		w.fail(path, "cannot be set")
	}
}

// billingPkg is the import path of package billing.
var billingPkg = reflect.TypeFor[billing.Error]().PkgPath()

// optionalValue reports whether t is a billing.Optional[T] (the
// presence-aware field of partial updates) and returns T. Its own
// UnmarshalJSON decodes the value whole and could report only the first
// error, without a path inside the value.
func optionalValue(t reflect.Type) (reflect.Type, bool) {
	if t.Kind() != reflect.Struct || t.PkgPath() != billingPkg || !strings.HasPrefix(t.Name(), "Optional[") {
		return nil, false
	}
	f, ok := t.FieldByName("Value")
	if !ok {
		return nil, false
	}
	return f.Type, true
}

// unmarshaler calls the UnmarshalJSON of a fresh *t, as encoding/json will.
// The message of a *billing.Error is used as is; other errors get a generic
// one, since their text may describe Go internals.
func (w *walker) unmarshaler(path string, raw []byte, t reflect.Type) {
	v := reflect.New(t)
	err := v.Interface().(json.Unmarshaler).UnmarshalJSON(raw)
	if err == nil {
		if t == timeType && raw[0] != 'n' && !billing.TimeInBounds(*v.Interface().(*time.Time)) {
			w.fail(path, "must be between 2000-01-01 and 2199-12-31")
		}
		return
	}
	var be *billing.Error
	switch {
	case errors.As(err, &be) && be.Message != "":
		w.fail(path, be.Message)
	case t == timeType:
		w.fail(path, `must be an RFC 3339 timestamp such as "2024-07-30T12:00:00Z"`)
	default:
		w.fail(path, "is not valid")
	}
}

// decimal checks a decimal field against the wire grammar (billing.ParseDecimal:
// at most 20 digits before and 12 after the point). billing.Decimal's own
// UnmarshalJSON reads any plain decimal, because it also reads stored records
// (whose engine-computed rates may be longer); the limits of client input are
// enforced here.
func (w *walker) decimal(path string, raw []byte) {
	var d billing.Decimal
	if err := d.UnmarshalJSON(raw); err != nil {
		w.unmarshaler(path, raw, decimalType)
		return
	}
	var s string
	_ = json.Unmarshal(raw, &s) // cannot fail: UnmarshalJSON read it
	if _, err := billing.ParseDecimal(s); err != nil {
		var be *billing.Error
		if errors.As(err, &be) {
			w.fail(path, be.Message)
			return
		}
		w.fail(path, "is not valid")
	}
}

// textUnmarshaler checks a value for a type that decodes from a JSON string
// with UnmarshalText.
func (w *walker) textUnmarshaler(path string, raw []byte, t reflect.Type) {
	switch raw[0] {
	case 'n':
		return
	case '"':
	default:
		w.fail(path, "must be a string, not "+jsonKind(raw))
		return
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		w.fail(path, "must be a string")
		return
	}
	err := reflect.New(t).Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(s))
	var be *billing.Error
	switch {
	case err == nil:
	case errors.As(err, &be) && be.Message != "":
		w.fail(path, be.Message)
	default:
		w.fail(path, "is not valid")
	}
}

func (w *walker) string(path string, raw []byte, t reflect.Type) {
	if t == numberType {
		var n json.Number
		if err := json.Unmarshal(raw, &n); err != nil {
			w.fail(path, "must be a number")
		}
		return
	}
	if raw[0] != '"' {
		w.fail(path, "must be a string, not "+jsonKind(raw))
	}
}

func (w *walker) number(path string, raw []byte, t reflect.Type) {
	k := t.Kind()
	want := "must be an integer"
	if k == reflect.Float32 || k == reflect.Float64 {
		want = "must be a number"
	}
	if raw[0] != '-' && (raw[0] < '0' || raw[0] > '9') {
		w.fail(path, want+", not "+jsonKind(raw))
		return
	}
	s := string(raw)
	var err error
	switch k {
	case reflect.Float32, reflect.Float64:
		_, err = strconv.ParseFloat(s, t.Bits())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		_, err = strconv.ParseUint(s, 10, t.Bits())
		if err != nil && s[0] == '-' && isInteger(s[1:]) {
			w.fail(path, "must not be negative")
			return
		}
	default:
		_, err = strconv.ParseInt(s, 10, t.Bits())
	}
	switch {
	case err == nil:
	case errors.Is(err, strconv.ErrRange):
		w.fail(path, "is out of range")
	default:
		w.fail(path, want)
	}
}

func isInteger(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// bytes checks a []byte value: a base64 string, as encoding/json wants.
func (w *walker) bytes(path string, raw []byte) {
	var s string
	if raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		w.fail(path, "must be a base64 string, not "+jsonKind(raw))
		return
	}
	if _, err := base64.StdEncoding.DecodeString(s); err != nil {
		w.fail(path, "must be a base64 string")
	}
}

// array checks a JSON array for a slice (max < 0) or an array of max
// elements.
func (w *walker) array(path string, raw []byte, t reflect.Type, max int) {
	if raw[0] != '[' {
		w.fail(path, "must be an array, not "+jsonKind(raw))
		return
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(raw, &elems); err != nil {
		w.fail(path, "must be an array")
		return
	}
	if max >= 0 && len(elems) > max {
		w.fail(path, fmt.Sprintf("must have at most %d elements", max))
		return
	}
	for i, e := range elems {
		w.value(fmt.Sprintf("%s[%d]", path, i), e, t.Elem())
	}
}

// object checks a JSON object for a struct or a map, member by member in
// document order. A name given twice is refused: encoding/json would decode
// both, and which one a client meant is unclear.
func (w *walker) object(path string, raw []byte, t reflect.Type) {
	if raw[0] != '{' {
		w.fail(path, "must be an object, not "+jsonKind(raw))
		return
	}
	var fields map[string]reflect.Type
	if t.Kind() == reflect.Struct {
		fields = structFields(t)
	}
	seen := map[string]bool{}
	for name, value := range members(raw) {
		p := joinPath(path, name)
		switch {
		case seen[name]:
			w.fail(p, "is given more than once")
		case t.Kind() == reflect.Map:
			if w.mapKey(p, name, t.Key()) {
				w.value(p, value, t.Elem())
			}
		case fields[name] == nil:
			w.fail(p, unknownFieldMessage(name, fields))
		default:
			w.value(p, value, fields[name])
		}
		seen[name] = true
	}
}

// unknownFieldMessage says that name is not a field of a struct with
// fields, suggesting the closest known name when there is one.
func unknownFieldMessage(name string, fields map[string]reflect.Type) string {
	known := make([]string, 0, len(fields))
	for k := range fields {
		known = append(known, k)
	}
	if c := closest(name, known); c != "" {
		return "is not a known field; did you mean " + c + "?"
	}
	return "is not a known field"
}

// members yields the members of a valid JSON object in document order,
// duplicates included.
func members(raw []byte) iter.Seq2[string, json.RawMessage] {
	return func(yield func(string, json.RawMessage) bool) {
		dec := json.NewDecoder(bytes.NewReader(raw))
		if _, err := dec.Token(); err != nil { // {
			return
		}
		for dec.More() {
			tok, err := dec.Token()
			name, ok := tok.(string)
			if err != nil || !ok {
				return
			}
			var value json.RawMessage
			if err := dec.Decode(&value); err != nil || !yield(name, value) {
				return
			}
		}
	}
}

// mapKey checks that name can be a key of a map with key type k.
func (w *walker) mapKey(path, name string, k reflect.Type) bool {
	var err error
	switch {
	case reflect.PointerTo(k).Implements(textUnmarshalerType):
		err = reflect.New(k).Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(name))
	case k.Kind() == reflect.String:
		return true
	case k.Kind() >= reflect.Int && k.Kind() <= reflect.Int64:
		_, err = strconv.ParseInt(name, 10, k.Bits())
	case k.Kind() >= reflect.Uint && k.Kind() <= reflect.Uintptr:
		_, err = strconv.ParseUint(name, 10, k.Bits())
	default:
		err = errors.New("unsupported key type")
	}
	if err != nil {
		w.fail(path, "is not a valid key")
		return false
	}
	return true
}

// joinPath appends an object member's name to a JSON path. An empty name
// is written [""] so that it still names something.
func joinPath(path, name string) string {
	switch {
	case name == "":
		return path + `[""]`
	case path == "":
		return name
	}
	return path + "." + name
}

// jsonKind names the kind of a JSON value for messages.
func jsonKind(raw []byte) string {
	switch raw[0] {
	case 'n':
		return "null"
	case 't', 'f':
		return "a boolean"
	case '"':
		return "a string"
	case '[':
		return "an array"
	case '{':
		return "an object"
	}
	return "a number"
}

// fieldCache maps a struct type to its JSON fields (structFields).
var fieldCache sync.Map

// structFields returns the JSON fields of struct type t by name, with the
// visibility rules of encoding/json: exported fields, named by their json
// tag, skipped with "-", and the fields of untagged embedded structs
// promoted unless a shallower field of the same name hides them. Two fields
// of one name at the same depth cancel out unless exactly one is tagged.
func structFields(t reflect.Type) map[string]reflect.Type {
	if f, ok := fieldCache.Load(t); ok {
		return f.(map[string]reflect.Type)
	}
	out := map[string]reflect.Type{}
	seen := map[string]bool{} // names settled at a shallower depth
	visited := map[reflect.Type]bool{}
	level := []reflect.Type{t}
	for len(level) > 0 {
		var next []reflect.Type
		type candidate struct {
			typ    reflect.Type
			tagged bool
		}
		found := map[string][]candidate{}
		for _, st := range level {
			if visited[st] {
				continue
			}
			visited[st] = true
			for i := range st.NumField() {
				sf := st.Field(i)
				name, tagged, embed, ok := jsonField(sf)
				switch {
				case !ok:
				case embed != nil:
					next = append(next, embed)
				case !seen[name]:
					found[name] = append(found[name], candidate{sf.Type, tagged})
				}
			}
		}
		for name, cs := range found {
			seen[name] = true
			var winners []candidate
			for _, c := range cs {
				if c.tagged {
					winners = append(winners, c)
				}
			}
			switch {
			case len(cs) == 1:
				out[name] = cs[0].typ
			case len(winners) == 1:
				out[name] = winners[0].typ
			}
		}
		level = next
	}
	fieldCache.Store(t, out)
	return out
}

// jsonField reads one struct field: its JSON name and whether the name comes
// from a tag, or the struct type to descend into for an untagged embedded
// struct; ok is false for a field encoding/json ignores.
func jsonField(sf reflect.StructField) (name string, tagged bool, embed reflect.Type, ok bool) {
	tag := sf.Tag.Get("json")
	if tag == "-" {
		return "", false, nil, false
	}
	name, _, _ = strings.Cut(tag, ",")
	if sf.Anonymous {
		ft := sf.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if !sf.IsExported() && ft.Kind() != reflect.Struct {
			return "", false, nil, false
		}
		if name == "" && ft.Kind() == reflect.Struct {
			return "", false, ft, true
		}
	} else if !sf.IsExported() {
		return "", false, nil, false
	}
	if name == "" {
		return sf.Name, false, nil, true
	}
	return name, true, nil, true
}
