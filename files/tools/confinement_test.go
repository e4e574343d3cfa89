package tools

import (
	"crypto/sha256"
	"encoding/hex"
	iofs "io/fs"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/testkit"
	"github.com/capkit/capkit/kernel"
)

// The path-escape suite: every case of issue 2's confinement list, through
// the real tools. Each asserts that nothing outside the root was read (the
// marker held by every outside file never appears in any result or
// error), nothing outside changed (outside trees hashed before and after,
// names included), and every call returns well before its deadline.

const outsideMarker = "OUTSIDE-SECRET-c0ffee"

type jail struct {
	base, root, outside, evil string
	victim                    string // outside file hard-linked into the root
	device                    bool
}

func newJail(t *testing.T) *jail {
	t.Helper()
	base := testkit.TempDir(t)
	j := &jail{
		base: base, root: filepath.Join(base, "root"), outside: filepath.Join(base, "outside"),
		evil: filepath.Join(base, "root_evil"), victim: filepath.Join(base, "outside", "victim.txt"),
	}
	writeFile(t, filepath.Join(j.outside, "secret.txt"), outsideMarker+"\n")
	writeFile(t, filepath.Join(j.outside, "dir", "deep.txt"), outsideMarker+"\n")
	writeFile(t, filepath.Join(j.evil, "secret.txt"), outsideMarker+"\n")
	writeFile(t, j.victim, "victim content\n")
	writeFile(t, filepath.Join(j.root, "a.txt"), "inside a\n")
	writeFile(t, filepath.Join(j.root, "swap", "f.txt"), "inside swap\n")
	writeFile(t, filepath.Join(j.root, "flip", "f.txt"), "inside flip\n")
	links := map[string]string{
		"out-file":  filepath.Join(j.outside, "secret.txt"),
		"out-dir":   j.outside,
		"rel-out":   "../outside/secret.txt",
		"evil-dir":  "../root_evil",
		"chain1":    "chain2",
		"chain2":    "chain3",
		"chain3":    "out-file",
		"dangling":  filepath.Join(j.outside, "created-through-dangling.txt"),
		"dangling2": "nowhere/at/all",
		"devnull":   "/dev/null",
		"devzero":   "/dev/zero",
		"proc":      "/proc/self",
		"loop":      "loop",
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(j.root, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Link(j.victim, filepath.Join(j.root, "hard")); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(filepath.Join(j.root, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", filepath.Join(j.root, "sock"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	j.device = unix.Mknod(filepath.Join(j.root, "zero"), unix.S_IFCHR|0o666, int(unix.Mkdev(1, 5))) == nil
	return j
}

// snapshot hashes every name and content outside the root.
func (j *jail) snapshot(t *testing.T) string {
	t.Helper()
	var lines []string
	for _, dir := range []string{j.outside, j.evil} {
		filepath.WalkDir(dir, func(p string, d iofs.DirEntry, err error) error {
			if err != nil {
				lines = append(lines, p+" error")
				return nil
			}
			line := p + " " + d.Type().String()
			if d.Type().IsRegular() {
				b, _ := os.ReadFile(p)
				sum := sha256.Sum256(b)
				line += " " + hex.EncodeToString(sum[:])
			}
			lines = append(lines, line)
			return nil
		})
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// try runs one call and checks it leaked nothing and did not hang. It
// returns the error, if any.
func (j *jail) try(t *testing.T, s *kernel.Session, tool string, args obj) error {
	t.Helper()
	res, err := testkit.Call(t, s, tool, args)
	var text string
	if res != nil {
		text = res.Text + string(res.Structured)
	}
	if err != nil {
		text += err.Error()
		// An untrusted caller's errors never name host paths other than
		// the roots it is granted (which it is told).
		if strings.Contains(strings.ReplaceAll(err.Error(), j.root, "ROOT"), j.base) {
			t.Errorf("%s %v: error names a host path: %v", tool, args, err)
		}
		if fe := fault.As(err); fe.Code == fault.Limit && strings.Contains(fe.Message, "time limit") ||
			fe.Code == fault.Unavailable && strings.Contains(fe.Error(), "deadline") {
			t.Errorf("%s %v hung until its deadline: %v", tool, args, err)
		}
	}
	if strings.Contains(text, outsideMarker) {
		t.Errorf("%s %v leaked the outside marker: %.300s", tool, args, text)
	}
	return err
}

func TestConfinement(t *testing.T) {
	j := newJail(t)
	before := j.snapshot(t)
	rt := newRuntime(t, nil)
	s := newSession(t, rt, allEffects, j.root)
	long := strings.Repeat("d/", 2100) + "f"
	longName := strings.Repeat("n", 300)
	paths := []struct {
		name string
		path string
	}{
		{"dotdot", "../outside/secret.txt"},
		{"dotdot only", ".."},
		{"dotdot inside then out", "a/../../outside/secret.txt"},
		{"absolute outside", filepath.Join(j.outside, "secret.txt")},
		{"absolute dir outside", j.outside},
		{"absolute system", "/etc/passwd"},
		{"prefix sibling", filepath.Join(j.evil, "secret.txt")},
		{"prefix sibling via dotdot", filepath.Join(j.root, "..", "root_evil", "secret.txt")},
		{"symlink out", "out-file"},
		{"relative symlink out", "rel-out"},
		{"symlinked dir out", "out-dir/secret.txt"},
		{"symlinked dir out listed", "out-dir"},
		{"symlink to prefix sibling", "evil-dir/secret.txt"},
		{"symlink chain out", "chain1"},
		{"symlink loop", "loop"},
		{"dangling symlink out", "dangling"},
		{"dangling symlink in", "dangling2"},
		{"fifo", "fifo"},
		{"socket", "sock"},
		{"device node", "zero"},
		{"/dev/null via symlink", "devnull"},
		{"/dev/zero via symlink", "devzero"},
		{"/proc via symlink", "proc/environ"},
		{"/proc absolute", "/proc/self/environ"},
		{"/proc root escape", "/proc/self/root" + j.outside + "/secret.txt"},
		{"NUL byte", "a.txt\x00../../outside/secret.txt"},
		{"tilde", "~/secret.txt"},
		{"tilde alone", "~"},
		{"percent-encoded dots", "%2e%2e/outside/secret.txt"},
		{"percent-encoded slash", "%2e%2e%2foutside%2fsecret.txt"},
		{"trailing space", "a.txt "},
		{"trailing quote", "a.txt\""},
		{"quoted", "'../outside/secret.txt'"},
		{"backslashes", "..\\outside\\secret.txt"},
		{"longer than allowed", long},
		{"element longer than the system allows", longName},
	}
	for _, p := range paths {
		t.Run(p.name, func(t *testing.T) {
			if p.path == "zero" && !j.device {
				t.Skip("cannot create a device node here (needs CAP_MKNOD); the /dev symlink cases still run")
			}
			for _, c := range []struct {
				tool string
				args obj
			}{
				{ReadFile, obj{"path": p.path}},
				{WriteFile, obj{"path": p.path, "content": "written " + p.name}},
				{EditFile, obj{"path": p.path, "old_string": outsideMarker, "new_string": "edited"}},
				{ListDir, obj{"path": p.path}},
				{Glob, obj{"pattern": "**", "path": p.path}},
				{Grep, obj{"pattern": "SECRET", "path": p.path}},
				{MoveFile, obj{"source": p.path, "destination": "moved-here"}},
				{MoveFile, obj{"source": "a.txt", "destination": p.path}},
			} {
				j.try(t, s, c.tool, c.args)
			}
			// The one legitimate success: a.txt may have moved; put it back.
			if _, err := os.Stat(filepath.Join(j.root, "a.txt")); err != nil {
				for _, n := range []string{"moved-here"} {
					os.Rename(filepath.Join(j.root, n), filepath.Join(j.root, "a.txt"))
				}
			}
			os.Remove(filepath.Join(j.root, "moved-here"))
		})
	}
	// Whole-root searches never see outside content.
	for _, c := range []struct {
		tool string
		args obj
	}{
		{ListDir, obj{}},
		{Glob, obj{"pattern": "**"}},
		{Grep, obj{"pattern": "SECRET"}},
		{Grep, obj{"pattern": "."}},
	} {
		j.try(t, s, c.tool, c.args)
	}
	if after := j.snapshot(t); after != before {
		t.Fatalf("outside changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// TestWritesNeverFollowLinks: writes onto symlinks are refused (even
// dangling ones pointing outside), and a write or edit of a hard link to
// an outside file replaces the link, leaving the outside file alone.
func TestWritesNeverFollowLinks(t *testing.T) {
	j := newJail(t)
	before := j.snapshot(t)
	s := newSession(t, newRuntime(t, nil), allEffects, j.root)
	for _, p := range []string{"out-file", "dangling", "chain1", "rel-out", "devnull"} {
		if err := j.try(t, s, WriteFile, obj{"path": p, "content": "x"}); fault.CodeOf(err) != fault.Denied {
			t.Errorf("write %s: %v, want denied", p, err)
		}
	}
	if _, err := os.Lstat(filepath.Join(j.outside, "created-through-dangling.txt")); !os.IsNotExist(err) {
		t.Fatal("a write created the target of a dangling symlink")
	}
	// hard link: read, edit, write — each replaces the link
	if err := j.try(t, s, ReadFile, obj{"path": "hard"}); err != nil {
		t.Fatal(err)
	}
	if err := j.try(t, s, EditFile, obj{"path": "hard", "old_string": "victim", "new_string": "edited"}); err != nil {
		t.Fatal(err)
	}
	if err := j.try(t, s, WriteFile, obj{"path": "hard", "content": "rewritten"}); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(j.root, "hard")); got != "rewritten" {
		t.Fatalf("hard = %q", got)
	}
	if after := j.snapshot(t); after != before {
		t.Fatalf("outside changed through a link:\n%s\n%s", before, after)
	}
}

// TestSwapBetweenCalls: a directory read in one call is replaced by a
// symlink out of the root before the next.
func TestSwapBetweenCalls(t *testing.T) {
	j := newJail(t)
	before := j.snapshot(t)
	s := newSession(t, newRuntime(t, nil), allEffects, j.root)
	if err := j.try(t, s, ReadFile, obj{"path": "swap/f.txt"}); err != nil {
		t.Fatal(err)
	}
	swap := filepath.Join(j.root, "swap")
	if err := os.RemoveAll(swap); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(j.outside, swap); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(j.outside, "f.txt"), outsideMarker)
	before = j.snapshot(t)
	for _, c := range []struct {
		tool string
		args obj
	}{
		{ReadFile, obj{"path": "swap/f.txt"}},
		{ReadFile, obj{"path": "swap/secret.txt"}},
		{EditFile, obj{"path": "swap/f.txt", "old_string": "SECRET", "new_string": "x"}},
		{WriteFile, obj{"path": "swap/f.txt", "content": "x"}},
		{WriteFile, obj{"path": "swap/new.txt", "content": "x"}},
		{ListDir, obj{"path": "swap"}},
		{Glob, obj{"pattern": "swap/**"}},
		{Grep, obj{"pattern": "SECRET", "path": "swap"}},
		{MoveFile, obj{"source": "swap/f.txt", "destination": "stolen.txt"}},
	} {
		if err := j.try(t, s, c.tool, c.args); err == nil {
			t.Errorf("%s %v succeeded through a swapped-in symlink", c.tool, c.args)
		}
	}
	if after := j.snapshot(t); after != before {
		t.Fatalf("outside changed:\n%s\n%s", before, after)
	}
}

// TestSwapDuringCalls races calls against a goroutine that keeps swapping
// a directory for a symlink out of the root.
func TestSwapDuringCalls(t *testing.T) {
	j := newJail(t)
	writeFile(t, filepath.Join(j.outside, "f.txt"), outsideMarker)
	before := j.snapshot(t)
	s := newSession(t, newRuntime(t, &ToolOptions{DisableGate: true}), allEffects, j.root)
	flip := filepath.Join(j.root, "flip")
	saved := filepath.Join(j.root, "flip-saved")
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			os.Rename(flip, saved)
			os.Symlink(j.outside, flip)
			os.Remove(flip)
			os.Rename(saved, flip)
		}
	}()
	calls := []struct {
		tool string
		args obj
	}{
		{ReadFile, obj{"path": "flip/f.txt"}},
		{WriteFile, obj{"path": "flip/f.txt", "content": "inside flip\n"}},
		{WriteFile, obj{"path": "flip/sub/new.txt", "content": "new"}},
		{EditFile, obj{"path": "flip/f.txt", "old_string": "inside", "new_string": "inside"}},
		{ListDir, obj{"path": "flip"}},
		{Glob, obj{"pattern": "flip/**"}},
		{Grep, obj{"pattern": "SECRET|inside"}},
		{MoveFile, obj{"source": "flip/f.txt", "destination": "flip/g.txt"}},
		{MoveFile, obj{"source": "flip/g.txt", "destination": "flip/f.txt"}},
	}
	for i := range 150 {
		c := calls[i%len(calls)]
		j.try(t, s, c.tool, c.args)
	}
	stop.Store(true)
	wg.Wait()
	if after := j.snapshot(t); after != before {
		t.Fatalf("outside changed during the race:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}
