package render

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/billingd/billing"
)

// The plain-text e-mails: what a notification e-mail says, and the summary
// of a sent document that goes when no DocumentRenderer renders its message
// and PDF. The root package queues only a reference (the notification, the
// document); the words are written here, when the e-mail is sent. To is left
// for the caller.

// NotificationEmail writes the e-mail of a notification for an EMAIL
// policy's recipient: the key facts of the resource in plain text. The
// caller attaches the payload (Email.JSON).
func NotificationEmail(n *billing.Notification) *billing.Email {
	if e := thresholdEmail(n); e != nil {
		return e
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Notification %s\n\n", n.Type)
	fmt.Fprintf(&b, "Notification id: %s\nAccount: %s\nCreated at: %s\n", n.ID, n.ServiceAccountID, billing.FormatTimestamp(n.CreatedAt))
	var fields map[string]json.RawMessage
	if json.Unmarshal(n.Data, &fields) == nil {
		for _, f := range keyFacts {
			var v string
			if raw, ok := fields[f.field]; ok && json.Unmarshal(raw, &v) == nil && v != "" {
				fmt.Fprintf(&b, "%s: %s\n", f.label, v)
			}
		}
	}
	b.WriteString("\nThe notification is attached as JSON.\n")
	return &billing.Email{Subject: "billingd: " + string(n.Type), Text: b.String()}
}

// thresholdEmail writes the e-mail of a USAGE_THRESHOLD_REACHED or
// SPEND_THRESHOLD_REACHED notification: who reached what, in which
// period; nil for other notifications.
func thresholdEmail(n *billing.Notification) *billing.Email {
	var c billing.AlertCrossing
	switch n.Type {
	case billing.NotificationUsageThresholdReached, billing.NotificationSpendThresholdReached:
	default:
		return nil
	}
	if json.Unmarshal(n.Data, &c) != nil {
		return nil
	}
	var b strings.Builder
	what := "Usage of metric " + c.UsageMetricID
	subject := "billingd: usage threshold reached"
	if c.Kind == billing.UsageAlertSpend {
		what = "The amount due in " + string(c.Currency)
		subject = "billingd: spend threshold reached"
	}
	fmt.Fprintf(&b, "%s by customer %s reached %s: it is %s.\n\n", what, c.CustomerID, c.Threshold, c.Value)
	fmt.Fprintf(&b, "Alert: %s\nPeriod: %s to %s\nReached at: %s\n", c.AlertID,
		billing.FormatTimestamp(c.PeriodStart), billing.FormatTimestamp(c.PeriodEnd), billing.FormatTimestamp(c.ReachedAt))
	fmt.Fprintf(&b, "Notification id: %s\nAccount: %s\n", n.ID, n.ServiceAccountID)
	b.WriteString("\nThe alert notifies once per customer and period. The notification is attached as JSON.\n")
	return &billing.Email{Subject: subject, Text: b.String()}
}

// keyFacts are the fields of a resource a notification e-mail shows.
var keyFacts = []struct{ field, label string }{
	{"id", "Resource id"}, {"legalName", "Legal name"}, {"number", "Number"},
	{"invoiceNumber", "Invoice number"}, {"creditNoteNumber", "Credit note number"},
	{"status", "Status"}, {"currency", "Currency"}, {"netTotal", "Net total"},
	{"totalTax", "Total tax"}, {"grossTotal", "Gross total"}, {"dueDate", "Due date"},
	{"memo", "Memo"}, // what happened, for the engine's late usage corrections
}

// SummaryEmail writes the plain-text e-mail of a sent invoice or credit
// note: the amounts and dates, without the PDF and without JSON. The
// Dispatcher sends it when it has no DocumentRenderer.
func SummaryEmail(d *billing.PrintableDocument) *billing.Email {
	if d.Kind == billing.DocumentCreditNote {
		return creditNoteSummary(d.CreditNote)
	}
	return invoiceSummary(d.Invoice)
}

// invoiceSummary is SummaryEmail of an invoice.
func invoiceSummary(inv *billing.Invoice) *billing.Email {
	name := inv.CustomerLegalCompanyName
	if name == "" {
		name = "customer"
	}
	text := fmt.Sprintf("Dear %s,\n\nplease find invoice %s of %s.\n\nNet total: %s %s\nTax: %s %s\nTotal due: %s %s\nDue date: %s\n",
		name, inv.InvoiceNumber, inv.IssueDate, inv.NetTotal, inv.Currency, inv.TotalTax, inv.Currency,
		inv.AmountDue, inv.Currency, inv.DueDate)
	if inv.MerchantDetails != nil && inv.MerchantDetails.LegalCompanyName != "" {
		text += "\n" + inv.MerchantDetails.LegalCompanyName + "\n"
	}
	return &billing.Email{
		Subject: fmt.Sprintf("Invoice %s: %s %s due %s", inv.InvoiceNumber, inv.AmountDue, inv.Currency, inv.DueDate),
		Text:    text, Document: &billing.DocumentRef{Kind: billing.DocumentInvoice, ID: inv.ID},
	}
}

// creditNoteSummary is SummaryEmail of a credit note.
func creditNoteSummary(cn *billing.CreditNote) *billing.Email {
	text := fmt.Sprintf("Credit note %s of %s\n\nNet total: %s %s\nTax: %s %s\nTotal credited: %s %s\n",
		cn.CreditNoteNumber, cn.IssueDate, cn.NetTotal, cn.Currency, cn.TotalTax, cn.Currency, cn.GrossTotal, cn.Currency)
	if cn.InvoiceNumber != "" {
		text += "Credits invoice " + cn.InvoiceNumber + "\n"
	}
	return &billing.Email{
		Subject: fmt.Sprintf("Credit note %s: %s %s", cn.CreditNoteNumber, cn.GrossTotal, cn.Currency),
		Text:    text, Document: &billing.DocumentRef{Kind: billing.DocumentCreditNote, ID: cn.ID},
	}
}

// PaymentEmail writes a payment e-mail to a customer: a failed charge
// (with the next attempt, if one is scheduled) or a reminder of an unpaid
// invoice (with where to pay online). To is left for the caller.
func PaymentEmail(n *billing.PaymentNotice) *billing.Email {
	if n.Kind == billing.PaymentNoticeReminder {
		text := fmt.Sprintf("Dear customer,\n\ninvoice %s of %s is due on %s: %s %s remain to be paid.\n",
			n.InvoiceNumber, n.IssueDate, n.DueDate, n.AmountDue, n.Currency)
		if n.PaymentLink != "" {
			text += "Pay online: " + n.PaymentLink + "\n"
		}
		return &billing.Email{Subject: fmt.Sprintf("Reminder: invoice %s, %s %s due %s", n.InvoiceNumber, n.AmountDue, n.Currency, n.DueDate), Text: text}
	}
	text := fmt.Sprintf("Dear customer,\n\nwe could not collect %s %s for invoice %s: %s.\n", n.AmountDue, n.Currency, n.InvoiceNumber, n.Failure)
	if n.NextAttempt != nil {
		text += fmt.Sprintf("We will try again on %s.\n", *n.NextAttempt)
	}
	return &billing.Email{Subject: fmt.Sprintf("Payment of invoice %s failed", n.InvoiceNumber), Text: text}
}
