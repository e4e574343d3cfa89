package fetch

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/testkit/nettest"
	"github.com/capkit/capkit/limits"
)

// TestHostsPolicy: with "hosts", a fetch reaches only the names listed
// (a wildcard covers the names below it, not itself), at every redirect
// hop, and never an address; a name not listed is refused before any DNS
// query.
func TestHostsPolicy(t *testing.T) {
	ca := nettest.NewCA(t)
	names := []string{"registry.example.org", "cdn.mirror.example.org", "mirror.example.org", "other.example.net"}
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", hello)
	var port int
	mux.HandleFunc("/to-other", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, fmt.Sprintf("https://other.example.net:%d/ok", port), http.StatusFound)
	})
	mux.HandleFunc("/to-cdn", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, fmt.Sprintf("https://CDN.mirror.example.org.:%d/ok", port), http.StatusFound)
	})
	port = ca.Serve(t, mux, names...)
	answers := map[string][]string{}
	for _, n := range names {
		answers[n] = []string{"127.0.0.1"}
	}
	d := nettest.StartDNS(t, answers)
	p := loopbackPolicy(t, ca, port, `, "hosts": ["Registry.Example.org.", "*.mirror.example.org"]`)
	fetch := func(url string) error {
		_, err := newFetcher(t, p, &Options{Resolver: d.Resolver()}).Fetch(context.Background(), fmt.Sprintf(url, port))
		return err
	}
	for _, url := range []string{"https://registry.example.org:%d/ok", "https://REGISTRY.example.org.:%d/ok", "https://registry.example.org:%d/to-cdn"} {
		if err := fetch(url); err != nil {
			t.Errorf("%s: %v", url, err)
		}
	}
	for url, rule := range map[string]string{
		"https://mirror.example.org:%d/ok":         `"mirror.example.org" is not in the policy's "hosts"`,
		"https://other.example.net:%d/ok":          `"other.example.net" is not in the policy's "hosts"`,
		"https://registry.example.org:%d/to-other": `"other.example.net" is not in the policy's "hosts"`,
		"https://127.0.0.1:%d/ok":                  `admits names only`,
		"https://[::1]:%d/ok":                      `admits names only`,
		"https://evilregistry.example.org:%d/ok":   `is not in the policy's "hosts"`,
		"https://registry.example.org.evil:%d/ok":  `is not in the policy's "hosts"`,
	} {
		wantCode(t, fetch(url), fault.Denied, rule)
	}
	for _, n := range []string{"mirror.example.org", "other.example.net"} {
		if k := d.Asked(n); k > 0 {
			t.Errorf("%s, not in hosts, was resolved %d times", n, k)
		}
	}
}

func TestHostsPolicyParsing(t *testing.T) {
	ctx := context.Background()
	parse := func(hosts string) (*Policy, error) {
		return ParsePolicy(ctx, []byte(`{"format": 1, "hosts": [`+hosts+`]}`), "")
	}
	for hosts, want := range map[string]string{
		``:                      `"hosts" is empty`,
		`""`:                    `host "" `,
		`"*"`:                   `host "*" `,
		`"*."`:                  `host "*." `,
		`"a.*.example.org"`:     `host "a.*.example.org" `,
		`"**.example.org"`:      `host "**.example.org" `,
		`"127.0.0.1"`:           `host "127.0.0.1" `,
		`"[::1]"`:               `host "[::1]" `,
		`"example.org:443"`:     `host "example.org:443" `,
		`"ex ample.org"`:        `host "ex ample.org" `,
		`"bücher.example"`:      `host "bücher.example" `,
		`"example..org"`:        `host "example..org" `,
		`"example.0x10"`:        `host "example.0x10" `,
		`"https://example.org"`: `host "https://example.org" `,
	} {
		if _, err := parse(hosts); fault.CodeOf(err) != fault.InvalidInput || !strings.Contains(err.Error(), want) {
			t.Errorf("hosts [%s]: %v, want invalid_input mentioning %q", hosts, err, want)
		}
	}
	many := func(n int) string {
		var b []string
		for i := range n {
			b = append(b, fmt.Sprintf(`"h%d.example.org"`, i))
		}
		return strings.Join(b, ",")
	}
	if _, err := parse(many(limits.FetchMaxHosts)); err != nil {
		t.Errorf("%d hosts: %v", limits.FetchMaxHosts, err)
	}
	if _, err := parse(many(limits.FetchMaxHosts + 1)); fault.CodeOf(err) != fault.Limit {
		t.Errorf("%d hosts: %v, want limit", limits.FetchMaxHosts+1, err)
	}
	p, err := parse(`"Example.ORG.", "*.example.net", "xn--bcher-kva.example", "a_b.example"`)
	if err != nil {
		t.Fatal(err)
	}
	for host, want := range map[string]bool{
		"example.org": true, "EXAMPLE.org.": true, "www.example.org": false,
		"a.example.net": true, "a.b.example.net": true, "example.net": false, "aexample.net": false,
		"xn--bcher-kva.example": true, "a_b.example": true, "": false, "127.0.0.1": false,
	} {
		if got := p.AllowsHost(host); got != want {
			t.Errorf("AllowsHost(%q) = %v, want %v", host, got, want)
		}
	}
	if open, _ := ParsePolicy(ctx, []byte(`{"format": 1}`), ""); !open.AllowsHost("anything.example") || open.AllowsHost("") {
		t.Errorf("a policy without hosts allows any name and no empty one")
	}
}
