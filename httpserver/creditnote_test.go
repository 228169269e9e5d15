package httpserver

import (
	"bytes"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/billingd/billing"
)

// creditNote creates a GBP credit note for customer over HTTP with the
// extra JSON members of extra, and returns it as an object.
func (e *env) creditNote(customer, extra string) map[string]any {
	e.tb.Helper()
	return e.newDocument("/credit-notes", customer, extra, creditNoteAlways)
}

// creditNoteIn creates a credit note with one line in status st and
// returns its path.
func (e *env) creditNoteIn(customer, st string) string {
	e.tb.Helper()
	id := e.creditNote(customer, createdIn(st))["id"].(string)
	path := "/credit-notes/" + id
	e.create(path+"/line-items", cnLine(id, "Refund", "1", "1", "0", ""))
	e.moveDocTo(path, st)
	return path
}

// cnLine is an op 13 body for credit note cn.
func cnLine(cn, title, quantity, rate, taxRate, extra string) string {
	return lineBody(title, quantity, rate, taxRate, `"creditNoteId":"`+cn+`"`+moreMembers(extra))
}

// Long on purpose: one scenario walked in order; each step starts from the state the previous steps
// left, so pieces would repeat the set-up.
func TestCreditNoteLifecycleOverHTTP(t *testing.T) {
	t.Parallel()
	onEveryStore(t, func(t *testing.T, e *env) {
		cust := e.customer("Acme Ltd")
		inv := e.sentInvoice(cust)
		invLine := e.ids("/invoices/" + inv + "/line-items")[0]

		cn := e.creditNote(cust, `"invoiceId":"`+inv+`","memo":"refund","metadata":[{"key":"k","value":"v"}]`)
		id := cn["id"].(string)
		settings, _ := cn["settings"].(map[string]any)
		if cn["status"] != "DRAFT" || cn["invoiceId"] != inv || cn["invoiceNumber"] != "INV00001" || cn["memo"] != "refund" ||
			settings["generateCashCreditGrant"] != "DISABLED" || cn["serviceAccountId"] != e.account {
			t.Errorf("created = %v", cn)
		}
		wantTotals(t, "new credit note", cn, "0.00", "0.00", "0.00")
		if ids, _ := object(t, e.get("/invoices/"+inv), http.StatusOK, invoiceAlways)["creditNoteIds"].([]any); len(ids) != 1 || ids[0] != id {
			t.Errorf("invoice creditNoteIds = %v", ids)
		}
		path := "/credit-notes/" + id
		if got := object(t, e.get(path), http.StatusOK, creditNoteAlways); got["id"] != id {
			t.Errorf("GET = %v", got)
		}

		// Op 10: a partial update; absent fields are kept, null clears.
		up := object(t, e.put(path, `{"purchaseOrderNumber":"PO-7","settings":{"generateCashCreditGrant":"DISABLED"}}`),
			http.StatusOK, creditNoteAlways)
		settings, _ = up["settings"].(map[string]any)
		if up["purchaseOrderNumber"] != "PO-7" || up["memo"] != "refund" || settings["generateCashCreditGrant"] != "DISABLED" {
			t.Errorf("op 10 = %v", up)
		}
		up = object(t, e.put(path, `{"memo":null,"metadata":null}`), http.StatusOK, creditNoteAlways)
		if md, ok := up["metadata"].([]any); up["memo"] != nil || up["purchaseOrderNumber"] != "PO-7" || !ok || len(md) != 0 {
			t.Errorf("op 10 with nulls = %v", up)
		}

		// Op 15 and groups.
		grp := object(t, e.post(path+"/line-item-groups", `{"title":"Refunds"}`), http.StatusCreated,
			append([]string{"creditNoteId"}, groupAlways...))
		gid := grp["id"].(string)
		// Op 13.
		ln := object(t, e.post(path+"/line-items", cnLine(id, "Refund", "3", "0.335", "0.2",
			`"groupId":"`+gid+`","lineItemId":"`+invLine+`","revenueRecognitionMethod":"POINT_IN_TIME","servicePeriod":{"start":"2024-07-01","endInclusive":"2024-07-31"}`)),
			http.StatusCreated, creditNoteLineAlways)
		lid := ln["id"].(string)
		wantTotals(t, "credit note line", ln, "1.01", "0.20", "1.21")
		if ln["creditNoteId"] != id || ln["lineItemId"] != invLine || ln["groupId"] != gid || ln["index"] != 0.0 {
			t.Errorf("line = %v", ln)
		}
		// Op 12 and op 15 lists.
		if got := e.ids(path + "/line-items"); !slices.Equal(got, []string{lid}) {
			t.Errorf("op 12 = %v", got)
		}
		r := e.get(path + "/line-item-groups")
		wantStatus(t, r, http.StatusOK)
		if p := decode[page](t, r); len(p.Items) != 1 || p.Items[0]["id"] != gid {
			t.Errorf("op 15 = %s", r.body)
		} else {
			wantTotals(t, "group", p.Items[0], "1.01", "0.20", "1.21")
		}
		// Op 14: a full replace; groupId and lineItemId are kept.
		ln = object(t, e.put(path+"/line-items/"+lid, lineBody("Refund", "2", "1", "0.2", "")), http.StatusOK, creditNoteLineAlways)
		wantTotals(t, "op 14", ln, "2.00", "0.40", "2.40")
		if ln["servicePeriod"] != nil || ln["revenueRecognitionMethod"] != nil || ln["groupId"] != gid {
			t.Errorf("op 14 = %v", ln)
		}
		object(t, e.put(path+"/line-item-groups/"+gid, `{"title":"Refund group"}`), http.StatusOK, groupAlways)
		wantTotals(t, "credit note", object(t, e.get(path), http.StatusOK, creditNoteAlways), "2.00", "0.40", "2.40")

		// Op 11, twice: the second answer is the unchanged record.
		sent := e.post(path+"/mark-as-sent", "")
		got := object(t, sent, http.StatusOK, creditNoteAlways)
		if got["status"] != "SENT" || got["creditNoteNumber"] != "CN00001" || got["issueDate"] != "2024-07-30" {
			t.Errorf("op 11 = %v", got)
		}
		if again := e.post(path+"/mark-as-sent", ""); again.status != http.StatusOK || !bytes.Equal(again.body, sent.body) {
			t.Errorf("op 11 on a SENT credit note = %d %s", again.status, again.body)
		}
		wantBalancedJournal(t, e, id, 3)
		if got := object(t, e.get("/invoices/"+inv), http.StatusOK, invoiceAlways); got["amountDue"] != "9.60" {
			t.Errorf("invoice amountDue after the credit note = %v, want 9.60", got["amountDue"])
		}
		if got := e.ids("/credit-notes?invoiceId=" + inv + "&status=SENT"); !slices.Equal(got, []string{id}) {
			t.Errorf("list by invoice = %v", got)
		}

		v := object(t, e.post(path+"/void", ""), http.StatusOK, creditNoteAlways)
		if v["status"] != "VOIDED" {
			t.Errorf("void = %v", v["status"])
		}
		wantBalancedJournal(t, e, id, 6)

		other := e.creditNote(cust, `"status":"IN_PROGRESS"`)
		opath := "/credit-notes/" + other["id"].(string)
		if other["status"] != "IN_PROGRESS" || other["invoiceId"] != nil {
			t.Errorf("standalone = %v", other)
		}
		if got := object(t, e.post(opath+"/draft", ""), http.StatusOK, creditNoteAlways); got["status"] != "DRAFT" {
			t.Errorf("draft = %v", got["status"])
		}
		e.create(opath+"/line-items", cnLine(other["id"].(string), "Goodwill", "1", "5", "0", ""))
		if got := object(t, e.post(opath+"/finalize", ""), http.StatusOK, creditNoteAlways); got["status"] != "FINAL" || got["creditNoteNumber"] != "CN00002" {
			t.Errorf("finalize = %v", got)
		}
		if got := object(t, e.post(opath+"/send", ""), http.StatusOK, creditNoteAlways); got["status"] != "SENT" {
			t.Errorf("send = %v", got["status"])
		}
		if got := e.ids("/credit-notes?customerId=" + cust); !slices.Equal(got, []string{other["id"].(string), id}) {
			t.Errorf("credit notes newest first = %v", got)
		}
	})
}

