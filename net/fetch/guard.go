package fetch

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/clip"
)

// special is one IANA special-purpose range (or a range outside global
// unicast) that a fetch never dials unless the policy names it as a
// private destination.
type special struct {
	prefix netip.Prefix
	name   string
}

func mustPrefixes(rows ...string) []special {
	out := make([]special, 0, len(rows)/2)
	for i := 0; i < len(rows); i += 2 {
		out = append(out, special{netip.MustParsePrefix(rows[i]), rows[i+1]})
	}
	return out
}

// specialV4 is the IANA IPv4 special-purpose address registry, whether or
// not an entry is marked globally reachable (a public fetch has no reason
// to reach AS112 or the 6to4 relay anycast either).
var specialV4 = mustPrefixes(
	"0.0.0.0/8", "this network (0.0.0.0/8)",
	"10.0.0.0/8", "private (10.0.0.0/8)",
	"100.64.0.0/10", "shared address space / CGNAT (100.64.0.0/10)",
	"127.0.0.0/8", "loopback (127.0.0.0/8)",
	"169.254.0.0/16", "link-local, incl. cloud metadata 169.254.169.254 (169.254.0.0/16)",
	"172.16.0.0/12", "private (172.16.0.0/12)",
	"192.0.0.0/24", "IETF protocol assignments (192.0.0.0/24)",
	"192.0.2.0/24", "documentation TEST-NET-1 (192.0.2.0/24)",
	"192.31.196.0/24", "AS112-v4 (192.31.196.0/24)",
	"192.52.193.0/24", "AMT (192.52.193.0/24)",
	"192.88.99.0/24", "6to4 relay anycast (192.88.99.0/24)",
	"192.168.0.0/16", "private (192.168.0.0/16)",
	"192.175.48.0/24", "AS112 direct delegation (192.175.48.0/24)",
	"198.18.0.0/15", "benchmarking (198.18.0.0/15)",
	"198.51.100.0/24", "documentation TEST-NET-2 (198.51.100.0/24)",
	"203.0.113.0/24", "documentation TEST-NET-3 (203.0.113.0/24)",
	"224.0.0.0/4", "multicast (224.0.0.0/4)",
	"255.255.255.255/32", "limited broadcast (255.255.255.255/32)",
	"240.0.0.0/4", "reserved (240.0.0.0/4)",
)

// specialV6 is the IANA IPv6 special-purpose registry plus the deprecated
// site-local range; anything outside global unicast 2000::/3 is refused
// after these (see classify). The transition ranges that embed an IPv4
// address (NAT64, 6to4, Teredo) are refused whole; the message names the
// embedded address's range when it is special too.
var specialV6 = mustPrefixes(
	"::/128", "unspecified (::/128)",
	"::1/128", "loopback (::1/128)",
	"::ffff:0:0/96", "IPv4-mapped IPv6 (::ffff:0:0/96)",
	"::/96", "IPv4-compatible IPv6 (::/96)",
	"64:ff9b::/96", "NAT64 well-known prefix (64:ff9b::/96)",
	"64:ff9b:1::/48", "NAT64 local-use prefix (64:ff9b:1::/48)",
	"100::/64", "discard-only (100::/64)",
	"100:0:0:1::/64", "dummy prefix (100:0:0:1::/64)",
	"2001::/32", "Teredo (2001::/32)",
	"2001:db8::/32", "documentation (2001:db8::/32)",
	"2001::/23", "IETF protocol assignments, incl. benchmarking and ORCHID (2001::/23)",
	"2002::/16", "6to4 (2002::/16)",
	"2620:4f:8000::/48", "AS112-v6 (2620:4f:8000::/48)",
	"3fff::/20", "documentation (3fff::/20)",
	"5f00::/16", "SRv6 SIDs (5f00::/16)",
	"fc00::/7", "unique-local (fc00::/7)",
	"fe80::/10", "link-local (fe80::/10)",
	"fec0::/10", "site-local, deprecated (fec0::/10)",
	"ff00::/8", "multicast (ff00::/8)",
)

