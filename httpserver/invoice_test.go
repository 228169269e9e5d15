package httpserver

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/billingd/billing"
)

// The "always" fields of the specification's resources, which
// every response must carry whatever the record's state.
var (
	invoiceAlways = []string{"id", "serviceAccountId", "status", "currency", "customerEmails",
		"customerBillingAddress", "customerShippingAddress", "customerId", "totalTax", "netTotal",
		"grossTotal", "metadata", "paymentStatus", "createdAt", "updatedAt", "creditNoteIds",
		"linkedServices", "accountingDate", "renderSettings", "isCustomerArchived"}
	invoiceLineAlways = []string{"id", "invoiceId", "title", "quantity", "rate", "taxRate", "index",
		"netTotal", "totalTax", "grossTotal", "rateDisplay", "externalIds"}
	creditNoteAlways = []string{"id", "serviceAccountId", "status", "currency", "customerId",
		"customerEmails", "customerBillingAddress", "customerShippingAddress", "totalTax", "netTotal",
		"grossTotal", "metadata", "linkedServices", "settings"}
	creditNoteLineAlways = []string{"id", "creditNoteId", "title", "quantity", "rate", "taxRate",
		"index", "netTotal", "totalTax", "grossTotal", "rateDisplay", "externalIds"}
	groupAlways = []string{"id", "title", "index", "netTotal", "totalTax", "grossTotal"}
)

// wantKeys fails unless the JSON object obj has every key of keys (present,
// whatever its value; "always" fields must not be omitted when empty).
func wantKeys(tb testing.TB, what string, obj map[string]any, keys []string) {
	tb.Helper()
	for _, k := range keys {
		if _, ok := obj[k]; !ok {
			tb.Errorf("%s has no %q: %v", what, k, obj)
		}
	}
}

// object decodes r, which must have status, as one JSON object and checks
// that it has the keys.
func object(tb testing.TB, r response, status int, keys []string) map[string]any {
	tb.Helper()
	wantStatus(tb, r, status)
	obj := decode[map[string]any](tb, r)
	wantKeys(tb, "response", obj, keys)
	return obj
}

// patch is a PATCH through do.
func (e *env) patch(path, body string) response {
	e.tb.Helper()
	return e.do(req{method: http.MethodPatch, path: path, body: body})
}

// customer creates a customer with an address and a billing contact over
// HTTP and returns its id.
func (e *env) customer(name string) string {
	e.tb.Helper()
	return e.create("/customers", `{"legalName":"`+name+`",
		"address":{"line1":"1 Road","town":"Leeds","postcode":"LS1 1AA","country":"GB"},
		"contacts":[{"name":"Ann","email":"ann@example.test","billingPreference":"PRIMARY"}]}`)
}

// invoice creates a GBP invoice for customer over HTTP, with the extra JSON
// members of extra (`"memo":"x"`, or ""), and returns it as an object.
func (e *env) invoice(customer, extra string) map[string]any {
	e.tb.Helper()
	return e.newDocument("/invoices", customer, extra, invoiceAlways)
}

// newDocument creates a GBP document in collection (/invoices,
// /credit-notes) for customer with the extra JSON members of extra, and
// returns it as an object with at least the members always.
func (e *env) newDocument(collection, customer, extra string, always []string) map[string]any {
	e.tb.Helper()
	r := e.post(collection, `{"currency":"GBP","customerId":"`+customer+`"`+moreMembers(extra)+`}`)
	return object(e.tb, r, http.StatusCreated, always)
}

// moreMembers returns extra (JSON members) with the comma that appends them
// to others, or "" when there are none.
func moreMembers(extra string) string {
	if extra == "" {
		return ""
	}
	return "," + extra
}

// invoiceIn creates an invoice with one line in status st (through the
// API's own transitions) and returns its path.
func (e *env) invoiceIn(customer, st string) string {
	e.tb.Helper()
	path := "/invoices/" + e.invoice(customer, createdIn(st))["id"].(string)
	e.create(path+"/line-items", lineBody("Plan", "1", "10", "0.2", ""))
	e.moveDocTo(path, st)
	return path
}

// lineBody is an invoice or credit note line body with the given decimals.
func lineBody(title, quantity, rate, taxRate, extra string) string {
	return `{"title":"` + title + `","quantity":"` + quantity + `","rate":"` + rate + `","taxRate":"` + taxRate +
		`","externalIds":[]` + moreMembers(extra) + `}`
}

// wantTotals fails unless obj has the three totals.
func wantTotals(tb testing.TB, what string, obj map[string]any, net, tax, gross string) {
	tb.Helper()
	if obj["netTotal"] != net || obj["totalTax"] != tax || obj["grossTotal"] != gross {
		tb.Errorf("%s totals = %v/%v/%v, want %s/%s/%s", what, obj["netTotal"], obj["totalTax"], obj["grossTotal"], net, tax, gross)
	}
}

// sentInvoice creates an invoice with one line (net 10.00, tax 2.00) and
// sends it; it returns the invoice id.
func (e *env) sentInvoice(customer string) string {
	e.tb.Helper()
	id := e.invoice(customer, "")["id"].(string)
	wantStatus(e.tb, e.post("/invoices/"+id+"/line-items", lineBody("Plan", "1", "10", "0.2", "")), http.StatusCreated)
	wantStatus(e.tb, e.post("/invoices/"+id+"/send", ""), http.StatusOK)
	return id
}

