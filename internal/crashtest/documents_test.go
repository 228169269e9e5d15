package crashtest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
	"github.com/billingd/billing/dispatch"
	"github.com/billingd/billing/webhook"
)

// The document and webhook workloads of the crash harness: invoices created,
// given a line and sent; credit notes against a sent invoice, given a line
// and finalized or marked as sent; and, over all of them, a webhook policy
// covering every notification type whose receiver runs in the parent test
// process, so every committed notification must reach it.

// Long on purpose: it registers the document workloads of the crash test, one entry each.
func init() {
	workloads = append(workloads,
		workload{
			name: "invoice_send", // three transactions; the send assigns the number
			write: func(ctx context.Context, c *client, n string) (string, error) {
				key := "inv-" + n
				if _, err := c.sentInvoice(ctx, key); err != nil {
					return "", err
				}
				return key, nil
			},
			stored: func(ctx context.Context, svc *billing.Service, account string) (map[string]int, error) {
				// An acknowledged send is stored as SENT with a number.
				out := map[string]int{}
				err := eachInvoice(ctx, svc, account, func(inv *billing.Invoice) {
					if strings.HasPrefix(inv.Memo, "inv-") && inv.Status == billing.StatusSent && inv.InvoiceNumber != "" {
						out[inv.Memo]++
					}
				})
				return out, err
			},
		},
		workload{
			name: "credit_note", // against a SENT invoice, then finalized or marked as sent
			write: func(ctx context.Context, c *client, n string) (string, error) {
				key := "cn-" + n
				inv, err := c.sentInvoice(ctx, "cninv-"+n)
				if err != nil {
					return "", err
				}
				body, err := c.expect(ctx, "/credit-notes", fmt.Sprintf(`{"currency":"GBP","customerId":%q,"invoiceId":%q,"memo":%q}`, c.customer, inv, key), http.StatusCreated)
				if err != nil {
					return "", err
				}
				cn := idOf(body)
				if _, err := c.expect(ctx, "/credit-notes/"+cn+"/line-items", fmt.Sprintf(`{"creditNoteId":%q,"title":"Refund","quantity":"1","rate":"1.50","taxRate":"0.2","externalIds":[]}`, cn), http.StatusCreated); err != nil {
					return "", err
				}
				op := "/finalize"
				if (n[len(n)-1]-'0')%2 == 1 { // every other one
					op = "/mark-as-sent"
				}
				if _, err := c.expect(ctx, "/credit-notes/"+cn+op, "", http.StatusOK); err != nil {
					return "", err
				}
				return key, nil
			},
			stored: func(ctx context.Context, svc *billing.Service, account string) (map[string]int, error) {
				// An acknowledged finalization or mark-as-sent is stored as
				// FINAL or SENT with a number.
				out := map[string]int{}
				err := eachCreditNote(ctx, svc, account, func(cn *billing.CreditNote) {
					if strings.HasPrefix(cn.Memo, "cn-") && (cn.Status == billing.StatusFinal || cn.Status == billing.StatusSent) && cn.CreditNoteNumber != "" {
						out[cn.Memo]++
					}
				})
				return out, err
			},
		},
	)
}

// expect posts body to path and returns the answer's body when its status
// is want.
func (c *client) expect(ctx context.Context, path, body string, want int) (string, error) {
	status, answer, err := c.post(ctx, path, body, nil)
	if _, err := ackedKey(path, status, answer, err, want); err != nil {
		return "", fmt.Errorf("POST %s: %w", path, err)
	}
	return answer, nil
}

// sentInvoice creates an invoice with memo, adds a line (net 10.00, tax
// 2.00) and sends it; it returns the invoice id once the send was
// acknowledged.
func (c *client) sentInvoice(ctx context.Context, memo string) (string, error) {
	body, err := c.expect(ctx, "/invoices", fmt.Sprintf(`{"currency":"GBP","customerId":%q,"memo":%q}`, c.customer, memo), http.StatusCreated)
	if err != nil {
		return "", err
	}
	id := idOf(body)
	if _, err := c.expect(ctx, "/invoices/"+id+"/line-items", `{"title":"Plan","quantity":"1","rate":"10","taxRate":"0.2","externalIds":[]}`, http.StatusCreated); err != nil {
		return "", err
	}
	if _, err := c.expect(ctx, "/invoices/"+id+"/send", "", http.StatusOK); err != nil {
		return "", err
	}
	return id, nil
}

