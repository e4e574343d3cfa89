package fetch

import (
	"context"
	"crypto/x509"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/clip"
	"github.com/capkit/capkit/limits"
	"github.com/capkit/capkit/net/internal/policyjson"
)

// Policy is a reviewed HttpPolicy: network bounds and the only ways past
// the destination guard. Each bound narrows the package limit of the same
// name; zero means that limit.
type Policy struct {
	// Format must be 1.
	Format int `json:"format"`
	// MaxResponseBytes bounds one response body on the wire.
	MaxResponseBytes int64 `json:"max_response_bytes,omitzero"`
	// MaxExpandedBytes bounds one body after its Content-Encoding is
	// undone.
	MaxExpandedBytes int64 `json:"max_expanded_bytes,omitzero"`
	// MaxRequests bounds the requests one Fetcher sends, redirect hops
	// included.
	MaxRequests int `json:"max_requests,omitzero"`
	// MaxRedirects bounds the redirects one fetch follows.
	MaxRedirects int `json:"max_redirects,omitzero"`
	// DeadlineSeconds bounds one fetch: DNS, connect, TLS, headers and
	// body together.
	DeadlineSeconds int `json:"deadline_seconds,omitzero"`
	// Ports are allowed in addition to 443.
	Ports []int `json:"ports,omitempty"`
	// PrivateDestinations are reviewed exceptions to the guard: address
	// prefixes that may be dialled although they are special-purpose.
	PrivateDestinations []string `json:"private_destinations,omitempty"`
	// CAFile names a PEM file of extra trust roots, relative to the
	// policy file's directory when read by LoadPolicy.
	CAFile string `json:"ca_file,omitempty"`
	// Hosts, when present, are the only host names a destination may
	// have: "example.org" is that name, "*.example.org" any name below
	// it (not example.org itself). Case and a final dot do not matter.
	// An address is not a name: with hosts, a URL naming an IP literal is
	// refused. Absent, any public name or address may be fetched.
	Hosts []string `json:"hosts,omitempty"`

	exceptions []netip.Prefix
	roots      *x509.CertPool
	hosts      []string // Hosts normalized; nil when absent
}

// ParsePolicy reads a policy document strictly (unknown fields, duplicate
// keys and wrong types are refused with their line and column) and checks
// its values. A ca_file is resolved against dir; an empty dir refuses one.
func ParsePolicy(ctx context.Context, data []byte, dir string) (*Policy, error) {
	var p Policy
	if err := policyjson.Decode(ctx, "http policy", data, &p, &p.Format); err != nil {
		return nil, err
	}
	if err := p.check(dir); err != nil {
		return nil, err
	}
	return &p, nil
}

// LoadPolicy reads the policy file at path.
func LoadPolicy(ctx context.Context, path string) (*Policy, error) {
	data, err := policyjson.ReadFile(path, limits.PolicyFileMaxBytes, "http policy")
	if err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fault.Wrap(fault.InvalidInput, err, "http policy: bad path")
	}
	return ParsePolicy(ctx, data, filepath.Dir(abs))
}

func bound[T int | int64](what string, v *T, limit T) error {
	if *v < 0 || *v > limit {
		return fault.New(fault.InvalidInput, "http policy: %q must be between 1 and %d (0 or absent means %d)", what, limit, limit)
	}
	if *v == 0 {
		*v = limit
	}
	return nil
}