// Long on purpose: one scenario walked in order; each step starts from the state the previous steps
// left, so pieces would repeat the set-up.
func TestInvoiceLifecycleOverHTTP(t *testing.T) {
	t.Parallel()
	onEveryStore(t, func(t *testing.T, e *env) {
		cust := e.customer("Acme Ltd")
		inv := e.invoice(cust, `"memo":"first","purchaseOrderNumber":"PO-1","metadata":[{"key":"k","value":"v"}]`)
		id := inv["id"].(string)
		if inv["status"] != "DRAFT" || inv["paymentStatus"] != "UNPAID" || inv["serviceAccountId"] != e.account ||
			inv["memo"] != "first" || inv["createdAt"] != "2024-07-30T12:00:00Z" || inv["accountingDate"] != "2024-07-30" ||
			inv["isCustomerArchived"] != false {
			t.Errorf("created = %v", inv)
		}
		wantTotals(t, "new invoice", inv, "0.00", "0.00", "0.00")
		if addr, _ := inv["customerBillingAddress"].(map[string]any); addr["town"] != "Leeds" {
			t.Errorf("billing address not copied from the customer: %v", inv["customerBillingAddress"])
		}
		if rs, _ := inv["renderSettings"].(map[string]any); rs["paymentLinkDisplay"] != "HIDE_PAYMENT_LINK" {
			t.Errorf("renderSettings = %v", inv["renderSettings"])
		}
		for _, k := range []string{"creditNoteIds", "linkedServices"} {
			if l, ok := inv[k].([]any); !ok || len(l) != 0 {
				t.Errorf("%s = %#v, want []", k, inv[k])
			}
		}
		path := "/invoices/" + id
		got := object(t, e.get(path), http.StatusOK, invoiceAlways)
		if got["id"] != id || got["memo"] != "first" {
			t.Errorf("GET = %v", got)
		}

		up := object(t, e.put(path, `{"memo":"second","dueDate":"2024-09-01"}`), http.StatusOK, invoiceAlways)
		if up["memo"] != "second" || up["dueDate"] != "2024-09-01" || up["purchaseOrderNumber"] != nil {
			t.Errorf("PUT replaces the header: %v", up)
		}

		grp := object(t, e.post(path+"/line-item-groups", `{"title":"Usage","description":"metered"}`), http.StatusCreated,
			append([]string{"invoiceId"}, groupAlways...))
		gid := grp["id"].(string)
		if grp["index"] != 0.0 || grp["invoiceId"] != id {
			t.Errorf("group = %v", grp)
		}
		ln := object(t, e.post(path+"/line-items", lineBody("Calls", "3", "0.335", "0.2", `"groupId":"`+gid+`","description":"d"`)),
			http.StatusCreated, invoiceLineAlways)
		lid := ln["id"].(string)
		wantTotals(t, "line", ln, "1.01", "0.20", "1.21")
		if ln["index"] != 0.0 || ln["rateDisplay"] != "ABSOLUTE" || ln["groupId"] != gid || ln["quantity"] != "3" || ln["rate"] != "0.335" {
			t.Errorf("line = %v", ln)
		}
		second := object(t, e.post(path+"/line-items", lineBody("Seats", "2", "5", "0", "")), http.StatusCreated, invoiceLineAlways)
		if second["index"] != 1.0 {
			t.Errorf("second line index = %v", second["index"])
		}
		wantTotals(t, "invoice", object(t, e.get(path), http.StatusOK, invoiceAlways), "11.01", "0.20", "11.21")
		if got := e.ids(path + "/line-items"); !slices.Equal(got, []string{lid, second["id"].(string)}) {
			t.Errorf("lines by index = %v", got)
		}
		if got := e.ids(path + "/line-items?sortOrder=DESC"); len(got) != 2 || got[0] != second["id"] {
			t.Errorf("lines DESC = %v", got)
		}
		if got := e.ids(path + "/line-item-groups"); !slices.Equal(got, []string{gid}) {
			t.Errorf("groups = %v", got)
		}

		// Op 18: a full replace; the description left out is cleared.
		ln = object(t, e.put(path+"/line-items/"+lid, lineBody("Calls", "4", "0.335", "0.2", `"groupId":"`+gid+`"`)),
			http.StatusOK, invoiceLineAlways)
		wantTotals(t, "updated line", ln, "1.34", "0.27", "1.61")
		if ln["description"] != nil || ln["id"] != lid || ln["index"] != 0.0 {
			t.Errorf("op 18 answer = %v", ln)
		}
		grp = object(t, e.put(path+"/line-item-groups/"+gid, `{"title":"Metered"}`), http.StatusOK, groupAlways)
		if grp["title"] != "Metered" || grp["description"] != nil {
			t.Errorf("group update = %v", grp)
		}
		wantTotals(t, "group", grp, "1.34", "0.27", "1.61")
		wantStatus(t, e.del(path+"/line-items/"+second["id"].(string)), http.StatusOK)
		wantTotals(t, "invoice after delete", object(t, e.get(path), http.StatusOK, invoiceAlways), "1.34", "0.27", "1.61")

		fin := object(t, e.post(path+"/finalize", ""), http.StatusOK, invoiceAlways)
		if fin["status"] != "FINAL" || fin["invoiceNumber"] != "INV00001" || fin["issueDate"] != "2024-07-30" || fin["dueDate"] != "2024-09-01" {
			t.Errorf("finalized = %v", fin)
		}
		sent := object(t, e.post(path+"/send", ""), http.StatusOK, invoiceAlways)
		if sent["status"] != "SENT" || sent["invoiceNumber"] != "INV00001" {
			t.Errorf("sent = %v", sent)
		}

		pay := object(t, e.post(path+"/payments", `{"amount":"1.00","paidAt":"2024-07-30","method":"bank"}`), http.StatusCreated,
			[]string{"id", "invoiceId", "amount", "currency", "paidAt", "createdAt"})
		if pay["amount"] != "1.00" || pay["invoiceId"] != id {
			t.Errorf("payment = %v", pay)
		}
		if got := e.ids(path + "/payments"); !slices.Equal(got, []string{pay["id"].(string)}) {
			t.Errorf("payments = %v", got)
		}
		if got := object(t, e.get(path), http.StatusOK, invoiceAlways); got["paymentStatus"] != "PARTIALLY_PAID" || got["amountDue"] != "0.61" {
			t.Errorf("after a payment: paymentStatus %v, amountDue %v", got["paymentStatus"], got["amountDue"])
		}
		wantError(t, e.post(path+"/payments", `{"amount":"5.00","paidAt":"2024-07-30"}`), http.StatusConflict, billing.CodeInvalidState)
		st := object(t, e.put(path+"/payment-status", `{"paymentStatus":"UNCOLLECTIBLE"}`), http.StatusOK, invoiceAlways)
		if st["paymentStatus"] != "UNCOLLECTIBLE" {
			t.Errorf("payment status = %v", st["paymentStatus"])
		}
		wantError(t, e.put(path+"/payment-status", `{"paymentStatus":"PAID"}`), http.StatusBadRequest, billing.CodeValidationFailed, "paymentStatus")

		wantBalancedJournal(t, e, id, 3)
		wantBalancedJournal(t, e, pay["id"].(string), 2)

		if got := e.ids("/invoices?customerId=" + cust + "&status=SENT"); !slices.Equal(got, []string{id}) {
			t.Errorf("SENT invoices of the customer = %v", got)
		}
		draft := e.invoice(cust, `"status":"IN_PROGRESS"`)
		if draft["status"] != "IN_PROGRESS" {
			t.Errorf("created with status %v", draft["status"])
		}
		if got := e.ids("/invoices?status=IN_PROGRESS"); !slices.Equal(got, []string{draft["id"].(string)}) {
			t.Errorf("IN_PROGRESS invoices = %v", got)
		}
		if got := e.ids("/invoices"); !slices.Equal(got, []string{draft["id"].(string), id}) {
			t.Errorf("invoices newest first = %v", got)
		}
		dpath := "/invoices/" + draft["id"].(string)
		if got := object(t, e.post(dpath+"/draft", ""), http.StatusOK, invoiceAlways); got["status"] != "DRAFT" {
			t.Errorf("draft = %v", got["status"])
		}
		r := e.del(dpath)
		wantStatus(t, r, http.StatusOK)
		if got := decode[map[string]any](t, r); got["id"] != draft["id"] || got["deleted"] != true {
			t.Errorf("DELETE answer = %s", r.body)
		}
		wantError(t, e.get(dpath), http.StatusNotFound, billing.CodeNotFound)
	})
}

