package httpserver

import (
	"bytes"
	"context"
	"io"
	"net/http"
	rtmetrics "runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/billingd/billing"
	"github.com/billingd/billing/render"
)

// bigInvoice creates a draft invoice of the account with the most lines a
// document may have (1,000), each with a long description: the costliest
// rendering a client can ask for.
func (e *env) bigInvoice() string {
	e.tb.Helper()
	ctx := context.Background()
	cust := e.customer("Load GmbH")
	id := e.invoice(cust, "")["id"].(string)
	desc := strings.Repeat("metered calls of the reporting API in the period, per tenant and region ", 13)
	for i := range 1000 {
		_, err := e.svc.CreateInvoiceLineItem(ctx, e.account, id, billing.InvoiceLineItemParams{
			Title: "Line " + strconv.Itoa(i+1), Description: desc,
			Quantity: ptr(billing.MustDecimal("3")), Rate: ptr(billing.MustDecimal("1.25")), TaxRate: ptr(billing.MustDecimal("0.2")), ExternalIDs: []billing.KeyValue{},
		})
		if err != nil {
			e.tb.Fatalf("line %d: %v", i, err)
		}
	}
	return id
}

// peakHeap samples the heap in use every 5 ms until stop is closed, and
// returns the highest sample.
func peakHeap(stop <-chan struct{}) <-chan uint64 {
	out := make(chan uint64, 1)
	go func() {
		s := []rtmetrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		var peak uint64
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			rtmetrics.Read(s)
			peak = max(peak, s[0].Value.Uint64())
			select {
			case <-stop:
				out <- peak
				return
			case <-t.C:
			}
		}
	}()
	return out
}

// TestConcurrentDownloadsStayBounded is the render limit's promise: 24
// concurrent downloads of a 1,000-line draft invoice keep the process's
// heap under 512 MiB, every answer is 200 or 503 with Retry-After, each
// within 30 seconds, and every 200 is the same PDF. Then the invoice is
// finalized: its rendering is made once and served from the cache.
//
// Long on purpose: one scenario (24 downloads at once, the heap sampled
// meanwhile, then the same invoice finalized) whose checks read in order.
func TestConcurrentDownloadsStayBounded(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes one render of this invoice take longer than the 30 seconds an answer may take; .ci/run's second pass runs this test without it")
	}
	pool := render.NewPool(render.PoolConfig{})
	e := newEnv(t, &Config{Renders: pool, RateLimit: -1})
	id := e.bigInvoice()
	srv := e.serve()

	get := func() (status int, retryAfter string, body []byte, took time.Duration, err error) {
		start := time.Now()
		rq, _ := http.NewRequest("GET", srv.URL+"/invoices/"+id+"/download", nil)
		rq.Header.Set("Authorization", e.auth)
		res, err := srv.Client().Do(rq)
		if err != nil {
			return 0, "", nil, time.Since(start), err
		}
		defer res.Body.Close()
		body, err = io.ReadAll(res.Body)
		return res.StatusCode, res.Header.Get("Retry-After"), body, time.Since(start), err
	}

	stop := make(chan struct{})
	peak := peakHeap(stop)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var pdfs [][]byte
	refused := 0
	for range 24 {
		wg.Go(func() {
			status, after, body, took, err := get()
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				t.Errorf("download: %v", err)
			case took > 30*time.Second:
				t.Errorf("a download was answered after %v", took)
			case status == http.StatusOK:
				pdfs = append(pdfs, body)
			case status == http.StatusServiceUnavailable || status == http.StatusTooManyRequests:
				refused++
				if n, err := strconv.Atoi(after); err != nil || n < 1 {
					t.Errorf("a %d answer's Retry-After is %q", status, after)
				}
			default:
				t.Errorf("a download answered %d: %s", status, body)
			}
		})
	}
	wg.Wait()
	close(stop)
	if p := <-peak; p >= 512<<20 {
		t.Errorf("peak heap %d MiB, want under 512 MiB", p>>20)
	} else {
		t.Logf("peak heap %d MiB; %d answers 200, %d refused", p>>20, len(pdfs), refused)
	}
	if len(pdfs) == 0 {
		t.Fatal("no download succeeded")
	}
	for _, p := range pdfs[1:] {
		if !bytes.Equal(p, pdfs[0]) {
			t.Fatal("two 200 answers carry different PDFs")
		}
	}

	wantStatus(t, e.post("/invoices/"+id+"/finalize", ""), http.StatusOK)
	before := pool.Stats()
	var final [][]byte
	for range 3 {
		status, _, body, _, err := get()
		if err != nil || status != http.StatusOK {
			t.Fatalf("download of the finalized invoice: %d %v", status, err)
		}
		final = append(final, body)
	}
	after := pool.Stats()
	if after.Renders-before.Renders != 1 || after.CacheHits-before.CacheHits != 2 {
		t.Errorf("three downloads of the finalized invoice made %d renders and %d cache hits, want 1 and 2",
			after.Renders-before.Renders, after.CacheHits-before.CacheHits)
	}
	if !bytes.Equal(final[1], final[0]) || !bytes.Equal(final[2], final[0]) {
		t.Error("the cached rendering differs from the first")
	}
}

// ptr returns a pointer to v.
func ptr[T any](v T) *T { return &v }

// TestDownloadCostsMoreThanARequest: a download takes RenderCost requests
// from its key's bucket (at most the burst): after one download a key
// with a burst of 2 is limited at once, where two reads pass.
func TestDownloadCostsMoreThanARequest(t *testing.T) {
	t.Parallel()
	cfg := &Config{RateLimit: 0.001, RateBurst: 2} // no refill during the test
	reads := newEnv(t, cfg)
	wantStatus(t, reads.get("/usage-metrics"), http.StatusOK)
	wantStatus(t, reads.get("/usage-metrics"), http.StatusOK)

	e := newEnv(t, cfg)
	ctx := context.Background()
	cust, err := e.svc.CreateCustomer(ctx, e.account, billing.CustomerParams{LegalName: "Cost Ltd"})
	if err != nil {
		t.Fatal(err)
	}
	inv, err := e.svc.CreateInvoice(ctx, e.account, billing.InvoiceParams{Currency: billing.CurrencyGBP, CustomerID: cust.ID})
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, e.get("/invoices/"+inv.ID+"/download"), http.StatusOK)
	wantError(t, e.get("/usage-metrics"), http.StatusTooManyRequests, CodeRateLimited)
}