func (p *Policy) check(dir string) error {
	errs := []error{
		bound("max_response_bytes", &p.MaxResponseBytes, limits.FetchMaxResponseBytes),
		bound("max_expanded_bytes", &p.MaxExpandedBytes, limits.FetchMaxExpandedBytes),
		bound("max_requests", &p.MaxRequests, limits.FetchMaxRequests),
		bound("max_redirects", &p.MaxRedirects, limits.FetchMaxRedirects),
		bound("deadline_seconds", &p.DeadlineSeconds, int(limits.FetchMaxDeadline/time.Second)),
		p.checkPorts(),
		p.checkExceptions(),
		p.checkHosts(),
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return p.loadCA(dir)
}

func (p *Policy) checkPorts() error {
	if len(p.Ports) > limits.FetchMaxPorts {
		return fault.LimitExceeded("http policy: ports", limits.FetchMaxPorts, int64(len(p.Ports)))
	}
	for _, port := range p.Ports {
		if port < 1 || port > 65535 {
			return fault.New(fault.InvalidInput, "http policy: port %d is not between 1 and 65535", port)
		}
	}
	return nil
}

// Minimum prefix lengths of an exception: a reviewed exception names a
// destination, not the whole address space.
const (
	minExceptionBits4 = 8
	minExceptionBits6 = 32
)

func (p *Policy) checkExceptions() error {
	if len(p.PrivateDestinations) > limits.FetchMaxPrivateDestinations {
		return fault.LimitExceeded("http policy: private_destinations", limits.FetchMaxPrivateDestinations, int64(len(p.PrivateDestinations)))
	}
	p.exceptions = p.exceptions[:0]
	for _, s := range p.PrivateDestinations {
		pf, err := netip.ParsePrefix(s)
		if err != nil {
			a, aerr := netip.ParseAddr(s)
			if aerr != nil {
				return fault.New(fault.InvalidInput, "http policy: private destination %q is not an address or prefix like 10.2.0.0/24", s)
			}
			pf = netip.PrefixFrom(a, a.BitLen())
		}
		if pf.Masked() != pf {
			return fault.New(fault.InvalidInput, "http policy: private destination %q has host bits set (did you mean %s?)", s, pf.Masked())
		}
		min := minExceptionBits6
		if pf.Addr().Is4() {
			min = minExceptionBits4
		}
		if pf.Bits() < min {
			return fault.New(fault.InvalidInput, "http policy: private destination %q is wider than /%d; name the destination, not a whole address space", s, min)
		}
		p.exceptions = append(p.exceptions, pf)
	}
	return nil
}

// checkHosts normalizes Hosts: each entry a DNS name of ASCII letters,
// digits, hyphens and underscores (internationalized names in their
// xn-- form), optionally behind one leading "*." wildcard label.
func (p *Policy) checkHosts() error {
	p.hosts = nil
	if p.Hosts == nil {
		return nil
	}
	if len(p.Hosts) == 0 {
		return fault.New(fault.InvalidInput, "http policy: \"hosts\" is empty; list the host names a destination may have, or remove the key to allow any public host")
	}
	if len(p.Hosts) > limits.FetchMaxHosts {
		return fault.LimitExceeded("http policy: hosts", limits.FetchMaxHosts, int64(len(p.Hosts)))
	}
	p.hosts = make([]string, 0, len(p.Hosts))
	for _, h := range p.Hosts {
		norm := strings.ToLower(strings.TrimSuffix(h, "."))
		name := strings.TrimPrefix(norm, "*.")
		if !asciiName(name) || checkName(name) != nil {
			return fault.New(fault.InvalidInput, "http policy: host %q is not a DNS name (like example.org) or a wildcard over one (*.example.org); addresses, ports and schemes do not belong in \"hosts\"", clip.Text(h))
		}
		p.hosts = append(p.hosts, norm)
	}
	return nil
}

// asciiName reports whether s holds only what an ASCII DNS name may.
func asciiName(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '-' || c == '_' || c == '.' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return s != ""
}

// AllowsHost reports whether the policy's "hosts" admit the host name
// (any name when the policy lists none); an address is never a name.
func (p *Policy) AllowsHost(host string) bool {
	return p.guard().allowsHost(host)
}

func (p *Policy) loadCA(dir string) error {
	if p.CAFile == "" {
		return nil
	}
	if dir == "" {
		return fault.New(fault.InvalidInput, "http policy: ca_file needs a policy read from a file (LoadPolicy)")
	}
	path := p.CAFile
	if !filepath.IsAbs(path) {
		path = filepath.Join(dir, path)
	}
	pem, err := policyjson.ReadFile(path, limits.FetchMaxCAFileBytes, "http policy ca_file")
	if err != nil {
		return err
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return fault.New(fault.InvalidInput, "http policy: ca_file %s holds no PEM certificate", p.CAFile)
	}
	p.roots = pool
	return nil
}

// Deadline is the policy's total I/O deadline.
func (p *Policy) Deadline() time.Duration { return time.Duration(p.DeadlineSeconds) * time.Second }

func (p *Policy) guard() *guard {
	g := &guard{exceptions: slices.Clone(p.exceptions), hosts: p.hosts}
	for _, port := range p.Ports {
		g.ports = append(g.ports, uint16(port))
	}
	return g
}
