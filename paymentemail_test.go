package billing_test

import (
	"mime"
	"strings"
	"testing"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
	"github.com/billingd/billing/dispatch"
	"github.com/billingd/billing/smtp"
)

// TestCustomerPaymentEmails: a failed charge and a reminder each reach the
// customer over SMTP, in the words package render writes from the facts
// queued (amount, failure, next attempt, due date), with no JSON attached.
func TestCustomerPaymentEmails(t *testing.T) {
	t.Parallel()
	e := newPayEnv(t)
	srv, mailer := loopbackMailer(t, smtp.Config{})
	d := dispatch.New(e.svc, dispatch.Config{Mailer: mailer})
	e.fake.Outcomes = []billing.ChargeStatus{billing.ChargeFailed}
	charged := e.autoChargedInvoice("20.00", billing.CurrencyUSD, true)
	e.collect()
	next := billing.DateOf(e.clock.Now().AddDate(0, 0, 3))
	reminded := e.autoChargedInvoice("10.00", billing.CurrencyUSD, false)
	e.clock.Set(reminded.DueDate.Time())
	e.collect()
	_, err := d.RunOnce(e.ctx)
	e.must(err)

	texts := map[string]string{}
	for _, m := range srv.Messages() {
		pm := billingtest.ParseMail(t, m.Data)
		subject, _ := new(mime.WordDecoder).DecodeHeader(pm.Header.Get("Subject"))
		if strings.Join(m.To, ",") != "ann@example.com" || pm.Attachment != nil && !strings.HasSuffix(pm.Filename, ".pdf") {
			t.Errorf("%q to %q with attachment %q", subject, m.To, pm.Filename)
		}
		texts[subject] = pm.Text
	}
	failed := "Payment of invoice " + charged.InvoiceNumber + " failed"
	if want := "Dear customer,\r\n\r\nwe could not collect 20.00 USD for invoice " + charged.InvoiceNumber +
		": card declined.\r\nWe will try again on " + next.String() + ".\r\n"; texts[failed] != want {
		t.Errorf("%q: text %q, want %q (all: %v)", failed, texts[failed], want, subjectsOf(texts))
	}
	reminder := "Reminder: invoice " + reminded.InvoiceNumber + ", 10.00 USD due " + reminded.DueDate.String()
	if want := "Dear customer,\r\n\r\ninvoice " + reminded.InvoiceNumber + " of " + reminded.IssueDate.String() + " is due on " +
		reminded.DueDate.String() + ": 10.00 USD remain to be paid.\r\n"; texts[reminder] != want {
		t.Errorf("%q: text %q, want %q (all: %v)", reminder, texts[reminder], want, subjectsOf(texts))
	}
}

func subjectsOf(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
