package local

import (
	"bytes"
	"strings"
	"testing"

	"github.com/capkit/capkit/internal/scope"
)

// FuzzPath resolves arbitrary caller paths in a scope and opens them
// through the provider: whatever the path, nothing outside the root is
// read, listed or stat'ed (the marker of the outside files never shows),
// and every call returns.
func FuzzPath(f *testing.F) {
	for _, s := range []string{
		"a.txt", "..", "../outside/secret.txt", "link-out", "chain", "dir-out/secret.txt",
		"dir-out/../root/a.txt", "sub/../../outside", "/etc/passwd", "%2e%2e/outside", "~/x",
		"a.txt\x00", "fifo", "sock", "null", "devnull", "proc", "dangling", "sub/", "./sub//b.txt",
		scope.StagingPrefix + "stray", strings.Repeat("a/", 3000),
	} {
		f.Add(s)
	}
	fx := newFixture(f)
	sc := in(fx.root)
	f.Fuzz(func(t *testing.T, p string) {
		tg, err := sc.Resolve(p)
		if err != nil {
			return
		}
		rel := tg.Name()
		tg.Close()
		if tg.Root() != fx.root {
			t.Fatalf("resolved to another root %q", tg.Root())
		}
		// "hard" is a hard link to an outside file: a file in the root,
		// which the provider may read; it is the one marker exception.
		hard := rel == "hard"
		check := func(what string, out []byte, err error) {
			if hard {
				return
			}
			if bytes.Contains(out, []byte(marker)) || (err != nil && strings.Contains(err.Error(), marker)) {
				t.Fatalf("%s(%q) leaked the outside marker", what, p)
			}
		}
		c := ctx(t)
		data, _, err := readAll(fx.p, c, sc, rel, 1<<16)
		check("ReadAll", data, err)
		if info, err := stat(fx.p, c, sc, rel); err == nil && strings.Contains(info.Name, "..") && info.Name != rel {
			t.Fatalf("Stat(%q) named %q", p, info.Name)
		}
		entries, _, err := readDir(fx.p, c, sc, rel, 50)
		for _, e := range entries {
			if strings.Contains(e.Name, "secret") {
				t.Fatalf("ReadDir(%q) listed %q", p, e.Name)
			}
		}
		check("ReadDir", nil, err)
	})
}
