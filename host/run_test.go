package host

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/host/config"
)

// TestRunNetwork: [run] network opens its policy's proxy, charged to
// network_task or "cli"; a policy that lists no hosts is refused, and
// so is a host whose configuration names one.
func TestRunNetwork(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "rw"), 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("hosts.json", `{"format": 1, "hosts": ["registry.example.org"]}`)
	write("open.json", `{"format": 1}`)
	load := func(run string) *config.Config {
		write("capkit.toml", "[[root]]\npath = \"rw\"\n[run]\n"+run)
		cfg, err := config.Load(filepath.Join(dir, "capkit.toml"))
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	ctx := context.Background()
	p, closeNet, err := RunNetwork(ctx, load(""), nil, nil)
	if p != nil || err != nil || closeNet() != nil {
		t.Errorf("no network: %v %v", p, err)
	}
	p, closeNet, err = RunNetwork(ctx, load("network = \"hosts.json\"\n"), nil, nil)
	if err != nil || p == nil || !slices.Equal(p.Policy().Hosts, []string{"registry.example.org"}) {
		t.Fatalf("a network: %v %v", p, err)
	}
	closeNet()
	_, _, err = RunNetwork(ctx, load("network = \"open.json\"\n"), nil, nil)
	if fault.CodeOf(err) != fault.InvalidInput || !strings.Contains(err.Error(), `lists no "hosts"`) {
		t.Errorf("a policy without hosts: %v", err)
	}
	if _, err := New(load("network = \"open.json\"\n"), nil); err == nil || !strings.Contains(err.Error(), `lists no "hosts"`) {
		t.Errorf("a host over a policy without hosts: %v", err)
	}
}
