package scope

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
)

// escapeRoot is a root beside a directory outside it, with what a
// hostile owner of files inside the root plants: links out (relative,
// absolute, chained, through /proc), links onto .git and a hard link to
// .git/config.
type escapeRoot struct {
	base, root, outside string
}

const gitConfig = "[core]\n\tbare = false\n"

func newEscapeRoot(t *testing.T) *escapeRoot {
	base := tempRoot(t, "root/sub", "root/.git/hooks", "outside")
	fx := &escapeRoot{base: base, root: filepath.Join(base, "root"), outside: filepath.Join(base, "outside")}
	writeFile(t, filepath.Join(fx.outside, "secret"), marker)
	writeFile(t, filepath.Join(fx.root, "a.txt"), "a\n")
	writeFile(t, filepath.Join(fx.root, "sub", "b.txt"), "b\n")
	writeFile(t, filepath.Join(fx.root, ".git", "config"), gitConfig)
	writeFile(t, filepath.Join(fx.root, "capkit.toml"), "# host\n")
	for link, target := range map[string]string{
		"link-out":    "../outside/secret",
		"dir-out":     "../outside",
		"abs-out":     filepath.Join(fx.outside, "secret"),
		"chain":       "link-out",
		"proc-root":   "/proc/self/root",
		"proc-fd":     "/proc/self/fd",
		"git-link":    ".git",
		"hooks-link":  ".git/hooks",
		"sub/up":      "..",
		"toml-link":   "capkit.toml",
		"sub/git-rel": "../.git",
	} {
		symlink(t, target, filepath.Join(fx.root, link))
	}
	if err := os.Link(filepath.Join(fx.root, ".git", "config"), filepath.Join(fx.root, "hard-config")); err != nil {
		t.Fatal(err)
	}
	return fx
}

// swapDir replaces the root's directory dir by a symlink to target.
func (fx *escapeRoot) swapDir(t *testing.T, dir, target string) {
	t.Helper()
	if err := os.Rename(filepath.Join(fx.root, dir), filepath.Join(fx.root, dir+"-old")); err != nil {
		t.Fatal(err)
	}
	symlink(t, target, filepath.Join(fx.root, dir))
}

// intact fails unless nothing outside the root and nothing protected
// changed: the outside holds only its secret, .git its config and hooks/,
// .git/config and capkit.toml their content.
func (fx *escapeRoot) intact(t *testing.T, row string) {
	t.Helper()
	for p, want := range map[string]string{
		filepath.Join(fx.outside, "secret"):      marker,
		filepath.Join(fx.root, ".git", "config"): gitConfig,
		filepath.Join(fx.root, "capkit.toml"):    "# host\n",
	} {
		if got, err := os.ReadFile(p); err != nil || string(got) != want {
			t.Errorf("%s: %s is %q (%v), want it unchanged", row, p, got, err)
		}
	}
	for dir, want := range map[string]string{fx.outside: "secret", filepath.Join(fx.root, ".git"): "config hooks", filepath.Join(fx.root, ".git", "hooks"): ""} {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		if got := strings.Join(names, " "); got != want {
			t.Errorf("%s: %s holds %q, want %q", row, dir, got, want)
		}
	}
}

