package tools

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/internal/testkit"
	"github.com/capkit/capkit/kernel"
)

func TestOutLease(t *testing.T) {
	cases := []struct {
		name   string
		n      int
		pooled bool
	}{
		{"below the pooled size", minPooledOut - 1, false},
		{"at the pooled size", minPooledOut, true},
		{"large", 5 << 20, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, l := leaseOut(c.n)
			if len(b) != 0 || cap(b) < c.n {
				t.Fatalf("len %d cap %d for %d", len(b), cap(b), c.n)
			}
			if (l.ob != nil) != c.pooled {
				t.Fatalf("pooled = %v, want %v", l.ob != nil, c.pooled)
			}
			l.release()
			l.release() // a second release does nothing
			if !c.pooled {
				return
			}
			if g := l.ob.gen.Load(); g != l.gen+1 {
				t.Fatalf("generation %d after one release of lease %d", g, l.gen)
			}
			// The buffer leased again: a stale release of the old lease
			// must not give it back while the new lease holds it.
			again := outLease{ob: l.ob, gen: l.ob.gen.Load()}
			l.release()
			if g := again.ob.gen.Load(); g != again.gen {
				t.Fatalf("a stale release ended the current lease (gen %d, want %d)", g, again.gen)
			}
			again.release()
		})
	}
}

// keep makes the grown buffer the one that goes back.
func TestOutLeaseKeep(t *testing.T) {
	b, l := leaseOut(minPooledOut)
	b = append(b, make([]byte, 3*minPooledOut)...)
	l.keep(b)
	if cap(l.ob.b) != cap(b) {
		t.Fatalf("kept cap %d, want %d", cap(l.ob.b), cap(b))
	}
	l.release()
}

// reference is read_file's text for content without long lines, as
// cat -n numbers it.
func reference(content string) string {
	lines := strings.SplitAfter(content, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	var b strings.Builder
	for i, l := range lines {
		fmt.Fprintf(&b, "%6d\t%s\n", i+1, strings.TrimSuffix(l, "\n"))
	}
	fmt.Fprintf(&b, "(lines 1–%d of %d)\n", len(lines), len(lines))
	return b.String()
}

// Pooled buffers are never shared: a result keeps its text until it is
// released, and a read into a reused buffer (larger, full of another
// file) is what a fresh buffer gives.
func TestReadPooledBuffers(t *testing.T) {
	root := testkit.TempDir(t)
	files := map[string]string{
		"big":   strings.Repeat("a fairly long line of the big file\n", 6000),
		"small": strings.Repeat("small\n", 4000),
		"tiny":  "one line\n",
		"utf8":  strings.Repeat(strings.Repeat("été ", 400)+"\n", 20) + "end\n",
	}
	for name, content := range files {
		writeFile(t, filepath.Join(root, name), content)
	}
	rt := newRuntimePolicies(t, nil, map[string]kernel.Policy{ReadFile: {MaxCalls: 10_000, MaxOutputBytes: 1 << 20}})
	s := newSession(t, rt, []capability.Effect{capability.ReadFile}, root)
	read := func(name string) *kernel.Result {
		t.Helper()
		res, err := testkit.Call(t, s, ReadFile, obj{"path": name, "limit": 100_000})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	check := func(name string, res *kernel.Result) {
		t.Helper()
		if want := reference(files[name]); res.Text != want {
			t.Fatalf("%s: text differs from the reference (%d bytes, want %d)", name, len(res.Text), len(want))
		}
	}
	held := read("big")
	for range 3 {
		for _, name := range []string{"small", "tiny", "utf8", "big"} {
			res := read(name)
			check(name, res)
			check("big", held) // not overwritten by the reads since
			res.Release()
			res.Release() // only the first counts
		}
	}
	held.Release()

	// Concurrent sessions reading and releasing never see each other's text.
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := newSession(t, rt, []capability.Effect{capability.ReadFile}, root)
			names := []string{"big", "small", "utf8"}
			for j := range 30 {
				name := names[(i+j)%len(names)]
				res, err := testkit.Call(t, s, ReadFile, obj{"path": name, "limit": 100_000})
				if err != nil {
					t.Error(err)
					return
				}
				if res.Text != reference(files[name]) {
					t.Errorf("%s: concurrent read differs from the reference", name)
				}
				res.Release()
			}
		}()
	}
	wg.Wait()
}
