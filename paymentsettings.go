package billing

import (
	"context"
	"encoding/json"
	"slices"
	"time"
)

// This file is the upstream API's payments settings surface: the account's
// payment settings, the payment settings of customers, billing schedules and
// invoices, and the invoices' render settings.

// FailureNotificationOption is SEND_NOTIFICATIONS or
// DO_NOT_SEND_NOTIFICATIONS.
type FailureNotificationOption string

// The failure notification options.
const (
	SendNotifications      FailureNotificationOption = "SEND_NOTIFICATIONS"
	DoNotSendNotifications FailureNotificationOption = "DO_NOT_SEND_NOTIFICATIONS"
)

// FailureNotifications say who hears of a failed payment: the customer (an
// e-mail to its invoice addresses) and the merchant (the PAYMENT_FAILED
// notification of its policies).
type FailureNotifications struct {
	// CustomerNotifications: e-mail the customer on each failed payment (SEND_NOTIFICATIONS, the default) or not.
	CustomerNotifications FailureNotificationOption `json:"customerNotifications"`
	// MerchantNotifications: emit PAYMENT_FAILED to the account's policies (SEND_NOTIFICATIONS, the default) or not.
	MerchantNotifications FailureNotificationOption `json:"merchantNotifications"`
}

// DunningFinalAction is what happens after the last retry of an automatic
// charge failed.
type DunningFinalAction string

// The final actions.
const (
	// FinalActionLeaveUnpaid leaves the invoice UNPAID (the default).
	FinalActionLeaveUnpaid DunningFinalAction = "LEAVE_UNPAID"
	// FinalActionMarkUncollectible sets paymentStatus UNCOLLECTIBLE.
	FinalActionMarkUncollectible DunningFinalAction = "MARK_UNCOLLECTIBLE"
	// FinalActionSuspendSchedule also suspends the invoice's billing
	// schedule (see docs/payments.md).
	FinalActionSuspendSchedule DunningFinalAction = "SUSPEND_BILLING_SCHEDULE"
)

// AccountPaymentSettings are an account's payment settings (GET
// /payments/settings). Its id is the account's id.
type AccountPaymentSettings struct {
	ID string `json:"id"`
	// ServiceAccountID is the account that owns it.
	ServiceAccountID string `json:"serviceAccountId"`
	// PaymentProvider is the provider configured for the account (STRIPE),
	// or NONE; read-only (billingd payments configure sets it).
	PaymentProvider PaymentProviderName `json:"paymentProvider"`
	// FailureNotifications say who hears of a failed payment.
	FailureNotifications FailureNotifications `json:"failureNotifications"`
	// RetryDays are the days after a failed automatic charge on which it
	// is retried (default 3, 5 and 7), ascending.
	RetryDays []int `json:"retryDays"`
	// ReminderDays are the days relative to the due date on which unpaid
	// SEND_INVOICE invoices get a reminder (default -3, 0 and 7), ascending.
	ReminderDays []int `json:"reminderDays"`
	// FinalAction is what follows the last failed retry.
	FinalAction DunningFinalAction `json:"finalAction"`
	UpdatedAt   *time.Time         `json:"updatedAt,omitempty"`
}

// UpdateAccountPaymentSettingsParams change an account's payment settings;
// absent fields stay.
type UpdateAccountPaymentSettingsParams struct {
	// FailureNotifications say who hears of a failed payment.
	FailureNotifications *FailureNotifications `json:"failureNotifications"`
	// RetryDays replace the retry days when given (ascending, 1 to 90).
	RetryDays []int `json:"retryDays"`
	// ReminderDays replace the reminder days when given (ascending, -90 to 90, relative to the due date).
	ReminderDays []int `json:"reminderDays"`
	// FinalAction replaces the final action when given.
	FinalAction DunningFinalAction `json:"finalAction"`
}

func defaultPaymentSettings(account string) *AccountPaymentSettings {
	return &AccountPaymentSettings{
		ID: account, ServiceAccountID: account, PaymentProvider: PaymentProviderNone,
		FailureNotifications: FailureNotifications{CustomerNotifications: SendNotifications, MerchantNotifications: SendNotifications},
		RetryDays:            []int{3, 5, 7}, ReminderDays: []int{-3, 0, 7}, FinalAction: FinalActionLeaveUnpaid,
	}
}

