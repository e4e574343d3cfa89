package sandbox

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// fixture is one attack's world: a writable root (with .git, capkit.toml
// and a host-named protected file that does not exist), a read-only root,
// a root that is not granted, a directory outside every root, markers in
// all of them and in $HOME and the host's /tmp, and listeners the
// container must not reach.
type fixture struct {
	t         *testing.T
	marker    string
	dir       string
	root      string // writable
	ro        string // read-only root, holding the probe
	other     string // a root not granted
	outside   string
	home      string // marker file in $HOME
	slashRoot string // marker file in /root, when it can be written
	hostTmp   string // marker file in the host's /tmp
	envrc     string // protected, missing
	before    map[string]string
	contacts  atomic.Int64
	addrs     map[string]string
	abstract  string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{t: t, marker: "MARKER-" + rand.Text(), dir: t.TempDir()}
	f.root = filepath.Join(f.dir, "root")
	f.ro = filepath.Join(f.dir, "ro")
	f.other = filepath.Join(f.dir, "other")
	f.outside = filepath.Join(f.dir, "outside")
	f.envrc = filepath.Join(f.root, ".envrc")
	files := map[string]string{
		"root/main.go":               ("package main\n"),
		"root/capkit.toml":           "[[root]]\npath = \".\"\n",
		"root/.git/config":           "[core]\n\tbare = false\n",
		"root/.git/hooks/pre-commit": "#!/bin/sh\nexit 0\n",
		"root/sub/file.txt":          "inside\n",
		"ro/data.txt":                "read only data\n",
		"other/secret.txt":           f.marker + " in a root that is not granted\n",
		"outside/secret.txt":         f.marker + " outside every root\n",
		"outside/victim.txt":         "victim\n",
	}
	for name, text := range files {
		p := filepath.Join(f.dir, name)
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.WriteFile(p, []byte(text), 0o644))
	}
	must(t, os.Symlink(filepath.Join(f.outside, "victim.txt"), filepath.Join(f.root, "link")))
	linkProbe(t, filepath.Join(f.ro, "probe"))
	home, err := os.UserHomeDir()
	must(t, err)
	f.home = plant(t, home, f.marker)
	f.hostTmp = plant(t, os.TempDir(), f.marker)
	if unix.Access("/root", unix.W_OK) == nil {
		f.slashRoot = plant(t, "/root", f.marker)
	}
	f.listen()
	f.before = f.hashes()
	return f
}

// plant writes a marker file in dir, removed when the test ends.
func plant(t *testing.T, dir, marker string) string {
	p := filepath.Join(dir, ".capkit-escape-"+rand.Text())
	must(t, os.WriteFile(p, []byte(marker+" in "+dir+"\n"), 0o600))
	t.Cleanup(func() { os.Remove(p) })
	return p
}

// linkProbe puts the test binary at dst, as a hard link when it can.
func linkProbe(t *testing.T, dst string) {
	exe, err := os.Executable()
	must(t, err)
	if os.Link(exe, dst) == nil {
		return
	}
	in, err := os.Open(exe)
	must(t, err)
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE, 0o755)
	must(t, err)
	_, err = io.Copy(out, in)
	must(t, err)
	must(t, out.Close())
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// listen starts TCP and UDP listeners on IPv4 and IPv6 loopback and Unix
// sockets by path and by abstract name; every contact is counted.
func (f *fixture) listen() {
	f.addrs = map[string]string{}
	stream := func(key, network, addr string) {
		l, err := net.Listen(network, addr)
		if err != nil {
			f.t.Logf("no %s listener on %s: %v", network, addr, err)
			return
		}
		f.t.Cleanup(func() { l.Close() })
		f.addrs[key] = l.Addr().String()
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				f.contacts.Add(1)
				c.Close()
			}
		}()
	}
	packet := func(key, network, addr string) {
		c, err := net.ListenPacket(network, addr)
		if err != nil {
			f.t.Logf("no %s listener on %s: %v", network, addr, err)
			return
		}
		f.t.Cleanup(func() { c.Close() })
		f.addrs[key] = c.LocalAddr().String()
		go func() {
			buf := make([]byte, 64)
			for {
				if _, _, err := c.ReadFrom(buf); err != nil {
					return
				}
				f.contacts.Add(1)
			}
		}()
	}
	stream("tcp4", "tcp4", "127.0.0.1:0")
	stream("tcp6", "tcp6", "[::1]:0")
	packet("udp4", "udp4", "127.0.0.1:0")
	packet("udp6", "udp6", "[::1]:0")
	stream("unix", "unix", filepath.Join(f.outside, "sock"))
	f.abstract = "capkit-escape-" + rand.Text()
	stream("abstract", "unix", "@"+f.abstract)
}

