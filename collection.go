package billing

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// This file is collection: what happens to an invoice's money once it is
// issued on an account with a payment provider. Issuing records a
// collection (in the issuing transaction) and queues its first step; a
// collection run (RunCollection, looped by billingd serve) claims due steps
// in the store, performs them at the provider and records the outcome.
// docs/payments.md says what each state means.

// The tables of collection.
const (
	tableCollections     Table = "collections"       // account id / invoice id → collectionRecord
	tableCollectionQueue Table = "collection_queue"  // %016x unix seconds / account id / invoice id → empty
	tableProviderEvents  Table = "provider_events"   // account id / provider event id → handled-at timestamp
	tableProviderPayment Table = "provider_payments" // account id / provider payment reference → payment id
)

// The notification types of collection, beyond the specification's list.
const (
	NotificationPaymentSucceeded    NotificationType = "PAYMENT_SUCCEEDED"
	NotificationPaymentFailed       NotificationType = "PAYMENT_FAILED"
	NotificationInvoiceOverdue      NotificationType = "INVOICE_OVERDUE"
	NotificationPaymentReminderSent NotificationType = "PAYMENT_REMINDER_SENT"
)

// The invoice dunning statuses (the upstream's InvoiceDunningStatus).
const (
	DunningScheduled             = "SCHEDULED"
	DunningOverdueCheckScheduled = "OVERDUE_CHECK_SCHEDULED"
	DunningCompleted             = "COMPLETED"
	DunningFailed                = "FAILED"
	DunningNotRequired           = "NOT_REQUIRED"
)

// CollectionMethod is how an invoice's money is collected.
type CollectionMethod string

// The collection methods.
const (
	// ChargeAutomatically: the customer's saved payment method is charged
	// when the invoice is issued, and retried on the account's schedule.
	ChargeAutomatically CollectionMethod = "CHARGE_AUTOMATICALLY"
	// SendInvoice: the customer pays from the invoice (bank transfer or its
	// payment link) and gets reminders around the due date.
	SendInvoice CollectionMethod = "SEND_INVOICE"
)

// The steps of a collection.
const (
	stepCharge   = "CHARGE"
	stepLink     = "PAYMENT_LINK"
	stepReminder = "REMINDER"
)

// CollectionAttempt is one automatic charge of an invoice.
type CollectionAttempt struct {
	// Number is 1 for the charge at issue, then 2, 3, ... for retries.
	Number int `json:"number"`
	// At is when the attempt was made.
	At time.Time `json:"at"`
	// Status is SUCCEEDED, PENDING or FAILED.
	Status ChargeStatus `json:"status"`
	// Reference is the provider's payment (Stripe: the PaymentIntent).
	Reference string `json:"reference,omitempty"`
	// FailureMessage says why the charge failed, as the provider tells it; empty otherwise.
	FailureMessage string `json:"failureMessage,omitempty"`
}

// InvoiceCollection is the collection state of an invoice (GET
// /invoices/{id}/collection and the console).
type InvoiceCollection struct {
	// InvoiceID is billingd's invoice.
	InvoiceID string `json:"invoiceId"`
	// ServiceAccountID is the account that owns it.
	ServiceAccountID string `json:"serviceAccountId"`
	// Method is CHARGE_AUTOMATICALLY or SEND_INVOICE, fixed when the invoice was issued.
	Method CollectionMethod `json:"method"`
	// Provider is the payment provider (STRIPE; NONE without one).
	Provider PaymentProviderName `json:"provider"`
	// DunningStatus is the invoice's dunningStatus (SCHEDULED, OVERDUE_CHECK_SCHEDULED, COMPLETED, FAILED, NOT_REQUIRED).
	DunningStatus string `json:"dunningStatus"`
	// NextStep is CHARGE, PAYMENT_LINK or REMINDER, at NextAt; empty when
	// nothing more is planned.
	NextStep string `json:"nextStep,omitempty"`
	// NextAt is when NextStep is due; nil when nothing is planned.
	NextAt *time.Time `json:"nextAt,omitempty"`
	// Attempts are the automatic charges made, oldest first; empty for SEND_INVOICE.
	Attempts []CollectionAttempt `json:"attempts"`
	// RemindersSent counts the reminders e-mailed so far.
	RemindersSent int `json:"remindersSent"`
	// PaymentLink is the hosted payment page of the invoice, once made; empty otherwise.
	PaymentLink string `json:"paymentLink,omitempty"`
	// FirstFailureAt is when the first automatic charge failed: retries
	// are counted from it.
	FirstFailureAt *time.Time `json:"firstFailureAt,omitempty"`
	// Disputes are the disputes of the invoice's provider payments, oldest
	// first; absent when there were none.
	Disputes  []CollectionDispute `json:"disputes,omitempty"`
	UpdatedAt time.Time           `json:"updatedAt"`
}

