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

// TestIdempotencyRaceEveryCreate: on every POST route that creates into a
// list, racing requests with one Idempotency-Key have one effect, and every
// answer is that creation (fresh once, replayed otherwise) or
// idempotency_key_in_use. Runs on bbolt, where usage events share group
// commits whose functions may run more than once.
func TestIdempotencyRaceEveryCreate(t *testing.T) {
	t.Parallel()
	e := newEnv(t, &Config{RateLimit: -1}, billingtest.WithBolt())
	f := buildFixtures(t, e, e.auth, "r")
	bodies := validBodies(f)
	checked := 0
	for _, rt := range apiRoutes(t, e) {
		body, ok := bodies[rt.String()]
		if rt.method != http.MethodPost || !ok || strings.Contains(rt.path, ":") {
			continue
		}
		list := strings.TrimSuffix(rt.path, "/batch")
		if r := e.get(list); r.status != http.StatusOK || !strings.Contains(string(r.body), `"pagination"`) {
			continue
		}
		checked++
		before := e.listTotal(list)
		fresh := 0
		var created []byte
		for _, a := range e.doAtOnce(withKey(req{method: "POST", path: rt.path, body: body}, "race-"+rt.path), 16) {
			if a.status == http.StatusConflict {
				wantError(t, a, http.StatusConflict, billing.CodeIdempotencyKeyInUse)
				continue
			}
			if a.status != http.StatusCreated {
				t.Errorf("%s: %d %s", rt, a.status, a.body)
				continue
			}
			if a.header.Get("Idempotent-Replayed") == "" {
				fresh++
			}
			if created != nil && !bytes.Equal(created, a.body) {
				t.Errorf("%s: two different answers: %s and %s", rt, created, a.body)
			}
			created = a.body
		}
		if fresh != 1 {
			t.Errorf("%s: %d fresh creations, want 1", rt, fresh)
		}
		if after := e.listTotal(list); after != before+1 {
			t.Errorf("%s: %d records after the race, want %d", rt, after, before+1)
		}
	}
	if checked < 6 {
		t.Fatalf("only %d creating routes checked", checked)
	}
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

// TestIdempotencyRaceEveryOperation: on every mutating route that names a
// record (send, finalize, void, line items, policies, schedules, ...),
// racing requests with one Idempotency-Key get one execution: exactly one
// fresh answer, every other answer that replay byte for byte or
// idempotency_key_in_use. State errors (409) are answers too, stored and
// replayed like successes.
func TestIdempotencyRaceEveryOperation(t *testing.T) {
	t.Parallel()
	e := newEnv(t, &Config{RateLimit: -1}, billingtest.WithBolt())
	f := buildFixtures(t, e, e.auth, "o")
	bodies := validBodies(f)
	checked := 0
	for _, rt := range apiRoutes(t, e) {
		if !mutating(rt.method) || !strings.Contains(rt.path, ":") {
			continue
		}
		checked++
		r := withKey(req{method: rt.method, path: f.path(rt.path), body: bodies[rt.String()]}, "op-"+rt.String())
		answers := e.doAtOnce(r, 8)
		fresh := 0
		var first *response
		for i, a := range answers {
			if a.status == http.StatusConflict && strings.Contains(string(a.body), string(billing.CodeIdempotencyKeyInUse)) {
				wantError(t, a, http.StatusConflict, billing.CodeIdempotencyKeyInUse)
				continue
			}
			checkAnswer(t, rt.String(), a)
			if a.status == http.StatusBadRequest {
				continue // answered before the operation ran: never stored
			}
			if a.header.Get("Idempotent-Replayed") == "" {
				fresh++
			}
			if first == nil {
				first = &answers[i]
			} else if a.status != first.status || !bytes.Equal(a.body, first.body) {
				t.Errorf("%s: two different answers: %d %s and %d %s", rt, first.status, first.body, a.status, a.body)
			}
		}
		if fresh != 1 && first != nil {
			t.Errorf("%s: %d fresh answers, want 1", rt, fresh)
		}
	}
	if checked < 40 {
		t.Fatalf("only %d operations checked", checked)
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
