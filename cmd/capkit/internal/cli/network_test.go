package cli

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capkit/capkit/internal/testkit/nettest"
)

// needCurl skips without curl, except under CI=true (scripts/need-curl.sh
// installs it).
func needCurl(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("curl"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("curl is missing (scripts/need-curl.sh installs it)")
		}
		t.Skip("no curl on this machine (scripts/need-curl.sh installs it)")
	}
}

// TestRunNetwork: capkit run --config and capkit test give the command
// [run] network: curl reaches the one host the policy lists (localhost,
// which /etc/hosts names, on a loopback HTTPS server the policy reviews
// in) through capkit's proxy, another host is refused and standard error
// says why, and the budget admits its one request a window.
func TestRunNetwork(t *testing.T) {
	needCurl(t)
	ca := nettest.NewCA(t)
	port := ca.Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "hello through the proxy") }), "localhost")
	dir := t.TempDir()
	proj := filepath.Join(dir, "proj")
	mustNil(t, os.MkdirAll(proj, 0o755))
	ca.WritePEM(t, proj, "ca.pem")
	mustNil(t, os.WriteFile(filepath.Join(dir, "registry.json"), []byte(fmt.Sprintf(`{"format": 1, "hosts": ["localhost"], "ports": [%d], "private_destinations": ["127.0.0.1"]}`, port)), 0o644))
	mustNil(t, os.WriteFile(filepath.Join(dir, "budget.json"), []byte(`{"format": 1, "group": "registry", "window_seconds": 3600, "window_requests": 1, "window_bytes": 1048576}`), 0o644))
	curl := fmt.Sprintf("curl -sS --fail --max-time 20 --cacert ca.pem https://%%s:%d/hello", port)
	cfg := filepath.Join(dir, "capkit.toml")
	mustNil(t, os.WriteFile(cfg, []byte(fmt.Sprintf(`[[root]]
path = "proj"
[run]
network = "registry.json"
[test]
command = ["sh", "-c", %q]
`, fmt.Sprintf(curl, "localhost"))), 0o644))
	if code, stdout, stderr := run(t, "", "--config", cfg, "run", "--", "sh", "-c", fmt.Sprintf(curl, "localhost")); code != 0 || stdout != "hello through the proxy" {
		t.Errorf("an allowed host: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	code, _, stderr := run(t, "", "--config", cfg, "run", "--", "sh", "-c", fmt.Sprintf(curl, "other.example.org"))
	if code == 0 || !strings.Contains(stderr, fmt.Sprintf(`capkit: note: the network proxy refused CONNECT other.example.org:%d: destination refused: host "other.example.org" is not in the policy's "hosts" (denied)`, port)) {
		t.Errorf("a host not in the policy: exit %d, stderr %q", code, stderr)
	}
	if code, stdout, stderr := run(t, "", "--config", cfg, "test"); code != 0 || stdout != "hello through the proxy" {
		t.Errorf("capkit test: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if code, _, stderr := run(t, "", "run", "--root", proj, "--", "sh", "-c", fmt.Sprintf(curl, "localhost")); code == 0 || strings.Contains(stderr, "network proxy") {
		t.Errorf("without --config there is no network: exit %d, %q", code, stderr)
	}
	// A budget of one request a window.
	budgeted := strings.Replace(string(mustRead(t, cfg)), "[test]", "network_budget_policy = \"budget.json\"\nnetwork_budget_root = \"budget\"\n[test]", 1)
	mustNil(t, os.WriteFile(cfg, []byte(budgeted), 0o644))
	for i, want := range []string{"", "(deferred)"} {
		code, _, stderr := run(t, "", "--config", cfg, "run", "--", "sh", "-c", fmt.Sprintf(curl, "localhost"))
		if (want == "") != (code == 0) || !strings.Contains(stderr, want) {
			t.Errorf("request %d under the budget: exit %d, stderr %q", i+1, code, stderr)
		}
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	mustNil(t, err)
	return b
}