// collectionRecord is a collection as stored: its state and the claim of
// the step a run is performing.
type collectionRecord struct {
	InvoiceCollection
	CustomerID string           `json:"customerId"`
	Claim      *collectionClaim `json:"claim,omitempty"`
	LinkGen    int              `json:"linkGen,omitempty"`
	// LinkRef is the provider's page behind PaymentLink, LinkExpiresAt
	// when it stops working (nil: never), LinkAmount what it asks for.
	LinkRef       string     `json:"linkRef,omitempty"`
	LinkExpiresAt *time.Time `json:"linkExpiresAt,omitempty"`
	LinkAmount    *Decimal   `json:"linkAmount,omitempty"`
}

// collectionClaim reserves one step for one run until Until. A claim whose
// run died is taken over after Until with the same Attempt, so the
// provider's idempotency key is the same and the charge is made once.
type collectionClaim struct {
	Holder  string    `json:"holder"`
	Until   time.Time `json:"until"`
	Step    string    `json:"step"`
	Attempt int       `json:"attempt"`
}

// collectionLease is how long a claimed step is reserved.
const collectionLease = 2 * time.Minute

func queueKey(at time.Time, account, invoiceID string) []byte {
	return key(fmt.Sprintf("%016x", at.Unix()), account, invoiceID)
}

// schedule moves the record's next step, keeping the queue in step.
func (c *collectionRecord) schedule(ctx context.Context, tx Tx, step string, at *time.Time) error {
	if c.NextAt != nil {
		if err := deleteIfPresent(ctx, tx, tableCollectionQueue, queueKey(*c.NextAt, c.ServiceAccountID, c.InvoiceID)); err != nil {
			return err
		}
	}
	c.NextStep, c.NextAt = step, at
	if at == nil {
		c.NextStep = ""
		return nil
	}
	return tx.Put(ctx, tableCollectionQueue, queueKey(*at, c.ServiceAccountID, c.InvoiceID), nil)
}

func (c *collectionRecord) save(ctx context.Context, tx Tx, now time.Time) error {
	c.UpdatedAt = now
	return putRecord(ctx, tx, tableCollections, key(c.ServiceAccountID, c.InvoiceID), c)
}

// hasProvider reports whether the account has a provider configured that
// the Service has an adapter for.
func (s *Service) hasProvider(ctx context.Context, tx Tx, account string) (PaymentProviderName, error) {
	for n := range s.payments.providers {
		ok, err := exists(ctx, tx, tablePaymentProviders, key(account, string(n)))
		if err != nil || ok {
			return n, err
		}
	}
	return "", nil
}

