package console

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// BenchmarkCustomerPage renders the page of a customer with 1,000
// invoices (20 shown, the pager counting all), as the console serves it
// to a signed-in browser: session, key check, every list of the page and
// the template. The issue asks for under 100 ms. Recorded in
// BENCHMARKS.md:
//
//	go test -run '^$' -bench CustomerPage -benchtime 200x ./console
func BenchmarkCustomerPage(b *testing.B) {
	f := newFixture(b)
	for range 999 {
		f.newInvoice(f.account, f.customer.ID, "1", "10")
	}
	benchPage(b, f, Prefix+"customers/"+f.customer.ID, "1000 in all")
}

// BenchmarkOverview renders the overview of an account with 1,000 issued
// invoices: SummarizeInvoices reads them all (per currency, 12 months), the
// chart, the failed deliveries, the failing schedules and the last run.
//
//	go test -run '^$' -bench Overview -benchtime 200x ./console
func BenchmarkOverview(b *testing.B) {
	f := newFixture(b)
	for range 1000 {
		inv := f.newInvoice(f.account, f.customer.ID, "1", "10")
		must(f.svc.FinalizeInvoice(context.Background(), f.account, inv.ID))
	}
	benchPage(b, f, Prefix, "<title>July 2024: £12,000.00</title>")
}

// benchPage serves path to a signed-in session of f's account b.N times
// and checks the last answer is 200 and contains want.
func benchPage(b *testing.B, f *fixture, path, want string) {
	br := f.signedIn()
	var cookie *http.Cookie
	for _, c := range br.client.Jar.Cookies(must(http.NewRequest(http.MethodGet, f.srv.URL+Prefix, nil)).URL) {
		if c.Name == cookieName {
			cookie = c
		}
	}
	req := httptest.NewRequest(http.MethodGet, path, nil)
	req.AddCookie(cookie)
	b.ReportAllocs()
	w := httptest.NewRecorder()
	for b.Loop() {
		w.Body.Reset()
		f.con.ServeHTTP(w, req)
	}
	if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), want) {
		b.Fatalf("GET %s: %d, want %q in\n%s", path, w.Code, want, w.Body)
	}
}
