package httpserver

import "github.com/billingd/billing"

// documentRoutes mounts invoices (operations 16-18), credit notes
// (operations 9-15), their line items, line item groups and payments, and the
// journal (docs/concepts.md). Path parameters follow the naming rule of api: the
// specification's {id}, {invoice} and {creditnote} are :id, and the line or
// group of /invoices/{invoice}/line-items/{id} is :item.
func (a api) documentRoutes() {
	a.invoiceRoutes()
	a.invoiceLineRoutes()
	a.paymentRoutes()
	a.creditNoteRoutes()
	a.creditNoteLineRoutes()
	getList(a, "/journal-entries", a.svc.ListJournalEntries)
}

// deleted is the answer of a DELETE whose Service operation returns nothing:
// the id of the record that is gone.
type deleted struct {
	ID      string `json:"id"`
	Deleted bool   `json:"deleted"`
}

// gone answers a DELETE of id: its error, or the deleted body.
func gone(id string, err error) (any, error) {
	if err != nil {
		return nil, err
	}
	return deleted{ID: id, Deleted: true}, nil
}

// paged adapts a list op: it reads limit, after and before first.
func paged(fn func(c *call, p billing.ListParams) (any, error)) op {
	return func(c *call) (any, error) {
		p, err := c.listParams()
		if err != nil {
			return nil, err
		}
		return fn(c, p)
	}
}

// sortOrder is the sortOrder query parameter; the Service checks its value.
func sortOrder(c *call) billing.SortOrder { return billing.SortOrder(c.query.Get("sortOrder")) }

// byIndex is the filter of the line item and group lists.
func byIndex(c *call) billing.LineItemFilter { return billing.LineItemFilter{SortOrder: sortOrder(c)} }

// invoiceRoutes mounts the invoice header and its transitions, op 16 (send)
// and op 17 (PATCH of a SENT invoice) included.
func (a api) invoiceRoutes() {
	records(a, "/invoices", a.svc.CreateInvoice, a.svc.ListInvoices, a.svc.GetInvoice, a.svc.UpdateInvoice)
	a.delete("/invoices/:id", 200, deleteID(a.svc.DeleteInvoice))
	transitions(a, "/invoices", map[string]idOp[*billing.Invoice]{
		"draft": a.svc.DraftInvoice, "finalize": a.svc.FinalizeInvoice, "send": a.svc.SendInvoice, "void": a.svc.VoidInvoice,
	})
	a.patch("/invoices/:id/sent", 200, onIDWithBody(a.svc.PatchSentInvoice))
}

// invoiceLineRoutes mounts the line items (op 18 is the PUT) and line item
// groups of invoices.
func (a api) invoiceLineRoutes() {
	items(a, "/invoices/:id/line-items", a.svc.CreateInvoiceLineItem, a.svc.ListInvoiceLineItems,
		a.svc.UpdateInvoiceLineItem, a.svc.DeleteInvoiceLineItem)
	items(a, "/invoices/:id/line-item-groups", a.svc.CreateInvoiceLineItemGroup, a.svc.ListInvoiceLineItemGroups,
		a.svc.UpdateInvoiceLineItemGroup, a.svc.DeleteInvoiceLineItemGroup)
}

// paymentStatusBody is the body of PUT /invoices/{id}/payment-status.
type paymentStatusBody struct {
	PaymentStatus billing.PaymentStatus `json:"paymentStatus"`
}

// paymentRoutes mounts the payments of an invoice and its payment status.
func (a api) paymentRoutes() {
	a.post("/invoices/:id/payments", 201, onIDWithBody(a.svc.RecordPayment))
	a.get("/invoices/:id/payments", 200, paged(func(c *call, p billing.ListParams) (any, error) {
		return a.svc.ListPayments(c.ctx, c.account, c.param("id"), sortOrder(c), p)
	}), listed("sortOrder"))
	a.put("/invoices/:id/payment-status", 200, body(func(c *call, p *paymentStatusBody) (any, error) {
		return a.svc.SetPaymentStatus(c.ctx, c.account, c.param("id"), p.PaymentStatus)
	}))
}

// creditNoteRoutes mounts the credit note header and its transitions: op 9
// (create), op 10 (partial update; currency, customerId and invoiceId are not
// fields of its body, so the decoder refuses them) and op 11 (mark-as-sent).
func (a api) creditNoteRoutes() {
	records(a, "/credit-notes", a.svc.CreateCreditNote, a.svc.ListCreditNotes, a.svc.GetCreditNote, a.svc.UpdateCreditNote)
	transitions(a, "/credit-notes", map[string]idOp[*billing.CreditNote]{
		"mark-as-sent": a.svc.MarkCreditNoteSent, "send": a.svc.SendCreditNote, "finalize": a.svc.FinalizeCreditNote,
		"draft": a.svc.DraftCreditNote, "void": a.svc.VoidCreditNote,
	})
}

// creditNoteLineRoutes mounts ops 12-15 and the rest of the line items and
// groups of credit notes. Op 13's body names its credit note again
// (creditNoteId); the Service refuses one that differs from the path's.
func (a api) creditNoteLineRoutes() {
	items(a, "/credit-notes/:id/line-items", a.svc.CreateCreditNoteLineItem, a.svc.ListCreditNoteLineItems,
		a.svc.UpdateCreditNoteLineItem, a.svc.DeleteCreditNoteLineItem)
	items(a, "/credit-notes/:id/line-item-groups", a.svc.CreateCreditNoteLineItemGroup, a.svc.ListCreditNoteLineItemGroups,
		a.svc.UpdateCreditNoteLineItemGroup, a.svc.DeleteCreditNoteLineItemGroup)
}
