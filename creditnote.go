package billing

import (
	"time"
)

// CashCreditGrant says whether a credit note generates a cash credit grant.
type CashCreditGrant string

// The values of settings.generateCashCreditGrant.
const (
	CashCreditGrantEnabled  CashCreditGrant = "ENABLED"
	CashCreditGrantDisabled CashCreditGrant = "DISABLED"
)

// CreditNoteSettings are the settings of a credit note.
type CreditNoteSettings struct {
	// GenerateCashCreditGrant is DISABLED (the default: the credit note
	// reduces its invoice's amount due, a refund) or ENABLED: finalizing
	// the credit note creates a CASH credit grant of its gross total for
	// the customer instead.
	GenerateCashCreditGrant CashCreditGrant `json:"generateCashCreditGrant"`
}

// CreditNote reduces what a customer owes, usually against an invoice.
// Every field the specification marks "always" is present in its JSON.
type CreditNote struct {
	ID                       string         `json:"id"`
	ServiceAccountID         string         `json:"serviceAccountId"`
	Status                   DocumentStatus `json:"status"`
	Currency                 Currency       `json:"currency"`
	CustomerID               string         `json:"customerId"`
	CustomerEmails           []string       `json:"customerEmails"`
	CustomerLegalCompanyName string         `json:"customerLegalCompanyName,omitempty"`
	CustomerBillingAddress   Address        `json:"customerBillingAddress"`
	CustomerShippingAddress  Address        `json:"customerShippingAddress"`
	Totals
	Metadata            []KeyValue         `json:"metadata"`
	LinkedServices      []LinkedService    `json:"linkedServices"`
	Settings            CreditNoteSettings `json:"settings"`
	InvoiceID           string             `json:"invoiceId,omitempty"`
	InvoiceNumber       string             `json:"invoiceNumber,omitempty"`
	BillingScheduleID   string             `json:"billingScheduleId,omitempty"`
	IssueDate           Date               `json:"issueDate,omitzero"`
	BillingPeriodStart  *time.Time         `json:"billingPeriodStart,omitempty"`
	BillingPeriodEnd    *time.Time         `json:"billingPeriodEnd,omitempty"`
	CreditNoteNumber    string             `json:"creditNoteNumber,omitempty"`
	PurchaseOrderNumber string             `json:"purchaseOrderNumber,omitempty"`
	Memo                string             `json:"memo,omitempty"`
	CustomerTaxID       string             `json:"customerTaxId,omitempty"`
	MerchantDetails     *MerchantDetails   `json:"merchantDetails,omitempty"`
	AccountingDate      Date               `json:"accountingDate,omitzero"`
	// CreditGrantID is the CASH credit grant the credit note created when
	// finalized (settings.generateCashCreditGrant ENABLED).
	CreditGrantID string    `json:"creditGrantId,omitempty"`
	CreatedAt     time.Time `json:"createdAt"`
	UpdatedAt     time.Time `json:"updatedAt"`
}

// CreditNoteLineItem is a line of a credit note.
type CreditNoteLineItem struct {
	LineItem
	CreditNoteID string `json:"creditNoteId"`
	// LineItemID is the line of the credited invoice this line relates to.
	LineItemID    string     `json:"lineItemId,omitempty"`
	ServicePeriod *DateRange `json:"servicePeriod,omitempty"`
}

// CreditNoteLineItemGroup groups lines of a credit note under a title.
type CreditNoteLineItemGroup struct {
	LineItemGroup
	CreditNoteID string `json:"creditNoteId"`
	// LineItemGroupID is the group of the credited invoice it mirrors.
	LineItemGroupID string `json:"lineItemGroupId,omitempty"`
}