// wantBalancedJournal checks GET /journal-entries?sourceId=source: n
// entries whose debits equal their credits.
func wantBalancedJournal(tb testing.TB, e *env, source string, n int) {
	tb.Helper()
	r := e.get("/journal-entries?sourceId=" + url.QueryEscape(source))
	wantStatus(tb, r, http.StatusOK)
	p := decode[page](tb, r)
	if len(p.Items) != n {
		tb.Fatalf("%d journal entries for %s, want %d: %s", len(p.Items), source, n, r.body)
	}
	debit, credit := billing.MustDecimal("0"), billing.MustDecimal("0")
	for _, it := range p.Items {
		wantKeys(tb, "journal entry", it, []string{"id", "sourceType", "sourceId", "account", "debit", "credit", "currency", "createdAt"})
		if it["sourceId"] != source {
			tb.Errorf("entry of another source: %v", it)
		}
		d, err1 := billing.ParseDecimal(it["debit"].(string))
		c, err2 := billing.ParseDecimal(it["credit"].(string))
		if err1 != nil || err2 != nil {
			tb.Fatalf("entry amounts: %v", it)
		}
		debit, credit = debit.Add(d), credit.Add(c)
	}
	if debit.Cmp(credit) != 0 || debit.IsZero() {
		tb.Errorf("journal of %s: debits %s, credits %s", source, debit, credit)
	}
}

func TestInvoiceInvalidStateOverHTTP(t *testing.T) {
	t.Parallel()
	e := newCatalogEnv(t, 1)
	cust := e.customer("Acme Ltd")
	sent := "/invoices/" + e.sentInvoice(cust)
	lines := e.ids(sent + "/line-items")
	draft := "/invoices/" + e.invoice(cust, "")["id"].(string)
	grp := e.create(draft+"/line-item-groups", `{"title":"G"}`)
	e.create(draft+"/line-items", lineBody("In group", "1", "1", "0", `"groupId":"`+grp+`"`))
	voided := "/invoices/" + e.invoice(cust, "")["id"].(string)
	wantStatus(t, e.post(voided+"/void", ""), http.StatusOK)

	wantRefused(t, e, []req{
		{method: "POST", path: sent + "/send"},
		{method: "POST", path: sent + "/finalize"},
		{method: "POST", path: sent + "/draft"},
		{method: "PUT", path: sent, body: `{"memo":"x"}`},
		{method: "DELETE", path: sent},
		{method: "POST", path: sent + "/line-items", body: lineBody("x", "1", "1", "0", "")},
		{method: "PUT", path: sent + "/line-items/" + lines[0], body: lineBody("x", "1", "1", "0", "")},
		{method: "DELETE", path: sent + "/line-items/" + lines[0]},
		{method: "POST", path: sent + "/line-item-groups", body: `{"title":"G"}`},
		{method: "POST", path: voided + "/send"},
		{method: "POST", path: voided + "/void"},
		{method: "POST", path: voided + "/finalize"},
		{method: "PATCH", path: voided + "/sent", body: `{"memo":"x"}`},
		{method: "PATCH", path: draft + "/sent", body: `{"memo":"x"}`},
		{method: "POST", path: draft + "/draft"},
		{method: "POST", path: draft + "/payments", body: `{"amount":"1.00","paidAt":"2024-07-30"}`},
		{method: "PUT", path: draft + "/payment-status", body: `{"paymentStatus":"UNCOLLECTIBLE"}`},
		{method: "DELETE", path: draft + "/line-item-groups/" + grp}, // it still has a line
	})
}

