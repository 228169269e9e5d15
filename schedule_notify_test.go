package billing_test

import (
	"testing"

	"github.com/billingd/billing"
	"github.com/google/go-cmp/cmp"
)

// TestScheduleNotifications runs the schedule operations and the engine and
// checks the notifications each records (docs/concepts.md, "Notifications"): one per operation, none for a no-op, and the
// engine's INVOICE_CREATED then INVOICE_ISSUED (with the e-mail) when it
// auto-issues.
func TestScheduleNotifications(t *testing.T) {
	t.Parallel()
	f := newSched(t)
	emitted := recordAll(t, f.svc, f.account)
	emitted() // the customer's creation
	price := f.fixed("Plan", "10.00", billing.CurrencyGBP)
	var sc *billing.BillingSchedule
	yes := true
	steps := []struct {
		name string
		run  func() error
		want []string
	}{
		{"Create", func() error {
			sc = f.schedule(f.customer, "2024-07-01", func(p *billing.BillingScheduleParams) { p.IsDraft, p.AutoIssueInvoices = &yes, &yes },
				phase("2024-07-01", price))
			return nil
		}, []string{"BILLING_SCHEDULE_CREATED"}},
		{"Activate", func() error { _, err := f.svc.ActivateBillingSchedule(f.ctx, f.account, sc.ID); return err },
			[]string{"BILLING_SCHEDULE_UPDATED"}},
		{"ActivateAgain", func() error { _, err := f.svc.ActivateBillingSchedule(f.ctx, f.account, sc.ID); return err }, nil},
		{"Run", func() error { _, err := f.svc.RunBilling(f.ctx, ts("2024-07-30T12:00:00Z")); return err },
			[]string{"INVOICE_CREATED", "EMAIL to ann@example.com", "INVOICE_ISSUED"}},
		{"RunAgain", func() error { _, err := f.svc.RunBilling(f.ctx, ts("2024-07-30T12:00:00Z")); return err }, nil},
		{"Suspend", func() error { _, err := f.svc.SuspendBillingSchedule(f.ctx, f.account, sc.ID); return err },
			[]string{"BILLING_SCHEDULE_UPDATED"}},
		{"SuspendRefused", func() error {
			if _, err := f.svc.SuspendBillingSchedule(f.ctx, f.account, sc.ID); billing.CodeOf(err) != billing.CodeInvalidState {
				t.Errorf("second suspend: %v", err)
			}
			return nil
		}, nil},
		{"Cancel", func() error {
			_, err := f.svc.CancelBillingSchedule(f.ctx, f.account, sc.ID, billing.CancelBillingScheduleParams{At: date("2024-07-31")})
			return err
		}, []string{"BILLING_SCHEDULE_UPDATED"}},
		{"Archive", func() error { _, err := f.svc.ArchiveBillingSchedule(f.ctx, f.account, sc.ID); return err },
			[]string{"BILLING_SCHEDULE_ARCHIVED"}},
		{"ArchiveAgain", func() error { _, err := f.svc.ArchiveBillingSchedule(f.ctx, f.account, sc.ID); return err }, nil},
	}
	for _, st := range steps {
		if err := st.run(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if diff := cmp.Diff(st.want, emitted()); diff != "" {
			t.Errorf("%s: notifications (-want +got):\n%s", st.name, diff)
		}
	}
}