func TestCreditNoteLineDeletesOverHTTP(t *testing.T) {
	t.Parallel()
	e := newCatalogEnv(t, 0)
	cust := e.customer("Acme Ltd")
	id, path := e.newDraftCreditNote(cust)
	gid := e.create(path+"/line-item-groups", `{"title":"G"}`)
	lid := e.create(path+"/line-items", cnLine(id, "x", "1", "1", "0", `"groupId":"`+gid+`"`))
	wantError(t, e.del(path+"/line-item-groups/"+gid), http.StatusConflict, billing.CodeInvalidState)
	r := e.del(path + "/line-items/" + lid)
	wantStatus(t, r, http.StatusOK)
	if got := decode[map[string]any](t, r); got["id"] != lid || got["deleted"] != true {
		t.Errorf("DELETE answer = %s", r.body)
	}
	wantStatus(t, e.del(path+"/line-item-groups/"+gid), http.StatusOK)
	wantIDs(t, e.ids(path+"/line-items"))
	wantIDs(t, e.ids(path+"/line-item-groups"))
	wantError(t, e.del(path+"/line-items/"+lid), http.StatusNotFound, billing.CodeNotFound)
	wantTotals(t, "emptied", object(t, e.get(path), http.StatusOK, creditNoteAlways), "0.00", "0.00", "0.00")
}