// Long on purpose: a table of cases, one line each; its length is the cases, not logic.
func TestInvoiceBadRequestsOverHTTP(t *testing.T) {
	t.Parallel()
	e := newCatalogEnv(t, 0)
	cust := e.customer("Acme Ltd")
	id, path := e.newDraftInvoice(cust)
	for _, tc := range []struct {
		name, method, path, body string
		fields                   []string
	}{
		{"WrongTypesAndUnknownFields", "POST", "/invoices",
			`{"currency":"XXX","customerId":5,"dueDate":"2024-13-01","metadata":{"k":"v"},"id":"mine","netTotal":"1.00"}`,
			[]string{"currency", "customerId", "dueDate", "metadata", "id", "netTotal"}},
		{"NestedPaths", "POST", "/invoices",
			`{"currency":"GBP","customerId":"` + cust + `","customerBillingAddress":{"line1":1,"zip":"x"},"metadata":[{"key":"k","value":2}]}`,
			[]string{"customerBillingAddress.line1", "customerBillingAddress.zip", "metadata[0].value"}},
		{"MissingAndUnknownReferences", "POST", "/invoices", `{"customerId":"` + missingID + `","status":"SENT"}`,
			[]string{"currency", "customerId", "status"}},
		{"BadDates", "POST", "/invoices",
			`{"currency":"GBP","customerId":"` + cust + `","dueDate":"2024-02-30","accountingDate":"30/07/2024"}`,
			[]string{"dueDate", "accountingDate"}},
		{"BadEnums", "POST", "/invoices",
			`{"currency":"GBP","customerId":"` + cust + `","paymentOptions":["CHEQUE"],"status":"VOIDED"}`,
			[]string{"paymentOptions[0]", "status"}},
		{"BadDecimals", "POST", path + "/line-items",
			`{"title":"x","quantity":"1e3","rate":1.5,"taxRate":"0.2.1","externalIds":[{"key":1,"value":"v"}]}`,
			[]string{"quantity", "rate", "taxRate", "externalIds[0].key"}},
		{"LineRules", "POST", path + "/line-items",
			`{"quantity":"1","rate":"1","taxRate":"1.5","rateDisplay":"FANCY","groupId":"` + missingID + `"}`,
			[]string{"title", "taxRate", "rateDisplay", "groupId", "externalIds"}},
		{"Op18Rules", "PUT", path + "/line-items/" + missingID, `{"title":"x","quantity":"1","rate":"1","taxRate":"0","externalIds":[],"index":3}`,
			[]string{"index"}},
		{"GroupWithoutTitle", "POST", path + "/line-item-groups", `{"description":"d"}`, []string{"title"}},
		{"PaymentFields", "POST", path + "/payments", `{"amount":"-1","paidAt":"tomorrow"}`, []string{"paidAt"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantError(t, e.do(req{method: tc.method, path: tc.path, body: tc.body}), http.StatusBadRequest,
				billing.CodeValidationFailed, tc.fields...)
		})
	}
	t.Run("InvalidJSON", func(t *testing.T) {
		wantError(t, e.post("/invoices", `{"currency":`), http.StatusBadRequest, CodeInvalidJSON)
		wantError(t, e.post("/invoices", `[]`), http.StatusBadRequest, CodeInvalidJSON)
	})
	t.Run("NotJSON", func(t *testing.T) {
		r := e.do(req{method: "POST", path: "/invoices", body: "currency=GBP", contentType: "application/x-www-form-urlencoded"})
		wantError(t, r, http.StatusUnsupportedMediaType, CodeUnsupportedMediaType)
	})
	t.Run("BadListParameters", func(t *testing.T) {
		wantError(t, e.get("/invoices?limit=0"), http.StatusBadRequest, billing.CodeValidationFailed, "limit")
		wantError(t, e.get("/invoices?limit=x"), http.StatusBadRequest, billing.CodeValidationFailed, "limit")
		wantError(t, e.get("/invoices?sortOrder=UP"), http.StatusBadRequest, billing.CodeValidationFailed, "sortOrder")
		wantError(t, e.get("/invoices?status=PAID"), http.StatusBadRequest, billing.CodeValidationFailed, "status")
		wantError(t, e.get("/invoices?after=forged"), http.StatusBadRequest, billing.CodeValidationFailed, "after")
		wantError(t, e.get(path+"/line-items?sortOrder=up"), http.StatusBadRequest, billing.CodeValidationFailed, "sortOrder")
		wantError(t, e.get("/journal-entries?sortOrder=x"), http.StatusBadRequest, billing.CodeValidationFailed, "sortOrder")
	})
	t.Run("UnknownIDsAreNotFound", func(t *testing.T) {
		wantError(t, e.get("/invoices/not-a-uuid"), http.StatusNotFound, billing.CodeNotFound)
		wantError(t, e.put(path+"/line-items/"+missingID, lineBody("x", "1", "1", "0", "")), http.StatusNotFound, billing.CodeNotFound)
		wantError(t, e.get("/invoices/"+missingID+"/line-items"), http.StatusNotFound, billing.CodeNotFound)
	})
	t.Run("Pagination", func(t *testing.T) {
		second := e.invoice(cust, "")["id"].(string)
		r := e.get("/invoices?limit=1")
		p := decode[page](t, r)
		if len(p.Items) != 1 || p.Items[0]["id"] != second || p.Pagination.After == "" || p.Pagination.TotalResultSize != 2 {
			t.Fatalf("first page = %s", r.body)
		}
		wantKeys(t, "listed invoice", p.Items[0], invoiceAlways)
		if got := e.ids("/invoices?limit=1&after=" + url.QueryEscape(p.Pagination.After)); !slices.Equal(got, []string{id}) {
			t.Errorf("second page = %v", got)
		}
	})
}

