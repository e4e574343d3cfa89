package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
)

// guardedSpec is a spec over a fresh root with .git, capkit.toml and
// extra (relative) protected.
func guardedSpec(t *testing.T, script string, extra ...string) *Spec {
	s := simpleSpec(t, script)
	for _, p := range append([]string{".git", "capkit.toml"}, extra...) {
		s.Protected = append(s.Protected, filepath.Join(s.Dir, p))
	}
	return s
}

// tree lists what is under root: each path with its type, a file's
// content, a link's target.
func tree(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err != nil || p == root {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		switch m := info.Mode(); {
		case m.IsRegular():
			b, _ := os.ReadFile(p)
			out[rel] = "file " + string(b)
		case m&os.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			out[rel] = "link " + l
		case m.IsDir():
			out[rel] = "dir"
		default:
			out[rel] = m.Type().String()
		}
		return nil
	})
	return out
}

// TestRootsStayOpen: with protected paths missing or present, a command
// creates, renames and removes entries at the top of a root and below,
// and nothing is closed or moved (reduced containment: in a root without
// an existing protected path; one that exists closes its directory,
// TestClosedDirectoriesNoted).
func TestRootsStayOpen(t *testing.T) {
	script := `set -e; echo hi > out.txt; mkdir -p build node_modules/x; echo o > build/out; mv out.txt moved.txt; rm -r node_modules; mkdir .cache; mv build dist; mkdir sub/new; rmdir sub/new; echo ok`
	for _, tc := range []struct {
		name    string
		reduced bool
		git     bool
	}{{"full, git repository", false, true}, {"full, plain directory", false, false}, {"reduced, plain directory", true, false}} {
		t.Run(tc.name, func(t *testing.T) {
			s := guardedSpec(t, script)
			must(t, os.Mkdir(filepath.Join(s.Dir, "sub"), 0o755))
			if tc.git {
				must(t, os.MkdirAll(filepath.Join(s.Dir, ".git", "hooks"), 0o755))
			}
			res := runIn(t, s, &Options{Reduced: tc.reduced})
			if res.ExitCode != 0 || res.Stdout.Text != "ok\n" || len(res.Closed) > 0 || len(res.Quarantined) > 0 {
				t.Fatalf("exit %d, stdout %q, stderr %q, closed %q, quarantined %+v", res.ExitCode, res.Stdout.Text, res.Stderr.Text, res.Closed, res.Quarantined)
			}
			got := tree(t, s.Dir)
			want := map[string]string{"moved.txt": "file hi\n", "dist": "dir", "dist/out": "file o\n", ".cache": "dir", "sub": "dir"}
			if tc.git {
				want[".git"], want[".git/hooks"] = "dir", "dir"
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("the root holds %v, want %v", got, want)
			}
		})
	}
}

