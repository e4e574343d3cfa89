package gateway

import (
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/run/sandbox"
)

// TestContained: a contained upstream reads and writes its roots and
// nothing else: not a file outside them (nor through a link in its root
// that points out), not its read-only directory, not the lock file or
// .git inside its root (protected), not capkit's environment or its
// view of the host through /proc, not a loopback listener of the host
// nor an address off it (no network), not capkit's process (no signal
// reaches it); what it leaves at a protected name that was missing
// (capkit.toml) is moved to the quarantine once it has stopped. The
// container's whole escape suite runs against started servers in
// run/sandbox (TestEscapesServed); this holds the gateway's spec to it.
func TestContained(t *testing.T) {
	t.Parallel()
	if err := sandboxAvailable(t); err != "" {
		t.Skip(err)
	}
	base := t.TempDir()
	root, bin, outside := filepath.Join(base, "root"), filepath.Join(base, "bin"), filepath.Join(base, "outside")
	for _, d := range []string{root, bin, outside, filepath.Join(root, ".git")} {
		os.MkdirAll(d, 0o755)
	}
	os.WriteFile(filepath.Join(root, "inside.txt"), []byte("inside\n"), 0o644)
	os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("outside\n"), 0o644)
	os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(root, "link-out"))
	lockFile := filepath.Join(root, "capkit-lock.json")
	os.WriteFile(lockFile, []byte("{}\n"), 0o644)
	exe, _ := os.Executable()
	server := filepath.Join(bin, "hostile")
	copyFile(t, exe, server)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	quarantine := t.TempDir()
	f := newFixture(t, &fixtureOptions{
		adjust: func(u *Upstream) {
			u.Command, u.Contain, u.Roots, u.ReadOnly = []string{server}, true, []string{root}, []string{bin}
			u.Env[hostileDirEnv] = root
		},
		gateway: &Options{Helper: []string{exe, sandbox.HelperArg}, Quarantine: quarantine,
			Protected: capability.NewProtected(lockFile).WithRoots(root)},
	})
	writeDefs(root, hostileTools())
	s := f.session("model")
	pid := strconv.Itoa(os.Getpid())
	for _, c := range []struct {
		tool, arg, want string
	}{
		{"read", filepath.Join(root, "inside.txt"), "read: inside"},
		{"write", filepath.Join(root, "new.txt"), "wrote"},
		{"read", filepath.Join(outside, "secret.txt"), "refused"},
		{"read", filepath.Join(root, "link-out"), "refused"},
		{"write", filepath.Join(bin, "new.txt"), "refused"},
		{"write", filepath.Join(root, "capkit.toml"), "wrote"},
		{"read", exe, "refused"},
		{"write", filepath.Join(outside, "new.txt"), "refused"},
		{"write", lockFile, "refused"},
		{"write", filepath.Join(root, ".git", "config"), "refused"},
		{"read", "/etc/shadow", "refused"},
		{"read", "/proc/" + pid + "/environ", "refused"},
		{"read", "/proc/" + pid + "/root/" + filepath.Join(outside, "secret.txt"), "refused"},
		{"dial", ln.Addr().String(), "refused"},
		{"dial", "192.0.2.1:443", "refused"}, // any address off the host: no route
		{"signal", pid, "refused"},
	} {
		key := map[string]string{"dial": "addr", "signal": "pid"}[c.tool]
		if key == "" {
			key = "path"
		}
		res, err := f.call(s, c.tool, map[string]string{key: c.arg})
		if err != nil {
			t.Fatalf("%s %s: %v", c.tool, c.arg, err)
		}
		if !strings.HasPrefix(res.Text, c.want) {
			t.Errorf("%s %s: %q, want %s", c.tool, c.arg, res.Text, c.want)
		}
	}
	if b, _ := os.ReadFile(lockFile); string(b) != "{}\n" {
		t.Errorf("the lock file changed: %q", b)
	}
	if _, err := os.Stat(filepath.Join(outside, "new.txt")); err == nil {
		t.Error("the upstream wrote outside its roots")
	}
	f.g.Close()
	if _, err := os.Lstat(filepath.Join(root, "capkit.toml")); err == nil {
		t.Error("what the upstream left at a protected name stayed once it stopped")
	}
	if moved, _ := filepath.Glob(filepath.Join(quarantine, "*")); len(moved) == 0 {
		t.Error("nothing was moved to the quarantine")
	}
}

// sandboxAvailable says why contained servers cannot run here, or "".
func sandboxAvailable(t testing.TB) string {
	exe, _ := os.Executable()
	dir := t.TempDir()
	_, err := sandbox.Run(context.Background(), &sandbox.Spec{Argv: []string{"/bin/true"}, Dir: dir, Writable: []string{dir}}, &sandbox.Options{Helper: []string{exe, sandbox.HelperArg}, Quarantine: t.TempDir()})
	if err != nil {
		return err.Error()
	}
	return ""
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	if os.Link(from, to) == nil {
		return
	}
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	out.Close()
}
