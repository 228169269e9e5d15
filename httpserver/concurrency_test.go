package httpserver

import (
	"bytes"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
)

// listTotal returns totalResultSize of GET path.
func (e *env) listTotal(path string) int {
	e.tb.Helper()
	r := e.get(path)
	wantStatus(e.tb, r, http.StatusOK)
	return decode[page](e.tb, r).Pagination.TotalResultSize
}

// TestIdempotencyRaceEveryRoute: on every mutating route, racing requests
// with one Idempotency-Key get one execution (oneExecution). Runs on bbolt,
// where usage events share group commits whose functions may run more than
// once. The creates race first, then the operations on the fixtures.
func TestIdempotencyRaceEveryRoute(t *testing.T) {
	t.Parallel()
	e := newEnv(t, &Config{RateLimit: -1}, billingtest.WithBolt())
	f := buildFixtures(t, e, e.auth, "r")
	bodies := validBodies(f)
	routes := apiRoutes(t, e)

	// Every POST route that creates into a list: the race creates one
	// record, and every answer is that creation.
	creates := 0
	for _, rt := range routes {
		body, ok := bodies[rt.String()]
		if rt.method != http.MethodPost || !ok || strings.Contains(rt.path, ":") {
			continue
		}
		list := strings.TrimSuffix(rt.path, "/batch")
		if r := e.get(list); r.status != http.StatusOK || !strings.Contains(string(r.body), `"pagination"`) {
			continue
		}
		creates++
		before := e.listTotal(list)
		r := withKey(req{method: "POST", path: rt.path, body: body}, "race-"+rt.path)
		if a := oneExecution(t, rt.String(), e.doAtOnce(r, 16)); a == nil || a.status != http.StatusCreated {
			t.Errorf("%s: no creation among the answers", rt)
		}
		if after := e.listTotal(list); after != before+1 {
			t.Errorf("%s: %d records after the race, want %d", rt, after, before+1)
		}
	}

	// Every mutating route that names a record (send, finalize, void,
	// line items, policies, schedules, ...). State errors (409) are answers
	// too, stored and replayed like successes.
	operations := 0
	for _, rt := range routes {
		if !mutating(rt.method) || !strings.Contains(rt.path, ":") {
			continue
		}
		operations++
		r := withKey(req{method: rt.method, path: f.path(rt.path), body: bodies[rt.String()]}, "op-"+rt.String())
		oneExecution(t, rt.String(), e.doAtOnce(r, 8))
	}
	if creates < 6 || operations < 40 {
		t.Fatalf("only %d creating routes and %d operations checked", creates, operations)
	}
}

// oneExecution checks the answers of requests sent at once with one
// Idempotency-Key: each is idempotency_key_in_use or the answer of the one
// execution, fresh once and replayed byte for byte by the others (a 400 is
// answered before the operation runs and never stored: each is fresh). It
// returns that answer, nil when every request found the key in use.
func oneExecution(tb testing.TB, what string, answers []response) *response {
	tb.Helper()
	fresh := 0
	var first *response
	for i, a := range answers {
		if a.status == http.StatusConflict && strings.Contains(string(a.body), string(CodeIdempotencyKeyInUse)) {
			wantError(tb, a, http.StatusConflict, CodeIdempotencyKeyInUse)
			continue
		}
		checkAnswer(tb, what, a)
		if a.header.Get("Idempotent-Replayed") == "" {
			fresh++
		}
		if first == nil {
			first = &answers[i]
		} else if a.status != first.status || !bytes.Equal(a.body, first.body) {
			tb.Errorf("%s: two different answers: %d %s and %d %s", what, first.status, first.body, a.status, a.body)
		}
	}
	if first != nil && first.status != http.StatusBadRequest && fresh != 1 {
		tb.Errorf("%s: %d fresh answers, want 1", what, fresh)
	}
	return first
}

