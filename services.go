package billing

import (
	"context"
	"net/http"
	"time"
)

// The interfaces of this file split the operations of *Service by
// aggregate, as the adapters consume them: httpserver and console hold a
// Services and pass each part (UsageService, InvoiceService, ...) to the
// code serving that aggregate, so a handler names the operations it uses,
// not the concrete Service. *Service implements every one of them; each
// method is documented on *Service (what it does, who may call it, the
// codes it returns). Operator methods (sweeps, the outbox backlog, the
// store) stay on *Service alone: they are not the API's.

// AccountService is the operations on accounts: the accounts themselves, their
// API keys and authentication, settings, merchant details and logo.
type AccountService interface {
	// Accounts and keys.
	CreateAccount(ctx context.Context, p CreateAccountParams) (*Account, error)
	GetAccount(ctx context.Context, id string) (*Account, error)
	ListAccounts(ctx context.Context) ([]Account, error)
	CreateAPIKey(ctx context.Context, accountID string) (*NewAPIKey, error)
	ListAPIKeys(ctx context.Context, accountID string) ([]APIKey, error)
	RevokeAPIKey(ctx context.Context, keyID string) (*APIKey, error)
	Authenticate(ctx context.Context, keyID, secret string) (*APIKey, error)

	// Settings and merchant details.
	GetAccountSettings(ctx context.Context, account string) (*AccountSettings, error)
	PutAccountSettings(ctx context.Context, account string, p AccountSettings) (*AccountSettings, error)
	GetMerchantDetails(ctx context.Context, account string) (*MerchantDetails, error)
	PutMerchantDetails(ctx context.Context, account string, md MerchantDetails) (*MerchantDetails, error)
	PutMerchantLogo(ctx context.Context, account string, data []byte) (*MerchantDetails, error)
	GetMerchantLogo(ctx context.Context, account string) ([]byte, error)
	DeleteMerchantLogo(ctx context.Context, account string) (*MerchantDetails, error)
}

// UsageService is the operations of metering: usage metrics and events, the
// calculation of usage, seat metrics, seat events and balances.
type UsageService interface {
	// Usage metrics.
	CreateUsageMetric(ctx context.Context, account string, p CreateUsageMetricParams) (*UsageMetric, error)
	GetUsageMetric(ctx context.Context, account, id string) (*UsageMetric, error)
	UpdateUsageMetric(ctx context.Context, account, id string, p UsageMetricParams) (*UsageMetric, error)
	DeleteUsageMetric(ctx context.Context, account, id string) (*UsageMetric, error)
	ListUsageMetrics(ctx context.Context, account string, f UsageMetricFilter, p ListParams) (Page[UsageMetric], error)

	// Usage events and their calculation.
	CreateUsageEvent(ctx context.Context, account string, p UsageEventParams) (*UsageEvent, error)
	CreateUsageEventBatch(ctx context.Context, account string, p UsageEventBatchParams) (Items[UsageEvent], error)
	CreateUsageEventBatchFunc(ctx context.Context, account string, p UsageEventBatchParams, accepted func([]UsageEvent)) (Items[UsageEvent], error)
	ListUsageEvents(ctx context.Context, account string, f UsageEventFilter, p ListParams) (Page[UsageEvent], error)
	CalculateUsage(ctx context.Context, account string, p CalculateUsageParams) (*UsageCalculation, error)

	// Seats.
	ListSeatMetrics(ctx context.Context, account string, order SortOrder, p ListParams) (Page[SeatMetric], error)
	CreateSeatMetric(ctx context.Context, account string, p CreateSeatMetricParams) (*SeatMetric, error)
	GetSeatMetric(ctx context.Context, account, id string) (*SeatMetric, error)
	UpdateSeatMetric(ctx context.Context, account, id string, p UpdateSeatMetricParams) (*SeatMetric, error)
	DeleteSeatMetric(ctx context.Context, account, id string) (*SeatMetric, error)
	CreateSeatEvent(ctx context.Context, account string, p CreateSeatEventParams) (*SeatEvent, error)
	GetSeatEvent(ctx context.Context, account, id string) (*SeatEvent, error)
	ListSeatEvents(ctx context.Context, account string, f SeatEventFilter, p ListParams) (Page[SeatEvent], error)
	ListSeatBalances(ctx context.Context, account string, f SeatBalanceFilter, p ListParams) (Page[SeatBalance], error)
	GetSeatBalance(ctx context.Context, account, customerID string, asOf *time.Time) (*SeatBalance, error)
}