// TestPatchSentInvoiceOverHTTP is op 17's field rules.
func TestPatchSentInvoiceOverHTTP(t *testing.T) {
	t.Parallel()
	e := newCatalogEnv(t, 0)
	cust := e.customer("Acme Ltd")
	path := "/invoices/" + e.sentInvoice(cust) + "/sent"

	r := e.patch(path, `{"purchaseOrderNumber":"PO-9","memo":"paid by card","reference":"R1","dueDate":"2024-10-01",
		"customerBillingAddress":{"line1":"2 Street","town":"York","postcode":"YO1","country":"GB"}}`)
	got := object(t, r, http.StatusOK, invoiceAlways)
	addr, _ := got["customerBillingAddress"].(map[string]any)
	if got["status"] != "SENT" || got["purchaseOrderNumber"] != "PO-9" || got["memo"] != "paid by card" ||
		got["reference"] != "R1" || got["dueDate"] != "2024-10-01" || addr["town"] != "York" {
		t.Errorf("patched = %v", got)
	}
	got = object(t, e.patch(path, `{"memo":null}`), http.StatusOK, invoiceAlways)
	if got["memo"] != nil || got["purchaseOrderNumber"] != "PO-9" || got["dueDate"] != "2024-10-01" {
		t.Errorf("memo:null clears only the memo: %v", got)
	}
	before := e.get(strings.TrimSuffix(path, "/sent")).body
	for _, tc := range []struct {
		name, body string
		fields     []string
	}{
		{"ErrDueDateNull", `{"dueDate":null}`, []string{"dueDate"}},
		{"ErrAddressNull", `{"customerBillingAddress":null}`, []string{"customerBillingAddress"}},
		{"ErrOtherFields", `{"memo":"x","status":"PAID","customerEmails":["a@b.test"],"currency":"EUR","customerShippingAddress":{}}`,
			[]string{"status", "customerEmails", "currency", "customerShippingAddress"}},
		{"ErrWrongTypes", `{"memo":1,"dueDate":"2024-10-32","purchaseOrderNumber":["x"]}`, []string{"memo", "dueDate", "purchaseOrderNumber"}},
		{"ErrAddressFields", `{"customerBillingAddress":{"line1":"x","town":2,"postcode":"p","country":"GB","zip":"z"}}`,
			[]string{"customerBillingAddress.town", "customerBillingAddress.zip"}},
		{"ErrAddressRules", `{"customerBillingAddress":{"line1":"x"}}`,
			[]string{"customerBillingAddress.town", "customerBillingAddress.postcode", "customerBillingAddress.country"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantError(t, e.patch(path, tc.body), http.StatusBadRequest, billing.CodeValidationFailed, tc.fields...)
		})
	}
	if after := e.get(strings.TrimSuffix(path, "/sent")).body; !bytes.Equal(before, after) {
		t.Errorf("refused patches changed the invoice:\n%s\n%s", before, after)
	}
}

func TestInvoiceTenancyOverHTTP(t *testing.T) {
	t.Parallel()
	e := newCatalogEnv(t, 1)
	cust := e.customer("Acme Ltd")
	sent := "/invoices/" + e.sentInvoice(cust)
	line := e.ids(sent + "/line-items")[0]
	draft := "/invoices/" + e.invoice(cust, "")["id"].(string)
	grp := e.create(draft+"/line-item-groups", `{"title":"G"}`)
	dline := e.create(draft+"/line-items", lineBody("x", "1", "1", "0", ""))
	_, other := e.newAccount("other")
	for _, rq := range append([]req{
		{method: "GET", path: sent},
		{method: "PUT", path: draft, body: `{}`},
		{method: "DELETE", path: draft},
		{method: "POST", path: draft + "/draft"},
		{method: "POST", path: draft + "/finalize"},
		{method: "POST", path: draft + "/send"},
		{method: "POST", path: draft + "/void"},
		{method: "PATCH", path: sent + "/sent", body: `{"memo":"x"}`},
		{method: "GET", path: sent + "/line-items"},
		{method: "PUT", path: sent + "/line-items/" + line, body: lineBody("x", "1", "1", "0", "")},
		{method: "POST", path: sent + "/payments", body: `{"amount":"1.00","paidAt":"2024-07-30"}`},
		{method: "GET", path: sent + "/payments"},
		{method: "PUT", path: sent + "/payment-status", body: `{"paymentStatus":"UNCOLLECTIBLE"}`},
	}, lineRoutes(draft, dline, grp, lineBody("x", "1", "1", "0", ""))...) {
		rq.auth = other
		wantError(t, e.do(rq), http.StatusNotFound, billing.CodeNotFound)
	}
	otherCust := e.do(req{method: "POST", path: "/customers", body: `{"legalName":"Theirs"}`, auth: other})
	wantStatus(t, otherCust, http.StatusCreated)
	// A customer of another account cannot be referenced in a body.
	wantError(t, e.post("/invoices", `{"currency":"GBP","customerId":"`+decode[map[string]any](t, otherCust)["id"].(string)+`"}`),
		http.StatusBadRequest, billing.CodeValidationFailed, "customerId")
	for _, path := range []string{"/invoices", "/journal-entries"} {
		r := e.do(req{method: "GET", path: path, auth: other})
		if p := decode[page](t, r); r.status != http.StatusOK || len(p.Items) != 0 {
			t.Errorf("another account lists %s: %s", path, r.body)
		}
	}
	// Nor can another account's group or product be named on a line.
	theirProduct := e.createAs(other, "/products", `{"name":"Theirs"}`)
	theirInvoice := e.createAs(other, "/invoices", `{"currency":"GBP","customerId":"`+decode[map[string]any](t, otherCust)["id"].(string)+`"}`)
	theirGroup := e.createAs(other, "/invoices/"+theirInvoice+"/line-item-groups", `{"title":"Theirs"}`)
	wantError(t, e.post(draft+"/line-items", lineBody("x", "1", "1", "0", `"groupId":"`+theirGroup+`","productId":"`+theirProduct+`"`)),
		http.StatusBadRequest, billing.CodeValidationFailed, "groupId", "productId")
	// A group of another invoice of the same account is refused too.
	wantError(t, e.post(e.invoiceIn(cust, "DRAFT")+"/line-items", lineBody("x", "1", "1", "0", `"groupId":"`+grp+`"`)),
		http.StatusBadRequest, billing.CodeValidationFailed, "groupId")
}