func TestCreditNoteInvalidStateOverHTTP(t *testing.T) {
	t.Parallel()
	e := newCatalogEnv(t, 1)
	cust := e.customer("Acme Ltd")
	draftInv := e.invoice(cust, "")["id"].(string)
	// A credit note needs a FINAL or SENT invoice.
	wantError(t, e.post("/credit-notes", `{"currency":"GBP","customerId":"`+cust+`","invoiceId":"`+draftInv+`"}`),
		http.StatusConflict, billing.CodeInvalidState)

	empty := "/credit-notes/" + e.creditNote(cust, "")["id"].(string)
	sentID := e.creditNote(cust, "")["id"].(string)
	sent := "/credit-notes/" + sentID
	line := e.create(sent+"/line-items", cnLine(sentID, "x", "1", "1", "0", ""))
	wantStatus(t, e.post(sent+"/send", ""), http.StatusOK)
	voided := "/credit-notes/" + e.creditNote(cust, "")["id"].(string)
	wantStatus(t, e.post(voided+"/void", ""), http.StatusOK)

	wantRefused(t, e, []req{
		{method: "POST", path: empty + "/finalize"}, // no lines
		{method: "POST", path: empty + "/mark-as-sent"},
		{method: "POST", path: empty + "/draft"}, // DRAFT already
		{method: "POST", path: sent + "/send"},
		{method: "POST", path: sent + "/finalize"},
		{method: "PUT", path: sent, body: `{"memo":"x"}`},
		{method: "POST", path: sent + "/line-items", body: cnLine(sentID, "x", "1", "1", "0", "")},
		{method: "PUT", path: sent + "/line-items/" + line, body: lineBody("x", "1", "1", "0", "")},
		{method: "DELETE", path: sent + "/line-items/" + line},
		{method: "POST", path: sent + "/line-item-groups", body: `{"title":"G"}`},
		{method: "POST", path: voided + "/mark-as-sent"},
		{method: "POST", path: voided + "/void"},
		{method: "POST", path: voided + "/send"},
	})
}