// TestPlantedNamesQuarantined: whatever a command leaves at a protected
// name that was missing (made, linked, a FIFO, renamed into place, a case
// variant, below a missing directory, a directory swapped for a link on
// the way, a large tree) is moved to the quarantine and listed; the
// root keeps everything else the command wrote.
func TestPlantedNamesQuarantined(t *testing.T) {
	const huge = 3000
	for _, tc := range []struct {
		name   string
		script string
		moved  map[string]string // root-relative path: its tree in the quarantine ("" for a plain entry)
	}{
		{"git init", `git init -q . && test -d .git/objects`, map[string]string{".git": "HEAD"}},
		{"capkit.toml", `echo '[[root]]' > capkit.toml`, map[string]string{"capkit.toml": ""}},
		{"pre-commit hook", `mkdir -p .git/hooks && echo evil > .git/hooks/pre-commit`, map[string]string{".git": "hooks/pre-commit"}},
		{"renamed into place", `mkdir d && echo y > d/config && mv d .git`, map[string]string{".git": "config"}},
		{"case variant", `mkdir .GIT && echo x > .GIT/config`, map[string]string{".GIT": "config"}},
		{"symbolic link", `ln -s /etc .git`, map[string]string{".git": ""}},
		{"FIFO", `mkfifo capkit.toml`, map[string]string{"capkit.toml": ""}},
		{"nested, its directory missing", `mkdir -p conf && echo s > conf/secret && echo keep > conf/other`, map[string]string{"conf/secret": ""}},
		{"a link on the way", `mkdir real && echo s > real/secret && ln -s real conf`, map[string]string{"conf": ""}},
		{"a large tree", fmt.Sprintf(`mkdir .git; i=0; while [ $i -lt %d ]; do : > .git/f$i; i=$((i+1)); done`, huge), map[string]string{".git": "f2999"}},
		{"unreadable", `mkdir -p .git/hooks && echo e > .git/hooks/x && chmod 000 .git/hooks .git`, map[string]string{".git": ""}},
	} {
		for _, reduced := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/reduced=%v", tc.name, reduced), func(t *testing.T) {
				s := guardedSpec(t, tc.script+"; echo kept > kept.txt", "conf/secret")
				q := t.TempDir()
				t.Cleanup(func() { removeIn(q) }) // what the command left unreadable
				res := runIn(t, s, &Options{Reduced: reduced, Quarantine: q})
				if res.ExitCode != 0 {
					t.Fatalf("exit %d: %s", res.ExitCode, res.Stderr.Text)
				}
				var paths []string
				for _, m := range res.Quarantined {
					rel, _ := filepath.Rel(s.Dir, m.Path)
					paths = append(paths, rel)
					want, ok := tc.moved[rel]
					if !ok || m.Note != "" || !strings.HasPrefix(m.To, q+"/") {
						t.Errorf("moved %+v", m)
						continue
					}
					if _, err := os.Lstat(m.Path); err == nil {
						t.Errorf("%s is still in the root", rel)
					}
					if want != "" {
						unix.Chmod(m.To, 0o700)
						if _, err := os.Lstat(filepath.Join(m.To, want)); err != nil {
							t.Errorf("the quarantine lacks %s of %s: %v", want, rel, err)
						}
					}
				}
				if len(paths) != len(tc.moved) {
					t.Errorf("moved %q, want %v", paths, tc.moved)
				}
				if b, err := os.ReadFile(filepath.Join(s.Dir, "kept.txt")); err != nil || string(b) != "kept\n" {
					t.Errorf("what else the command wrote: %q %v", b, err)
				}
				if tc.name == "nested, its directory missing" {
					if b, _ := os.ReadFile(filepath.Join(s.Dir, "conf", "other")); string(b) != "keep\n" {
						t.Errorf("the file beside the protected one: %q", b)
					}
				}
			})
		}
	}
}

// TestHeldPathsStayReadOnly: a protected path that exists stays as it
// was and is not moved, whatever the command tries.
func TestHeldPathsStayReadOnly(t *testing.T) {
	for _, reduced := range []bool{false, true} {
		s := guardedSpec(t, `echo evil > .git/hooks/pre-commit; mv .git .old; rm -rf .git; echo x >> capkit.toml; mkdir -p .git/hooks; true`)
		must(t, os.MkdirAll(filepath.Join(s.Dir, ".git", "hooks"), 0o755))
		must(t, os.WriteFile(filepath.Join(s.Dir, "capkit.toml"), []byte("orig\n"), 0o644))
		before := tree(t, s.Dir)
		res := runIn(t, s, &Options{Reduced: reduced})
		if got := tree(t, s.Dir); fmt.Sprint(got) != fmt.Sprint(before) || len(res.Quarantined) > 0 {
			t.Errorf("reduced=%v: the root holds %v (before %v), moved %+v", reduced, got, before, res.Quarantined)
		}
	}
}

// TestProtectedLinkReplaced: a protected name that is a symbolic link
// (not mounted: it would be followed) replaced by the command, even by a
// link with the same inode number, is moved out.
func TestProtectedLinkReplaced(t *testing.T) {
	s := guardedSpec(t, `rm .git && mkdir -p evil/hooks && ln -s evil .git`)
	must(t, os.Symlink("/nonexistent/repo.git", filepath.Join(s.Dir, ".git")))
	res := runIn(t, s, nil)
	if len(res.Quarantined) != 1 || res.Quarantined[0].Path != filepath.Join(s.Dir, ".git") {
		t.Fatalf("moved %+v", res.Quarantined)
	}
	if _, err := os.Lstat(filepath.Join(s.Dir, ".git")); err == nil {
		t.Errorf("the replaced link is still in the root")
	}
}