var globalUnicast = netip.MustParsePrefix("2000::/3")

// classify returns why addr may not be dialled, or "" when it is public.
func classify(addr netip.Addr) string {
	if !addr.IsValid() {
		return "invalid address"
	}
	if addr.Zone() != "" {
		return "scoped IPv6 address (zone " + addr.Zone() + ")"
	}
	if addr.Is4() {
		for _, s := range specialV4 {
			if s.prefix.Contains(addr) {
				return s.name
			}
		}
		return ""
	}
	for _, s := range specialV6 {
		if s.prefix.Contains(addr) {
			if v4, ok := embedded(addr, s.prefix); ok {
				if inner := classify(v4); inner != "" {
					return fmt.Sprintf("%s embedding %s, %s", s.name, v4, inner)
				}
				return fmt.Sprintf("%s embedding %s", s.name, v4)
			}
			return s.name
		}
	}
	if !globalUnicast.Contains(addr) {
		return "outside IPv6 global unicast (2000::/3)"
	}
	return ""
}

var (
	nat64WKP   = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour  = netip.MustParsePrefix("2002::/16")
	teredo     = netip.MustParsePrefix("2001::/32")
	mapped     = netip.MustParsePrefix("::ffff:0:0/96")
	compatible = netip.MustParsePrefix("::/96")
)

// embedded returns the IPv4 address a transition range carries in addr.
func embedded(addr netip.Addr, p netip.Prefix) (netip.Addr, bool) {
	b := addr.As16()
	switch p {
	case nat64WKP, mapped:
		return netip.AddrFrom4([4]byte(b[12:16])), true
	case compatible:
		return netip.AddrFrom4([4]byte(b[12:16])), true
	case sixToFour:
		return netip.AddrFrom4([4]byte(b[2:6])), true
	case teredo:
		// The client's address, obfuscated by inverting every bit.
		var v4 [4]byte
		binary.BigEndian.PutUint32(v4[:], ^binary.BigEndian.Uint32(b[12:16]))
		return netip.AddrFrom4(v4), true
	}
	return netip.Addr{}, false
}

// guard decides which destinations a fetcher may reach.
type guard struct {
	ports      []uint16
	exceptions []netip.Prefix
	// hosts are the policy's normalized "hosts"; nil admits any name.
	hosts []string
}

// allowsHost reports whether hosts admit the name host (checked by
// checkName): an entry equal to it, or "*." and a suffix it ends with
// after at least one label of its own.
func (g *guard) allowsHost(host string) bool {
	if host == "" {
		return false
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return g.hosts == nil
	}
	if g.hosts == nil {
		return true
	}
	name := strings.ToLower(strings.TrimSuffix(host, "."))
	for _, h := range g.hosts {
		if suffix, ok := strings.CutPrefix(h, "*"); ok {
			if len(name) > len(suffix) && strings.HasSuffix(name, suffix) && name[0] != '.' {
				return true
			}
		} else if name == h {
			return true
		}
	}
	return false
}

// DeniedError is the cause of a destination refusal: the rule that refused
// it. It is wrapped in a denied *fault.Error.
type DeniedError struct {
	Rule string
}

func (e *DeniedError) Error() string { return "destination refused: " + e.Rule }

func deny(format string, args ...any) *fault.Error {
	d := &DeniedError{Rule: fmt.Sprintf(format, args...)}
	return fault.Wrap(fault.Denied, d, "destination refused: %s", d.Rule)
}

// allowPort reports whether port may be dialled.
func (g *guard) allowPort(port uint16) bool {
	return port == 443 || slices.Contains(g.ports, port)
}

// checkAddr refuses addr unless it is public or a reviewed exception.
func (g *guard) checkAddr(ap netip.AddrPort) error {
	addr := ap.Addr()
	if !g.allowPort(ap.Port()) {
		return deny("port %d is not 443 and not in the policy's \"ports\"", ap.Port())
	}
	for _, p := range g.exceptions {
		if p.Contains(addr) {
			return nil
		}
	}
	if rule := classify(addr); rule != "" {
		return deny("%s is %s; a host may review it into \"private_destinations\"", addr, rule)
	}
	return nil
}

