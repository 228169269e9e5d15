package render

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"html/template"
)

// page is the HTML rendering: one page, inline CSS, the logo as a data URI
// and nothing fetched from anywhere, so it can be shown as is (the console
// embeds it) or saved.
var page = template.Must(template.New("document").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}{{with .Number}} {{.}}{{end}}</title>
<style>
body{margin:0;background:#f3f4f6;font:14px/1.45 -apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;color:#1f2937}
.doc{position:relative;max-width:820px;margin:24px auto;background:#fff;padding:40px 48px;box-shadow:0 1px 3px rgba(0,0,0,.12);overflow:hidden}
.mark{position:absolute;top:38%;left:0;right:0;text-align:center;font-size:140px;font-weight:700;color:rgba(0,0,0,.06);transform:rotate(-35deg);pointer-events:none;user-select:none}
.head{display:flex;justify-content:space-between;gap:24px;align-items:flex-start}
.logo{max-width:200px;max-height:64px;display:block;margin-bottom:8px}
.merchant{font-size:20px;font-weight:700}
.title{font-size:30px;font-weight:700;text-align:right;color:{{.Accent}}}
.badge{display:inline-block;font-size:13px;vertical-align:middle;border:2px solid {{.Accent}};border-radius:4px;padding:1px 8px;margin-left:8px}
table{border-collapse:collapse;width:100%}
.facts td{padding:1px 0}.facts td:first-child{color:#6b7280;padding-right:16px}.facts td:last-child{text-align:right}
.label{font-size:11px;font-weight:700;letter-spacing:.04em;text-transform:uppercase;color:{{.Accent}}}
.parties{display:grid;grid-template-columns:repeat(3,1fr);gap:16px;border-top:1px solid #e5e7eb;margin-top:24px;padding-top:16px}
.refs{display:grid;grid-template-columns:repeat(4,1fr);gap:16px;margin-top:16px}
.lines{margin-top:24px}.lines th{font-size:11px;text-transform:uppercase;letter-spacing:.04em;color:{{.Accent}};text-align:right;border-bottom:2px solid {{.Accent}};padding:6px 4px}
.lines th:first-child,.lines td:first-child{text-align:left;padding-left:0}
.lines td{text-align:right;vertical-align:top;padding:6px 4px;border-bottom:1px solid #e5e7eb;overflow-wrap:anywhere}
.lines .group td{font-weight:700;color:{{.Accent}};border-bottom:none;padding-top:14px}
.lines .subtotal td{font-weight:700;border-bottom:none}
.small{font-size:12px;color:#6b7280}
.sums{display:flex;justify-content:space-between;gap:32px;margin-top:20px}
.sums table{width:auto;min-width:45%}.sums td{padding:2px 4px;text-align:right}.sums td:first-child{text-align:left}
.due td{font-size:17px;font-weight:700;border-top:2px solid {{.Accent}};padding-top:6px}
.block{margin-top:18px;overflow-wrap:anywhere}
.foot{margin-top:32px;border-top:1px solid {{.Accent}};padding-top:6px;font-size:12px;color:#6b7280}
</style>
</head>
<body>
<div class="doc">
{{with .Mark}}<div class="mark">{{.}}</div>{{end}}
<div class="head">
<div>{{with .LogoURI}}<img class="logo" src="{{.}}" alt="">{{end}}<div class="merchant">{{.Merchant.Name}}</div></div>
<div><div class="title">{{.Title}}{{with .Mark}}<span class="badge">{{.}}</span>{{end}}</div>
<table class="facts">{{range .Header}}<tr><td>{{.Label}}</td><td>{{.Value}}</td></tr>{{end}}</table></div>
</div>
<div class="parties">{{range .Parties}}<div><div class="label">{{.Heading}}</div><strong>{{.Name}}</strong>{{range .Lines}}<br>{{.}}{{end}}</div>{{end}}</div>
{{with .Refs}}<div class="refs">{{range .}}<div><div class="label">{{.Label}}</div>{{.Value}}</div>{{end}}</div>{{end}}
<table class="lines">
<thead><tr><th>Description</th><th>Quantity</th><th>Unit price</th><th>Tax</th><th>Amount</th></tr></thead>
<tbody>{{range .Sections}}{{if .Title}}
<tr class="group"><td colspan="5">{{.Title}}{{with .Description}}<div class="small">{{.}}</div>{{end}}</td></tr>{{end}}{{range .Lines}}
<tr><td><strong>{{.Title}}</strong>{{with .Description}}<div class="small">{{.}}</div>{{end}}{{with .Period}}<div class="small">{{.}}</div>{{end}}</td><td>{{.Quantity}}</td><td>{{.UnitPrice}}</td><td>{{.TaxRate}}</td><td>{{.Amount}}</td></tr>{{end}}{{if .Subtotal}}
<tr class="subtotal"><td colspan="4" style="text-align:right">Subtotal {{.Title}}</td><td>{{.Subtotal}}</td></tr>{{end}}{{end}}
</tbody>
</table>
<div class="sums">
<table>{{if .TaxRows}}<tr class="label"><td>Tax rate</td><td>Net</td><td>Tax</td></tr>{{range .TaxRows}}<tr><td>{{.Rate}}</td><td>{{.Net}}</td><td>{{.Tax}}</td></tr>{{end}}{{end}}</table>
<table>{{range .Totals}}<tr><td>{{.Label}}</td><td>{{.Value}}</td></tr>{{end}}{{with .Due}}<tr class="due"><td>{{.Label}}</td><td>{{.Value}}</td></tr>{{end}}</table>
</div>
{{range .Notes}}<div class="block">{{.}}</div>{{end}}
{{with .Memo}}<div class="block"><div class="label">Memo</div>{{.}}</div>{{end}}
{{range .Payment}}<div class="block"><div class="label">{{.Heading}}</div>{{range .Rows}}{{.Label}}: {{if .Link}}<a href="{{.Link}}">{{.Value}}</a>{{else}}{{.Value}}{{end}}<br>{{end}}</div>{{end}}
{{with .Custom}}<div class="block"><div class="label">Details</div>{{range .}}{{.Label}}: {{.Value}}<br>{{end}}</div>{{end}}
<div class="foot">{{.Footer}}</div>
</div>
</body>
</html>
`))

// htmlView is the view as the template reads it.
type htmlView struct {
	*view
	Accent  template.CSS
	LogoURI template.URL
	Parties []party
	Totals  []fact
	Due     *fact
}

// writeHTML renders v as HTML.
func writeHTML(v *view) ([]byte, error) {
	hv := htmlView{view: v, Accent: template.CSS(fmt.Sprintf("#%02x%02x%02x", v.Colour[0], v.Colour[1], v.Colour[2]))}
	if len(v.Logo) > 0 {
		hv.LogoURI = template.URL("data:image/png;base64," + base64.StdEncoding.EncodeToString(v.Logo))
	}
	hv.Parties = []party{v.Merchant, v.BillTo}
	if v.ShipTo != nil {
		hv.Parties = append(hv.Parties, *v.ShipTo)
	}
	if n := len(v.Totals); n > 0 {
		hv.Totals, hv.Due = v.Totals[:n-1], &v.Totals[n-1]
	}
	var b bytes.Buffer
	if err := page.Execute(&b, hv); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
