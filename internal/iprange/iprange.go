// Package iprange says which IP addresses a webhook may not reach unless
// private targets are allowed: the one list both the Service (refusing IP
// literals when a policy is created) and the webhook sender (refusing
// every address it dials, after name resolution) check.
package iprange

import (
	"fmt"
	"net/netip"
)

// refusedPrefixes are the refused ranges besides what the netip predicates
// cover (loopback, private, link-local, multicast, unspecified).
var refusedPrefixes = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),          // "this network"
	netip.MustParsePrefix("100.64.0.0/10"),      // CGNAT
	netip.MustParsePrefix("192.0.0.0/24"),       // IETF protocol assignments
	netip.MustParsePrefix("198.18.0.0/15"),      // benchmarking
	netip.MustParsePrefix("240.0.0.0/4"),        // reserved, broadcast
	netip.MustParsePrefix("169.254.169.254/32"), // cloud metadata (also link-local)
	netip.MustParsePrefix("fd00:ec2::254/128"),  // AWS metadata over IPv6 (also private)
	netip.MustParsePrefix("64:ff9b::/96"),       // NAT64: an IPv4 address inside
	netip.MustParsePrefix("::/96"),              // IPv4-compatible (deprecated): ::127.0.0.1 and the like
	netip.MustParsePrefix("100::/64"),           // discard-only
}

// Check returns an error when a webhook must not connect to addr (an
// IPv4-mapped address is checked as its IPv4 address).
func Check(addr netip.Addr) error {
	addr = addr.Unmap()
	switch {
	case addr.IsLoopback(), addr.IsPrivate(), addr.IsLinkLocalUnicast(), addr.IsLinkLocalMulticast(),
		addr.IsInterfaceLocalMulticast(), addr.IsMulticast(), addr.IsUnspecified():
		return fmt.Errorf("webhook target %s is a loopback, private, link-local, multicast or unspecified address, which is refused unless private targets are allowed", addr)
	}
	for _, p := range refusedPrefixes {
		if p.Contains(addr) {
			return fmt.Errorf("webhook target %s is in the refused range %s (CGNAT, reserved, IPv4-compatible or cloud metadata) unless private targets are allowed", addr, p)
		}
	}
	return nil
}