// paymentSettingsTx reads the account's settings, defaults filled in.
func (s *Service) paymentSettingsTx(ctx context.Context, tx Tx, account string) (*AccountPaymentSettings, error) {
	st, err := findRecord[AccountPaymentSettings](ctx, tx, tablePaymentSettings, []byte(account))
	if err != nil {
		return nil, err
	}
	if st == nil {
		st = defaultPaymentSettings(account)
	}
	st.PaymentProvider = PaymentProviderNone
	for n := range s.payments.providers {
		if ok, err := exists(ctx, tx, tablePaymentProviders, key(account, string(n))); err != nil {
			return nil, err
		} else if ok {
			st.PaymentProvider = n
		}
	}
	return st, nil
}

// GetAccountPaymentSettings returns the account's payment settings.
func (s *Service) GetAccountPaymentSettings(ctx context.Context, account string) (*AccountPaymentSettings, error) {
	return read(ctx, s, func(tx Tx) (*AccountPaymentSettings, error) { return s.paymentSettingsTx(ctx, tx, account) })
}

func checkDays(v *validator, field string, days []int, lo, hi int) {
	for i, d := range days {
		if d < lo || d > hi || i > 0 && d <= days[i-1] {
			v.add(field, "%s must be ascending whole days from %d to %d, at most 10 of them", field, lo, hi)
			return
		}
	}
	v.check(len(days) <= 10, field, "%s holds at most 10 days", field)
}

func checkFailureOption(v *validator, field string, o FailureNotificationOption) {
	v.check(o == SendNotifications || o == DoNotSendNotifications, field, "%s must be SEND_NOTIFICATIONS or DO_NOT_SEND_NOTIFICATIONS", field)
}

// UpdateAccountPaymentSettings changes the account's payment settings (PUT
// /payments/settings/{id}; id is the account's). Returns not_found and
// validation_failed naming the field.
func (s *Service) UpdateAccountPaymentSettings(ctx context.Context, account, id string, p UpdateAccountPaymentSettingsParams) (*AccountPaymentSettings, error) {
	if id != account {
		return nil, Errorf(CodeNotFound, "payment settings %s not found", id)
	}
	var v validator
	if f := p.FailureNotifications; f != nil {
		checkFailureOption(&v, "failureNotifications.customerNotifications", f.CustomerNotifications)
		checkFailureOption(&v, "failureNotifications.merchantNotifications", f.MerchantNotifications)
	}
	checkDays(&v, "retryDays", p.RetryDays, 1, 90)
	checkDays(&v, "reminderDays", p.ReminderDays, -90, 90)
	switch p.FinalAction {
	case "", FinalActionLeaveUnpaid, FinalActionMarkUncollectible, FinalActionSuspendSchedule:
	default:
		v.add("finalAction", "finalAction must be LEAVE_UNPAID, MARK_UNCOLLECTIBLE or SUSPEND_BILLING_SCHEDULE")
	}
	if err := v.err(); err != nil {
		return nil, err
	}
	now := s.clock()
	return mutate(ctx, s, account, func(tx Tx) (*AccountPaymentSettings, error) {
		st, err := s.paymentSettingsTx(ctx, tx, account)
		if err != nil {
			return nil, err
		}
		if p.FailureNotifications != nil {
			st.FailureNotifications = *p.FailureNotifications
		}
		if p.RetryDays != nil {
			st.RetryDays = slices.Clone(p.RetryDays)
		}
		if p.ReminderDays != nil {
			st.ReminderDays = slices.Clone(p.ReminderDays)
		}
		if p.FinalAction != "" {
			st.FinalAction = p.FinalAction
		}
		st.UpdatedAt = &now
		return st, putRecord(ctx, tx, tablePaymentSettings, []byte(account), st)
	})
}

// paymentTargetKind is what a payment settings record is about.
type paymentTargetKind string

const (
	targetCustomer paymentTargetKind = "customer"
	targetSchedule paymentTargetKind = "billing_schedule"
	targetInvoice  paymentTargetKind = "invoice"
)

