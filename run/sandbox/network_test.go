package sandbox

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/capkit/capkit/fault"
)

// lineProxy is a stand-in for the policy proxy: it answers each
// connection's first line with "proxied: " and that line, and counts.
type lineProxy struct {
	served  atomic.Int64
	serving atomic.Int32
	stopped chan struct{}
}

func newLineProxy() *lineProxy { return &lineProxy{stopped: make(chan struct{}, 16)} }

func (p *lineProxy) Serve(ctx context.Context, l net.Listener) []string {
	p.serving.Add(1)
	defer func() { p.serving.Add(-1); p.stopped <- struct{}{} }()
	stop := context.AfterFunc(ctx, func() { l.Close() })
	defer stop()
	var conns sync.WaitGroup
	for {
		c, err := l.Accept()
		if err != nil {
			break
		}
		conns.Go(func() {
			defer c.Close()
			closeAt := context.AfterFunc(ctx, func() { c.Close() })
			defer closeAt()
			line, err := bufio.NewReader(c).ReadString('\n')
			if err == nil {
				fmt.Fprintf(c, "proxied: %s", line)
				p.served.Add(1)
			}
		})
	}
	conns.Wait()
	return []string{fmt.Sprintf("the test proxy answered %d connections", p.served.Load())}
}

// TestNetworkOnlyThroughTheProxy: with a proxy, the command reaches it at
// ProxyAddr and nothing else: not another port of its own loopback (nor
// bind a port, the proxy's included), not the host's loopback, not an address outside, not a name
// server; the proxy's notes reach the result, and the proxy stops with
// the command.
func TestNetworkOnlyThroughTheProxy(t *testing.T) {
	f := newFixture(t)
	p := newLineProxy()
	probe := func(args ...string) string { return strings.Join(f.probe(args...), " ") }
	script := strings.Join([]string{
		probe("converse", ProxyAddr),
		probe("converse", "127.0.0.1:3129"),
		probe("converse", "[::1]:3128"),
		probe("converse", f.addrs["tcp4"]),
		probe("converse", "192.0.2.1:3128"),
		probe("listen", "127.0.0.1:3130"),
		probe("listen", "127.0.0.2:3128"),
		probe("lookup", "registry.example.org"),
		"env | grep -i _proxy= | sort",
	}, "; ")
	res := runIn(t, f.spec("/bin/sh", "-c", script), &Options{Proxy: p})
	f.check(res)
	lines := strings.Split(strings.TrimSpace(res.Stdout.Text), "\n")
	want := []string{"proxied: hello from the sandbox", "ok"}
	for range 7 {
		want = append(want, "denied: ")
	}
	if len(lines) < len(want) {
		t.Fatalf("stdout:\n%s\nstderr:\n%s", res.Stdout.Text, res.Stderr.Text)
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("line %d: %q, want it to start with %q (stdout:\n%s)", i+1, lines[i], w, res.Stdout.Text)
		}
	}
	env := lines[len(want):]
	var wantEnv []string
	for _, k := range proxyVariables {
		wantEnv = append(wantEnv, k+"=http://"+ProxyAddr)
	}
	slices.Sort(wantEnv)
	if !slices.Equal(env, wantEnv) {
		t.Errorf("proxy variables %q, want %q", env, wantEnv)
	}
	if p.served.Load() != 1 || p.serving.Load() != 0 {
		t.Errorf("the proxy answered %d connections and is serving %d after the run, want 1 and 0", p.served.Load(), p.serving.Load())
	}
	if !slices.Equal(res.Network, []string{"the test proxy answered 1 connections"}) {
		t.Errorf("network notes %q, want the proxy's", res.Network)
	}
}

// TestNetworkEnvironment: the proxy variables name the proxy whatever
// the spec's environment said, and NO_PROXY is gone.
func TestNetworkEnvironment(t *testing.T) {
	root := t.TempDir()
	spec := &Spec{Argv: []string{"/bin/sh", "-c", "env"}, Dir: root, Writable: []string{root},
		Env: []string{"PATH=/usr/bin:/bin", "HTTPS_PROXY=http://192.0.2.1:1", "https_proxy=x", "NO_PROXY=*", "no_proxy=*", "KEEP=1"}}
	res := runIn(t, spec, &Options{Proxy: newLineProxy()})
	env := strings.Split(res.Stdout.Text, "\n")
	for _, kv := range []string{"HTTPS_PROXY=http://" + ProxyAddr, "https_proxy=http://" + ProxyAddr, "KEEP=1"} {
		if !slices.Contains(env, kv) {
			t.Errorf("env lacks %s:\n%s", kv, res.Stdout.Text)
		}
	}
	for _, bad := range []string{"192.0.2.1", "https_proxy=x", "NO_PROXY", "no_proxy"} {
		if strings.Contains(res.Stdout.Text, bad) {
			t.Errorf("env holds %s:\n%s", bad, res.Stdout.Text)
		}
	}
}

