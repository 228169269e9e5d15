package httpserver

import (
	"fmt"
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

// TestSeatBalancesAsOfADateInEachCustomersZone reads seat balances asOf a
// date: the start of that day in each customer's own zone (UTC+14 begins
// 2024-07-31 fourteen hours before UTC does).
func TestSeatBalancesAsOfADateInEachCustomersZone(t *testing.T) {
	t.Parallel()
	onEveryStore(t, func(t *testing.T, e *env) {
		east := e.create("/customers", `{"legalName":"East","customerAliases":["east"],"timeZone":"Pacific/Kiritimati"}`)
		utc := e.create("/customers", `{"legalName":"Zulu","customerAliases":["zulu"]}`)
		for _, ev := range []struct {
			alias, at string
			total     int
		}{
			{"east", "2024-07-30T09:59:59Z", 3}, {"east", "2024-07-30T10:00:00Z", 5}, // Kiritimati's July 31 begins at 10:00Z
			{"zulu", "2024-07-30T10:00:00Z", 2}, {"zulu", "2024-07-31T00:00:01Z", 7},
		} {
			e.create("/seat-events", fmt.Sprintf(`{"customerAlias":%q,"seatType":"editor","eventTimestamp":%q,"total":%d}`, ev.alias, ev.at, ev.total))
		}
		totals := func(query string) map[string]float64 {
			out := map[string]float64{}
			for _, it := range decode[page](t, e.get("/seat-balances?"+query)).Items {
				out[it["id"].(string)] = it["total"].(float64)
			}
			return out
		}
		if got := totals("asOf=2024-07-31"); got[east] != 5 || got[utc] != 2 {
			t.Errorf("asOf 2024-07-31: east %v (want 5), utc %v (want 2)", got[east], got[utc])
		}
		if got := totals("asOf=2024-07-30"); got[east] != 0 || got[utc] != 0 {
			t.Errorf("asOf 2024-07-30: east %v, utc %v, want 0 and 0", got[east], got[utc])
		}
		wantError(t, e.get("/seat-balances?asOf=2024-02-30"), 400, billing.CodeValidationFailed, "asOf")
		wantError(t, e.get("/seat-balances?asOf=1999-12-31"), 400, billing.CodeValidationFailed, "asOf")
	})
}