// TestConcurrentSendOverHTTP sends one invoice 50 times at once through a
// real HTTP server on bbolt: exactly one send wins, the others are refused,
// and the invoice is numbered and journaled once.
func TestConcurrentSendOverHTTP(t *testing.T) {
	t.Parallel()
	e := newCatalogEnv(t, 1)
	cust := e.customer("Acme Ltd")
	id := e.invoice(cust, "")["id"].(string)
	e.create("/invoices/"+id+"/line-items", lineBody("Plan", "1", "10", "0.2", ""))

	const n = 50
	count := map[int]int{}
	for _, r := range e.postAtOnce(slices.Repeat([]string{"/invoices/" + id + "/send"}, n)) {
		count[r.status]++
		if r.status != http.StatusOK {
			wantError(t, r, http.StatusConflict, billing.CodeInvalidState)
		}
	}
	if count[http.StatusOK] != 1 || count[http.StatusConflict] != n-1 {
		t.Fatalf("statuses = %v, want one 200 and %d 409", count, n-1)
	}
	got := object(t, e.get("/invoices/"+id), http.StatusOK, invoiceAlways)
	if got["status"] != "SENT" || got["invoiceNumber"] != "INV00001" {
		t.Errorf("after the race: %v", got)
	}
	wantBalancedJournal(t, e, id, 3)
	next := e.sentInvoice(cust)
	if got := object(t, e.get("/invoices/"+next), http.StatusOK, invoiceAlways); got["invoiceNumber"] != "INV00002" {
		t.Errorf("the next invoice is numbered %v, want INV00002 (no number burnt)", got["invoiceNumber"])
	}
}

// TestSendIdempotencyOverHTTP replays a send with its Idempotency-Key: the
// stored answer comes back and nothing is sent, numbered or journaled again.
func TestSendIdempotencyOverHTTP(t *testing.T) {
	t.Parallel()
	onEveryStore(t, func(t *testing.T, e *env) {
		cust := e.customer("Acme Ltd")
		id := e.invoice(cust, "")["id"].(string)
		e.create("/invoices/"+id+"/line-items", lineBody("Plan", "1", "10", "0.2", ""))
		send := withKey(req{method: "POST", path: "/invoices/" + id + "/send"}, "send-1")
		first := e.do(send)
		object(t, first, http.StatusOK, invoiceAlways)
		e.clock.Advance(time.Hour)
		again := e.do(send)
		wantStatus(t, again, http.StatusOK)
		if !bytes.Equal(first.body, again.body) || again.header.Get("Idempotent-Replayed") != "true" {
			t.Errorf("replay = %s (Idempotent-Replayed %q), want %s", again.body, again.header.Get("Idempotent-Replayed"), first.body)
		}
		wantBalancedJournal(t, e, id, 3)
		if got := object(t, e.get("/invoices/"+id), http.StatusOK, invoiceAlways); got["updatedAt"] != "2024-07-30T12:00:00Z" {
			t.Errorf("the replay changed the invoice: updatedAt %v", got["updatedAt"])
		}
		wantError(t, e.do(withKey(req{method: "POST", path: "/invoices/" + id + "/send"}, "send-2")),
			http.StatusConflict, billing.CodeInvalidState)
		wantError(t, e.do(withKey(req{method: "POST", path: "/invoices/" + id + "/void"}, "send-1")),
			http.StatusUnprocessableEntity, CodeIdempotencyKeyReused)
	})
}

// TestInvoiceStateTableOverHTTP runs every operation on an invoice in every
// status: allowed ones answer their success status and leave the invoice in
// the right status; the others answer 409 invalid_state.
func TestInvoiceStateTableOverHTTP(t *testing.T) {
	t.Parallel()
	e := newCatalogEnv(t, 0)
	cust := e.customer("Acme Ltd")
	issued := []string{"FINAL", "SENT"}
	ops := slices.Concat(docLifecycleOps, []docStateOp{
		{"Send", "POST", "/send", "", []string{"IN_PROGRESS", "DRAFT", "FINAL"}, 200, "SENT"},
		{"Delete", "DELETE", "", "", editableDoc, 200, "-"},
		{"PatchSent", "PATCH", "/sent", `{"memo":"m"}`, []string{"SENT"}, 200, ""},
		{"AddLine", "POST", "/line-items", lineBody("x", "1", "1", "0", ""), editableDoc, 201, ""},
		{"RecordPayment", "POST", "/payments", `{"amount":"1.00","paidAt":"2024-07-30"}`, issued, 201, ""},
		{"Uncollectible", "PUT", "/payment-status", `{"paymentStatus":"UNCOLLECTIBLE"}`, issued, 200, ""},
		{"ApplyCredits", "POST", "/apply-credits", "", slices.Concat(editableDoc, issued), 200, ""},
	})
	runDocStateTable(t, e, invoiceAlways, func(st string) string { return e.invoiceIn(cust, st) }, ops)
}

