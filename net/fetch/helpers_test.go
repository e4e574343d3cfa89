package fetch

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
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// dnsServer answers A queries on loopback from a script: each name gets
// its answers in turn, the last repeating. Other names are NXDOMAIN, AAAA
// queries are empty.
type dnsServer struct {
	mu      sync.Mutex
	answers map[string][]string
	asked   map[string]int
	addr    string
}

func startDNS(t *testing.T, answers map[string][]string) *dnsServer {
	t.Helper()
	s := &dnsServer{answers: map[string][]string{}, asked: map[string]int{}}
	for k, v := range answers {
		s.answers[dns.Fqdn(k)] = v
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

func (s *dnsServer) serve(w dns.ResponseWriter, req *dns.Msg) {
	m := new(dns.Msg)
	m.SetReply(req)
	q := req.Question[0]
	s.mu.Lock()
	list, ok := s.answers[strings.ToLower(q.Name)]
	if !ok {
		m.Rcode = dns.RcodeNameError
	} else if q.Qtype == dns.TypeA {
		i := min(s.asked[q.Name], len(list)-1)
		s.asked[q.Name]++
		rr, _ := dns.NewRR(fmt.Sprintf("%s 0 IN A %s", q.Name, list[i]))
		m.Answer = append(m.Answer, rr)
	}
	s.mu.Unlock()
	w.WriteMsg(m)
}

// resolver sends every query to the test's DNS server.
func (s *dnsServer) resolver() *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", s.addr)
	}}
}

// testCA is a certificate authority for the test's servers.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newCA(t *testing.T) *testCA {
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
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// leaf issues a server certificate for names, valid from notBefore to
// notAfter.
func (ca *testCA) leaf(t *testing.T, names []string, notBefore, notAfter time.Time) tls.Certificate {
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
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// server is an HTTPS server on loopback with a certificate from ca.
func (ca *testCA) server(t *testing.T, cert tls.Certificate, h http.Handler) (*httptest.Server, int) {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.EnableHTTP2 = true
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // refused handshakes are the point
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv, srv.Listener.Addr().(*net.TCPAddr).Port
}

// goodServer serves h as host names with a valid certificate.
func (ca *testCA) goodServer(t *testing.T, h http.Handler, names ...string) int {
	_, port := ca.server(t, ca.leaf(t, names, time.Now().Add(-time.Hour), time.Now().Add(time.Hour)), h)
	return port
}

// policyFile writes a policy (JSON text with the CA beside it) and loads
// it, as a host would.
func (ca *testCA) policyFile(t *testing.T, body string) *Policy {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ca.pem"), ca.pem, 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "policy.json")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := LoadPolicy(context.Background(), path)
	if err != nil {
		t.Fatalf("policy %s: %v", body, err)
	}
	return p
}

// loopbackPolicy reaches port on 127.0.0.0/8 through the reviewed
// exceptions, with extra fields (",..." JSON members) appended.
func (ca *testCA) loopbackPolicy(t *testing.T, port int, extra string) *Policy {
	return ca.policyFile(t, fmt.Sprintf(`{"format": 1, "ports": [%d], "private_destinations": ["127.0.0.0/8"], "ca_file": "ca.pem"%s}`, port, extra))
}

// newFetcher builds a fetcher whose dialer, past the guard, fails the
// test for any address that is not loopback: whatever the guard allows,
// a test never connects anywhere else.
func newFetcher(t *testing.T, p *Policy, opts *Options) *Fetcher {
	t.Helper()
	f, err := New(p, opts)
	if err != nil {
		t.Fatal(err)
	}
	guarded := f.dialer.Control
	f.dialer.Control = func(network, address string, c syscall.RawConn) error {
		if err := guarded(network, address, c); err != nil {
			return err
		}
		ap, err := netip.ParseAddrPort(address)
		if err != nil || !ap.Addr().IsLoopback() {
			t.Errorf("the guard allowed a dial to %s, which is not loopback", address)
			return fmt.Errorf("test: refusing non-loopback %s", address)
		}
		return nil
	}
	t.Cleanup(f.Close)
	return f
}
