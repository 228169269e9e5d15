package httpserver

import (
	"testing"

	"github.com/billingd/billing"
)

// TestAccountSettingsTimeZone sets the account's zone and a customer's own
// zone over HTTP; unknown zones are refused on the field.
func TestAccountSettingsTimeZone(t *testing.T) {
	e := newEnv(t, nil)
	if got := decode[billing.AccountSettings](t, e.get("/account-settings")); got.TimeZone != "UTC" {
		t.Fatalf("default zone %q, want UTC", got.TimeZone)
	}
	wantStatus(t, e.put("/account-settings", `{"timeZone":"Pacific/Kiritimati"}`), 200)
	if got := decode[billing.AccountSettings](t, e.get("/account-settings")); got.TimeZone != "Pacific/Kiritimati" {
		t.Fatalf("zone %q after PUT", got.TimeZone)
	}
	for _, bad := range []string{`"Mars/Olympus"`, `"Local"`, `"../../etc/passwd"`, `"europe/london "`} {
		wantError(t, e.put("/account-settings", `{"timeZone":`+bad+`}`), 400, billing.CodeValidationFailed, "timeZone")
	}
	wantError(t, e.put("/account-settings", `{"timeZone":14}`), 400, billing.CodeValidationFailed, "timeZone")

	c := decode[billing.Customer](t, e.post("/customers", `{"legalName":"West","timeZone":"Etc/GMT+12"}`))
	if c.TimeZone != "Etc/GMT+12" {
		t.Fatalf("customer zone %q", c.TimeZone)
	}
	wantError(t, e.post("/customers", `{"legalName":"Nowhere","timeZone":"Nowhere/City"}`), 400, billing.CodeValidationFailed, "timeZone")
	wantError(t, e.put("/customers/"+c.ID, `{"legalName":"West","timeZone":"UTC+3"}`), 400, billing.CodeValidationFailed, "timeZone")
	// A full replace without timeZone returns the customer to the account's zone.
	if got := decode[billing.Customer](t, e.put("/customers/"+c.ID, `{"legalName":"West"}`)); got.TimeZone != "" {
		t.Fatalf("zone %q after a replace without one", got.TimeZone)
	}
	// Back to the default.
	if got := decode[billing.AccountSettings](t, e.put("/account-settings", `{}`)); got.TimeZone != "UTC" {
		t.Fatalf("zone %q after PUT {}", got.TimeZone)
	}
}
