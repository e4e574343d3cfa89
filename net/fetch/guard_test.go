package fetch

import (
	"net/netip"
	"net/url"
	"strings"
	"testing"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
)

// Every range of the IANA special-purpose registries, at its first and
// last address where that matters, and the embeddings of special
// addresses in transition ranges.
var refusedAddrs = []struct{ addr, rule string }{
	{"0.0.0.0", "this network"},
	{"0.255.255.255", "this network"},
	{"10.0.0.1", "private (10."},
	{"10.255.255.255", "private (10."},
	{"100.64.0.1", "CGNAT"},
	{"100.127.255.254", "CGNAT"},
	{"127.0.0.1", "loopback"},
	{"127.255.255.254", "loopback"},
	{"169.254.169.254", "link-local"},
	{"169.254.0.1", "link-local"},
	{"172.16.0.1", "private (172.16."},
	{"172.31.255.254", "private (172.16."},
	{"192.0.0.8", "IETF protocol"},
	{"192.0.2.1", "TEST-NET-1"},
	{"192.31.196.1", "AS112-v4"},
	{"192.52.193.1", "AMT"},
	{"192.88.99.1", "6to4 relay"},
	{"192.168.1.1", "private (192.168."},
	{"192.175.48.1", "AS112 direct"},
	{"198.18.0.1", "benchmarking"},
	{"198.19.255.254", "benchmarking"},
	{"198.51.100.7", "TEST-NET-2"},
	{"203.0.113.9", "TEST-NET-3"},
	{"224.0.0.1", "multicast"},
	{"239.255.255.255", "multicast"},
	{"240.0.0.1", "reserved"},
	{"255.255.255.255", "broadcast"},
	{"::", "unspecified"},
	{"::1", "loopback"},
	{"::ffff:127.0.0.1", "IPv4-mapped"},
	{"::ffff:8.8.8.8", "IPv4-mapped"},
	{"::127.0.0.1", "IPv4-compatible IPv6 (::/96) embedding 127.0.0.1, loopback"},
	{"64:ff9b::7f00:1", "NAT64 well-known prefix (64:ff9b::/96) embedding 127.0.0.1, loopback"},
	{"64:ff9b::a9fe:a9fe", "embedding 169.254.169.254, link-local"},
	{"64:ff9b::808:808", "NAT64 well-known prefix (64:ff9b::/96) embedding 8.8.8.8"},
	{"64:ff9b:1::1", "NAT64 local-use"},
	{"100::1", "discard-only"},
	{"2001:0:4136:e378:8000:63bf:80ff:fffe", "Teredo (2001::/32) embedding 127.0.0.1, loopback"},
	{"2001:0:4136:e378:8000:63bf:3fff:fdd2", "Teredo (2001::/32) embedding 192.0.2.45, documentation"},
	{"2001:2::1", "IETF protocol assignments"},
	{"2001:db8::1", "documentation (2001:db8::/32)"},
	{"2002:7f00:1::1", "6to4 (2002::/16) embedding 127.0.0.1, loopback"},
	{"2002:a00:1::", "embedding 10.0.0.1, private"},
	{"2002:808:808::1", "6to4 (2002::/16) embedding 8.8.8.8"},
	{"2620:4f:8000::1", "AS112-v6"},
	{"3fff::1", "documentation (3fff::/20)"},
	{"5f00::1", "SRv6"},
	{"fc00::1", "unique-local"},
	{"fd12:3456::1", "unique-local"},
	{"fe80::1", "link-local"},
	{"febf::1", "link-local"},
	{"fec0::1", "site-local"},
	{"ff02::1", "multicast"},
	{"4000::1", "outside IPv6 global unicast"},
	{"1234::1", "outside IPv6 global unicast"},
}

var publicAddrs = []string{"8.8.8.8", "1.1.1.1", "93.184.216.34", "100.63.255.255", "100.128.0.0", "172.32.0.1",
	"192.0.1.255", "198.17.255.255", "198.20.0.0", "223.255.255.255", "2606:4700::1111", "2a00:1450::1", "2001:4860:4860::8888"}

func TestClassifyRefusesEverySpecialRange(t *testing.T) {
	for _, c := range refusedAddrs {
		got := classify(netip.MustParseAddr(c.addr))
		if got == "" || !strings.Contains(got, c.rule) {
			t.Errorf("classify(%s) = %q, want a rule containing %q", c.addr, got, c.rule)
		}
	}
	for _, a := range publicAddrs {
		if got := classify(netip.MustParseAddr(a)); got != "" {
			t.Errorf("classify(%s) = %q, want public", a, got)
		}
	}
}

func TestControlChecksTheDialledAddress(t *testing.T) {
	g := &guard{ports: []uint16{8443}, exceptions: []netip.Prefix{netip.MustParsePrefix("10.2.0.0/24")}}
	cases := []struct {
		network, addr string
		rule          string // "" = allowed
	}{
		{"tcp4", "8.8.8.8:443", ""},
		{"tcp4", "8.8.8.8:8443", ""},
		{"tcp4", "8.8.8.8:8444", "port 8444"},
		{"tcp4", "8.8.8.8:80", "port 80"},
		{"tcp4", "127.0.0.1:443", "loopback"},
		{"tcp4", "169.254.169.254:443", "169.254.169.254"},
		{"tcp4", "10.2.0.7:443", ""},
		{"tcp4", "10.2.1.7:443", "private"},
		{"tcp6", "[::1]:443", "loopback"},
		{"tcp6", "[::ffff:10.2.0.7]:443", "IPv4-mapped"},
		{"tcp6", "[fe80::1%eth0]:443", "zone"},
		{"tcp6", "[2606:4700::1111]:443", ""},
		{"udp4", "8.8.8.8:443", "not TCP"},
		{"tcp4", "garbage", "unparseable"},
	}
	for _, c := range cases {
		err := g.control(c.network, c.addr, nil)
		if c.rule == "" {
			if err != nil {
				t.Errorf("control(%s %s) = %v, want allowed", c.network, c.addr, err)
			}
			continue
		}
		if fault.CodeOf(err) != fault.Denied || !strings.Contains(err.Error(), c.rule) {
			t.Errorf("control(%s %s) = %v, want denied mentioning %q", c.network, c.addr, err, c.rule)
		}
	}
}

