package billing_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
)

// The kept counts of lists (listcount.go) against an oracle: random
// sequences of creations, finalizations, voids, deletions and superseding
// ingestions, after which every list's totalResultSize, for every filter
// and combination, equals the oracle's count, and paging forward then back
// visits exactly the oracle's items in the list's order.

// listModel is the oracle: what the lists must hold.
type listModel struct {
	invoices  map[string][2]string // id → customer, status
	invOrder  []string             // creation order
	events    map[string]modelEvent
	customers []string
}

// modelEvent is a stored usage event of the oracle.
type modelEvent struct {
	id, alias, eventType string
	ts                   time.Time
}

// listScenario drives random operations through svc and keeps m.
type listScenario struct {
	t     *testing.T
	ctx   context.Context
	svc   *billing.Service
	acct  string
	rnd   *rand.Rand
	m     listModel
	clock *billingtest.Clock
}

func newListScenario(t *testing.T, svc *billing.Service, clock *billingtest.Clock, seed uint64) *listScenario {
	return &listScenario{
		t: t, ctx: context.Background(), svc: svc, clock: clock, acct: billingtest.Account(t, svc, "acme"),
		rnd: rand.New(rand.NewPCG(seed, 33)),
		m:   listModel{invoices: map[string][2]string{}, events: map[string]modelEvent{}},
	}
}

// step runs one random operation.
func (sc *listScenario) step() {
	sc.t.Helper()
	switch op := sc.rnd.IntN(13); {
	case op == 0 || len(sc.m.customers) == 0:
		c := must(sc.svc.CreateCustomer(sc.ctx, sc.acct, billing.CustomerParams{LegalName: fmt.Sprintf("Customer %d", len(sc.m.customers))})).of(sc.t, "CreateCustomer")
		sc.m.customers = append(sc.m.customers, c.ID)
	case op <= 5:
		sc.invoiceStep(op)
	case op <= 9:
		sc.ingest()
	default:
		sc.collectionStep(op)
	}
}

// pick returns one of ids at random.
func (sc *listScenario) pick(ids []string) string { return ids[sc.rnd.IntN(len(ids))] }

// withStatus returns the oracle's invoices in one of the statuses st.
func (sc *listScenario) withStatus(st ...string) []string {
	var out []string
	for _, id := range sc.m.invOrder {
		if slices.Contains(st, sc.m.invoices[id][1]) {
			out = append(out, id)
		}
	}
	return out
}

// invoiceStep creates (op 1, 2), finalizes (3), voids (4) or deletes (5)
// an invoice.
func (sc *listScenario) invoiceStep(op int) {
	t, ctx, svc, acct := sc.t, sc.ctx, sc.svc, sc.acct
	t.Helper()
	switch {
	case op <= 2:
		st := []billing.DocumentStatus{billing.StatusDraft, billing.StatusInProgress}[sc.rnd.IntN(2)]
		inv := must(svc.CreateInvoice(ctx, acct, billing.InvoiceParams{Currency: "EUR", CustomerID: sc.pick(sc.m.customers), Status: st})).of(t, "CreateInvoice")
		sc.m.invoices[inv.ID] = [2]string{inv.CustomerID, string(inv.Status)}
		sc.m.invOrder = append(sc.m.invOrder, inv.ID)
	case op == 3 && len(sc.withStatus("DRAFT", "IN_PROGRESS")) > 0:
		id := sc.pick(sc.withStatus("DRAFT", "IN_PROGRESS"))
		must(svc.CreateInvoiceLineItem(ctx, acct, id, invLine("Work", "1", "10", "0"))).of(t, "CreateInvoiceLineItem")
		inv := must(svc.FinalizeInvoice(ctx, acct, id)).of(t, "FinalizeInvoice")
		sc.m.invoices[id] = [2]string{inv.CustomerID, string(inv.Status)}
	case op == 4 && len(sc.withStatus("FINAL", "SENT")) > 0:
		id := sc.pick(sc.withStatus("FINAL", "SENT"))
		inv, err := svc.VoidInvoice(ctx, acct, id)
		switch {
		case billing.CodeOf(err) == billing.CodeInvalidState: // paid in part: credited, not voided
		case err != nil:
			t.Fatalf("VoidInvoice: %v", err)
		default:
			sc.m.invoices[id] = [2]string{inv.CustomerID, string(inv.Status)}
		}
	case op == 5 && len(sc.withStatus("DRAFT", "IN_PROGRESS")) > 0:
		id := sc.pick(sc.withStatus("DRAFT", "IN_PROGRESS"))
		if err := svc.DeleteInvoice(ctx, acct, id); err != nil {
			t.Fatalf("DeleteInvoice: %v", err)
		}
		delete(sc.m.invoices, id)
		sc.m.invOrder = slices.DeleteFunc(sc.m.invOrder, func(s string) bool { return s == id })
	}
}