// paymentTarget is the stored payment settings of a customer, a billing
// schedule or an invoice (one of each at most).
type paymentTarget struct {
	Kind               paymentTargetKind   `json:"kind"`
	ID                 string              `json:"id"`
	ServiceAccountID   string              `json:"serviceAccountId"`
	TargetID           string              `json:"targetId"`
	CustomerID         string              `json:"customerId,omitempty"`
	PaymentProvider    PaymentProviderName `json:"paymentProvider"`
	ProviderCustomerID string              `json:"providerCustomerId,omitempty"`
	AutoCharge         bool                `json:"autoCharge,omitempty"`
	// DefaultPaymentMethod (customers) is the payment method the last
	// completed set-up saved, PaymentMethodAt the provider's time of it.
	DefaultPaymentMethod string     `json:"defaultPaymentMethod,omitempty"`
	PaymentMethodAt      *time.Time `json:"paymentMethodAt,omitempty"`
	CreatedAt            time.Time  `json:"createdAt"`
	UpdatedAt            time.Time  `json:"updatedAt"`
}

// CustomerPaymentSettings link a customer to a payment provider.
type CustomerPaymentSettings struct {
	ID string `json:"id"`
	// ServiceAccountID is the account that owns it.
	ServiceAccountID string `json:"serviceAccountId"`
	// CustomerID is billingd's customer.
	CustomerID string `json:"customerId"`
	// PaymentProvider is NONE or STRIPE.
	PaymentProvider PaymentProviderName `json:"paymentProvider"`
	// ProviderCustomerID is the provider's customer (Stripe: cus_...):
	// given to link an existing one, else set when billingd creates it on
	// first need. Its default payment method is what automatic charges use.
	ProviderCustomerID string `json:"providerCustomerId,omitempty"`
	// DefaultPaymentMethod is the payment method the customer saved last
	// through a set-up page (POST /customers/{id}/payment-method-setup);
	// automatic charges use it, else the provider customer's default.
	// Read-only; empty until a set-up completed.
	DefaultPaymentMethod string    `json:"defaultPaymentMethod,omitempty"`
	CreatedAt            time.Time `json:"createdAt"`
	UpdatedAt            time.Time `json:"updatedAt"`
}

// BillingSchedulePaymentSettings say how a billing schedule's invoices are
// collected.
type BillingSchedulePaymentSettings struct {
	ID string `json:"id"`
	// ServiceAccountID is the account that owns it.
	ServiceAccountID string `json:"serviceAccountId"`
	// BillingScheduleID is the billing schedule.
	BillingScheduleID string `json:"billingScheduleId"`
	// PaymentProvider is NONE or STRIPE.
	PaymentProvider PaymentProviderName `json:"paymentProvider"`
	// AutoCharge: the schedule's invoices are CHARGE_AUTOMATICALLY (the
	// customer's saved payment method is charged when each is issued);
	// false: SEND_INVOICE.
	AutoCharge bool      `json:"autoCharge"`
	CreatedAt  time.Time `json:"createdAt"`
	UpdatedAt  time.Time `json:"updatedAt"`
}

// InvoicePaymentSettings say through which provider one invoice is
// collected.
type InvoicePaymentSettings struct {
	ID string `json:"id"`
	// ServiceAccountID is the account that owns it.
	ServiceAccountID string `json:"serviceAccountId"`
	// InvoiceID is billingd's invoice.
	InvoiceID string `json:"invoiceId"`
	// CustomerID is billingd's customer.
	CustomerID string `json:"customerId"`
	// PaymentProvider is NONE or STRIPE.
	PaymentProvider PaymentProviderName `json:"paymentProvider"`
	CreatedAt       time.Time           `json:"createdAt"`
	UpdatedAt       time.Time           `json:"updatedAt"`
}

// PaymentSettingsParams are the body of the create and update calls of the
// customers', billing schedules' and invoices' payment settings; the
// target id field is the one of the kind (create only).
type PaymentSettingsParams struct {
	// CustomerID is billingd's customer.
	CustomerID string `json:"customerId"`
	// BillingScheduleID is the billing schedule.
	BillingScheduleID string `json:"billingScheduleId"`
	// InvoiceID is billingd's invoice.
	InvoiceID string `json:"invoiceId"`
	// PaymentProvider is NONE or STRIPE.
	PaymentProvider PaymentProviderName `json:"paymentProvider"`
	// ProviderCustomerID (customers only) links an existing provider customer.
	ProviderCustomerID *string `json:"providerCustomerId"`
	// AutoCharge (billing schedules only).
	AutoCharge *bool `json:"autoCharge"`
}