// TestParallelDuplicateUsageEventsCountOnce: the same customerEventId sent
// many times at once, singly and in batches, is stored and counted once.
func TestParallelDuplicateUsageEventsCountOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, &Config{RateLimit: -1}, billingtest.WithBolt())
	metric := e.createMetric("calls")
	var rs []req
	for i := range 24 {
		r := req{method: "POST", path: "/usage-events", body: usageEventBody("dup", "same-id")}
		if i%3 == 0 {
			r.path, r.body = "/usage-events/batch", `{"events":[`+usageEventBody("dup", "same-id")+`,`+usageEventBody("dup", "batch-id")+`]}`
		}
		rs = append(rs, r)
	}
	for i, a := range e.doEachAtOnce(rs) {
		if a.status != http.StatusCreated {
			t.Errorf("request %d: %d", i, a.status)
		}
	}
	events := decode[eventPage](t, e.get("/usage-events?customerAlias=dup&limit=100"))
	if events.Pagination.TotalResultSize != 2 || len(events.Items) != 2 {
		t.Fatalf("%d events stored (%d listed), want 2 (same-id and batch-id)", events.Pagination.TotalResultSize, len(events.Items))
	}
	r := e.get("/usage-metrics/" + metric.ID + "/calculate?customerAliases=dup&periodStart=2024-07-01&periodEnd=2024-07-31")
	wantStatus(t, r, http.StatusOK)
	if !strings.Contains(string(r.body), `"eventCount":2,`) || !strings.Contains(string(r.body), `"value":"2"`) {
		t.Errorf("COUNT over the duplicates: %s, want 2", r.body)
	}
}

// TestParallelCreditNoteNumbersGapless: credit notes finalized and marked
// as sent at the same time get distinct, gapless numbers.
func TestParallelCreditNoteNumbersGapless(t *testing.T) {
	t.Parallel()
	e := newEnv(t, &Config{RateLimit: -1}, billingtest.WithBolt())
	cust := e.customer("Acme Ltd")
	var paths, want []string
	for i := range 12 {
		cn := e.creditNote(cust, `"invoiceId":"`+e.sentInvoice(cust)+`"`)["id"].(string)
		wantStatus(t, e.post("/credit-notes/"+cn+"/line-items", cnLine(cn, "Refund", "1", "1", "0.2", "")), http.StatusCreated)
		op := "/finalize"
		if i%2 == 1 {
			op = "/mark-as-sent"
		}
		paths = append(paths, "/credit-notes/"+cn+op)
		want = append(want, fmt.Sprintf("CN%05d", i+1))
	}
	var numbers []string
	for _, r := range e.postAtOnce(paths) {
		wantStatus(t, r, http.StatusOK)
		n, _ := decode[map[string]any](t, r)["creditNoteNumber"].(string)
		numbers = append(numbers, n)
	}
	slices.Sort(numbers)
	if !slices.Equal(numbers, want) {
		t.Errorf("numbers = %v, want %v", numbers, want)
	}
}

// TestParallelBillingRunsBillOnce: billing runs started at the same time
// over HTTP bill every due period once between them.
func TestParallelBillingRunsBillOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, &Config{RateLimit: -1}, billingtest.WithBolt())
	customer, price := e.scheduleFixture()
	for range 3 {
		id := e.create("/billing-schedules", scheduleBody(customer, price, ""))
		wantStatus(t, e.put("/billing-schedules/"+id+"/activate", ""), http.StatusOK)
	}
	created := 0
	for _, r := range e.postAtOnce(slices.Repeat([]string{"/billing-runs"}, 8)) {
		wantStatus(t, r, http.StatusOK)
		created += decode[billing.BillingRun](t, r).InvoicesCreated
	}
	if n := e.listTotal("/invoices"); n != 3 || created != 3 {
		t.Errorf("%d invoices stored, %d reported created by the runs; want 3 (one per schedule)", n, created)
	}
}