// TestQuarantineFault: Run's caller sees each move; the quarantine of a
// run lies in no root, and one configured in a root keeps nothing (the
// entry still leaves the root).
func TestQuarantineInARoot(t *testing.T) {
	s := guardedSpec(t, `echo x > capkit.toml`)
	res := runIn(t, s, &Options{Quarantine: filepath.Join(s.Dir, "q")})
	if len(res.Quarantined) != 1 || res.Quarantined[0].To != "" || !strings.Contains(res.Quarantined[0].Note, "in or holds root") {
		t.Fatalf("moved %+v", res.Quarantined)
	}
	if _, err := os.Lstat(filepath.Join(s.Dir, "capkit.toml")); err == nil {
		t.Errorf("capkit.toml is still in the root")
	}
}

// TestQuarantineOnAnotherFilesystem: where a rename cannot move the entry
// (EXDEV), it is copied (regular files, directories and links; a FIFO
// never opened) and removed from the root.
func TestQuarantineOnAnotherFilesystem(t *testing.T) {
	q, err := os.MkdirTemp("/dev/shm", "capkit-q-")
	if err != nil {
		t.Skip("no /dev/shm:", err)
	}
	t.Cleanup(func() { os.RemoveAll(q) })
	s := guardedSpec(t, `mkdir -p .git/hooks && echo evil > .git/hooks/pre-commit && ln -s /etc .git/l && mkfifo .git/fifo && chmod 000 .git/hooks/pre-commit`)
	var a, b unix.Stat_t
	must(t, unix.Stat(q, &a))
	must(t, unix.Stat(s.Dir, &b))
	if a.Dev == b.Dev {
		t.Skip("/dev/shm is on the temporary directory's filesystem")
	}
	res := runIn(t, s, &Options{Quarantine: q})
	if len(res.Quarantined) != 1 || !strings.Contains(res.Quarantined[0].Note, "1 entries were not kept") {
		t.Fatalf("moved %+v", res.Quarantined)
	}
	to := res.Quarantined[0].To
	if got := tree(t, to); got["hooks/pre-commit"] != "file evil\n" || got["l"] != "link /etc" || len(got) != 3 {
		t.Errorf("the quarantine holds %v", got)
	}
	if _, err := os.Lstat(filepath.Join(s.Dir, ".git")); err == nil {
		t.Errorf(".git is still in the root")
	}
}