// hashes fingerprints everything the container must not change: the
// tree outside the writable root, the read-only root, and the protected
// paths inside the writable root.
func (f *fixture) hashes() map[string]string {
	out := map[string]string{}
	walk := func(top string) {
		filepath.WalkDir(top, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				out[p] = "error: " + err.Error()
				return nil
			}
			info, _ := d.Info()
			h := sha256.New()
			fmt.Fprintf(h, "%v|", info.Mode())
			if d.Type().IsRegular() {
				b, _ := os.ReadFile(p)
				h.Write(b)
			}
			out[p] = hex.EncodeToString(h.Sum(nil))
			return nil
		})
	}
	for _, d := range []string{f.ro, f.other, f.outside, filepath.Join(f.root, ".git"), filepath.Join(f.root, "capkit.toml"), f.home, f.hostTmp, f.slashRoot} {
		if d == "" {
			continue
		}
		walk(d)
	}
	if _, err := os.Lstat(f.envrc); err == nil {
		out[f.envrc] = "exists"
	}
	return out
}

func (f *fixture) spec(argv ...string) *Spec {
	return &Spec{
		Argv:      argv,
		Dir:       f.root,
		Env:       []string{"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8"},
		Writable:  []string{f.root},
		ReadOnly:  []string{f.ro},
		Protected: []string{filepath.Join(f.root, ".git"), filepath.Join(f.root, "capkit.toml"), f.envrc},
	}
}

// check asserts that nothing outside was read, changed or reached.
func (f *fixture) check(res *Result) {
	f.t.Helper()
	for _, o := range []Output{res.Stdout, res.Stderr} {
		if strings.Contains(o.Text, f.marker) {
			f.t.Errorf("the marker leaked into the output:\n%s", o.Text)
		}
	}
	after := f.hashes()
	for p, h := range f.before {
		if after[p] != h {
			f.t.Errorf("%s changed", p)
		}
	}
	for p := range after {
		if _, ok := f.before[p]; !ok {
			f.t.Errorf("%s appeared", p)
		}
	}
	// A datagram in flight is counted a moment later.
	time.Sleep(10 * time.Millisecond)
	if n := f.contacts.Load(); n > 0 {
		f.t.Errorf("the listeners were reached %d times", n)
	}
}

func (f *fixture) probe(args ...string) []string {
	return append([]string{filepath.Join(f.ro, "probe"), probeArg}, args...)
}

// deniedWith matches a probe's refusal with the given errno.
func deniedWith(errno int) *regexp.Regexp {
	return regexp.MustCompile(fmt.Sprintf(`denied: .* \(%d\)`, errno))
}

var denied = regexp.MustCompile(`denied: `)

// hostChild starts a process on the host with the marker in its
// environment, for the signal, ptrace and environ attacks.
func (f *fixture) hostChild() *exec.Cmd {
	cmd := exec.Command("sleep", "60")
	cmd.Env = []string{"SECRET=" + f.marker}
	must(f.t, cmd.Start())
	f.t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd
}

// alive reports whether the host child still runs.
func alive(cmd *exec.Cmd) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", cmd.Process.Pid))
	return err == nil && !strings.Contains(string(b), ") Z ")
}
