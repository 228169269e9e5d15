package billing

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Code is a stable, machine-readable error code. The HTTP server derives the
// status of a response from it (see docs/api-guide.md).
type Code string

// The stable error codes of the Service's operations. The HTTP layer adds
// its own for what only a transport can get wrong (httpserver.CodeInvalidJSON,
// CodeRateLimited, ...).
const (
	CodeValidationFailed Code = "validation_failed"
	CodeUnauthorized     Code = "unauthorized"
	CodeNotFound         Code = "not_found"
	CodeInvalidState     Code = "invalid_state"
	CodeConflict         Code = "conflict"
	CodeInternal         Code = "internal"
	CodeUnavailable      Code = "unavailable"
)

// Error is the error type of every Service operation. Message is written for
// a person and never contains internals; Err, when set, carries the cause for
// logs and errors.Is/As.
type Error struct {
	// Code is the stable string code clients branch on; the HTTP status follows
	// from it.
	Code Code
	// Message is for people: what is wrong and, when there is one, with which
	// field.
	Message string
	// Field is the JSON path of the offending field or query parameter
	// (for example "customerBillingAddress.postcode" or "events[3].eventType"),
	// empty when the error is not about one field.
	Field string
	// Err is the cause, for logs; it never reaches an API client.
	Err error
}