// collectionStep records a payment (op 10), marks an invoice
// uncollectible or unpaid again (11), or lets days pass (12).
func (sc *listScenario) collectionStep(op int) {
	t, ctx, svc, acct := sc.t, sc.ctx, sc.svc, sc.acct
	t.Helper()
	switch {
	case op == 10 && len(sc.withStatus("FINAL", "SENT")) > 0:
		id := sc.pick(sc.withStatus("FINAL", "SENT"))
		if inv := must(svc.GetInvoice(ctx, acct, id)).of(t, "GetInvoice"); inv.AmountDue.Sign() > 0 {
			amount := billing.MustDecimal([]string{"2.50", "4", "0.01"}[sc.rnd.IntN(3)])
			if amount.Cmp(inv.AmountDue) > 0 {
				amount = inv.AmountDue
			}
			paidAt := billing.DateOf(sc.clock.Now())
			must(svc.RecordPayment(ctx, acct, id, billing.PaymentParams{Amount: &amount, PaidAt: &paidAt})).of(t, "RecordPayment")
		}
	case op == 11 && len(sc.withStatus("FINAL")) > 0:
		id := sc.pick(sc.withStatus("FINAL"))
		st := []billing.PaymentStatus{billing.PaymentStatusUncollectible, billing.PaymentStatusUnpaid}[sc.rnd.IntN(2)]
		if _, err := svc.SetPaymentStatus(ctx, acct, id, st); err != nil && billing.CodeOf(err) != billing.CodeInvalidState && billing.CodeOf(err) != billing.CodeValidationFailed {
			t.Fatalf("SetPaymentStatus: %v", err)
		}
	case op == 12:
		sc.clock.Advance(time.Duration(5+sc.rnd.IntN(40)) * 24 * time.Hour)
	}
}

// checkSums compares SummarizeInvoices and AgeReceivables with what the
// API's invoice list adds up to.
func (sc *listScenario) checkSums() {
	sc.t.Helper()
	all := pages(sc.t, func(p billing.ListParams) (billing.Page[billing.Invoice], error) {
		return sc.svc.ListInvoices(sc.ctx, sc.acct, billing.InvoiceFilter{}, p)
	})
	sum := must(sc.svc.SummarizeInvoices(sc.ctx, sc.acct, 12)).of(sc.t, "SummarizeInvoices")
	rec := must(sc.svc.AgeReceivables(sc.ctx, sc.acct)).of(sc.t, "AgeReceivables")
	type want struct {
		invoiced         []billing.Decimal
		due, overdue     billing.Decimal
		unpaid, overdueN int
		byCustomer       map[string]billing.Decimal
	}
	wants := map[billing.Currency]*want{}
	for _, inv := range all {
		if inv.Status != billing.StatusFinal && inv.Status != billing.StatusSent {
			continue
		}
		w := wants[inv.Currency]
		if w == nil {
			w = &want{invoiced: make([]billing.Decimal, 12), byCustomer: map[string]billing.Decimal{}}
			wants[inv.Currency] = w
		}
		back := (sum.Today.Year-inv.IssueDate.Year)*12 + int(sum.Today.Month-inv.IssueDate.Month)
		if back >= 0 && back < 12 {
			w.invoiced[11-back] = w.invoiced[11-back].Add(inv.GrossTotal)
		}
		if inv.PaymentStatus == billing.PaymentStatusUncollectible || inv.AmountDue.Sign() <= 0 {
			continue
		}
		w.due, w.unpaid = w.due.Add(inv.AmountDue), w.unpaid+1
		w.byCustomer[inv.CustomerID] = w.byCustomer[inv.CustomerID].Add(inv.AmountDue)
		if !inv.DueDate.IsZero() && inv.DueDate.Before(sum.Today) {
			w.overdue, w.overdueN = w.overdue.Add(inv.AmountDue), w.overdueN+1
		}
	}
	if len(sum.Currencies) != len(wants) {
		sc.t.Fatalf("summary of %d currencies, the list has %d", len(sum.Currencies), len(wants))
	}
	for _, c := range sum.Currencies {
		w := wants[c.Currency]
		got := fmt.Sprint(c.Invoiced, c.AmountDue, c.UnpaidInvoices, c.AmountOverdue, c.OverdueInvoices)
		if exp := fmt.Sprint(w.invoiced, w.due, w.unpaid, w.overdue, w.overdueN); got != exp {
			sc.t.Fatalf("summary in %s: %s, the list adds up to %s", c.Currency, got, exp)
		}
	}
	for _, c := range rec.Currencies {
		w := wants[c.Currency]
		if c.Total.Total.Cmp(w.due) != 0 || c.Invoices != w.unpaid || len(c.Customers) != len(w.byCustomer) {
			sc.t.Fatalf("receivables in %s: %s of %d invoices and %d customers, the list: %s, %d, %d",
				c.Currency, c.Total.Total, c.Invoices, len(c.Customers), w.due, w.unpaid, len(w.byCustomer))
		}
		for _, cu := range c.Customers {
			if cu.Total.Cmp(w.byCustomer[cu.CustomerID]) != 0 {
				sc.t.Fatalf("receivables of %s: %s, the list: %s", cu.CustomerID, cu.Total, w.byCustomer[cu.CustomerID])
			}
		}
	}
	sc.checkReceivablesPages(rec)
}