func (t *paymentTarget) customer() *CustomerPaymentSettings {
	return &CustomerPaymentSettings{ID: t.ID, ServiceAccountID: t.ServiceAccountID, CustomerID: t.TargetID,
		PaymentProvider: t.PaymentProvider, ProviderCustomerID: t.ProviderCustomerID, DefaultPaymentMethod: t.DefaultPaymentMethod,
		CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt}
}

func (t *paymentTarget) schedule() *BillingSchedulePaymentSettings {
	return &BillingSchedulePaymentSettings{ID: t.ID, ServiceAccountID: t.ServiceAccountID, BillingScheduleID: t.TargetID,
		PaymentProvider: t.PaymentProvider, AutoCharge: t.AutoCharge, CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt}
}

func (t *paymentTarget) invoice() *InvoicePaymentSettings {
	return &InvoicePaymentSettings{ID: t.ID, ServiceAccountID: t.ServiceAccountID, InvoiceID: t.TargetID,
		CustomerID: t.CustomerID, PaymentProvider: t.PaymentProvider, CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt}
}

func (s *Service) checkTargetParams(kind paymentTargetKind, p *PaymentSettingsParams, create bool) error {
	var v validator
	field, id := map[paymentTargetKind]string{targetCustomer: "customerId", targetSchedule: "billingScheduleId", targetInvoice: "invoiceId"}[kind], ""
	switch kind {
	case targetCustomer:
		id = p.CustomerID
	case targetSchedule:
		id = p.BillingScheduleID
	case targetInvoice:
		id = p.InvoiceID
	}
	if create {
		v.check(id != "", field, "%s is required", field)
	}
	v.check(p.PaymentProvider == PaymentProviderNone || p.PaymentProvider == PaymentProviderStripe, "paymentProvider", "paymentProvider must be NONE or STRIPE")
	if p.ProviderCustomerID != nil {
		v.check(kind == targetCustomer, "providerCustomerId", "providerCustomerId is a field of customer payment settings only")
		v.check(len(*p.ProviderCustomerID) <= 255, "providerCustomerId", "providerCustomerId is longer than 255 characters")
		v.check(*p.ProviderCustomerID == "" || p.PaymentProvider != PaymentProviderNone, "providerCustomerId", "providerCustomerId needs a paymentProvider other than NONE")
	}
	if p.AutoCharge != nil {
		v.check(kind == targetSchedule, "autoCharge", "autoCharge is a field of billing schedule payment settings only")
		v.check(!*p.AutoCharge || p.PaymentProvider != PaymentProviderNone, "autoCharge", "autoCharge needs a paymentProvider other than NONE")
	}
	return v.err()
}

