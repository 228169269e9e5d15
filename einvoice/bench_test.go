package einvoice_test

import (
	"testing"

	"github.com/billingd/billing"
	"github.com/billingd/billing/einvoice"
	"github.com/billingd/billing/render"
)

// BenchmarkWrite times writing a finalized document of 20 and of 1,000
// lines in each format, from the PrintableDocument (the store read is not
// included; Build is), and the plain PDF beside them, which the Factur-X PDF
// includes: BENCHMARKS.md records the figures.
func BenchmarkWrite(b *testing.B) {
	e := newEnv(b)
	cust := e.Customer(gbCustomer)
	docs := []struct {
		name string
		doc  *billing.PrintableDocument
	}{{"lines=20", manyLines(e, cust.ID, 20)}, {"lines=1000", manyLines(e, cust.ID, 1000)}}
	for _, d := range docs {
		b.Run(d.name+"/pdf", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := render.PDF(d.doc); err != nil {
					b.Fatal(err)
				}
			}
		})
		for _, f := range []einvoice.Format{einvoice.UBL, einvoice.CII, einvoice.FacturX} {
			b.Run(d.name+"/"+string(f), func(b *testing.B) {
				b.ReportAllocs()
				var size int
				for b.Loop() {
					data, _, err := einvoice.Write(d.doc, f)
					if err != nil {
						b.Fatal(err)
					}
					size = len(data)
				}
				b.ReportMetric(float64(size), "bytes/file")
			})
		}
	}
}