// Error implements error.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(string(e.Code))
	if e.Field != "" {
		b.WriteString(" (" + e.Field + ")")
	}
	b.WriteString(": " + e.Message)
	if e.Err != nil {
		b.WriteString(": " + e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error with the given code and a formatted message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// FieldError returns a validation_failed error about one field.
func FieldError(field, format string, args ...any) *Error {
	return &Error{Code: CodeValidationFailed, Field: field, Message: fmt.Sprintf(format, args...)}
}

// ValidationErrors is several validation_failed errors reported at once, so a
// client learns about every invalid field of a request in one answer.
type ValidationErrors []*Error

// Error implements error.
func (v ValidationErrors) Error() string {
	parts := make([]string, len(v))
	for i, e := range v {
		parts[i] = e.Error()
	}
	return strings.Join(parts, "; ")
}

// Errors returns every error carried by err: the elements of a
// ValidationErrors, or err itself as an *Error (with the code of CodeOf).
// Nil for a nil err.
func Errors(err error) []*Error {
	if err == nil {
		return nil
	}
	var v ValidationErrors
	if errors.As(err, &v) && len(v) > 0 {
		return v
	}
	var e *Error
	if errors.As(err, &e) {
		return []*Error{e}
	}
	code := CodeOf(err)
	return []*Error{{Code: code, Message: defaultMessage(code), Err: err}}
}

// CodeOf returns the code of err: the code of an *Error or ValidationErrors
// in its chain, the code matching a Store sentinel, unavailable for a
// cancelled context, and internal for anything else. It returns "" for nil.
func CodeOf(err error) Code {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	var v ValidationErrors
	if errors.As(err, &v) {
		return CodeValidationFailed
	}
	switch {
	case errors.Is(err, ErrNotFound):
		return CodeNotFound
	case errors.Is(err, ErrConflict):
		return CodeConflict
	case errors.Is(err, ErrUnavailable), errors.Is(err, ErrClosed),
		errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return CodeUnavailable
	}
	return CodeInternal
}

func defaultMessage(code Code) string {
	switch code {
	case CodeNotFound:
		return "not found"
	case CodeConflict:
		return "conflict with an existing record"
	case CodeUnavailable:
		return "the service is temporarily unavailable; retry later"
	}
	return "internal error"
}

// validator collects field errors so an operation reports them all at once.
type validator struct{ errs ValidationErrors }

// add records a validation error for field.
func (v *validator) add(field, format string, args ...any) {
	v.errs = append(v.errs, FieldError(field, format, args...))
}

// check records the error when ok is false.
func (v *validator) check(ok bool, field, format string, args ...any) {
	if !ok {
		v.add(field, format, args...)
	}
}

// addParse records the error of parsing field's value (ParseDate,
// ParseTimestamp: a message completing "<field> "), if any.
func (v *validator) addParse(field string, err error) {
	if err != nil {
		v.add(field, "%s %s", field, Errors(err)[0].Message)
	}
}

// merge records err (an *Error or ValidationErrors), prefixing field paths.
func (v *validator) merge(prefix string, err error) {
	for _, e := range Errors(err) {
		c := *e
		c.Field = joinField(prefix, c.Field)
		v.errs = append(v.errs, &c)
	}
}

// err returns the collected errors, or nil.
func (v *validator) err() error {
	if len(v.errs) == 0 {
		return nil
	}
	return v.errs
}

func joinField(prefix, field string) string {
	switch {
	case prefix == "":
		return field
	case field == "":
		return prefix
	case strings.HasPrefix(field, "["):
		return prefix + field
	}
	return prefix + "." + field
}

// notFound returns the not_found error for a kind of record.
func notFound(kind string) *Error {
	return &Error{Code: CodeNotFound, Message: kind + " not found"}
}

// internal wraps an unexpected error (a storage failure, a bug) so its
// details reach only the logs. Errors that already carry a code pass through.
func internal(err error) error {
	if err == nil {
		return nil
	}
	var e *Error
	var v ValidationErrors
	if errors.As(err, &e) || errors.As(err, &v) {
		return err
	}
	code := CodeOf(err)
	return &Error{Code: code, Message: defaultMessage(code), Err: err}
}

// checkString validates a free-text field: at most the configured length,
// valid UTF-8, no control characters other than newlines and tabs.
func (s *Service) checkString(v *validator, field, value string, required bool) {
	switch {
	case value == "" && required:
		v.add(field, "%s is required", field)
	case !utf8.ValidString(value):
		v.add(field, "%s must be valid UTF-8", field)
	case utf8.RuneCountInString(value) > s.limits.MaxStringLength:
		v.add(field, "%s must be at most %d characters", field, s.limits.MaxStringLength)
	case strings.ContainsFunc(value, func(r rune) bool { return r < 0x20 && r != '\n' && r != '\t' || r == 0x7f }):
		v.add(field, "%s must not contain control characters", field)
	}
}

// checkName validates a name a person reads (a legal name, a line or
// group title, a product or grant name) and trims it in place: surrounding
// white space is dropped, a blank name is refused when required, and so is
// any invisible format character (invisibleFormat), which could make a name
// display as something else. Then the checks of checkString.
func (s *Service) checkName(v *validator, field string, value *string, required bool) {
	*value = strings.TrimSpace(*value)
	switch {
	case *value == "" && required:
		v.add(field, "%s is required and must not be blank", field)
	case utf8.ValidString(*value) && strings.ContainsFunc(*value, invisibleFormat):
		r := []rune(*value)[strings.IndexFunc(*value, invisibleFormat)]
		v.add(field, "%s must not contain invisible format characters such as U+%04X (bidirectional controls and the like)", field, r)
	default:
		s.checkString(v, field, *value, required)
	}
}

// invisibleFormat reports whether r is an invisible format character
// (Unicode category Cf: bidirectional embeddings, overrides and isolates,
// marks, zero-width spaces, the soft hyphen, ...), except the two joiners
// (U+200C, U+200D) that emoji and several scripts need to spell words and
// the tag characters of flag emoji (U+E0020 to U+E007F).
func invisibleFormat(r rune) bool {
	switch {
	case r == 0x200c || r == 0x200d, r >= 0xe0020 && r <= 0xe007f:
		return false
	}
	return unicode.Is(unicode.Cf, r)
}

// checkKey validates a client-supplied key (customerEventId, alias, event
// type): 1 to 255 printable characters.
func checkKey(v *validator, field, value string, required bool) {
	switch {
	case value == "":
		if required {
			v.add(field, "%s is required", field)
		}
	case !utf8.ValidString(value):
		v.add(field, "%s must be valid UTF-8", field)
	case utf8.RuneCountInString(value) > 255:
		v.add(field, "%s must be at most 255 characters", field)
	case strings.ContainsFunc(value, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		v.add(field, "%s must contain printable characters only", field)
	}
}