// CreatePaymentSettings creates the payment settings of a customer, a
// billing schedule or an invoice (kind "customer", "billing_schedule" or
// "invoice"); the answer is *CustomerPaymentSettings,
// *BillingSchedulePaymentSettings or *InvoicePaymentSettings. Returns
// validation_failed, not_found (the target), and conflict when the target
// has payment settings already.
func (s *Service) CreatePaymentSettings(ctx context.Context, account, kind string, p PaymentSettingsParams) (any, error) {
	k := paymentTargetKind(kind)
	if err := s.checkTargetParams(k, &p, true); err != nil {
		return nil, err
	}
	now, id := s.clock(), s.newID()
	return mutate(ctx, s, account, func(tx Tx) (any, error) {
		t := &paymentTarget{Kind: k, ID: id, ServiceAccountID: account, PaymentProvider: p.PaymentProvider, CreatedAt: now, UpdatedAt: now}
		switch k {
		case targetCustomer:
			t.TargetID = p.CustomerID
			if _, err := getOwned[Customer](ctx, tx, tableCustomers, account, p.CustomerID, "customer"); err != nil {
				return nil, err
			}
			if p.ProviderCustomerID != nil {
				t.ProviderCustomerID = *p.ProviderCustomerID
			}
		case targetSchedule:
			t.TargetID = p.BillingScheduleID
			if _, err := getOwned[json.RawMessage](ctx, tx, tableBillingSchedules, account, p.BillingScheduleID, "billing schedule"); err != nil {
				return nil, err
			}
			t.AutoCharge = p.AutoCharge != nil && *p.AutoCharge
		case targetInvoice:
			t.TargetID = p.InvoiceID
			inv, err := s.getInvoiceTx(ctx, tx, account, p.InvoiceID)
			if err != nil {
				return nil, err
			}
			t.CustomerID = inv.CustomerID
		}
		field := map[paymentTargetKind]string{targetCustomer: "customerId", targetSchedule: "billingScheduleId", targetInvoice: "invoiceId"}[k]
		if err := claimKey(ctx, tx, tablePaymentTargetIndex, key(account, kind, t.TargetID), id, field,
			"this "+string(k)+" has payment settings already; update them"); err != nil {
			return nil, err
		}
		return t.answer(), putRecord(ctx, tx, tablePaymentTargets, key(account, id), t)
	})
}

func (t *paymentTarget) answer() any {
	switch t.Kind {
	case targetCustomer:
		return t.customer()
	case targetSchedule:
		return t.schedule()
	}
	return t.invoice()
}

func (s *Service) targetTx(ctx context.Context, tx Tx, account string, k paymentTargetKind, id string) (*paymentTarget, error) {
	t, err := getRecord[paymentTarget](ctx, tx, tablePaymentTargets, key(account, id))
	if err == nil && t.Kind != k {
		err = ErrNotFound
	}
	return t, lookupErr(err, string(k)+" payment settings")
}

// GetPaymentSettings returns payment settings of kind by their id.
// Returns not_found.
func (s *Service) GetPaymentSettings(ctx context.Context, account, kind, id string) (any, error) {
	return read(ctx, s, func(tx Tx) (any, error) {
		t, err := s.targetTx(ctx, tx, account, paymentTargetKind(kind), id)
		if err != nil {
			return nil, err
		}
		return t.answer(), nil
	})
}

// GetPaymentSettingsFor returns the payment settings of kind of the
// billing schedule or invoice targetID. Returns not_found.
func (s *Service) GetPaymentSettingsFor(ctx context.Context, account, kind, targetID string) (any, error) {
	return read(ctx, s, func(tx Tx) (any, error) {
		t, err := s.targetFor(ctx, tx, account, paymentTargetKind(kind), targetID)
		if err == nil && t == nil {
			err = Errorf(CodeNotFound, "%s %s has no payment settings", kind, targetID)
		}
		if err != nil {
			return nil, err
		}
		return t.answer(), nil
	})
}

// targetFor returns the settings of kind of targetID, or nil.
func (s *Service) targetFor(ctx context.Context, tx Tx, account string, k paymentTargetKind, targetID string) (*paymentTarget, error) {
	id, err := tx.Get(ctx, tablePaymentTargetIndex, key(account, string(k), targetID))
	if err != nil {
		if err == ErrNotFound {
			return nil, nil
		}
		return nil, err
	}
	return getRecord[paymentTarget](ctx, tx, tablePaymentTargets, key(account, string(id)))
}

// UpdatePaymentSettings changes payment settings of kind: paymentProvider,
// and providerCustomerId (customers) or autoCharge (billing schedules).
// Returns not_found and validation_failed.
func (s *Service) UpdatePaymentSettings(ctx context.Context, account, kind, id string, p PaymentSettingsParams) (any, error) {
	k := paymentTargetKind(kind)
	if err := s.checkTargetParams(k, &p, false); err != nil {
		return nil, err
	}
	now := s.clock()
	return mutate(ctx, s, account, func(tx Tx) (any, error) {
		t, err := s.targetTx(ctx, tx, account, k, id)
		if err != nil {
			return nil, err
		}
		t.PaymentProvider, t.UpdatedAt = p.PaymentProvider, now
		if p.ProviderCustomerID != nil {
			t.ProviderCustomerID = *p.ProviderCustomerID
		}
		if p.AutoCharge != nil {
			t.AutoCharge = *p.AutoCharge
		}
		if t.PaymentProvider == PaymentProviderNone {
			t.AutoCharge = false
		}
		return t.answer(), putRecord(ctx, tx, tablePaymentTargets, key(account, id), t)
	})
}

