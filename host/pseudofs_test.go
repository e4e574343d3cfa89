package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/host/config"
	"github.com/capkit/capkit/internal/atfile"
	"github.com/capkit/capkit/kernel"
)

// pseudoRefused calls tool and fails t unless the call is denied as a
// pseudo-filesystem.
func pseudoRefused(t *testing.T, s *kernel.Session, tool, args string) {
	t.Helper()
	res, err := s.Call(context.Background(), tool, json.RawMessage(args))
	if err == nil && !perFileRefusal(resultText(t, res)) {
		t.Errorf("%s %s served a pseudo-filesystem: %.300s", tool, args, resultText(t, res))
	}
	if err == nil {
		return
	}
	if fault.CodeOf(err) != fault.Denied || !strings.Contains(err.Error(), "pseudo-filesystem") {
		t.Errorf("%s %s: %v, want denied naming the pseudo-filesystem", tool, args, err)
	}
}

// TestPseudoFSRefusedUnderRootSlash is the red-team input: with "/" granted
// read-only, /proc/self/environ (capkit's own environment) and the rest of
// procfs and sysfs are refused by every reading tool, and every walking
// tool refuses a walk that meets a pseudo-filesystem mount (/dev/pts).
func TestPseudoFSRefusedUnderRootSlash(t *testing.T) {
	cfg, err := config.FromFlags(nil, []string{"/"})
	if err != nil {
		t.Fatal(err)
	}
	h, s := startSession(t, cfg, "assistant")
	if !strings.Contains(strings.Join(h.Warnings, "\n"), "procfs pseudo-filesystem at /proc") {
		t.Errorf("no start-up warning about /proc inside root /: %q", h.Warnings)
	}
	for _, p := range []string{"/proc/self/environ", "/proc/self/cmdline", "/proc/self/maps", "/proc/sys/kernel/hostname", "/sys/kernel/uevent_seqnum"} {
		if _, err := os.Stat(p); err != nil {
			continue
		}
		q, _ := json.Marshal(p)
		for _, tool := range []string{"read_file", "tree_stamp", "file_digest", "json_validate", "text_validate", "csv_scan"} {
			pseudoRefused(t, s, tool, `{"path": `+string(q)+`}`)
		}
	}
	for _, c := range []struct{ tool, args string }{
		{"list_dir", `{"path": "/proc"}`},
		{"dir_tree", `{"path": "/proc"}`},
		{"file_info", `{"path": "/proc/self/environ"}`},
		{"read_files", `{"files": [{"path": "/proc/self/environ"}]}`},
		{"list_dir", `{"path": "/proc/self"}`},
		{"tree_list", `{"path": "/proc"}`},
		{"glob", `{"pattern": "*", "path": "/proc/self"}`},
		{"grep", `{"pattern": "PATH", "path": "/proc/self"}`},
		{"sniff", `{"path": "/proc/self/environ", "expect": "json"}`},
	} {
		pseudoRefused(t, s, c.tool, c.args)
	}
	mounts, err := atfile.PseudoMounts("/dev")
	if err != nil || len(mounts) == 0 {
		t.Logf("no pseudo-filesystem mounted under /dev (%v): the walk through a mount point is tested with a bind mount only", err)
		return
	}
	for _, c := range []struct{ tool, args string }{
		{"tree_list", `{"path": "/dev"}`},
		{"dir_tree", `{"path": "/dev"}`},
		{"glob", `{"pattern": "**", "path": "/dev"}`},
		{"grep", `{"pattern": "x", "path": "/dev"}`},
	} {
		pseudoRefused(t, s, c.tool, c.args)
	}
}

// TestRootThatIsPseudoFSRefused: a root that is a pseudo-filesystem is
// refused at start-up.
func TestRootThatIsPseudoFSRefused(t *testing.T) {
	for _, root := range []string{"/proc", "/sys"} {
		if _, err := os.Stat(root); err != nil {
			continue
		}
		cfg, err := config.FromFlags(nil, []string{root})
		if err != nil {
			t.Fatal(err)
		}
		h, err := New(cfg, nil)
		if err == nil {
			h.Close()
			t.Errorf("root %s accepted", root)
			continue
		}
		if !strings.Contains(err.Error(), "pseudo-filesystem") {
			t.Errorf("root %s: %v", root, err)
		}
	}
}

// perFileRefusal reports whether out is a result (read_files') that
// refuses each of its files as a pseudo-filesystem.
func perFileRefusal(out string) bool {
	return strings.Contains(out, `"code":"denied"`) && strings.Contains(out, "pseudo-filesystem") && !strings.Contains(out, "PATH=")
}

