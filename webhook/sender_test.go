package webhook

import (
	"net/netip"
	"testing"
)

func TestCheckWebhookTarget(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		addr    string
		refused bool
	}{
		{"127.0.0.1", true}, {"127.8.9.10", true}, {"::1", true}, {"10.0.0.1", true},
		{"172.16.5.4", true}, {"192.168.0.1", true}, {"169.254.169.254", true}, {"169.254.1.1", true},
		{"100.64.0.1", true}, {"100.127.255.254", true}, {"0.0.0.0", true}, {"::", true},
		{"224.0.0.1", true}, {"ff02::1", true}, {"fe80::1", true}, {"fd00:ec2::254", true},
		{"::ffff:127.0.0.1", true}, {"::ffff:10.0.0.1", true}, {"255.255.255.255", true},
		{"::127.0.0.1", true}, {"::8.8.8.8", true}, {"::a00:1", true}, // IPv4-compatible (::/96)
		{"8.8.8.8", false}, {"100.128.0.1", false}, {"2001:4860:4860::8888", false}, {"93.184.215.14", false},
	} {
		err := checkTarget(netip.MustParseAddr(tc.addr))
		if (err != nil) != tc.refused {
			t.Errorf("%s: %v, want refused=%v", tc.addr, err, tc.refused)
		}
	}
}
