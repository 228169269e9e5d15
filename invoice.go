package billing

import (
	"time"
)

// RenderSettings say how an invoice is rendered.
type RenderSettings struct {
	// PaymentLinkDisplay is HIDE_PAYMENT_LINK (the only value so far).
	PaymentLinkDisplay string `json:"paymentLinkDisplay"`
}

// Invoice is a bill to a customer. Every field the specification marks
// "always" is present in its JSON: empty lists as [], unknown addresses with
// empty strings, totals "0.00" while it has no lines.
type Invoice struct {
	ID                       string         `json:"id"`
	ServiceAccountID         string         `json:"serviceAccountId"`
	Status                   DocumentStatus `json:"status"`
	Currency                 Currency       `json:"currency"`
	CustomerID               string         `json:"customerId"`
	CustomerEmails           []string       `json:"customerEmails"`
	CustomerLegalCompanyName string         `json:"customerLegalCompanyName,omitempty"`
	CustomerBillingAddress   Address        `json:"customerBillingAddress"`
	CustomerShippingAddress  Address        `json:"customerShippingAddress"`
	CustomerTaxID            string         `json:"customerTaxId,omitempty"`
	CustomerTaxStatus        TaxStatus      `json:"customerTaxStatus,omitempty"`
	Totals
	// AmountPaid is the sum of the invoice's payments.
	AmountPaid Decimal `json:"amountPaid"`
	// AmountCredited is the gross total of its FINAL and SENT credit notes.
	AmountCredited Decimal `json:"amountCredited"`
	// AmountDue is grossTotal − amountCredited − amountPaid, never below
	// zero.
	AmountDue           Decimal          `json:"amountDue"`
	Metadata            []KeyValue       `json:"metadata"`
	PaymentStatus       PaymentStatus    `json:"paymentStatus"`
	CreatedAt           time.Time        `json:"createdAt"`
	UpdatedAt           time.Time        `json:"updatedAt"`
	CreditNoteIDs       []string         `json:"creditNoteIds"`
	LinkedServices      []LinkedService  `json:"linkedServices"`
	AccountingDate      Date             `json:"accountingDate"`
	RenderSettings      RenderSettings   `json:"renderSettings"`
	IsCustomerArchived  bool             `json:"isCustomerArchived"`
	InvoiceNumber       string           `json:"invoiceNumber,omitempty"`
	DueDate             Date             `json:"dueDate,omitzero"`
	IssueDate           Date             `json:"issueDate,omitzero"`
	PurchaseOrderNumber string           `json:"purchaseOrderNumber,omitempty"`
	Reference           string           `json:"reference,omitempty"`
	Memo                string           `json:"memo,omitempty"`
	PaymentOptions      []PaymentOption  `json:"paymentOptions,omitempty"`
	BillingPeriod       *DateRange       `json:"billingPeriod,omitempty"`
	BillingScheduleID   string           `json:"billingScheduleId,omitempty"`
	MerchantDetails     *MerchantDetails `json:"merchantDetails,omitempty"`
	// CreditBalances says, once the invoice is finalized, the credit its
	// customer has left ("Remaining credit: 40.00 USD"); absent when the
	// customer has no credit grants.
	CreditBalances string     `json:"creditBalances,omitempty"`
	DunningStatus  string     `json:"dunningStatus,omitempty"`
	CalculatedAt   *time.Time `json:"calculatedAt,omitempty"`
}

// invoiceRecord is an invoice as stored: the invoice and whether its
// accountingDate was set by the client (finalization replaces a default
// one with the issue date). Lists decode it as an Invoice, ignoring the flag.
type invoiceRecord struct {
	Invoice
	AccountingDateSet bool `json:"_accountingDateSet,omitempty"`
	// applyCredits asks the finalization in progress to apply the
	// customer's credit to a manual invoice (ApplyCredits); never stored.
	applyCredits bool
}

// InvoiceLineItem is a line of an invoice.
type InvoiceLineItem struct {
	LineItem
	InvoiceID          string         `json:"invoiceId"`
	ServicePeriodStart *time.Time     `json:"servicePeriodStart,omitempty"`
	ServicePeriodEnd   *time.Time     `json:"servicePeriodEnd,omitempty"`
	ServicePeriod      *ServicePeriod `json:"servicePeriod,omitempty"`
	CreditGrantID      string         `json:"creditGrantId,omitempty"`
}