// startCollection is called by finalizeInvoice: on an account with a
// provider it records the invoice's collection and queues its first step,
// and sets dunningStatus (and the payment link display of the account's
// render settings). Without a provider it does nothing.
func (s *Service) startCollection(ctx context.Context, tx Tx, account string, r *invoiceRecord, now time.Time) error {
	provider, err := s.hasProvider(ctx, tx, account)
	if err != nil || provider == "" {
		return err
	}
	rs, err := s.renderSettingsTx(ctx, tx, account)
	if err != nil {
		return err
	}
	if rs.PaymentLinkDisplay == ShowPaymentLink {
		r.RenderSettings.PaymentLinkDisplay = ShowPaymentLink
	}
	if r.AmountDue.Sign() <= 0 {
		r.DunningStatus = DunningNotRequired
		return nil
	}
	c := &collectionRecord{InvoiceCollection: InvoiceCollection{InvoiceID: r.ID, ServiceAccountID: account,
		Method: SendInvoice, Provider: provider, Attempts: []CollectionAttempt{}}, CustomerID: r.CustomerID}
	if r.BillingScheduleID != "" {
		t, err := s.targetFor(ctx, tx, account, targetSchedule, r.BillingScheduleID)
		if err != nil {
			return err
		}
		if t != nil && t.AutoCharge && t.PaymentProvider != PaymentProviderNone {
			c.Method = ChargeAutomatically
		}
	}
	if charged, err := s.topUpCharged(ctx, tx, account, r); err != nil {
		return err
	} else if charged {
		c.Method = ChargeAutomatically
	}
	switch {
	case c.Method == ChargeAutomatically:
		r.DunningStatus = DunningScheduled
		err = c.schedule(ctx, tx, stepCharge, &now)
	case r.RenderSettings.PaymentLinkDisplay == ShowPaymentLink || slices.Contains(r.PaymentOptions, PaymentOptionLink):
		r.DunningStatus = DunningOverdueCheckScheduled
		err = c.schedule(ctx, tx, stepLink, &now)
	default:
		r.DunningStatus = DunningOverdueCheckScheduled
		_, err = s.scheduleReminder(ctx, tx, c, &r.Invoice)
	}
	if err != nil {
		return err
	}
	c.DunningStatus = r.DunningStatus
	return c.save(ctx, tx, now)
}

// scheduleReminder queues the next reminder of c on the account's
// reminder days, or the refresh of its payment link when the link expires
// first, or ends the plan when neither is left. It reports whether
// reminders remain.
func (s *Service) scheduleReminder(ctx context.Context, tx Tx, c *collectionRecord, inv *Invoice) (bool, error) {
	st, err := s.paymentSettingsTx(ctx, tx, c.ServiceAccountID)
	if err != nil {
		return false, err
	}
	step, at := "", (*time.Time)(nil)
	left := c.RemindersSent < len(st.ReminderDays)
	if left {
		t := inv.DueDate.AddDays(st.ReminderDays[c.RemindersSent]).Time()
		step, at = stepReminder, &t
	}
	if c.LinkRef != "" && c.LinkExpiresAt != nil && (at == nil || c.LinkExpiresAt.Before(*at)) {
		step, at = stepLink, c.LinkExpiresAt // the page is made anew when it expires
	}
	return left, c.schedule(ctx, tx, step, at)
}

// CollectionRun is what one RunCollection did.
type CollectionRun struct {
	// Steps is how many due steps it performed.
	Steps int `json:"steps"`
	// Succeeded and Failed count the charges.
	Succeeded int `json:"succeeded"`
	// Failed counts the charges that failed (retries follow on the account's retry days).
	Failed int `json:"failed"`
	// Errors counts steps that could not be performed (the provider
	// unreachable): they are tried again once their claim expires.
	Errors int `json:"errors"`
}

// CollectionStep is a claimed collection step: the invoice, the step
// (CHARGE, PAYMENT_LINK or REMINDER) and, for a charge, its attempt number.
type CollectionStep struct {
	// Account is the account of the invoice.
	Account string `json:"serviceAccountId"`
	// InvoiceID is billingd's invoice.
	InvoiceID string `json:"invoiceId"`
	// Step is CHARGE, PAYMENT_LINK or REMINDER.
	Step string `json:"step"`
	// Attempt is the charge attempt's number (1 at issue); 0 for other steps.
	Attempt int `json:"attempt,omitempty"`
	claim   collectionClaim
}

// RunCollection performs every collection step due at now (charges,
// retries, payment links, reminders), in batches. Each step is first
// claimed in the store (so that of several instances one performs it),
// then performed at the provider with an idempotency key derived from the
// invoice and attempt, then recorded. Safe to run from several processes
// at once; the loop around it is the embedding program's (billingd serve
// runs it every --billing-interval).
func (s *Service) RunCollection(ctx context.Context, now time.Time) (*CollectionRun, error) {
	run := &CollectionRun{}
	holder := s.newID()
	for {
		tasks, err := s.ClaimCollectionSteps(ctx, now, holder, 50)
		if err != nil || len(tasks) == 0 {
			return run, err
		}
		for _, t := range tasks {
			run.Steps++
			st, err := s.performStep(ctx, t, now)
			switch {
			case err != nil:
				run.Errors++
				s.log.Warn("collection step failed", "account", t.Account, "invoice", t.InvoiceID, "step", t.claim.Step, "err", err)
			case st == ChargeSucceeded:
				run.Succeeded++
			case st == ChargeFailed:
				run.Failed++
			}
		}
		if len(tasks) < 50 {
			return run, nil
		}
	}
}