func TestCreditNoteBadRequestsOverHTTP(t *testing.T) {
	t.Parallel()
	e := newCatalogEnv(t, 0)
	cust := e.customer("Acme Ltd")
	id, path := e.newDraftCreditNote(cust)
	otherID := e.creditNote(cust, "")["id"].(string)
	for _, tc := range []struct {
		name, method, path, body string
		fields                   []string
	}{
		{"Op9Types", "POST", "/credit-notes",
			`{"currency":"GBP","customerId":"` + cust + `","billingPeriodStart":"yesterday","customerEmails":"a@b.test","status":"FINAL","creditNoteNumber":"CN1","settings":{"generateCashCreditGrant":"DISABLED"}}`,
			[]string{"billingPeriodStart", "customerEmails", "creditNoteNumber", "settings"}},
		{"Op9Rules", "POST", "/credit-notes", `{"customerId":"` + missingID + `","invoiceId":"` + missingID + `","status":"SENT"}`,
			[]string{"currency", "customerId", "invoiceId", "status"}},
		{"Op10SettingsValues", "PUT", path, `{"settings":{"generateCashCreditGrant":"MAYBE"}}`, []string{"settings.generateCashCreditGrant"}},
		{"Op10SettingsTypes", "PUT", path, `{"settings":{"generateCashCreditGrant":1,"other":true}}`,
			[]string{"settings.generateCashCreditGrant", "settings.other"}},
		{"Op10RefusesCurrencyCustomerInvoice", "PUT", path, `{"currency":"EUR","customerId":"` + cust + `","invoiceId":"` + missingID + `"}`,
			[]string{"currency", "customerId", "invoiceId"}},
		{"Op10NestedPaths", "PUT", path, `{"customerShippingAddress":{"line1":"x","town":"t","postcode":"p","country":7},"metadata":[{"key":"k"},{"value":true}],"accountingDate":"2024-7-1"}`,
			[]string{"customerShippingAddress.country", "metadata[1].value", "accountingDate"}},
		{"Op10SettingsCannotBeCleared", "PUT", path, `{"settings":null}`, []string{"settings"}},
		{"Op13CreditNoteIDMismatch", "POST", path + "/line-items", cnLine(otherID, "x", "1", "1", "0", ""), []string{"creditNoteId"}},
		{"Op13Rules", "POST", path + "/line-items",
			`{"quantity":"1","rate":"1","taxRate":"-0.1","externalIds":[],"revenueRecognitionMethod":"USAGE","revenueClassification":"LATER","rateDisplay":"x"}`,
			[]string{"creditNoteId", "title", "taxRate", "revenueRecognitionMethod", "revenueClassification", "rateDisplay"}},
		{"Op13BadDecimals", "POST", path + "/line-items",
			`{"creditNoteId":"` + id + `","title":"x","quantity":"1.0000000000001","rate":"+1","taxRate":0.2,"externalIds":[]}`,
			[]string{"quantity", "rate", "taxRate"}},
		{"Op14NoCreditNoteID", "PUT", path + "/line-items/" + missingID, cnLine(id, "x", "1", "1", "0", ""), []string{"creditNoteId"}},
		{"Op14Dates", "PUT", path + "/line-items/" + missingID,
			lineBody("x", "1", "1", "0", `"servicePeriod":{"start":"2024-01-01","endInclusive":"2024-02-31"}`), []string{"servicePeriod.endInclusive"}},
		{"GroupUnknownField", "POST", path + "/line-item-groups", `{"title":"G","index":1}`, []string{"index"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantError(t, e.do(req{method: tc.method, path: tc.path, body: tc.body}), http.StatusBadRequest,
				billing.CodeValidationFailed, tc.fields...)
		})
	}
	t.Run("BadListParameters", func(t *testing.T) {
		wantError(t, e.get("/credit-notes?limit=101"), http.StatusBadRequest, billing.CodeValidationFailed, "limit")
		wantError(t, e.get("/credit-notes?status=NEW"), http.StatusBadRequest, billing.CodeValidationFailed, "status")
		wantError(t, e.get(path+"/line-item-groups?sortOrder=sideways"), http.StatusBadRequest, billing.CodeValidationFailed, "sortOrder")
		wantError(t, e.get(path+"/line-items?before=x&after=y"), http.StatusBadRequest, billing.CodeValidationFailed, "before")
	})
}

