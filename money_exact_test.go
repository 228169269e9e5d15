package billing_test

import (
	"fmt"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/billingd/billing"
	"github.com/billingd/billing/billingtest"
)

// Exactness at the limits of the wire grammar (20 digits before the point,
// 12 after): products, sums and the named rounding checked against math/big
// integers scaled by 10^12.

const exactScale = 12

// randomWireDecimal returns a decimal string with up to 20 integer and 12
// fraction digits (often exactly 20 and 12), and its value × 10^12.
func randomWireDecimal(r *rand.Rand) (string, *big.Int) {
	digits := func(n int) string {
		var b strings.Builder
		for range n {
			b.WriteByte(byte('0' + r.IntN(10)))
		}
		return b.String()
	}
	intDigits, fracDigits := 20, 12
	if r.IntN(3) == 0 {
		intDigits, fracDigits = 1+r.IntN(20), r.IntN(13)
	}
	s := digits(intDigits)
	if fracDigits > 0 {
		s += "." + digits(fracDigits)
	}
	if r.IntN(4) == 0 {
		s = "-" + s
	}
	neg, text := strings.HasPrefix(s, "-"), strings.TrimPrefix(s, "-")
	intPart, frac, _ := strings.Cut(text, ".")
	scaled, _ := new(big.Int).SetString(intPart+frac+strings.Repeat("0", exactScale-len(frac)), 10)
	if neg {
		scaled.Neg(scaled)
	}
	return s, scaled
}

// bigText renders n / 10^scale with exactly scale fraction digits.
func bigText(n *big.Int, scale int) string {
	neg := n.Sign() < 0
	s := new(big.Int).Abs(n).String()
	if scale > 0 {
		if len(s) <= scale {
			s = strings.Repeat("0", scale-len(s)+1) + s
		}
		s = s[:len(s)-scale] + "." + s[len(s)-scale:]
	}
	if neg && strings.Trim(s, "0.") != "" {
		s = "-" + s
	}
	return s
}

// bigRound rounds n / 10^from to `to` fraction digits (to <= from), ties
// away from zero or to even, and returns the result scaled by 10^to.
func bigRound(n *big.Int, from, to int, even bool) *big.Int {
	div := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(from-to)), nil)
	q, rem := new(big.Int).QuoRem(new(big.Int).Abs(n), div, new(big.Int))
	twice := new(big.Int).Mul(rem, big.NewInt(2))
	switch c := twice.Cmp(div); {
	case c > 0, c == 0 && !even, c == 0 && even && q.Bit(0) == 1:
		q.Add(q, big.NewInt(1))
	}
	if n.Sign() < 0 {
		q.Neg(q)
	}
	return q
}

func TestProductsAndSumsAreExactAtTheGrammarLimits(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(14, 2026))
	for i := range 5000 {
		qs, qb := randomWireDecimal(r)
		rs, rb := randomWireDecimal(r)
		q, rate := billing.MustDecimal(qs), billing.MustDecimal(rs)
		prod := new(big.Int).Mul(qb, rb) // scaled by 10^24
		if got, want := q.Mul(rate).Round(2*exactScale, billing.RoundHalfUp).String(), bigText(prod, 2*exactScale); got != want {
			t.Fatalf("#%d %s × %s = %s, want %s", i, qs, rs, got, want)
		}
		sum := new(big.Int).Add(qb, rb)
		if got, want := q.Add(rate).Round(exactScale, billing.RoundHalfUp).String(), bigText(sum, exactScale); got != want {
			t.Fatalf("#%d %s + %s = %s, want %s", i, qs, rs, got, want)
		}
		for _, places := range []int{0, 2} {
			for _, mode := range []billing.Rounding{billing.RoundHalfUp, billing.RoundHalfEven} {
				got := q.Mul(rate).Round(int32(places), mode).String()
				want := bigText(bigRound(prod, 2*exactScale, places, mode == billing.RoundHalfEven), places)
				if got != want {
					t.Fatalf("#%d round(%s × %s, %d, %s) = %s, want %s", i, qs, rs, places, mode, got, want)
				}
			}
		}
	}
}

