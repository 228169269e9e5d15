package billing

import (
	"bytes"
	"encoding/json"
	"errors"
	"time"
)

// Invoices and credit notes are the same kind of document: a header, line
// items, line item groups, totals, a number and a status. This file holds
// what both share; doccore.go holds the one implementation of lines, groups,
// totals, numbering and editability that both documents run on.

// DocumentStatus is the status of an invoice or a credit note.
type DocumentStatus string

// The document statuses. IN_PROGRESS and DRAFT documents are editable;
// FINAL ones are numbered and immutable; SENT ones have been issued to the
// customer; VOIDED ones are cancelled for good.
const (
	StatusInProgress DocumentStatus = "IN_PROGRESS"
	StatusDraft      DocumentStatus = "DRAFT"
	StatusFinal      DocumentStatus = "FINAL"
	StatusSent       DocumentStatus = "SENT"
	StatusVoided     DocumentStatus = "VOIDED"
)

// editable reports whether lines, groups and the header of a document in
// status st may change.
func (st DocumentStatus) editable() bool { return st == StatusDraft || st == StatusInProgress }

// finalized reports whether a document in status st is FINAL or SENT: it
// has a number and journal entries, and counts against its invoice.
func (st DocumentStatus) finalized() bool { return st == StatusFinal || st == StatusSent }

// PaymentStatus is how much of an invoice has been paid. UNPAID,
// PARTIALLY_PAID and PAID are derived from amountDue; UNCOLLECTIBLE is set
// by SetPaymentStatus.
type PaymentStatus string

// The payment statuses.
const (
	PaymentStatusUnpaid        PaymentStatus = "UNPAID"
	PaymentStatusPartiallyPaid PaymentStatus = "PARTIALLY_PAID"
	PaymentStatusPaid          PaymentStatus = "PAID"
	PaymentStatusUncollectible PaymentStatus = "UNCOLLECTIBLE"
)

// RateDisplay says how a line's rate is displayed; it never changes the
// arithmetic.
type RateDisplay string

// The rate displays.
const (
	RateDisplayAbsolute   RateDisplay = "ABSOLUTE"
	RateDisplayPercentage RateDisplay = "PERCENTAGE"
)

// RevenueRecognitionMethod says how a line's revenue is recognised.
type RevenueRecognitionMethod string

// The revenue recognition methods. Credit note lines accept only
// STRAIGHT_LINE and POINT_IN_TIME.
const (
	RevenueRecognitionStraightLine RevenueRecognitionMethod = "STRAIGHT_LINE"
	RevenueRecognitionUsage        RevenueRecognitionMethod = "USAGE"
	RevenueRecognitionMilestone    RevenueRecognitionMethod = "MILESTONE"
	RevenueRecognitionPointInTime  RevenueRecognitionMethod = "POINT_IN_TIME"
)

// RevenueClassification classifies a line's revenue.
type RevenueClassification string

// The revenue classifications.
const (
	RevenueClassificationPrepayment RevenueClassification = "PREPAYMENT"
	RevenueClassificationEarned     RevenueClassification = "EARNED"
	RevenueClassificationBurndown   RevenueClassification = "BURNDOWN"
)

// PaymentOption is a way an invoice may be paid.
type PaymentOption string

// The payment options.
const (
	PaymentOptionBankTransfer PaymentOption = "BANK_TRANSFER"
	PaymentOptionLink         PaymentOption = "LINK"
)

// LinkedService links a document to its copy in an external system.
type LinkedService struct {
	// ExternalID is the record's id in the external system.
	ExternalID string `json:"externalId"`
	// ExternalService names the external system.
	ExternalService string `json:"externalService"`
	// SyncTime is when the record was last synchronised; nil before.
	SyncTime *time.Time `json:"syncTime,omitempty"`
	// ExternalURL links to the record in the external system; empty when unknown.
	ExternalURL string `json:"externalUrl,omitempty"`
}

// DateRange is an inclusive range of calendar dates {start, endInclusive}:
// an invoice's billing period, a credit note line's service period.
type DateRange struct {
	// Start is the first day of the range.
	Start Date `json:"start"`
	// EndInclusive is the last day of the range, included.
	EndInclusive Date `json:"endInclusive"`
}

// ServicePeriod is an invoice line's service period {startDate, endDate},
// both days included.
type ServicePeriod struct {
	// StartDate is the first day of the period.
	StartDate Date `json:"startDate"`
	// EndDate is the last day of the period, included.
	EndDate Date `json:"endDate"`
}

// Totals are the money totals of a line, a group or a document, in the
// document's currency with exactly its minor-unit digits.
type Totals struct {
	// NetTotal is before tax: for a line round(quantity × rate) in the currency's
	// minor units, for a group or document the sum of its lines.
	NetTotal Decimal `json:"netTotal"`
	// TotalTax: for a line round(NetTotal × taxRate), else the sum of the lines'.
	TotalTax Decimal `json:"totalTax"`
	// GrossTotal is NetTotal + TotalTax.
	GrossTotal Decimal `json:"grossTotal"`
}