func TestCreditNoteTenancyOverHTTP(t *testing.T) {
	t.Parallel()
	e := newCatalogEnv(t, 1)
	cust := e.customer("Acme Ltd")
	inv := e.sentInvoice(cust)
	id, path := e.newDraftCreditNote(cust)
	gid := e.create(path+"/line-item-groups", `{"title":"G"}`)
	lid := e.create(path+"/line-items", cnLine(id, "x", "1", "1", "0", ""))
	_, other := e.newAccount("other")
	for _, rq := range append([]req{
		{method: "GET", path: path},
		{method: "PUT", path: path, body: `{"memo":"x"}`},
		{method: "POST", path: path + "/mark-as-sent"},
		{method: "POST", path: path + "/send"},
		{method: "POST", path: path + "/finalize"},
		{method: "POST", path: path + "/draft"},
		{method: "POST", path: path + "/void"},
	}, lineRoutes(path, lid, gid, cnLine(id, "x", "1", "1", "0", ""))...) {
		rq.auth = other
		wantError(t, e.do(rq), http.StatusNotFound, billing.CodeNotFound)
	}
	// Another account's customer and invoice cannot be referenced.
	r := e.do(req{method: "POST", path: "/credit-notes", auth: other,
		body: `{"currency":"GBP","customerId":"` + cust + `","invoiceId":"` + inv + `"}`})
	wantError(t, r, http.StatusBadRequest, billing.CodeValidationFailed, "customerId", "invoiceId")
	if r := e.do(req{method: "GET", path: "/credit-notes", auth: other}); len(decode[page](t, r).Items) != 0 {
		t.Errorf("another account lists credit notes: %s", r.body)
	}
	// Nor can another account's invoice line be credited.
	theirCust := e.createAs(other, "/customers", `{"legalName":"Theirs"}`)
	theirCN := e.createAs(other, "/credit-notes", `{"currency":"GBP","customerId":"`+theirCust+`"}`)
	invLine := e.ids("/invoices/" + inv + "/line-items")[0]
	r = e.do(req{method: "POST", path: "/credit-notes/" + theirCN + "/line-items", auth: other,
		body: cnLine(theirCN, "x", "1", "1", "0", `"lineItemId":"`+invLine+`","groupId":"`+gid+`"`)})
	wantError(t, r, http.StatusBadRequest, billing.CodeValidationFailed, "lineItemId", "groupId")
	// A line of an invoice the credit note does not credit is refused too.
	wantError(t, e.post(path+"/line-items", cnLine(id, "x", "1", "1", "0", `"lineItemId":"`+invLine+`"`)),
		http.StatusBadRequest, billing.CodeValidationFailed, "lineItemId")
}

// TestCreditNoteStateTableOverHTTP runs every operation on a credit note in
// every status.
func TestCreditNoteStateTableOverHTTP(t *testing.T) {
	t.Parallel()
	e := newCatalogEnv(t, 0)
	cust := e.customer("Acme Ltd")
	ops := slices.Concat(docLifecycleOps, []docStateOp{
		{"MarkAsSent", "POST", "/mark-as-sent", "", []string{"IN_PROGRESS", "DRAFT", "FINAL", "SENT"}, 200, "SENT"},
		{"Send", "POST", "/send", "", []string{"IN_PROGRESS", "DRAFT", "FINAL"}, 200, "SENT"},
	})
	runDocStateTable(t, e, creditNoteAlways, func(st string) string { return e.creditNoteIn(cust, st) }, ops)
	t.Run("AddLine", func(t *testing.T) {
		for _, st := range docStatuses {
			path := e.creditNoteIn(cust, st)
			r := e.post(path+"/line-items", cnLine(strings.TrimPrefix(path, "/credit-notes/"), "x", "1", "1", "0", ""))
			if slices.Contains(editableDoc, st) {
				object(t, r, http.StatusCreated, creditNoteLineAlways)
			} else {
				wantError(t, r, http.StatusConflict, billing.CodeInvalidState)
			}
		}
	})
}