// InvoiceLineItemGroup groups lines of an invoice under a title.
type InvoiceLineItemGroup struct {
	LineItemGroup
	InvoiceID string `json:"invoiceId"`
}

// InvoiceParams are the fields of a new invoice (POST /invoices). Currency
// and CustomerID are required; Status may be DRAFT (the default) or
// IN_PROGRESS. Customer fields left out (emails, legal name, addresses, tax
// id) are copied from the customer.
type InvoiceParams struct {
	Currency          Currency       `json:"currency"`
	CustomerID        string         `json:"customerId"`
	Status            DocumentStatus `json:"status"`
	BillingScheduleID string         `json:"billingScheduleId"`
	InvoiceUpdateParams
}

// InvoiceUpdateParams replace the header of a DRAFT or IN_PROGRESS invoice
// (PUT /invoices/{id}): every field is replaced, fields left out are
// cleared, and cleared customer fields are copied from the customer again.
// Currency, customer, status and schedule cannot change.
type InvoiceUpdateParams struct {
	PurchaseOrderNumber      string          `json:"purchaseOrderNumber"`
	Reference                string          `json:"reference"`
	Memo                     string          `json:"memo"`
	CustomerEmails           []string        `json:"customerEmails"`
	CustomerLegalCompanyName string          `json:"customerLegalCompanyName"`
	CustomerBillingAddress   *Address        `json:"customerBillingAddress"`
	CustomerShippingAddress  *Address        `json:"customerShippingAddress"`
	CustomerTaxID            string          `json:"customerTaxId"`
	DueDate                  *Date           `json:"dueDate"`
	BillingPeriod            *DateRange      `json:"billingPeriod"`
	Metadata                 []KeyValue      `json:"metadata"`
	PaymentOptions           []PaymentOption `json:"paymentOptions"`
	AccountingDate           *Date           `json:"accountingDate"`
}

// InvoiceLineItemParams are the fields of an invoice line (create, and op 18
// as a full replace). Title, Quantity, Rate, TaxRate and ExternalIDs (may be
// empty, not nil) are required. RateDisplay defaults to ABSOLUTE.
type InvoiceLineItemParams struct {
	Title                    string                   `json:"title"`
	Description              string                   `json:"description"`
	Quantity                 *Decimal                 `json:"quantity"`
	Rate                     *Decimal                 `json:"rate"`
	TaxRate                  *Decimal                 `json:"taxRate"`
	ServicePeriodStart       *time.Time               `json:"servicePeriodStart"`
	ServicePeriodEnd         *time.Time               `json:"servicePeriodEnd"`
	ServicePeriod            *ServicePeriod           `json:"servicePeriod"`
	GroupID                  string                   `json:"groupId"`
	PriceID                  string                   `json:"priceId"`
	ProductID                string                   `json:"productId"`
	RateDisplay              RateDisplay              `json:"rateDisplay"`
	ExternalIDs              []KeyValue               `json:"externalIds"`
	RevenueClassification    RevenueClassification    `json:"revenueClassification"`
	CreditGrantID            string                   `json:"creditGrantId"`
	RevenueRecognitionMethod RevenueRecognitionMethod `json:"revenueRecognitionMethod"`
}

// InvoiceLineItemGroupParams are the fields of an invoice line item group
// (create, and update as a full replace). Title is required.
type InvoiceLineItemGroupParams struct {
	Title       string `json:"title"`
	Description string `json:"description"`
}

// PatchSentInvoiceParams are the fields op 17 may change on a SENT invoice;
// absent fields are kept. PurchaseOrderNumber, Memo and Reference are
// cleared by null; CustomerBillingAddress and DueDate cannot be null.
type PatchSentInvoiceParams struct {
	PurchaseOrderNumber    Optional[string]  `json:"purchaseOrderNumber,omitzero"`
	CustomerBillingAddress Optional[Address] `json:"customerBillingAddress,omitzero"`
	Memo                   Optional[string]  `json:"memo,omitzero"`
	Reference              Optional[string]  `json:"reference,omitzero"`
	DueDate                Optional[Date]    `json:"dueDate,omitzero"`
}

// InvoiceFilter selects invoices in ListInvoices. Empty fields match all.
type InvoiceFilter struct {
	CustomerID        string
	Status            DocumentStatus
	BillingScheduleID string
	// SortOrder orders by creation: DESC (newest first, the default) or ASC.
	SortOrder SortOrder
}
