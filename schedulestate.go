package billing

import (
	"context"
	"time"
)

// scheduleOp runs fn on the schedule id of account in one transaction. fn
// changes sc and returns the notification its change emits; it returns ""
// when it changed nothing, and then nothing is stored or emitted.
func (s *Service) scheduleOp(ctx context.Context, account, id string, fn func(tx Tx, sc *BillingSchedule, now time.Time) (NotificationType, error)) (*BillingSchedule, error) {
	now := s.clock()
	return mutate(ctx, s, account, func(tx Tx) (*BillingSchedule, error) {
		sc, err := s.getSchedule(ctx, tx, account, id)
		if err != nil {
			return nil, err
		}
		typ, err := fn(tx, sc, now)
		switch {
		case err != nil:
			return nil, err
		case typ == "":
			return sc, s.embedPrices(ctx, tx, sc)
		}
		if err := s.putSchedule(ctx, tx, sc); err != nil {
			return nil, err
		}
		return s.emitSchedule(ctx, tx, sc, typ)
	})
}

// activate moves sc to ACTIVE after checking that its customer is not
// archived and that every price is ACTIVE; it sets firstBillingDate once and
// closes an open suspension.
func (s *Service) activate(ctx context.Context, tx Tx, sc *BillingSchedule, now time.Time) error {
	c, err := s.getCustomer(ctx, tx, sc.ServiceAccountID, sc.CustomerID)
	if err != nil {
		return err
	}
	if c.ArchivedAt != nil {
		return Errorf(CodeInvalidState, "the schedule's customer is archived")
	}
	prices, err := s.schedulePrices(ctx, tx, sc)
	if err != nil {
		return err
	}
	for _, id := range scheduleDistinctPrices(sc) {
		if prices[id].Status != PriceStatusActive {
			return Errorf(CodeInvalidState, "price %s is %s: every price of an active schedule must be ACTIVE", id, prices[id].Status)
		}
	}
	if sc.FirstBillingDate == nil {
		if d, ok := firstBillingDate(sc, prices); ok {
			sc.FirstBillingDate = &d
		}
	}
	if n := len(sc.Suspensions); n > 0 && sc.Suspensions[n-1].End == nil {
		today, err := s.dateOf(ctx, tx, sc.ServiceAccountID, sc.CustomerID, now)
		if err != nil {
			return err
		}
		sc.Suspensions[n-1].End = &today
	}
	sc.Status, sc.UpdatedAt = ScheduleStatusActive, now
	return nil
}

// ActivateBillingSchedule (operation 19) moves a DRAFT, PENDING or
// SUSPENDED schedule to ACTIVE; an ACTIVE one is returned unchanged.
// Returns not_found, and invalid_state for a CANCELLED, COMPLETED or
// archived schedule, an archived customer or a price that is not ACTIVE.
func (s *Service) ActivateBillingSchedule(ctx context.Context, account, id string) (*BillingSchedule, error) {
	return s.scheduleOp(ctx, account, id, func(tx Tx, sc *BillingSchedule, now time.Time) (NotificationType, error) {
		if sc.ArchivedAt != nil {
			return "", Errorf(CodeInvalidState, "an archived schedule cannot be activated")
		}
		switch sc.Status {
		case ScheduleStatusActive:
			return "", nil
		case ScheduleStatusDraft, ScheduleStatusPending, ScheduleStatusSuspended:
		default:
			return "", Errorf(CodeInvalidState, "a %s schedule cannot be activated", sc.Status)
		}
		return NotificationBillingScheduleUpdated, s.activate(ctx, tx, sc, now)
	})
}

// ArchiveBillingSchedule sets archivedAt: the engine bills the schedule no
// more; its status is unchanged. Archiving twice changes nothing.
// Returns not_found.
func (s *Service) ArchiveBillingSchedule(ctx context.Context, account, id string) (*BillingSchedule, error) {
	return s.scheduleOp(ctx, account, id, func(tx Tx, sc *BillingSchedule, now time.Time) (NotificationType, error) {
		if sc.ArchivedAt != nil {
			return "", nil
		}
		sc.ArchivedAt, sc.UpdatedAt = &now, now
		if err := deleteIfPresent(ctx, tx, tableBillingRunnable, key(account, id)); err != nil {
			return "", err
		}
		return NotificationBillingScheduleArchived, nil
	})
}

// CancelBillingSchedule ends a schedule on p.At (inclusive; default
// today) and sets it CANCELLED; the engine still bills the periods up to the
// end, the last one prorated. Returns not_found, validation_failed when At
// is before the end of the last invoiced period or the start date, and
// invalid_state for a DRAFT, CANCELLED, COMPLETED or archived schedule.
func (s *Service) CancelBillingSchedule(ctx context.Context, account, id string, p CancelBillingScheduleParams) (*BillingSchedule, error) {
	return s.scheduleOp(ctx, account, id, func(tx Tx, sc *BillingSchedule, now time.Time) (NotificationType, error) {
		if sc.ArchivedAt != nil || (sc.Status != ScheduleStatusActive && sc.Status != ScheduleStatusSuspended && sc.Status != ScheduleStatusPending) {
			return "", Errorf(CodeInvalidState, "a %s schedule cannot be cancelled", sc.Status)
		}
		at, err := s.dateOf(ctx, tx, account, sc.CustomerID, now)
		if err != nil {
			return "", err
		}
		if p.At != nil {
			at = *p.At
		}
		billed, err := s.lastBilledDay(ctx, tx, sc)
		if err != nil {
			return "", err
		}
		switch {
		case !at.InBounds():
			return "", FieldError("at", "at %s", boundsMessage)
		case at.Before(sc.StartDate.AddDays(-1)):
			return "", FieldError("at", "at must not be before the day before the schedule's startDate (%s)", sc.StartDate)
		case !billed.IsZero() && at.Before(billed):
			return "", FieldError("at", "at must not be before the end of the last invoiced period (%s)", billed)
		case sc.EndDate != nil && at.After(*sc.EndDate):
			return "", FieldError("at", "at must not be after the schedule's endDate (%s)", *sc.EndDate)
		}
		sc.EndDate, sc.Status, sc.UpdatedAt = &at, ScheduleStatusCancelled, now
		return NotificationBillingScheduleUpdated, nil
	})
}

// SuspendBillingSchedule moves an ACTIVE schedule to SUSPENDED: periods
// that start while it is suspended are not billed. Activate resumes it.
// Returns not_found and invalid_state unless the schedule is ACTIVE.
func (s *Service) SuspendBillingSchedule(ctx context.Context, account, id string) (*BillingSchedule, error) {
	return s.scheduleOp(ctx, account, id, func(tx Tx, sc *BillingSchedule, now time.Time) (NotificationType, error) {
		if sc.Status != ScheduleStatusActive || sc.ArchivedAt != nil {
			return "", Errorf(CodeInvalidState, "only an ACTIVE schedule can be suspended; this one is %s", sc.Status)
		}
		today, err := s.dateOf(ctx, tx, account, sc.CustomerID, now)
		if err != nil {
			return "", err
		}
		sc.Suspensions = append(sc.Suspensions, Suspension{Start: today})
		sc.Status, sc.UpdatedAt = ScheduleStatusSuspended, now
		return NotificationBillingScheduleUpdated, nil
	})
}