// TestCopyBudget: a copy keeps at most limits.RunMaxQuarantineBytes and
// RunMaxQuarantineEntries, and counts what it left out.
func TestCopyBudget(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	for _, tc := range []struct {
		size    int64
		skipped int64
	}{{limits.RunMaxQuarantineBytes, 0}, {limits.RunMaxQuarantineBytes + 1, 1}} {
		name := fmt.Sprint(tc.size)
		f, err := os.Create(filepath.Join(src, name))
		must(t, err)
		must(t, f.Truncate(tc.size)) // sparse: only the copy takes the space
		f.Close()
		sfd, _ := unix.Open(src, unix.O_RDONLY|unix.O_DIRECTORY, 0)
		dfd, _ := unix.Open(dst, unix.O_RDONLY|unix.O_DIRECTORY, 0)
		b := &copyBudget{bytes: limits.RunMaxQuarantineBytes, entries: limits.RunMaxQuarantineEntries}
		err = copyTree(sfd, name, dfd, name, b, 0)
		unix.Close(sfd)
		unix.Close(dfd)
		st, serr := os.Stat(filepath.Join(dst, name))
		if err != nil || serr != nil || b.skipped != tc.skipped || st.Size() != min(tc.size, limits.RunMaxQuarantineBytes) {
			t.Errorf("a file of %d bytes: %v %v, skipped %d, copied %v", tc.size, err, serr, b.skipped, st)
		}
		os.Remove(filepath.Join(dst, name))
		os.Remove(filepath.Join(src, name))
	}
	// A directory and its files count one entry each: one past the bound
	// is counted, not copied (a small bound here; longTest runs the real
	// one).
	entries := int64(16)
	if longTest() {
		entries = limits.RunMaxQuarantineEntries
	}
	tree := filepath.Join(src, "tree")
	must(t, os.Mkdir(tree, 0o755))
	for i := range entries - 1 {
		must(t, os.WriteFile(filepath.Join(tree, fmt.Sprint(i)), nil, 0o644))
	}
	sfd, _ := unix.Open(src, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	dfd, _ := unix.Open(dst, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	defer unix.Close(sfd)
	defer unix.Close(dfd)
	for i, skipped := range []int64{0, 1} {
		if i == 1 {
			must(t, os.WriteFile(filepath.Join(tree, "one more"), nil, 0o644))
		}
		b := &copyBudget{bytes: limits.RunMaxQuarantineBytes, entries: entries}
		if err := copyTree(sfd, "tree", dfd, fmt.Sprint("copy", i), b, 0); err != nil || b.skipped != skipped {
			t.Errorf("%d entries more than the bound: %v, skipped %d", i, err, b.skipped)
		}
	}
}

// TestGuardStale: a protected path that exists but that the helper did
// not mount is a stale view, unless it is a symbolic link.
func TestGuardStale(t *testing.T) {
	root := t.TempDir()
	git, toml := filepath.Join(root, ".git"), filepath.Join(root, "capkit.toml")
	must(t, os.Mkdir(git, 0o755))
	must(t, os.Symlink("elsewhere", toml))
	g := newGuard([]string{root}, []string{git, toml}, newQuarantine(t.TempDir(), []string{root}))
	if err := g.start(true, nil); !errors.Is(err, errStale) || !strings.Contains(err.Error(), git) {
		t.Errorf("an existing path not held: %v", err)
	}
	if err := g.start(true, []string{git}); err != nil {
		t.Errorf("held, and a link: %v", err)
	}
	if err := g.start(false, nil); err != nil {
		t.Errorf("reduced containment (Landlock keeps what exists when the command starts): %v", err)
	}
}

// TestQuarantineParentSwapped: the entry is moved from the directory the
// walk opened, even when that directory is renamed and a link put in
// its place meanwhile: nothing where the link points is touched.
func TestQuarantineParentSwapped(t *testing.T) {
	base := t.TempDir()
	root, outside := filepath.Join(base, "root"), filepath.Join(base, "outside")
	must(t, os.MkdirAll(filepath.Join(root, "conf"), 0o755))
	must(t, os.MkdirAll(outside, 0o755))
	must(t, os.WriteFile(filepath.Join(outside, "secret"), []byte("outside\n"), 0o644))
	g := newGuard([]string{root}, []string{filepath.Join(root, "conf", "secret")}, newQuarantine(t.TempDir(), []string{root}))
	defer g.q.close()
	must(t, g.start(true, nil))
	must(t, os.WriteFile(filepath.Join(root, "conf", "secret"), []byte("planted\n"), 0o644))
	swapped := false
	moved := []Moved{}
	err := g.walk(func(dir int, path, name string, id entryID) {
		if !swapped {
			must(t, os.Rename(filepath.Join(root, "conf"), filepath.Join(root, "conf.real")))
			must(t, os.Symlink(outside, filepath.Join(root, "conf")))
			swapped = true
		}
		m, _ := g.q.move(dir, name, path)
		moved = append(moved, m)
	})
	if err != nil || len(moved) != 1 || moved[0].To == "" {
		t.Fatalf("%v %+v", err, moved)
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "secret")); string(b) != "outside\n" {
		t.Errorf("the file where the link points: %q", b)
	}
	if b, _ := os.ReadFile(moved[0].To); string(b) != "planted\n" {
		t.Errorf("the quarantine holds %q", b)
	}
}

// TestOutlivingProcessesReduced: in reduced containment without a cgroup,
// a process cannot leave the command's process group (setsid, setpgid
// fail), so none outlives the call to plant a protected name after the
// walk.
func TestOutlivingProcessesReduced(t *testing.T) {
	withHome(t, cgroupHome{why: "none, for this test"})
	s := guardedSpec(t, `(sleep 1; echo late > capkit.toml) & setsid sh -c 'sleep 1; mkdir .git' </dev/null >/dev/null 2>&1; echo setsid $?; perl -e 'exit(setpgrp(0,0) ? 0 : 1)' 2>/dev/null; echo setpgid $?`)
	res := runIn(t, s, &Options{Reduced: true})
	if !strings.HasPrefix(res.Stdout.Text, "setsid 1\n") || strings.Contains(res.Stdout.Text, "setpgid 0") {
		t.Errorf("stdout %q, stderr %q", res.Stdout.Text, res.Stderr.Text)
	}
	time.Sleep(1500 * time.Millisecond)
	for _, p := range []string{"capkit.toml", ".git"} {
		if _, err := os.Lstat(filepath.Join(s.Dir, p)); err == nil {
			t.Errorf("%s was made after the call returned", p)
		}
	}
}

// TestScratchRemovedWhateverModes: in reduced containment the private tmp
// goes when the command ends, whatever modes it left and however deep
// its tree; none is left in the host's temporary directory.
func TestScratchRemovedWhateverModes(t *testing.T) {
	privateTmp(t)
	script := fmt.Sprintf(`set -e; cd "$TMPDIR"; mkdir -p a/b; echo x > a/b/f; chmod 000 a/b/f a/b; chmod 100 a; `+
		`i=0; mkdir deep; cd deep; while [ $i -lt %d ]; do mkdir d; cd d; i=$((i+1)); done; chmod 000 .; cd "$TMPDIR"; chmod 500 .; echo done`, limits.RunTreeDepth+20)
	res := runIn(t, simpleSpec(t, script), &Options{Reduced: true})
	if res.Stdout.Text != "done\n" || res.Leftover != "" {
		t.Fatalf("stdout %q, stderr %q, leftover %q", res.Stdout.Text, res.Stderr.Text, res.Leftover)
	}
	if after := scratchDirs(t); len(after) > 0 {
		t.Errorf("left in %s: %q", os.TempDir(), after)
	}
}

// privateTmp points the host's temporary directory, where reduced
// containment makes its private tmps, at one of the test's own, away from
// those of other processes' runs.
func privateTmp(t *testing.T) {
	dir := t.TempDir()
	must(t, os.Chmod(dir, 0o755)) // the spec's roots are made in it too
	t.Setenv("TMPDIR", dir)
}

func scratchDirs(t *testing.T) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(os.TempDir(), scratchPrefix+"*"))
	must(t, err)
	return m
}