// idOf returns the "id" member of a JSON object ("" when there is none).
func idOf(body string) string {
	var v struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal([]byte(body), &v)
	return v.ID
}

// eachItem calls fn for every item of a list, page by page.
func eachItem[T any](list func(billing.ListParams) (billing.Page[T], error), fn func(*T)) error {
	return pages(func(p billing.ListParams) (string, error) {
		page, err := list(p)
		for i := range page.Items {
			fn(&page.Items[i])
		}
		return page.After, err
	})
}

// eachInvoice calls fn for every invoice of account.
func eachInvoice(ctx context.Context, svc *billing.Service, account string, fn func(*billing.Invoice)) error {
	return eachItem(func(p billing.ListParams) (billing.Page[billing.Invoice], error) {
		return svc.ListInvoices(ctx, account, billing.InvoiceFilter{}, p)
	}, fn)
}

// eachCreditNote calls fn for every credit note of account.
func eachCreditNote(ctx context.Context, svc *billing.Service, account string, fn func(*billing.CreditNote)) error {
	return eachItem(func(p billing.ListParams) (billing.Page[billing.CreditNote], error) {
		return svc.ListCreditNotes(ctx, account, billing.CreditNoteFilter{}, p)
	}, fn)
}

// wantGapless fails unless numbers are exactly prefix00001 to prefixN, each
// once.
func wantGapless(t *testing.T, round int, prefix string, numbers []string) {
	t.Helper()
	slices.Sort(numbers)
	for i, n := range numbers {
		if want := fmt.Sprintf("%s%05d", prefix, i+1); n != want {
			t.Errorf("round %d: %s numbers are not unique and gapless: position %d is %s, want %s (of %d numbers)", round, prefix, i, n, want, len(numbers))
			return
		}
	}
}

// wantGaplessNumbers lists the documents of one kind (each calls fn for
// every one) and checks that those with a number (number(d) != "") have
// unique and gapless ones; it returns how many have one.
func wantGaplessNumbers[D any](t *testing.T, round int, kind, prefix string, each func(fn func(D)) error, number func(D) string) int {
	t.Helper()
	var numbers []string
	err := each(func(d D) {
		if n := number(d); n != "" {
			numbers = append(numbers, n)
		}
	})
	if err != nil {
		t.Errorf("round %d: listing %s: %v", round, kind, err)
	}
	wantGapless(t, round, prefix, numbers)
	return len(numbers)
}

// checkDocuments checks the invariants of documents after a crash: unique
// gapless numbers per kind, and a balanced journal for every source.
func checkDocuments(t *testing.T, ctx context.Context, svc *billing.Service, account string, round int) (invoices, creditNotes int) {
	t.Helper()
	invoices = wantGaplessNumbers(t, round, "invoices", "INV",
		func(fn func(*billing.Invoice)) error { return eachInvoice(ctx, svc, account, fn) },
		func(inv *billing.Invoice) string { return inv.InvoiceNumber })
	creditNotes = wantGaplessNumbers(t, round, "credit notes", "CN",
		func(fn func(*billing.CreditNote)) error { return eachCreditNote(ctx, svc, account, fn) },
		func(cn *billing.CreditNote) string { return cn.CreditNoteNumber })

	type sides struct{ debit, credit billing.Decimal }
	bySource := map[string]*sides{}
	err := pages(func(p billing.ListParams) (string, error) {
		page, err := svc.ListJournalEntries(ctx, account, billing.JournalFilter{}, p)
		for _, e := range page.Items {
			s := bySource[e.SourceID]
			if s == nil {
				s = &sides{billing.MustDecimal("0"), billing.MustDecimal("0")}
				bySource[e.SourceID] = s
			}
			s.debit, s.credit = s.debit.Add(e.Debit), s.credit.Add(e.Credit)
		}
		return page.After, err
	})
	if err != nil {
		t.Errorf("round %d: listing the journal: %v", round, err)
	}
	for src, s := range bySource {
		if s.debit.Cmp(s.credit) != 0 {
			t.Errorf("round %d: journal of %s: debits %s, credits %s", round, src, s.debit, s.credit)
		}
	}
	if invoices > 0 && len(bySource) == 0 {
		t.Errorf("round %d: %d numbered invoices and an empty journal", round, invoices)
	}
	return invoices, creditNotes
}

