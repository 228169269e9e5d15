package main

import (
	"strings"
	"testing"
)

func TestServeRoundingFlag(t *testing.T) {
	t.Parallel()
	code, _, stderr := runCLI(t, nil, "serve", "--rounding", "bankers", "--db", tempDB(t))
	if code != exitUsage || !strings.Contains(stderr, "--rounding") {
		t.Errorf("--rounding bankers: exit %d, %q", code, stderr)
	}
	_, out, errOut := runCLI(t, nil, "serve", "--help")
	if !strings.Contains(out+errOut, "-rounding") || !strings.Contains(out+errOut, "half-even") {
		t.Errorf("serve --help does not show --rounding:\n%s%s", out, errOut)
	}
}

// A server started with --rounding half-even rounds a tie to the even cent.
func TestServeRoundsHalfEven(t *testing.T) {
	t.Parallel()
	url, out, stop := serveInProcess(t, tempDB(t), "--rounding", "half-even", "--billing-interval", "0")
	auth := out.waitFor(t, bootstrapRE)[4]
	post := func(path, body string) string {
		t.Helper()
		code, b := request(url, auth, "POST", path, body)
		if code != 201 {
			t.Fatalf("POST %s: %d %s", path, code, b)
		}
		return b
	}
	id := func(body string) string { return strings.Split(strings.Split(body, `"id":"`)[1], `"`)[0] }
	customer := id(post("/customers", `{"legalName":"Initech"}`))
	inv := id(post("/invoices", `{"currency":"GBP","customerId":"`+customer+`"}`))
	line := post("/invoices/"+inv+"/line-items", `{"title":"x","quantity":"1","rate":"2.345","taxRate":"0","externalIds":[]}`)
	if !strings.Contains(line, `"netTotal":"2.34"`) {
		t.Errorf("line %s, want netTotal 2.34 (half-even)", line)
	}
	if code := stop(); code != exitOK {
		t.Errorf("exit %d", code)
	}
}
