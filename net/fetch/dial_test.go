package fetch

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/testkit/nettest"
)

// TestDialer: a Dialer refuses what a fetch refuses before connecting,
// and checks the address it dials, so a name rebound inward is refused
// at dial time.
func TestDialer(t *testing.T) {
	ca := nettest.NewCA(t)
	port := ca.Serve(t, http.HandlerFunc(hello), "registry.example.org")
	d := nettest.StartDNS(t, map[string][]string{"registry.example.org": {"127.0.0.1", "169.254.169.254"}})
	p := policyFile(t, ca, fmt.Sprintf(`{"format": 1, "hosts": ["registry.example.org"], "ports": [%d], "private_destinations": ["127.0.0.1"]}`, port))
	dl := NewDialer(p, d.Resolver())
	for _, c := range []struct {
		host string
		port uint16
		rule string
	}{
		{"other.example.org", uint16(port), `not in the policy's "hosts"`},
		{"127.0.0.1", uint16(port), "admits names only"},
		{"registry.example.org", 8443, "port 8443"},
		{"registry.example.org", 0, "invalid port"},
		{"[registry.example.org]", uint16(port), "not part of a DNS name"},
	} {
		_, err := dl.Dial(context.Background(), c.host, c.port)
		wantCode(t, err, fault.Denied, c.rule)
	}
	c, err := dl.Dial(context.Background(), "registry.example.org", uint16(port))
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	_, err = dl.Dial(context.Background(), "registry.example.org", uint16(port))
	wantCode(t, err, fault.Denied, "169.254.169.254", "link-local")
}
