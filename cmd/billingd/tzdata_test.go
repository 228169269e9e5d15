package main

import (
	"net/http"
	"os/exec"
	"strings"
	"testing"
)

// TestBinaryLoadsZonesWithoutAHostZoneDatabase runs billingd serve with
// ZONEINFO pointing to an empty directory and, where user namespaces
// allow, the host's /usr/share/zoneinfo hidden under an empty tmpfs: the
// binary still knows every IANA zone, from the database it embeds.
func TestBinaryLoadsZonesWithoutAHostZoneDatabase(t *testing.T) {
	t.Parallel()
	var wrap []string
	if exec.Command("unshare", "-rm", "sh", "-c", "mount -t tmpfs none /usr/share/zoneinfo").Run() == nil {
		wrap = []string{"unshare", "-rm", "sh", "-c", `mount -t tmpfs none /usr/share/zoneinfo && exec "$@"`, "sh"}
	} else {
		t.Log("no user namespaces here: only ZONEINFO hides the zone database; the host's stays readable")
	}
	s := startServerIn(t, wrap, []string{"ZONEINFO=" + t.TempDir()})
	for _, zone := range []string{"Pacific/Kiritimati", "Etc/GMT+12", "America/Los_Angeles", "Europe/London"} {
		code, body := s.do(t, "PUT", "/account-settings", s.auth, `{"timeZone":"`+zone+`"}`)
		if code != http.StatusOK || !strings.Contains(body, zone) {
			t.Errorf("PUT /account-settings %s: %d %s", zone, code, body)
		}
	}
	if code, body := s.do(t, "PUT", "/account-settings", s.auth, `{"timeZone":"Mars/Olympus"}`); code != http.StatusBadRequest || !strings.Contains(body, "timeZone") {
		t.Errorf("an unknown zone: %d %s, want 400 on timeZone", code, body)
	}
}