func TestCheckURLRefusesDisguises(t *testing.T) {
	g := &guard{ports: []uint16{8443}}
	refused := []struct{ url, rule string }{
		{"http://example.com/", "only https"},
		{"ftp://example.com/", "only https"},
		{"https://user:pw@example.com/", "userinfo"},
		{"https://user@example.com/", "userinfo"},
		{"https://example.com:8080/", "port 8080"},
		{"https://example.com:0/", "invalid port"},
		{"https://2130706433/", "number in disguise"},
		{"https://0x7f.1/", "number in disguise"},
		{"https://0x7f000001/", "number in disguise"},
		{"https://127.1/", "number in disguise"},
		{"https://0177.0.0.1/", "number in disguise"},
		{"https://127.0.0.1./", "number in disguise"},
		{"https://10.0.0.010/", "number in disguise"},
		{"https://example.0x10/", "number in disguise"},
		{"https://127.0.0.1/", "loopback"},
		{"https://169.254.169.254/latest/meta-data/", "link-local"},
		{"https://[::1]/", "loopback"},
		{"https://[::ffff:7f00:1]/", "IPv4-mapped"},
		{"https://[::ffff:127.0.0.1]:8443/", "IPv4-mapped"},
		{"https://[fe80::1%25eth0]/", "zone"},
		{"https://[64:ff9b::a9fe:a9fe]/", "NAT64"},
		{"https://[2002:7f00:1::]/", "6to4"},
		{"https:///path", "no host"},
		{"https:example.com", "no host"},
		{"https://exa mple.com/", ""},
		{"https://ex%00ample.com/", ""},
		{"https://example..com/", "empty or over-long label"},
		{"https://" + strings.Repeat("a", 64) + ".com/", "over-long label"},
		{"https://a,b.com/", "not part of a DNS name"},
	}
	for _, c := range refused {
		u, err := url.Parse(c.url)
		if err != nil {
			continue // url.Parse refuses it: never reaches a dial
		}
		err = g.checkURL(u)
		if fault.CodeOf(err) != fault.Denied || !strings.Contains(err.Error(), c.rule) {
			t.Errorf("checkURL(%s) = %v, want denied mentioning %q", c.url, err, c.rule)
		}
		// Said once, to the trusted reader as to the model.
		if fe := fault.As(err); fe.Error() != fe.Public() || strings.Count(fe.Error(), "destination refused") != 1 {
			t.Errorf("checkURL(%s): %q, public %q", c.url, fe.Error(), fe.Public())
		}
	}
	for _, s := range []string{"https://example.com/", "https://example.com:443/x?y", "https://example.com:8443/",
		"https://8.8.8.8/", "https://[2606:4700::1111]/", "https://xn--bcher-kva.example/", "https://bücher.example/",
		"https://1a.example.com/", "https://example.com./", "https://a-b_c.example/"} {
		u, _ := url.Parse(s)
		if err := g.checkURL(u); err != nil {
			t.Errorf("checkURL(%s) = %v, want allowed", s, err)
		}
	}
}

// FuzzCheckURL: whatever URL the guard accepts is https on an allowed
// port without userinfo, and its host is a public address or a DNS name
// whose last label is not numeric.
func FuzzCheckURL(f *testing.F) {
	for _, s := range []string{"https://example.com/", "https://127.1/", "https://0x7f.1/", "https://[::ffff:127.0.0.1]/",
		"https://user@example.com/", "https://example.com:8443/", "https://8.8.8.8/", "https://[2002:7f00:1::]/"} {
		f.Add(s)
	}
	g := &guard{ports: []uint16{8443}}
	f.Fuzz(func(t *testing.T, raw string) {
		u, err := url.Parse(raw)
		if err != nil || g.checkURL(u) != nil {
			return
		}
		if u.Scheme != "https" || u.User != nil || (u.Port() != "" && u.Port() != "443" && u.Port() != "8443") {
			t.Fatalf("accepted %q", raw)
		}
		host := u.Hostname()
		if a, err := netip.ParseAddr(host); err == nil {
			if classify(a) != "" {
				t.Fatalf("accepted special address %q", raw)
			}
			return
		}
		labels := strings.Split(strings.TrimSuffix(host, "."), ".")
		if numericLabel(labels[len(labels)-1]) {
			t.Fatalf("accepted numeric host %q", raw)
		}
	})
}

func TestURLLengthBound(t *testing.T) {
	f, err := New(&Policy{Format: 1, MaxResponseBytes: 1, MaxExpandedBytes: 1, MaxRequests: 1, MaxRedirects: 1, DeadlineSeconds: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	prefix := "https://example.com/"
	at := prefix + strings.Repeat("a", limits.FetchMaxURLBytes-len(prefix))
	if _, err := f.parse(at, nil); err != nil {
		t.Fatalf("URL of %d bytes: %v", len(at), err)
	}
	if _, err := f.parse(at+"a", nil); fault.CodeOf(err) != fault.Limit {
		t.Fatalf("URL one byte over: %v", err)
	}
}
