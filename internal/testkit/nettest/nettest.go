// Package nettest gives network tests their own world on loopback: a
// certificate authority that issues server certificates for any name,
// HTTPS servers on 127.0.0.1 with them, and a DNS server that answers
// the names a test scripts (everything else NXDOMAIN), with a resolver
// that asks only it. No other address is ever a target.
package nettest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// CA is a certificate authority for a test's servers.
type CA struct {
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
	// PEM is the authority's certificate, PEM-encoded.
	PEM []byte
}

// NewCA makes a certificate authority valid for a day.
func NewCA(t testing.TB) *CA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "capkit test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &CA{Cert: cert, Key: key, PEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// Pool is a certificate pool holding only the authority.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

// WritePEM writes the authority's certificate to dir/name and returns
// the path.
func (ca *CA) WritePEM(t testing.TB, dir, name string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, ca.PEM, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// Leaf issues a server certificate for names, valid from notBefore to
// notAfter.
func (ca *CA) Leaf(t testing.TB, names []string, notBefore, notAfter time.Time) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: names[0]},
		NotBefore: notBefore, NotAfter: notAfter, DNSNames: names,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.Key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// Server serves h over HTTPS on 127.0.0.1 with cert (HTTP/2 offered),
// until the test ends.
func (ca *CA) Server(t testing.TB, cert tls.Certificate, h http.Handler) (*httptest.Server, int) {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.EnableHTTP2 = true
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // refused handshakes are often the point
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv, srv.Listener.Addr().(*net.TCPAddr).Port
}

// Serve serves h as the host names with a currently valid certificate
// and returns the port.
func (ca *CA) Serve(t testing.TB, h http.Handler, names ...string) int {
	t.Helper()
	_, port := ca.Server(t, ca.Leaf(t, names, time.Now().Add(-time.Hour), time.Now().Add(time.Hour)), h)
	return port
}

// DNS answers A queries on loopback from a script: each name gets its
// answers in turn, the last repeating. Other names are NXDOMAIN; AAAA
// queries get no answer.
type DNS struct {
	mu      sync.Mutex
	answers map[string][]string
	asked   map[string]int
	addr    string
}

// StartDNS starts a DNS server answering as scripted until the test ends.
func StartDNS(t testing.TB, answers map[string][]string) *DNS {
	t.Helper()
	s := &DNS{answers: map[string][]string{}, asked: map[string]int{}}
	for k, v := range answers {
		s.answers[dns.Fqdn(strings.ToLower(k))] = v
	}
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.addr = pc.LocalAddr().String()
	srv := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(s.serve)}
	go srv.ActivateAndServe()
	t.Cleanup(func() { srv.Shutdown() })
	return s
}

func (s *DNS) serve(w dns.ResponseWriter, req *dns.Msg) {
	m := new(dns.Msg)
	m.SetReply(req)
	q := req.Question[0]
	name := strings.ToLower(q.Name)
	s.mu.Lock()
	list, ok := s.answers[name]
	if !ok {
		m.Rcode = dns.RcodeNameError
	} else if q.Qtype == dns.TypeA {
		i := min(s.asked[name], len(list)-1)
		s.asked[name]++
		rr, _ := dns.NewRR(fmt.Sprintf("%s 0 IN A %s", q.Name, list[i]))
		m.Answer = append(m.Answer, rr)
	}
	s.mu.Unlock()
	w.WriteMsg(m)
}

// Asked is how many A queries for name were answered.
func (s *DNS) Asked(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.asked[dns.Fqdn(strings.ToLower(name))]
}

// Addr is the server's UDP address, for a child process's Resolver.
func (s *DNS) Addr() string { return s.addr }

// ResolverAt sends every query to the DNS server at addr.
func ResolverAt(addr string) *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", addr)
	}}
}

// Resolver sends every query to this server.
func (s *DNS) Resolver() *net.Resolver { return ResolverAt(s.addr) }