// ClaimCollectionSteps claims up to n collection steps due at now for
// holder, in one transaction, and returns them; PerformCollectionStep
// performs one. A step another holder has claimed is skipped until its
// claim expires; a charge taken over keeps its attempt number.
func (s *Service) ClaimCollectionSteps(ctx context.Context, now time.Time, holder string, n int) ([]CollectionStep, error) {
	var tasks []CollectionStep
	end := []byte(fmt.Sprintf("%016x\x01", now.Unix()))
	err := s.store.Update(ctx, func(tx Tx) error {
		tasks = nil
		var keys [][]byte
		err := tx.Scan(ctx, tableCollectionQueue, Range{End: end}, func(k, _ []byte) error {
			keys = append(keys, bytes.Clone(k))
			return nil
		})
		if err != nil {
			return err
		}
		for _, k := range keys {
			parts := bytes.Split(k, []byte{keySep})
			account, invoiceID := string(parts[1]), string(parts[2])
			c, err := findRecord[collectionRecord](ctx, tx, tableCollections, key(account, invoiceID))
			if err != nil {
				return err
			}
			if c == nil || c.NextAt == nil || !bytes.Equal(queueKey(*c.NextAt, account, invoiceID), k) {
				if err := tx.Delete(ctx, tableCollectionQueue, k); err != nil { // stale
					return err
				}
				continue
			}
			if c.Claim != nil && c.Claim.Holder != holder && c.Claim.Until.After(now) {
				continue // another run performs it
			}
			claim := collectionClaim{Holder: holder, Until: now.Add(collectionLease), Step: c.NextStep}
			if c.NextStep == stepCharge {
				claim.Attempt = len(c.Attempts) + 1
			}
			c.Claim = &claim
			if err := c.save(ctx, tx, c.UpdatedAt); err != nil {
				return err
			}
			tasks = append(tasks, CollectionStep{Account: account, InvoiceID: invoiceID, Step: claim.Step, Attempt: claim.Attempt, claim: claim})
			if len(tasks) == n {
				break
			}
		}
		return nil
	})
	return tasks, err
}

// chargeKey is the provider idempotency key of an invoice's attempt.
func chargeKey(invoiceID string, attempt int) string {
	return fmt.Sprintf("billingd/%s/attempt/%d", invoiceID, attempt)
}

// PerformCollectionStep performs a claimed step at the provider and
// records its outcome (nothing is recorded when another holder has taken
// the step over since). The status is the charge's, empty for other steps.
func (s *Service) PerformCollectionStep(ctx context.Context, t CollectionStep, now time.Time) (ChargeStatus, error) {
	return s.performStep(ctx, t, now)
}

