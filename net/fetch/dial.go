package fetch

import (
	"context"
	"crypto/x509"
	"net"
	"strconv"
	"time"
)

// Dialer opens TCP connections under a policy as a fetch does, for a
// client that carries bytes a fetch cannot read (a proxy relaying TLS):
// Check refuses a destination before any connection (a port the policy
// does not allow, a host its "hosts" do not admit, a name that is a
// number in disguise, an address that is neither public nor reviewed
// in), and Dial connects through the destination guard, which checks
// every address actually dialled, so DNS rebinding is caught there too.
// It is safe for concurrent use.
type Dialer struct {
	guard  *guard
	dialer *net.Dialer
}

// NewDialer returns a Dialer for policy; a nil resolver is the
// system's. Whatever the resolver answers, the guard checks the address
// dialled.
func NewDialer(policy *Policy, resolver *net.Resolver) *Dialer {
	g := policy.guard()
	return &Dialer{guard: g, dialer: &net.Dialer{Control: g.control, Resolver: resolver, KeepAlive: 15 * time.Second}}
}

// Check refuses the destination host (a name, or an address without
// brackets) and port before any connection, with a denied fault naming
// the rule.
func (d *Dialer) Check(host string, port uint16) error {
	if port == 0 {
		return deny("invalid port 0")
	}
	if !d.guard.allowPort(port) {
		return deny("port %d is not 443 and not in the policy's \"ports\"", port)
	}
	return d.guard.checkHost(host, port, false)
}

// Dial checks the destination and connects to it over TCP. Failures are
// faults as a fetch's: denied (the guard), not_found (the name does not
// resolve), limit (ctx's deadline), unavailable (DNS or connection).
func (d *Dialer) Dial(ctx context.Context, host string, port uint16) (net.Conn, error) {
	if err := d.Check(host, port); err != nil {
		return nil, err
	}
	c, err := d.dialer.DialContext(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(int(port))))
	if err != nil {
		return nil, transportFault(err, host)
	}
	return c, nil
}

// RootCAs are the trust roots of connections under the policy: the
// system's with the policy's ca_file added, or nil (the system's alone)
// when it names none. A client dialling with a Dialer verifies its peers
// with them.
func (p *Policy) RootCAs() *x509.CertPool { return p.roots }