// checkReceivablesPages reads the receivables a customer a page and checks
// that the pages together are all, in the same order, with the same
// totals.
func (sc *listScenario) checkReceivablesPages(all *billing.Receivables) {
	sc.t.Helper()
	got := map[billing.Currency][]string{}
	p := billing.ReceivablesPage{Limit: 1}
	for pages := 0; ; pages++ {
		page := must(sc.svc.AgeReceivablesPage(sc.ctx, sc.acct, p)).of(sc.t, "AgeReceivablesPage")
		for i, c := range page.Currencies {
			if c.Total != all.Currencies[i].Total || c.Invoices != all.Currencies[i].Invoices {
				sc.t.Fatalf("page %d's total in %s: %+v, all: %+v", pages, c.Currency, c.Total, all.Currencies[i].Total)
			}
			for _, cu := range c.Customers {
				got[c.Currency] = append(got[c.Currency], fmt.Sprint(cu.CustomerID, cu.Total))
			}
		}
		if page.Next == "" {
			break
		}
		if pages > 10 {
			sc.t.Fatalf("more pages than customers")
		}
		p.After = page.Next
	}
	for _, c := range all.Currencies {
		var want []string
		for _, cu := range c.Customers {
			want = append(want, fmt.Sprint(cu.CustomerID, cu.Total))
		}
		if fmt.Sprint(got[c.Currency]) != fmt.Sprint(want) {
			sc.t.Fatalf("receivables in %s a customer a page: %v, all at once: %v", c.Currency, got[c.Currency], want)
		}
	}
}

// ingest sends a batch of 1 to 5 events, some superseding stored ones (by
// an explicit customerEventId, or by the id of an event sent without one).
func (sc *listScenario) ingest() {
	sc.t.Helper()
	n := 1 + sc.rnd.IntN(5)
	params := make([]billing.UsageEventParams, n)
	keys := make([]string, n) // the oracle's key of each event
	for i := range params {
		ts := sc.clock.Now().Add(-time.Duration(sc.rnd.IntN(48)) * time.Hour)
		params[i] = billing.UsageEventParams{
			CustomerAlias: fmt.Sprintf("alias-%d", sc.rnd.IntN(3)), EventType: []string{"api_call", "storage"}[sc.rnd.IntN(2)],
			EventTimestamp: &ts,
		}
		switch r := sc.rnd.IntN(4); {
		case r == 0:
			params[i].CustomerEventID = fmt.Sprintf("cev-%d", sc.rnd.IntN(8))
			keys[i] = "explicit:" + params[i].CustomerEventID
		case r == 1 && len(sc.m.events) > 0:
			// The id of a stored event sent without a customerEventId.
			for k, e := range sc.m.events {
				if k == "implicit:"+e.id {
					params[i].CustomerEventID, keys[i] = e.id, k
					break
				}
			}
		}
	}
	got := must(sc.svc.CreateUsageEventBatch(sc.ctx, sc.acct, billing.UsageEventBatchParams{Events: params})).of(sc.t, "CreateUsageEventBatch")
	for i, e := range got.Items {
		k := keys[i]
		if k == "" {
			k = "implicit:" + e.ID
		}
		sc.m.events[k] = modelEvent{id: e.ID, alias: e.CustomerAlias, eventType: e.EventType, ts: e.EventTimestamp}
	}
	sc.clock.Advance(time.Minute)
}