// performStep performs a claimed step at the provider and records it.
//
// Long on purpose: one switch over the three steps, each a read, a
// provider call and its record, reads best in one place.
func (s *Service) performStep(ctx context.Context, t CollectionStep, now time.Time) (ChargeStatus, error) {
	gw, _, err := s.openGateway(ctx, t.Account)
	if err != nil {
		return "", err
	}
	var inv *Invoice
	var c *collectionRecord
	var cust *paymentTarget
	var customer *Customer
	err = s.view(ctx, func(tx Tx) error {
		var err error
		if inv, err = s.getInvoiceTx(ctx, tx, t.Account, t.InvoiceID); err != nil {
			return err
		}
		if c, err = getRecord[collectionRecord](ctx, tx, tableCollections, key(t.Account, t.InvoiceID)); err != nil {
			return err
		}
		if customer, err = getOwned[Customer](ctx, tx, tableCustomers, t.Account, inv.CustomerID, "customer"); err != nil {
			return err
		}
		cust, err = s.targetFor(ctx, tx, t.Account, targetCustomer, inv.CustomerID)
		return err
	})
	if err != nil {
		return "", err
	}
	if inv.Status == StatusVoided || inv.AmountDue.Sign() <= 0 || inv.PaymentStatus == PaymentStatusUncollectible {
		if c.LinkRef != "" { // the page takes no more payment
			if err := gw.ClosePage(ctx, c.LinkRef); err != nil {
				return "", err
			}
		}
		return "", s.finishCollection(ctx, t, now)
	}
	switch t.claim.Step {
	case stepCharge:
		custRef := ""
		if cust != nil {
			custRef = cust.ProviderCustomerID
		}
		res := &ChargeResult{Status: ChargeFailed}
		if custRef == "" {
			if custRef, err = s.ensureProviderCustomer(ctx, gw, t.Account, customer); err != nil {
				return "", err
			}
		}
		pm := ""
		if cust != nil {
			pm = cust.DefaultPaymentMethod // saved through a set-up page
		}
		if pm == "" {
			if pm, err = gw.DefaultPaymentMethod(ctx, custRef); err != nil {
				return "", err
			}
		}
		if pm == "" {
			res.FailureMessage = "the customer has no saved payment method (send it POST /customers/{id}/payment-method-setup)"
		} else {
			res, err = gw.Charge(ctx, ChargeRequest{InvoiceID: inv.ID, InvoiceNumber: inv.InvoiceNumber, Attempt: t.claim.Attempt,
				Amount: inv.AmountDue, Currency: inv.Currency, CustomerRef: custRef, PaymentMethod: pm,
				IdempotencyKey: chargeKey(inv.ID, t.claim.Attempt)})
			if err != nil {
				return "", err
			}
		}
		return res.Status, s.recordCharge(ctx, t, res, now)
	case stepLink:
		custRef := ""
		if cust != nil {
			custRef = cust.ProviderCustomerID
		}
		if c.LinkRef != "" { // expired, or for another amount: closed before its successor is made
			if err := gw.ClosePage(ctx, c.LinkRef); err != nil {
				return "", err
			}
		}
		page, err := gw.PaymentPage(ctx, PaymentPageRequest{InvoiceID: inv.ID, InvoiceNumber: inv.InvoiceNumber, Amount: inv.AmountDue,
			Currency: inv.Currency, CustomerRef: custRef, IdempotencyKey: fmt.Sprintf("billingd/%s/link/%d", inv.ID, c.LinkGen+1)})
		if err != nil {
			return "", err
		}
		return "", s.recordLink(ctx, t, page, inv.AmountDue, now)
	case stepReminder:
		return "", s.sendReminder(ctx, t, now)
	}
	return "", fmt.Errorf("unknown collection step %q", t.claim.Step)
}

// claimed loads the collection of t inside tx when t's claim still holds
// it; nil when another run has taken it over since.
func claimed(ctx context.Context, tx Tx, t CollectionStep) (*collectionRecord, error) {
	c, err := getRecord[collectionRecord](ctx, tx, tableCollections, key(t.Account, t.InvoiceID))
	if err != nil || c.Claim == nil || c.Claim.Holder != t.claim.Holder {
		return nil, err
	}
	return c, nil
}

// claimedInvoice is claimed and the invoice of t; nil, nil when the claim
// no longer holds.
func claimedInvoice(ctx context.Context, tx Tx, t CollectionStep) (*collectionRecord, *invoiceRecord, error) {
	c, err := claimed(ctx, tx, t)
	if err != nil || c == nil {
		return nil, nil, err
	}
	r, err := loadDoc(ctx, tx, invoiceKind, t.Account, t.InvoiceID)
	if err != nil {
		return nil, nil, err
	}
	return c, r, nil
}

