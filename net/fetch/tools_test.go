package fetch

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/testkit"
	"github.com/capkit/capkit/internal/testkit/nettest"
	"github.com/capkit/capkit/kernel"
	"github.com/capkit/capkit/limits"
	"github.com/capkit/capkit/net/budget"
)

func TestNetFetchTool(t *testing.T) {
	ca := nettest.NewCA(t)
	port := ca.Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/bin":
			w.Write([]byte{0xff, 0xfe, 0x00})
		case "/big":
			w.Write(make([]byte, limits.FetchToolMaxBodyBytes+1))
		case "/json":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"ok": true}`)
		default:
			hello(w, r)
		}
	}), "example.com")
	d := nettest.StartDNS(t, map[string][]string{"example.com": {"127.0.0.1"}})
	b, err := budget.Open(context.Background(), filepath.Join(t.TempDir(), "root"), &budget.Policy{Format: 1, Group: "up", WindowSeconds: 60, WindowRequests: 100, WindowBytes: 1 << 40}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	rt := testkit.Runtime(t, RegisterTools, &ToolOptions{Policy: loopbackPolicy(t, ca, port, ""), Fetch: &Options{Resolver: d.Resolver(), Budget: b}})
	s := testkit.Session(t, rt, testkit.Grant(t, nil, capability.NetFetch))
	base := fmt.Sprintf("https://example.com:%d", port)
	res, err := testkit.Call(t, s, "net_fetch", map[string]string{"url": base + "/"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(res.Text, "\n\nhello from loopback") || strings.Contains(string(res.Structured), "hello from") || !strings.Contains(string(res.Structured), `"task":"`+testkit.Actor+`"`) {
		t.Fatalf("text %q structured %s", res.Text, res.Structured)
	}
	res, err = testkit.Call(t, s, "net_fetch", map[string]string{"url": base + "/bin"})
	if err != nil || !strings.Contains(res.Text, "body omitted: 3 bytes that are not UTF-8") {
		t.Fatalf("binary: %v %v", res, err)
	}
	_, err = testkit.Call(t, s, "net_fetch", map[string]string{"url": base + "/big"})
	wantCode(t, err, fault.Limit, "max_expanded_bytes")
	_, err = testkit.Call(t, s, "net_fetch", map[string]string{"url": base + "/json", "expect": "html"})
	wantCode(t, err, fault.Integrity)
	if _, err := testkit.Call(t, s, "net_fetch", map[string]string{"url": base + "/json", "expect": "json"}); err != nil {
		t.Fatal(err)
	}
	_, err = testkit.Call(t, s, "net_fetch", map[string]string{"url": "https://169.254.169.254/"})
	wantCode(t, err, fault.Denied, "link-local")
	// Without the effect the kernel refuses before any request.
	_, err = testkit.Call(t, testkit.Session(t, rt), "net_fetch", map[string]string{"url": base + "/"})
	wantCode(t, err, fault.Denied)

	// budget_status reports the same allowance under a read effect.
	brt := testkit.Runtime(t, budget.RegisterTools, &budget.ToolOptions{Budget: b})
	bs := testkit.Session(t, brt, testkit.Grant(t, nil, capability.BudgetRead))
	res, err = testkit.Call(t, bs, "budget_status", map[string]any{})
	if err != nil || !strings.Contains(res.Text, "window 1: 5/100 requests") {
		t.Fatalf("budget_status: %v %v", res, err)
	}
}

func TestRegisterToolsWithoutPolicy(t *testing.T) {
	for _, o := range []*ToolOptions{nil, {}} {
		b := kernel.NewBuilder(nil)
		if err := RegisterTools(b, o); err != nil {
			t.Fatal(err)
		}
		rt, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		_, err = testkit.Call(t, testkit.Session(t, rt, testkit.Grant(t, nil, capability.NetFetch)), "net_fetch", map[string]string{"url": "https://example.com/"})
		wantCode(t, err, fault.NotFound)
	}
}