// TestInvoiceVoidOverHTTP: voiding a SENT invoice reverses its journal; an
// invoice with a live credit note cannot be voided.
func TestInvoiceVoidOverHTTP(t *testing.T) {
	t.Parallel()
	e := newCatalogEnv(t, 1)
	cust := e.customer("Acme Ltd")
	inv := e.sentInvoice(cust)
	wantStatus(t, e.post("/invoices/"+inv+"/void", ""), http.StatusOK)
	wantBalancedJournal(t, e, inv, 6)

	credited := e.sentInvoice(cust)
	cn := e.creditNote(cust, `"invoiceId":"`+credited+`"`)["id"].(string)
	e.create("/credit-notes/"+cn+"/line-items", cnLine(cn, "Refund", "1", "1", "0", ""))
	wantStatus(t, e.post("/credit-notes/"+cn+"/finalize", ""), http.StatusOK)
	wantError(t, e.post("/invoices/"+credited+"/void", ""), http.StatusConflict, billing.CodeInvalidState)
	wantStatus(t, e.post("/credit-notes/"+cn+"/void", ""), http.StatusOK)
	wantStatus(t, e.post("/invoices/"+credited+"/void", ""), http.StatusOK)

	r := e.get("/journal-entries?sourceType=CREDIT_NOTE&sortOrder=DESC")
	wantStatus(t, r, http.StatusOK)
	p := decode[page](t, r)
	if len(p.Items) != 4 { // refund of 1.00 without tax: 2 entries, then 2 reversing ones
		t.Errorf("credit note entries = %s", r.body)
	}
	for _, it := range p.Items {
		if it["sourceId"] != cn || it["sourceType"] != "CREDIT_NOTE" {
			t.Errorf("filtered entry = %v", it)
		}
	}
	wantError(t, e.get("/journal-entries?sourceType=REFUND"), http.StatusBadRequest, billing.CodeValidationFailed, "sourceType")
}

// deliveryTypes lists the outbox deliveries of the env's account as
// "TYPE/CHANNEL" strings ("/EMAIL" for a document e-mail, which no policy
// asks for), oldest first.
func (e *env) deliveryTypes() []string {
	e.tb.Helper()
	r := e.get("/notifications/deliveries?limit=100")
	wantStatus(e.tb, r, http.StatusOK)
	var out []string
	for _, d := range decode[page](e.tb, r).Items {
		typ, _ := d["notificationType"].(string)
		out = append(out, typ+"/"+d["channel"].(string))
	}
	slices.Sort(out)
	return out
}

// TestDocumentNotificationsOverHTTP: send (op 16) queues the invoice e-mail
// and INVOICE_ISSUED once, a replayed send queues nothing, op 17 emits
// INVOICE_UPDATED, and mark-as-sent (op 11) sends no e-mail and no
// notification while send of a credit note does.
func TestDocumentNotificationsOverHTTP(t *testing.T) {
	t.Parallel()
	e := newCatalogEnv(t, 1)
	wantStatus(t, e.post("/notifications/policies", `{"name":"ops","channel":"EMAIL","recipients":["ops@example.test"],
		"notificationTypes":["INVOICE_ISSUED","INVOICE_UPDATED","CREDIT_NOTE_ISSUED"]}`), http.StatusCreated)
	cust := e.customer("Acme Ltd") // its billing contact is ann@example.test
	id := e.invoice(cust, "")["id"].(string)
	e.create("/invoices/"+id+"/line-items", lineBody("Plan", "1", "10", "0.2", ""))
	before := e.deliveryTypes() // INVOICE_UPDATED of the line
	send := withKey(req{method: "POST", path: "/invoices/" + id + "/send"}, "send-once")
	wantStatus(t, e.do(send), http.StatusOK)
	sent := e.deliveryTypes()
	want := slices.Sorted(slices.Values(append(slices.Clone(before), "/EMAIL", "INVOICE_ISSUED/EMAIL")))
	if !slices.Equal(sent, want) {
		t.Fatalf("deliveries after send = %v, want %v", sent, want)
	}
	if r := e.do(send); r.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("the second send was not a replay: %d %s", r.status, r.body)
	}
	if got := e.deliveryTypes(); !slices.Equal(got, sent) {
		t.Errorf("a replayed send queued deliveries: %v, want %v", got, sent)
	}
	wantStatus(t, e.patch("/invoices/"+id+"/sent", `{"memo":"thanks"}`), http.StatusOK)
	patched := e.deliveryTypes()
	if n := len(patched) - len(sent); n != 1 || !slices.Contains(patched, "INVOICE_UPDATED/EMAIL") {
		t.Errorf("op 17 queued %d deliveries: %v", n, patched)
	}

	cn := e.creditNote(cust, "")["id"].(string)
	e.create("/credit-notes/"+cn+"/line-items", cnLine(cn, "Refund", "1", "1", "0", ""))
	quiet := e.deliveryTypes()
	wantStatus(t, e.post("/credit-notes/"+cn+"/mark-as-sent", ""), http.StatusOK)
	if got := e.deliveryTypes(); !slices.Equal(got, quiet) {
		t.Errorf("op 11 queued deliveries: %v, want %v", got, quiet)
	}
	other := e.creditNote(cust, "")["id"].(string)
	e.create("/credit-notes/"+other+"/line-items", cnLine(other, "Refund", "1", "1", "0", ""))
	quiet = e.deliveryTypes()
	wantStatus(t, e.post("/credit-notes/"+other+"/send", ""), http.StatusOK)
	got := e.deliveryTypes()
	if len(got)-len(quiet) != 2 || !slices.Contains(got, "CREDIT_NOTE_ISSUED/EMAIL") {
		t.Errorf("credit note send queued %v (before %v), want its e-mail and CREDIT_NOTE_ISSUED", got, quiet)
	}
}

