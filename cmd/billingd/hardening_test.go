package main

import (
	"io"
	"net/netip"
	"slices"
	"testing"
)

// TestConsoleSecureCookiesDefault: --console-secure-cookies is on unless
// the listen address is loopback, and the flag or its environment
// variable wins either way; --trusted-proxies takes addresses and CIDRs.
func TestConsoleSecureCookiesDefault(t *testing.T) {
	for _, c := range []struct {
		args []string
		env  map[string]string
		want bool
	}{
		{nil, nil, false}, // 127.0.0.1:8080
		{[]string{"--addr", "[::1]:0"}, nil, false},
		{[]string{"--addr", "localhost:0"}, nil, false},
		{[]string{"--addr", ":8080"}, nil, true},
		{[]string{"--addr", "0.0.0.0:8080"}, nil, true},
		{[]string{"--addr", "10.0.0.5:8080"}, nil, true},
		{[]string{"--addr", "0.0.0.0:8080", "--console-secure-cookies=false"}, nil, false},
		{[]string{"--console-secure-cookies"}, nil, true},
		{[]string{"--addr", ":8080"}, map[string]string{"BILLINGD_CONSOLE_SECURE_COOKIES": "false"}, false},
		{nil, map[string]string{"BILLINGD_CONSOLE_SECURE_COOKIES": "true"}, true},
	} {
		cli := &cli{stdout: io.Discard, stderr: io.Discard, getenv: mapEnv(c.env)}
		cfg, err := cli.parseServe(c.args)
		if err != nil {
			t.Fatalf("%v %v: %v", c.args, c.env, err)
		}
		if got := cfg.secureCookies.or(!isLoopback(cfg.addr)); got != c.want {
			t.Errorf("%v %v: secure cookies %v, want %v", c.args, c.env, got, c.want)
		}
	}
	cli := &cli{stdout: io.Discard, stderr: io.Discard, getenv: mapEnv(nil)}
	cfg, err := cli.parseServe([]string{"--trusted-proxies", "10.0.0.0/8, 192.0.2.7,::1"})
	want := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("192.0.2.7/32"), netip.MustParsePrefix("::1/128")}
	if err != nil || !slices.Equal(cfg.trustedProxies, want) {
		t.Errorf("--trusted-proxies: %v %v", cfg.trustedProxies, err)
	}
	if _, err := cli.parseServe([]string{"--trusted-proxies", "proxy.internal"}); err == nil {
		t.Error("--trusted-proxies accepted a name")
	}
	if _, err := cli.parseServe([]string{"--render-queue", "-1"}); err == nil {
		t.Error("--render-queue accepted -1")
	}
}
