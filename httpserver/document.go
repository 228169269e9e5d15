package httpserver

import "github.com/billingd/billing"

// documentRoutes mounts invoices (operations 16-18), credit notes
// (operations 9-15), their line items, line item groups and payments, and the
// journal (documents.md). Path parameters follow the naming rule of api: the
// specification's {id}, {invoice} and {creditnote} are :id, and the line or
// group of /invoices/{invoice}/line-items/{id} is :item.
func (a api) documentRoutes() {
	a.invoiceRoutes()
	a.invoiceLineRoutes()
	a.paymentRoutes()
	a.creditNoteRoutes()
	a.creditNoteLineRoutes()
	a.get("/journal-entries", 200, paged(func(c *call, p billing.ListParams) (any, error) {
		f := billing.JournalFilter{
			SourceID:   c.query.Get("sourceId"),
			SourceType: billing.JournalSourceType(c.query.Get("sourceType")),
			SortOrder:  sortOrder(c),
		}
		return a.svc.ListJournalEntries(c.ctx, c.account, f, p)
	}), listed("sourceId", "sourceType", "sortOrder"))
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
	a.post("/invoices", 201, body(func(c *call, p *billing.InvoiceParams) (any, error) {
		return a.svc.CreateInvoice(c.ctx, c.account, *p)
	}))
	a.get("/invoices", 200, paged(func(c *call, p billing.ListParams) (any, error) {
		f := billing.InvoiceFilter{
			CustomerID:        c.query.Get("customerId"),
			Status:            billing.DocumentStatus(c.query.Get("status")),
			BillingScheduleID: c.query.Get("billingScheduleId"),
			SortOrder:         sortOrder(c),
		}
		return a.svc.ListInvoices(c.ctx, c.account, f, p)
	}), listed("customerId", "status", "billingScheduleId", "sortOrder"))
	a.get("/invoices/:id", 200, func(c *call) (any, error) {
		return a.svc.GetInvoice(c.ctx, c.account, c.param("id"))
	})
	a.put("/invoices/:id", 200, body(func(c *call, p *billing.InvoiceUpdateParams) (any, error) {
		return a.svc.UpdateInvoice(c.ctx, c.account, c.param("id"), *p)
	}))
	a.delete("/invoices/:id", 200, func(c *call) (any, error) {
		return gone(c.param("id"), a.svc.DeleteInvoice(c.ctx, c.account, c.param("id")))
	})
	a.post("/invoices/:id/draft", 200, func(c *call) (any, error) {
		return a.svc.DraftInvoice(c.ctx, c.account, c.param("id"))
	})
	a.post("/invoices/:id/finalize", 200, func(c *call) (any, error) {
		return a.svc.FinalizeInvoice(c.ctx, c.account, c.param("id"))
	})
	a.post("/invoices/:id/send", 200, func(c *call) (any, error) {
		return a.svc.SendInvoice(c.ctx, c.account, c.param("id"))
	})
	a.post("/invoices/:id/void", 200, func(c *call) (any, error) {
		return a.svc.VoidInvoice(c.ctx, c.account, c.param("id"))
	})
	a.patch("/invoices/:id/sent", 200, body(func(c *call, p *billing.PatchSentInvoiceParams) (any, error) {
		return a.svc.PatchSentInvoice(c.ctx, c.account, c.param("id"), *p)
	}))
}

// invoiceLineRoutes mounts the line items (op 18 is the PUT) and line item
// groups of invoices.
func (a api) invoiceLineRoutes() {
	a.post("/invoices/:id/line-items", 201, body(func(c *call, p *billing.InvoiceLineItemParams) (any, error) {
		return a.svc.CreateInvoiceLineItem(c.ctx, c.account, c.param("id"), *p)
	}))
	a.get("/invoices/:id/line-items", 200, paged(func(c *call, p billing.ListParams) (any, error) {
		return a.svc.ListInvoiceLineItems(c.ctx, c.account, c.param("id"), byIndex(c), p)
	}), listed("sortOrder"))
	a.put("/invoices/:id/line-items/:item", 200, body(func(c *call, p *billing.InvoiceLineItemParams) (any, error) {
		return a.svc.UpdateInvoiceLineItem(c.ctx, c.account, c.param("id"), c.param("item"), *p)
	}))
	a.delete("/invoices/:id/line-items/:item", 200, func(c *call) (any, error) {
		return gone(c.param("item"), a.svc.DeleteInvoiceLineItem(c.ctx, c.account, c.param("id"), c.param("item")))
	})
	a.post("/invoices/:id/line-item-groups", 201, body(func(c *call, p *billing.InvoiceLineItemGroupParams) (any, error) {
		return a.svc.CreateInvoiceLineItemGroup(c.ctx, c.account, c.param("id"), *p)
	}))
	a.get("/invoices/:id/line-item-groups", 200, paged(func(c *call, p billing.ListParams) (any, error) {
		return a.svc.ListInvoiceLineItemGroups(c.ctx, c.account, c.param("id"), byIndex(c), p)
	}), listed("sortOrder"))
	a.put("/invoices/:id/line-item-groups/:item", 200, body(func(c *call, p *billing.InvoiceLineItemGroupParams) (any, error) {
		return a.svc.UpdateInvoiceLineItemGroup(c.ctx, c.account, c.param("id"), c.param("item"), *p)
	}))
	a.delete("/invoices/:id/line-item-groups/:item", 200, func(c *call) (any, error) {
		return gone(c.param("item"), a.svc.DeleteInvoiceLineItemGroup(c.ctx, c.account, c.param("id"), c.param("item")))
	})
}