// TestScratchSwept: a private tmp left behind (its run killed) is removed
// by the next run, whatever its modes; one a live run holds is not.
func TestScratchSwept(t *testing.T) {
	privateTmp(t)
	left, err := os.MkdirTemp("", scratchPrefix)
	must(t, err)
	must(t, os.MkdirAll(filepath.Join(left, "x", "y"), 0o755))
	must(t, os.Chmod(filepath.Join(left, "x"), 0))
	live, err := newScratch()
	must(t, err)
	defer live.remove()
	leftovers.mu.Lock()
	leftovers.swept = false
	leftovers.mu.Unlock()
	runIn(t, simpleSpec(t, "true"), &Options{Reduced: true})
	if _, err := os.Lstat(left); err == nil {
		os.Chmod(filepath.Join(left, "x"), 0o700)
		os.RemoveAll(left)
		t.Errorf("the private tmp left behind was not swept")
	}
	if _, err := os.Lstat(live.dir); err != nil {
		t.Errorf("a live run's private tmp was swept: %v", err)
	}
}

// TestScratchBound: in reduced containment the private tmp is bounded in
// total: a command whose tmp stays within Limits.TmpBytes runs on, one
// past it is killed and the result says why and names the bound's
// setting (the policy the audit records).
func TestScratchBound(t *testing.T) {
	const bound = 4 * limits.MiB
	bytesBound, entriesBound := fmt.Sprintf("run.tmp_bytes=%d", bound), fmt.Sprintf("run.tmp_entries=%d", limits.RunTmpInodes)
	for _, tc := range []struct {
		name   string
		script string
		over   string // the bound passed, "" for none
	}{
		// The tmp holds two directories of one block each besides the files.
		{"at the bound", `head -c 2M /dev/zero > "$TMPDIR/a"; head -c 2040K /dev/zero > "$TMPDIR/b"; sleep 1; echo alive`, ""},
		// ... and its home directory besides the files.
		{"entries at the bound", fmt.Sprintf(`cd "$TMPDIR" && seq %d | xargs touch; sleep 1; echo alive`, limits.RunTmpInodes-1), ""},
		{"entries past it", fmt.Sprintf(`cd "$TMPDIR" && seq %d | xargs touch; sleep 30`, limits.RunTmpInodes), entriesBound},
		{"past it, in many files", `for i in 1 2 3 4 5; do head -c 1M /dev/zero > "$TMPDIR/f$i"; done; sleep 30`, bytesBound},
		{"past it, beside the roots", `mkdir -p "$TMPDIR/x/y"; head -c 5M /dev/zero > "$TMPDIR/x/y/big"; sleep 30`, bytesBound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if strings.HasPrefix(tc.name, "entries") && !longTest() {
				t.Skip("the entries' edge makes " + limits.Count(limits.RunTmpInodes) + " files: CAPKIT_LONG_TESTS=1 runs it (TestMeasure covers the edge)")
			}
			s := simpleSpec(t, tc.script)
			s.Limits.TmpBytes = bound
			res := runIn(t, s, &Options{Reduced: true})
			over := tc.over != ""
			if res.ExceededBound != tc.over || over != (res.Exceeded != "") || over != res.Killed || !over && res.Stdout.Text != "alive\n" {
				t.Errorf("exceeded %q (%q), killed %v, stdout %q, stderr %q", res.Exceeded, res.ExceededBound, res.Killed, res.Stdout.Text, res.Stderr.Text)
			}
			if over && !strings.Contains(res.Exceeded, "4 MiB") && !strings.Contains(res.Exceeded, limits.Count(limits.RunTmpInodes)+" entries") {
				t.Errorf("the bound is not named: %q", res.Exceeded)
			}
		})
	}
}