// finishCollection ends a collection whose invoice needs nothing more
// (paid, voided, uncollectible).
func (s *Service) finishCollection(ctx context.Context, t CollectionStep, now time.Time) error {
	return s.store.Update(ctx, func(tx Tx) error {
		c, err := claimed(ctx, tx, t)
		if err != nil || c == nil {
			return err
		}
		c.Claim = nil
		if err := c.schedule(ctx, tx, "", nil); err != nil {
			return err
		}
		r, err := loadDoc(ctx, tx, invoiceKind, t.Account, t.InvoiceID)
		if err != nil {
			return err
		}
		c.DunningStatus = DunningNotRequired
		if r.PaymentStatus == PaymentStatusPaid {
			c.DunningStatus = DunningCompleted
		}
		c.PaymentLink, c.LinkRef, c.LinkExpiresAt, c.LinkAmount = "", "", nil, nil // closed
		r.DunningStatus, r.PaymentLink = c.DunningStatus, ""
		if err := saveDoc(ctx, tx, invoiceKind, t.Account, r); err != nil {
			return err
		}
		return c.save(ctx, tx, now)
	})
}

// recordCharge records the outcome of a charge: a payment and COMPLETED,
// a pending attempt awaiting the webhook, or a failure and the next retry
// (or the final action).
func (s *Service) recordCharge(ctx context.Context, t CollectionStep, res *ChargeResult, now time.Time) error {
	return s.store.Update(ctx, func(tx Tx) error {
		c, err := claimed(ctx, tx, t)
		if err != nil || c == nil {
			return err
		}
		a := CollectionAttempt{Number: t.claim.Attempt, At: now, Status: res.Status, Reference: res.Reference, FailureMessage: res.FailureMessage}
		if i := slices.IndexFunc(c.Attempts, func(x CollectionAttempt) bool { return x.Number == a.Number }); i >= 0 {
			c.Attempts[i] = a
		} else {
			c.Attempts = append(c.Attempts, a)
		}
		c.Claim = nil
		switch res.Status {
		case ChargeSucceeded:
			return s.providerPaid(ctx, tx, c, res.Reference, res.Amount, now)
		case ChargePending:
			if err := c.schedule(ctx, tx, "", nil); err != nil {
				return err
			}
			return c.save(ctx, tx, now)
		}
		return s.chargeFailed(ctx, tx, c, res.FailureMessage, now)
	})
}

// providerPaid records money the provider collected for c's invoice: a
// payment (once per provider reference) with its journal, dunning
// COMPLETED, PAYMENT_SUCCEEDED.
func (s *Service) providerPaid(ctx context.Context, tx Tx, c *collectionRecord, ref string, amount Decimal, now time.Time) error {
	account := c.ServiceAccountID
	if err := tx.Insert(ctx, tableProviderPayment, key(account, ref), []byte(c.InvoiceID)); err != nil {
		if errors.Is(err, ErrConflict) {
			return c.save(ctx, tx, now) // recorded already (the webhook or the charge's answer came first)
		}
		return err
	}
	r, err := loadDoc(ctx, tx, invoiceKind, account, c.InvoiceID)
	if err != nil {
		return err
	}
	if amount.Cmp(r.AmountDue) > 0 {
		s.log.Warn("provider payment above the amount due; recorded up to it", "account", account, "invoice", r.ID, "reference", ref)
		amount = r.AmountDue
	}
	if amount.Sign() > 0 && r.Status.finalized() {
		today, err := s.dateOf(ctx, tx, account, "", now)
		if err != nil {
			return err
		}
		if today.Before(r.IssueDate) {
			today = r.IssueDate
		}
		method := string(c.Provider)
		if _, err := s.recordPaymentTx(ctx, tx, account, r.ID, PaymentParams{Amount: &amount, PaidAt: &today, Method: method, Reference: ref}, now); err != nil {
			return err
		}
		if r, err = loadDoc(ctx, tx, invoiceKind, account, c.InvoiceID); err != nil {
			return err
		}
	}
	if err := c.follow(ctx, tx, r, now); err != nil {
		return err
	}
	r.DunningStatus = c.DunningStatus
	if err := saveDoc(ctx, tx, invoiceKind, account, r); err != nil {
		return err
	}
	if err := c.save(ctx, tx, now); err != nil {
		return err
	}
	return s.emit(ctx, tx, account, NotificationPaymentSucceeded, &r.Invoice)
}