// CatalogService is the operations on what an account sells and to whom:
// customers, products, tax rates and prices.
type CatalogService interface {
	// Customers.
	CreateCustomer(ctx context.Context, account string, p CustomerParams) (*Customer, error)
	GetCustomer(ctx context.Context, account, id string) (*Customer, error)
	UpdateCustomer(ctx context.Context, account, id string, p CustomerParams) (*Customer, error)
	ArchiveCustomer(ctx context.Context, account, id string) (*Customer, error)
	ArchiveCustomerWith(ctx context.Context, account, id string, p ArchiveCustomerParams) (*Customer, error)
	ListCustomers(ctx context.Context, account string, f CustomerFilter, p ListParams) (Page[Customer], error)

	// Products, tax rates, prices.
	CreateProduct(ctx context.Context, account string, p CreateProductParams) (*Product, error)
	GetProduct(ctx context.Context, account, id string) (*Product, error)
	ListProducts(ctx context.Context, account string, order SortOrder, p ListParams) (Page[Product], error)
	CreateTaxRate(ctx context.Context, account string, p CreateTaxRateParams) (*TaxRate, error)
	GetTaxRate(ctx context.Context, account, id string) (*TaxRate, error)
	ListTaxRates(ctx context.Context, account string, order SortOrder, p ListParams) (Page[TaxRate], error)
	CreatePrice(ctx context.Context, account string, p CreatePriceParams) (*Price, error)
	GetPrice(ctx context.Context, account, id string) (*Price, error)
	UpdatePrice(ctx context.Context, account, id string, p UpdatePriceParams) (*Price, error)
	ListPrices(ctx context.Context, account string, f PriceFilter, p ListParams) (Page[Price], error)
}