// check compares every list and filter with the oracle.
func (sc *listScenario) check() {
	sc.t.Helper()
	statuses := []string{"", "DRAFT", "IN_PROGRESS", "FINAL", "VOIDED"}
	for _, cust := range append([]string{""}, sc.m.customers...) {
		for _, st := range statuses {
			f := billing.InvoiceFilter{CustomerID: cust, Status: billing.DocumentStatus(st)}
			var want []string
			for _, id := range slices.Backward(sc.m.invOrder) {
				v := sc.m.invoices[id]
				if (cust == "" || v[0] == cust) && (st == "" || v[1] == st) {
					want = append(want, id)
				}
			}
			pagesBothWays(sc, fmt.Sprintf("invoices %+v", f), len(want), want, func(p billing.ListParams) ([]string, billing.Page[billing.Invoice], error) {
				page, err := sc.svc.ListInvoices(sc.ctx, sc.acct, f, p)
				return ids(page.Items, func(i billing.Invoice) string { return i.ID }), page, err
			})
		}
	}
	all := pages(sc.t, func(p billing.ListParams) (billing.Page[billing.UsageEvent], error) {
		return sc.svc.ListUsageEvents(sc.ctx, sc.acct, billing.UsageEventFilter{}, p)
	})
	order := ids(all, func(e billing.UsageEvent) string { return e.ID })
	after, before := sc.clock.Now().Add(-30*time.Hour), sc.clock.Now().Add(-10*time.Hour)
	for _, alias := range []string{"", "alias-0", "alias-1", "alias-2"} {
		for _, et := range []string{"", "api_call", "storage"} {
			for _, timed := range []bool{false, true} {
				f := billing.UsageEventFilter{CustomerAlias: alias, EventType: et}
				if timed {
					f.EventTimestampAfter, f.EventTimestampBefore = &after, &before
				}
				keepEvent := map[string]bool{}
				for _, e := range sc.m.events {
					if (alias == "" || e.alias == alias) && (et == "" || e.eventType == et) &&
						(!timed || !e.ts.Before(after) && e.ts.Before(before)) {
						keepEvent[e.id] = true
					}
				}
				want := slices.DeleteFunc(slices.Clone(order), func(id string) bool { return !keepEvent[id] })
				if len(want) != len(keepEvent) {
					sc.t.Fatalf("the unfiltered list holds %d of the oracle's %d events of %+v", len(want), len(keepEvent), f)
				}
				pagesBothWays(sc, fmt.Sprintf("usage events %+v", f), len(want), want, func(p billing.ListParams) ([]string, billing.Page[billing.UsageEvent], error) {
					page, err := sc.svc.ListUsageEvents(sc.ctx, sc.acct, f, p)
					return ids(page.Items, func(e billing.UsageEvent) string { return e.ID }), page, err
				})
			}
		}
	}
	if err := billing.CheckAliasIndex(sc.ctx, sc.svc.Store()); err != nil {
		sc.t.Fatalf("the index of each alias: %v", err)
	}
	sc.checkSums()
	if len(order) != len(sc.m.events) {
		sc.t.Fatalf("the list holds %d events, the oracle %d", len(order), len(sc.m.events))
	}
}

func ids[T any](items []T, id func(T) string) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = id(it)
	}
	return out
}

// pagesBothWays pages a list forward with after, in pages of 3, checking
// every page's total against total and the items visited against want,
// then back from the last page with before.
func pagesBothWays[T any](sc *listScenario, what string, total int, want []string, list func(billing.ListParams) ([]string, billing.Page[T], error)) {
	sc.t.Helper()
	var got []string
	var last billing.Page[T]
	var pageIDs [][]string
	p := billing.ListParams{Limit: 3}
	for {
		page, pg, err := list(p)
		if err != nil {
			sc.t.Fatalf("%s: %v", what, err)
		}
		if pg.TotalResultSize != total {
			sc.t.Fatalf("%s: totalResultSize %d, the oracle counts %d", what, pg.TotalResultSize, total)
		}
		got, last = append(got, page...), pg
		pageIDs = append(pageIDs, page)
		if pg.After == "" {
			break
		}
		p = billing.ListParams{Limit: 3, After: pg.After}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		sc.t.Fatalf("%s: paging visited %v, the oracle has %v", what, got, want)
	}
	for i := len(pageIDs) - 2; i >= 0; i-- {
		if last.Before == "" {
			sc.t.Fatalf("%s: page %d has no before cursor", what, i+1)
		}
		page, pg, err := list(billing.ListParams{Limit: 3, Before: last.Before})
		if err != nil {
			sc.t.Fatalf("%s: before: %v", what, err)
		}
		if fmt.Sprint(page) != fmt.Sprint(pageIDs[i]) {
			sc.t.Fatalf("%s: before page %d = %v, want %v", what, i, page, pageIDs[i])
		}
		last = pg
	}
	if last.Before != "" {
		sc.t.Fatalf("%s: the first page has a before cursor", what)
	}
}