// longTest reports whether the tests at the edges of the entry bounds
// (tens of thousands of files) run: CAPKIT_LONG_TESTS=1.
func longTest() bool { return os.Getenv("CAPKIT_LONG_TESTS") == "1" }

// TestMeasure: a private tmp's measure counts every entry and its blocks,
// and stops once past the bound: at the bound it is not over, one entry
// or one block more is.
func TestMeasure(t *testing.T) {
	dir := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(dir, "a", "b"), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "a", "b", "f"), make([]byte, 10000), 0o644))
	must(t, os.Symlink("a", filepath.Join(dir, "l")))
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	must(t, err)
	defer unix.Close(fd)
	var all usage
	must(t, measure(fd, 0, &all, usage{bytes: 1 << 40, entries: 1 << 40}))
	if all.entries != 4 || all.bytes < 10000 {
		t.Fatalf("measured %+v of a, a/b, a/b/f and l", all)
	}
	for _, tc := range []struct {
		bound usage
		over  bool
	}{
		{all, false},
		{usage{bytes: all.bytes, entries: all.entries - 1}, true},
		{usage{bytes: all.bytes - 1, entries: all.entries}, true},
	} {
		var u usage
		must(t, measure(fd, 0, &u, tc.bound))
		if over := u.bytes > tc.bound.bytes || u.entries > tc.bound.entries; over != tc.over {
			t.Errorf("bound %+v: measured %+v, over %v", tc.bound, u, over)
		}
	}
}