// InvoiceService is the operations on invoices: the document, its lines and
// groups, its states, what it prints, the invoiced summary, and the payments
// recorded against invoices with the journal they post.
type InvoiceService interface {
	// Invoices.
	CreateInvoice(ctx context.Context, account string, p InvoiceParams) (*Invoice, error)
	GetInvoice(ctx context.Context, account, id string) (*Invoice, error)
	ListInvoices(ctx context.Context, account string, f InvoiceFilter, p ListParams) (Page[Invoice], error)
	UpdateInvoice(ctx context.Context, account, id string, p InvoiceUpdateParams) (*Invoice, error)
	DeleteInvoice(ctx context.Context, account, id string) error
	DraftInvoice(ctx context.Context, account, id string) (*Invoice, error)
	FinalizeInvoice(ctx context.Context, account, id string) (*Invoice, error)
	SendInvoice(ctx context.Context, account, id string) (*Invoice, error)
	PatchSentInvoice(ctx context.Context, account, id string, p PatchSentInvoiceParams) (*Invoice, error)
	VoidInvoice(ctx context.Context, account, id string) (*Invoice, error)
	SummarizeInvoices(ctx context.Context, account string, months int) (*InvoiceSummary, error)
	AgeReceivables(ctx context.Context, account string) (*Receivables, error)
	AgeReceivablesPage(ctx context.Context, account string, p ReceivablesPage) (*Receivables, error)
	PrintableInvoice(ctx context.Context, account, id string) (*PrintableDocument, error)

	// Payments and the journal.
	RecordPayment(ctx context.Context, account, invoiceID string, p PaymentParams) (*Payment, error)
	ListPayments(ctx context.Context, account, invoiceID string, order SortOrder, p ListParams) (Page[Payment], error)
	SetPaymentStatus(ctx context.Context, account, invoiceID string, st PaymentStatus) (*Invoice, error)
	ListJournalEntries(ctx context.Context, account string, f JournalFilter, p ListParams) (Page[JournalEntry], error)

	// Lines and groups.
	CreateInvoiceLineItem(ctx context.Context, account, invoiceID string, p InvoiceLineItemParams) (*InvoiceLineItem, error)
	ListInvoiceLineItems(ctx context.Context, account, invoiceID string, f LineItemFilter, p ListParams) (Page[InvoiceLineItem], error)
	UpdateInvoiceLineItem(ctx context.Context, account, invoiceID, lineID string, p InvoiceLineItemParams) (*InvoiceLineItem, error)
	DeleteInvoiceLineItem(ctx context.Context, account, invoiceID, lineID string) error
	CreateInvoiceLineItemGroup(ctx context.Context, account, invoiceID string, p InvoiceLineItemGroupParams) (*InvoiceLineItemGroup, error)
	ListInvoiceLineItemGroups(ctx context.Context, account, invoiceID string, f LineItemFilter, p ListParams) (Page[InvoiceLineItemGroup], error)
	UpdateInvoiceLineItemGroup(ctx context.Context, account, invoiceID, groupID string, p InvoiceLineItemGroupParams) (*InvoiceLineItemGroup, error)
	DeleteInvoiceLineItemGroup(ctx context.Context, account, invoiceID, groupID string) error
}

// CreditNoteService is the operations on credit notes: the document, its lines
// and groups, its states and what it prints.
type CreditNoteService interface {
	// Credit notes.
	CreateCreditNote(ctx context.Context, account string, p CreditNoteParams) (*CreditNote, error)
	GetCreditNote(ctx context.Context, account, id string) (*CreditNote, error)
	ListCreditNotes(ctx context.Context, account string, f CreditNoteFilter, p ListParams) (Page[CreditNote], error)
	UpdateCreditNote(ctx context.Context, account, id string, p CreditNoteUpdateParams) (*CreditNote, error)
	MarkCreditNoteSent(ctx context.Context, account, id string) (*CreditNote, error)
	SendCreditNote(ctx context.Context, account, id string) (*CreditNote, error)
	DraftCreditNote(ctx context.Context, account, id string) (*CreditNote, error)
	FinalizeCreditNote(ctx context.Context, account, id string) (*CreditNote, error)
	VoidCreditNote(ctx context.Context, account, id string) (*CreditNote, error)
	PrintableCreditNote(ctx context.Context, account, id string) (*PrintableDocument, error)

	// Groups and lines.
	CreateCreditNoteLineItemGroup(ctx context.Context, account, creditNoteID string, p CreditNoteLineItemGroupParams) (*CreditNoteLineItemGroup, error)
	UpdateCreditNoteLineItemGroup(ctx context.Context, account, creditNoteID, groupID string, p CreditNoteLineItemGroupParams) (*CreditNoteLineItemGroup, error)
	DeleteCreditNoteLineItemGroup(ctx context.Context, account, creditNoteID, groupID string) error
	ListCreditNoteLineItemGroups(ctx context.Context, account, creditNoteID string, f LineItemFilter, p ListParams) (Page[CreditNoteLineItemGroup], error)
	CreateCreditNoteLineItem(ctx context.Context, account, creditNoteID string, p CreateCreditNoteLineItemParams) (*CreditNoteLineItem, error)
	UpdateCreditNoteLineItem(ctx context.Context, account, creditNoteID, lineID string, p CreditNoteLineItemParams) (*CreditNoteLineItem, error)
	DeleteCreditNoteLineItem(ctx context.Context, account, creditNoteID, lineID string) error
	ListCreditNoteLineItems(ctx context.Context, account, creditNoteID string, f LineItemFilter, p ListParams) (Page[CreditNoteLineItem], error)
}