// CreditNoteParams are the fields of a new credit note (op 9). Currency and
// CustomerID are required; Status may be DRAFT (the default) or
// IN_PROGRESS. With InvoiceID, the invoice must be FINAL or SENT and of the
// same customer and currency; missing customer fields and the billing period
// come from it, otherwise from the customer.
type CreditNoteParams struct {
	Currency                 Currency       `json:"currency"`
	CustomerID               string         `json:"customerId"`
	InvoiceID                string         `json:"invoiceId"`
	Status                   DocumentStatus `json:"status"`
	BillingPeriodStart       *time.Time     `json:"billingPeriodStart"`
	BillingPeriodEnd         *time.Time     `json:"billingPeriodEnd"`
	PurchaseOrderNumber      string         `json:"purchaseOrderNumber"`
	CustomerEmails           []string       `json:"customerEmails"`
	CustomerLegalCompanyName string         `json:"customerLegalCompanyName"`
	CustomerBillingAddress   *Address       `json:"customerBillingAddress"`
	CustomerShippingAddress  *Address       `json:"customerShippingAddress"`
	Memo                     string         `json:"memo"`
	Metadata                 []KeyValue     `json:"metadata"`
	CustomerTaxID            string         `json:"customerTaxId"`
	AccountingDate           *Date          `json:"accountingDate"`
}

// CreditNoteUpdateParams are the fields op 10 may change; absent fields are
// kept, null clears a field (settings cannot be cleared; customerEmails and
// metadata become []).
type CreditNoteUpdateParams struct {
	BillingPeriodStart       Optional[time.Time]          `json:"billingPeriodStart,omitzero"`
	BillingPeriodEnd         Optional[time.Time]          `json:"billingPeriodEnd,omitzero"`
	PurchaseOrderNumber      Optional[string]             `json:"purchaseOrderNumber,omitzero"`
	CustomerEmails           Optional[[]string]           `json:"customerEmails,omitzero"`
	CustomerLegalCompanyName Optional[string]             `json:"customerLegalCompanyName,omitzero"`
	CustomerBillingAddress   Optional[Address]            `json:"customerBillingAddress,omitzero"`
	CustomerShippingAddress  Optional[Address]            `json:"customerShippingAddress,omitzero"`
	Memo                     Optional[string]             `json:"memo,omitzero"`
	Metadata                 Optional[[]KeyValue]         `json:"metadata,omitzero"`
	CustomerTaxID            Optional[string]             `json:"customerTaxId,omitzero"`
	Settings                 Optional[CreditNoteSettings] `json:"settings,omitzero"`
	AccountingDate           Optional[Date]               `json:"accountingDate,omitzero"`
}

// CreditNoteLineItemParams are the fields of a credit note line (op 14, a
// full replace; also the body of op 13 with CreateCreditNoteLineItemParams).
// Title, Quantity, Rate, TaxRate and ExternalIDs (may be empty, not nil) are
// required. RevenueRecognitionMethod accepts STRAIGHT_LINE and
// POINT_IN_TIME only.
type CreditNoteLineItemParams struct {
	Title                    string                   `json:"title"`
	Description              string                   `json:"description"`
	Quantity                 *Decimal                 `json:"quantity"`
	Rate                     *Decimal                 `json:"rate"`
	TaxRate                  *Decimal                 `json:"taxRate"`
	ExternalIDs              []KeyValue               `json:"externalIds"`
	RateDisplay              RateDisplay              `json:"rateDisplay"`
	ServicePeriod            *DateRange               `json:"servicePeriod"`
	RevenueRecognitionMethod RevenueRecognitionMethod `json:"revenueRecognitionMethod"`
	RevenueClassification    RevenueClassification    `json:"revenueClassification"`
	ProductID                string                   `json:"productId"`
}

// CreateCreditNoteLineItemParams are the body of op 13: the line's fields
// plus CreditNoteID (required, equal to the credit note of the path),
// GroupID (a group of the same credit note) and LineItemID (a line of the
// credited invoice).
type CreateCreditNoteLineItemParams struct {
	CreditNoteID string `json:"creditNoteId"`
	GroupID      string `json:"groupId"`
	LineItemID   string `json:"lineItemId"`
	CreditNoteLineItemParams
}

// CreditNoteLineItemGroupParams are the fields of a credit note line item
// group (create, and update as a full replace). Title is required;
// LineItemGroupID, when given, must name a group of the credited invoice.
type CreditNoteLineItemGroupParams struct {
	Title           string `json:"title"`
	Description     string `json:"description"`
	LineItemGroupID string `json:"lineItemGroupId"`
}

// CreditNoteFilter selects credit notes in ListCreditNotes. Empty fields
// match all.
type CreditNoteFilter struct {
	CustomerID string
	InvoiceID  string
	Status     DocumentStatus
	// SortOrder orders by creation: DESC (newest first, the default) or ASC.
	SortOrder SortOrder
}