// TestCreditNoteOverCreditOverHTTP: the credit notes of an invoice can
// never exceed what is left of it.
func TestCreditNoteOverCreditOverHTTP(t *testing.T) {
	t.Parallel()
	e := newCatalogEnv(t, 1)
	cust := e.customer("Acme Ltd")
	inv := e.sentInvoice(cust) // gross 12.00
	first := e.creditNote(cust, `"invoiceId":"`+inv+`"`)["id"].(string)
	e.create("/credit-notes/"+first+"/line-items", cnLine(first, "Part", "1", "10", "0", ""))
	wantStatus(t, e.post("/credit-notes/"+first+"/mark-as-sent", ""), http.StatusOK)
	second := e.creditNote(cust, `"invoiceId":"`+inv+`"`)["id"].(string)
	e.create("/credit-notes/"+second+"/line-items", cnLine(second, "Too much", "1", "2.01", "0", ""))
	wantError(t, e.post("/credit-notes/"+second+"/mark-as-sent", ""), http.StatusConflict, billing.CodeInvalidState)
	got := object(t, e.get("/credit-notes/"+second), http.StatusOK, creditNoteAlways)
	if got["status"] != "DRAFT" || got["creditNoteNumber"] != nil {
		t.Errorf("a refused finalization changed the credit note: %v", got)
	}
	wantStatus(t, e.put("/credit-notes/"+second+"/line-items/"+e.ids("/credit-notes/" + second + "/line-items")[0],
		lineBody("Rest", "1", "2", "0", "")), http.StatusOK)
	if got := object(t, e.post("/credit-notes/"+second+"/mark-as-sent", ""), http.StatusOK, creditNoteAlways); got["creditNoteNumber"] != "CN00002" {
		t.Errorf("number after a refused finalization = %v, want CN00002 (none burnt)", got["creditNoteNumber"])
	}
	if got := object(t, e.get("/invoices/"+inv), http.StatusOK, invoiceAlways); got["amountDue"] != "0.00" {
		t.Errorf("fully credited invoice: amountDue %v", got["amountDue"])
	}
}

// TestConcurrentOverCreditOverHTTP marks 10 credit notes of 10.00 against
// one invoice of 12.00 as sent at once through a real HTTP server on bbolt:
// exactly one wins, so the invoice is never credited twice over.
func TestConcurrentOverCreditOverHTTP(t *testing.T) {
	t.Parallel()
	e := newCatalogEnv(t, 1)
	cust := e.customer("Acme Ltd")
	inv := e.sentInvoice(cust)
	var paths []string
	for range 10 {
		id := e.creditNote(cust, `"invoiceId":"`+inv+`"`)["id"].(string)
		e.create("/credit-notes/"+id+"/line-items", cnLine(id, "Refund", "1", "10", "0", ""))
		paths = append(paths, "/credit-notes/"+id+"/mark-as-sent")
	}
	count := map[int]int{}
	for _, r := range e.postAtOnce(paths) {
		count[r.status]++
		if r.status == http.StatusConflict {
			wantError(t, r, http.StatusConflict, billing.CodeInvalidState)
		}
	}
	if count[http.StatusOK] != 1 || count[http.StatusConflict] != 9 {
		t.Errorf("statuses = %v, want one 200 and nine 409", count)
	}
	if got := object(t, e.get("/invoices/"+inv), http.StatusOK, invoiceAlways); got["amountDue"] != "2.00" {
		t.Errorf("amountDue = %v, want 2.00", got["amountDue"])
	}
	if got := e.ids("/credit-notes?status=SENT"); len(got) != 1 {
		t.Errorf("SENT credit notes = %v", got)
	}
}

// newDraftCreditNote creates a DRAFT credit note without lines for
// customer and returns its id and path.
func (e *env) newDraftCreditNote(customer string) (id, path string) {
	e.tb.Helper()
	id = e.creditNote(customer, "")["id"].(string)
	return id, "/credit-notes/" + id
}