// LineItem holds the fields invoice and credit note line items share.
// Index is assigned in creation order from 0 per document; the totals are
// computed, never given.
type LineItem struct {
	ID string `json:"id"`
	// GroupID is the line's group in the same document; empty for none.
	GroupID     string `json:"groupId,omitempty"`
	Title       string `json:"title"`
	Description string `json:"description,omitempty"`
	// Quantity is exact (any scale, any sign).
	Quantity Decimal `json:"quantity"`
	// Rate is the amount per unit in the document's currency, exact; the totals
	// are rounded, not the rate.
	Rate Decimal `json:"rate"`
	// TaxRate is a fraction from 0 to 1 ("0.2" is 20%).
	TaxRate Decimal `json:"taxRate"`
	// Index is the line's position in its document, from 0 in creation order; kept
	// on update.
	Index int `json:"index"`
	Totals
	// PriceID is the price the line bills; empty for lines made by hand without
	// one.
	PriceID string `json:"priceId,omitempty"`
	// ProductID is the product the line is for; empty when not given.
	ProductID string `json:"productId,omitempty"`
	// RateDisplay says how Rate is shown (ABSOLUTE or PERCENTAGE); it does not
	// change the arithmetic.
	RateDisplay RateDisplay `json:"rateDisplay"`
	// ExternalIDs are the line's ids in other systems; always present, [] when
	// none.
	ExternalIDs []KeyValue `json:"externalIds"`
	// RevenueRecognitionMethod is stored and echoed for revenue reporting; empty
	// when not given.
	RevenueRecognitionMethod RevenueRecognitionMethod `json:"revenueRecognitionMethod,omitempty"`
	// RevenueClassification is stored and echoed for revenue reporting; empty when
	// not given.
	RevenueClassification RevenueClassification `json:"revenueClassification,omitempty"`
}

// LineItemGroup holds the fields invoice and credit note line item groups
// share. Its totals are the sums of its lines.
type LineItemGroup struct {
	ID          string `json:"id"`
	Title       string `json:"title"`
	Description string `json:"description,omitempty"`
	// Index is the group's position in its document, from 0 in creation order.
	Index int `json:"index"`
	Totals
}

// LineItemFilter orders the line items or groups of a document.
type LineItemFilter struct {
	// SortOrder orders by index: ASC (the default) or DESC.
	SortOrder SortOrder
}

// Optional is a presence-aware field of a partial update (op 10, op 17): a
// field absent from the body leaves Set false and is kept; a field given as
// null sets Set and Null and clears the value (where the field allows it);
// any other value sets Set and Value.
type Optional[T any] struct {
	Set   bool
	Null  bool
	Value T
}

// Some returns an Optional holding v.
func Some[T any](v T) Optional[T] { return Optional[T]{Set: true, Value: v} }

// Null returns an Optional that clears its field.
func Null[T any]() Optional[T] { return Optional[T]{Set: true, Null: true} }

// IsZero reports whether o is absent, so `omitzero` leaves it out.
func (o Optional[T]) IsZero() bool { return !o.Set }

// MarshalJSON writes the value, or null when o is null or absent.
func (o Optional[T]) MarshalJSON() ([]byte, error) {
	if !o.Set || o.Null {
		return []byte("null"), nil
	}
	return json.Marshal(o.Value)
}

// UnmarshalJSON records that the field is present: null, or a value decoded
// strictly (unknown fields of an object are refused). Errors are
// validation_failed *Error values without a Field; the decoder adds the
// path.
func (o *Optional[T]) UnmarshalJSON(b []byte) error {
	*o = Optional[T]{Set: true}
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		o.Null = true
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&o.Value); err != nil {
		var e *Error
		if errors.As(err, &e) {
			return e
		}
		return validationError("is not a valid value: %s", optionalMessage(err))
	}
	return nil
}

// optionalMessage describes a decoding error of an Optional without Go
// internals.
func optionalMessage(err error) string {
	switch e := err.(type) {
	case *json.UnmarshalTypeError:
		if e.Field != "" {
			return e.Field + " must be " + jsonTypeName(e.Type.Kind().String())
		}
		return "must be " + jsonTypeName(e.Type.Kind().String())
	case *time.ParseError:
		return `must be an RFC 3339 timestamp such as "2024-07-30T12:00:00Z"`
	}
	if s := err.Error(); len(s) > 0 && bytes.HasPrefix([]byte(s), []byte("json: unknown field ")) {
		return "unknown field " + s[len("json: unknown field "):]
	}
	return "wrong type"
}

func jsonTypeName(kind string) string {
	switch kind {
	case "string":
		return "a string"
	case "slice", "array":
		return "an array"
	case "struct", "map":
		return "an object"
	case "bool":
		return "a boolean"
	}
	return "a " + kind
}
