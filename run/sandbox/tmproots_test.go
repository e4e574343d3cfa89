package sandbox

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
)

// tmpWorld is a tree in the host's /tmp itself (not $TMPDIR, which may
// lie elsewhere): a writable root a (a git repository with capkit.toml),
// a read-only root a/b inside it, a second writable root c, a symbolic
// link to c, and a file beside them that no root holds.
type tmpWorld struct {
	base, a, b, c, link, secret string
}

func newTmpWorld(t *testing.T) *tmpWorld {
	t.Helper()
	base, err := os.MkdirTemp("/tmp", "capkit-tmproots-")
	must(t, err)
	t.Cleanup(func() { removeIn(base) })
	w := &tmpWorld{base: base, a: filepath.Join(base, "a"), b: filepath.Join(base, "a", "b"), c: filepath.Join(base, "c"),
		link: filepath.Join(base, "link"), secret: filepath.Join(base, "secret.txt")}
	for name, text := range map[string]string{
		"a/.git/config": "[core]\n\tbare = false\n",
		"a/capkit.toml": "[[root]]\npath = \".\"\n",
		"a/b/data.txt":  "read only\n",
		"c/keep.txt":    "c\n",
		"secret.txt":    "beside the roots\n",
	} {
		p := filepath.Join(base, name)
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.WriteFile(p, []byte(text), 0o644))
	}
	must(t, os.Symlink(w.c, w.link))
	return w
}

func (w *tmpWorld) spec(script string) *Spec {
	return &Spec{Argv: []string{"/bin/sh", "-c", script}, Dir: w.a, Env: []string{"PATH=/usr/bin:/bin"},
		Writable: []string{w.a, w.c}, ReadOnly: []string{w.b},
		Protected: []string{filepath.Join(w.a, ".git"), filepath.Join(w.a, "capkit.toml")}}
}

// unchanged fails t when a host file of w's no longer holds what
// newTmpWorld wrote.
func (w *tmpWorld) unchanged(t *testing.T) {
	t.Helper()
	for name, text := range map[string]string{"a/.git/config": "[core]\n\tbare = false\n", "a/capkit.toml": "[[root]]\npath = \".\"\n", "a/b/data.txt": "read only\n"} {
		if b, err := os.ReadFile(filepath.Join(w.base, name)); err != nil || string(b) != text {
			t.Errorf("%s on the host: %q (%v)", name, b, err)
		}
	}
	if _, err := os.Lstat(filepath.Join(w.b, "new")); err == nil {
		t.Errorf("a file was made in the read-only root")
	}
}

// TestRootsUnderTmp: in full containment, roots that lie in the host's
// /tmp are shown at their own paths on the private /tmp, which stays
// writable, as a test runner writing to /tmp (not $TMPDIR) needs, and
// bounded; the roots are as granted (writable ones writable, the
// read-only root inside a writable one read-only, the protected paths
// read-only), and nothing else of the host's /tmp is shown, not even
// what lies beside the roots in the directories leading to them or what a
// link in a root names there.
func TestRootsUnderTmp(t *testing.T) {
	w := newTmpWorld(t)
	marker := plant(t, "/tmp", "MARKER-"+rand.Text())
	must(t, os.Symlink(marker, filepath.Join(w.a, "to-host-tmp")))
	probe := "capkit-probe-" + rand.Text()
	script := fmt.Sprintf(`B=%s
touch /tmp/%s && echo tmp-new
mkdir -p /tmp/d/e && echo x > /tmp/d/e/f && mv /tmp/d/e/f /tmp/g && echo tmp-nested
[ "$TMPDIR" = /tmp ] && echo tmpdir-is-tmp
echo x > $B/a/new && echo root-a-writable
echo x > $B/c/new && echo root-c-writable
echo x > $B/a/b/new 2>/dev/null || echo read-only-root-refused
echo x >> $B/a/.git/config 2>/dev/null || echo git-refused
echo x >> $B/a/capkit.toml 2>/dev/null || echo toml-refused
cat $B/secret.txt 2>/dev/null || echo secret-hidden
cat %s 2>/dev/null || echo marker-hidden
cat to-host-tmp 2>/dev/null || echo link-leads-into-the-view
head -c 3M /dev/zero > /tmp/big 2>/dev/null || echo tmp-bounded
rm -f /tmp/big
head -c 3M /dev/zero > $B/big 2>/dev/null || echo beside-roots-bounded
rm -f $B/big
head -c 3M /dev/zero > $B/a/big && echo root-not-in-tmp-bounds
echo "tmp: $(ls -A /tmp | tr '\n' ' ')"
echo "base: $(ls -A $B | tr '\n' ' ')"
grep ' /tmp ' /proc/self/mountinfo | grep -o 'nr_inodes=[0-9]*'
`, w.base, probe, marker)
	s := w.spec(script)
	s.Limits.TmpBytes = 2 << 20
	res := runIn(t, s, nil)
	if res.Containment != Full {
		t.Skipf("containment %s: the test is of full containment's /tmp", res.Containment)
	}
	lines := strings.Split(strings.TrimSpace(res.Stdout.Text), "\n")
	for _, want := range []string{"tmp-new", "tmp-nested", "tmpdir-is-tmp", "root-a-writable", "root-c-writable", "read-only-root-refused",
		"git-refused", "toml-refused", "secret-hidden", "marker-hidden", "link-leads-into-the-view", "tmp-bounded", "beside-roots-bounded", "root-not-in-tmp-bounds",
		fmt.Sprintf("nr_inodes=%d", limits.RunTmpInodes)} {
		if !slices.Contains(lines, want) {
			t.Errorf("no %q in the output:\n%s\nstderr:\n%s", want, res.Stdout.Text, res.Stderr.Text)
		}
	}
	// The private /tmp holds what the command made there, HOME, and the
	// directory leading to the roots, which holds the roots alone.
	wantTmp := []string{filepath.Base(w.base), "d", "g", "home", probe}
	slices.Sort(wantTmp)
	if got := listed(lines, "tmp: "); !slices.Equal(got, wantTmp) {
		t.Errorf("/tmp in the container: %q, want %q", got, wantTmp)
	}
	if got := listed(lines, "base: "); !slices.Equal(got, []string{"a", "c"}) {
		t.Errorf("%s in the container: %q, want the roots alone", w.base, got)
	}
	if _, err := os.Lstat(filepath.Join("/tmp", probe)); err == nil {
		t.Errorf("the command's /tmp/%s is in the host's /tmp", probe)
	}
	for _, p := range []string{filepath.Join(w.a, "new"), filepath.Join(w.c, "new")} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("what the command wrote in a root: %v", err)
		}
	}
	w.unchanged(t)
	if len(res.Quarantined) > 0 || len(res.Closed) > 0 || res.ExitCode != 0 {
		t.Errorf("quarantined %v, closed %v, exit %d", res.Quarantined, res.Closed, res.ExitCode)
	}
}