func TestKeptListCountsMatchAnOracle(t *testing.T) {
	t.Parallel()
	steps := billingtest.EnvCount(t, "BILLINGD_LISTCOUNT_STEPS", 120, 20)
	seed := billingtest.Seed(t, "BILLINGD_LISTCOUNT_SEED")
	stores(t, func(t *testing.T, svc *billing.Service, clock *billingtest.Clock) {
		sc := newListScenario(t, svc, clock, seed)
		for i := range steps {
			sc.step()
			if i%20 == 19 {
				sc.check()
			}
		}
		sc.check()
	})
}

// The same oracle with the ids of a batch sharing their millisecond, as
// billingd's own do: records of the id index hold several events, of
// several aliases, so a page of one alias (its own index,
// usagealiasids.go) starts and ends inside records, and supersedes delete
// entries from the middle and the start of stored records.
func TestUsageEventListsOfOneAliasMatchAnOracle(t *testing.T) {
	t.Parallel()
	steps := billingtest.EnvCount(t, "BILLINGD_LISTCOUNT_STEPS", 120, 20)
	seed := billingtest.Seed(t, "BILLINGD_LISTCOUNT_SEED")
	onStores(t, func(t *testing.T, opts ...billingtest.Option) {
		newID, _ := billingtest.MillisecondIDs(4)
		svc, clock := billingtest.NewService(t, append(opts, billingtest.WithConfig(billing.Config{NewID: newID}))...)
		sc := newListScenario(t, svc, clock, seed)
		for i := range steps {
			if sc.step(); sc.rnd.IntN(2) == 0 {
				sc.ingest()
			}
			if i%20 == 19 {
				sc.check()
			}
		}
		sc.check()
	})
}

func TestKeptListCountsAreBuiltForAStoreWrittenWithoutThem(t *testing.T) {
	t.Parallel()
	st := billingtest.DurableStore(t)
	clock := billingtest.NewClock(billingtest.Start)
	newID, _ := billingtest.MillisecondIDs(3) // records of several events and aliases
	cfg := billing.Config{Now: clock.Now, NewID: newID}
	svc, _ := billingtest.NewService(t, billingtest.WithStore(st), billingtest.WithConfig(cfg))
	sc := newListScenario(t, svc, clock, billingtest.Seed(t, "BILLINGD_LISTCOUNT_SEED"))
	for range 60 {
		sc.step()
	}
	sc.check()
	// What a store written before kept counts looks like: no counts, no
	// indexes, no marker.
	ctx := context.Background()
	err := st.Update(ctx, func(tx billing.Tx) error {
		for _, table := range []billing.Table{"list_counts", "list_index", "usage_alias_ids"} {
			var keys [][]byte
			if err := tx.Scan(ctx, table, billing.Range{}, func(k, _ []byte) error {
				keys = append(keys, slices.Clone(k))
				return nil
			}); err != nil {
				return err
			}
			for _, k := range keys {
				if err := tx.Delete(ctx, table, k); err != nil {
					return err
				}
			}
		}
		if err := tx.Delete(ctx, "meta", []byte("usage_alias_ids")); err != nil {
			return err
		}
		return tx.Delete(ctx, "meta", []byte("list_counts"))
	})
	if err != nil {
		t.Fatal(err)
	}
	if p := must(svc.ListInvoices(ctx, sc.acct, billing.InvoiceFilter{}, billing.ListParams{})).of(t, "ListInvoices"); p.TotalResultSize != 0 && len(sc.m.invOrder) > 0 {
		t.Fatalf("with the counts gone the list still counts %d: the test does not test the rebuild", p.TotalResultSize)
	}
	if p := must(svc.ListUsageEvents(ctx, sc.acct, billing.UsageEventFilter{CustomerAlias: "alias-0"}, billing.ListParams{})).of(t, "ListUsageEvents"); len(p.Items) != 0 {
		t.Fatalf("with the index of each alias gone a list of one alias still has %d events: the test does not test the rebuild", len(p.Items))
	}
	sc.svc, _ = billingtest.NewService(t, billingtest.WithStore(st), billingtest.WithConfig(cfg))
	sc.check()
	for range 40 {
		sc.step()
	}
	sc.check()
}