// pseudoChildExitNoMount is the bind-mount child's exit status when it
// may not mount.
const pseudoChildExitNoMount = 3

// TestPseudoFSBindMountWalk bind-mounts /proc inside a root (in a private
// mount namespace of a child process) and drives every walking and
// reading tool at it: each refuses, and the start-up warning names it.
func TestPseudoFSBindMountWalk(t *testing.T) {
	dir := fixture(t)
	load(t, dir, allEffects)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "CAPKIT_TEST_PSEUDO_CHILD="+dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee) && ee.ExitCode() == pseudoChildExitNoMount, err != nil && !errors.As(err, &ee):
		// No mount namespace or no bind mount here (a container without
		// CAP_SYS_ADMIN): TestPseudoFSRefusedUnderRootSlash still covers
		// the walk through a mount point with /dev/pts.
		t.Skipf("cannot bind-mount in a private mount namespace here (%v): %s", err, out)
	case err != nil:
		t.Fatalf("%v:\n%s", err, out)
	}
}

// pseudoChild is the bind-mount test's child: it mounts, then checks.
func pseudoChild(dir string) int {
	rw := filepath.Join(dir, "rw")
	for _, m := range []string{"p", "stage/p"} {
		if err := os.MkdirAll(filepath.Join(rw, m), 0o755); err != nil {
			panic(err)
		}
		if err := syscall.Mount("/proc", filepath.Join(rw, m), "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil {
			os.Stderr.WriteString("mount: " + err.Error() + "\n")
			return pseudoChildExitNoMount
		}
	}
	t := &childT{}
	runPseudoChecks(t, dir)
	if t.failed {
		return 1
	}
	return 0
}

func runPseudoChecks(t *childT, dir string) {
	cfg, err := config.Load(filepath.Join(dir, "capkit.toml"))
	if err != nil {
		t.Fatalf("%v", err)
	}
	h, err := New(cfg, nil)
	if err != nil {
		t.Fatalf("%v", err)
	}
	defer h.Close()
	if w := strings.Join(h.Warnings, "\n"); !strings.Contains(w, filepath.Join(dir, "rw", "p")) {
		t.Errorf("no start-up warning about the bind mount: %q", h.Warnings)
	}
	s, err := h.NewSession("all", true)
	if err != nil {
		t.Fatalf("%v", err)
	}
	for _, c := range []struct{ tool, args string }{
		{"read_file", `{"path": "p/self/environ"}`},
		{"read_files", `{"files": [{"path": "p/self/environ"}]}`},
		{"file_info", `{"path": "p/self/environ"}`},
		{"dir_tree", `{"path": "."}`},
		{"create_directory", `{"path": "p/self/new"}`},
		{"tree_stamp", `{"path": "p/self/environ"}`},
		{"tree_stamp", `{"path": "p"}`},
		{"file_digest", `{"path": "p/self/environ"}`},
		{"file_copy", `{"source": "p/self/environ", "destination": "env.txt"}`},
		{"json_validate", `{"path": "p/self/environ"}`},
		{"zip_create", `{"archive": "env.zip", "dir": ".", "files": ["p/self/environ"]}`},
		{"list_dir", `{"path": "p"}`},
		{"tree_list", `{"path": "."}`},
		{"tree_list", `{"path": "p"}`},
		{"glob", `{"pattern": "**"}`},
		{"glob", `{"pattern": "p/*"}`},
		{"grep", `{"pattern": "PATH"}`},
		{"dir_publish", `{"staging": "stage", "destination": "published"}`},
		{"move_file", `{"source": "p", "destination": "q"}`},
		{"write_file", `{"path": "p/self/comm", "content": "x"}`},
	} {
		res, err := s.Call(context.Background(), c.tool, json.RawMessage(c.args))
		if err == nil {
			if !perFileRefusal(res.Text + string(res.Structured)) {
				t.Errorf("%s %s served a pseudo-filesystem: %.300s", c.tool, c.args, res.Text)
			}
		} else if fault.CodeOf(err) != fault.Denied || !strings.Contains(err.Error(), "pseudo-filesystem") {
			t.Errorf("%s %s: %v, want denied naming the pseudo-filesystem", c.tool, c.args, err)
		}
	}
}

// childT reports a child's failures on stderr.
type childT struct{ failed bool }

func (t *childT) Errorf(format string, args ...any) {
	t.failed = true
	os.Stderr.WriteString(strings.TrimSpace(fmt.Sprintf(format, args...)) + "\n")
}

func (t *childT) Fatalf(format string, args ...any) {
	t.Errorf(format, args...)
	os.Exit(1)
}