// listed is the sorted names of the line of lines that starts with
// prefix.
func listed(lines []string, prefix string) []string {
	for _, l := range lines {
		if rest, ok := strings.CutPrefix(l, prefix); ok {
			names := strings.Fields(rest)
			slices.Sort(names)
			return names
		}
	}
	return nil
}

// TestRootsUnderTmpAttacked: a command that owns the directories of its
// private /tmp leading to the roots renames them away and makes its own
// in their place, with a .git where the root's was: the roots and their
// protected paths stay as they were on the host (the renamed directories
// carry the mounts with them), and what it made is its private /tmp's,
// gone with it, not the host's; nothing is quarantined, since nothing
// reached a root.
func TestRootsUnderTmpAttacked(t *testing.T) {
	w := newTmpWorld(t)
	script := fmt.Sprintf(`B=%s
cd /
mv $B $B.moved && echo moved
echo x >> $B.moved/a/.git/config 2>/dev/null || echo git-refused
echo x > $B.moved/a/b/new 2>/dev/null || echo read-only-root-refused
mkdir -p $B/a/.git $B/a/b && echo planted > $B/a/.git/config && echo planted > $B/a/capkit.toml && echo x > $B/a/b/new && echo made-own
chmod 000 $B.moved && echo chmod
`, w.base)
	res := runIn(t, w.spec(script), nil)
	if res.Containment != Full {
		t.Skipf("containment %s", res.Containment)
	}
	// The attack was made (moved, made-own), and kept nothing from the
	// roots.
	for _, want := range []string{"moved", "git-refused", "read-only-root-refused", "made-own"} {
		if !strings.Contains(res.Stdout.Text, want+"\n") {
			t.Errorf("no %q in the output:\n%s\nstderr:\n%s", want, res.Stdout.Text, res.Stderr.Text)
		}
	}
	w.unchanged(t)
	if len(res.Quarantined) > 0 {
		t.Errorf("quarantined %v", res.Quarantined)
	}
	// The next command sees the roots where they are.
	res = runIn(t, w.spec("cat .git/config capkit.toml b/data.txt"), nil)
	if !strings.Contains(res.Stdout.Text, "bare = false") || !strings.Contains(res.Stdout.Text, "read only") {
		t.Errorf("the next command: %q %q", res.Stdout.Text, res.Stderr.Text)
	}
}

// TestTmpRootRefused: /tmp itself is not a root a command can be given:
// the command's /tmp is private (in reduced containment its private tmp,
// HOME and the guarded names would be in the host's shared /tmp), and a
// root at a symbolic link under /tmp is refused, not followed; nothing
// runs.
func TestTmpRootRefused(t *testing.T) {
	w := newTmpWorld(t)
	ran := filepath.Join(w.c, "ran")
	for _, tc := range []struct {
		name string
		edit func(s *Spec)
		want error
	}{
		{"/tmp writable", func(s *Spec) { s.Writable = []string{"/tmp"}; s.ReadOnly = nil; s.Protected = nil; s.Dir = w.c }, fault.ErrInvalidInput},
		{"/tmp read-only", func(s *Spec) { s.ReadOnly = []string{"/tmp"} }, fault.ErrInvalidInput},
		{"a link under /tmp", func(s *Spec) { s.Writable = []string{w.a, w.link} }, nil},
	} {
		for _, reduced := range []bool{false, true} {
			s := w.spec("touch " + ran)
			tc.edit(s)
			ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
			_, err := Run(ctx, s, &Options{Helper: helperArgv(t), Reduced: reduced, Quarantine: t.TempDir()})
			cancel()
			if err == nil || tc.want != nil && !errors.Is(err, tc.want) {
				t.Errorf("%s, reduced=%v: %v, want a refusal", tc.name, reduced, err)
			}
			if _, err := os.Lstat(ran); err == nil {
				t.Errorf("%s, reduced=%v: the command ran", tc.name, reduced)
				os.Remove(ran)
			}
		}
	}
}