// chargeFailed schedules the next retry on the account's retry days, or
// takes the final action after the last; notifies per
// failureNotifications.
func (s *Service) chargeFailed(ctx context.Context, tx Tx, c *collectionRecord, message string, now time.Time) error {
	account := c.ServiceAccountID
	st, err := s.paymentSettingsTx(ctx, tx, account)
	if err != nil {
		return err
	}
	r, err := loadDoc(ctx, tx, invoiceKind, account, c.InvoiceID)
	if err != nil {
		return err
	}
	if c.FirstFailureAt == nil {
		c.FirstFailureAt = &now
	}
	retries := len(c.Attempts) - 1 // attempts after the first
	if retries < len(st.RetryDays) {
		next := c.FirstFailureAt.AddDate(0, 0, st.RetryDays[retries])
		c.DunningStatus = DunningScheduled
		if err := c.schedule(ctx, tx, stepCharge, &next); err != nil {
			return err
		}
	} else {
		c.DunningStatus = DunningFailed
		if err := c.schedule(ctx, tx, "", nil); err != nil {
			return err
		}
		if err := s.finalAction(ctx, tx, st.FinalAction, r, now); err != nil {
			return err
		}
	}
	r.DunningStatus, r.UpdatedAt = c.DunningStatus, now
	if err := saveDoc(ctx, tx, invoiceKind, account, r); err != nil {
		return err
	}
	if err := c.save(ctx, tx, now); err != nil {
		return err
	}
	if st.FailureNotifications.CustomerNotifications == SendNotifications && len(r.CustomerEmails) > 0 {
		n := paymentNotice(PaymentNoticeFailed, &r.Invoice)
		n.Failure = message
		if c.DunningStatus == DunningScheduled {
			next := DateOf(*c.NextAt)
			n.NextAttempt = &next
		}
		e := Email{To: slices.Clone(r.CustomerEmails), Payment: n}
		if err := s.queueEmail(ctx, tx, account, e); err != nil {
			return err
		}
	}
	if st.FailureNotifications.MerchantNotifications == SendNotifications {
		return s.emit(ctx, tx, account, NotificationPaymentFailed, &r.Invoice)
	}
	return nil
}

// finalAction applies the account's final action to an invoice whose last
// retry failed.
func (s *Service) finalAction(ctx context.Context, tx Tx, action DunningFinalAction, r *invoiceRecord, now time.Time) error {
	switch action {
	case FinalActionMarkUncollectible, FinalActionSuspendSchedule:
		r.PaymentStatus = PaymentStatusUncollectible
	}
	if action == FinalActionSuspendSchedule && r.BillingScheduleID != "" {
		// The schedule is suspended by archiving its runnable entry: the
		// engine bills it no more until it is updated (docs/payments.md).
		return deleteIfPresent(ctx, tx, tableBillingRunnable, key(r.ServiceAccountID, r.BillingScheduleID))
	}
	return nil
}

// sendReminder e-mails the customer a reminder of an unpaid invoice and
// emits PAYMENT_REMINDER_SENT (and INVOICE_OVERDUE once past the due
// date); then queues the next reminder.
func (s *Service) sendReminder(ctx context.Context, t CollectionStep, now time.Time) error {
	return s.store.Update(ctx, func(tx Tx) error {
		c, r, err := claimedInvoice(ctx, tx, t)
		if err != nil || c == nil {
			return err
		}
		c.Claim = nil
		if err := s.remind(ctx, tx, c, r, now); err != nil {
			return err
		}
		c.RemindersSent++
		left, err := s.scheduleReminder(ctx, tx, c, &r.Invoice)
		if err != nil {
			return err
		}
		if !left {
			c.DunningStatus = DunningFailed // the last reminder went unanswered
		}
		r.DunningStatus = c.DunningStatus
		if err := saveDoc(ctx, tx, invoiceKind, t.Account, r); err != nil {
			return err
		}
		return c.save(ctx, tx, now)
	})
}

// paymentNotice is the facts of a payment e-mail about inv.
func paymentNotice(kind PaymentNoticeKind, inv *Invoice) *PaymentNotice {
	return &PaymentNotice{Kind: kind, InvoiceNumber: inv.InvoiceNumber, IssueDate: inv.IssueDate,
		DueDate: inv.DueDate, AmountDue: inv.AmountDue, Currency: inv.Currency}
}