// paymentStatusBody is the body of PUT /invoices/{id}/payment-status.
type paymentStatusBody struct {
	PaymentStatus billing.PaymentStatus `json:"paymentStatus"`
}

// paymentRoutes mounts the payments of an invoice and its payment status.
func (a api) paymentRoutes() {
	a.post("/invoices/:id/payments", 201, body(func(c *call, p *billing.PaymentParams) (any, error) {
		return a.svc.RecordPayment(c.ctx, c.account, c.param("id"), *p)
	}))
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
	a.post("/credit-notes", 201, body(func(c *call, p *billing.CreditNoteParams) (any, error) {
		return a.svc.CreateCreditNote(c.ctx, c.account, *p)
	}))
	a.get("/credit-notes", 200, paged(func(c *call, p billing.ListParams) (any, error) {
		f := billing.CreditNoteFilter{
			CustomerID: c.query.Get("customerId"),
			InvoiceID:  c.query.Get("invoiceId"),
			Status:     billing.DocumentStatus(c.query.Get("status")),
			SortOrder:  sortOrder(c),
		}
		return a.svc.ListCreditNotes(c.ctx, c.account, f, p)
	}), listed("customerId", "invoiceId", "status", "sortOrder"))
	a.get("/credit-notes/:id", 200, func(c *call) (any, error) {
		return a.svc.GetCreditNote(c.ctx, c.account, c.param("id"))
	})
	a.put("/credit-notes/:id", 200, body(func(c *call, p *billing.CreditNoteUpdateParams) (any, error) {
		return a.svc.UpdateCreditNote(c.ctx, c.account, c.param("id"), *p)
	}))
	a.post("/credit-notes/:id/mark-as-sent", 200, func(c *call) (any, error) {
		return a.svc.MarkCreditNoteSent(c.ctx, c.account, c.param("id"))
	})
	a.post("/credit-notes/:id/send", 200, func(c *call) (any, error) {
		return a.svc.SendCreditNote(c.ctx, c.account, c.param("id"))
	})
	a.post("/credit-notes/:id/finalize", 200, func(c *call) (any, error) {
		return a.svc.FinalizeCreditNote(c.ctx, c.account, c.param("id"))
	})
	a.post("/credit-notes/:id/draft", 200, func(c *call) (any, error) {
		return a.svc.DraftCreditNote(c.ctx, c.account, c.param("id"))
	})
	a.post("/credit-notes/:id/void", 200, func(c *call) (any, error) {
		return a.svc.VoidCreditNote(c.ctx, c.account, c.param("id"))
	})
}

// creditNoteLineRoutes mounts ops 12-15 and the rest of the line items and
// groups of credit notes. Op 13's body names its credit note again
// (creditNoteId); the Service refuses one that differs from the path's.
func (a api) creditNoteLineRoutes() {
	a.get("/credit-notes/:id/line-items", 200, paged(func(c *call, p billing.ListParams) (any, error) {
		return a.svc.ListCreditNoteLineItems(c.ctx, c.account, c.param("id"), byIndex(c), p)
	}), listed("sortOrder"))
	a.post("/credit-notes/:id/line-items", 201, body(func(c *call, p *billing.CreateCreditNoteLineItemParams) (any, error) {
		return a.svc.CreateCreditNoteLineItem(c.ctx, c.account, c.param("id"), *p)
	}))
	a.put("/credit-notes/:id/line-items/:item", 200, body(func(c *call, p *billing.CreditNoteLineItemParams) (any, error) {
		return a.svc.UpdateCreditNoteLineItem(c.ctx, c.account, c.param("id"), c.param("item"), *p)
	}))
	a.delete("/credit-notes/:id/line-items/:item", 200, func(c *call) (any, error) {
		return gone(c.param("item"), a.svc.DeleteCreditNoteLineItem(c.ctx, c.account, c.param("id"), c.param("item")))
	})
	a.get("/credit-notes/:id/line-item-groups", 200, paged(func(c *call, p billing.ListParams) (any, error) {
		return a.svc.ListCreditNoteLineItemGroups(c.ctx, c.account, c.param("id"), byIndex(c), p)
	}), listed("sortOrder"))
	a.post("/credit-notes/:id/line-item-groups", 201, body(func(c *call, p *billing.CreditNoteLineItemGroupParams) (any, error) {
		return a.svc.CreateCreditNoteLineItemGroup(c.ctx, c.account, c.param("id"), *p)
	}))
	a.put("/credit-notes/:id/line-item-groups/:item", 200, body(func(c *call, p *billing.CreditNoteLineItemGroupParams) (any, error) {
		return a.svc.UpdateCreditNoteLineItemGroup(c.ctx, c.account, c.param("id"), c.param("item"), *p)
	}))
	a.delete("/credit-notes/:id/line-item-groups/:item", 200, func(c *call) (any, error) {
		return gone(c.param("item"), a.svc.DeleteCreditNoteLineItemGroup(c.ctx, c.account, c.param("id"), c.param("item")))
	})
}