// receivedIDs verifies every webhook rcv received so far with secret and
// returns how many times each webhook-id arrived.
func receivedIDs(t *testing.T, rcv *billingtest.WebhookReceiver, secret string, round int) map[string]int {
	t.Helper()
	ids := map[string]int{}
	for _, w := range rcv.Received() {
		// The verifying dispatcher signs with a clock moved forward
		// past leases (see dispatchAll): a day of tolerance covers it.
		if err := billing.VerifyWebhook(secret, w.Header, w.Body, 24*time.Hour); err != nil {
			t.Errorf("round %d: a webhook does not verify: %v", round, err)
			continue
		}
		id := w.Header.Get(billing.HeaderWebhookID)
		var n billing.Notification
		if err := json.Unmarshal(w.Body, &n); err != nil || n.ID != id {
			t.Errorf("round %d: webhook %s carries notification %q (%v)", round, id, n.ID, err)
		}
		ids[id]++
	}
	return ids
}

// dispatchAll runs a dispatcher over store's outbox, its clock moved a
// further two minutes ahead at every pass (past the leases of deliveries
// the killed child had claimed, and past retry waits), until no delivery is
// PENDING.
func dispatchAll(t *testing.T, ctx context.Context, store billing.Store, account string, round int) {
	t.Helper()
	var shift time.Duration
	svc, err := billing.New(store, &billing.Config{WebhookAllowPrivate: true, Now: func() time.Time { return time.Now().Add(shift) }})
	if err != nil {
		t.Fatal(err)
	}
	d := dispatch.New(svc, dispatch.Config{Webhooks: webhook.NewSender(true), Retention: -1})
	for pass := range 20 {
		if _, err := d.RunOnce(ctx); err != nil {
			t.Fatalf("round %d: dispatching: %v", round, err)
		}
		page, err := svc.ListDeliveries(ctx, account, billing.DeliveryFilter{Status: billing.DeliveryPending}, billing.ListParams{Limit: 1})
		if err != nil {
			t.Fatalf("round %d: listing pending deliveries: %v", round, err)
		}
		if len(page.Items) == 0 {
			return
		}
		if pass == 19 {
			t.Fatalf("round %d: deliveries still PENDING after %d passes: %+v", round, pass+1, page.Items[0])
		}
		shift += 2 * time.Minute
	}
}

// checkWebhooks dispatches what is pending, then checks that every
// committed notification of the policy was received at least once with its
// original id, and that nothing else was received. It returns the number of
// notifications.
func checkWebhooks(t *testing.T, ctx context.Context, store billing.Store, svc *billing.Service, account string, rcv *billingtest.WebhookReceiver, round int) int {
	t.Helper()
	dispatchAll(t, ctx, store, account, round)
	return checkReceived(t, ctx, svc, account, rcv, round)
}

// checkReceived checks that every committed notification of the one webhook
// policy was delivered (SUCCEEDED) and received at least once with its
// original id, signed, and that nothing else was received. It returns the
// number of notifications.
func checkReceived(t *testing.T, ctx context.Context, svc *billing.Service, account string, rcv *billingtest.WebhookReceiver, round int) int {
	t.Helper()
	policies, err := svc.ListNotificationPolicies(ctx, account, billing.NotificationPolicyFilter{}, billing.ListParams{Limit: 10})
	if err != nil || len(policies.Items) != 1 {
		t.Fatalf("round %d: want the one webhook policy: %v %+v", round, err, policies.Items)
	}
	policy := policies.Items[0]
	committed := map[string]bool{}
	err = pages(func(p billing.ListParams) (string, error) {
		page, err := svc.ListDeliveries(ctx, account, billing.DeliveryFilter{PolicyID: policy.ID}, p)
		for _, d := range page.Items {
			committed[d.NotificationID] = true
			if d.Status != billing.DeliverySucceeded {
				t.Errorf("round %d: delivery %s of notification %s is %s: %+v", round, d.ID, d.NotificationID, d.Status, d.Attempts)
			}
		}
		return page.After, err
	})
	if err != nil {
		t.Fatalf("round %d: listing deliveries: %v", round, err)
	}
	got := receivedIDs(t, rcv, policy.WebhookSecret, round)
	for id := range committed {
		if got[id] == 0 {
			t.Errorf("round %d: committed notification %s was never received", round, id)
		}
	}
	for id := range got {
		if !committed[id] {
			t.Errorf("round %d: received webhook-id %s names no committed notification", round, id)
		}
	}
	if len(committed) == 0 {
		t.Errorf("round %d: no notification was committed", round)
	}
	return len(committed)
}