// ScheduleService is the operations on billing schedules and the billing
// engine that turns them into invoices, and the entitlements their prices
// grant.
type ScheduleService interface {
	// Billing schedules.
	CreateBillingSchedule(ctx context.Context, account string, p BillingScheduleParams) (*BillingSchedule, error)
	GetBillingSchedule(ctx context.Context, account, id string) (*BillingSchedule, error)
	UpdateBillingSchedule(ctx context.Context, account, id string, p BillingScheduleParams) (*BillingSchedule, error)
	ActivateBillingSchedule(ctx context.Context, account, id string) (*BillingSchedule, error)
	ArchiveBillingSchedule(ctx context.Context, account, id string) (*BillingSchedule, error)
	CancelBillingSchedule(ctx context.Context, account, id string, p CancelBillingScheduleParams) (*BillingSchedule, error)
	SuspendBillingSchedule(ctx context.Context, account, id string) (*BillingSchedule, error)
	ListBillingSchedules(ctx context.Context, account string, f BillingScheduleFilter, p ListParams) (Page[BillingSchedule], error)

	// The billing engine.
	RunBilling(ctx context.Context, asOf time.Time) (*BillingRun, error)
	RunScheduledBilling(ctx context.Context, now time.Time, interval time.Duration) (*BillingRun, error)
	RunAccountBilling(ctx context.Context, account string, asOf *time.Time) (*BillingRun, error)
	PreviewInvoice(ctx context.Context, account, scheduleID string, asOf time.Time) (*UpcomingInvoice, error)
	ListLateUsage(ctx context.Context, account, scheduleID string, p ListParams) (Page[LateUsage], error)
	ListBillingRuns(ctx context.Context, account string, p ListParams) (Page[BillingRunRecord], error)
	GetBillingRun(ctx context.Context, account, id string) (*BillingRunRecord, error)

	// Entitlements.
	Entitlements(ctx context.Context, account, customerID string, at time.Time) ([]Entitlement, error)
	Entitlement(ctx context.Context, account, customerID, featureKey string, at time.Time) (*Entitlement, error)
}

// CreditService is the operations on credit grants, their ledger and balances.
type CreditService interface {
	CreateCreditGrant(ctx context.Context, account string, p CreditGrantParams) (*CreditGrant, error)
	GetCreditGrant(ctx context.Context, account, id string) (*CreditGrant, error)
	ListCreditGrants(ctx context.Context, account string, f CreditGrantFilter, p ListParams) (Page[CreditGrant], error)
	ListCustomerCreditGrants(ctx context.Context, account, customerID string, f CreditGrantFilter, p ListParams) (Page[CreditGrant], error)
	ListCreditTransactions(ctx context.Context, account, grantID string, order SortOrder, p ListParams) (Page[CreditTransaction], error)
	GetCreditBalances(ctx context.Context, account, customerID string, date *Date) (*CreditBalances, error)
	VoidCreditGrant(ctx context.Context, account, id string) (*CreditGrant, error)
	ApplyCredits(ctx context.Context, account, invoiceID string) (*Invoice, error)
}