// postAtOnce posts to every path at once with the env's key, through a
// real HTTP server (so net/http's connection handling runs as well), and
// returns the answers in the order of paths.
func (e *env) postAtOnce(paths []string) []response {
	e.tb.Helper()
	srv := e.serve()
	out := make([]response, len(paths))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, p := range paths {
		wg.Go(func() {
			<-start
			hr, err := http.NewRequest(http.MethodPost, srv.URL+p, nil)
			if err != nil {
				e.tb.Error(err)
				return
			}
			hr.Header.Set("Authorization", e.auth)
			res, err := srv.Client().Do(hr)
			if err != nil {
				e.tb.Error(err)
				return
			}
			defer res.Body.Close()
			b, err := io.ReadAll(res.Body)
			if err != nil {
				e.tb.Error(err)
			}
			out[i] = response{status: res.StatusCode, header: res.Header, body: b}
		})
	}
	close(start)
	wg.Wait()
	return out
}

// TestConcurrentFinalizeNumbersOverHTTP finalizes 20 invoices at once
// through a real HTTP server on bbolt: the numbers are INV00001 to INV00020,
// each once.
func TestConcurrentFinalizeNumbersOverHTTP(t *testing.T) {
	t.Parallel()
	e := newCatalogEnv(t, 1)
	cust := e.customer("Acme Ltd")
	var paths []string
	for range 20 {
		paths = append(paths, e.invoiceIn(cust, "DRAFT")+"/finalize")
	}
	var numbers, want []string
	for i, r := range e.postAtOnce(paths) {
		wantStatus(t, r, http.StatusOK)
		numbers = append(numbers, decode[map[string]any](t, r)["invoiceNumber"].(string))
		want = append(want, fmt.Sprintf("INV%05d", i+1))
	}
	slices.Sort(numbers)
	if !slices.Equal(numbers, want) {
		t.Errorf("numbers = %v, want %v", numbers, want)
	}
}

// TestLineItemPagesOverHTTP pages through an invoice's lines by index with
// both cursors.
func TestLineItemPagesOverHTTP(t *testing.T) {
	t.Parallel()
	e := newCatalogEnv(t, 0)
	path := "/invoices/" + e.invoice(e.customer("Acme Ltd"), "")["id"].(string)
	var lines []string
	for i := range 5 {
		lines = append(lines, e.create(path+"/line-items", lineBody(fmt.Sprint("line ", i), "1", "1", "0", "")))
	}
	var seen []string
	q := "?limit=2"
	var prev string
	for {
		r := e.get(path + "/line-items" + q)
		wantStatus(t, r, http.StatusOK)
		p := decode[page](t, r)
		if p.Pagination.TotalResultSize != 5 {
			t.Fatalf("totalResultSize = %d", p.Pagination.TotalResultSize)
		}
		for _, it := range p.Items {
			wantKeys(t, "listed line", it, invoiceLineAlways)
			seen = append(seen, it["id"].(string))
		}
		if p.Pagination.After == "" {
			prev = p.Pagination.Before
			break
		}
		q = "?limit=2&after=" + url.QueryEscape(p.Pagination.After)
	}
	if !slices.Equal(seen, lines) {
		t.Fatalf("pages = %v, want %v", seen, lines)
	}
	if got := e.ids(path + "/line-items?limit=2&before=" + url.QueryEscape(prev)); !slices.Equal(got, lines[2:4]) {
		t.Errorf("previous page = %v, want %v", got, lines[2:4])
	}
	r := e.do(req{method: "PATCH", path: path + "/line-items"})
	wantError(t, r, http.StatusMethodNotAllowed, CodeMethodNotAllowed)
	if allow := r.header.Get("Allow"); !strings.Contains(allow, "GET") || !strings.Contains(allow, "POST") {
		t.Errorf("Allow = %q", allow)
	}
}

// newDraftInvoice creates a DRAFT invoice without lines for customer and
// returns its id and path.
func (e *env) newDraftInvoice(customer string) (id, path string) {
	e.tb.Helper()
	id = e.invoice(customer, "")["id"].(string)
	return id, "/invoices/" + id
}

// An oversized total is refused with 400 validation_failed on quantity, and
// the invoice stays readable, listable, finalizable and deletable over HTTP.
func TestOversizedTotalRefusedOverHTTP(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	customer := e.createAs(e.auth, "/customers", `{"legalName":"Acme"}`)
	inv := e.createAs(e.auth, "/invoices", `{"currency":"USD","customerId":"`+customer+`"}`)
	first := e.createAs(e.auth, "/invoices/"+inv+"/line-items", `{"title":"x","quantity":"99999999999999999999","rate":"1","taxRate":"0","externalIds":[]}`)
	wantError(t, e.post("/invoices/"+inv+"/line-items", `{"title":"x","quantity":"1","rate":"1","taxRate":"0","externalIds":[]}`),
		http.StatusBadRequest, billing.CodeValidationFailed, "quantity")
	for _, path := range []string{"/invoices/" + inv, "/invoices", "/invoices?status=DRAFT", "/invoices/" + inv + "/line-items"} {
		wantStatus(t, e.get(path), http.StatusOK)
	}
	wantStatus(t, e.del("/invoices/"+inv+"/line-items/"+first), http.StatusOK)
	e.createAs(e.auth, "/invoices/"+inv+"/line-items", `{"title":"x","quantity":"1","rate":"1","taxRate":"0","externalIds":[]}`)
	wantStatus(t, e.post("/invoices/"+inv+"/finalize", ""), http.StatusOK)
}