// remind queues one reminder e-mail and its notifications.
func (s *Service) remind(ctx context.Context, tx Tx, c *collectionRecord, r *invoiceRecord, now time.Time) error {
	today, err := s.dateOf(ctx, tx, r.ServiceAccountID, "", now)
	if err != nil {
		return err
	}
	n := paymentNotice(PaymentNoticeReminder, &r.Invoice)
	n.PaymentLink = c.PaymentLink
	if err := s.queueEmail(ctx, tx, r.ServiceAccountID, Email{To: slices.Clone(r.CustomerEmails), Payment: n}); err != nil {
		return err
	}
	if err := s.emit(ctx, tx, r.ServiceAccountID, NotificationPaymentReminderSent, &r.Invoice); err != nil {
		return err
	}
	if today.After(r.DueDate) {
		return s.emit(ctx, tx, r.ServiceAccountID, NotificationInvoiceOverdue, &r.Invoice)
	}
	return nil
}

// SendPaymentReminder sends a reminder of an unpaid FINAL or SENT invoice
// now (POST /invoices/{id}/send-payment-reminder). Returns not_found and
// invalid_state (not finalized, or nothing due).
func (s *Service) SendPaymentReminder(ctx context.Context, account, invoiceID string) (*Invoice, error) {
	now := s.clock()
	return mutate(ctx, s, account, func(tx Tx) (*Invoice, error) {
		r, err := loadDoc(ctx, tx, invoiceKind, account, invoiceID)
		if err != nil {
			return nil, err
		}
		if !r.Status.finalized() || r.AmountDue.Sign() <= 0 {
			return nil, Errorf(CodeInvalidState, "a reminder needs a FINAL or SENT invoice with an amount due; this one is %s with %s due", r.Status, r.AmountDue)
		}
		c, err := findRecord[collectionRecord](ctx, tx, tableCollections, key(account, invoiceID))
		if err != nil {
			return nil, err
		}
		if c == nil {
			c = &collectionRecord{InvoiceCollection: InvoiceCollection{InvoiceID: r.ID, ServiceAccountID: account, Method: SendInvoice, Provider: PaymentProviderNone, Attempts: []CollectionAttempt{}}}
		}
		if err := s.remind(ctx, tx, c, r, now); err != nil {
			return nil, err
		}
		c.RemindersSent++
		return &r.Invoice, c.save(ctx, tx, now)
	})
}

// GetInvoiceCollection returns an invoice's collection state. An invoice
// without one (no provider when it was issued) answers method SEND_INVOICE,
// provider NONE, dunning NOT_REQUIRED. Returns not_found.
func (s *Service) GetInvoiceCollection(ctx context.Context, account, invoiceID string) (*InvoiceCollection, error) {
	return read(ctx, s, func(tx Tx) (*InvoiceCollection, error) {
		if _, err := loadDoc(ctx, tx, invoiceKind, account, invoiceID); err != nil {
			return nil, err
		}
		c, err := findRecord[collectionRecord](ctx, tx, tableCollections, key(account, invoiceID))
		if err != nil {
			return nil, err
		}
		if c == nil {
			return &InvoiceCollection{InvoiceID: invoiceID, ServiceAccountID: account, Method: SendInvoice, Provider: PaymentProviderNone,
				DunningStatus: DunningNotRequired, Attempts: []CollectionAttempt{}}, nil
		}
		return &c.InvoiceCollection, nil
	})
}

// RetryCollectionNow brings an invoice's planned charge or reminder
// forward to now (the console's "retry now"); the next collection run
// performs it. Returns not_found and invalid_state when nothing is planned.
func (s *Service) RetryCollectionNow(ctx context.Context, account, invoiceID string) (*InvoiceCollection, error) {
	now := s.clock()
	return mutate(ctx, s, account, func(tx Tx) (*InvoiceCollection, error) {
		c, err := getRecord[collectionRecord](ctx, tx, tableCollections, key(account, invoiceID))
		if err != nil {
			return nil, lookupErr(err, "invoice collection")
		}
		if c.NextStep == "" {
			return nil, Errorf(CodeInvalidState, "nothing is planned for this invoice's collection (dunning %s)", c.DunningStatus)
		}
		if err := c.schedule(ctx, tx, c.NextStep, &now); err != nil {
			return nil, err
		}
		return &c.InvoiceCollection, c.save(ctx, tx, now)
	})
}
