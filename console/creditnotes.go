package console

import (
	"context"
	"net/http"

	"github.com/billingd/billing"
)

// creditNotes lists the account's credit notes, newest first, filtered by
// status (the API's filter).
func (c *Console) creditNotes(rq *request) error {
	return listByStatus(rq, "creditnotes", "Credit notes", invoiceStatuses,
		func(st billing.DocumentStatus, p billing.ListParams) (billing.Page[billing.CreditNote], error) {
			return c.svc.ListCreditNotes(rq.ctx, rq.account, billing.CreditNoteFilter{Status: st}, p)
		}, csvExport[billing.CreditNote]{"credit-notes", creditNoteCSV, creditNoteRow, nil})
}

// creditNotePage is the data of a credit note's page.
type creditNotePage struct {
	CreditNote *billing.CreditNote
	Actions    []creditNoteAction
}

// creditNote shows one credit note: its facts, its actions and the
// rendered document.
func (c *Console) creditNote(rq *request) error {
	cn, err := c.svc.GetCreditNote(rq.ctx, rq.account, rq.r.PathValue("id"))
	if err != nil {
		return err
	}
	data := creditNotePage{CreditNote: cn}
	for _, a := range creditNoteActions {
		if a.allowed(cn.Status) {
			data.Actions = append(data.Actions, a)
		}
	}
	return rq.render(http.StatusOK, "creditnote", creditNoteTitle(cn), data)
}

// creditNoteTitle names a credit note by its number, or as a draft.
func creditNoteTitle(cn *billing.CreditNote) string {
	if cn.CreditNoteNumber == "" {
		return "Draft credit note"
	}
	return "Credit note " + cn.CreditNoteNumber
}

// listed returns the items of a list's page with the links to its
// neighbours, and err.
func listed[T any](rq *request, page billing.Page[T], err error) ([]T, pager, error) {
	return page.Items, rq.pager(page.Before, page.After, page.TotalResultSize), err
}

// creditNoteAction is an action of the credit note page: one Service call,
// confirmed first.
type creditNoteAction struct {
	Name, Label                     string // URL name and button text
	heading, question, button, done string
	Danger                          bool
	allowed                         func(billing.DocumentStatus) bool
	call                            func(billing.CreditNoteService, context.Context, string, string) (*billing.CreditNote, error)
}

// editable reports whether a document status is DRAFT or IN_PROGRESS.
func editable(st billing.DocumentStatus) bool {
	return st == billing.StatusDraft || st == billing.StatusInProgress
}

// creditNoteActions are the credit note page's actions, in button order.
var creditNoteActions = []creditNoteAction{
	{Name: "finalize", Label: "Finalize…", heading: "Finalize credit note", button: "Finalize", done: "cn-finalized",
		question: "Finalizing gives the credit note its number, books it against its invoice and freezes it.",
		allowed:  editable, call: billing.CreditNoteService.FinalizeCreditNote},
	{Name: "send", Label: "Send…", heading: "Send credit note", button: "Send", done: "cn-sent",
		question: "The credit note is e-mailed to the customer's billing contacts, with its PDF (finalized first if needed).",
		allowed:  func(st billing.DocumentStatus) bool { return editable(st) || st == billing.StatusFinal },
		call:     billing.CreditNoteService.SendCreditNote},
	{Name: "void", Label: "Void…", heading: "Void credit note", button: "Void credit note", done: "cn-voided", Danger: true,
		question: "Voiding cancels the credit note for good and gives its amount back to the invoice. This cannot be undone.",
		allowed:  func(st billing.DocumentStatus) bool { return st != billing.StatusVoided },
		call:     billing.CreditNoteService.VoidCreditNote},
}

// creditNoteAction shows an action's confirmation (GET) or does it (POST);
// the Service's refusal is shown beside the form.
func (c *Console) creditNoteAction(rq *request) error {
	var a *creditNoteAction
	for i := range creditNoteActions {
		if creditNoteActions[i].Name == rq.r.PathValue("action") {
			a = &creditNoteActions[i]
		}
	}
	if a == nil {
		return notFound
	}
	cn, err := c.svc.GetCreditNote(rq.ctx, rq.account, rq.r.PathValue("id"))
	if err != nil {
		return err
	}
	page := Prefix + "credit-notes/" + cn.ID
	cf := confirmation{Heading: a.heading + " · " + creditNoteTitle(cn), Question: a.question, Action: page + "/" + a.Name,
		Button: a.button, Danger: a.Danger, Back: page}
	if rq.r.Method != http.MethodPost {
		return rq.confirm(cf, nil)
	}
	if _, err := a.call(c.svc, rq.ctx, rq.account, cn.ID); err != nil {
		return rq.confirm(cf, err)
	}
	return rq.done(page, a.done)
}
