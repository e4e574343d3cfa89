package host

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/host/config"
)

func TestNetSection(t *testing.T) {
	dir := fixture(t)
	for name, body := range map[string]string{
		"http.json":   `{"format": 1}`,
		"budget.json": `{"format": 1, "group": "g", "window_seconds": 60, "window_requests": 5, "window_bytes": 1000}`,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	net := "[actor.a]\neffects = [\"net_fetch\", \"budget_read\"]\n[net]\nhttp_policy = \"http.json\"\nbudget_policy = \"budget.json\"\nbudget_root = \"budget\"\n"
	h, err := New(load(t, dir, base+net), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	s, err := h.NewSession("a", false)
	if err != nil {
		t.Fatal(err)
	}
	res, err := call(t, s, "budget_status", `{}`)
	if err != nil || !strings.Contains(res.Text, "window 1: 0/5 requests") {
		t.Fatalf("budget_status: %v %v", res, err)
	}
	_, err = call(t, s, "net_fetch", `{"url": "https://169.254.169.254/latest/meta-data/"}`)
	if fault.CodeOf(err) != fault.Denied || !strings.Contains(err.Error(), "link-local") {
		t.Fatalf("net_fetch to metadata: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "budget", "budget.db")); err != nil {
		t.Fatalf("budget root: %v", err)
	}

	for doc, want := range map[string]string{
		"[net]\nbudget_policy = \"budget.json\"\nbudget_root = \"b\"\n":                                      "net.http_policy: missing",
		"[net]\nhttp_policy = \"http.json\"\nbudget_policy = \"budget.json\"\n":                              "exactly one of budget_root or budget_store",
		"[net]\nhttp_policy = \"http.json\"\nbudget_root = \"b\"\n":                                          "need a budget policy",
		"[net]\nhttp_policy = \"http.json\"\nbudget_policy = \"budget.json\"\nbudget_store = \"/tmp/x\"\n":   "postgres:// URL",
		"[net]\nhttp_policy = \"http.json\"\nbudget_policy = \"budget.json\"\nbudget_root = \"rw/budget\"\n": "inside writable root",
		"[net]\nhttp_policy = \"rw/http.json\"\n":                                                            "inside writable root",
		"[net]\nhttp_policy = \"http.json\"\nproxy = \"x\"\n":                                                "net.proxy",
	} {
		if err := os.WriteFile(filepath.Join(dir, "capkit.toml"), []byte(base+doc), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := config.Load(filepath.Join(dir, "capkit.toml"))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want %q", doc, err, want)
		}
	}
}