// TestNetworkNeedsFullContainment: without namespaces there is no
// network of the command's own, so a run with a proxy is refused and
// nothing runs.
func TestNetworkNeedsFullContainment(t *testing.T) {
	root := t.TempDir()
	spec := &Spec{Argv: []string{"/bin/sh", "-c", "touch ran"}, Dir: root, Writable: []string{root}, Env: []string{"PATH=/usr/bin:/bin"}}
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	_, err := Run(ctx, spec, &Options{Helper: helperArgv(t), Reduced: true, Proxy: newLineProxy()})
	if fault.CodeOf(err) != fault.Unavailable || !strings.Contains(err.Error(), "needs full containment") || !strings.Contains(err.Error(), "reduced containment was asked for") {
		t.Fatalf("reduced containment with a proxy: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "ran")); err == nil {
		t.Error("the command ran")
	}
}

// TestNetworkWarm: a helper built ahead with a network serves a call with
// a proxy, one built without is not used for it, and each call's
// listener is served only during that call.
func TestNetworkWarm(t *testing.T) {
	root := t.TempDir()
	p := newLineProxy()
	w := NewWarm()
	defer w.Close()
	probe := probeIn(t)
	spec := func() *Spec {
		return &Spec{Argv: probeArgv(probe, "converse", ProxyAddr), Dir: root, Writable: []string{root}, ReadOnly: []string{filepath.Dir(probe)}, Env: []string{"PATH=/usr/bin:/bin"}}
	}
	for i := range 3 {
		res := runIn(t, spec(), &Options{Proxy: p, Warm: w})
		if !strings.HasPrefix(res.Stdout.Text, "proxied: hello") {
			t.Fatalf("run %d: %q %q", i, res.Stdout.Text, res.Stderr.Text)
		}
		if i > 0 && !res.warm {
			t.Errorf("run %d did not use the warm helper", i)
		}
		waitWarm(t, w)
	}
	// The next helper was built with a network: a call without one
	// starts its own, whose command cannot reach any proxy.
	res := runIn(t, spec(), &Options{Warm: w})
	if res.warm || !regexp.MustCompile(`denied: .*\(1\)`).MatchString(res.Stdout.Text) {
		t.Errorf("a call without a proxy: warm %v, %q", res.warm, res.Stdout.Text)
	}
	if p.served.Load() != 3 || p.serving.Load() != 0 {
		t.Errorf("served %d, serving %d", p.served.Load(), p.serving.Load())
	}
}

// probeIn is the probe binary, linked into a directory of the test's
// own.
func probeIn(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	p := filepath.Join(dir, "probe")
	linkProbe(t, p)
	return p
}

func probeArgv(probe string, args ...string) []string {
	return append([]string{probe, probeArg}, args...)
}

// TestEscapesWithNetwork runs the attacks on sockets in a container
// with a network (a proxy listening on its loopback), where the command
// may create TCP and UDP sockets: the host's loopback listeners and Unix
// sockets stay unreached, and the other families refused. (The other
// attacks meet the same container: only the filter's socket rules
// differ.) A datagram to the host's loopback address
// leaves no error (UDP says nothing of a port no one listens on in the
// container's own namespace), so only its absence at the host's
// listener is checked.
func TestEscapesWithNetwork(t *testing.T) {
	sockets := regexp.MustCompile(`tcp|udp|unix|socket`)
	for _, e := range escapes {
		if !sockets.MatchString(e.name) {
			continue
		}
		adjust := e.adjust
		e.adjust = func(f *fixture, s *Spec, o *Options) {
			if adjust != nil {
				adjust(f, s, o)
			}
			o.Proxy = newLineProxy()
		}
		if strings.HasPrefix(e.name, "udp") {
			e.want = nil
		}
		t.Run(e.name, func(t *testing.T) { runEscape(t, Full, false, e, nil) })
	}
}
