package fetch

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/capkit/capkit/internal/testkit/nettest"
)

// policyFile writes a policy (JSON text with the CA beside it) and loads
// it, as a host would.
func policyFile(t *testing.T, ca *nettest.CA, body string) *Policy {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ca.pem"), ca.PEM, 0o600); err != nil {
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
func loopbackPolicy(t *testing.T, ca *nettest.CA, port int, extra string) *Policy {
	return policyFile(t, ca, fmt.Sprintf(`{"format": 1, "ports": [%d], "private_destinations": ["127.0.0.0/8"], "ca_file": "ca.pem"%s}`, port, extra))
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