// control is the dialer's hook: it runs after the address is chosen and
// before connect, on the address actually dialled, for every connection.
func (g *guard) control(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return deny("unparseable dial address %q", address)
	}
	if network != "tcp4" && network != "tcp6" {
		return deny("network %s is not TCP", network)
	}
	return g.checkAddr(ap)
}

// checkURL refuses what the dial-time check cannot see or would see too
// late: other schemes, userinfo, disallowed ports, and host names that are
// numbers in disguise. IP literals are checked here too, for a clear rule
// before any connection.
func (g *guard) checkURL(u *url.URL) error {
	if u.Scheme != "https" {
		return deny("scheme %q: only https is fetched", u.Scheme)
	}
	if u.User != nil {
		return deny("URL carries userinfo (credentials are never sent)")
	}
	if u.Opaque != "" || u.Host == "" {
		return deny("URL has no host")
	}
	port := uint16(443)
	if p := u.Port(); p != "" {
		n, err := strconv.ParseUint(p, 10, 16)
		if err != nil || n == 0 {
			return deny("invalid port %q", p)
		}
		port = uint16(n)
	}
	if !g.allowPort(port) {
		return deny("port %d is not 443 and not in the policy's \"ports\"", port)
	}
	host := u.Hostname()
	return g.checkHost(host, port, strings.HasPrefix(u.Host, "["))
}

// checkHost refuses a destination host (a name, or an address; bracketed
// when it was written in brackets) before any connection: an address
// that is not public, a name that is a number in disguise or not a DNS
// name, a host the policy's "hosts" do not admit.
func (g *guard) checkHost(host string, port uint16, bracketed bool) error {
	if strings.Contains(host, "%") {
		return deny("host %q carries an IPv6 zone or escape", clip.Text(host))
	}
	if addr, err := netip.ParseAddr(host); err == nil {
		if g.hosts != nil {
			return deny("host %s is an address; the policy's \"hosts\" admits names only", addr)
		}
		return g.checkAddr(netip.AddrPortFrom(addr, port))
	}
	if bracketed {
		return deny("bracketed host %q is not an IPv6 address", clip.Text(host))
	}
	if err := checkName(host); err != nil {
		return err
	}
	if !g.allowsHost(host) {
		return deny("host %q is not in the policy's \"hosts\"", host)
	}
	return nil
}

// checkName refuses host names that a resolver or browser would read as an
// IPv4 address in another notation (2130706433, 0x7f.1, 127.1, 0177.0.0.1)
// and names that are not plain DNS names.
func checkName(host string) error {
	if host == "" || len(host) > 253 {
		return deny("host name is empty or longer than 253 bytes")
	}
	name := strings.TrimSuffix(host, ".")
	labels := strings.Split(name, ".")
	if numericLabel(labels[len(labels)-1]) {
		return deny("host %q is a number in disguise (its last label is numeric, which resolvers read as an IPv4 address)", host)
	}
	for _, l := range labels {
		if l == "" || len(l) > 63 {
			return deny("host %q has an empty or over-long label", host)
		}
		for _, r := range l {
			if !(r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r > 0x7f) {
				return deny("host %q contains %q, which is not part of a DNS name", host, r)
			}
		}
	}
	return nil
}

// numericLabel reports whether l is decimal, octal or 0x-hex digits.
func numericLabel(l string) bool {
	if l == "" {
		return false
	}
	digits := l
	hex := false
	if len(l) > 1 && l[0] == '0' && (l[1] == 'x' || l[1] == 'X') {
		digits, hex = l[2:], true
	}
	for _, r := range digits {
		if r >= '0' && r <= '9' || hex && (r >= 'a' && r <= 'f' || r >= 'A' && r <= 'F') {
			continue
		}
		return false
	}
	return true
}