// TestEscapes is the scope's escape table: every way a hostile model (the
// path) or a hostile owner of files in the root (what is planted there,
// and swapped between Resolve and the operation) tries to read outside
// the root or to change a protected path. A read row must fail every
// read and never show the outside marker; a write row must fail both a
// replacement and a rename onto the path. Either way nothing outside the
// root and nothing protected changes.
func TestEscapes(t *testing.T) {
	type row struct {
		name string
		path func(fx *escapeRoot) string
		// swap, when set, runs after Resolve and before the operation.
		swap func(t *testing.T, fx *escapeRoot)
		// resolved is the code Resolve refuses with, "" when it resolves.
		resolved fault.Code
		write    bool
	}
	rel := func(p string) func(*escapeRoot) string { return func(*escapeRoot) string { return p } }
	abs := func(p string) func(*escapeRoot) string {
		return func(fx *escapeRoot) string { return filepath.Join(fx.root, p) }
	}
	absRaw := func(p string) func(*escapeRoot) string { return func(fx *escapeRoot) string { return fx.root + p } }
	rows := []row{
		// Climbing out, lexically.
		{name: "dotdot", path: rel("../outside/secret"), resolved: fault.Denied},
		{name: "dotdot inside", path: rel("sub/../../outside/secret"), resolved: fault.Denied},
		{name: "dotdot deep", path: rel("sub/./../sub/../../outside/secret"), resolved: fault.Denied},
		{name: "dotdot write", path: rel("../outside/new"), resolved: fault.Denied, write: true},
		{name: "absolute outside", path: func(fx *escapeRoot) string { return filepath.Join(fx.outside, "secret") }, resolved: fault.Denied},
		{name: "absolute climbing", path: absRaw("/../outside/secret"), resolved: fault.Denied},
		{name: "absolute sibling prefix", path: func(fx *escapeRoot) string { return fx.root + "-evil/x" }, resolved: fault.Denied},
		{name: "absolute system", path: rel("/etc/passwd"), resolved: fault.Denied},
		// /proc, spelled and planted.
		{name: "proc spelled", path: func(fx *escapeRoot) string { return "/proc/self/root" + fx.outside + "/secret" }, resolved: fault.Denied},
		{name: "proc cwd spelled", path: rel("/proc/self/cwd/x"), resolved: fault.Denied},
		{name: "proc link", path: func(fx *escapeRoot) string { return "proc-root" + fx.outside + "/secret" }},
		{name: "proc link write", path: func(fx *escapeRoot) string { return "proc-root" + fx.outside + "/new" }, write: true},
		{name: "proc fd link", path: rel("proc-fd/0")},
		// NUL and control bytes never reach the kernel.
		{name: "NUL", path: rel("a.txt\x00../../outside/secret"), resolved: fault.InvalidInput},
		{name: "NUL absolute", path: func(fx *escapeRoot) string { return fx.root + "\x00/../outside/secret" }, resolved: fault.InvalidInput},
		{name: "NUL write", path: rel(".git\x00/config"), resolved: fault.InvalidInput, write: true},
		{name: "newline", path: rel("sub\n/../../outside/secret"), resolved: fault.InvalidInput},
		// Links planted in the root, leading out.
		{name: "file link out", path: rel("link-out")},
		{name: "absolute link out", path: rel("abs-out")},
		{name: "chained link out", path: rel("chain")},
		{name: "directory link out", path: rel("dir-out/secret")},
		{name: "directory link out write", path: rel("dir-out/new"), write: true},
		{name: "directory link out overwrite", path: rel("dir-out/secret"), write: true},
		// Swapped between Resolve and the operation.
		{name: "parent swapped out", path: rel("sub/secret"), swap: func(t *testing.T, fx *escapeRoot) { fx.swapDir(t, "sub", "../outside") }},
		{name: "parent swapped out write", path: rel("sub/secret"), swap: func(t *testing.T, fx *escapeRoot) { fx.swapDir(t, "sub", "../outside") }, write: true},
		{name: "parent swapped to proc", path: func(fx *escapeRoot) string { return "sub" + fx.outside + "/secret" }, swap: func(t *testing.T, fx *escapeRoot) { fx.swapDir(t, "sub", "/proc/self/root") }},
		{name: "file swapped for a link", path: rel("a.txt"), swap: func(t *testing.T, fx *escapeRoot) {
			if err := os.Remove(filepath.Join(fx.root, "a.txt")); err != nil {
				t.Fatal(err)
			}
			symlink(t, filepath.Join(fx.outside, "secret"), filepath.Join(fx.root, "a.txt"))
		}},
		{name: "parent swapped to .git write", path: rel("sub/config"), swap: func(t *testing.T, fx *escapeRoot) { fx.swapDir(t, "sub", ".git") }, write: true},
		{name: "parent swapped to hooks write", path: rel("sub/pre-commit"), swap: func(t *testing.T, fx *escapeRoot) { fx.swapDir(t, "sub", ".git/hooks") }, write: true},
		// Protected names spelled differently.
		{name: ".git", path: rel(".git/config"), write: true},
		{name: "case", path: rel(".GIT/config"), write: true},
		{name: "mixed case", path: rel(".Git/hooks/pre-commit"), write: true},
		{name: "dot slash", path: rel("./.git/config"), write: true},
		{name: "inner dot", path: rel(".git/./config"), write: true},
		{name: "double slash", path: rel(".git//hooks//pre-commit"), write: true},
		{name: "dotdot back in", path: rel("sub/../.git/config"), write: true},
		{name: "trailing slash", path: rel(".git/description/"), write: true},
		{name: "trailing slash file", path: rel("capkit.toml/"), write: true},
		{name: "config case", path: rel("CAPKIT.TOML"), write: true},
		{name: "config dot slash", path: rel("./capkit.toml"), write: true},
		{name: "absolute .git", path: abs(".git/hooks/pre-commit"), write: true},
		{name: "absolute dotdot back in", path: absRaw("/sub/../.git/config"), write: true},
		// Protected, on disk through links.
		{name: "link to .git", path: rel("git-link/config"), write: true},
		{name: "link to hooks", path: rel("hooks-link/pre-commit"), write: true},
		{name: "link up then .git", path: rel("sub/up/.git/config"), write: true},
		{name: "relative link to .git", path: rel("sub/git-rel/hooks/post-checkout"), write: true},
		{name: "link up, case", path: rel("sub/up/.GIT/hooks/x"), write: true},
	}
	ctx := context.Background()
	for _, c := range rows {
		t.Run(c.name, func(t *testing.T) {
			fx := newEscapeRoot(t)
			p := c.path(fx)
			sc := In([]string{fx.root}, capability.Protected{})
			tg, err := sc.Resolve(p)
			if c.resolved != "" {
				if fault.CodeOf(err) != c.resolved {
					t.Fatalf("Resolve(%q): %v, want %s", p, err, c.resolved)
				}
				fx.intact(t, c.name)
				return
			}
			if err != nil {
				t.Fatalf("Resolve(%q): %v, want it resolved (the operation is what refuses)", p, err)
			}
			defer tg.Close()
			if c.swap != nil {
				c.swap(t, fx)
			}
			if c.write {
				writeRefused(ctx, t, sc, tg)
			} else {
				readRefused(ctx, t, tg)
			}
			fx.intact(t, c.name)
		})
	}
}