// The same rule through an invoice line: netTotal = round(quantity × rate)
// of the exact product, tax = round(net × taxRate), for products that fit
// the 20 digits a total may have, in both rounding modes and both kinds of
// currencies.
func TestLineTotalsAreExactAtTheGrammarLimits(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(14, 7))
	for _, mode := range []billing.Rounding{billing.RoundHalfUp, billing.RoundHalfEven} {
		f := newSched(t, billingtest.WithConfig(billing.Config{Rounding: mode}))
		for _, cur := range []billing.Currency{billing.CurrencyGBP, billing.CurrencyJPY} {
			inv, err := f.svc.CreateInvoice(f.ctx, f.account, billing.InvoiceParams{Currency: cur, CustomerID: f.customer})
			f.must(err)
			for i := range 150 {
				// At most 19 integer digits between quantity and rate, so
				// the net fits 20 digits; 12 fraction digits each.
				qi := r.IntN(12)
				qs := fmt.Sprintf("%d%s.%012d", 1+r.IntN(9), strings.Repeat("7", qi), r.Int64N(1e12))
				rs := fmt.Sprintf("%d%s.%012d", r.IntN(10), strings.Repeat("3", 17-qi), r.Int64N(1e12))
				_, qb := scaledOf(qs)
				_, rb := scaledOf(rs)
				tax := fmt.Sprintf("0.%012d", r.Int64N(1e12))
				_, tb := scaledOf(tax)
				l, err := f.svc.CreateInvoiceLineItem(f.ctx, f.account, inv.ID, billing.InvoiceLineItemParams{
					Title: "x", Quantity: dp(qs), Rate: dp(rs), TaxRate: dp(tax), ExternalIDs: []billing.KeyValue{}})
				f.must(err)
				even := mode == billing.RoundHalfEven
				d := int(cur.MinorUnits())
				net := bigRound(new(big.Int).Mul(qb, rb), 2*exactScale, d, even)
				taxAmt := bigRound(new(big.Int).Mul(net, tb), d+exactScale, d, even)
				if l.NetTotal.String() != bigText(net, d) || l.TotalTax.String() != bigText(taxAmt, d) ||
					l.GrossTotal.String() != bigText(new(big.Int).Add(net, taxAmt), d) {
					t.Fatalf("%s %s #%d: %s × %s (tax %s) = %s/%s/%s, want %s/%s", mode, cur, i, qs, rs, tax,
						l.NetTotal, l.TotalTax, l.GrossTotal, bigText(net, d), bigText(taxAmt, d))
				}
				f.must(f.svc.DeleteInvoiceLineItem(f.ctx, f.account, inv.ID, l.ID))
			}
		}
	}
}

// scaledOf returns s and its value × 10^12 (s has at most 12 fraction digits).
func scaledOf(s string) (string, *big.Int) {
	intPart, frac, _ := strings.Cut(s, ".")
	n, _ := new(big.Int).SetString(intPart+frac+strings.Repeat("0", exactScale-len(frac)), 10)
	return s, n
}

// A document keeps the rounding mode it was created with: a Service started
// with another mode on the same store computes only new documents with it.
func TestDocumentKeepsItsRoundingMode(t *testing.T) {
	t.Parallel()
	store := billingtest.Bolt(t)
	f := newSched(t, billingtest.WithStore(store))
	old, err := f.svc.CreateInvoice(f.ctx, f.account, billing.InvoiceParams{Currency: billing.CurrencyGBP, CustomerID: f.customer})
	f.must(err)
	even, _ := billingtest.NewService(t, billingtest.WithStore(store), billingtest.WithConfig(billing.Config{Rounding: billing.RoundHalfEven}))
	fresh, err := even.CreateInvoice(f.ctx, f.account, billing.InvoiceParams{Currency: billing.CurrencyGBP, CustomerID: f.customer})
	f.must(err)
	for _, c := range []struct{ id, want string }{{old.ID, "2.35"}, {fresh.ID, "2.34"}} {
		l, err := even.CreateInvoiceLineItem(f.ctx, f.account, c.id, billing.InvoiceLineItemParams{
			Title: "x", Quantity: dp("1"), Rate: dp("2.345"), TaxRate: dp("0"), ExternalIDs: []billing.KeyValue{}})
		f.must(err)
		if l.NetTotal.String() != c.want {
			t.Errorf("invoice %s: net %s, want %s", c.id, l.NetTotal, c.want)
		}
	}
}