// NotificationService is the operations on notification policies, the
// deliveries of the outbox, and the usage and spend alerts that notify.
type NotificationService interface {
	// Policies.
	CreateNotificationPolicy(ctx context.Context, account string, p CreateNotificationPolicyParams) (*NotificationPolicy, error)
	GetNotificationPolicy(ctx context.Context, account, id string) (*NotificationPolicy, error)
	ListNotificationPolicies(ctx context.Context, account string, f NotificationPolicyFilter, p ListParams) (Page[NotificationPolicy], error)
	DeleteNotificationPolicy(ctx context.Context, account, id string) (*NotificationPolicy, error)
	AddNotificationPolicyRecipients(ctx context.Context, account, id string, recipients []string) (*NotificationPolicy, error)
	RemoveNotificationPolicyRecipient(ctx context.Context, account, id, recipient string) (*NotificationPolicy, error)
	AddNotificationPolicyTypes(ctx context.Context, account, id string, types []NotificationType) (*NotificationPolicy, error)
	RemoveNotificationPolicyType(ctx context.Context, account, id string, typ NotificationType) (*NotificationPolicy, error)
	RotateNotificationPolicySecret(ctx context.Context, account, id string) (*NotificationPolicy, error)

	// Deliveries.
	ListDeliveries(ctx context.Context, account string, f DeliveryFilter, p ListParams) (Page[Delivery], error)
	GetDelivery(ctx context.Context, account, id string) (*Delivery, error)
	RetryDelivery(ctx context.Context, account, id string) (*Delivery, error)
	DeliveriesAbout(ctx context.Context, account string, ids []string) (map[string]DeliveryAbout, error)

	// Usage and spend alerts (docs/alerts.md); EvaluateAlerts is the
	// worker's, not an API operation.
	CreateUsageAlert(ctx context.Context, account string, p CreateUsageAlertParams) (*UsageAlert, error)
	GetUsageAlert(ctx context.Context, account, id string) (*UsageAlert, error)
	ListUsageAlerts(ctx context.Context, account string, f UsageAlertFilter, p ListParams) (Page[UsageAlert], error)
	DeleteUsageAlert(ctx context.Context, account, id string) (*UsageAlert, error)
}

// PaymentService is collection through a payment provider: the payments
// settings of the upstream surface, an invoice's collection, reminders,
// refunds, payment-method set-up and the provider's signed events.
type PaymentService interface {
	GetAccountPaymentSettings(ctx context.Context, account string) (*AccountPaymentSettings, error)
	UpdateAccountPaymentSettings(ctx context.Context, account, id string, p UpdateAccountPaymentSettingsParams) (*AccountPaymentSettings, error)
	CreatePaymentSettings(ctx context.Context, account, kind string, p PaymentSettingsParams) (any, error)
	GetPaymentSettings(ctx context.Context, account, kind, id string) (any, error)
	GetPaymentSettingsFor(ctx context.Context, account, kind, targetID string) (any, error)
	UpdatePaymentSettings(ctx context.Context, account, kind, id string, p PaymentSettingsParams) (any, error)
	DeletePaymentSettings(ctx context.Context, account, kind, id string) (any, error)
	GetInvoiceRenderSettings(ctx context.Context, account string) (*InvoiceRenderSettings, error)
	UpdateInvoiceRenderSettings(ctx context.Context, account, id string, p InvoiceRenderSettingsParams) (*InvoiceRenderSettings, error)
	GetInvoiceCollection(ctx context.Context, account, invoiceID string) (*InvoiceCollection, error)
	RetryCollectionNow(ctx context.Context, account, invoiceID string) (*InvoiceCollection, error)
	SendPaymentReminder(ctx context.Context, account, invoiceID string) (*Invoice, error)
	RefundCreditNote(ctx context.Context, account, creditNoteID string) (*Refund, error)
	PaymentMethodSetup(ctx context.Context, account, customerID string, p PaymentMethodSetupParams) (*HostedPage, error)
	HandleProviderWebhook(ctx context.Context, account string, payload []byte, header http.Header) (*ProviderEventResult, error)
}

// DocumentService is the operations on both kinds of document.
type DocumentService interface {
	InvoiceService
	CreditNoteService
}

// Services is every operation the API and the console offer: the
// aggregates' services and the store's health check. *Service implements
// it.
type Services interface {
	AccountService
	UsageService
	CatalogService
	DocumentService
	ScheduleService
	CreditService
	NotificationService
	PaymentService

	// Ping checks that the store answers (GET /readyz).
	Ping(ctx context.Context) error
}

// *Service is the one implementation of Services.
var _ Services = (*Service)(nil)