// TestRunFailsWithDeniedSentinel keeps the quarantine walk loud: a root
// whose protected names cannot be read fails the call, and nothing runs.
func TestGuardUnreadableRoot(t *testing.T) {
	if os.Getuid() == 0 {
		t.Skip("root reads any directory")
	}
	s := guardedSpec(t, "echo ran > /dev/null")
	must(t, os.Chmod(s.Dir, 0o300))
	defer os.Chmod(s.Dir, 0o700)
	_, err := Run(context.Background(), s, &Options{Helper: helperArgv(t), Quarantine: t.TempDir()})
	if fault.CodeOf(err) != fault.Unavailable {
		t.Errorf("err = %v", err)
	}
}

// TestScratchLeftoverReported: a private tmp that cannot be removed (here
// a mount inside it, made by the test: rmdir is refused with EBUSY) is
// named in the result, and the next run removes it.
func TestScratchLeftoverReported(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("the test mounts a tmpfs into the private tmp")
	}
	s := simpleSpec(t, `mkdir "$TMPDIR/m"; echo "$TMPDIR" > where.tmp; mv where.tmp where; while [ ! -e "$TMPDIR/m/ready" ]; do sleep 0.01; done`)
	where := filepath.Join(s.Dir, "where")
	done := make(chan *Result)
	go func() { done <- runIn(t, s, &Options{Reduced: true}) }()
	var tmp string
	for deadline := time.Now().Add(hangGuard); tmp == "" && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		b, _ := os.ReadFile(where)
		tmp = strings.TrimSpace(string(b))
	}
	m := filepath.Join(tmp, "m")
	must(t, unix.Mount("capkit-test", m, "tmpfs", 0, "size=64k"))
	t.Cleanup(func() { unix.Unmount(m, unix.MNT_DETACH) })
	must(t, os.WriteFile(filepath.Join(m, "ready"), nil, 0o644))
	res := <-done
	if !strings.HasPrefix(res.Leftover, tmp+" (") || !slices.ContainsFunc(res.Notes, func(n string) bool { return strings.Contains(n, res.Leftover) }) {
		t.Fatalf("leftover %q, notes %q", res.Leftover, res.Notes)
	}
	if _, err := os.Lstat(tmp); err != nil {
		t.Fatalf("the leftover is gone already: %v", err)
	}
	must(t, unix.Unmount(m, unix.MNT_DETACH))
	runIn(t, simpleSpec(t, "true"), &Options{Reduced: true})
	if _, err := os.Lstat(tmp); err == nil {
		t.Errorf("the next run did not remove %s", tmp)
	}
}

// BenchmarkGuard is what the protected-name guard adds to a call: taking
// the names of a root whose top holds .git and 50 other entries, and
// looking again after the command.
func BenchmarkGuard(b *testing.B) {
	root := b.TempDir()
	for i := range 50 {
		os.WriteFile(filepath.Join(root, fmt.Sprint("f", i)), nil, 0o644)
	}
	os.Mkdir(filepath.Join(root, ".git"), 0o755)
	protected := []string{filepath.Join(root, ".git"), filepath.Join(root, "capkit.toml")}
	q := b.TempDir()
	for b.Loop() {
		g := newGuard([]string{root}, protected, newQuarantine(q, []string{root}))
		if err := g.start(true, protected[:1]); err != nil {
			b.Fatal(err)
		}
		if moved, err := g.finish(); err != nil || len(moved) > 0 {
			b.Fatal(err, moved)
		}
	}
}

// TestQuarantineVanished: an entry gone before it could be moved (a host
// process removed it) is not reported, and a run's quarantine directory
// that kept nothing is removed.
func TestQuarantineVanished(t *testing.T) {
	root, base := t.TempDir(), t.TempDir()
	toml := filepath.Join(root, "capkit.toml")
	g := newGuard([]string{root}, []string{toml}, newQuarantine(base, []string{root}))
	must(t, g.start(true, nil))
	must(t, os.WriteFile(toml, nil, 0o644))
	var moved []Moved
	must(t, g.walk(func(dir int, path, name string, id entryID) {
		must(t, os.Remove(toml))
		if m, gone := g.q.move(dir, name, path); !gone {
			moved = append(moved, m)
		}
	}))
	g.q.close()
	if entries, _ := os.ReadDir(base); len(moved) > 0 || len(entries) > 0 {
		t.Errorf("moved %+v, the quarantine holds %v", moved, entries)
	}
}