// DeletePaymentSettings deletes payment settings of kind and answers them.
// Returns not_found.
func (s *Service) DeletePaymentSettings(ctx context.Context, account, kind, id string) (any, error) {
	k := paymentTargetKind(kind)
	return mutate(ctx, s, account, func(tx Tx) (any, error) {
		t, err := s.targetTx(ctx, tx, account, k, id)
		if err != nil {
			return nil, err
		}
		if err := tx.Delete(ctx, tablePaymentTargets, key(account, id)); err != nil {
			return nil, err
		}
		return t.answer(), deleteIfPresent(ctx, tx, tablePaymentTargetIndex, key(account, kind, t.TargetID))
	})
}

// The payment link display options of an invoice's render settings.
const (
	ShowPaymentLink = "SHOW_PAYMENT_LINK"
	HidePaymentLink = "HIDE_PAYMENT_LINK"
)

// InvoiceRenderSettings are the account's invoice render settings (GET
// /invoices/render-settings); id is the account's. Invoices finalized while
// paymentLinkDisplay is SHOW_PAYMENT_LINK carry a payment link when the
// account has a provider.
type InvoiceRenderSettings struct {
	ID string `json:"id"`
	// ServiceAccountID is the account that owns it.
	ServiceAccountID string `json:"serviceAccountId"`
	// PaymentLinkDisplay is SHOW_PAYMENT_LINK or HIDE_PAYMENT_LINK (the default).
	PaymentLinkDisplay string     `json:"paymentLinkDisplay"`
	UpdatedAt          *time.Time `json:"updatedAt,omitempty"`
}

// InvoiceRenderSettingsParams change the render settings.
type InvoiceRenderSettingsParams struct {
	// PaymentLinkDisplay is SHOW_PAYMENT_LINK or HIDE_PAYMENT_LINK (the default).
	PaymentLinkDisplay string `json:"paymentLinkDisplay"`
}

func (s *Service) renderSettingsTx(ctx context.Context, tx Tx, account string) (*InvoiceRenderSettings, error) {
	r, err := findRecord[InvoiceRenderSettings](ctx, tx, tableRenderSettings, []byte(account))
	if err == nil && r == nil {
		r = &InvoiceRenderSettings{ID: account, ServiceAccountID: account, PaymentLinkDisplay: HidePaymentLink}
	}
	return r, err
}

// GetInvoiceRenderSettings returns the account's invoice render settings.
func (s *Service) GetInvoiceRenderSettings(ctx context.Context, account string) (*InvoiceRenderSettings, error) {
	return read(ctx, s, func(tx Tx) (*InvoiceRenderSettings, error) { return s.renderSettingsTx(ctx, tx, account) })
}

// UpdateInvoiceRenderSettings sets the account's paymentLinkDisplay (PUT
// /invoices/render-settings/{id}). Returns not_found and
// validation_failed.
func (s *Service) UpdateInvoiceRenderSettings(ctx context.Context, account, id string, p InvoiceRenderSettingsParams) (*InvoiceRenderSettings, error) {
	if id != account {
		return nil, Errorf(CodeNotFound, "render settings %s not found", id)
	}
	if p.PaymentLinkDisplay != ShowPaymentLink && p.PaymentLinkDisplay != HidePaymentLink {
		return nil, FieldError("paymentLinkDisplay", "paymentLinkDisplay must be SHOW_PAYMENT_LINK or HIDE_PAYMENT_LINK")
	}
	now := s.clock()
	return mutate(ctx, s, account, func(tx Tx) (*InvoiceRenderSettings, error) {
		r, err := s.renderSettingsTx(ctx, tx, account)
		if err != nil {
			return nil, err
		}
		r.PaymentLinkDisplay, r.UpdatedAt = p.PaymentLinkDisplay, &now
		return r, putRecord(ctx, tx, tableRenderSettings, []byte(account), r)
	})
}