// readRefused fails unless every read of tg fails without the marker.
func readRefused(ctx context.Context, t *testing.T, tg *Target) {
	t.Helper()
	leak := func(what string, data []byte, err error) {
		t.Helper()
		if err == nil {
			t.Errorf("%s succeeded (%q), want refused", what, data)
		}
		if bytes.Contains(data, []byte(marker)) || err != nil && strings.Contains(err.Error(), marker) {
			t.Errorf("%s leaked the outside marker", what)
		}
	}
	data, err := tg.ReadAll(ctx, 1<<16, "file")
	leak("ReadAll", data, err)
	f, _, err := tg.OpenRegular("file")
	if err == nil {
		data = make([]byte, 64)
		n, _ := f.Read(data)
		data = data[:n]
		f.Close()
	}
	leak("OpenRegular", data, err)
	f, _, err = tg.OpenFollowing("file")
	if err == nil {
		f.Close()
	}
	leak("OpenFollowing", nil, err)
	if _, err := tg.Lstat("file"); err == nil && strings.Contains(tg.Name(), "/") {
		// The last element may exist (it is the planted link); only a
		// directory on the way out may not be crossed.
		t.Errorf("Lstat(%q) crossed a directory leading out", tg.Name())
	}
}

// writeRefused fails unless a replacement of tg and a rename onto it are
// both refused.
func writeRefused(ctx context.Context, t *testing.T, sc *Scope, tg *Target) {
	t.Helper()
	if err := tg.Replace(ctx, write("PWNED"), &ReplaceOptions{MakeParents: true}); err == nil {
		t.Errorf("Replace(%q) succeeded, want refused", tg.Name())
	}
	from, err := sc.Resolve("a.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer from.Close()
	to, err := sc.Resolve(tg.Name())
	if err != nil {
		t.Fatal(err)
	}
	defer to.Close()
	if err := from.RenameTo(ctx, to, &RenameOptions{MakeParents: true}); err == nil {
		t.Errorf("RenameTo(%q) succeeded, want refused", tg.Name())
	}
}
