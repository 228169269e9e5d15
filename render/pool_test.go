package render

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/billingd/billing"
)

// TestPoolQueueIsBounded: with one slot busy and the one queue place
// taken, a further render is refused at once with ErrBusy and a
// Retry-After; the queued one runs when the slot frees.
func TestPoolQueueIsBounded(t *testing.T) {
	t.Parallel()
	p := NewPool(PoolConfig{Concurrency: 1, Queue: 1, MaxWait: time.Minute})
	release := make(chan struct{})
	started := make(chan struct{})
	go func() {
		_, _ = p.slot(context.Background(), func() ([]byte, error) { close(started); <-release; return nil, nil })
	}()
	<-started
	queued := make(chan error, 1)
	go func() {
		_, err := p.slot(context.Background(), func() ([]byte, error) { return []byte("late"), nil })
		queued <- err
	}()
	for len(p.admit) < 2 { // the second render is waiting
		time.Sleep(time.Millisecond)
	}
	_, err := p.slot(context.Background(), func() ([]byte, error) { t.Error("a refused render ran"); return nil, nil })
	secs, busy := RetryAfter(err)
	if !errors.Is(err, ErrBusy) || !busy || secs < 1 || billing.CodeOf(err) != billing.CodeUnavailable {
		t.Errorf("a render beyond the queue: %v (Retry-After %d, busy %v), want ErrBusy", err, secs, busy)
	}
	close(release)
	if err := <-queued; err != nil {
		t.Errorf("the queued render: %v", err)
	}
	if st := p.Stats(); st.Renders != 2 || st.Refused != 1 {
		t.Errorf("stats %+v, want 2 renders and 1 refusal", st)
	}
}

// TestRendererRendersInItsPool: the Dispatcher's e-mails are rendered in
// the pool the Renderer was given, and an issued document's PDF is made
// once for the download and the e-mail.
func TestRendererRendersInItsPool(t *testing.T) {
	t.Parallel()
	p := NewPool(PoolConfig{})
	d := &billing.PrintableDocument{Kind: billing.DocumentInvoice, TemplateVersion: 1}
	one := billing.MustDecimal("1.00")
	d.Invoice = &billing.Invoice{DocumentHeader: billing.DocumentHeader{ID: "inv", Status: billing.StatusFinal, Currency: billing.CurrencyGBP}, InvoiceNumber: "INV00001",
		Totals: billing.Totals{NetTotal: one, TotalTax: billing.MustDecimal("0.00"), GrossTotal: one}}
	d.Invoice.AmountPaid, d.Invoice.AmountCredited, d.Invoice.AmountDue = billing.MustDecimal("0.00"), billing.MustDecimal("0.00"), one
	pdf, err := p.PDF(context.Background(), d)
	if err != nil {
		t.Fatal(err)
	}
	e, err := Renderer{Pool: p}.DocumentEmail(d)
	if err != nil {
		t.Fatal(err)
	}
	if st := p.Stats(); st.Renders != 1 || st.CacheHits != 1 || string(e.Attachments[0].Data) != string(pdf) {
		t.Errorf("stats %+v: want the e-mail's PDF from the cache", st)
	}
}
